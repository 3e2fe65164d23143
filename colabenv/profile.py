"""Read a profile (schema 1) into a frozen :class:`~colabenv.models.Profile`.

Pure apart from reading the profile file and the files it ``extends``. Every problem, from an
unreadable file to a misspelt key, becomes one :class:`ProfileError` naming the file and the key
path; nothing else escapes :func:`load_profile`.

Decisions worth knowing when writing a profile:

- ``extends`` is a path relative to the file. The parent is merged key by key and the child
  wins; tables merge recursively, lists are replaced. A framework given as a string is short
  for ``{version = "..."}``, so a child may change only ``variant`` of a parent's framework,
  and ``false`` switches a parent's framework (or companion) off.
- ``[packages] requirements`` are PEP 508 strings. pip options (``--index-url ...``) belong in
  ``[install]``. Frameworks and their companions (torch, torchvision, jax, jaxlib, tensorflow
  ...) belong in ``[frameworks]``, where the wheel is chosen for the GPU. A direct reference
  (``name @ URL``) must use ``https``, ``git+https`` or ``file``.
- ``[apt] packages`` follow Debian's package-name grammar, optionally ``name=version``.
- URLs may hold credentials only as ``${VAR}`` references, never literally: not in the user
  part, not as the value of a query parameter that names a secret (``?token=...``). No URL
  character that means something to a shell (quotes, backticks, ``$`` outside ``${VAR}``,
  ``;``) passes. A direct reference is sent as written, so ``${VAR}`` is refused there.
- ``[env]`` names are POSIX names; ``COLABENV_*`` names are colabenv's own settings. Values are
  set literally (``${...}`` is refused: it would not be expanded), and the names the dynamic
  loader, a shell or Python itself read before the ``.pth`` hook runs are refused
  (:data:`REFUSED_ENV`).
- A bare name (``pytorch``) is a golden profile even when a file of that name is in the current
  directory; a path (``./pytorch``, ``team.toml``, ``profiles/x``) is a file.
"""

from __future__ import annotations

import codecs
import dataclasses
import errno
import json
import math
import os
import re
import stat
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from colabenv import _toml
from colabenv._cache import parsed_toml
from colabenv._data import golden_dir
from colabenv._digest import sha256_hex
from colabenv._model import model
from colabenv.errors import ProfileError, UsageError, printable
from colabenv.frameworks import OWNED
from colabenv.models import (
    Framework,
    FrameworkRequest,
    Installer,
    InstallSettings,
    IoCheck,
    Profile,
    Reproducibility,
    VerifySettings,
)

SCHEMA_VERSION = 1
MAX_PROFILE_BYTES = 1 << 20
MAX_EXTENDS_DEPTH = 64
MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 200

TOP_KEYS = (
    "schema",
    "name",
    "description",
    "extends",
    "python",
    "frameworks",
    "packages",
    "apt",
    "env",
    "install",
    "verify",
    "reproducibility",
    "catalog",
)
FRAMEWORK_TABLE_KEYS = ("version", "variant")
PACKAGES_KEYS = ("requirements",)
APT_KEYS = ("packages",)
INSTALL_KEYS = ("installer", "index_url", "pytorch_index_url", "extra_index_urls")
VERIFY_KEYS = ("smoke", "require_gpu", "min_free_vram_gib", "timeout_s", "io_paths",
               "min_read_mib_s", "min_write_mib_s", "io_size_mib", "min_free_ram_gib",
               "max_other_vram_share")
IO_PATH_KEYS = ("path", "min_read_mib_s", "min_write_mib_s")
REPRODUCIBILITY_KEYS = ("seed", "deterministic")
CATALOG_KEYS = ("paths", "allow_unconfirmed")
MAX_IO_PATHS = 32
MAX_IO_SIZE_MIB = 65536
MAX_THROUGHPUT_MIB_S = 1e7
MAX_SEED = 2**32 - 1
MAX_CATALOG_PATHS = 32

_NAME_RE = re.compile(r"[A-Za-z0-9._-]+")
_PACKAGE_NAME_RE = re.compile(r"[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]")
_VARIANT_PATTERNS: dict[Framework, tuple[str, str]] = {
    Framework.TORCH: (r"cpu|cu[0-9]{3}", '"cpu" or "cuXYZ" such as "cu126"'),
    Framework.TENSORFLOW: (r"cpu|and-cuda|cuda", '"cpu", "and-cuda" or "cuda"'),
    Framework.JAX: (r"cpu|cuda[0-9]{2}", '"cpu" or "cudaXY" such as "cuda12"'),
}
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VAR_REF_RE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
# Patterns for what few profiles have (apt packages, URLs, odd keys): compiled by re's own cache
# on first use, not on every import.
_APT_PATTERN = r"([a-z0-9][a-z0-9+.-]+)(?:=((?:[0-9]+:)?[0-9][A-Za-z0-9.+~-]*))?"
_BARE_KEY_PATTERN = r"[A-Za-z0-9_-]+"
_URL_PATTERN = r"([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)(.*)"
_URL_REST_PATTERN = r"[A-Za-z0-9._~:/?#\[\]@!&()*+,=%-]*"
_HOST_PATTERN = r"(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?"

