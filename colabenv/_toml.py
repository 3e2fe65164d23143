"""tomllib on Python 3.11+, tomli before."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib as toml_reader
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as toml_reader

loads = toml_reader.loads
TOMLDecodeError = toml_reader.TOMLDecodeError

__all__ = ["TOMLDecodeError", "loads"]
