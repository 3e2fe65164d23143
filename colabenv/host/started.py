"""When this process, or the IPython kernel it runs in or under, started: read from ``/proc``."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

KERNEL_LAUNCHERS = ("ipykernel_launcher", "colab_kernel_launcher", "ipykernel")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _stat_fields(proc: Path, pid: int) -> list[str] | None:
    text = _read(proc / str(pid) / "stat")
    if text is None or ")" not in text:
        return None
    return text[text.rindex(")") + 2 :].split()


def process_started_at(pid: int, proc: Path = Path("/proc"), now: float | None = None) -> float | None:
    """Wall-clock start of ``pid``: /proc/PID/stat starttime against /proc/uptime (or btime)."""
    fields = _stat_fields(proc, pid)
    if fields is None or len(fields) < 20:
        return None
    try:
        ticks = int(fields[19])
        hertz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    except (ValueError, OSError):
        return None
    since_boot = ticks / hertz
    uptime = _read(proc / "uptime")
    if uptime:
        try:
            return (time.time() if now is None else now) - (float(uptime.split()[0]) - since_boot)
        except (ValueError, IndexError):
            pass
    stat = _read(proc / "stat") or ""
    match = re.search(r"^btime\s+(\d+)", stat, re.MULTILINE)
    return int(match.group(1)) + since_boot if match else None


def _parent(proc: Path, pid: int) -> int | None:
    fields = _stat_fields(proc, pid)
    try:
        return int(fields[1]) if fields and len(fields) > 1 else None
    except ValueError:
        return None


def _is_kernel(proc: Path, pid: int) -> bool:
    raw = proc / str(pid) / "cmdline"
    try:
        args = raw.read_bytes().split(b"\0")
    except OSError:
        return False
    text = [a.decode("utf-8", "replace") for a in args]
    return any(any(k in a for k in KERNEL_LAUNCHERS) for a in text)


def restarted_process(proc: Path = Path("/proc"), pid: int | None = None) -> tuple[int, str]:
    """The IPython kernel this runs in or under (``!colabenv verify``), else this interpreter."""
    start = os.getpid() if pid is None else pid
    current: int | None = start
    for _ in range(16):
        if current is None or current <= 1:
            break
        if _is_kernel(proc, current):
            return current, "kernel"
        current = _parent(proc, current)
    return start, "interpreter"
