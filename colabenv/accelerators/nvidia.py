"""NVIDIA GPUs: a build runs where the driver reaches its CUDA major's floor, each GPU has its
kernels (machine code or PTX) and the NVIDIA components it pins have kernels for every GPU;
the driver's full support of its CUDA minor line is preferred (docs/architecture.md, "The
resolution rules")."""

from __future__ import annotations

from collections.abc import Sequence

from packaging.version import Version

from colabenv.accelerators.base import (
    NOT_ASKED,
    ChosenBuild,
    ClusterGpus,
    DeviceChecks,
    DeviceSmoke,
    DriverFields,
    OwnBuilds,
    Traits,
    VerifyChecks,
)
from colabenv.accelerators.eligibility import (
    UNCONFIRMED_HINT,
    floor_met,
    fully_met,
    unconfirmed_fuller,
    uncovered,
)
from colabenv.catalog.components import bounds, pulled_in
from colabenv.models import (
    Accelerator,
    Catalog,
    FrameworkChoice,
    FrameworkRequest,
    Profile,
    Target,
    Variant,
    format_driver,
)


class Nvidia(OwnBuilds, DriverFields):
    """NVIDIA GPUs as an :class:`~colabenv.accelerators.base.AcceleratorKind`."""

    kind = Accelerator.NVIDIA
    traits = Traits(
        gpu=True,
        cuda=True,
        tpu_runtime=False,
        # NVIDIA's device plugin's resource; GPU Feature Discovery's label of a node's GPU
        # (NVML's device name, spaces as '-'): NVIDIA/k8s-device-plugin, internal/lm/resource.go
        cluster_gpus=ClusterGpus("nvidia", "nvidia.com/gpu", "nvidia.com/gpu.product", "NVIDIA GPUs"),
    )
    contradicted = "the target has an NVIDIA driver"

    def rejection(
        self, variant: Variant, request: FrameworkRequest, target: Target, catalog: Catalog
    ) -> str | None:
        if variant.is_cpu:
            return None if request.variant == variant.name else NOT_ASKED
        if variant.cuda is None:
            asked = request.variant == variant.name
            return f"{variant.name} is a ROCm build; the target's GPUs are NVIDIA" if asked else NOT_ASKED
        if not floor_met(variant, target, catalog):
            floor = catalog.floor_driver(variant.cuda)
            host = format_driver(target.driver) if target.driver is not None else f"CUDA {target.cuda}"
            shown = format_driver(floor) if floor is not None else "an unknown floor"
            return f"{variant.name} needs driver >= {shown} (host {host})"
        missing = uncovered(variant, target.compute_capabilities)
        if missing:
            caps = ", ".join(c.sm for c in missing)
            return f"{variant.name} has no kernels for {caps}"
        return component_rejection(variant, target, catalog)

    def fully_supported(self, variant: Variant, target: Target, catalog: Catalog) -> bool:
        return variant.is_cpu or fully_met(variant, target, catalog)

    def why(self, variant: Variant, fully_supported: bool, target: Target, catalog: Catalog) -> str:
        if variant.is_cpu:
            return "CPU build requested"
        assert variant.cuda is not None
        parts = []
        if target.driver is not None:
            driver = format_driver(target.driver)
            floor = _driver_text(catalog.floor_driver(variant.cuda))
            toolkit = _driver_text(catalog.toolkit_driver(variant.cuda))
            if fully_supported:
                parts.append(f"{variant.name}: driver {driver} >= {toolkit} (CUDA {variant.cuda})")
            else:
                parts.append(
                    f"{variant.name}: driver {driver} >= floor {floor} only "
                    f"(minor-version compatibility; CUDA {variant.cuda} wants {toolkit})"
                )
        else:
            parts.append(f"{variant.name}: CUDA {variant.cuda} within the driver's {target.cuda}")
        if target.compute_capabilities:
            caps = ", ".join(c.sm for c in target.compute_capabilities)
            parts.append(f"kernels for {caps}")
        return "; ".join(parts)

    def warnings(
        self, chosen: Sequence[ChosenBuild], profile: Profile, target: Target, catalog: Catalog
    ) -> list[str]:
        warnings: list[str] = []
        if not target.compute_capabilities and any(not build.variant.is_cpu for build in chosen):
            warnings.append("GPU compute capability unknown: arch lists were not checked")
        return warnings

    def build_warnings(self, build: ChosenBuild, target: Target, catalog: Catalog) -> list[str]:
        label, variant = build.label, build.variant
        warnings: list[str] = []
        if variant.cuda is not None and not build.fully_supported:
            warnings.append(
                f"{label} {variant.name} runs on the driver by minor-version compatibility "
                f"only; code that JIT-compiles PTX may fail (update the driver to "
                f">= {_driver_text(catalog.toolkit_driver(variant.cuda))} for full support)"
                + _fuller_hint(unconfirmed_fuller(build.release, target, catalog))
            )
        for cap in target.compute_capabilities:
            if variant.archs and not any(a.covers(cap) and not a.ptx for a in variant.archs):
                warnings.append(
                    f"{label} {variant.name} has only PTX for {cap.sm}: "
                    "the first start JIT-compiles kernels (slow)"
                )
        return warnings

    def describe(self, target: Target) -> str:
        caps = ", ".join(str(c) for c in target.compute_capabilities) or "unknown"
        driver = format_driver(target.driver) if target.driver else "unknown"
        return f"driver {driver}, CUDA {target.cuda or 'unknown'}, compute capability {caps}"

    def shown(self, target: Target) -> str:
        return str(self.kind)

    def lacks(self, target: Target) -> str:
        return ""

    def device_checks(self, choices: Sequence[FrameworkChoice], required_driver: str | None) -> DeviceChecks:
        """The driver floor of the CUDA builds chosen (the highest of their CUDA majors' floors
        and the CUDA packages' own, as the resolution or the lock records it)."""
        return DeviceChecks(driver=required_driver)

    verify_checks = VerifyChecks(DeviceSmoke.GPU, gpus=True, cuda=True)


def _driver_text(version: Version | None) -> str:
    return format_driver(version) if version is not None else "unknown"


def _fuller_hint(names: Sequence[str]) -> str:
    if not names:
        return ""
    builds = " and ".join(names)
    return f"; its {builds} build, which the driver fully supports, is unconfirmed: {UNCONFIRMED_HINT}"


def component_rejection(variant: Variant, target: Target, catalog: Catalog) -> str | None:
    """Why a build's NVIDIA component pins leave a GPU without kernels; None when they do not.
    A CUDA build pulls in only components of its own CUDA major (a cu12 wheel never a -cu13
    one), so the others' bounds are not looked for in its pins."""
    cuda = variant.cuda
    held = {
        name: bound
        for name, bound in bounds(catalog.components, target.compute_capabilities).items()
        if cuda is None or bound.component.cuda_major == cuda.major
    }
    if not held:
        return None
    for item in pulled_in(variant.pin_texts, catalog.components, held):
        found = held[item.component.name]
        if found.admits_any(item.specifier):
            continue
        gpus = ", ".join(g.sm for g in found.gpus)
        if not found.possible:
            return (
                f"{variant.name} pins {item.pin}: no {item.component.name} release has "
                f"kernels for all of {gpus}"
            )
        return (
            f"{variant.name} pins {item.pin}, which has no kernels for {gpus}; {found.requirement} has them"
        )
    return None


NVIDIA = Nvidia()
