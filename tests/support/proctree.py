"""What tests of child processes share: the live processes read from /proc, a wait for a
condition, a child's exit with its peak RSS (its own and its reaped descendants'), and the
peaks of a whole tree of processes."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
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


PEAK_LAUNCHER = """\
import os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""
"""Runs a command and writes the peak RSS (KiB) of it and of what it reaped. A process started
straight from pytest would count pytest's own RSS too: the kernel keeps the high-water mark of
the memory a process had before its exec, and a child forked (or vforked) from a big pytest had
pytest's (a doctor of 77 MiB measured 313 MiB late in a full run)."""


def measured(argv: Sequence[str | os.PathLike[str]], peak_file: Path) -> list[str]:
    """``argv`` under :data:`PEAK_LAUNCHER`, which writes its peak RSS to ``peak_file``
    (:func:`finish` reads it)."""
    import sys

    return [sys.executable, "-c", PEAK_LAUNCHER, str(peak_file), *map(str, argv)]


def finish(
    proc: subprocess.Popen[str], timeout: float, peak_file: Path | None = None
) -> tuple[int, str, str, int]:
    """Exit code, stdout, stderr, and the peak RSS in KiB of ``proc`` or of any process it
    reaped (``wait4``; with ``peak_file``, what :data:`PEAK_LAUNCHER` wrote there: the peak of
    the command it ran, free of pytest's); killed and an AssertionError after ``timeout``
    seconds."""
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
    peak = int(peak_file.read_text()) if peak_file is not None else usage.ru_maxrss
    return proc.returncode, texts.get("stdout", ""), texts.get("stderr", ""), peak


class TreePeaks:
    """The resident memory of ``root`` and of every descendant of it, read from /proc every
    10 ms while it runs: each one's high-water mark (``VmHWM``), and the most they held at one
    moment (the largest sum of their ``VmRSS`` over the samples). ``skip_root``: ``root`` is a
    launcher (:func:`measured`), not counted."""

    def __init__(self, root: int, *, skip_root: bool = False) -> None:
        self.root = root
        self.skip_root = skip_root
        self.peaks: dict[int, tuple[str, int]] = {}
        self.together = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            processes = live_processes()
            family = {self.root}
            grew = True
            while grew:
                grew = False
                for pid, (parent, _, _) in processes.items():
                    if parent in family and pid not in family:
                        family.add(pid)
                        grew = True
            if self.skip_root:
                family.discard(self.root)
            now = 0
            for pid in family:
                name, kib, resident = _high_water(pid)
                now += resident
                if kib > self.peaks.get(pid, ("", 0))[1]:
                    self.peaks[pid] = (name, kib)
            self.together = max(self.together, now)
            self._stop.wait(0.01)

    def stop(self, reaped_kib: int = 0) -> int:
        """Stop sampling; the sum of every process's peak in KiB, the largest of them raised to
        ``reaped_kib`` (``wait4``'s peak of the largest process, which catches what happened
        after the last sample): an upper bound on what they held at any one moment."""
        self._stop.set()
        self._thread.join(10)
        kibs = sorted(kib for _, kib in self.peaks.values())
        if not kibs:
            return reaped_kib
        return sum(kibs[:-1]) + max(kibs[-1], reaped_kib)

    def at_once(self, reaped_kib: int = 0) -> int:
        """After :meth:`stop`: the most the processes held at one moment (the largest sampled
        sum), plus what the largest grew past its last sample (``reaped_kib``, ``wait4``'s peak
        of it, over its sampled high-water mark)."""
        largest = max((kib for _, kib in self.peaks.values()), default=0)
        return self.together + max(0, reaped_kib - largest)

    def shown(self) -> str:
        return ", ".join(f"{name} {kib >> 10} MiB" for name, kib in self.peaks.values() if kib >= 4096)


def _high_water(pid: int) -> tuple[str, int, int]:
    """(name, VmHWM and VmRSS in KiB) of ``pid``; ("", 0, 0) where it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as handle:
            fields = dict(line.split(":", 1) for line in handle if ":" in line)
    except OSError:
        return "", 0, 0
    kib = fields.get("VmHWM", "0 kB").split()[0]
    rss = fields.get("VmRSS", "0 kB").split()[0]
    return fields.get("Name", "").strip(), int(kib) if kib.isdigit() else 0, int(rss) if rss.isdigit() else 0
