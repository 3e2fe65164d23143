"""What the silent-death findings of ``colabenv doctor`` read besides the recorder's samples: the
OOM lines of the kernel log (:class:`KernelEvent`, gathered in a :class:`KernelLog`), and the
curated facts of ``deaths.toml`` (each runtime's session limit, each finding's remedy)."""

from __future__ import annotations

from colabenv.models.base import Accelerator, RuntimeKind
from colabenv.models.catalog import Source
from colabenv.models.frozen import model

OOM_KINDS = ("oom", "cgroup-oom", "oom-kill")
"""A :class:`KernelEvent`'s kinds: ``oom`` ("Out of memory: Killed process N (comm)", the
whole machine's OOM killer), ``cgroup-oom`` ("Memory cgroup out of memory: Killed process N
(comm)") and ``oom-kill`` (the ``oom-kill:constraint=...,task=comm,pid=N,uid=U`` summary line
the kernel prints for either)."""


@model
class KernelEvent:
    """One OOM line of the kernel log: which process the kernel killed, and when."""

    time: float | None
    """Seconds since the epoch (the record's time since boot plus the boot time); None where
    the line had no time."""
    pid: int
    comm: str
    """The process name as the kernel gives it (shown through ``errors.printable``)."""
    kind: str
    """One of :data:`OOM_KINDS`."""
    line: str
    """The message, as the kernel wrote it (bounded)."""
    cgroup: str | None = None
    """The killed task's memory cgroup (``task_memcg=`` of an ``oom-kill`` line)."""


@model
class KernelLog:
    """What could be read of the kernel log: its OOM lines, where they came from (``/dev/kmsg``,
    ``dmesg``), and why nothing could be read where that is so."""

    events: tuple[KernelEvent, ...]
    source: str | None
    reason: str | None = None
    """Why the log could not be read (``/dev/kmsg: permission denied; dmesg: ...``)."""


@model
class SessionLimit:
    """How long a runtime's session may live, for one plan and some accelerators."""

    runtime: RuntimeKind
    hours: float
    plan: str
    """Whom it applies to, in words (``the free plan``, ``paid plans``, ``CPU and GPU sessions``)."""
    accelerators: tuple[Accelerator, ...]
    """The accelerators it applies to; empty: any."""
    source: Source


@model
class Remedy:
    """One step of what to do about a finding of ``kind``."""

    kind: str
    text: str
    source: Source


@model
class DeathFacts:
    """``deaths.toml``: the session limits and the remedies, in the file's order."""

    limits: tuple[SessionLimit, ...]
    remedies: tuple[Remedy, ...]

    def remedy(self, kind: str) -> str:
        """The steps for ``kind``, joined into one line, in the file's order."""
        return "; ".join(r.text for r in self.remedies if r.kind == kind)
