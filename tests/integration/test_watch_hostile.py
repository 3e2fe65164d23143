"""``colabenv watch`` on a hostile host, as an attacker would set it up: a forged ``watch.json``
behind a link or owned by another user, a FIFO as ``watch.log``, a working directory that was
deleted, a state directory on a full disk (a real tmpfs, filled until ENOSPC)."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from colabenv.host.sampler import process_identity
from colabenv.recorder.control import status, stop_recorder
from colabenv.recorder.loop import INFO_NAME, LOG_NAME, START_LOCK_NAME
from tests.support.fixtures import Runner, console_script

OTHER_USER = 65534
"""``nobody``: the owner of a forged file (the tests run as root, who may give it away)."""


@pytest.fixture
def state() -> Iterator[Path]:
    """The test's state directory; whatever recorder runs there is ended afterwards."""
    path = Path(os.environ["COLABENV_STATE_DIR"])
    yield path
    if status(path).running:
        stop_recorder(path, timeout=5)


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def started_pid(done: subprocess.CompletedProcess[str]) -> int:
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("colabenv watch: recorder started: pid "), done.stdout
    return int(done.stdout.split()[-1])


@pytest.fixture
def decoy() -> Iterator[subprocess.Popen[bytes]]:
    """A live process whose command line names the recorder's module: what a forged
    ``watch.json`` would have ``stop`` signal."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "colabenv.recorder"])
    wait_for(lambda: "colabenv.recorder" in (process_identity(proc.pid) or (0, ""))[1])
    yield proc
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("forgery", ["link", "other-user"])
def test_a_forged_watch_json_is_never_believed(
    runner: Runner, state: Path, tmp_path: Path, decoy: subprocess.Popen[bytes], forgery: str
) -> None:
    """A running recorder, its ``watch.json`` replaced by a link to a forged one (or a forged
    file of another user) naming a decoy: ``status`` does not report the decoy, ``stop`` does not
    signal it (nor says "stopped"), and the real recorder goes on."""
    real = started_pid(runner("watch", "start", "--interval", "0.5"))
    info = state / INFO_NAME
    facts = json.loads(info.read_text())
    identity = process_identity(decoy.pid)
    assert identity is not None
    forged = dict(facts, pid=decoy.pid, start_ticks=identity[0], ring="/decoy/watch.ring")
    if forgery == "link":
        target = tmp_path / "forged.json"
        target.write_text(json.dumps(forged))
        os.symlink(target, state / "forged-link")
        os.replace(state / "forged-link", info)
    else:
        (state / "forged.tmp").write_text(json.dumps(forged))
        os.chown(state / "forged.tmp", OTHER_USER, OTHER_USER)
        os.replace(state / "forged.tmp", info)
    try:
        shown = json.loads(runner("watch", "status", "--json").stdout)
        assert shown["running"] is True and shown["pid"] is None, shown
        stopped = runner("watch", "stop")
        assert stopped.returncode == 0 and stopped.stdout.endswith("; nothing stopped\n"), stopped.stdout
        time.sleep(0.3)
        assert decoy.poll() is None, "the decoy was signalled"
        assert process_identity(real) is not None, "the real recorder was stopped"
    finally:
        info.unlink()
        info.write_text(json.dumps(facts))
        os.chmod(info, 0o600)
    assert status(state).pid == real


def test_a_fifo_as_watch_log_is_one_line_at_once(runner: Runner, state: Path) -> None:
    """A FIFO where ``watch.log`` goes: ``watch start`` refuses it in one line naming the file
    (exit 2), at once, holding no lock after, starting nothing."""
    state.mkdir(parents=True, exist_ok=True)
    os.mkfifo(state / LOG_NAME)
    began = time.monotonic()
    try:
        done = runner("watch", "start", timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("watch start hung on a FIFO as watch.log")
    took = time.monotonic() - began
    assert done.returncode == 2 and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr == f"colabenv: watch start: {state / LOG_NAME}: is a FIFO, not a regular file\n"
    assert took < 5, f"took {took:.1f} s"
    assert not status(state).running
    fd = os.open(state / START_LOCK_NAME, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def test_a_linked_watch_log_is_refused_and_not_written(runner: Runner, state: Path, tmp_path: Path) -> None:
    """``watch.log`` a link to another file: refused, the file it points at left as it was."""
    state.mkdir(parents=True, exist_ok=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    os.symlink(victim, state / LOG_NAME)
    done = runner("watch", "start", timeout=20)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"colabenv: watch start: {state / LOG_NAME}: is a symbolic link")
    assert victim.read_text() == "keep me\n"
    assert not status(state).running


def test_a_deleted_working_directory_is_no_traceback(state: Path, tmp_path: Path) -> None:
    """``colabenv watch start`` from a directory that was removed: it starts (the working
    directory is not among the watched paths: a note says so); ``colabenv.watch()`` too."""
    gone = tmp_path / "gone"
    gone.mkdir()
    done = subprocess.run(
        [
            "sh",
            "-c",
            'cd "$1" && rmdir "$1" && exec "$2" watch start --interval 0.5',
            "sh",
            gone,
            console_script(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    pid = started_pid(done)
    assert done.stderr == (
        "colabenv: note: the working directory was deleted: the recorder watches /tmp and the "
        "state directory only\n"
    ) or os.path.isdir("/content")
    assert status(state).pid == pid
    stop_recorder(state)
    wait_for(lambda: not status(state).running)
    gone.mkdir()
    code = (
        "import os, sys, colabenv\n"
        "os.chdir(sys.argv[1]); os.rmdir(sys.argv[1])\n"
        "found = colabenv.watch(interval_s=0.5)\n"
        "print(found.pid, flush=True)\n"
        "colabenv.watch(stop=True)\n"
    )
    api = subprocess.run(
        [sys.executable, "-c", code, str(gone)], capture_output=True, text=True, timeout=60, check=False
    )
    assert api.returncode == 0 and "Traceback" not in api.stderr, api.stderr
    assert int(api.stdout) > 0


@pytest.fixture
def full_state(tmp_path: Path) -> Iterator[Path]:
    """A state directory on a real 64 KiB tmpfs, filled until the kernel says ENOSPC."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs takes root")
    folder = tmp_path / "full"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        with open(folder / "fill", "wb", buffering=0) as handle:
            try:
                while True:
                    handle.write(b"\0" * 4096)
            except OSError as error:
                assert error.errno == errno.ENOSPC
        yield folder
    finally:
        if status(folder).running:
            stop_recorder(folder, timeout=5)
        subprocess.run(["umount", "-l", str(folder)], timeout=30, check=False)