INDEX_URL_SCHEMES = ("http", "https")
DIRECT_URL_SCHEMES = ("https", "git+https", "file")
CREDENTIALS_HINT = "use ${VAR} references, e.g. https://${USER}:${TOKEN}@host/simple"
SECRET_QUERY_WORDS = frozenset({
    "token", "secret", "password", "passwd", "pwd", "key", "apikey", "auth", "sig",
    "signature", "credential", "credentials",
})
"""A query parameter whose name holds one of these words (split at ``-``, ``_``, ``.``) carries a
secret: ``?token=``, ``?api_key=``, ``X-Amz-Signature``."""
MAX_TIMEOUT_S = 86400.0
MAX_FREE_VRAM_GIB = 4096.0


class RefusedEnv(NamedTuple):
    """``[env]`` names refused, with why: the hook that sets ``[env]`` runs inside Python, after
    the dynamic loader, the shell that started it and Python itself have read their variables,
    so these cannot work from there, and set for every child process they are an injection
    vector. Names compare case-insensitively."""

    names: Mapping[str, str]
    prefixes: Mapping[str, str]

    def reason(self, name: str) -> str | None:
        upper = name.upper()
        if upper in self.names:
            return self.names[upper]
        return next((why for prefix, why in self.prefixes.items() if upper.startswith(prefix)),
                    None)


_LOADER = ("the dynamic loader and the C library read it when a process starts, before Python"
           " runs: from the .pth hook it does nothing here and injects into every child process")
_SHELL = ("shells read it when they start: an injection vector for every script and tool"
          " run from this environment")
_PYTHON = "Python reads it at startup, before the .pth hook that would set it runs"
_PROCESS = ("it is read before Python starts and by every child process, and the .pth hook"
            " sets it literally (no ${...}): it cannot work from there")
REFUSED_ENV = RefusedEnv(
    names={
        **dict.fromkeys(("PATH", "HOME", "SHELL"), _PROCESS),
        **dict.fromkeys(("BASH_ENV", "ENV", "IFS", "CDPATH", "PS4", "PROMPT_COMMAND",
                         "SHELLOPTS", "BASHOPTS", "GLOBIGNORE", "BASH_XTRACEFD"), _SHELL),
        **dict.fromkeys(("GCONV_PATH", "LOCPATH", "NLSPATH", "HOSTALIASES",
                         "RESOLV_HOST_CONF"), _LOADER),
    },
    prefixes={"LD_": _LOADER, "DYLD_": _LOADER, "BASH_FUNC_": _SHELL, "PYTHON": _PYTHON},
)

GoldenProfile = tuple[str, str, Path]


# ---------------------------------------------------------------------------------------------
# Public entry points


def load_profile(path: Path) -> Profile:
    """Read ``path`` and the profiles it extends, validate, merge, and freeze the result."""
    path = Path(path)
    return _profile(_load_chain(path), _Context(path))


def load_profile_text(text: str, path: Path) -> Profile:
    """The profile ``text`` would be as the file ``path``, without reading or writing a file;
    such a profile cannot extend another."""
    context = _Context(Path(path))
    document = _parse_text(text, context)
    if "extends" in document:
        raise context.fail("extends", "a profile not read from a file cannot extend another")
    _build(document, context, content_hash="", partial=True)
    return _profile([(document, context.path.parent)], context)


def _profile(layers: list[tuple[dict[str, object], Path]], context: _Context) -> Profile:
    """Merge validated documents, child first, into the profile.

    ``[catalog] paths`` are not replaced by a child's but gathered from every layer, each
    relative to its own file, parents' first (so a child's overlay wins over its parent's).
    """
    merged: dict[str, object] = {}
    overlays: list[Path] = []
    for layer, directory in reversed(layers):
        merged = _merge(merged, _normalized(layer))
        catalog = layer.get("catalog")
        if isinstance(catalog, dict):
            overlays.extend(Path(os.path.normpath(directory / str(p)))
                            for p in catalog.get("paths", []))
    merged.pop("extends", None)
    merged["schema"] = SCHEMA_VERSION
    if "name" not in merged:
        raise context.fail("name", 'missing; every profile needs a name such as "team-gpu"')
    profile = _build(merged, context, content_hash="")
    digest = sha256_hex(_canonical(merged).encode("utf-8"))
    return dataclasses.replace(profile, content_hash=f"sha256:{digest}",
                               catalog_paths=tuple(dict.fromkeys(overlays)))


def find_profile(name_or_path: str) -> Path:
    """A path (``./x``, ``x.toml``, ``dir/x``) is a file; a bare name is the golden profile of
    that name, else a file of that name in the current directory."""
    candidate = Path(name_or_path)
    if looks_like_path(name_or_path):
        if _present(candidate):
            return candidate
    else:
        golden = _golden_file(name_or_path)
        if golden is not None:
            return golden
        if _present(candidate):
            return candidate
    raise UsageError(
        f"no profile file or golden profile named {_show(name_or_path)} "
        f"(golden: {', '.join(golden_names())})"
    )


