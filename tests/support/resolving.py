"""``colabenv resolve --json`` run in this process, and what tests read of its answer."""

from __future__ import annotations

import json

import pytest

from colabenv.cli.main import main


def resolve_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object], str]:
    """``colabenv resolve ARGV --json``: its exit, its JSON (empty unless it exits 0), its stderr."""
    code = main(["resolve", *argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else {}), err


def chosen(resolution: dict[str, object], framework: str = "torch") -> dict[str, str]:
    """The entry of ``framework`` in a ``resolve --json`` answer."""
    frameworks = resolution["frameworks"]
    assert isinstance(frameworks, dict)
    return frameworks[framework]  # type: ignore[no-any-return]
