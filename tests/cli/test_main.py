"""What the command line does with its own output: a full or closed standard output, a pipe
that closes early, ``python -m colabenv``."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fixtures import Runner

FULL = Path("/dev/full")
FULL_LINE = "colabenv: cannot write to standard output: No space left on device"
FINGERPRINT = {
    "target": {
        "driver": "550.54.15",
        "cuda": "12.4",
        "compute_capabilities": ["7.5"],
        "python": "3.11",
        "platform": "linux_x86_64",
    },
    "gpus": [],
    "runtime": "colab",
    "installed": {},
    "packages": {},
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
def test_a_full_standard_output_is_one_line_and_a_failure(runner: Runner, tmp_path: Path, name: str) -> None:
    done = runner(*_commands(tmp_path)[name], stdout_path=FULL)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [FULL_LINE]


@needs_dev_full
def test_a_full_standard_output_at_the_final_flush_only(runner: Runner) -> None:
    """A short output stays in the buffer until the command ends: the failure shows at the
    flush, which is the command's, not the interpreter's."""
    done = runner("profiles", "check", "pytorch", stdout_path=FULL, env={"PYTHONUNBUFFERED": None})
    assert done.returncode == 2
    assert done.stderr.splitlines() == [FULL_LINE]


def test_a_closed_standard_output_is_one_line(runner: Runner) -> None:
    exe = runner.exe
    done = subprocess.run(
        [str(exe), "profiles", "list"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        preexec_fn=lambda: os.close(1),
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["colabenv: cannot write to standard output: it is closed"]


@pytest.mark.parametrize("argv", [["profiles", "check", "pytorch"], ["render", "pytorch", "--cpu"]])
def test_a_pipe_closed_early_is_quiet(runner: Runner, argv: list[str]) -> None:
    process = subprocess.Popen([str(runner.exe), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 1
    assert stderr == ""


# ---------------------------------------------------------------------------------------------
# A standard error that cannot be written changes no exit code

STDERR_CASES = {
    "warn-only render": (["render", "pytorch", "--cpu", "--python", "3.12"], 0, "colabenv: warning: "),
    "bad profile": (["render", "bad.toml"], 2, "bad.toml: frameworks.torch: "),
    "success": (["profiles", "check", "pytorch"], 0, ""),
    "usage error": (["render", "--no-such-flag"], 2, "usage: colabenv render"),
}
STDERR_SINKS = ["closed", "/dev/full", "pipe closed by its reader", "full pipe"]


def _module(argv: list[str], cwd: Path, *, stdout: int | None = None, stderr: int | None = None) -> int:
    """``python -m colabenv ARGV`` run by bash, the sinks given as file descriptors (-1: closed)."""
    redirect = " ".join(
        f"{fd}>&-" if sink == -1 else f"{fd}>&{sink}"
        for fd, sink in ((1, stdout), (2, stderr))
        if sink is not None
    )
    keep = tuple(sink for sink in (stdout, stderr) if sink is not None and sink >= 0)
    done = subprocess.run(
        ["bash", "-c", f'exec "$@" {redirect}', "bash", sys.executable, "-m", "colabenv", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL if stdout is None else None,
        stderr=subprocess.DEVNULL if stderr is None else None,
        pass_fds=keep,
        cwd=cwd,
        timeout=60,
        check=False,
    )
    return done.returncode


@contextlib.contextmanager
def _sink(kind: str) -> Iterator[int]:
    """A file descriptor that cannot take what is written to it (-1: a closed one)."""
    if kind == "closed":
        yield -1
    elif kind == "/dev/full":
        fd = os.open(FULL, os.O_WRONLY)
        try:
            yield fd
        finally:
            os.close(fd)
    else:
        read, write = os.pipe()
        try:
            if kind == "pipe closed by its reader":
                os.close(read)
                read = -1
            else:
                os.set_blocking(write, False)
                with contextlib.suppress(BlockingIOError):
                    while True:
                        os.write(write, b"x" * 65536)
            yield write
        finally:
            os.close(write)
            if read != -1:
                os.close(read)


def _bad_profile(folder: Path) -> None:
    (folder / "bad.toml").write_text('name = "b"\n[frameworks]\ntorch = "2.x"\n', encoding="utf-8")


@pytest.mark.parametrize("case", STDERR_CASES)
def test_each_stderr_case_says_what_it_should_with_a_working_stderr(tmp_path: Path, case: str) -> None:
    """The cases below are what they claim: the warn-only render warns and succeeds, ..."""
    _bad_profile(tmp_path)
    argv, code, said = STDERR_CASES[case]
    done = subprocess.run(
        [sys.executable, "-m", "colabenv", *argv], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert done.returncode == code, done.stderr
    assert (said in done.stderr) if said else done.stderr == ""


@needs_dev_full
@pytest.mark.parametrize("sink", STDERR_SINKS)
@pytest.mark.parametrize("case", STDERR_CASES)
def test_a_stderr_that_cannot_be_written_changes_no_exit_code(tmp_path: Path, case: str, sink: str) -> None:
    _bad_profile(tmp_path)
    argv, code, _ = STDERR_CASES[case]
    with _sink(sink) as stderr:
        assert _module(argv, tmp_path, stderr=stderr) == code


@needs_dev_full
@pytest.mark.parametrize(
    ("stdout_sink", "stderr_sink", "code"),
    [
        ("closed", "closed", 2),
        ("/dev/full", "closed", 2),
        ("/dev/full", "/dev/full", 2),
        ("pipe closed by its reader", "/dev/full", 1),
        ("pipe closed by its reader", "closed", 1),
    ],
)
def test_a_stdout_that_cannot_be_written_keeps_its_code_when_stderr_cannot_either(
    tmp_path: Path, stdout_sink: str, stderr_sink: str, code: int
) -> None:
    """Standard output closed or full is exit 2, a closed pipe exit 1 (docs/cli.md), whether or
    not the line saying so can be written."""
    with _sink(stdout_sink) as stdout, _sink(stderr_sink) as stderr:
        assert _module(["profiles", "list"], tmp_path, stdout=stdout, stderr=stderr) == code


def test_python_dash_m_works_like_the_console_script(runner: Runner) -> None:
    script = runner("profiles", "list")
    module = subprocess.run(
        [sys.executable, "-m", "colabenv", "profiles", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (module.returncode, module.stdout, module.stderr) == (0, script.stdout, "")
    usage = subprocess.run(
        [sys.executable, "-m", "colabenv", "nope"], capture_output=True, text=True, timeout=60, check=False
    )
    assert usage.returncode == 2
    assert usage.stderr.startswith("usage: colabenv ")


# ---------------------------------------------------------------------------------------------
# Tables for a terminal, plain lines for a pipe; data never read as rich markup

MARKUP = "[/]x[bold]y"
BOX = set("│┃━─┏┗┡└┌")
requires_gpu_less_host = pytest.mark.skipif(
    Path("/proc/driver/nvidia/version").exists(),
    reason="a real NVIDIA driver answers through NVML before the stand-in nvidia-smi",
)


def _marked_host(tmp_path: Path) -> dict[str, str]:
    """A stand-in nvidia-smi naming its GPU with markup, a state directory and an index URL
    with markup in them."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        f"  --query-gpu=*) echo '{MARKUP} T4, 7.5, 15360, 15095, 550.54.15' ;;\n"
        "  *) echo 'Driver Version: 550.54.15      CUDA Version: 12.4' ;;\n"
        "esac\n"
    )
    smi.chmod(0o755)
    (tmp_path / "p.toml").write_text(
        'name = "marked"\n[frameworks]\ntorch = "==2.6.*"\n'
        f'[install]\npytorch_index_url = "https://h.example/{MARKUP}/whl"\n'
    )
    return {"PATH": f"{bin_dir}:{os.environ.get('PATH', '')}", "COLABENV_STATE_DIR": str(tmp_path / MARKUP)}


