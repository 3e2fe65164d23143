"""Leftovers holding a GPU: each process NVML says holds GPU memory that is neither the current
kernel (the process doctor runs under, or the IPython kernel that started it) nor one of its
children, named with its command line, age and memory (``gpu-leftover``): the guide's "zombie
process pinning VRAM", and the errors a second run meets.

Who holds each GPU is :func:`colabenv.host.gpu_holders.gpu_holders` (NVML, bounded in
time). ``--kill-leftovers`` ends the leftovers of this user after naming them: SIGTERM, then
SIGKILL after :data:`GRACE_S`; never another user's, never doctor itself, the kernel or their
ancestors. A process is signalled through a pidfd opened after its start time was checked
again, so a pid taken over by a new process in between is never signalled."""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from colabenv.errors import printable
from colabenv.host.gpu_holders import GpuHolders
from colabenv.host.proctree import ProcessFacts, ancestors, descendants, process_facts
from colabenv.host.started import process_started_at, restarted_process
from colabenv.models import Evidence, Finding
from colabenv.models.frozen import model

GRACE_S = 5.0
"""How long a leftover has after SIGTERM (to free its memory) before SIGKILL."""
KILL_WAIT_S = 2.0
"""How long SIGKILL is waited for before the process is said to still run."""
GIB = 1024**3


@model
class Leftover:
    """A process holding GPU memory that is not this session's."""

    pid: int
    gpus: tuple[tuple[int, int | None], ...]
    """(GPU index, bytes held or None when NVML does not say) for each GPU it holds."""
    command: str | None
    why: str | None
    facts: ProcessFacts | None
    started_at: float | None


@model
class Session:
    """The processes that are this session's: never leftovers, never ended."""

    kernel: int
    who: str
    protected: frozenset[int]


def this_session(proc: Path = Path("/proc"), me: int | None = None) -> Session:
    """This process, the kernel it runs in or under, their ancestors and the kernel's children."""
    pid = os.getpid() if me is None else me
    kernel, who = restarted_process(proc, pid)
    mine = {pid, kernel, *ancestors(pid, proc), *ancestors(kernel, proc)}
    return Session(kernel, who, frozenset(mine | descendants((kernel, pid), proc)))


def find_leftovers(
    holders: GpuHolders,
    session: Session,
    *,
    facts: Callable[[int], ProcessFacts | None] = process_facts,
    started: Callable[[int], float | None] = process_started_at,
) -> tuple[Leftover, ...]:
    """The holders that are not of ``session``, one per process, in NVML's order."""
    by_pid: dict[int, list[tuple[int, int | None]]] = {}
    first: dict[int, tuple[str | None, str | None]] = {}
    for held in holders.processes:
        if held.pid in session.protected:
            continue
        by_pid.setdefault(held.pid, []).append((held.gpu, held.used))
        first.setdefault(held.pid, (held.command, held.why))
    return tuple(
        Leftover(pid, tuple(gpus), first[pid][0], first[pid][1], facts(pid), started(pid))
        for pid, gpus in by_pid.items()
    )


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _held(gpus: Sequence[tuple[int, int | None]], names: dict[int, str]) -> str:
    parts = []
    for index, used in gpus:
        amount = "memory not reported" if used is None else f"{used / GIB:.1f} GiB"
        parts.append(f"{amount} of GPU{index}" + (f" {names[index]}" if index in names else ""))
    return ", ".join(parts)


def leftover_findings(
    leftovers: Sequence[Leftover], holders: GpuHolders, session: Session, *, now: float
) -> list[Finding]:
    names = {index: name for index, name, _ in holders.gpus}
    found = []
    for left in leftovers:
        command = left.command or left.why or "command line unknown"
        age = f", started {_age(now - left.started_at)} ago" if left.started_at is not None else ""
        owner = f", user id {left.facts.uid}" if left.facts is not None else ""
        held = _held(left.gpus, names)
        evidence = [Evidence(f"NVML: pid {left.pid} holds {held}", now)]
        evidence.append(Evidence(f"pid {left.pid}: {printable(command)}{owner}", left.started_at))
        found.append(
            Finding(
                kind="gpu-leftover",
                summary=f"pid {left.pid} ({printable(command)}) holds {held}{age}; it is not this"
                f" {session.who} (pid {session.kernel}) or one of its children",
                evidence=tuple(evidence),
                remedy="end it if it is a run of yours that is over: colabenv doctor --kill-leftovers"
                f" (this user's only), or kill {left.pid}; its GPU memory is free once it has ended",
                pid=left.pid,
                time=left.started_at,
            )
        )
    return found


