"""NVIDIA GPUs: a build runs where the driver reaches its CUDA major's floor, each GPU has its
kernels (machine code or PTX) and the NVIDIA components it pins have kernels for every GPU;
the driver's full support of its CUDA minor line is preferred (docs/architecture.md, "The
resolution rules"). On the host: the driver, its CUDA and the GPUs the NVIDIA sources report,
each replaced by ``--driver``, ``--cuda`` and ``--compute-capability``."""

from __future__ import annotations

from collections.abc import Sequence

from packaging.version import Version

from colabenv.accelerators import base
from colabenv.accelerators.eligibility import (
    UNCONFIRMED_HINT,
    build_floor,
    floor_met,
    fully_met,
    unconfirmed_fuller,
    uncovered,
)
from colabenv.errors import TargetError
from colabenv.models import (
    Accelerator,
    Catalog,
    ComputeCapability,
    FrameworkRequest,
    GpuReport,
    NvidiaTarget,
    PackageBuild,
    Profile,
    Target,
    TargetOverrides,
    Variant,
    archs_cover,
    format_driver,
)


class Nvidia(base.OwnBuilds, base.DriverFields):
    """NVIDIA GPUs as an :class:`~colabenv.accelerators.base.AcceleratorKind`."""

    kind = Accelerator.NVIDIA
    traits = base.Traits(
        named="NVIDIA GPUs",
        gpu=True,
        cuda=True,
        # NVIDIA's device plugin's resource; GPU Feature Discovery's label of a node's GPU
        # (NVML's device name, spaces as '-'): NVIDIA/k8s-device-plugin, internal/lm/resource.go
        cluster_gpus=base.ClusterGpus("nvidia", "nvidia.com/gpu", "nvidia.com/gpu.product"),
    )
    contradicted = "the target has an NVIDIA driver"

    def detected(
        self, wanted: TargetOverrides, host: base.HostReadings, notes: list[str]
    ) -> base.Detected | None:
        report = _report(wanted, host)
        notes.extend(report.notes)
        if wanted.cpu:
            return None
        driver, cuda, capabilities = _overridden(wanted, report, host, notes)
        if driver is None and cuda is None:
            return None
        return base.Detected(NvidiaTarget(driver, cuda, capabilities), report.gpus)

    def rejection(
        self, variant: Variant, request: FrameworkRequest, target: Target, catalog: Catalog
    ) -> str | None:
        if variant.is_cpu:
            return None if request.variant == variant.name else base.NOT_ASKED
        if variant.cuda is None:
            asked = request.variant == variant.name
            return (
                f"{variant.name} is a ROCm build; the target's GPUs are NVIDIA" if asked else base.NOT_ASKED
            )
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
        self, chosen: Sequence[base.ChosenBuild], profile: Profile, target: Target, catalog: Catalog
    ) -> list[str]:
        warnings: list[str] = []
        if not target.compute_capabilities and any(not build.variant.is_cpu for build in chosen):
            warnings.append("GPU compute capability unknown: arch lists were not checked")
        return warnings

    def build_warnings(self, build: base.ChosenBuild, target: Target, catalog: Catalog) -> list[str]:
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

    def package_rejection(self, build: PackageBuild, target: Target, catalog: Catalog) -> str | None:
        """The driver reaches the build's CUDA major's floor (or its project's ``min_driver``),
        else the driver's CUDA its major; and its arch list covers every GPU. A ROCm build is
        passed over unlisted."""
        if build.cuda is None:
            return base.NOT_ASKED
        floor = build_floor(build, catalog)
        if target.driver is not None:
            if floor is None or target.driver < floor:
                shown = format_driver(floor) if floor is not None else "an unknown floor"
                needs = (
                    f"{build.name}: its project documents driver >= {shown}"
                    if build.min_driver is not None and floor == build.min_driver
                    else f"{build.name} is built for CUDA {build.cuda.major}, which needs driver >= {shown}"
                )
                return f"{needs} (host {format_driver(target.driver)})"
        elif target.cuda is not None and build.cuda.major > target.cuda.major:
            return f"{build.name} is built for CUDA {build.cuda.major}; the driver runs CUDA {target.cuda}"
        missing = [cap.sm for cap in target.compute_capabilities if not archs_cover(build.archs, cap)]
        if missing:
            need = min(arch.capability for arch in build.archs)
            return f"no kernels for {', '.join(missing)} (needs {need.major}.{need.minor}+)"
        return None

    def no_package_build(self, name: str, target: Target) -> str:
        return (
            f"{name} has no CUDA build in the catalog (the target has NVIDIA GPUs: {self.describe(target)})"
        )

    def package_said(self, build: PackageBuild, target: Target, catalog: Catalog) -> tuple[str, ...]:
        floor = build_floor(build, catalog)
        driver = target.driver
        runs = f" (driver {format_driver(driver)} >= {format_driver(floor)})" if driver and floor else ""
        gpus = [c.sm for c in target.compute_capabilities]
        return (
            f"{build.name}: CUDA {build.cuda}{runs}",
            *([f"kernels for {', '.join(gpus)}"] if gpus else []),
        )

    def device_checks(
        self, choices: Sequence[base.BuiltFor], required_driver: str | None
    ) -> base.DeviceChecks:
        """The driver floor of the CUDA builds chosen (the highest of their CUDA majors' floors
        and the CUDA packages' own, as the resolution or the lock records it)."""
        return base.DeviceChecks(driver=required_driver)

    verify_checks = base.VerifyChecks(base.DeviceSmoke.GPU, gpus=True, cuda=True)


def _driver_text(version: Version | None) -> str:
    return format_driver(version) if version is not None else "unknown"


