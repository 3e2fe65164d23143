"""What the recorder (``colabenv watch``) reads of the host at each sample: the processes with the
largest RSS and the kernel's family, ``statvfs`` of ``/dev/shm`` and the watched paths, each GPU
through NVML, the load average and the session's age; host memory and the memory cgroup come
from :mod:`colabenv.host.memory` (readers handed in for tests: :class:`Sampler`). Also how a
process is known again later (its start time in clock ticks and its command line), so that a
recycled pid is never taken for the recorder.

Cheap by design: one read of ``/proc/PID/stat`` and one ``stat`` per process, NVML initialised
once; the standard library and nvidia-ml-py only (the recorder imports nothing heavier).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from colabenv.errors import printable
from colabenv.host.memory import cgroup_memory, host_memory
from colabenv.host.probe import Nvml, import_pynvml
from colabenv.models import KfdGpu, watch
from colabenv.models.frozen import record

TOP_PROCESSES = 10
"""The processes with the largest RSS each sample keeps, besides the kernel's family."""
MAX_FAMILY = 32
"""The most of the kernel's family (itself and its descendants) a sample keeps, largest first."""
MAX_PROCESSES = 4096
"""``/proc`` is read this far: a host with more processes is sampled among the first ones."""
STAT_LIMIT = 1024
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_HERTZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
NVML_TIMEOUT_S = 2.0
"""How long one sample waits for NVML's answers."""


def read_host_memory(notes: list[str]) -> watch.HostMemory | None:
    """The default host-memory reader: ``/proc/meminfo`` (why not, in ``notes``)."""
    return host_memory(notes=notes)


def read_cgroup_memory(notes: list[str]) -> watch.CgroupMemory | None:
    """The default cgroup reader: the memory cgroup the recorder runs in (why not, in ``notes``)."""
    return cgroup_memory(notes=notes)