def test_a_full_disk_fails_fast_and_names_the_disk(runner: Runner, full_state: Path) -> None:
    began = time.monotonic()
    done = runner("watch", "start", env={"COLABENV_STATE_DIR": str(full_state)}, timeout=60)
    took = time.monotonic() - began
    print(f"watch start on a full disk: {took:.2f} s")
    assert done.returncode == 2 and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"{full_state}: the state directory's filesystem is full (ENOSPC)" in done.stderr, done.stderr
    assert took < 4.0, f"took {took:.1f} s"
    assert not status(full_state).running


def test_a_relative_state_directory_and_a_deleted_working_directory_is_one_line(tmp_path: Path) -> None:
    """The state directory rule takes a relative ``COLABENV_STATE_DIR`` from the working
    directory; with that directory deleted it was a traceback (``Path.cwd()``)."""
    gone = tmp_path / "gone"
    gone.mkdir()
    env = {**os.environ, "COLABENV_STATE_DIR": "state"}
    done = subprocess.run(
        ["sh", "-c", 'cd "$1" && rmdir "$1" && exec "$2" watch status', "sh", gone, console_script()],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr == (
        "colabenv: COLABENV_STATE_DIR=state is relative and the working directory was deleted;"
        " give an absolute path or start from a directory that exists\n"
    )
