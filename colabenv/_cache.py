"""Parsed TOML kept as marshal data, keyed by the file's content: ``__pycache__`` for the shipped
catalog (profiles are small and read afresh: reading one writes nothing).

Reading ``torch.toml`` with tomllib (pure Python) costs more than everything else
``colabenv render`` does once its modules are imported; the parsed document loads from marshal
data in a fraction of a millisecond. An entry is named by the sha256 of the TOML bytes and the
interpreter's cache tag, so an edited file, another colabenv or another Python never reads a
stale one. The cache is best effort: a directory that cannot be written, or an entry that
cannot be read, means parsing the file again, never an error. Like ``.pyc`` files, entries are
trusted as the user's own files.
"""

from __future__ import annotations

import contextlib
import marshal
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from colabenv._digest import sha256_hex
from colabenv._files import write_atomic
from colabenv.settings import cache_dir

Document = dict[str, Any]


def parsed_toml(
    data: bytes, parse: Callable[[bytes], Document], environ: Mapping[str, str] | None = None
) -> Document:
    """``parse(data)``, or its result from the cache when these exact bytes were parsed before."""
    try:
        entry = _entry(data, environ)
    except RuntimeError:
        return parse(data)
    try:
        cached = marshal.loads(entry.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        cached = None
    if isinstance(cached, dict):
        return cached
    document = parse(data)
    _store(entry, document)
    return document


def _entry(data: bytes, environ: Mapping[str, str] | None) -> Path:
    """RuntimeError when there is no cache directory (no ``HOME``, no ``COLABENV_CACHE_DIR``)."""
    tag = sys.implementation.cache_tag or sys.implementation.name
    return cache_dir(environ) / "parsed" / f"{sha256_hex(data)}.{tag}.marshal"


def _store(entry: Path, document: Document) -> None:
    try:
        payload = marshal.dumps(document)
    except ValueError:
        return
    with contextlib.suppress(OSError):
        entry.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(entry, payload)
