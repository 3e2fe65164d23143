"""The OOM lines of the kernel log, where it can be read: which process the kernel killed, and
when (for ``colabenv doctor``'s silent-death findings).

``/dev/kmsg`` first (opened non-blocking, read one record a call from the oldest the kernel
keeps, at most :data:`MAX_RECORDS` of them), else ``dmesg`` (through
:mod:`colabenv._util.processes`, with a timeout and a bounded output). Either may be refused
(``kernel.dmesg_restrict`` without ``CAP_SYSLOG``, a container without ``/dev/kmsg``): the log
is then empty and says why, never an error. A record's time is microseconds since boot (the
kernel's clock, which like ``CLOCK_MONOTONIC`` does not count a suspend); the boot time
(``time.time()`` less ``CLOCK_MONOTONIC``) turns it into seconds since the epoch.

The lines (``mm/oom_kill.c``): ``Out of memory: Killed process N (comm) total-vm:...`` (the
machine's OOM killer), ``Memory cgroup out of memory: Killed process N (comm) ...`` (a cgroup's
limit) and ``oom-kill:constraint=...,task_memcg=/path,task=comm,pid=N,uid=U`` (printed before
either).
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from pathlib import Path

from colabenv._util.files import FileProblem, read_limited
from colabenv.errors import ColabenvError, printable
from colabenv.models import KernelEvent, KernelLog

KMSG = Path("/dev/kmsg")
MAX_RECORDS = 100_000
"""The most records read from ``/dev/kmsg``: the kernel's ring holds a few thousand (128 KiB to a
few MiB of text)."""
RECORD_BYTES = 16384
"""The buffer of one ``/dev/kmsg`` read: a record is at most 8 KiB (``CONSOLE_EXT_LOG_MAX``); a
smaller buffer is refused with EINVAL."""
MAX_LOG_BYTES = 16 * 1024 * 1024
"""The most text kept of the log, from ``/dev/kmsg``, a file standing for it, or ``dmesg``."""
MAX_LINE = 1024
"""The most kept of one line in a :class:`~colabenv.models.KernelEvent`."""
DMESG_TIMEOUT_S = 10.0

_KMSG_RECORD = re.compile(r"([0-9]{1,5}),([0-9]{1,20}),([0-9]{1,20})(?:,[^;]*)?;(.*)", re.ASCII)
_DMESG_LINE = re.compile(r"\[\s*([0-9]{1,12})\.([0-9]{1,9})\] ?(.*)", re.ASCII)
_KILLED = re.compile(
    r"(Memory cgroup out of memory|Out of memory): Killed process ([0-9]{1,10}) \((.{0,16})\)(?: |$)"
)
_OOM_KILL = re.compile(r"oom-kill:(.*),task=(.{0,16}),pid=([0-9]{1,10}),uid=([0-9]{1,10})")
_TASK_MEMCG = re.compile(r"(?:^|,)task_memcg=(.*?)(?:,task=|$)")
MAX_PID = 1 << 22
"""``pid_max`` is at most 2**22 (``PID_MAX_LIMIT``)."""


def boot_time() -> float:
    """When the machine booted, in seconds since the epoch, on the kernel log's clock."""
    return time.time() - time.clock_gettime(time.CLOCK_MONOTONIC)


def read_kernel_log(*, kmsg: Path = KMSG, booted: float | None = None, dmesg: bool = True) -> KernelLog:
    """The OOM lines of the kernel log, oldest first: from ``kmsg`` (``/dev/kmsg``, or a file of
    its records in tests), else from ``dmesg`` (unless ``dmesg`` is False). ``booted`` is the
    boot time (:func:`boot_time` when None)."""
    start = boot_time() if booted is None else booted
    try:
        text = _read_kmsg(kmsg)
    except _Unread as problem:
        first = f"{printable(kmsg)}: {problem}"
    else:
        return KernelLog(parse_kmsg(text, start), str(kmsg))
    if not dmesg:
        return KernelLog((), None, first)
    try:
        text = _run_dmesg()
    except _Unread as problem:
        return KernelLog((), None, f"{first}; dmesg: {problem}")
    return KernelLog(parse_dmesg(text, start), "dmesg")


