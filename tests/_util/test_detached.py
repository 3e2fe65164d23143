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
    code = processes.start_detached([sys.executable, "-c", DETACHING, "30"], timeout=10, log=log)
    assert code == 0
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
    assert processes.start_detached([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5) == -1
    assert time.monotonic() - started < 5


def test_a_program_that_cannot_start_is_a_process_error(tmp_path: Path) -> None:
    with pytest.raises(ProcessError, match="cannot start"):
        processes.start_detached([str(tmp_path / "missing")], timeout=1)


def test_a_log_that_is_a_link_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("kept\n")
    log = tmp_path / "log"
    log.symlink_to(target)
    with pytest.raises(ProcessError, match="cannot open its log"):
        processes.start_detached([sys.executable, "-c", "pass"], timeout=5, log=log)
    assert target.read_text() == "kept\n"
