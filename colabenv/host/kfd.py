"""AMD GPUs as the kernel's KFD (the amdkfd driver) lists them in sysfs, so no ROCm userspace is
needed: ``sys/class/kfd/kfd/topology/nodes/<N>/properties`` under a root (``/`` on a host, a
folder of recorded files in tests).

Each node's ``properties`` is ``key value`` lines of decimal numbers (what libhsakmt parses:
ROCR-Runtime ``libhsakmt/src/topology.c`` lines 1119-1199, a ``"%s %llu"`` scan of one
PAGE_SIZE read). A CPU node has ``simd_count 0`` and ``gfx_target_version 0``; libhsakmt skips
it the same way ("Bail out early, if a CPU node", ``topology.c`` lines 1205-1206).

``gfx_target_version`` is what amdkfd sets per GC IP version in ``kgd2kfd_probe()``
(linux ``drivers/gpu/drm/amd/amdkfd/kfd_device.c``: ``IP_VERSION(9, 4, 2)`` -> 90402,
``IP_VERSION(9, 5, 0)`` -> 90500) and prints in the node's ``properties``
(``kfd_topology.c``, ``node_show()``). It is ``major * 10000 + minor * 100 + stepping``,
decoded as ROCR does (``libhsakmt/src/libhsakmt.h`` lines 131-133:
``HSA_GET_GFX_VERSION_MAJOR(v) ((v / 10000) % 100)``, ``MINOR ((v / 100) % 100)``,
``STEP (v % 100)``; ``topology.c`` lines 1212-1214) and named as its ISA table names it:
``gfx`` + major in decimal + minor and stepping each as one hexadecimal digit
(``runtime/hsa-runtime/core/runtime/isa.cpp`` line 294 ``"gfx90a", 9, 0, 10``, line 324
``"gfx942", 9, 4, 2``, line 352 ``"gfx1100", 11, 0, 0``, line 360 ``"gfx1201", 12, 0, 1``;
ROCR-Runtime at c7785a6d).

Every read is bounded (:func:`colabenv._util.files.read_limited`, a byte and a line limit); a
node that cannot be read or says nothing sensible is a note, never an exception.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from colabenv._util.files import FileProblem, read_limited
from colabenv.host.probe import list_dir
from colabenv.models import KfdGpu, KfdReport

KFD_NODES = Path("sys/class/kfd/kfd/topology/nodes")
MAX_PROPERTIES_BYTES = 64 * 1024
"""A ``properties`` file is one page (4 KiB, 64 KiB on some aarch64 kernels): more is no KFD's."""
MAX_PROPERTIES_LINES = 256
"""A node has about 40 properties; a file of more lines is not one."""
MAX_NODES = 1024
"""Nodes looked at: 64 are an 8-GPU host in CPX mode with its CPUs; more is no real topology."""
MAX_MEM_BANKS = 64
MAX_PROPERTY_VALUE = 2**64 - 1
"""The kernel prints each property as an unsigned 64-bit number at most."""
FRAME_BUFFER_HEAPS = (1, 2)
"""``heap_type`` of a GPU's own memory: ``HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC`` and ``_PRIVATE``
(0 is system memory, the CPU node's bank)."""


