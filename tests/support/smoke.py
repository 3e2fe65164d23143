"""The smoke child's modules, imported as the child imports them: by their plain names, with its
folder first on ``sys.path`` (only while they are imported)."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

from colabenv._util.resources import SMOKE_PROGRAM


def smoke_module(name: str) -> ModuleType:
    """``base``, ``vram``, ... of ``colabenv/_target/smoke/``, for tests of their functions."""
    sys.path.insert(0, str(SMOKE_PROGRAM))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(SMOKE_PROGRAM))
