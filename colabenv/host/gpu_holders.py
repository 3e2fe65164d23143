"""The processes holding memory on each GPU, for ``verify``'s ``vram`` check and ``doctor``'s
GPU leftovers.

They come from NVML (``nvmlDeviceGetComputeRunningProcesses``), in a thread bounded by
:data:`NVML_TIMEOUT_S` (a driver that stopped answering costs that, not a hang). Each one's
command line is read from ``/proc/PID/cmdline`` where it can be
(:func:`colabenv.host.proctree.command_line`): NVML reports the host's process ids, so inside a
container that does not share the host's process namespace a process may not be visible, and it
is said so instead of guessing.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from colabenv.errors import printable
from colabenv.host.probe import import_pynvml
from colabenv.host.proctree import SHOWN_COMMAND, command_line
from colabenv.models.frozen import model

NVML_TIMEOUT_S = 5.0
MAX_GPUS = 64
MAX_PROCESSES = 256
NOT_AVAILABLE = 2**64 - 1
"""NVML's NVML_VALUE_NOT_AVAILABLE for ``usedGpuMemory`` (containers, some drivers)."""


class ProcessNvml(Protocol):
    """The part of ``pynvml`` (nvidia-ml-py) asked here; tests pass a fake."""

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlDeviceGetCount(self) -> int: ...
    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any: ...
    def nvmlDeviceGetName(self, handle: Any) -> str | bytes: ...
    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any: ...
    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> Sequence[Any]: ...


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


def _text(value: object) -> str:
    raw = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return printable(raw)[:SHOWN_COMMAND]


def _bytes(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < NOT_AVAILABLE:
        return None
    return value


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
