"""The CPU alone: a target with no NVIDIA GPU and no TPU (``--cpu``) takes the CPU builds. On the
host it is the last kind asked, and it answers whatever the host: ``--cpu``, or no other kind
found."""

from __future__ import annotations

from collections.abc import Sequence

from colabenv.accelerators import base
from colabenv.models import (
    Accelerator,
    Catalog,
    CpuTarget,
    FrameworkRequest,
    Profile,
    Target,
    TargetOverrides,
    Variant,
)


class Cpu(base.OwnBuilds, base.DriverFields):
    """The CPU as an :class:`~colabenv.accelerators.base.AcceleratorKind`."""

    kind = Accelerator.CPU
    traits = base.Traits(named="the CPU alone")
    contradicted = "the target has no NVIDIA driver or CUDA"

    def detected(self, wanted: TargetOverrides, host: base.HostReadings, notes: list[str]) -> base.Detected:
        return base.Detected(CpuTarget())

    def rejection(
        self, variant: Variant, request: FrameworkRequest, target: Target, catalog: Catalog
    ) -> str | None:
        if variant.rocm is not None and request.variant != variant.name:
            return base.NOT_ASKED
        return None if variant.is_cpu else f"{variant.name} needs a GPU; the target has none"

    def fully_supported(self, variant: Variant, target: Target, catalog: Catalog) -> bool:
        return True

    def why(self, variant: Variant, fully_supported: bool, target: Target, catalog: Catalog) -> str:
        return "CPU build: the target has no GPU"

    def warnings(
        self, chosen: Sequence[base.ChosenBuild], profile: Profile, target: Target, catalog: Catalog
    ) -> list[str]:
        return [NO_GPU_REQUIRED] if profile.verify.require_gpu else []

    def describe(self, target: Target) -> str:
        return "no GPU"

    def shown(self, target: Target) -> str:
        return "cpu (no NVIDIA GPU or TPU)"

    def lacks(self, target: Target) -> str:
        return "no GPU"

    def device_checks(
        self, choices: Sequence[base.BuiltFor], required_driver: str | None
    ) -> base.DeviceChecks:
        """Nothing: the CPU builds need no driver."""
        return base.NO_DEVICE_CHECKS

    verify_checks = base.VerifyChecks(base.DeviceSmoke.CPU)


NO_GPU_REQUIRED = "the profile requires a GPU (verify.require_gpu) but the target has none"
"""The warning of a target without a GPU (the CPU's, a TPU's) for a profile that requires one."""

CPU = Cpu()
