"""``colabenv watch``: a real recorder, detached, in the state directory of the test."""

from __future__ import annotations

import fcntl
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from colabenv.host.sampler import process_identity
from colabenv.models import WatchSettings
from colabenv.recorder.control import start, start_for_profile, status, stop_recorder
from colabenv.recorder.loop import INFO_NAME, LOCK_NAME
from colabenv.recorder.ring import PREVIOUS_RING_NAME, RING_NAME, read_ring, ring_paths
from tests.support.fixtures import Runner


@pytest.fixture
def state() -> Iterator[Path]:
    """The test's state directory; whatever recorder runs there is ended afterwards."""
    path = Path(os.environ["COLABENV_STATE_DIR"])
    yield path
    found = status(path)
    if found.running:
        stop_recorder(path, timeout=5)


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def gone(pid: int) -> bool:
    return process_identity(pid) is None


def started_pid(done: subprocess.CompletedProcess[str]) -> int:
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("colabenv watch: recorder started: pid "), done.stdout
    assert done.stdout.count("\n") == 1
    return int(done.stdout.split()[-1])


def test_start_prints_one_line_and_a_second_start_names_the_first(runner: Runner, state: Path) -> None:
    pid = started_pid(runner("watch", "start", "--interval", "0.5"))
    identity = process_identity(pid)
    assert identity is not None and "-m colabenv.recorder" in identity[1]
    assert os.getsid(pid) != os.getsid(0), "its own session"
    assert os.readlink(f"/proc/{pid}/fd/0") == "/dev/null"
    assert not os.isatty(1) or os.readlink(f"/proc/{pid}/fd/1") != os.readlink("/proc/self/fd/1")
    again = runner("watch", "start")
    assert again.returncode == 0
    assert again.stdout == f"colabenv watch: recorder already running: pid {pid}\n"
    shown = json.loads(runner("watch", "status", "--json").stdout)
    assert shown["running"] is True and shown["pid"] == pid and shown["interval_s"] == 0.5
    assert shown["max_hours"] == 24.0 and shown["ring"] == str(state / RING_NAME)
    assert abs(shown["since"] - time.time()) < 30
    plain = runner("watch", "status").stdout
    assert plain.startswith(f"colabenv watch: recorder running: pid {pid}, since ")
    stopped = runner("watch", "stop")
    assert stopped.stdout == f"colabenv watch: recorder stopped: pid {pid}\n"
    wait_for(lambda: gone(pid))
    assert json.loads(runner("watch", "status", "--json").stdout) == {"running": False}
    assert runner("watch", "stop").stdout == "colabenv watch: no recorder running\n"
    assert not (state / INFO_NAME).exists()


KERNEL = """
import sys, time
import colabenv
found = colabenv.watch(interval_s=0.5)
print(found.pid, flush=True)
time.sleep(120)
"""


def test_the_recorder_outlives_its_kernel_killed(state: Path) -> None:
    """A kernel stand-in starts the recorder from Python and is SIGKILLed: the recorder goes on
    recording, the dead kernel in the samples before its death and gone after it."""
    kernel = subprocess.Popen([sys.executable, "-c", KERNEL], stdout=subprocess.PIPE, text=True)
    assert kernel.stdout is not None
    pid = int(kernel.stdout.readline())
    time.sleep(1.2)
    kernel.kill()
    kernel.wait()
    killed = time.time()
    time.sleep(1.5)
    found = status(state)
    assert found.running and found.pid == pid and found.kernel_pid == kernel.pid
    contents = read_ring(state / RING_NAME)
    assert contents.header.kernel_pid == kernel.pid and contents.header.recorder_pid == pid
    before = [s for s in contents.samples if s.time < killed - 0.1]
    after = [s for s in contents.samples if s.time > killed + 0.1]
    assert before and after
    assert any(p.pid == kernel.pid for p in before[-1].processes)
    assert not any(p.pid == kernel.pid for p in after[-1].processes)
    assert contents.skipped == ()


def test_a_start_from_a_new_kernel_replaces_a_recorder_whose_kernel_is_gone(state: Path) -> None:
    """After the kernel's death (an OOM kill, a restart), the restarted kernel's start gets a
    recorder of its own; what the first recorded, the death included, is the previous ring."""
    kernel = subprocess.Popen([sys.executable, "-c", KERNEL], stdout=subprocess.PIPE, text=True)
    assert kernel.stdout is not None
    first = int(kernel.stdout.readline())
    assert start(state, kernel_pid=os.getpid())[0].pid == first, "its kernel lives: named, kept"
    kernel.kill()
    kernel.wait()
    found, started = start(state, kernel_pid=os.getpid(), interval_s=0.5)
    assert started and found.pid != first and found.kernel_pid == os.getpid()
    wait_for(lambda: gone(first))
    previous = read_ring(state / PREVIOUS_RING_NAME)
    assert previous.header.recorder_pid == first and previous.header.kernel_pid == kernel.pid
    assert read_ring(state / RING_NAME).header.kernel_pid == os.getpid()
    again, started = start(state, kernel_pid=12345678)
    assert again == found and not started, "a recorder whose kernel lives is kept"