def looks_like_path(name_or_path: str) -> bool:
    return (
        "/" in name_or_path
        or (os.altsep is not None and os.altsep in name_or_path)
        or name_or_path.endswith(".toml")
        or name_or_path.startswith((".", "~"))
    )


def shadowed_file(name_or_path: str) -> Path | None:
    """What is in the current directory under a bare golden name (and was not used)."""
    if looks_like_path(name_or_path) or _golden_file(name_or_path) is None:
        return None
    candidate = Path(name_or_path)
    return candidate if _present(candidate) else None


def golden_path(name: str) -> Path:
    """The shipped golden profile called ``name``."""
    golden = _golden_file(name)
    if golden is None:
        raise UsageError(
            f"no golden profile named {_show(name)} (golden: {', '.join(golden_names())})"
        )
    return golden


def golden_names() -> tuple[str, ...]:
    return tuple(p.stem for p in _golden_files())


def golden_profiles() -> tuple[GoldenProfile, ...]:
    """(name, description, path) of each shipped golden profile, sorted by name."""
    found = []
    for file in _golden_files():
        profile = load_profile(file)
        found.append((file.stem, profile.description, file))
    return tuple(found)


def read_profile_text(path: Path) -> str:
    """The text of a profile file, with the same checks (size, encoding) as :func:`load_profile`."""
    return _read_text(_Context(Path(path)))


# ---------------------------------------------------------------------------------------------
# Reading files


@model
class _Context:
    """Which file a value came from, and how it was reached (for messages)."""

    path: Path
    via: str = ""

    def fail(self, key: str | None, problem: str) -> ProfileError:
        suffix = f" (extended by {self.via})" if self.via else ""
        return ProfileError(self.path, key or None, problem + suffix)


def _present(path: Path) -> bool:
    """Something is at ``path``, even a link that leads nowhere (reading it says what)."""
    try:
        os.lstat(path)
    except (OSError, ValueError):
        return False
    return True


def _missing_problem(path: Path, beside: Path) -> str | None:
    """Why ``path`` (another profile, named by ``extends``) cannot be opened, in words."""
    try:
        os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            return "is a symbolic link to a file that does not exist"
        return f"not found next to {beside.name}"
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "is a loop of symbolic links"
        return f"cannot be read: {_os_problem(error)}"
    except ValueError as error:
        return f"cannot be read: {error}"
    return None


def _golden_files() -> list[Path]:
    directory = golden_dir()
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.glob("*.toml") if p.is_file())


def _golden_file(name: str) -> Path | None:
    if not _NAME_RE.fullmatch(name):
        return None
    candidate = golden_dir() / f"{name}.toml"
    return candidate if candidate.is_file() else None


def _read_text(context: _Context) -> str:
    path = context.path
    try:
        info = path.stat()
    except FileNotFoundError:
        raise context.fail(None, "no such file") from None
    except (OSError, ValueError) as error:
        raise context.fail(None, f"cannot read: {_os_problem(error)}") from None
    if stat.S_ISDIR(info.st_mode):
        raise context.fail(None, "is a directory, not a profile file")
    if not stat.S_ISREG(info.st_mode):
        raise context.fail(None, "is not a regular file")
    if info.st_size > MAX_PROFILE_BYTES:
        raise context.fail(None, f"is {info.st_size} bytes; a profile may be at most 1 MiB")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_PROFILE_BYTES + 1)
    except OSError as error:
        raise context.fail(None, f"cannot read: {_os_problem(error)}") from None
    if len(data) > MAX_PROFILE_BYTES:
        raise context.fail(None, "is larger than 1 MiB; a profile may be at most 1 MiB")
    return _decode(data, context)


def _os_problem(error: Exception) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror.lower()
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _decode(data: bytes, context: _Context) -> str:
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise context.fail(None, "is UTF-32 encoded; save it as UTF-8")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise context.fail(None, "is UTF-16 encoded; save it as UTF-8")
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    if b"\x00" in data:
        raise context.fail(None, "contains NUL bytes: a binary file, not TOML text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise context.fail(
            None,
            f"is not UTF-8 text (byte 0x{data[error.start]:02x} at line {line}, column {column})",
        ) from None


def _parse_file(context: _Context) -> dict[str, object]:
    return _parse_text(_read_text(context), context)


def _parse_text(text: str, context: _Context) -> dict[str, object]:
    try:
        document: dict[str, object] = parsed_toml(text.encode("utf-8"), _toml.loads_utf8)
    except RecursionError:
        raise context.fail(None, "invalid TOML: nested too deeply") from None
    except _toml.TOMLDecodeError as error:
        message = " ".join(str(error).split()) or "syntax error"
        raise context.fail(None, f"invalid TOML: {message}") from None
    except ValueError:  # int() refusing a literal of thousands of digits
        raise context.fail(None, "invalid TOML: a number literal is too long") from None
    return document



