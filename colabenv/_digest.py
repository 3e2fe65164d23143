"""SHA-256 without loading OpenSSL: the profile hash and the catalog cache's keys.

:mod:`hashlib` loads OpenSSL when it is first imported, about 4 ms, the largest single import
``colabenv render`` would make beyond its import floor. CPython's own SHA-256 module (``_sha2``
from 3.12, ``_sha256`` before) gives the same digests and imports in a fraction of a
millisecond; another interpreter without it gets :mod:`hashlib`.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any


def sha256_hex(data: bytes) -> str:
    digest: str = _sha256()(data).hexdigest()
    return digest


@functools.cache
def _sha256() -> Callable[[bytes], Any]:
    for name in ("_sha2", "_sha256"):
        try:
            constructor: Callable[[bytes], Any] = importlib.import_module(name).sha256
        except (ImportError, AttributeError):
            continue
        return constructor
    import hashlib

    return hashlib.sha256
