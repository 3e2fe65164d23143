"""tomllib on Python 3.11+, tomli before."""

from __future__ import annotations

import sys
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib as toml_reader
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as toml_reader

loads = toml_reader.loads
TOMLDecodeError = toml_reader.TOMLDecodeError


def loads_utf8(data: bytes) -> dict[str, Any]:
    """The document in ``data``, UTF-8 TOML (what :func:`colabenv._util.cache.parsed_toml` parses)."""
    document: dict[str, Any] = loads(data.decode("utf-8"))
    return document


__all__ = ["TOMLDecodeError", "loads", "loads_utf8"]
