"""What joins the ``vram`` check: the processes holding memory on each GPU, and the host's RAM.

The processes come from NVML (``nvmlDeviceGetComputeRunningProcesses``), asked after verify's
own children are gone, in a thread bounded by :data:`NVML_TIMEOUT_S` (a driver that stopped
answering costs that, not a hang). Each one's command line is read from ``/proc/PID/cmdline``
where it can be (bounded, shown through :func:`colabenv.errors.printable`): NVML reports the
host's process ids, so inside a container that does not share the host's process namespace a
process may not be visible, and it is said so instead of guessing. A process other than this
one holding more than ``max_other_vram_share`` of a GPU is a WARN: a kernel that died quietly
leaves such a process pinning memory the next run needs.

Host RAM is ``MemAvailable`` and ``MemTotal`` of ``/proc/meminfo``; below ``min_free_ram_gib``
it is a WARN.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from colabenv.errors import printable
from colabenv.models.frozen import model
from colabenv.verification.report import Check, Status, join_limited

NVML_TIMEOUT_S = 5.0
CMDLINE_LIMIT = 4096
SHOWN_COMMAND = 80
MEMINFO_LIMIT = 64 * 1024
MAX_GPUS = 64
MAX_PROCESSES = 256
NOT_AVAILABLE = 2**64 - 1
"""NVML's NVML_VALUE_NOT_AVAILABLE for ``usedGpuMemory`` (containers, some drivers)."""
GIB = 1024**3
KIB = 1024


class ProcessNvml(Protocol):
    """The part of ``pynvml`` (nvidia-ml-py) asked here; tests pass a fake."""

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlDeviceGetCount(self) -> int: ...
    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any: ...
    def nvmlDeviceGetName(self, handle: Any) -> str | bytes: ...
    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any: ...
    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> Sequence[Any]: ...


def import_pynvml() -> ProcessNvml:
    import pynvml

    nvml: ProcessNvml = pynvml
    return nvml


@model
class GpuProcess:
    """A process NVML says holds memory on GPU ``gpu``; ``command`` is None when ``/proc`` does
    not show it, ``why`` then says why."""

    gpu: int
    pid: int
    used: int | None
    command: str | None
    why: str | None = None


@model
class GpuHolders:
    """Each GPU's (index, name, total bytes) and the processes on it; ``note`` says why
    nothing is known (no NVML, it did not answer)."""

    gpus: tuple[tuple[int, str, int | None], ...] = ()
    processes: tuple[GpuProcess, ...] = ()
    note: str | None = None


@model
class HostMemory:
    available: int
    total: int


def _text(value: object) -> str:
    raw = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return printable(raw)[:SHOWN_COMMAND]