def _stat(proc: Path, pid: str) -> tuple[int, str, int, int, int] | None:
    """``(ppid, comm, start ticks, rss bytes, uid)`` from ``/proc/PID/stat`` (the file is owned
    by the process's user); None when the process is gone. ``os.open`` and ``os.read`` rather
    than ``open()``: this runs for every process at every sample."""
    try:
        fd = os.open(f"{proc}/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        uid = os.fstat(fd).st_uid
        raw = os.read(fd, STAT_LIMIT)
    except OSError:
        return None
    finally:
        os.close(fd)
    left, right = raw.find(b"("), raw.rfind(b")")
    if left < 0 or right < left:
        return None
    fields = raw[right + 2 :].split()
    try:
        return (
            int(fields[1]),
            raw[left + 1 : right].decode("utf-8", "replace"),
            int(fields[19]),
            int(fields[21]) * _PAGE,
            uid,
        )
    except (IndexError, ValueError):
        return None


def process_identity(pid: int, proc: Path = Path("/proc")) -> tuple[int, str] | None:
    """``(start time in clock ticks since boot, command line)`` of ``pid``; None when there is no
    such process (or it is a zombie): what a pid file is checked against."""
    found = _stat(proc, str(pid))
    if found is None:
        return None
    try:
        with open(proc / str(pid) / "cmdline", "rb") as handle:
            raw = handle.read(4096)
    except OSError:
        return None
    if not raw:
        return None
    return found[2], raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")


def _uptime(proc: Path) -> float | None:
    try:
        with open(proc / "uptime", "rb") as handle:
            return float(handle.read(128).split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _statvfs(path: str) -> watch.FilesystemUse | None:
    try:
        found = os.statvfs(path)
    except OSError:
        return None
    return watch.FilesystemUse(path, found.f_blocks * found.f_frsize, found.f_bavail * found.f_frsize)


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _problem(exc: BaseException) -> str:
    text = printable(str(exc).strip().splitlines()[0] if str(exc).strip() else "")
    return type(exc).__name__ + (f": {text[:120]}" if text else "")


class _Gpus:
    """NVML, initialised at the first sample (what fails is kept as the note every sample
    repeats); its reads run in a worker thread of :class:`SamplerRun`, bounded in time."""

    def __init__(self, load: Callable[[], Nvml] | None, proc: Path) -> None:
        self.load = load
        self.nvml: Nvml | None = None
        self.handles: list[tuple[int, Any, str]] = []
        self.note: str | None = None
        self.opened = False
        if load is None:
            self.note = "gpu: NVML not used"
            return
        driver = (proc.parent / "dev" / "nvidia0").exists() or (proc / "driver" / "nvidia").exists()
        if load is import_pynvml and not driver:
            self.note = "gpu: no NVIDIA driver (no /dev/nvidia0, no /proc/driver/nvidia)"

    @property
    def used(self) -> bool:
        """Whether NVML is to be asked at all (a worker thread each sample)."""
        return self.note is None or self.opened

    def _open(self) -> None:
        self.opened = True
        assert self.load is not None
        try:
            nvml = self.load()
            nvml.nvmlInit()
            for index in range(min(int(nvml.nvmlDeviceGetCount()), 64)):
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                self.handles.append((index, handle, _text(nvml.nvmlDeviceGetUUID(handle))[:80]))
        except Exception as exc:  # NVML raises its own error classes, pynvml's import others
            self.note = f"gpu: NVML not available: {_problem(exc)}"
            self.handles = []
            return
        self.nvml = nvml

    def sample(self, notes: list[str]) -> tuple[watch.GpuSample, ...]:
        if not self.opened and self.note is None:
            self._open()
        if self.note is not None:
            notes.append(self.note)
        if self.nvml is None:
            return ()
        found = []
        for index, handle, uuid in self.handles:
            try:
                memory = self.nvml.nvmlDeviceGetMemoryInfo(handle)
                used, total = int(memory.used), int(memory.total)
            except Exception as exc:
                notes.append(f"gpu {index}: memory not read: {_problem(exc)}")
                continue
            utilization = None
            with contextlib.suppress(Exception):
                utilization = int(self.nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
            found.append(
                watch.GpuSample(index, uuid, used, total, utilization, self._holders(handle, index, notes))
            )
        return tuple(found)

    def _holders(self, handle: Any, index: int, notes: list[str]) -> tuple[watch.GpuProcess, ...]:
        assert self.nvml is not None
        holders: dict[int, watch.GpuProcess] = {}
        for read in (
            self.nvml.nvmlDeviceGetComputeRunningProcesses,
            self.nvml.nvmlDeviceGetGraphicsRunningProcesses,
        ):
            try:
                listed = list(read(handle))[:64]
            except Exception as exc:
                notes.append(f"gpu {index}: processes not read: {_problem(exc)}")
                continue
            for item in listed:
                pid = int(item.pid)
                used = getattr(item, "usedGpuMemory", None)
                used = int(used) if isinstance(used, int) and 0 <= used < 1 << 62 else None
                if pid not in holders or holders[pid].used_memory is None:
                    holders[pid] = watch.GpuProcess(pid, used)
        return tuple(sorted(holders.values(), key=lambda p: p.pid))

    def close(self) -> None:
        if self.nvml is not None:
            with contextlib.suppress(Exception):
                self.nvml.nvmlShutdown()
            self.nvml = None


_VRAM_STATED = "sys/class/drm/card*/device/mem_info_vram_used"
"""The file by which a DRM card states its VRAM use (amdgpu's do, :mod:`colabenv.host.amd_vram`)."""


@record
class Sampler:
    """Takes one :class:`Sample` each call, readers injectable at the boundary.

    ``kernel_pid``: the process that started the recorder; it and its descendants are always
    kept. ``paths``: the watched paths (``statvfs`` each). ``host_memory`` and ``cgroup_memory``:
    the memory readers (:mod:`colabenv.host.memory`), each given the sample's notes. ``load_nvml``:
    the NVML module (None: no GPU part), each sample's reads given ``nvml_timeout`` seconds
    (a driver that hangs leaves the GPU part out, with a note, until it answers); where NVML
    lists none, AMD GPUs' memory from sysfs under ``amd_root``. ``proc``:
    where ``/proc`` is. ``shm``: the shared-memory mount.
    """

    kernel_pid: int
    paths: tuple[str, ...]
    host_memory: Callable[[list[str]], watch.HostMemory | None] = read_host_memory
    cgroup_memory: Callable[[list[str]], watch.CgroupMemory | None] = read_cgroup_memory
    load_nvml: Callable[[], Nvml] | None = import_pynvml
    proc: Path = Path("/proc")
    shm: str = "/dev/shm"
    clock: Callable[[], float] = time.time
    top: int = TOP_PROCESSES
    nvml_timeout: float = NVML_TIMEOUT_S
    amd_root: Path | None = Path("/")
    """Where AMD GPUs' memory is read (``sys/class/drm/card*/device/mem_info_vram_*``) when NVML
    lists no GPU; None: not read."""

    def start(self) -> SamplerRun:
        """What lives across samples (NVML's handles); close it when done."""
        return SamplerRun(self)


class SamplerRun:
    """A :class:`Sampler` started: :meth:`sample` each interval, :meth:`close` at the end."""

    def __init__(self, sampler: Sampler) -> None:
        self.sampler = sampler
        self.gpus = _Gpus(sampler.load_nvml, sampler.proc)
        self.hung: tuple[threading.Thread, float] | None = None
        self.amd_nodes: tuple[KfdGpu, ...] | None = None

    def _gpu_part(self, notes: list[str]) -> tuple[watch.GpuSample, ...]:
        """The GPUs, read in a worker thread given ``nvml_timeout`` seconds: a driver that hangs
        costs the GPU part of the samples until it answers, never the recording."""
        if not self.gpus.used:
            return self.gpus.sample(notes)
        if self.hung is not None:
            thread, since = self.hung
            if thread.is_alive():
                notes.append(f"gpu: NVML has not answered for {time.monotonic() - since:.0f} s")
                return ()
            self.hung = None
        done: list[tuple[tuple[watch.GpuSample, ...], list[str]]] = []

        def work() -> None:
            own: list[str] = []
            done.append((self.gpus.sample(own), own))

        thread = threading.Thread(target=work, name="colabenv-watch-gpu", daemon=True)
        began = time.monotonic()
        thread.start()
        thread.join(self.sampler.nvml_timeout)
        if not done:
            self.hung = (thread, began)
            notes.append(f"gpu: NVML did not answer within {self.sampler.nvml_timeout:g} s")
            return ()
        gpus, own = done[0]
        notes.extend(own)
        return gpus

    def sample(self) -> watch.Sample:
        s = self.sampler
        notes: list[str] = []
        now = s.clock()
        memory = _guarded(lambda: s.host_memory(notes), "memory", notes)
        cgroup = _guarded(lambda: s.cgroup_memory(notes), "cgroup", notes)
        uptime = _uptime(s.proc)
        processes, oldest = _processes(s.proc, s.kernel_pid, s.top, now, uptime)
        shm = _statvfs(s.shm)
        filesystems = tuple(found for found in map(_statvfs, s.paths) if found is not None)
        missing = [p for p in s.paths if all(f.path != p for f in filesystems)]
        if missing:
            notes.append("paths not readable: " + ", ".join(printable(p) for p in missing[:4]))
        gpus = self._gpu_part(notes) or self._amd_part(notes)
        try:
            load: tuple[float, float, float] | None = os.getloadavg()
        except OSError:
            load = None
        age = None if uptime is None or oldest is None else max(0.0, uptime - oldest / _HERTZ)
        return watch.Sample(now, memory, cgroup, processes, shm, filesystems, gpus, load, age, tuple(notes))

    def _amd_part(self, notes: list[str]) -> tuple[watch.GpuSample, ...]:
        """AMD GPUs' memory from sysfs (no utilisation, no holders: sysfs says neither), each
        named by its DRM card and KFD node; the KFD topology is read once."""
        root = self.sampler.amd_root
        if root is None or not any(root.glob(_VRAM_STATED)):
            return ()  # not an AMD host: its readers are not even imported
        from colabenv.host.amd_vram import read_amd_vram  # an AMD host's only
        from colabenv.host.kfd import read_kfd_gpus

        if self.amd_nodes is None:
            self.amd_nodes = read_kfd_gpus(root).gpus
        reading = read_amd_vram(root, self.amd_nodes)
        notes.extend(reading.notes)
        return tuple(
            watch.GpuSample(
                index,
                f"{one.card}" + (f" (KFD node {one.node})" if one.node is not None else ""),
                one.used_bytes,
                one.total_bytes,
                None,
            )
            for index, one in enumerate(reading.samples)
        )

    def close(self) -> None:
        if self.hung is None:
            self.gpus.close()


def _guarded(read: Callable[[], Any], what: str, notes: list[str]) -> Any:
    try:
        return read()
    except Exception as exc:  # a reader's bug must not end the recorder: the sample says it
        notes.append(f"{what}: not read: {_problem(exc)}")
        return None


def _processes(
    proc: Path, kernel: int, top: int, now: float, uptime: float | None
) -> tuple[tuple[watch.ProcessSample, ...], int | None]:
    """The ``top`` largest by RSS and the kernel's family (largest first); and the start ticks
    of the oldest of PID 1 and the kernel (the session's start)."""
    table: dict[int, tuple[int, str, int, int, int]] = {}
    try:
        with os.scandir(proc) as entries:
            for entry in entries:
                if not entry.name.isdigit():
                    continue
                found = _stat(proc, entry.name)
                if found is None:
                    continue
                table[int(entry.name)] = found
                if len(table) >= MAX_PROCESSES:
                    break
    except OSError:
        return (), None
    children: dict[int, list[int]] = {}
    for pid, (ppid, *_) in table.items():
        children.setdefault(ppid, []).append(pid)
    family: list[int] = []
    todo = [kernel] if kernel in table else []
    while todo and len(family) < 4 * MAX_FAMILY:
        pid = todo.pop()
        family.append(pid)
        todo.extend(children.get(pid, ()))
    by_rss = sorted(table, key=lambda pid: table[pid][3], reverse=True)
    family = sorted(family, key=lambda pid: table[pid][3], reverse=True)[:MAX_FAMILY]
    chosen = list(dict.fromkeys([*by_rss[:top], *family]))
    boot = None if uptime is None else now - uptime
    samples = []
    for pid in sorted(chosen, key=lambda pid: table[pid][3], reverse=True):
        ppid, comm, ticks, rss, uid = table[pid]
        started = None if boot is None else boot + ticks / _HERTZ
        samples.append(watch.ProcessSample(pid, ppid, comm[:64], rss, uid, started))
    starts = [table[pid][2] for pid in (1, kernel) if pid in table]
    return tuple(samples), (min(starts) if starts else None)


def watched_paths(given: Sequence[str], state: Path, cwd: Path | None) -> tuple[str, ...]:
    """The paths a recorder watches: ``given``, else ``/content`` when it exists, else ``cwd``
    (none when it was deleted: None); then ``/tmp`` and the state directory; each once."""
    default = "/content" if os.path.isdir("/content") else None if cwd is None else str(cwd)
    first = list(given) or ([default] if default is not None else [])
    return tuple(dict.fromkeys([*first, "/tmp", str(state)]))
