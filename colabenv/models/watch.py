"""What the recorder (``colabenv watch``) writes: one :class:`Sample` of the host every interval,
and what ``colabenv doctor`` reads back from the ring.

Sizes are bytes, times are seconds since the epoch (wall clock: a reader compares them with
the kernel log and with a person's memory of when it died). A value the host did not give is
``None``, never 0; why a whole part is missing is said in ``notes``.
"""

from __future__ import annotations

from colabenv.models.frozen import model


@model
class HostMemory:
    """``/proc/meminfo``: ``MemTotal``, ``MemAvailable``, ``SwapTotal``, ``SwapFree``."""

    total: int
    available: int
    swap_total: int
    swap_free: int


@model
class CgroupMemory:
    """The memory cgroup the recorder runs in (v1 or v2)."""

    version: int
    """1 (``memory.usage_in_bytes``, ``memory.oom_control``) or 2 (``memory.current``, ``memory.events``)."""
    path: str
    """The cgroup's path inside the hierarchy (``/user.slice/...``)."""
    usage: int
    limit: int | None
    """None: no limit (``max``, or v1's huge number)."""
    oom_kills: int | None
    """The OOM-kill counter (v2 ``memory.events`` ``oom_kill``, v1 ``memory.oom_control``
    ``oom_kill``); None where the kernel does not count them."""


@model
class ProcessSample:
    """One of the processes with the largest RSS, or one of the kernel's family."""

    pid: int
    ppid: int
    name: str
    """``/proc/PID/comm``, as the kernel gives it (shown through ``errors.printable``)."""
    rss: int
    uid: int
    started: float | None = None
    """When it started (epoch seconds), where ``/proc`` tells."""


@model
class FilesystemUse:
    """``statvfs`` of a watched path: what its filesystem holds and has free."""

    path: str
    total: int
    free: int
    """Free to an unprivileged user (``f_bavail``)."""


@model
class GpuProcess:
    """A process holding memory on a GPU (NVML's compute and graphics processes)."""

    pid: int
    used_memory: int | None


@model
class GpuSample:
    """One GPU: its memory, its utilisation and who holds memory on it."""

    index: int
    uuid: str
    memory_used: int
    memory_total: int
    utilization: int | None
    """Percent of the last sample period a kernel ran (NVML), None where not supported."""
    processes: tuple[GpuProcess, ...] = ()


@model
class Sample:
    """The host at one moment, as the recorder saw it."""

    time: float
    memory: HostMemory | None
    cgroup: CgroupMemory | None
    processes: tuple[ProcessSample, ...]
    shm: FilesystemUse | None
    """``/dev/shm``, where it is mounted."""
    filesystems: tuple[FilesystemUse, ...]
    gpus: tuple[GpuSample, ...]
    load: tuple[float, float, float] | None
    session_age: float | None
    """Seconds since the runtime started (the oldest of PID 1 and the kernel), None where unknown."""
    notes: tuple[str, ...] = ()
    """Why a part is missing (``gpu: NVML not available: ...``), one line each."""


@model
class RingHeader:
    """What a ring file says of the recorder that wrote it (its header)."""

    version: int
    """The ring format version (docs/formats.md, "The watch ring")."""
    recorder_pid: int
    kernel_pid: int
    """The process that started the recorder (the notebook's kernel): its family is sampled."""
    interval_s: float
    started: float
    """When the recorder started (epoch seconds)."""
    slots: int
    """How many records the ring holds before the oldest is overwritten."""


@model
class RingContents:
    """A ring file read back: its header, the whole records oldest first, and what was skipped.

    ``skipped`` counts the records left out by reason (``torn or corrupt``: a checksum that does
    not match, as a record cut by a crash leaves; ``not a sample``: a whole record that does not
    decode; ``out of place``: a record in a slot its number does not belong to; ``left out past
    the bound on what is held``: older records not decoded once the newer ones held the reader's
    bound); ``notes`` says
    what else was odd about the file (shorter than its header says, junk after the last slot).
    """

    path: str
    header: RingHeader
    samples: tuple[Sample, ...]
    skipped: tuple[tuple[str, int], ...] = ()
    notes: tuple[str, ...] = ()
    held: int = 0
    """About what the samples hold in memory (what the reader's bound counts)."""


@model
class WatchStatus:
    """Whether a recorder runs for a state directory (``colabenv watch status``), and which."""

    running: bool
    pid: int | None = None
    since: float | None = None
    """When it started (epoch seconds)."""
    interval_s: float | None = None
    max_hours: float | None = None
    kernel_pid: int | None = None
    ring: str | None = None
    """The ring file it writes."""

    def to_json(self) -> dict[str, object]:
        if not self.running:
            return {"running": False}
        return {
            "running": True,
            "pid": self.pid,
            "since": self.since,
            "interval_s": self.interval_s,
            "max_hours": self.max_hours,
            "kernel_pid": self.kernel_pid,
            "ring": self.ring,
        }
