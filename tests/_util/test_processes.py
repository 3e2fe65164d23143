"""colabenv._util.processes: bounded output, bounded memory, and no child left behind when the
run is interrupted or its timeout passes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from colabenv._util import processes
from colabenv.errors import ProcessError
from colabenv.host.proctree import group_resident_bytes
from tests.support.proctree import session_members

MIB = 1 << 20


def _family(pid_file: Path) -> list[str]:
    """Starts a child (a python) that starts a grandchild, both sleeping; writes the child's pid."""
    code = (
        "import os, subprocess, sys, time\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "time.sleep(60)\n"
    )
    return [sys.executable, "-c", code]


def _wait_for(path: Path) -> int:
    for _ in range(200):
        if path.exists() and path.read_text():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError(f"{path} never written")


def test_a_child_that_prints_without_end_costs_only_the_tail() -> None:
    """100 MiB on stdout, one 30 MiB line on stderr: the last MiB of each is kept, and what the
    run allocated stays far below what the child printed."""
    code = (
        "import sys\n"
        "block = b'x' * (1 << 20)\n"
        "for _ in range(100): sys.stdout.buffer.write(block)\n"
        "sys.stdout.buffer.write(b'END-OUT')\n"
        "sys.stderr.buffer.write(b'y' * (30 << 20) + b'END-ERR')\n"
    )
    tracemalloc.start()
    try:
        done = processes.run([sys.executable, "-c", code], timeout=60)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert done.ok
    assert done.stdout.endswith("END-OUT") and done.stderr.endswith("END-ERR")
    assert len(done.stdout) == MIB and len(done.stderr) == MIB
    assert done.stdout_dropped == 100 * MIB + 7 - MIB
    assert done.stderr_dropped == 30 * MIB + 7 - MIB
    assert peak < 12 * MIB, f"peak {peak / MIB:.1f} MiB"


def test_keep_bytes_bounds_the_tail_and_input_still_goes_in() -> None:
    code = "import sys; data = sys.stdin.read(); print(len(data)); print('z' * 5000)"
    done = processes.run([sys.executable, "-c", code], timeout=30, input_text="a" * 300_000, keep_bytes=100)
    assert done.ok
    assert done.stdout == "z" * 99 + "\n"
    assert done.stdout_dropped == len("300000\n") + 5001 - 100


def test_memory_bound_holds_the_child_and_what_it_starts() -> None:
    grab = "b = bytearray(1 << 30); print('grabbed')"
    code = (
        "import subprocess, sys\n"
        f"inner = subprocess.run([sys.executable, '-c', {grab!r}], capture_output=True, text=True)\n"
        "print('inner', inner.returncode, 'MemoryError' in inner.stderr)\n"
        f"{grab}\n"
    )
    done = processes.run([sys.executable, "-c", code], timeout=60, memory_bytes=512 * MIB)
    assert not done.ok
    assert "inner 1 True" in done.stdout
    assert "grabbed" not in done.stdout
    assert "MemoryError" in done.stderr
    assert processes.run([sys.executable, "-c", grab], timeout=60).stdout == "grabbed\n"


_HOLD = (
    "import time\n"
    "b = bytearray({mib} << 20)\n"
    "b[::4096] = b'x' * len(b[::4096])\n"
    "print('held', flush=True)\n"
    "time.sleep(60)\n"
)
"""A child that makes ``mib`` MiB resident, says so and waits."""


def test_the_memory_bound_holds_a_group_of_children_each_under_it_together() -> None:
    # four grandchildren of 150 MiB each: every one is under the 400 MiB address-space bound,
    # together they are past it; the watchdog ends the group instead of letting it grow
    hold = _HOLD.format(mib=150)
    code = (
        "import subprocess, sys, time\n"
        f"kids = [subprocess.Popen([sys.executable, '-c', {hold!r}]) for _ in range(4)]\n"
        "time.sleep(60)\n"
    )
    start = time.monotonic()
    done = processes.run(
        [sys.executable, "-c", code], timeout=60, memory_bytes=400 * MIB, resident=group_resident_bytes
    )
    assert time.monotonic() - start < 30  # the children sleep 60 s: they were ended, not waited for
    assert done.memory_exceeded
    assert not done.ok and not done.timed_out


