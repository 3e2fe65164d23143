from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest_plugins = ["tests.support.fixtures"]

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

RUNTIMES = REPO / "tests" / "data" / "runtimes"


@pytest.fixture(autouse=True)
def _isolated_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the real state directory or takes target overrides from the shell."""
    monkeypatch.setenv("COLABENV_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    for var in list(os.environ):
        if var.startswith("COLABENV_") and var != "COLABENV_STATE_DIR":
            monkeypatch.delenv(var, raising=False)