def gfx_name(version: int) -> str | None:
    """``gfx_target_version`` as the ISA name (90402 -> ``gfx942``, 90010 -> ``gfx90a``,
    110000 -> ``gfx1100``, 120001 -> ``gfx1201``, 90500 -> ``gfx950``); None for 0 (a CPU
    node) and for a value no ISA name spells (a minor or stepping past one hexadecimal digit)."""
    if not 10000 <= version < 1_000_000:
        return None
    major, minor, stepping = (version // 10000) % 100, (version // 100) % 100, version % 100
    if minor > 15 or stepping > 15:
        return None
    return f"gfx{major}{minor:x}{stepping:x}"


def parse_properties(text: str, where: str) -> tuple[dict[str, int], list[str]]:
    """The ``key value`` lines of a KFD ``properties`` file, and a note per line that is not
    one (a value with letters, a line of three words); a key given twice keeps its first value."""
    values: dict[str, int] = {}
    notes: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2 or not parts[1].isascii() or not parts[1].isdigit():
            notes.append(f"{where} line {number}: {line[:60]!r} is not 'name number'")
            continue
        key, value = parts[0], int(parts[1])
        if value > MAX_PROPERTY_VALUE:
            notes.append(f"{where} line {number}: {key} {value} is past 64 bits")
            continue
        values.setdefault(key, value)
    return values, notes


def read_properties(path: Path, where: str) -> tuple[dict[str, int] | None, list[str]]:
    """A ``properties`` file read within its bounds; None (and the reason) when it cannot be."""
    try:
        data = read_limited(path, MAX_PROPERTIES_BYTES)
    except FileProblem as problem:
        return None, [f"{where}: {problem}"]
    text = data.decode("utf-8", errors="replace")
    if text.count("\n") > MAX_PROPERTIES_LINES:
        return None, [f"{where}: more than {MAX_PROPERTIES_LINES} lines; not a KFD properties file"]
    return parse_properties(text, where)


def read_kfd_gpus(root: Path = Path("/"), lister: Callable[[Path], Sequence[str]] = list_dir) -> KfdReport:
    """The GPU nodes under ``root``'s KFD topology, in node order, with notes."""
    folder = root / KFD_NODES
    names = sorted((n for n in lister(folder) if n.isascii() and n.isdigit()), key=int)
    notes: list[str] = []
    if not names:
        notes.append(f"{'/' / KFD_NODES}: no KFD nodes (no amdgpu driver with KFD on this host)")
    if len(names) > MAX_NODES:
        notes.append(f"KFD: {len(names)} nodes; the first {MAX_NODES} are read")
    gpus = [gpu for name in names[:MAX_NODES] if (gpu := _node(folder, int(name), lister, notes))]
    return KfdReport(tuple(gpus), tuple(notes))


def _node(
    folder: Path, node: int, lister: Callable[[Path], Sequence[str]], notes: list[str]
) -> KfdGpu | None:
    where = f"KFD node {node}"
    values, problems = read_properties(folder / str(node) / "properties", where)
    notes.extend(problems)
    if values is None or values.get("simd_count") == 0 or values.get("gfx_target_version") == 0:
        return None  # unreadable (noted), or a CPU node
    if "simd_count" not in values and "gfx_target_version" not in values:
        notes.append(f"{where}: neither simd_count nor gfx_target_version: not taken for a GPU")
        return None
    version = values.get("gfx_target_version")
    name = gfx_name(version) if version is not None else None
    if version is None:
        notes.append(
            f"{where}: no gfx_target_version (a kernel older than the property): architecture unknown"
        )
    elif name is None:
        notes.append(f"{where}: gfx_target_version {version} names no gfx architecture")
    return KfdGpu(
        node=node,
        gfx=name,
        gfx_target_version=version,
        drm_render_minor=values.get("drm_render_minor"),
        vram_bytes=_vram(folder / str(node) / "mem_banks", where, lister, notes),
        unique_id=values.get("unique_id"),
        location_id=values.get("location_id"),
        domain=values.get("domain"),
        device_id=values.get("device_id"),
    )


def _vram(banks: Path, where: str, lister: Callable[[Path], Sequence[str]], notes: list[str]) -> int | None:
    total: int | None = None
    names = [n for n in lister(banks) if n.isascii() and n.isdigit()]
    for name in sorted(names, key=int)[:MAX_MEM_BANKS]:
        values, problems = read_properties(banks / name / "properties", f"{where} mem_banks/{name}")
        notes.extend(problems)
        if values is not None and values.get("heap_type") in FRAME_BUFFER_HEAPS and "size_in_bytes" in values:
            total = (total or 0) + values["size_in_bytes"]
    return total
