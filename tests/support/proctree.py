"""What tests of child processes share: the live processes read from /proc, a wait for a
condition, and a child's exit with its peak RSS (its own and its reaped descendants')."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path


def live_processes() -> dict[int, tuple[int, int, str]]:
    """pid: (parent, session, command line) of every live process (zombies are dead)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if fields[0] != "Z":
            found[int(entry.name)] = (int(fields[1]), int(fields[3]), command)
    return found


def session_members(session: int, *, settle: float = 3.0) -> list[int]:
    """The live processes of ``session``, after waiting up to ``settle`` seconds for it to empty
    (a process sent SIGKILL is gone a moment later, not at once)."""
    deadline = time.monotonic() + settle
    while True:
        members = [pid for pid, (_, sid, _) in live_processes().items() if sid == session]
        if not members or time.monotonic() > deadline:
            return members
        time.sleep(0.05)


def children_running(parent: int, marker: str) -> list[int]:
    """The live children of ``parent`` whose command line holds ``marker``."""
    return [
        pid for pid, (ppid, _, command) in live_processes().items() if ppid == parent and marker in command
    ]


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not seen within {timeout:g} s")
        time.sleep(0.05)


def finish(proc: subprocess.Popen[str], timeout: float) -> tuple[int, str, str, int]:
    """Exit code, stdout, stderr, and the peak RSS in KiB of ``proc`` or of any process it
    reaped (``wait4``); killed and an AssertionError after ``timeout`` seconds."""
    texts: dict[str, str] = {}

    def drain(name: str) -> None:
        stream = getattr(proc, name)
        texts[name] = stream.read()
        stream.close()

    readers = [threading.Thread(target=drain, args=(name,), daemon=True) for name in ("stdout", "stderr")]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            os.wait4(proc.pid, 0)
            proc.returncode = -9
            raise AssertionError(f"still running after {timeout:g} s")
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join(10)
    return proc.returncode, texts.get("stdout", ""), texts.get("stderr", ""), usage.ru_maxrss
