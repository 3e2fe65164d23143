"""The Python interpreter colabenv looks at: this one, or another one given by its path.

What ``detect`` and ``verify`` need of an interpreter (its version, ``sys.path``, standard
library and extension suffixes, platform) is read in-process for this interpreter, and for
another one by running a tiny standard-library-only probe in it, so the target needs neither
colabenv nor anything else installed.
"""

from __future__ import annotations

import importlib.machinery
import os
import platform
import sys
import sysconfig
from collections.abc import Iterable

from colabenv._model import model


@model
class Interpreter:
    """One Python interpreter, as seen from inside it."""

    executable: str
    version: str
    implementation: str
    path: tuple[str, ...]
    stdlib: tuple[str, ...]
    extension_suffixes: tuple[str, ...]
    platform: str

    @classmethod
    def current(cls) -> Interpreter:
        paths = sysconfig.get_paths()
        return cls(
            executable=sys.executable,
            version=platform.python_version(),
            implementation=platform.python_implementation(),
            path=tuple(sys.path),
            stdlib=_with_dynload(paths[key] for key in ("stdlib", "platstdlib") if key in paths),
            extension_suffixes=tuple(importlib.machinery.EXTENSION_SUFFIXES),
            platform=sysconfig.get_platform(),
        )


def _with_dynload(stdlib: Iterable[str]) -> tuple[str, ...]:
    found = set(stdlib)
    found |= {os.path.join(p, "lib-dynload") for p in list(found)}
    return tuple(sorted(found))
