"""``processes.start_detached``: a launcher that exits at once, a program that goes on."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from colabenv._util import processes
from colabenv.errors import ProcessError

DETACHING = """
import os, sys, time
from colabenv._util import processes
processes.detach()
print(os.getpid(), os.getsid(0), flush=True)
time.sleep(float(sys.argv[1]))
"""


def test_the_program_goes_on_after_its_launcher_exits(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text("old lines\n")
    fd = os.open(log, os.O_WRONLY | os.O_TRUNC)
    try:
        started = processes.start_detached([sys.executable, "-c", DETACHING, "30"], timeout=10, log=fd)
    finally:
        os.close(fd)
    assert started == processes.Detached(0)
    deadline = time.monotonic() + 10
    while not log.read_text().strip() and time.monotonic() < deadline:
        time.sleep(0.02)
    pid, session = (int(word) for word in log.read_text().split())
    try:
        assert "old lines" not in log.read_text()
        assert session != os.getsid(0) and pid != session, "a new session, and no leader of it"
        assert os.readlink(f"/proc/{pid}/fd/0") == "/dev/null"
        assert Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1] != str(os.getpid())
    finally:
        os.kill(pid, 9)


def test_a_launcher_that_does_not_exit_in_time_is_killed() -> None:
    started = time.monotonic()
    found = processes.start_detached([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert found == processes.Detached(-1)
    assert time.monotonic() - started < 5


def test_a_program_that_cannot_start_is_a_process_error(tmp_path: Path) -> None:
    with pytest.raises(ProcessError, match="cannot start"):
        processes.start_detached([str(tmp_path / "missing")], timeout=1)


REPORTING = """
import os, sys, time
from colabenv._util import processes
processes.detach()
fd = int(sys.argv[-1])
if sys.argv[1] == "ready":
    os.write(fd, b"ready\\n")
    os.close(fd)
    time.sleep(3)
elif sys.argv[1] == "why":
    os.write(fd, b"the disk is full\\n")
"""


@pytest.mark.parametrize(("word", "report"), [("ready", "ready"), ("why", "the disk is full"), ("die", "")])
def test_the_ready_pipe_brings_the_programs_word_or_its_death_at_once(word: str, report: str) -> None:
    """The line the detached program writes on its ready pipe, at once; ``""`` when it died
    without one (its pipe closed), never a wait for the timeout."""
    began = time.monotonic()
    found = processes.start_detached(
        [sys.executable, "-c", REPORTING, word], timeout=30, ready_flag="--ready-fd"
    )
    assert found == processes.Detached(0, report)
    assert time.monotonic() - began < 10


def test_a_program_that_says_nothing_in_time_is_none() -> None:
    silent = "from colabenv._util import processes; import time; processes.detach(); time.sleep(3)"
    found = processes.start_detached([sys.executable, "-c", silent], timeout=1.5, ready_flag="--ready-fd")
    assert found == processes.Detached(0, None)
