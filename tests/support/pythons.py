"""The interpreters tests run colabenv's stdlib-only children under: this one, and the oldest
ones colabenv looks into (Python 3.8, which the smoke child and the script helper promise)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def oldest_python() -> str | None:
    """A Python 3.8 interpreter, the oldest colabenv looks into, if this machine has one: on
    PATH, or installed by pyenv (whose shim answers only where that version is selected)."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates = [shutil.which("python3.8"), *sorted(map(str, root.glob("versions/3.8*/bin/python3.8")))]
    for candidate in filter(None, candidates):
        done = subprocess.run(
            [candidate, "-c", "import sys; print(sys.executable)"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout.strip()
    return None


def child_pythons() -> list[object]:
    """pytest params: this Python, the 3.8 :func:`oldest_python` finds (skipped where there is
    none), and each interpreter ``COLABENV_TEST_OLD_PYTHONS`` names (``.ci/run`` sets it)."""
    oldest = oldest_python()
    named = [p for p in os.environ.get("COLABENV_TEST_OLD_PYTHONS", "").split(os.pathsep) if p]
    params: list[object] = [pytest.param(sys.executable, id="this-python")]
    params.append(
        pytest.param(
            oldest or "",
            id="python3.8",
            marks=pytest.mark.skipif(oldest is None, reason="no python3.8 on this machine"),
        )
    )
    params.extend(pytest.param(p, id=f"old-{Path(p).name}") for p in named if p != oldest)
    return params
