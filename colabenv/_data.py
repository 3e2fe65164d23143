"""Where the shipped profiles (catalog and golden) live, installed or in a checkout."""

from __future__ import annotations

import functools
from pathlib import Path


@functools.lru_cache(maxsize=1)
def profiles_root() -> Path:
    """``colabenv/_profiles`` inside a wheel; the checkout's ``profiles/`` in an editable install."""
    package = Path(__file__).resolve().parent
    installed = package / "_profiles"
    if installed.is_dir():
        return installed
    return package.parent / "profiles"


def catalog_dir() -> Path:
    return profiles_root() / "catalog"


def golden_dir() -> Path:
    return profiles_root() / "golden"


def helper_source() -> str:
    """The source of the helper program every bootstrap script embeds (stdlib only)."""
    return (Path(__file__).resolve().parent / "script_helper.py").read_text(encoding="utf-8")