def test_group_resident_bytes_counts_the_group_and_nothing_else() -> None:
    hold = _HOLD.format(mib=64)
    code = (
        "import os, subprocess, sys, time\n"
        f"kid = subprocess.Popen([sys.executable, '-c', {hold!r}], stdout=subprocess.PIPE)\n"
        "kid.stdout.readline()\n"
        "print(os.getpgrp(), flush=True)\n"
        "time.sleep(30)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stdout is not None
        group = int(proc.stdout.readline())
        assert group == proc.pid
        held = group_resident_bytes(group)
        assert 64 * MIB < held < 256 * MIB
        assert group_resident_bytes(2**22 + 12345) == 0
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_a_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    started = time.monotonic()
    done = processes.run(_family(pid_file), timeout=1.5)
    assert done.timed_out and time.monotonic() - started < 10
    assert session_members(_wait_for(pid_file)) == []


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
def test_an_interrupted_run_kills_its_child_and_grandchild_at_once(tmp_path: Path, how: str) -> None:
    """The interruption the command sees (SIGINT, or SIGTERM turned into one) ends the run at
    once, and nothing of the child's session is left."""
    pid_file = tmp_path / "pid"
    main = threading.get_ident()

    def interrupt() -> None:
        _wait_for(pid_file)
        time.sleep(0.3)
        signal.pthread_kill(main, signal.SIGINT if how == "SIGINT" else signal.SIGTERM)

    def as_interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, as_interrupt)
    started = time.monotonic()
    try:
        threading.Thread(target=interrupt, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            processes.run(_family(pid_file), timeout=60)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert time.monotonic() - started < 10
    child = _wait_for(pid_file)
    assert session_members(child) == []


def test_ended_on_interrupt_ends_the_children_of_worker_threads(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    results: list[processes.Completed] = []
    worker = threading.Thread(target=lambda: results.append(processes.run(_family(pid_file), timeout=60)))
    with processes.ended_on_interrupt() as end:
        worker.start()
        child = _wait_for(pid_file)
        started = time.monotonic()
        end()
        worker.join(10)
        assert not worker.is_alive() and time.monotonic() - started < 5
        assert results[0].returncode == -signal.SIGKILL
        assert session_members(child) == []
        with pytest.raises(ProcessError, match="interrupted"):
            processes.run(["true"], timeout=5)
    assert processes.run(["true"], timeout=5).ok


def test_an_interrupted_stream_kills_its_child_and_grandchild(tmp_path: Path) -> None:
    """``stream`` (the bootstrap script in a notebook cell): a KeyboardInterrupt raised while
    lines come in kills the child's group instead of leaving it running."""
    pid_file = tmp_path / "pid"
    seen: list[str] = []

    def on_line(line: str) -> None:
        seen.append(line)
        if len(seen) == 3:
            raise KeyboardInterrupt

    code = (
        "import os, subprocess, sys, time\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "for n in range(600): print(n, flush=True); time.sleep(0.1)\n"
    )
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        processes.stream([sys.executable, "-c", code], timeout=60, on_line=on_line)
    assert time.monotonic() - started < 10
    assert seen == ["0", "1", "2"]
    assert session_members(_wait_for(pid_file)) == []


def _keeps_the_pipes(seconds: int) -> list[str]:
    """A child that starts a helper which keeps its stdout and stderr, says the helper's pid,
    and exits (what a module imported in doctor's child may do)."""
    return ["sh", "-c", f"sleep {seconds} & echo $!; echo bye >&2"]


def test_a_helper_that_keeps_the_pipes_does_not_hold_the_run() -> None:
    """The run ends soon after its child does, not when a helper that kept the pipes does
    (issue 35: a 40 s helper held ``doctor`` 40 s); the output written before is kept."""
    started = time.monotonic()
    done = processes.run(_keeps_the_pipes(40), timeout=60)
    took = time.monotonic() - started
    helper = int(done.stdout.split()[0])
    try:
        assert took < 5, took
        assert (done.returncode, done.timed_out, done.stderr) == (0, False, "bye\n")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(helper, signal.SIGKILL)


def test_a_streamed_run_ends_with_its_child_too() -> None:
    lines: list[str] = []
    started = time.monotonic()
    status = processes.stream(_keeps_the_pipes(40), timeout=60, on_line=lines.append)
    took = time.monotonic() - started
    try:
        assert took < 5, took
        assert status == 0 and "bye" in lines
    finally:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(lines[0]), signal.SIGKILL)


def test_a_stream_hands_on_lines_as_a_text_stream_would() -> None:
    """``\\r\\n`` and a bare ``\\r`` (a progress bar) end a line, as in text mode; bad UTF-8 is
    replaced, and the last line needs no newline."""
    lines: list[str] = []
    code = (
        "import sys; sys.stdout.buffer.write(b'a\\r\\nb\\rc\\n\\xffd\\r'); sys.stdout.flush();"
        " print('end', end='')"
    )
    assert processes.stream([sys.executable, "-c", code], timeout=30, on_line=lines.append) == 0
    assert lines == ["a", "b", "c", "\ufffdd", "end"]