def _load_chain(path: Path) -> list[tuple[dict[str, object], Path]]:
    """The documents of ``path`` and its ancestors, child first, each with the folder its
    relative paths start from; each validated on its own."""
    layers: list[tuple[dict[str, object], Path]] = []
    chain: list[Path] = []
    current = path
    context = _Context(path)
    while True:
        document = _parse_file(context)
        _build(document, context, content_hash="", partial=True)
        layers.append((document, current.parent))
        chain.append(_identity(current))
        extends = document.get("extends")
        if not isinstance(extends, str):
            return layers
        parent = current.parent / extends
        problem = _missing_problem(parent, current)
        if problem is not None:
            raise context.fail("extends", f"{_show(extends)} {problem}")
        if _identity(parent) in chain:
            names = [p.name for p in chain[chain.index(_identity(parent)) :]] + [parent.name]
            raise context.fail("extends", f"cycle: {' -> '.join(names)}")
        if len(chain) >= MAX_EXTENDS_DEPTH:
            raise context.fail("extends", f"more than {MAX_EXTENDS_DEPTH} levels of extends")
        context = _Context(parent, via=context.via or path.name)
        current = parent


def _identity(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):
        return path.absolute()


# ---------------------------------------------------------------------------------------------
# Merging and hashing


def _normalized(document: Mapping[str, object]) -> dict[str, object]:
    """A framework string is short for ``{version = ...}``, so that merging treats both alike."""
    out = dict(document)
    out.pop("extends", None)
    frameworks = out.get("frameworks")
    if isinstance(frameworks, dict):
        out["frameworks"] = {
            name: {"version": value} if isinstance(value, str) else value
            for name, value in frameworks.items()
        }
    return out


def _merge(base: Mapping[str, object], override: Mapping[str, object]) -> dict[str, object]:
    merged = dict(base)
    for key, value in override.items():
        current = merged.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            merged[key] = _merge(current, value)
        else:
            merged[key] = value
    return merged


def _canonical(document: Mapping[str, object]) -> str:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


# ---------------------------------------------------------------------------------------------
# Validation


def _key(prefix: str, key: str) -> str:
    shown = key if re.fullmatch(_BARE_KEY_PATTERN, key) else json.dumps(key, ensure_ascii=True)
    return f"{prefix}.{shown}" if prefix else shown


def _show(value: object, limit: int = 80) -> str:
    """A value for a message: quoted, escaped, one line, short."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        text = str(value)
    elif isinstance(value, str):
        text = json.dumps(value, ensure_ascii=True)
    else:
        return _type_name(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date or time"


def _expected(what: str, value: object) -> str:
    return f"expected {what}, got {_type_name(value)}"


def _close_match(word: str, options: Iterable[str], cutoff: float) -> str | None:
    """``difflib.get_close_matches(word, options, n=1, cutoff=cutoff)``, importing difflib only
    for an option that passes its cheap upper bound (shared letters): a companion key such as
    torchvision is checked against "version" on every load, and is nothing like it."""
    letters = Counter(word)
    likely = [
        option
        for option in options
        if not (word or option)
        or 2.0 * sum((letters & Counter(option)).values()) / (len(word) + len(option))
        >= cutoff
    ]
    if not likely:
        return None
    import difflib

    close = difflib.get_close_matches(word, likely, n=1, cutoff=cutoff)
    return close[0] if close else None


def _unknown_key_problem(key: str, known: Iterable[str], what: str = "key") -> str:
    options = list(known)
    by_lower = {option.lower(): option for option in options}
    close = _close_match(key.lower(), list(by_lower), cutoff=0.6)
    if close is not None:
        return f"unknown {what} (did you mean {by_lower[close]!r}?)"
    return f"unknown {what} (expected one of: {', '.join(options)})"


def _check_keys(
    table: Mapping[str, object], known: tuple[str, ...], prefix: str, context: _Context
) -> None:
    for key in table:
        if key not in known:
            raise context.fail(_key(prefix, key), _unknown_key_problem(key, known))


def _table(value: object, key: str, context: _Context) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise context.fail(key, _expected("a table", value))
    return value


def _string(value: object, key: str, context: _Context) -> str:
    if not isinstance(value, str):
        raise context.fail(key, _expected("a string", value))
    return value


def _string_list(value: object, key: str, context: _Context) -> list[str]:
    if not isinstance(value, list):
        raise context.fail(key, _expected("an array of strings", value))
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise context.fail(f"{key}[{index}]", _expected("a string", item))
    return list(value)


def _specifier(value: object, key: str, context: _Context) -> SpecifierSet:
    if not isinstance(value, str):
        raise context.fail(key, _expected('a version specifier such as ">=2.5" or "*"', value))
    text = value.strip()
    if text == "*":
        return SpecifierSet()
    if not text:
        raise context.fail(key, 'empty version specifier; use "*" for any version')
    try:
        specifier = SpecifierSet(text)
        Requirement(f"x{text}")
        return specifier
    except (InvalidSpecifier, InvalidRequirement):
        pass
    hint = 'examples: ">=2.5,<2.7", "==2.6.*", "*"'
    try:
        Version(text)
    except InvalidVersion:
        pass
    else:
        hint = f'did you mean "=={text}" or "=={text}.*"?'
    raise context.fail(key, f"{_show(value)} is not a version specifier ({hint})")


def _number(
    value: object, key: str, context: _Context, *, positive: bool, at_most: float, unit: str
) -> float:
    """A finite number from 0 (more than 0 when ``positive``) to ``at_most``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise context.fail(key, _expected("a number", value))
    try:
        number = float(value)
    except OverflowError:
        raise context.fail(key, f"number too large (at most {at_most:g}{unit})") from None
    if not math.isfinite(number):
        raise context.fail(key, "expected a finite number")
    if positive and number <= 0:
        raise context.fail(key, "must be more than 0")
    if number < 0:
        raise context.fail(key, "must be 0 or more")
    if number > at_most:
        raise context.fail(key, f"{number:g} is too large (at most {at_most:g}{unit})")
    return number


