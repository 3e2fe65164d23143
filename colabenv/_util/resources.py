"""The files colabenv ships beside its code: the profiles (catalog and golden), and the programs
that run in the target's Python (``colabenv/_target/``), found by path, never imported there."""

from __future__ import annotations

import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
TARGET_PROGRAMS = PACKAGE / "_target"

SMOKE_PROGRAM = TARGET_PROGRAMS / "smoke"
"""The smoke child, a folder run as ``python SMOKE_PROGRAM MODE ...`` (its ``__main__.py``)."""
STORAGE_PROGRAM = TARGET_PROGRAMS / "storage.py"
"""The ``io:<path>`` child, run as ``python STORAGE_PROGRAM FILE SIZE DEADLINE``."""
IMPORT_PROGRAM = TARGET_PROGRAMS / "importcheck.py"
"""``doctor``'s import child, run as ``python IMPORT_PROGRAM MODULE RESULT_FILE``."""
HELPER_PROGRAM = TARGET_PROGRAMS / "helper.py"
"""The helper every bootstrap script embeds."""
WHEELHOUSE_PROGRAM = TARGET_PROGRAMS / "wheelhouse.py"
"""What a script that installs from a wheelhouse embeds beside the helper (issue 26)."""


@functools.lru_cache(maxsize=1)
def profiles_root() -> Path:
    """``colabenv/_profiles`` inside a wheel; the checkout's ``profiles/`` in an editable install."""
    installed = PACKAGE / "_profiles"
    if installed.is_dir():
        return installed
    return PACKAGE.parent / "profiles"


def catalog_dir() -> Path:
    return profiles_root() / "catalog"


def golden_dir() -> Path:
    return profiles_root() / "golden"


def wheelhouse_source() -> str:
    """The source of the wheelhouse program (stdlib only; it imports the helper beside it)."""
    return WHEELHOUSE_PROGRAM.read_text(encoding="utf-8")


def helper_source() -> str:
    """The source of the helper program every bootstrap script embeds (stdlib only)."""
    return HELPER_PROGRAM.read_text(encoding="utf-8")
