from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

pytest_plugins = ["tests.support.fixtures"]

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

RUNTIMES = REPO / "tests" / "data" / "runtimes"

_PROCESS_CACHE = tempfile.mkdtemp(prefix="colabenv-test-cache-")
os.environ["COLABENV_CACHE_DIR"] = _PROCESS_CACHE
atexit.register(shutil.rmtree, _PROCESS_CACHE, True)
"""The test process's own cache directory: the compiled-code cache is written when the process
exits, after every fixture has undone its changes, and must not land in the user's."""


@pytest.fixture(autouse=True)
def _isolated_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the real state or cache directory, takes target overrides from
    the shell, or asks an index to confirm a resolution (``COLABENV_OFFLINE``; the tests of the
    check turn it off)."""
    monkeypatch.setenv("COLABENV_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setenv("COLABENV_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "colabenv-cache"))
    for var in list(os.environ):
        if var.startswith("COLABENV_") and var not in ("COLABENV_STATE_DIR", "COLABENV_CACHE_DIR"):
            monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("COLABENV_OFFLINE", "1")  # no index check: tests/index/test_check.py runs it
