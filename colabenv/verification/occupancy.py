"""What joins the ``vram`` check: the processes holding memory on each GPU, and the host's RAM.

Both are read by the host layer: the processes by :func:`colabenv.host.gpu_holders.gpu_holders`
(NVML, asked after verify's own children are gone, and each one's command line from ``/proc``),
the RAM by :func:`colabenv.host.memory.host_memory` (``MemAvailable`` and ``MemTotal`` of
``/proc/meminfo``). A process other than this one holding more than ``max_other_vram_share`` of a
GPU is a WARN: a kernel that died quietly leaves such a process pinning memory the next run
needs. Host RAM below ``min_free_ram_gib`` is a WARN.
"""

from __future__ import annotations

import os

from colabenv.host.gpu_holders import GpuHolders, GpuProcess
from colabenv.models import HostMemory
from colabenv.verification.report import Check, Status, join_limited

GIB = 1024**3


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
