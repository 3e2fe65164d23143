"""The rules for one value of a profile: version specifiers, URLs, requirements, apt packages.

Each rule takes the value and ``refuse``, which makes the error naming the value's key path
(:meth:`colabenv._util.reader.Reader.at`), and returns the value checked. No URL may hold a
credential literally, nor a character that means something to a shell.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from colabenv._util.reader import expected, shown
from colabenv.errors import ColabenvError, printable
from colabenv.models.frameworks import OWNED

Refuse = Callable[[str], ColabenvError]
"""``refuse(problem)``: the error for the value a rule checks."""

INDEX_URL_SCHEMES = ("http", "https")
DIRECT_URL_SCHEMES = ("https", "git+https", "file")
CATALOG_URL_SCHEMES = ("https",)
"""A catalog's index URLs and find-links pages (the frameworks', ``cuda_packages.toml``'s,
``tpu.toml``'s): https only, and otherwise the rule every index URL of a profile keeps
(:func:`url`: no literal credentials or secret query parameter, a real host and port, nothing
to percent-encode)."""
CREDENTIALS_HINT = "use ${VAR} references, e.g. https://${USER}:${TOKEN}@host/simple"
SECRET_QUERY_WORDS = frozenset(
    {
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "key",
        "apikey",
        "auth",
        "sig",
        "signature",
        "credential",
        "credentials",
    }
)
"""A query parameter whose name holds one of these words (split at ``-``, ``_``, ``.``) carries a
secret: ``?token=``, ``?api_key=``, ``X-Amz-Signature``."""

VAR_REF_RE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
# Patterns for what few profiles have (apt packages, URLs): compiled by re's own cache on first
# use, not on every import.
MAX_APT_PACKAGE_LENGTH = 200
_APT_PATTERN = r"([a-z0-9][a-z0-9+.-]+)(?:=((?:[0-9]+:)?[0-9][A-Za-z0-9.+~-]*))?"
_URL_PATTERN = r"([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)(.*)"
_URL_REST_PATTERN = r"[A-Za-z0-9._~:/?#\[\]@!&()*+,=%-]*"
_HOST_PATTERN = r"(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?"


def version_or_table(value: object, refuse: Refuse) -> SpecifierSet | dict[str, Any] | None:
    """A framework's or a CUDA package's value: ``false`` (None: not installed), a version
    specifier, or a table (returned as it is, for the caller to read)."""
    if value is False:
        return None
    if value is True:
        raise refuse('true is not a version; use "*" for any version, false for none')
    if isinstance(value, str):
        return specifier(value, refuse)
    if not isinstance(value, dict):
        raise refuse(expected('a version specifier, "*", false, or a table with version', value))
    return value


def specifier(value: object, refuse: Refuse) -> SpecifierSet:
    """A PEP 508 version specifier; ``"*"`` is any version."""
    if not isinstance(value, str):
        raise refuse(expected('a version specifier such as ">=2.5" or "*"', value))
    text = value.strip()
    if text == "*":
        return SpecifierSet()
    if not text:
        raise refuse('empty version specifier; use "*" for any version')
    try:
        checked = SpecifierSet(text)
        Requirement(f"x{text}")
        return checked
    except (InvalidSpecifier, InvalidRequirement):
        pass
    hint = 'examples: ">=2.5,<2.7", "==2.6.*", "*"'
    try:
        Version(text)
    except InvalidVersion:
        pass
    else:
        hint = f'did you mean "=={text}" or "=={text}.*"?'
    raise refuse(f"{shown(value)} is not a version specifier ({hint})")


def url(text: str, refuse: Refuse, schemes: tuple[str, ...]) -> str:
    """A URL of one of ``schemes`` without literal credentials or shell-significant
    characters."""
    match = re.fullmatch(_URL_PATTERN, text, re.DOTALL)
    if match is None:
        raise refuse(f"{shown(text)} is not a URL like https://host/simple")
    scheme, netloc, rest = match.group(1).lower(), match.group(2), match.group(3)
    host = netloc.rpartition("@")[2]
    where = shown(f"{scheme}://{host}{rest.partition('?')[0]}")
    if scheme not in schemes:
        raise refuse(f"{where}: scheme {scheme!r} not allowed (use {', '.join(schemes)})")
    if "@" in netloc:
        parts = netloc.rpartition("@")[0].split(":")
        if len(parts) > 2 or not all(not p or VAR_REF_RE.fullmatch(p) for p in parts):
            raise refuse(f"literal credentials in a URL; {CREDENTIALS_HINT}")
    secret = literal_secret_parameter(rest)
    if secret is not None:
        raise refuse(
            f"literal secret in the query ({secret}=); use a ${{VAR}} reference there, e.g. ?token=${{TOKEN}}"
        )
    if scheme != "file" and not re.fullmatch(_HOST_PATTERN, host):
        raise refuse(f"{where}: missing or invalid host name")
    port = host.rpartition(":")[2] if not host.endswith("]") and ":" in host else None
    if port is not None and not 0 < int(port) <= 65535:
        raise refuse(f"{where}: port {int(port)} is not a port (1 to 65535)")
    if scheme == "file" and host and host != "localhost":
        raise refuse(f"{where}: a file URL names no host (file:///path)")
    if not re.fullmatch(_URL_REST_PATTERN, VAR_REF_RE.sub("", rest)):
        raise refuse(f"{where} holds characters a URL should percent-encode (quotes, spaces, $, ;)")
    return text


def literal_secret_parameter(rest: str) -> str | None:
    """The name of a query parameter of ``rest`` that names a secret and holds a literal value
    (not one ``${VAR}`` reference)."""
    query = rest.partition("?")[2].partition("#")[0]
    for item in re.split("[&;]", query):
        name, _, value = item.partition("=")
        words = re.split(r"[-_.]", name.lower())
        if value and not VAR_REF_RE.fullmatch(value) and SECRET_QUERY_WORDS.intersection(words):
            return printable(name)[:40]
    return None


def requirement(text: str, refuse: Refuse) -> Requirement:
    """One ``[packages]`` line: PEP 508, not a pip option, not a framework colabenv chooses,
    a direct reference only to an allowed URL written out in full, no shell characters."""
    line = text.strip()
    if not line:
        raise refuse("empty requirement")
    if line.startswith("-"):
        raise refuse(
            f"{shown(line)} is a pip option, not a requirement; indexes and mirrors go "
            "in [install] (index_url, extra_index_urls)"
        )
    try:
        parsed = Requirement(line)
    except InvalidRequirement as error:
        reason = str(error).splitlines()[0] if str(error) else "invalid"
        raise refuse(f"{shown(line)} is not a PEP 508 requirement ({reason})") from None
    canonical = canonicalize_name(parsed.name)
    if parsed.url is not None and "${" in parsed.url:
        raise refuse(
            "${VAR} is not expanded in a direct reference (it would be sent as written);"
            " credentials belong in an index URL ([install] index_url, extra_index_urls)"
        )
    if canonical in OWNED:
        raise refuse(
            f"{canonical} is chosen per GPU by colabenv; set {OWNED[canonical]} instead of listing it here"
        )
    if parsed.url is not None:
        url(parsed.url, refuse, DIRECT_URL_SCHEMES)
    if any(c in line for c in "$`\\"):
        raise refuse(f"{shown(line)} holds shell characters ($, `, \\)")
    return parsed


def apt_package(text: str, refuse: Refuse) -> str:
    """A Debian package name, optionally ``=VERSION``; returns the name."""
    if len(text) > MAX_APT_PACKAGE_LENGTH:
        raise refuse(f"{shown(text)} is longer than {MAX_APT_PACKAGE_LENGTH} characters")
    match = re.fullmatch(_APT_PATTERN, text)
    if match is None:
        raise refuse(
            f"{shown(text)} is not a Debian package name (lowercase letters, digits, "
            "'+', '-', '.'; optionally =VERSION)"
        )
    return match.group(1)
