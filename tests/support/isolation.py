"""Environment variables for pip/uv subprocesses that ignore this machine's pip and uv config.

The development host may carry pip configuration (``PIP_FIND_LINKS``, a pip.conf with extra
indexes, a global constraints file) and ``UV_*`` variables; any of them would let a test install
from somewhere other than the local index it means to test against.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

_CACHE_ROOT: Path | None = None


def _cache_root() -> Path:
    global _CACHE_ROOT
    if _CACHE_ROOT is None:
        _CACHE_ROOT = Path(tempfile.mkdtemp(prefix="colabenv-test-cache-"))
        atexit.register(shutil.rmtree, _CACHE_ROOT, ignore_errors=True)
    return _CACHE_ROOT


def clean_env(**extra: str) -> dict[str, str]:
    """``os.environ`` without ``PIP_*``/``UV_*``/``VIRTUAL_ENV``, pip config off, temp caches.

    Keyword arguments are added last (``clean_env(UV_OFFLINE="1")``).
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PIP_", "UV_", "PIPTOOLS_", "CUSTOM_COMPILE_"))
        and key not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX")
    }
    cache = _cache_root()
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_INPUT="1",
        PIP_CACHE_DIR=str(cache / "pip"),
        UV_NO_CONFIG="1",
        UV_CACHE_DIR=str(cache / "uv"),
        UV_PYTHON_DOWNLOADS="never",
        XDG_CACHE_HOME=str(cache / "xdg"),
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.update(extra)
    return env


def uv_bin() -> str:
    """The uv executable beside the running interpreter, else the ``uv`` package's binary."""
    beside = Path(sys.executable).parent / "uv"
    if beside.exists():
        return str(beside)
    import uv

    return str(uv.find_uv_bin())
