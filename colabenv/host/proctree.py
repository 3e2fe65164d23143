"""Processes as ``/proc`` shows them: each one's owner, parent and start, a process's ancestors
and descendants, its command line to show, and the resident memory of a process group. Read
bounded; a process that ends while it is read is simply not there."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path

from colabenv.errors import printable
from colabenv.models.frozen import model

STATUS_LIMIT = 16 * 1024
STAT_LIMIT = 4096
CMDLINE_LIMIT = 4096
SHOWN_COMMAND = 80
"""The most characters of a command line :func:`command_line` shows."""
MAX_PROCESSES = 65536
"""The most ``/proc`` entries looked at when descendants are sought."""
MAX_DEPTH = 64
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@model
class ProcessFacts:
    """``uid``: the real user id; ``start_ticks``: the start in clock ticks after boot (with
    the pid, what tells one process from a later one given the same pid)."""

    pid: int
    parent: int
    uid: int
    start_ticks: int


def _read(path: Path, limit: int) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def _stat_fields(pid: int, proc: Path) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (the state first)."""
    stat = _read(proc / str(pid) / "stat", STAT_LIMIT)
    if stat is None or ")" not in stat:
        return None
    return stat[stat.rindex(")") + 2 :].split()


def process_facts(pid: int, proc: Path = Path("/proc")) -> ProcessFacts | None:
    """The owner, parent and start of ``pid``; None when it is not (or no longer) there."""
    fields = _stat_fields(pid, proc)
    status = _read(proc / str(pid) / "status", STATUS_LIMIT)
    if fields is None or status is None:
        return None
    uid: int | None = None
    for line in status.splitlines():
        if line.startswith("Uid:"):
            parts = line.split()
            uid = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() and len(parts[1]) < 12 else None
            break
    if uid is None or len(fields) < 20 or not fields[1].isdigit() or not fields[19].isdigit():
        return None
    return ProcessFacts(pid, int(fields[1]), uid, int(fields[19]))


def ancestors(pid: int, proc: Path = Path("/proc")) -> tuple[int, ...]:
    """The parent of ``pid``, its parent, ... up to (not including) pid 0, nearest first."""
    found: list[int] = []
    current = pid
    for _ in range(MAX_DEPTH):
        facts = process_facts(current, proc)
        if facts is None or facts.parent <= 0 or facts.parent in found:
            break
        found.append(facts.parent)
        current = facts.parent
    return tuple(found)


def _all_pids(proc: Path) -> list[int]:
    pids: list[int] = []
    try:
        with os.scandir(proc) as entries:
            for entry in entries:
                if entry.name.isdigit():
                    pids.append(int(entry.name))
                    if len(pids) >= MAX_PROCESSES:
                        break
    except OSError:
        return []
    return pids


def descendants(roots: Iterable[int], proc: Path = Path("/proc")) -> frozenset[int]:
    """Every process below ``roots`` (children, their children, ...), read from ``/proc``."""
    children: dict[int, list[int]] = {}
    for pid in _all_pids(proc):
        fields = _stat_fields(pid, proc)
        if fields is not None and len(fields) > 1 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(pid)
    found: set[int] = set()
    queue = list(roots)
    while queue:
        for child in children.get(queue.pop(), ()):
            if child not in found:
                found.add(child)
                queue.append(child)
    return frozenset(found)


def group_resident_bytes(group: int, proc: Path = Path("/proc")) -> int:
    """The resident memory of every process in process group ``group`` (0 where ``/proc`` cannot
    be read: the address-space bound still holds each process). What
    :func:`colabenv._util.processes.run` watches a resolver's group with."""
    return sum(_group_members(group, proc).values())


def _group_members(group: int, proc: Path) -> dict[int, int]:
    """pid: resident bytes of every process in process group ``group``."""
    members = {}
    for pid in _all_pids(proc):
        fields = _stat_fields(pid, proc)
        # after the command name: state ppid pgrp ...; rss is the 22nd field after it
        if fields is not None and len(fields) > 21 and fields[2] == str(group) and fields[21].isdigit():
            members[pid] = int(fields[21]) * _PAGE
    return members


class GroupResident:
    """:func:`group_resident_bytes`, cheap enough to call every few milliseconds: the whole of
    ``/proc`` is read at most every ``rescan_s``, and in between only the members found then
    (one small file each), so a process that grows fast is seen growing between rescans (a
    member started since is counted from the next rescan). What
    :func:`colabenv._util.processes.run` watches a resolver's group with."""

    def __init__(self, rescan_s: float = 0.2, proc: Path = Path("/proc")) -> None:
        self.rescan_s = rescan_s
        self.proc = proc
        self._members: dict[int, tuple[int, ...]] = {}
        self._next = 0.0

    def __call__(self, group: int) -> int:
        now = time.monotonic()
        if now >= self._next or group not in self._members:
            self._next = now + self.rescan_s
            members = _group_members(group, self.proc)
            self._members[group] = tuple(members)
            return sum(members.values())
        total = 0
        for pid in self._members[group]:
            text = _read(self.proc / str(pid) / "statm", 256)
            fields = text.split() if text else []
            if len(fields) > 1 and fields[1].isdigit():
                total += int(fields[1]) * _PAGE
        return total


def command_line(pid: int, proc: Path = Path("/proc")) -> tuple[str | None, str | None]:
    """(the command line of ``pid`` as one printable line of at most :data:`SHOWN_COMMAND`
    characters, its state added where it is a zombie or stopped, None; or None and why not)."""
    base = proc / str(pid)
    try:
        with open(base / "cmdline", "rb") as handle:
            raw = handle.read(CMDLINE_LIMIT)
    except FileNotFoundError:
        return None, "not visible here (another process namespace, or it ended)"
    except PermissionError:
        return None, "command line not readable"
    except OSError as exc:
        return None, f"command line not readable ({exc.strerror or exc})"
    words = [w.decode("utf-8", "replace") for w in raw.split(b"\0") if w]
    if not words:
        return None, "no command line (a kernel thread, or a zombie)"
    fields = _stat_fields(pid, proc)
    state = {"Z": "zombie", "T": "stopped"}.get(fields[0]) if fields else None
    text = printable(" ".join(words))
    if len(text) > SHOWN_COMMAND:
        text = text[: SHOWN_COMMAND - 3] + "..."
    return text + (f" ({state})" if state else ""), None