def _url(value: object, key: str, context: _Context, schemes: tuple[str, ...]) -> str:
    """A URL without literal credentials or shell-significant characters."""
    url = _string(value, key, context)
    match = re.fullmatch(_URL_PATTERN, url, re.DOTALL)
    if match is None:
        raise context.fail(key, f"{_show(url)} is not a URL like https://host/simple")
    scheme, netloc, rest = match.group(1).lower(), match.group(2), match.group(3)
    host = netloc.rpartition("@")[2]
    shown = _show(f"{scheme}://{host}{rest.partition('?')[0]}")
    if scheme not in schemes:
        allowed = ", ".join(schemes)
        raise context.fail(key, f"{shown}: scheme {scheme!r} not allowed (use {allowed})")
    if "@" in netloc:
        parts = netloc.rpartition("@")[0].split(":")
        if len(parts) > 2 or not all(not p or _VAR_REF_RE.fullmatch(p) for p in parts):
            raise context.fail(key, f"literal credentials in a URL; {CREDENTIALS_HINT}")
    secret = _literal_secret_parameter(rest)
    if secret is not None:
        raise context.fail(
            key, f"literal secret in the query ({secret}=); use a ${{VAR}} reference there,"
            " e.g. ?token=${TOKEN}"
        )
    if scheme != "file" and not re.fullmatch(_HOST_PATTERN, host):
        raise context.fail(key, f"{shown}: missing or invalid host name")
    port = host.rpartition(":")[2] if not host.endswith("]") and ":" in host else None
    if port is not None and not 0 < int(port) <= 65535:
        raise context.fail(key, f"{shown}: port {int(port)} is not a port (1 to 65535)")
    if scheme == "file" and host and host != "localhost":
        raise context.fail(key, f"{shown}: a file URL names no host (file:///path)")
    if not re.fullmatch(_URL_REST_PATTERN, _VAR_REF_RE.sub("", rest)):
        raise context.fail(
            key, f"{shown} holds characters a URL should percent-encode (quotes, spaces, $, ;)"
        )
    return url


def _literal_secret_parameter(rest: str) -> str | None:
    """The name of a query parameter of ``rest`` that names a secret and holds a literal value
    (not one ``${VAR}`` reference)."""
    query = rest.partition("?")[2].partition("#")[0]
    for item in re.split("[&;]", query):
        name, _, value = item.partition("=")
        words = re.split(r"[-_.]", name.lower())
        if value and not _VAR_REF_RE.fullmatch(value) and SECRET_QUERY_WORDS.intersection(words):
            return printable(name)[:40]
    return None


def _build(
    document: Mapping[str, object], context: _Context, content_hash: str, partial: bool = False
) -> Profile:
    """Validate one document (a single file when ``partial``, else the merged profile)."""
    _check_keys(document, TOP_KEYS, "", context)
    if "schema" in document:
        schema = document["schema"]
        if isinstance(schema, bool) or not isinstance(schema, int):
            raise context.fail("schema", _expected("the integer 1", schema))
        if schema != SCHEMA_VERSION:
            raise context.fail(
                "schema", f"schema {schema} is not supported (this colabenv reads schema 1)"
            )
    name = ""
    if "name" in document or not partial:
        name = _string(document.get("name"), "name", context)
        if not _NAME_RE.fullmatch(name) or len(name) > MAX_NAME_LENGTH:
            raise context.fail(
                "name",
                f"{_show(name)} is not a profile name (letters, digits, '.', '_', '-'; "
                f"at most {MAX_NAME_LENGTH})",
            )
    description = _description(document.get("description", ""), context)
    if "extends" in document:
        _extends(document["extends"], context)
    python = None
    if "python" in document:
        python = _specifier(document["python"], "python", context)
    return Profile(
        name=name,
        description=description,
        path=context.path,
        content_hash=content_hash,
        python=python,
        frameworks=_frameworks(document.get("frameworks", {}), context),
        requirements=_requirements(document.get("packages", {}), context),
        apt=_apt(document.get("apt", {}), context),
        env=_env(document.get("env", {}), context),
        install=_install(document.get("install", {}), context),
        verify=_verify(document.get("verify", {}), context),
        reproducibility=_reproducibility(document.get("reproducibility", {}), context),
        catalog_paths=tuple(Path(p) for p in _catalog_paths(document.get("catalog", {}),
                                                             context)),
        allow_unconfirmed=_allow_unconfirmed(document.get("catalog", {}), context),
    )