def _bytes(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < NOT_AVAILABLE:
        return None
    return value


def command_line(pid: int, proc: Path = Path("/proc")) -> tuple[str | None, str | None]:
    """(the command line of ``pid`` as one printable line, None; or None and why not)."""
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
    state = _state(base)
    text = printable(" ".join(words))
    if len(text) > SHOWN_COMMAND:
        text = text[: SHOWN_COMMAND - 3] + "..."
    return text + (f" ({state})" if state else ""), None


def _state(base: Path) -> str | None:
    try:
        with open(base / "stat", "rb") as handle:
            stat = handle.read(4096).decode("ascii", "replace")
        letter = stat[stat.rindex(")") + 2]
    except (OSError, ValueError, IndexError):
        return None
    return {"Z": "zombie", "T": "stopped"}.get(letter)


def _query(nvml: ProcessNvml, command: Callable[[int], tuple[str | None, str | None]]) -> GpuHolders:
    nvml.nvmlInit()
    try:
        gpus: list[tuple[int, str, int | None]] = []
        found: list[GpuProcess] = []
        for index in range(min(int(nvml.nvmlDeviceGetCount()), MAX_GPUS)):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            total = _bytes(getattr(nvml.nvmlDeviceGetMemoryInfo(handle), "total", None))
            gpus.append((index, _text(nvml.nvmlDeviceGetName(handle)), total))
            for item in list(nvml.nvmlDeviceGetComputeRunningProcesses(handle))[:MAX_PROCESSES]:
                pid = _bytes(getattr(item, "pid", None))
                if pid is None:
                    continue
                shown, why = command(pid)
                found.append(GpuProcess(index, pid, _bytes(getattr(item, "usedGpuMemory", None)), shown, why))
        return GpuHolders(tuple(gpus), tuple(found))
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def gpu_holders(
    load_nvml: Callable[[], ProcessNvml] = import_pynvml,
    *,
    timeout: float = NVML_TIMEOUT_S,
    command: Callable[[int], tuple[str | None, str | None]] = command_line,
) -> GpuHolders:
    """Who holds memory on each GPU, from NVML in a daemon thread bounded by ``timeout``."""
    outcome: list[GpuHolders] = []

    def work() -> None:
        try:
            outcome.append(_query(load_nvml(), command))
        except Exception as exc:  # NVML raises its own error classes, pynvml's import others
            text = printable(str(exc).strip().splitlines()[0] if str(exc).strip() else "")
            outcome.append(
                GpuHolders(note=f"NVML: {type(exc).__name__}" + (f": {text[:120]}" if text else ""))
            )

    thread = threading.Thread(target=work, name="colabenv-gpu-holders", daemon=True)
    thread.start()
    thread.join(timeout)
    if not outcome:
        return GpuHolders(note=f"NVML did not answer within {timeout:g}s")
    return outcome[0]


def read_host_memory(path: Path = Path("/proc/meminfo")) -> HostMemory | None:
    """``MemAvailable`` and ``MemTotal``; None where there is no such file or it lacks them."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(MEMINFO_LIMIT).decode("ascii", "replace")
    except OSError:
        return None
    values: dict[str, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if name in ("MemAvailable", "MemTotal") and parts and parts[0].isdigit() and len(parts[0]) < 16:
            values[name] = int(parts[0]) * (KIB if parts[1:] == ["kB"] else 1)
    if "MemAvailable" not in values or "MemTotal" not in values:
        return None
    return HostMemory(values["MemAvailable"], values["MemTotal"])


def _gib(value: int) -> str:
    return f"{value / GIB:.1f} GiB"


def _holder(process: GpuProcess, total: int | None, me: int) -> str:
    who = "this process" if process.pid == me else (process.command or process.why or "?")
    used = "memory not reported" if process.used is None else _gib(process.used)
    share = f", {process.used / total:.0%}" if process.used is not None and total else ""
    return f"pid {process.pid} {who} ({used}{share})"


def _holders_text(holders: GpuHolders, me: int) -> str:
    if holders.note is not None:
        return f"processes on the GPUs unknown ({holders.note})"
    parts = []
    for index, name, total in holders.gpus:
        here = [p for p in holders.processes if p.gpu == index]
        listed = join_limited([_holder(p, total, me) for p in here], limit=4) if here else "none"
        parts.append(f"GPU{index} {name} held by: {listed}")
    return "; ".join(parts) if parts else "no GPU listed by NVML"


def _heavy_others(holders: GpuHolders, share: float, me: int) -> list[str]:
    totals = {index: total for index, _, total in holders.gpus}
    heavy = []
    for process in holders.processes:
        total = totals.get(process.gpu)
        if process.pid == me or process.used is None or not total:
            continue
        if process.used / total > share:
            who = process.command or process.why or "?"
            heavy.append(
                f"another process holds {_gib(process.used)} of GPU{process.gpu} "
                f"({process.used / total:.0%}, more than {share:.0%}): pid "
                f"{process.pid} {who}"
            )
    return heavy


def with_host_facts(
    base: Check,
    holders: GpuHolders | None,
    ram: HostMemory | None,
    *,
    min_free_ram_gib: float | None,
    max_other_share: float,
    me: int | None = None,
) -> Check:
    """The ``vram`` check with who holds each GPU and the host's RAM joined to it: WARN for
    another process above ``max_other_share`` of a GPU or RAM below ``min_free_ram_gib``; a
    FAIL stays a FAIL."""
    pid = os.getpid() if me is None else me
    warnings: list[str] = []
    parts = [base.detail]
    if holders is not None:
        warnings.extend(_heavy_others(holders, max_other_share, pid))
        parts.append(_holders_text(holders, pid))
    ram_checked = False
    if ram is None:
        parts.append("host RAM unknown (no /proc/meminfo)")
    else:
        parts.append(f"host RAM {_gib(ram.available)} free of {_gib(ram.total)}")
        if min_free_ram_gib is not None:
            ram_checked = True
            if ram.available < min_free_ram_gib * GIB:
                warnings.append(
                    f"host RAM has {_gib(ram.available)} free, the profile asks for {min_free_ram_gib:g} GiB"
                )
    detail = "; ".join(parts)
    if base.status is Status.FAIL:
        return Check(base.name, Status.FAIL, "; ".join([*warnings, detail]))
    if warnings:
        return Check(base.name, Status.WARN, "; ".join(warnings) + f" ({detail})")
    if base.status is Status.SKIP and ram_checked:
        return Check(base.name, Status.PASS, detail)
    return Check(base.name, base.status, detail)
