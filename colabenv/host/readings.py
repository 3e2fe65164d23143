"""The host's readings the accelerator kinds ask for (:class:`~colabenv.accelerators.base.HostReadings`),
over a :class:`~colabenv.host.probe.HostProbe`: each source's module is imported and read only
when a kind asks (the NVIDIA sources on a host the TPU kind did not claim, the KFD topology
where no NVIDIA driver answered, the amdgpu driver, ``rocminfo`` and ``amd-smi`` where the KFD
topology has AMD GPUs)."""

from __future__ import annotations

from collections.abc import Callable

from colabenv.host.probe import HostProbe
from colabenv.models import (
    Catalog,
    GpuReport,
    KfdReport,
    RocmToolsReport,
    TpuFacts,
    TpuReport,
    VersionReading,
)
from colabenv.models.frozen import record


@record
class ProbeReadings:
    """The readings of ``probe``'s host; ``load_driver_table`` and ``load_tpu_facts`` give the
    catalog's driver table and TPU facts when a reading needs them."""

    probe: HostProbe
    load_driver_table: Callable[[], Catalog]
    load_tpu_facts: Callable[[], TpuFacts]

    def tpu(self) -> TpuReport:
        from colabenv.host.tpu import probe_tpu

        return probe_tpu(self.probe, self.load_tpu_facts)

    def nvidia_gpus(self) -> GpuReport:
        from colabenv.host.gpu import probe_gpus

        return probe_gpus(self.probe, self.load_driver_table)

    def amd_gpus(self) -> KfdReport | None:
        if self.probe.list_dir is None:
            return None
        from colabenv.host.kfd import read_kfd_gpus

        return read_kfd_gpus(self.probe.root, self.probe.list_dir)

    def rocm_version(self) -> VersionReading:
        from colabenv.host.rocm import read_rocm_version

        return read_rocm_version(self.probe.root, self.probe.environ)

    @property
    def cross_check(self) -> bool:
        return self.probe.cross_check

    def amdgpu_version(self) -> VersionReading:
        from colabenv.host.rocm import read_amdgpu_version

        return read_amdgpu_version(self.probe.root)

    def rocm_tools(self, *, gfx: bool, rocm: bool) -> RocmToolsReport:
        from colabenv.host.rocm import probe_rocm_tools

        return probe_rocm_tools(self.probe, gfx=gfx, rocm=rocm)

    def driver_table(self) -> Catalog:
        return self.load_driver_table()