def _description(value: object, context: _Context) -> str:
    text = _string(value, "description", context)
    if not text.isprintable():
        raise context.fail("description", "must be one line without control characters")
    if len(text) > MAX_DESCRIPTION_LENGTH:
        raise context.fail("description", f"longer than {MAX_DESCRIPTION_LENGTH} characters")
    return text.strip()


def _extends(value: object, context: _Context) -> str:
    text = _string(value, "extends", context)
    if not text.strip() or "\x00" in text:
        raise context.fail("extends", "expected the path of another profile file")
    if Path(text).is_absolute():
        raise context.fail("extends", f"{_show(text)} must be a path relative to this file")
    return text


def _frameworks(value: object, context: _Context) -> tuple[FrameworkRequest, ...]:
    table = _table(value, "frameworks", context)
    known = tuple(f.value for f in Framework)
    for key in table:
        if key not in known:
            raise context.fail(
                _key("frameworks", key), _unknown_key_problem(key, known, "framework")
            )
    requests = []
    for framework in Framework:
        if framework.value in table:
            request = _framework(framework, table[framework.value], context)
            if request is not None:
                requests.append(request)
    return tuple(requests)


def _framework(framework: Framework, value: object, context: _Context) -> FrameworkRequest | None:
    key = _key("frameworks", framework.value)
    if value is False:
        return None
    if value is True:
        raise context.fail(key, 'true is not a version; use "*" for any version, false for none')
    if isinstance(value, str):
        return FrameworkRequest(framework, _specifier(value, key, context))
    if not isinstance(value, dict):
        raise context.fail(
            key, _expected('a version specifier, "*", false, or a table with version', value)
        )
    specifier = _specifier(value.get("version", "*"), _key(key, "version"), context)
    variant = None
    if "variant" in value:
        variant = _string(value["variant"], _key(key, "variant"), context)
        pattern, examples = _VARIANT_PATTERNS[framework]
        if not re.fullmatch(pattern, variant):
            raise context.fail(
                _key(key, "variant"), f"{_show(variant)} is not a {framework} variant ({examples})"
            )
    companions: dict[NormalizedName, SpecifierSet] = {}
    for name, companion in value.items():
        if name in FRAMEWORK_TABLE_KEYS:
            continue
        where = _key(key, name)
        problem = _companion_name_problem(framework, name)
        if problem is not None:
            raise context.fail(where, problem)
        canonical = canonicalize_name(name)
        if canonical in companions:
            raise context.fail(where, f"companion {canonical!r} given twice")
        if companion is False:
            continue
        if isinstance(companion, dict):
            raise context.fail(where, _unknown_key_problem(name, FRAMEWORK_TABLE_KEYS))
        companions[canonical] = _specifier(companion, where, context)
    return FrameworkRequest(
        framework=framework,
        specifier=specifier,
        variant=variant,
        companions=tuple(sorted(companions.items())),
    )


def _companion_name_problem(framework: Framework, name: str) -> str | None:
    """Any other key of a framework table names a companion package (torchvision, jaxlib ...)."""
    close = _close_match(name, FRAMEWORK_TABLE_KEYS, cutoff=0.7)
    if close is not None:
        return f"unknown key (did you mean {close!r}?)"
    if not _PACKAGE_NAME_RE.fullmatch(name):
        return f"unknown key; {_show(name)} is neither version, variant nor a package name"
    canonical = canonicalize_name(name)
    if canonical == framework.value:
        return f"{framework} cannot be its own companion; use version"
    if canonical in {f.value for f in Framework}:
        return f"{canonical} is a framework of its own; set frameworks.{canonical}"
    return None


def _requirements(value: object, context: _Context) -> tuple[Requirement, ...]:
    table = _table(value, "packages", context)
    _check_keys(table, PACKAGES_KEYS, "packages", context)
    if "requirements" not in table:
        return ()
    key = "packages.requirements"
    seen: dict[tuple[NormalizedName, str], int] = {}
    requirements = []
    for index, text in enumerate(_string_list(table["requirements"], key, context)):
        where = f"{key}[{index}]"
        line = text.strip()
        if not line:
            raise context.fail(where, "empty requirement")
        if line.startswith("-"):
            raise context.fail(
                where,
                f"{_show(line)} is a pip option, not a requirement; indexes and mirrors go in "
                "[install] (index_url, extra_index_urls)",
            )
        try:
            requirement = Requirement(line)
        except InvalidRequirement as error:
            reason = str(error).splitlines()[0] if str(error) else "invalid"
            raise context.fail(
                where, f"{_show(line)} is not a PEP 508 requirement ({reason})"
            ) from None
        canonical = canonicalize_name(requirement.name)
        if requirement.url is not None and "${" in requirement.url:
            raise context.fail(
                where,
                "${VAR} is not expanded in a direct reference (it would be sent as written);"
                " credentials belong in an index URL ([install] index_url, extra_index_urls)",
            )
        if canonical in OWNED:
            raise context.fail(
                where,
                f"{canonical} is chosen per GPU by colabenv; set {OWNED[canonical]} "
                "instead of listing it here",
            )
        if requirement.url is not None:
            _url(requirement.url, where, context, DIRECT_URL_SCHEMES)
        if any(c in line for c in "$`\\"):
            raise context.fail(where, f"{_show(line)} holds shell characters ($, `, \\)")
        marker = str(requirement.marker) if requirement.marker else ""
        if (canonical, marker) in seen:
            first = seen[canonical, marker]
            raise context.fail(where, f"duplicate requirement {canonical!r} (also at [{first}])")
        seen[canonical, marker] = index
        requirements.append(requirement)
    return tuple(requirements)


