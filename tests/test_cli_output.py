"""What the command line does with its own output: a full or closed standard output, a pipe
that closes early, ``python -m colabenv``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fixtures import Runner

FULL = Path("/dev/full")
FULL_LINE = "colabenv: cannot write to standard output: No space left on device"
FINGERPRINT = {
    "target": {"driver": "550.54.15", "cuda": "12.4", "compute_capabilities": ["7.5"],
               "python": "3.11", "platform": "linux_x86_64"},
    "gpus": [], "runtime": "colab", "installed": {}, "packages": {},
}

needs_dev_full = pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this system")


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    if tmp_path.is_dir():
        a.write_text(json.dumps(FINGERPRINT))
        b.write_text(json.dumps({**FINGERPRINT, "runtime": "kaggle"}))
    return {
        "render": ["render", "pytorch", "--cpu", "--python", "3.12"],
        "resolve": ["resolve", "pytorch", "--cpu", "--python", "3.12"],
        "resolve --json": ["resolve", "pytorch", "--json", "--cpu", "--python", "3.12"],
        "detect": ["detect", "--cpu"],
        "detect --json": ["detect", "--json", "--cpu"],
        "profiles list": ["profiles", "list"],
        "profiles show": ["profiles", "show", "all-three"],
        "profiles check": ["profiles", "check", "pytorch"],
        "diff": ["diff", str(a), str(b)],
        "init": ["init", "--cpu"],
        "--version": ["--version"],
        "--help": ["--help"],
        "render --help": ["render", "--help"],
    }


COMMANDS = list(_commands(Path("/nonexistent/only-the-names")))


@needs_dev_full
@pytest.mark.parametrize("name", COMMANDS)
def test_a_full_standard_output_is_one_line_and_a_failure(
    runner: Runner, tmp_path: Path, name: str
) -> None:
    done = runner(*_commands(tmp_path)[name], stdout_path=FULL)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [FULL_LINE]


@needs_dev_full
def test_a_full_standard_output_at_the_final_flush_only(runner: Runner) -> None:
    """A short output stays in the buffer until the command ends: the failure shows at the
    flush, which is the command's, not the interpreter's."""
    done = runner("profiles", "check", "pytorch", stdout_path=FULL,
                  env={"PYTHONUNBUFFERED": None})
    assert done.returncode == 2
    assert done.stderr.splitlines() == [FULL_LINE]


def test_a_closed_standard_output_is_one_line(runner: Runner) -> None:
    exe = runner.exe
    done = subprocess.run([str(exe), "profiles", "list"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, timeout=60,
                          preexec_fn=lambda: __import__("os").close(1), check=False)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "colabenv: cannot write to standard output: it is closed"]


@pytest.mark.parametrize("argv", [["profiles", "check", "pytorch"], ["render", "pytorch", "--cpu"]])
def test_a_pipe_closed_early_is_quiet(runner: Runner, argv: list[str]) -> None:
    process = subprocess.Popen([str(runner.exe), *argv], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 1
    assert stderr == ""


def test_python_dash_m_works_like_the_console_script(runner: Runner) -> None:
    script = runner("profiles", "list")
    module = subprocess.run([sys.executable, "-m", "colabenv", "profiles", "list"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert (module.returncode, module.stdout, module.stderr) == (0, script.stdout, "")
    usage = subprocess.run([sys.executable, "-m", "colabenv", "nope"],
                           capture_output=True, text=True, timeout=60, check=False)
    assert usage.returncode == 2
    assert usage.stderr.startswith("usage: colabenv ")
