"""Looking into another interpreter (``--interpreter``) runs none of the working directory's files."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from colabenv.host.interpreter import probe_interpreter


def test_files_named_like_the_probes_modules_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -c`` puts the working directory first on sys.path; a ``json.py`` or
    ``importlib.py`` there ran in the probe and broke it (issue 35). The path reported still
    has the working directory first, as the interpreter itself has it."""
    ran = tmp_path / "ran"
    ran.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    for name in ("json", "importlib", "platform", "sysconfig"):
        (work / f"{name}.py").write_text(f"open({str(ran / name)!r}, 'w').close()\nraise SystemExit(3)\n")
    monkeypatch.chdir(work)
    described = probe_interpreter(sys.executable)
    assert sorted(p.name for p in ran.iterdir()) == []
    assert described.path[0] == "" and described.executable
    assert any(Path(p).is_dir() for p in described.stdlib)
