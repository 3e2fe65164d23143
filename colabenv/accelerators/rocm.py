"""AMD GPUs through ROCm: a build runs where the host's ROCm reaches the build's (as the driver's
CUDA caps a CUDA build) and its gfx list has every GPU's architecture; where only the kernel
driver is known (no ROCm userspace), the newest build with the GPUs' kernels is taken with a
warning. A CUDA build never runs here, and a CPU build is taken only when the profile names it:
a framework with no ROCm build is exit 3, naming it, never swapped for its CPU build
(docs/hosts.md). On the host: the GPUs of the KFD topology and the installed ROCm, each replaced
by ``--rocm`` and ``--gfx``."""

from __future__ import annotations

from collections.abc import Sequence

from colabenv.accelerators import base
from colabenv.models import (
    Accelerator,
    Catalog,
    FrameworkChoice,
    FrameworkRequest,
    Profile,
    Release,
    RocmTarget,
    Target,
    TargetOverrides,
    Variant,
)


class Rocm(base.OwnBuilds):
    """AMD GPUs as an :class:`~colabenv.accelerators.base.AcceleratorKind`."""

    kind = Accelerator.ROCM
    traits = base.Traits(
        gpu=False,
        cuda=False,
        tpu_runtime=False,
        hip=True,
        docker_devices="--device=/dev/kfd --device=/dev/dri --group-add video --group-add render",
        apptainer_devices="--rocm",
        # AMD's device plugin's resource, and its node labeller's label of a node's GPUs (their
        # PCI device ID in lowercase hex): ROCm/k8s-device-plugin, README.md and
        # cmd/k8s-node-labeller/main.go
        cluster_gpus=base.ClusterGpus("amd", "amd.com/gpu", "amd.com/gpu.device-id", "AMD GPUs"),
    )

    def detected(
        self, wanted: TargetOverrides, host: base.HostReadings, notes: list[str]
    ) -> base.Detected | None:
        if wanted.cpu:
            return None
        amd = _amd_gpus(wanted, host, notes)
        return base.Detected(amd) if amd is not None else None

    def offered_variants(self, release: Release, target: Target, catalog: Catalog) -> tuple[Variant, ...]:
        """The release's builds, its ROCm builds first, newest ROCm first: of those the host's
        ROCm reaches, the newest is taken."""
        own = sorted((v for v in release.variants if v.rocm is not None), key=_line, reverse=True)
        return (*own, *(v for v in release.variants if v.rocm is None))

    def rejection(
        self, variant: Variant, request: FrameworkRequest, target: Target, catalog: Catalog
    ) -> str | None:
        if variant.is_cpu:
            return None if request.variant == variant.name else base.NOT_ASKED
        if variant.rocm is None:
            return f"{variant.name} is a CUDA build; the target's GPUs are AMD (ROCm)"
        if target.rocm is not None and _line(variant) > (target.rocm.major, target.rocm.minor):
            return f"{variant.name} needs ROCm >= {_shown(variant)} (host ROCm {target.rocm})"
        missing = [gfx for gfx in target.gfx if gfx not in variant.gfx]
        if missing:
            return f"{variant.name} has no kernels for {', '.join(missing)}"
        return None

    def fully_supported(self, variant: Variant, target: Target, catalog: Catalog) -> bool:
        return variant.is_cpu or target.rocm is not None

    def why(self, variant: Variant, fully_supported: bool, target: Target, catalog: Catalog) -> str:
        if variant.is_cpu:
            return "CPU build requested"
        host = f"host ROCm {target.rocm}" if target.rocm is not None else "host ROCm not known"
        kernels = f"; kernels for {', '.join(target.gfx)}" if target.gfx else ""
        return f"{variant.name}: ROCm {_shown(variant)} ({host}){kernels}"

    def warnings(
        self, chosen: Sequence[base.ChosenBuild], profile: Profile, target: Target, catalog: Catalog
    ) -> list[str]:
        if not target.gfx and any(not build.variant.is_cpu for build in chosen):
            return ["AMD GPU architecture (gfx) unknown: gfx lists were not checked"]
        return []

    def build_warnings(self, build: base.ChosenBuild, target: Target, catalog: Catalog) -> list[str]:
        if build.variant.is_cpu or target.rocm is not None:
            return []
        return [
            f"{build.label} {build.variant.name}: the host's ROCm is not known (the kernel driver "
            f"alone): took the newest build with the GPUs' kernels; give --rocm X.Y"
        ]

    def describe(self, target: Target) -> str:
        rocm = f"ROCm {target.rocm}" if target.rocm is not None else "ROCm unknown"
        return f"AMD GPU, {rocm}, {', '.join(target.gfx) or 'gfx unknown'}"

    def shown(self, target: Target) -> str:
        return f"{self.kind} ({self.describe(target)})"

    def lacks(self, target: Target) -> str:
        return f"AMD GPUs ({self.describe(target)})"

    # A lock header's device fields

    def recorded_problem(self, recorded: base.RecordedDevice) -> str | None:
        if recorded.compute_capabilities:
            return f"compute-capabilities: {base.AMD_BESIDE_A_DRIVER}"
        return f"tpu: {base.TPU_BESIDE_A_DRIVER}" if recorded.tpu is not None else None

    def contradiction(self, written: Accelerator) -> str | None:
        return None if written is self.kind else "the target has AMD GPUs (ROCm)"

    def difference(self, recorded: base.RecordedDevice, now: base.RecordedDevice) -> str | None:
        if now.kind is not self.kind:
            return base.kind_changed(recorded, now)
        if recorded.rocm != now.rocm:
            return f"ROCm {recorded.rocm or 'unknown'} in the lock, {now.rocm or 'unknown'} now"
        if recorded.gfx != now.gfx:
            was, now_gfx = ", ".join(recorded.gfx) or "unknown", ", ".join(now.gfx) or "unknown"
            return f"gfx {was} in the lock, {now_gfx} now"
        return None

    def recorded_table(self, recorded: base.RecordedDevice) -> dict[str, object]:
        return (
            {"rocm": recorded.rocm, "gfx": list(recorded.gfx)}
            if recorded.rocm
            else {"gfx": list(recorded.gfx)}
        )

    # What the script's preflight and verify check

    def device_checks(
        self, choices: Sequence[FrameworkChoice], required_driver: str | None
    ) -> base.DeviceChecks:
        """The gfx every ROCm build chosen has kernels for (in the first build's order) and the
        newest ROCm they were built with; no NVIDIA driver. Nothing without a ROCm build (a CPU
        build named by the profile)."""
        builds = [(choice.rocm, choice.gfx) for choice in choices if choice.rocm is not None]
        if not builds:
            return base.NO_DEVICE_CHECKS
        gfx = tuple(g for g in builds[0][1] if all(g in kernels for _, kernels in builds))
        newest = max(rocm for rocm, _ in builds)
        return base.DeviceChecks(gfx=gfx, rocm=f"{newest.major}.{newest.minor}")

    verify_checks = base.VerifyChecks(base.DeviceSmoke.HIP)


def _amd_gpus(wanted: TargetOverrides, host: base.HostReadings, notes: list[str]) -> RocmTarget | None:
    """AMD GPUs: what ``--rocm``/``--gfx`` give, the rest read from the host (the KFD topology,
    the installed ROCm); None where neither names any."""
    given = wanted.rocm
    if given is not None and given.rocm is not None and given.gfx:
        return given
    found = host.amd_gpus()
    if found is None:
        return given
    gfx = found.gfx
    if given is None and not found.gpus:
        return None
    notes.extend(found.notes)
    rocm = given.rocm if given is not None else None
    if rocm is None:
        reading = host.rocm_version()
        rocm = reading.version
        if rocm is None:
            notes.append(f"ROCm version not known: {reading.reason}")
    if given is not None and given.gfx:
        gfx = given.gfx
    elif gfx:
        notes.append(f"AMD GPUs read from the KFD topology: {', '.join(gfx)}")
    return RocmTarget(rocm, gfx)


def _line(variant: Variant) -> tuple[int, int]:
    assert variant.rocm is not None
    return variant.rocm.major, variant.rocm.minor


def _shown(variant: Variant) -> str:
    major, minor = _line(variant)
    return f"{major}.{minor}"


ROCM = Rocm()