def _in_terminal(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    """Run ``argv`` with its standard output on a pseudo-terminal 250 columns wide."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 60, 250, 0, 0))
    process = subprocess.Popen(
        argv, stdout=slave, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, cwd=cwd
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert process.stderr is not None
    stderr = process.stderr.read().decode()
    code = process.wait(timeout=60)
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode(errors="replace"))
    return code, shown.replace("\r\n", "\n"), stderr


def test_resolve_into_a_pipe_is_one_plain_line_per_framework(runner: Runner) -> None:
    done = runner(
        "resolve",
        "all-three",
        "--driver",
        "580.65.06",
        "--compute-capability",
        "9.0",
        "--python",
        "3.12",
        env={"COLUMNS": "40"},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == ("all-three for driver 580.65.06, CUDA 13.0, compute capability 9.0, Python 3.12")
    assert [line.split()[0] for line in lines[1:4]] == ["torch", "tensorflow", "jax"]
    assert all(": newest release satisfying" in line for line in lines[1:4])
    assert all(line.startswith(("warning: ", "note: ")) for line in lines[4:])
    assert not BOX & set(done.stdout)


@requires_gpu_less_host
def test_detect_into_a_pipe_is_one_plain_line_per_fact(runner: Runner, tmp_path: Path) -> None:
    done = runner("detect", env=_marked_host(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:3] == ["driver: 550.54.15", "max CUDA: 12.4", "compute capabilities: 7.5"]
    assert f"state dir: {tmp_path / MARKUP}" in lines
    assert f"gpu 0: {MARKUP} T4, 7.5 (sm_75), 15360 MiB total, 15095 MiB free" in lines
    assert not BOX & set(done.stdout)


@requires_gpu_less_host
def test_detect_in_a_terminal_shows_markup_in_data_as_text(runner: Runner, tmp_path: Path) -> None:
    env = {**os.environ, **_marked_host(tmp_path), "TERM": "xterm"}
    code, shown, stderr = _in_terminal([str(runner.exe), "detect"], env, tmp_path)
    assert (code, stderr) == (0, ""), shown
    assert BOX & set(shown), "a table for a terminal"
    assert f"{MARKUP} T4" in shown
    assert str(tmp_path / MARKUP) in shown


def test_resolve_in_a_terminal_shows_markup_in_data_as_text(runner: Runner, tmp_path: Path) -> None:
    _marked_host(tmp_path)
    env = {**os.environ, "TERM": "xterm"}
    argv = [
        str(runner.exe),
        "resolve",
        str(tmp_path / "p.toml"),
        "--driver",
        "550.54.15",
        "--compute-capability",
        "7.5",
        "--python",
        "3.12",
    ]
    code, shown, stderr = _in_terminal(argv, env, tmp_path)
    assert (code, stderr) == (0, ""), shown
    assert BOX & set(shown)
    assert f"https://h.example/{MARKUP}/whl/cu124" in shown
    plain = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert f"index https://h.example/{MARKUP}/whl/cu124)" in plain.stdout