def _fuller_hint(names: Sequence[str]) -> str:
    if not names:
        return ""
    builds = " and ".join(names)
    return f"; its {builds} build, which the driver fully supports, is unconfirmed: {UNCONFIRMED_HINT}"


def _report(wanted: TargetOverrides, host: base.HostReadings) -> GpuReport:
    """The NVIDIA driver and GPUs, unless the overrides say there is nothing to look for."""
    if wanted.cpu:
        return GpuReport(None, None, (), ("--cpu: GPU detection skipped",))
    if wanted.rocm is not None:
        given = [wanted.origin(f) for f, v in (("rocm", wanted.rocm.rocm), ("gfx", wanted.rocm.gfx)) if v]
        named = " and ".join(given) or wanted.origin("rocm")
        return GpuReport(None, None, (), (f"{named} given: NVIDIA GPU detection skipped",))
    if wanted.driver is not None and wanted.compute_capabilities:
        return GpuReport(
            None, None, (), ("GPU detection skipped: driver and compute capabilities were given",)
        )
    return host.nvidia_gpus()


def _in_table(found: Version | None, wanted: TargetOverrides, key: str, shown: str, missing: str) -> Version:
    """What the catalog's driver table gives for the ``key`` given as ``shown``; none is that
    value refused, saying why (``missing``)."""
    if found is None:
        raise wanted.problem(key, f"{shown}:", missing)
    return found


def _overridden(
    wanted: TargetOverrides, report: GpuReport, host: base.HostReadings, notes: list[str]
) -> tuple[Version | None, Version | None, tuple[ComputeCapability, ...]]:
    """The driver, CUDA and compute capabilities: the flags' over the host's, a driver's CUDA
    (or a CUDA's driver) from the catalog's driver table where only one is given."""
    load = host.driver_table
    detected_caps = tuple(sorted({gpu.compute_capability for gpu in report.gpus}))
    driver, cuda = report.driver, report.cuda
    driver_flag, cuda_flag = wanted.origin("driver"), wanted.origin("cuda")
    if wanted.driver is not None:
        driver, cuda = wanted.driver, wanted.cuda
        if cuda is None:
            shown = format_driver(driver)
            missing = f"older than every CUDA in the catalog's driver table; give {cuda_flag} too"
            cuda = _in_table(load().max_cuda_for_driver(driver), wanted, "driver", shown, missing)
            notes.append(f"max CUDA {cuda} derived from {driver_flag} {shown} (catalog driver table)")
    elif wanted.cuda is not None:
        cuda = wanted.cuda
        if driver is None:
            missing = f"not in the catalog's driver table; give {driver_flag} too"
            driver = _in_table(load().toolkit_driver(cuda), wanted, "cuda", str(cuda), missing)
            notes.append(
                f"driver {format_driver(driver)} assumed for {cuda_flag} {cuda} (its toolkit driver)"
            )
    if wanted.cuda is not None and driver is not None:
        supported = cuda_conflict(wanted.cuda, driver, load())
        if supported is not None:
            if wanted.driver is not None:
                detail = (
                    f"conflicts with {driver_flag} {format_driver(driver)}, which supports CUDA"
                    f" {supported} (catalog driver table): give one of them; without {cuda_flag} the"
                    " CUDA comes from the driver"
                )
            else:
                detail = (
                    f"conflicts with the detected driver {format_driver(driver)}, which supports"
                    f" CUDA {supported}: drop {cuda_flag}, or give --driver for the host you mean"
                )
            raise wanted.problem("cuda", wanted.cuda, detail)
    capabilities = wanted.compute_capabilities or detected_caps
    if wanted.compute_capabilities and driver is None:
        raise TargetError(
            f"{wanted.origin('compute_capability')} given but no NVIDIA driver was detected;"
            " give --driver or --cuda"
        )
    if driver is not None and not capabilities:
        notes.append(
            "no compute capability known (no GPU listed, none given):"
            " every GPU architecture is assumed supported"
        )
    return driver, cuda, capabilities


def cuda_conflict(cuda: Version, driver: Version, catalog: Catalog) -> Version | None:
    """The CUDA ``driver`` supports, when ``cuda`` (given as the newest it supports) cannot be:
    a major the driver is too old for, or a major below the one it supports (which the resolver
    could not honour: it judges builds by the driver). None when they agree or the catalog's
    driver table cannot tell (a driver newer than it knows). Minor versions within the driver's
    major are let be: a driver may report one minor more than the table's release drivers say.
    """
    supported = catalog.max_cuda_for_driver(driver)
    if supported is None:
        return None
    if cuda.major < supported.major:
        return supported
    if cuda.major > supported.major and any(
        line.major <= cuda.major and driver < line.floor_driver for line in catalog.major_lines
    ):
        return supported
    return None


def component_rejection(variant: Variant, target: Target, catalog: Catalog) -> str | None:
    """Why a build's NVIDIA component pins leave a GPU without kernels; None when they do not.
    A CUDA build pulls in only components of its own CUDA major (a cu12 wheel never a -cu13
    one), so the others' bounds are not looked for in its pins. The arch lists are those of the
    target's platform's wheels (NVIDIA's aarch64 wheels carry other lists than the x86-64 ones).
    The component rules are imported here, where a build is judged: ``detect`` loads this
    module and needs none."""
    from colabenv.catalog.components import bounds, pulled_in

    cuda = variant.cuda
    facts = catalog.components.for_platform(target.platform)
    held = {
        name: bound
        for name, bound in bounds(facts, target.compute_capabilities).items()
        if cuda is None or bound.component.cuda_major == cuda.major
    }
    if not held:
        return None
    for item in pulled_in(variant.pin_texts, facts, held):
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