def _wait_gone(fds: dict[int, int], seconds: float) -> set[int]:
    """Of ``fds`` (key: pidfd), the keys whose process has ended within ``seconds``."""
    gone: set[int] = set()
    deadline = time.monotonic() + max(seconds, 0.0)
    while len(gone) < len(fds):
        left = deadline - time.monotonic()
        poller = select.poll()
        for key, fd in fds.items():
            if key not in gone:
                poller.register(fd, select.POLLIN)
        ready = poller.poll(max(left, 0.0) * 1000)
        by_fd = {fd: key for key, fd in fds.items()}
        gone.update(by_fd[fd] for fd, _ in ready if fd in by_fd)
        if left <= 0:
            break
    return gone


def _same_process(left: Leftover, facts: Callable[[int], ProcessFacts | None]) -> bool:
    now = facts(left.pid)
    return now is not None and left.facts is not None and now.start_ticks == left.facts.start_ticks


def _refusal(left: Leftover, session: Session, me: int) -> str | None:
    if left.pid in session.protected or left.pid <= 1:
        return f"pid {left.pid} not ended: it is this session's"
    if left.facts is None:
        return f"pid {left.pid} not ended: its owner cannot be read"
    if left.facts.uid != me:
        return f"pid {left.pid} not ended: it is user id {left.facts.uid}'s, not this user's ({me})"
    return None


def _signal(fd: int, signum: int) -> bool:
    """Send ``signum`` through the pidfd; False when the process has already ended."""
    try:
        signal.pidfd_send_signal(fd, signum)
    except ProcessLookupError:
        return False
    return True


def end_leftovers(
    leftovers: Sequence[Leftover],
    session: Session,
    *,
    uid: int | None = None,
    grace: float = GRACE_S,
    facts: Callable[[int], ProcessFacts | None] = process_facts,
) -> list[Evidence]:
    """End the leftovers of this user, all at once: SIGTERM, and SIGKILL to those still there
    after ``grace``; what was done to each, as evidence, in their order. Another user's process,
    a protected one, or one that is no longer the process named (its start time changed) is
    left alone and said so."""
    me = os.getuid() if uid is None else uid
    said: dict[int, str] = {}
    fds: dict[int, int] = {}
    try:
        for index, left in enumerate(leftovers):
            refused = _refusal(left, session, me)
            if refused is not None:
                said[index] = refused
                continue
            try:
                fd = os.pidfd_open(left.pid)
            except ProcessLookupError:
                said[index] = f"pid {left.pid} had already ended"
                continue
            except OSError as error:
                said[index] = f"pid {left.pid} not ended: {error.strerror or error}"
                continue
            fds[index] = fd
            if not _same_process(left, facts):
                said[index] = f"pid {left.pid} not ended: it is no longer the process named"
            elif not _signal(fd, signal.SIGTERM):
                said[index] = f"pid {left.pid} had already ended"
        signalled = {i: fd for i, fd in fds.items() if i not in said}
        for index in _wait_gone(signalled, grace):
            said[index] = f"pid {leftovers[index].pid} ended by SIGTERM"
        stubborn = {i: fd for i, fd in signalled.items() if i not in said}
        for fd in stubborn.values():
            _signal(fd, signal.SIGKILL)
        killed = _wait_gone(stubborn, KILL_WAIT_S)
        for index in stubborn:
            pid = leftovers[index].pid
            if index in killed:
                said[index] = f"pid {pid} ended by SIGKILL after {grace:g} s"
            else:
                said[index] = f"pid {pid} still runs after SIGKILL"
    finally:
        for fd in fds.values():
            os.close(fd)
    return [Evidence(said[index], time.time()) for index in range(len(leftovers))]


def end_leftover(
    left: Leftover,
    session: Session,
    *,
    uid: int | None = None,
    grace: float = GRACE_S,
    facts: Callable[[int], ProcessFacts | None] = process_facts,
) -> Evidence:
    """:func:`end_leftovers` of one."""
    return end_leftovers([left], session, uid=uid, grace=grace, facts=facts)[0]