def parse_kmsg(text: str, booted: float) -> tuple[KernelEvent, ...]:
    """The OOM lines of ``/dev/kmsg`` records (``prio,seq,usec,flags;message``; a line that starts
    with a space continues the record before it and is skipped)."""
    found = []
    for line in text.splitlines():
        if not line or line.startswith(" "):
            continue
        match = _KMSG_RECORD.fullmatch(line)
        if match is None:
            continue
        event = parse_line(match.group(4), booted + int(match.group(3)) / 1e6)
        if event is not None:
            found.append(event)
    return tuple(found)


def parse_dmesg(text: str, booted: float) -> tuple[KernelEvent, ...]:
    """The OOM lines of ``dmesg``'s output (``[seconds.micros] message``; a line without the
    time keeps no time)."""
    found = []
    for line in text.splitlines():
        match = _DMESG_LINE.fullmatch(line)
        if match is not None:
            seconds = int(match.group(1)) + int(match.group(2)) / 10 ** len(match.group(2))
            event = parse_line(match.group(3), booted + seconds)
        else:
            event = parse_line(line, None)
        if event is not None:
            found.append(event)
    return tuple(found)


def parse_line(message: str, when: float | None) -> KernelEvent | None:
    """The event one kernel message tells, None for any other message."""
    shown = message[:MAX_LINE]
    killed = _KILLED.match(message)
    if killed is not None:
        pid = int(killed.group(2))
        if not 0 < pid <= MAX_PID:
            return None
        kind = "cgroup-oom" if killed.group(1).startswith("Memory cgroup") else "oom"
        return KernelEvent(when, pid, killed.group(3), kind, shown)
    summary = _OOM_KILL.match(message)
    if summary is not None:
        pid = int(summary.group(3))
        if not 0 < pid <= MAX_PID:
            return None
        memcg = _TASK_MEMCG.search(summary.group(1))
        cgroup = memcg.group(1)[:MAX_LINE] if memcg is not None else None
        return KernelEvent(when, pid, summary.group(2), "oom-kill", shown, cgroup)
    return None


# ---------------------------------------------------------------------------------------------


class _Unread(Exception):
    """Why the log could not be read, in words."""


def _reason(error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        return "no such file"
    if isinstance(error, PermissionError):
        return "permission denied"
    return (error.strerror or type(error).__name__).lower()


def _read_kmsg(path: Path) -> str:
    """The records of ``/dev/kmsg`` as text (one a line), bounded; a regular file standing for
    it (a recording) is read whole, bounded."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise _Unread(_reason(error)) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode):
            try:
                return read_limited(path, MAX_LOG_BYTES).decode("utf-8", "replace")
            except FileProblem as problem:
                raise _Unread(str(problem)) from None
        if not stat.S_ISCHR(mode):
            raise _Unread("is neither the kernel's log device nor a file")
        records: list[bytes] = []
        total = 0
        while len(records) < MAX_RECORDS and total < MAX_LOG_BYTES:
            try:
                record = os.read(fd, RECORD_BYTES)
            except BlockingIOError:
                break
            except OSError as error:
                if error.errno == errno.EPIPE:
                    continue  # the record was overwritten while we read: on to the next
                if records:
                    break
                raise _Unread(_reason(error)) from None
            if not record:
                break
            records.append(record)
            total += len(record)
        return b"".join(records).decode("utf-8", "replace")
    finally:
        os.close(fd)


def _run_dmesg() -> str:
    from colabenv._util import processes

    try:
        result = processes.run(["dmesg"], timeout=DMESG_TIMEOUT_S, keep_bytes=MAX_LOG_BYTES)
    except ColabenvError as error:
        raise _Unread(printable(str(error))[:200]) from None
    if result.timed_out:
        raise _Unread(f"did not finish within {DMESG_TIMEOUT_S:g}s")
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or [""])[-1]
        raise _Unread(f"exited {result.returncode}: {printable(last)[:200]}")
    return result.stdout
