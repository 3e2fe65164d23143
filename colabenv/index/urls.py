"""Index URLs: the ``${VAR}`` credential references a profile writes, their expansion (the
bootstrap script's own rule, so the script and ``lock`` send the same URL), the redaction of
what was expanded from any text shown, and the URL with its credentials stripped. No I/O."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, urlsplit, urlunsplit

from colabenv.errors import UsageError, printable
from colabenv.models.frozen import model

_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_url(url: str, environ: Mapping[str, str]) -> str:
    """``url`` with each ``${VAR}`` replaced by its value from ``environ``, percent-encoded for
    the part of the URL it stands in; an unset variable, or a value that would change the host,
    is a :class:`UsageError` naming the URL.

    The expansion itself is the bootstrap script's (:func:`colabenv._target.helper.expand_url`,
    standard library only), so the script and ``lock`` send the same URL.
    """
    from colabenv._target.helper import UnsetVariable
    from colabenv._target.helper import expand_url as expand

    try:
        return expand(url, environ)
    except UnsetVariable as missing:
        raise UsageError(
            f"index {printable(url)}: ${{{missing.name}}} is not set in the environment"
        ) from None
    except ValueError as error:
        raise UsageError(printable(str(error))) from None


def reference_names(url: str) -> list[str]:
    return _VAR_RE.findall(url)


@model
class Redactor:
    """Replaces expanded index URLs and credential values in text with their references."""

    pairs: tuple[tuple[str, str], ...]

    @classmethod
    def for_urls(cls, urls: Iterable[str], environ: Mapping[str, str]) -> Redactor:
        pairs: list[tuple[str, str]] = []
        for url in urls:
            expanded = expand_url(url, environ)
            if expanded != url:
                pairs.append((expanded, url))
                pairs.append((expanded.rstrip("/"), url.rstrip("/")))
            for name in reference_names(url):
                secret = environ.get(name, "")
                if len(secret) >= 3:
                    pairs.append((secret, f"${{{name}}}"))
                    pairs.append((quote(secret, safe=""), f"${{{name}}}"))
        pairs.sort(key=lambda pair: len(pair[0]), reverse=True)
        return cls(tuple(dict.fromkeys(pairs)))

    def __call__(self, text: str) -> str:
        for secret, reference in self.pairs:
            text = text.replace(secret, reference)
        return text


def default_index_url() -> str | None:
    """pip's default index, for checks when a profile names no index (its host is pip's fact)."""
    try:
        module = importlib.import_module("pip._internal.models.index")
    except ImportError:
        return None
    url = getattr(getattr(module, "PyPI", None), "simple_url", None)
    return url if isinstance(url, str) else None


def strip_credentials(url: str) -> str:
    """``url`` without its userinfo and fragment (for a file URL written into a lock)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=host, fragment=""))


def with_credentials(url: str, indexes: tuple[str, ...], environ: Mapping[str, str]) -> str:
    """``url`` (a file an index page linked to, kept without credentials) with the userinfo of
    the index of ``indexes`` on its host, each ``${VAR}`` of it expanded, when it has none of
    its own: what asks for the file sends the index's login, never writes it."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        return url
    for index in indexes:
        expanded = urlsplit(expand_url(index, environ))
        userinfo, _, host = expanded.netloc.rpartition("@")
        if userinfo and host == parts.netloc:
            return urlunsplit(parts._replace(netloc=f"{userinfo}@{host}"))
    return url