def _apt(value: object, context: _Context) -> tuple[str, ...]:
    table = _table(value, "apt", context)
    _check_keys(table, APT_KEYS, "apt", context)
    if "packages" not in table:
        return ()
    key = "apt.packages"
    seen: dict[str, int] = {}
    packages = []
    for index, text in enumerate(_string_list(table["packages"], key, context)):
        where = f"{key}[{index}]"
        match = re.fullmatch(_APT_PATTERN, text)
        if match is None:
            raise context.fail(
                where,
                f"{_show(text)} is not a Debian package name (lowercase letters, digits, '+', "
                "'-', '.'; optionally =VERSION)",
            )
        name = match.group(1)
        if name in seen:
            raise context.fail(where, f"duplicate apt package {name!r} (also at [{seen[name]}])")
        seen[name] = index
        packages.append(text)
    return tuple(packages)


def _env(value: object, context: _Context) -> tuple[tuple[str, str], ...]:
    table = _table(value, "env", context)
    variables = []
    for name, text in table.items():
        where = _key("env", name)
        if not _ENV_NAME_RE.fullmatch(name):
            raise context.fail(
                where, "not an environment variable name (letters, digits, '_'; no leading digit)"
            )
        if name.upper().startswith("COLABENV_"):
            raise context.fail(where, "COLABENV_* variables are colabenv's own settings")
        reason = REFUSED_ENV.reason(name)
        if reason is not None:
            raise context.fail(where, f"refused: {reason}")
        if not isinstance(text, str):
            raise context.fail(where, _expected("a string (quote numbers and booleans)", text))
        if "\x00" in text:
            raise context.fail(where, "value contains a NUL character")
        if "${" in text:
            raise context.fail(
                where, "refused: values are set literally, so ${...} would not be expanded"
            )
        variables.append((name, text))
    return tuple(variables)


def _install(value: object, context: _Context) -> InstallSettings:
    table = _table(value, "install", context)
    _check_keys(table, INSTALL_KEYS, "install", context)
    installer = Installer.AUTO
    if "installer" in table:
        text = _string(table["installer"], "install.installer", context)
        choices = [i.value for i in Installer]
        if text not in choices:
            problem = _unknown_key_problem(text, choices, "installer")
            raise context.fail("install.installer", problem)
        installer = Installer(text)
    index_url = None
    if "index_url" in table:
        index_url = _url(table["index_url"], "install.index_url", context, INDEX_URL_SCHEMES)
    pytorch_index_url = None
    if "pytorch_index_url" in table:
        pytorch_index_url = _url(
            table["pytorch_index_url"], "install.pytorch_index_url", context, INDEX_URL_SCHEMES
        )
    extra: list[str] = []
    if "extra_index_urls" in table:
        key = "install.extra_index_urls"
        for index, url in enumerate(_string_list(table["extra_index_urls"], key, context)):
            where = f"{key}[{index}]"
            _url(url, where, context, INDEX_URL_SCHEMES)
            if url in extra:
                raise context.fail(where, "duplicate extra index URL")
            extra.append(url)
    return InstallSettings(
        installer=installer,
        index_url=index_url,
        pytorch_index_url=pytorch_index_url,
        extra_index_urls=tuple(extra),
    )


def _verify(value: object, context: _Context) -> VerifySettings:
    table = _table(value, "verify", context)
    _check_keys(table, VERIFY_KEYS, "verify", context)
    defaults = VerifySettings()
    smoke: tuple[Framework, ...] | None = None
    if "smoke" in table:
        key = "verify.smoke"
        chosen: list[Framework] = []
        known = [f.value for f in Framework]
        for index, text in enumerate(_string_list(table["smoke"], key, context)):
            where = f"{key}[{index}]"
            if text not in known:
                raise context.fail(where, _unknown_key_problem(text, known, "framework"))
            if Framework(text) in chosen:
                raise context.fail(where, f"{text} listed twice")
            chosen.append(Framework(text))
        smoke = tuple(chosen)
    require_gpu = defaults.require_gpu
    if "require_gpu" in table:
        flag = table["require_gpu"]
        if not isinstance(flag, bool):
            raise context.fail("verify.require_gpu", _expected("true or false", flag))
        require_gpu = flag
    min_free = defaults.min_free_vram_gib
    if "min_free_vram_gib" in table:
        min_free = _number(table["min_free_vram_gib"], "verify.min_free_vram_gib", context,
                           positive=False, at_most=MAX_FREE_VRAM_GIB, unit=" GiB")
    timeout = defaults.timeout_s
    if "timeout_s" in table:
        timeout = _number(table["timeout_s"], "verify.timeout_s", context,
                          positive=True, at_most=MAX_TIMEOUT_S, unit=" s, a day")
    read_all = _optional_number(table, "min_read_mib_s", "verify", context)
    write_all = _optional_number(table, "min_write_mib_s", "verify", context)
    io = _io_checks(table.get("io_paths", []), read_all, write_all, context)
    size = defaults.io_size_mib
    if "io_size_mib" in table:
        size = _whole(table["io_size_mib"], "verify.io_size_mib", context, 1, MAX_IO_SIZE_MIB)
    free_ram = defaults.min_free_ram_gib
    if "min_free_ram_gib" in table:
        free_ram = _number(table["min_free_ram_gib"], "verify.min_free_ram_gib", context,
                           positive=False, at_most=MAX_FREE_VRAM_GIB, unit=" GiB")
    share = defaults.max_other_vram_share
    if "max_other_vram_share" in table:
        share = _number(table["max_other_vram_share"], "verify.max_other_vram_share", context,
                        positive=False, at_most=1.0, unit=" (a share of 1)")
    return VerifySettings(
        smoke=smoke, require_gpu=require_gpu, min_free_vram_gib=min_free, timeout_s=timeout,
        io=io, io_size_mib=size, min_free_ram_gib=free_ram, max_other_vram_share=share,
    )