def test_sigterm_ends_it_cleanly(runner: Runner, state: Path) -> None:
    pid = started_pid(runner("watch", "start", "--interval", "0.5"))
    time.sleep(1.2)
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not status(state).running)
    assert not (state / INFO_NAME).exists()
    contents = read_ring(state / RING_NAME)
    assert len(contents.samples) >= 2 and contents.skipped == () and contents.notes == ()


def test_it_stops_by_itself_after_max_hours(runner: Runner, state: Path) -> None:
    pid = started_pid(runner("watch", "start", "--interval", "0.5", "--max-hours", "0.0005"))
    wait_for(lambda: not status(state).running, timeout=15)
    wait_for(lambda: gone(pid))
    samples = read_ring(state / RING_NAME).samples
    assert 2 <= len(samples) <= 6
    assert samples[-1].time - samples[0].time <= 2.5


def test_a_recorder_sigkilled_at_random_moments_leaves_a_readable_ring(runner: Runner, state: Path) -> None:
    """Each start moves the last ring aside: what the killed recorder wrote stays readable."""
    rng = random.Random(7)
    for _ in range(3):
        pid = started_pid(runner("watch", "start", "--interval", "0.5"))
        time.sleep(rng.uniform(0.1, 1.0))
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not status(state).running)
        contents = read_ring(state / RING_NAME)
        assert contents.header.recorder_pid == pid
        assert len(contents.samples) >= 1 and sum(n for _, n in contents.skipped) <= 1
    assert read_ring(state / PREVIOUS_RING_NAME).header.recorder_pid != pid
    assert ring_paths(state) == (state / RING_NAME, state / PREVIOUS_RING_NAME)


def test_a_recycled_pid_is_never_taken_for_the_recorder(runner: Runner, state: Path) -> None:
    """watch.json naming a live process that is no recorder (this test): without the lock held
    nothing runs; with the lock held by someone, the pid is not believed and nothing is killed."""
    state.mkdir(parents=True, exist_ok=True)
    facts = {"pid": os.getpid(), "start_ticks": 1, "since": time.time(), "interval_s": 2.0, "token": "x"}
    (state / INFO_NAME).write_text(json.dumps(facts))
    assert json.loads(runner("watch", "status", "--json").stdout) == {"running": False}
    fd = os.open(state / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        found = status(state)
        assert found.running and found.pid is None
        stopped = runner("watch", "stop")
        assert stopped.returncode == 0 and stopped.stdout.endswith("; nothing stopped\n")
        assert "which is not known" in runner("watch", "status").stdout
        assert process_identity(os.getpid()) is not None
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--interval", "0.1"], "--interval: expected seconds from 0.5 to 600"),
        (["--interval", "soon"], "--interval: 'soon' is not a number"),
        (["--max-hours", "0"], "--max-hours: expected more than 0"),
        (["--path", "/no/such/folder"], "--path: /no/such/folder is not a directory"),
    ],
)
def test_bad_values_are_exit_2_with_one_line(
    runner: Runner, state: Path, argv: list[str], named: str
) -> None:
    done = runner("watch", "start", *argv)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"colabenv: watch start: {named}" + done.stderr.split(named, 1)[1]
    assert done.stderr.count("\n") == 1
    assert not status(state).running


def test_a_profile_with_bad_watch_values_is_exit_2_naming_the_key(runner: Runner, tmp_path: Path) -> None:
    profile = tmp_path / "team.toml"
    profile.write_text(
        'name = "team"\n[watch]\nenabled = true\ninterval_s = 0.1\nmax_hours = 1000\nevery = 3\n'
    )
    done = runner("profiles", "check", str(profile))
    assert done.returncode == 2 and done.stdout == ""
    assert "team.toml: watch.interval_s: must be 0.5 or more" in done.stderr
    assert "team.toml: watch.max_hours: 1000 is too large (at most 168 h, a week)" in done.stderr
    assert (
        "team.toml: watch.every: unknown key (expected one of: enabled, interval_s, max_hours)" in done.stderr
    )


def test_a_profile_that_enables_watch_starts_the_recorder(state: Path) -> None:
    assert start_for_profile(WatchSettings()) is None
    assert not status(state).running
    found = start_for_profile(WatchSettings(enabled=True, interval_s=1.0, max_hours=1.0))
    assert found is not None and found.running and found.interval_s == 1.0 and found.max_hours == 1.0
    again = start_for_profile(WatchSettings(enabled=True))
    assert again == found


def test_the_python_api_starts_and_stops_the_recorder(state: Path) -> None:
    import colabenv

    found = colabenv.watch(interval_s=1.0)
    assert found.running and found.pid is not None and found.kernel_pid == os.getpid()
    assert colabenv.watch() == found
    stopped = colabenv.watch(stop=True)
    assert stopped == found
    wait_for(lambda: not status(state).running)
    assert colabenv.watch(stop=True).running is False
