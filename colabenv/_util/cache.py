"""The cache directory and what colabenv keeps there: the shipped catalog's parsed TOML, data
that can be rebuilt at any time (why it exists, and what it saves: docs/decisions/).

Reading ``torch.toml`` with tomllib (pure Python) costs more than everything else ``colabenv
render`` does once its modules are imported; the parsed document loads from marshal data in a
fraction of a millisecond. An entry is named by the sha256 of the TOML bytes and the
interpreter's cache tag, so an edited file, another colabenv or another Python never reads a
stale one. Only the shipped catalog goes through it: profiles are small and read afresh (reading
one writes nothing). The cache holds data only (dicts, lists, strings, numbers): never code.

The cache is best effort: a directory that cannot be written, or an entry that cannot be read,
means parsing again, never an error. An entry carries the sha256 of the TOML bytes it claims to
be the parse of and of its own data; one that does not match (altered, truncated, copied under
another name) is parsed again and rewritten, so damage costs one parse, never a failure blamed
on the catalog nor a catalog other than the file's. The directory is the user's own (:func:`cache_dir`) and
never a shared place. What it holds becomes the script (the catalog's index URLs), so an entry
is read only from a file and folder this user owns and no one else may write (as ssh treats its
keys), and written 0600 in a 0700 folder whatever the umask; elsewhere the file is parsed afresh
and nothing is stored.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from colabenv._util.files import FileProblem, read_limited, write_atomic

Document = dict[str, Any]

ENV_CACHE_DIR = "COLABENV_CACHE_DIR"
MAX_ENTRY_BYTES = 8 * 1024 * 1024
"""The most read of one entry (parsed torch.toml is about 80 KB)."""


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``COLABENV_CACHE_DIR``, else ``$XDG_CACHE_HOME/colabenv`` (``~/.cache/colabenv``): where
    derived data that can be rebuilt at any time is kept.

    RuntimeError when there is none: no home directory (``HOME`` unset and the user not in the
    password database) and neither variable set. The cache is then skipped: it is trusted like
    ``.pyc`` files, so it never falls back to a shared place such as ``/tmp``.
    """
    env = os.environ if environ is None else environ
    explicit = _expanded(env.get(ENV_CACHE_DIR, ""), env)
    if explicit is not None:
        return explicit
    cache = _expanded(env.get("XDG_CACHE_HOME", ""), env)
    if cache is not None:
        return cache / "colabenv"
    home = home_dir(env)
    if home is None:
        raise RuntimeError("no cache directory: no home directory and no COLABENV_CACHE_DIR")
    return home / ".cache" / "colabenv"


def home_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """``$HOME``, else the user's entry in the password database; None when neither gives one
    (a container running as a user it does not know, with ``HOME`` unset)."""
    env = os.environ if environ is None else environ
    home = env.get("HOME", "").strip()
    if home:
        return Path(home)
    try:
        import pwd

        entry = pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError, OSError):
        return None
    return Path(entry) if entry else None


def _expanded(text: str, env: Mapping[str, str]) -> Path | None:
    """A path from a variable, ``~`` expanded as the shell does; None for an empty one, or a
    ``~`` with no home to expand it to."""
    text = text.strip()
    if not text:
        return None
    if text == "~" or text.startswith("~/"):
        home = home_dir(env)
        return None if home is None else home / text[2:]
    if not text.startswith("~"):
        return Path(text)
    try:
        return Path(text).expanduser()
    except RuntimeError:  # ~user of a user the password database does not know
        return None


def _tag() -> str:
    return sys.implementation.cache_tag or sys.implementation.name


# ---------------------------------------------------------------------------------------------
# Parsed TOML


def parsed_toml(
    data: bytes, parse: Callable[[bytes], Document], environ: Mapping[str, str] | None = None
) -> Document:
    """``parse(data)``, or its result from the cache when these exact bytes were parsed before."""
    source = hashlib.sha256(data).digest()
    try:
        entry = _entry(source, environ)
    except RuntimeError:
        return parse(data)
    if not _usable(entry):
        return parse(data)
    cached = _read_entry(entry, source)
    if isinstance(cached, dict):
        return cached
    document = parse(data)
    _write_entry(entry, source, document)
    return document


