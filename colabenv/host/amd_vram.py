"""AMD GPU memory in use, as the amdgpu driver states it in sysfs, for ``watch`` (as NVML is for
NVIDIA): ``sys/class/drm/card<N>/device/mem_info_vram_used`` and ``mem_info_vram_total``, one
number of bytes each (linux ``drivers/gpu/drm/amd/amdgpu/amdgpu_vram_mgr.c``,
``amdgpu_mem_info_vram_used_show()``).

Each card is tied to its KFD node (:mod:`colabenv.host.kfd`) by the render node its DRM device
also has (``device/drm/renderD<minor>``, the KFD node's ``drm_render_minor``), else by the PCI
address the ``device`` link resolves to (the KFD node's ``domain`` and ``location_id``). Every
file is read within a small bound; a card that cannot be read is left out with a note.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from colabenv._util.files import FileProblem, read_limited
from colabenv.host.probe import list_dir
from colabenv.models import KfdGpu
from colabenv.models.frozen import model

DRM_CLASS = Path("sys/class/drm")
MAX_NUMBER_BYTES = 64
MAX_CARDS = 256
MAX_VRAM_BYTES = 1 << 50
"""1 PiB: past any GPU's memory; a larger figure is no size."""


@model
class AmdVramSample:
    """One card's memory at one moment: bytes in use and in all; ``node`` the KFD node it is
    (None where no KFD node matched it)."""

    card: str
    node: int | None
    used_bytes: int
    total_bytes: int


@model
class AmdVramReading:
    samples: tuple[AmdVramSample, ...]
    notes: tuple[str, ...]


def _number(path: Path) -> int | None:
    try:
        text = read_limited(path, MAX_NUMBER_BYTES).decode("ascii", errors="replace").strip()
    except FileProblem:
        return None
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_VRAM_BYTES:
        return None
    return int(text)


def _render_minors(device: Path, lister: Callable[[Path], Sequence[str]]) -> set[int]:
    names = lister(device / "drm")
    return {
        int(n[len("renderD") :]) for n in names if n.startswith("renderD") and n[len("renderD") :].isdigit()
    }


def _pci_address(device: Path) -> str | None:
    name = os.path.basename(os.path.realpath(device))
    return name if len(name) == 12 and name[4] == ":" and name[7] == ":" and name[10] == "." else None


def _node_of(device: Path, gpus: Sequence[KfdGpu], lister: Callable[[Path], Sequence[str]]) -> int | None:
    minors = _render_minors(device, lister)
    for gpu in gpus:
        if gpu.drm_render_minor is not None and gpu.drm_render_minor in minors:
            return gpu.node
    address = _pci_address(device)
    for gpu in gpus:
        if address is not None and gpu.pci_address == address:
            return gpu.node
    return None


def read_amd_vram(
    root: Path = Path("/"), gpus: Sequence[KfdGpu] = (), lister: Callable[[Path], Sequence[str]] = list_dir
) -> AmdVramReading:
    """A sample of each DRM card that states its VRAM use (AMD's do; others have no such file)."""
    samples: list[AmdVramSample] = []
    notes: list[str] = []
    cards = [n for n in lister(root / DRM_CLASS) if n.startswith("card") and n[4:].isdigit()]
    for card in sorted(cards, key=lambda n: int(n[4:]))[:MAX_CARDS]:
        device = root / DRM_CLASS / card / "device"
        if not (device / "mem_info_vram_used").exists():
            continue
        used = _number(device / "mem_info_vram_used")
        total = _number(device / "mem_info_vram_total")
        if used is None or total is None or used > total:
            notes.append(f"{card}: mem_info_vram_used/mem_info_vram_total unreadable or not byte counts")
            continue
        samples.append(AmdVramSample(card, _node_of(device, gpus, lister), used, total))
    return AmdVramReading(tuple(samples), tuple(notes))
