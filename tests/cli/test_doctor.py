"""``colabenv doctor`` through the real console script: the JSON's shape, exit 0 when nothing
is found, 1 when something is, 2 with one line on stderr and nothing on stdout on bad input.

Runs that must find nothing but what they cause look back one second only (``--since 1s``):
this machine's own past (an OOM kill in its kernel log, from another test) is not theirs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fixtures import Runner


def test_nothing_wrong_is_exit_0(runner: Runner) -> None:
    done = runner("doctor", "--json", "--import", "json", "--since", "1s")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["findings"] == []
    assert any("1 module imported" in note for note in data["notes"])


def test_a_failing_import_is_exit_1_with_the_finding_json(runner: Runner) -> None:
    done = runner("doctor", "--json", "--import", "colabenv_no_such_module", "--since", "1s")
    assert done.returncode == 1, done.stderr
    (finding,) = json.loads(done.stdout)["findings"]
    assert set(finding) == {"kind", "summary", "evidence", "remedy", "module", "cause"}
    assert finding["kind"] == "import-failure" and finding["cause"] == "not-installed"
    assert finding["module"] == "colabenv_no_such_module"
    assert finding["evidence"][0] == {
        "time": None,
        "text": "ModuleNotFoundError: No module named 'colabenv_no_such_module'",
    }


def test_the_report_for_people_says_what_to_do(runner: Runner) -> None:
    done = runner("doctor", "--import", "colabenv_no_such_module", "--since", "1s")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0] == "colabenv doctor: 1 problem, the most likely first"
    assert "import-failure (not-installed): import colabenv_no_such_module fails" in done.stdout
    assert any(
        line.startswith("  what to do: module colabenv_no_such_module is not installed") for line in lines
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "2d"], "--since: '2d' is not a duration like 2h, 30m or 90s (at most 168h)"),
        (["--since", "0h"], "--since: '0h' is not a duration"),
        (["--since", "169h"], "--since: '169h' is not a duration"),
        (["--since", "-5m"], None),
        (["--interpreter", "/nonexistent/python"], "--interpreter /nonexistent/python: not found"),
        (["--profile", "./missing.toml"], "missing.toml"),
        (["--lock", "missing.lock"], "missing.lock: no such lock file"),
        (["--profile", "p", "--lock", "l"], "not allowed with argument"),
        (["--import", "a b"], "--import: 'a b' is not a module name"),
    ],
)
def test_bad_input_is_exit_2_and_one_line(runner: Runner, args: list[str], message: str | None) -> None:
    done = runner("doctor", *args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    if message is not None:
        assert message in done.stderr


def test_a_bad_profile_is_exit_2(runner: Runner, tmp_path: Path) -> None:
    (tmp_path / "team.toml").write_text('schema = 1\nname = "team"\n[frameworks]\ntorch = 3\n')
    done = runner("doctor", "--profile", "./team.toml")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("colabenv: team.toml: frameworks.torch")


def test_the_python_api_answers_twice(tmp_path: Path) -> None:
    """``colabenv.doctor`` stays the function after the package behind it is imported (a package
    named ``doctor`` would rebind the name)."""
    code = (
        "import colabenv\n"
        "import colabenv.diagnosis.run\n"
        "first = colabenv.doctor(imports=('json',), since='1s')\n"
        "second = colabenv.doctor(imports=('colabenv_no_such_module',), since='1s')\n"
        "print(first.ok, second.ok, second.findings[0].cause)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False", "not-installed"]
