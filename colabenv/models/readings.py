"""What the host's sources report, as :mod:`colabenv.host` reads it and the accelerator kinds
(:class:`colabenv.accelerators.base.HostReadings`) take it: the NVIDIA GPU report, the TPU
report, the GPU nodes of the KFD topology, a version the host states (the installed ROCm's, the
amdgpu driver's), and what ``rocminfo`` and ``amd-smi`` said. Nothing here reads the host."""

from __future__ import annotations

from packaging.version import Version

from colabenv.models.frozen import model
from colabenv.models.target import Gpu, TpuTarget


@model
class GpuReport:
    """What the GPU sources found. ``driver`` None means no usable NVIDIA driver."""

    driver: Version | None
    cuda: Version | None
    gpus: tuple[Gpu, ...]
    notes: tuple[str, ...]


@model
class TpuReport:
    """What the TPU sources found: the TPU (None: not a TPU host) and what was seen."""

    tpu: TpuTarget | None
    notes: tuple[str, ...]


@model
class KfdGpu:
    """One GPU node of the KFD topology.

    ``gfx`` is None where the node states no usable ``gfx_target_version`` (a kernel older
    than the property, or a value that decodes to no name): the notes say why.
    ``vram_bytes``: the node's frame-buffer memory banks together (None without any);
    ``location_id`` is the PCI bus, device and function (``bus << 8 | device << 3 | function``)
    and ``domain`` the PCI domain; ``drm_render_minor`` names ``/dev/dri/renderD<minor>``.
    """

    node: int
    gfx: str | None
    gfx_target_version: int | None
    drm_render_minor: int | None
    vram_bytes: int | None
    unique_id: int | None
    location_id: int | None
    domain: int | None
    device_id: int | None

    @property
    def pci_address(self) -> str | None:
        """``0000:03:00.0``, as ``/sys/bus/pci/devices`` names the GPU; None without a location."""
        if self.location_id is None:
            return None
        bus, device, function = self.location_id >> 8, (self.location_id >> 3) & 0x1F, self.location_id & 7
        return f"{self.domain or 0:04x}:{bus & 0xFF:02x}:{device:02x}.{function}"


@model
class KfdReport:
    """The GPU nodes found (CPU nodes left out) and what could not be read, one line each."""

    gpus: tuple[KfdGpu, ...]
    notes: tuple[str, ...]

    @property
    def gfx(self) -> tuple[str, ...]:
        """Each distinct architecture, in node order (the list ``--gfx`` takes)."""
        return tuple(dict.fromkeys(g.gfx for g in self.gpus if g.gfx is not None))


@model
class VersionReading:
    """A version the host states, or None with the reason it could not be read."""

    version: Version | None
    reason: str | None = None
    source: str | None = None


@model
class RocmAgent:
    """A GPU agent as ``rocminfo`` lists it: its gfx name, KFD node and marketing name."""

    gfx: str
    node: int | None
    marketing_name: str
    uuid: str | None


@model
class RocminfoReport:
    """``rocminfo``'s GPU agents and the driver version of its first line, where it states one."""

    agents: tuple[RocmAgent, ...]
    driver: Version | None
    problems: tuple[str, ...]


@model
class AmdSmiReport:
    """``amd-smi version``'s ROCm version and ``amd-smi static --asic``'s gfx per GPU; ``gfx``
    None where ``static --asic`` was not run or failed."""

    rocm: Version | None
    gfx: tuple[str, ...] | None
    problems: tuple[str, ...]


@model
class RocmToolsReport:
    """What the installed ROCm tools said; None for a tool not installed, not asked or that
    failed. ``rocminfo_notes`` and ``amd_smi_notes``: why each said nothing, or what of its
    output could not be read, one line each."""

    rocminfo: RocminfoReport | None
    amd_smi: AmdSmiReport | None
    rocminfo_notes: tuple[str, ...] = ()
    amd_smi_notes: tuple[str, ...] = ()

    @property
    def notes(self) -> tuple[str, ...]:
        """Every tool's notes, rocminfo's first."""
        return (*self.rocminfo_notes, *self.amd_smi_notes)
