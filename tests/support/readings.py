"""A stand-in for what the host says (``colabenv.accelerators.base.HostReadings``): canned
readings, each one a kind asks for recorded, and a host that fails the test when read at all
(``closed``), for a kind that must answer from its flags alone."""

from __future__ import annotations

from dataclasses import dataclass, field

from colabenv.catalog.load import shipped_driver_table
from colabenv.models import Catalog, GpuReport, KfdReport, RocmToolsReport, TpuReport, VersionReading

NO_TPU = TpuReport(None, ())
NO_NVIDIA = GpuReport(None, None, (), ("no NVIDIA driver",))
NO_KFD = KfdReport((), ())
NO_ROCM = VersionReading(None, "/opt/rocm/.info/version: absent", "/opt/rocm/.info/version")
NO_AMDGPU = VersionReading(None, "/sys/module/amdgpu/version: absent", "/sys/module/amdgpu/version")
NO_ROCM_TOOLS = RocmToolsReport(None, None, ("rocminfo: not installed",), ("amd-smi: not installed",))


@dataclass
class StandInReadings:
    """A host with nothing of any kind unless a reading is given; ``asked`` lists the readings
    taken, in order (the driver table, the catalog's, among them)."""

    tpu_report: TpuReport = NO_TPU
    gpu_report: GpuReport = NO_NVIDIA
    kfd: KfdReport | None = NO_KFD
    rocm: VersionReading = NO_ROCM
    amdgpu: VersionReading = NO_AMDGPU
    tools: RocmToolsReport = NO_ROCM_TOOLS
    closed: bool = False
    asked: list[str] = field(default_factory=list)
    cross_check: bool = True
    """As ``detect`` reads the host (the ROCm tools check the files); False as the other commands do."""

    def _read(self, name: str) -> None:
        self.asked.append(name)
        if self.closed and name != "driver_table":
            raise AssertionError(f"the host was read ({name}) where the flags say it all")

    def tpu(self) -> TpuReport:
        self._read("tpu")
        return self.tpu_report

    def nvidia_gpus(self) -> GpuReport:
        self._read("nvidia_gpus")
        return self.gpu_report

    def amd_gpus(self) -> KfdReport | None:
        self._read("amd_gpus")
        return self.kfd

    def rocm_version(self) -> VersionReading:
        self._read("rocm_version")
        return self.rocm

    def amdgpu_version(self) -> VersionReading:
        self._read("amdgpu_version")
        return self.amdgpu

    def rocm_tools(self, *, gfx: bool, rocm: bool) -> RocmToolsReport:
        self._read(f"rocm_tools(gfx={gfx}, rocm={rocm})")
        return self.tools

    def driver_table(self) -> Catalog:
        self._read("driver_table")
        return shipped_driver_table()