def _optional_number(table: Mapping[str, object], name: str, prefix: str,
                     context: _Context) -> float | None:
    if name not in table:
        return None
    return _number(table[name], f"{prefix}.{name}", context, positive=False,
                   at_most=MAX_THROUGHPUT_MIB_S, unit=" MiB/s")


def _whole(value: object, key: str, context: _Context, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise context.fail(key, _expected("a whole number", value))
    if not low <= value <= high:
        raise context.fail(key, f"expected a whole number from {low} to {high}")
    return value


def _io_checks(value: object, read_all: float | None, write_all: float | None,
               context: _Context) -> tuple[IoCheck, ...]:
    """``io_paths``: absolute folders, each a string or ``{path, min_read_mib_s,
    min_write_mib_s}``; the table's own thresholds beat the ones given for all."""
    key = "verify.io_paths"
    if not isinstance(value, list):
        raise context.fail(key, _expected("a list of paths", value))
    if len(value) > MAX_IO_PATHS:
        raise context.fail(key, f"more than {MAX_IO_PATHS} paths")
    checks: list[IoCheck] = []
    for index, item in enumerate(value):
        where = f"{key}[{index}]"
        read, write = read_all, write_all
        if isinstance(item, dict):
            _check_keys(item, IO_PATH_KEYS, where, context)
            if "path" not in item:
                raise context.fail(where, "missing path")
            text = _string(item["path"], f"{where}.path", context)
            read = _optional_number(item, "min_read_mib_s", where, context) or read
            write = _optional_number(item, "min_write_mib_s", where, context) or write
            where = f"{where}.path"
        else:
            text = _string(item, where, context)
        if not text.startswith("/") or not text.isprintable() or "\x00" in text:
            raise context.fail(where, f"{_show(text)} is not an absolute path")
        if any(check.path == text for check in checks):
            raise context.fail(where, f"{_show(text)} listed twice")
        checks.append(IoCheck(text, read, write))
    return tuple(checks)


def _reproducibility(value: object, context: _Context) -> Reproducibility:
    table = _table(value, "reproducibility", context)
    _check_keys(table, REPRODUCIBILITY_KEYS, "reproducibility", context)
    seed = None
    if "seed" in table:
        seed = _whole(table["seed"], "reproducibility.seed", context, 0, MAX_SEED)
    deterministic = table.get("deterministic", False)
    if not isinstance(deterministic, bool):
        raise context.fail("reproducibility.deterministic", _expected("true or false",
                                                                      deterministic))
    return Reproducibility(seed=seed, deterministic=deterministic)


def _allow_unconfirmed(value: object, context: _Context) -> bool:
    """``[catalog] allow_unconfirmed``: take catalog builds marked unconfirmed."""
    allowed = _table(value, "catalog", context).get("allow_unconfirmed", False)
    if not isinstance(allowed, bool):
        raise context.fail("catalog.allow_unconfirmed", _expected("true or false", allowed))
    return allowed


def _catalog_paths(value: object, context: _Context) -> list[str]:
    """``[catalog] paths``: folders of catalog overlay files, relative to the profile file."""
    table = _table(value, "catalog", context)
    _check_keys(table, CATALOG_KEYS, "catalog", context)
    paths = _string_list(table.get("paths", []), "catalog.paths", context)
    if len(paths) > MAX_CATALOG_PATHS:
        raise context.fail("catalog.paths", f"more than {MAX_CATALOG_PATHS} folders")
    for index, text in enumerate(paths):
        if not text.strip() or "\x00" in text or not text.isprintable():
            raise context.fail(f"catalog.paths[{index}]", "expected a folder path")
        if Path(text).is_absolute():
            raise context.fail(f"catalog.paths[{index}]",
                               f"{_show(text)} must be a path relative to the profile file")
    return paths