def _entry(source: bytes, environ: Mapping[str, str] | None) -> Path:
    """RuntimeError when there is no cache directory (no ``HOME``, no ``COLABENV_CACHE_DIR``)."""
    return cache_dir(environ) / "parsed" / f"{source.hex()}.{_tag()}.marshal"


# ---------------------------------------------------------------------------------------------
# Entries: private, bounded, whole or absent


def _usable(entry: Path) -> bool:
    """The entry's folder and file (each where it exists) belong to this user and no one else
    may write them."""
    return _private(entry.parent) and _private(entry)


def _private(path: Path) -> bool:
    """``path`` belongs to this user and no one else may write it; True when it does not exist
    (it is made by this user, private)."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return found.st_uid == os.getuid() and not found.st_mode & 0o022


ENTRY_MAGIC = b"colabenv parsed TOML 2\n"
"""What an entry starts with, then its :func:`_seal` and the marshal data (2: the sealed form)."""


def _seal(source: bytes, payload: bytes) -> bytes:
    """The sha256 of what an entry claims (the digest of the TOML bytes) and what it holds."""
    return hashlib.sha256(source + payload).digest()


def _read_entry(entry: Path, source: bytes) -> object:
    """The marshal data of ``entry`` when it is sealed for ``source`` (the sha256 of the TOML
    bytes); None for a missing, oversized, damaged or altered one."""
    try:
        data = read_limited(entry, MAX_ENTRY_BYTES)
    except FileProblem:
        return None
    start = len(ENTRY_MAGIC) + hashlib.sha256().digest_size
    payload = data[start:]
    if data[: len(ENTRY_MAGIC)] != ENTRY_MAGIC or data[len(ENTRY_MAGIC) : start] != _seal(source, payload):
        return None
    try:
        return marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None


def _write_entry(entry: Path, source: bytes, value: dict[str, Any]) -> None:
    """``value`` as sealed marshal data at ``entry``, 0600 in a 0700 folder; nothing on
    failure."""
    with contextlib.suppress(OSError, ValueError):
        payload = marshal.dumps(value)
        entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomic(entry, ENTRY_MAGIC + _seal(source, payload) + payload, mode=0o600)


# ---------------------------------------------------------------------------------------------
# Short-lived answers (an index's project page, read for the index check)


def recent(
    kind: str, key: str, max_age_s: float, environ: Mapping[str, str] | None = None
) -> Document | None:
    """What :func:`keep` stored under ``kind`` and ``key`` less than ``max_age_s`` ago; None
    when there is none (or it is older, damaged, or not this user's own). ``key`` is never a
    file name: the entry is named by its sha256, so a URL's text never reaches the folder."""
    source = hashlib.sha256(key.encode()).digest()
    try:
        entry = _recent_entry(kind, source, environ)
        age = time.time() - os.stat(entry).st_mtime
    except (RuntimeError, OSError):
        return None
    if not 0 <= age < max_age_s or not _usable(entry):
        return None
    cached = _read_entry(entry, source)
    return cached if isinstance(cached, dict) else None


def keep(kind: str, key: str, value: Document, environ: Mapping[str, str] | None = None) -> None:
    """``value`` (data only) stored under ``kind`` and ``key`` for :func:`recent`; best effort."""
    source = hashlib.sha256(key.encode()).digest()
    try:
        entry = _recent_entry(kind, source, environ)
    except RuntimeError:
        return
    if _usable(entry):
        _write_entry(entry, source, value)


def _recent_entry(kind: str, source: bytes, environ: Mapping[str, str] | None) -> Path:
    return cache_dir(environ) / kind / f"{source.hex()}.{_tag()}.marshal"
