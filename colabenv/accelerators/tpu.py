"""Google TPUs: each release's TPU build (``tpu.toml``) offered as its ``tpu`` variant beside
its own builds, checked against the target's platform (linux_x86_64 builds alone) and TPU
generation as CUDA builds are against compute capabilities; a CPU build is taken where the
profile asks for it, a CUDA build never. On the host: ``--tpu``/``COLABENV_TPU``, else the TPU
the host's PCI devices and device nodes show, looked for first (before the NVIDIA sources,
which a TPU host leaves unread)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from colabenv.accelerators import base
from colabenv.accelerators.cpu import NO_GPU_REQUIRED
from colabenv.accelerators.eligibility import platform_missing
from colabenv.errors import shown
from colabenv.models import (
    CATALOG_PLATFORM,
    MAX_TPU_CHIPS,
    TPU_NAME_PATTERN,
    TPU_TYPE_PATTERN,
    Accelerator,
    Catalog,
    Framework,
    FrameworkRequest,
    InstalledSet,
    Profile,
    Release,
    Source,
    Target,
    TargetOverrides,
    TpuBuild,
    TpuTarget,
    Variant,
)
from colabenv.models.frameworks import FACTS

TPU_VARIANT = "tpu"
"""The variant the resolver offers on a TPU target, built from ``tpu.toml``."""
_RUNTIME = FACTS[Framework.JAX].tpu_runtime[0]
TPU_PLATFORMS = (CATALOG_PLATFORM,)
"""The platforms of every TPU build: ``tpu.toml`` names none, and lists linux_x86_64 builds
alone. A TPU target on another platform is refused for it (exit 3), not as a target: TPU hosts
are not all x86-64 (docs/tpu.md)."""


def _tpu_variant(release: Release, catalog: Catalog) -> Variant:
    """The ``tpu`` variant of ``release``: the wheel of the build's base variant (torch's CPU
    wheel) or the framework's ``tpu`` extra, and what the build adds. Without a TPU build in
    the catalog, a variant whose ``tpu`` is None, which the resolver turns down saying why."""
    build = catalog.tpu.build(release.framework, release.version)
    if build is None:
        return Variant(
            TPU_VARIANT,
            None,
            None,
            None,
            None,
            (),
            (),
            None,
            Source("tpu.toml has no TPU build of this release"),
        )
    base = release.variant(build.base_variant) if build.base_variant is not None else None
    return Variant(
        name=TPU_VARIANT,
        cuda=None,
        index_url=base.index_url if base is not None else None,
        local_tag=base.local_tag if base is not None else None,
        extra=build.extra,
        archs=(),
        pin_texts=(),
        python=build.python,
        source=build.source,
        tpu=build,
        platforms=TPU_PLATFORMS,
    )


def _rejection(variant: Variant, request: FrameworkRequest, target: Target, catalog: Catalog) -> str | None:
    """Why ``variant`` cannot run on the TPU ``target``; None when it can. Asked only of the
    TPU build and of a build the profile names: a release's CPU build is taken there when
    asked for, its CUDA builds never."""
    if variant.name != TPU_VARIANT:
        if variant.is_cpu:
            return None
        built = any(b.framework is request.framework for b in catalog.tpu.builds)
        instead = (
            "leave the variant out for its TPU build" if built else catalog.tpu.missing(request.framework)
        )
        gpu = "an AMD GPU (ROCm)" if variant.rocm is not None else "an NVIDIA GPU"
        return f"{variant.name} needs {gpu}; the target is a TPU host ({instead})"
    if variant.tpu is None:
        return catalog.tpu.missing(request.framework)
    missing = platform_missing(variant.name, variant.platforms, target)
    if missing is not None:
        return missing
    assert target.tpu is not None
    generation = target.tpu.generation
    if generation is not None and generation not in variant.tpu.generations:
        return (
            f"tpu does not run on TPU {generation} (its TPU generations:"
            f" {', '.join(variant.tpu.generations)})"
        )
    return None


def _installed_variant(target: Target, variants: Sequence[Variant]) -> Variant | None:
    """The TPU build among ``variants`` when what it adds (the TPU runtime, torch's XLA
    package) is installed at the versions it needs; else None."""
    tpu = next((v for v in variants if v.tpu is not None), None)
    if tpu is not None and tpu.tpu is not None and _all_installed(tpu.tpu, target.installed):
        return tpu
    return None


def _all_installed(build: TpuBuild, installed: InstalledSet) -> bool:
    from packaging.requirements import Requirement  # the pin grammar, only where a build is judged

    for text in build.requires:
        requirement = Requirement(text)
        present = installed.version_of(requirement.name)
        if present is None or not requirement.specifier.contains(present, prereleases=True):
            return False
    return True


def _why(build: TpuBuild, target: Target) -> str:
    adds = ", ".join(build.requires)
    source = f" ({_RUNTIME} from the find-links page {build.find_links})" if build.find_links else ""
    tpu = target.tpu
    if tpu is None or tpu.generation is None:
        return f"tpu build with {adds}{source}; TPU generation unknown, not checked"
    return f"tpu build with {adds}{source}; runs on TPU {tpu.generation}"


class Tpu(base.OwnBuilds):
    """Google TPUs as an :class:`~colabenv.accelerators.base.AcceleratorKind`."""

    kind = Accelerator.TPU
    traits = base.Traits(named="a TPU", tpu_runtime=True, kubernetes_job=False)

    def detected(
        self, wanted: TargetOverrides, host: base.HostReadings, notes: list[str]
    ) -> base.Detected | None:
        """``--tpu`` when given; else the host's TPU, unless flags describe another target
        (``--cpu``, an NVIDIA driver, CUDA or compute capability, ``--rocm``/``--gfx``)."""
        tpu = wanted.tpu
        nvidia = wanted.driver is not None or wanted.cuda is not None or bool(wanted.compute_capabilities)
        if tpu is not None:
            notes.append(f"{wanted.origin('tpu')} {tpu.accelerator_type}: TPU detection skipped")
        elif wanted.cpu or nvidia or wanted.rocm is not None:
            return None
        else:
            report = host.tpu()
            notes.extend(report.notes)
            tpu = report.tpu
            if tpu is None:
                return None
        notes.append(base.GPU_DETECTION_SKIPPED)
        return base.Detected(tpu)

    def offered_variants(self, release: Release, target: Target, catalog: Catalog) -> tuple[Variant, ...]:
        return (*release.variants, _tpu_variant(release, catalog))

    def rejection(
        self, variant: Variant, request: FrameworkRequest, target: Target, catalog: Catalog
    ) -> str | None:
        if variant.name != TPU_VARIANT and request.variant != variant.name:
            return base.NOT_ASKED
        return _rejection(variant, request, target, catalog)

    def fully_supported(self, variant: Variant, target: Target, catalog: Catalog) -> bool:
        return True

    def installed_variant(self, target: Target, variants: Sequence[Variant]) -> Variant | None:
        return _installed_variant(target, variants)

    def why(self, variant: Variant, fully_supported: bool, target: Target, catalog: Catalog) -> str:
        if variant.tpu is not None:
            return _why(variant.tpu, target)
        return "CPU build: the target has no GPU"

    def warnings(
        self, chosen: Sequence[base.ChosenBuild], profile: Profile, target: Target, catalog: Catalog
    ) -> list[str]:
        warnings = [NO_GPU_REQUIRED] if profile.verify.require_gpu else []
        unknown = target.tpu is None or target.tpu.generation is None
        if unknown and any(build.variant.tpu is not None for build in chosen):
            warnings.append(UNKNOWN_GENERATION)
        return warnings

    def requirements(self, variant: Variant) -> tuple[str, ...]:
        return variant.tpu.requires if variant.tpu is not None else ()

    def find_links(self, variant: Variant) -> str | None:
        return variant.tpu.find_links if variant.tpu is not None else None

    def describe(self, target: Target) -> str:
        return str(target.tpu)

    def shown(self, target: Target) -> str:
        return f"tpu: {target.tpu}"

    def lacks(self, target: Target) -> str:
        return f"a TPU ({target.tpu})"

    def installed_build(self, target: Target, framework: Framework) -> str | None:
        present = [d for d in (target.installed.get(n) for n in FACTS[framework].tpu_runtime) if d]
        if not present:
            return None
        return "TPU (" + ", ".join(f"{d.name} {d.version}" for d in present) + ")"

    def recorded_problem(self, recorded: base.RecordedDevice) -> str | None:
        if recorded.driver or recorded.cuda or recorded.compute_capabilities:
            return f"tpu: {base.TPU_BESIDE_A_DRIVER}"
        assert recorded.tpu is not None
        problem = tpu_problem(recorded.tpu)
        return f"tpu: {problem}" if problem is not None else None

    def contradiction(self, written: Accelerator) -> str | None:
        return None if written is self.kind else "the target is a TPU host"

    def difference(self, recorded: base.RecordedDevice, now: base.RecordedDevice) -> str | None:
        if now.kind is not self.kind:
            return base.kind_changed(recorded, now)
        assert recorded.tpu is not None and now.tpu is not None
        if recorded.tpu.generation == now.tpu.generation:
            return None
        return (
            f"TPU generation {recorded.tpu.generation or 'unknown'} in the lock, "
            f"{now.tpu.generation or 'unknown'} now"
        )

    def recorded_table(self, recorded: base.RecordedDevice) -> dict[str, object]:
        tpu = recorded.tpu
        assert tpu is not None
        parts = (("generation", tpu.generation), ("type", tpu.accelerator_type), ("chips", tpu.chips))
        return {"tpu": {key: value for key, value in parts if value is not None}}

    def device_checks(
        self, choices: Sequence[base.BuiltFor], required_driver: str | None
    ) -> base.DeviceChecks:
        """Nothing: the TPU build's runtime is checked by verify's smoke test on the TPU."""
        return base.NO_DEVICE_CHECKS

    verify_checks = base.VerifyChecks(base.DeviceSmoke.TPU)


def tpu_problem(tpu: TpuTarget) -> str | None:
    """What is wrong with a TPU read from a lock, or None."""
    if tpu.generation is not None and not re.fullmatch(TPU_NAME_PATTERN, tpu.generation):
        return f"{shown(tpu.generation)} is not a TPU generation"
    if tpu.accelerator_type is not None and not re.fullmatch(TPU_TYPE_PATTERN, tpu.accelerator_type):
        return f"{shown(tpu.accelerator_type)} is not a TPU type"
    if tpu.chips is not None and not 1 <= tpu.chips <= MAX_TPU_CHIPS:
        return f"chips={tpu.chips} is not a number of chips"
    return None


UNKNOWN_GENERATION = "TPU generation unknown: the TPU generations of the chosen builds were not checked"

TPU = Tpu()
