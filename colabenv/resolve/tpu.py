"""The resolver's TPU targets: each release's TPU build (``tpu.toml``) offered as its ``tpu``
variant beside its own builds, checked against the target's TPU generation as CUDA builds are
against compute capabilities (:mod:`colabenv.resolve.resolver` asks)."""

from __future__ import annotations

from collections.abc import Sequence

from packaging.requirements import Requirement

from colabenv.models import (
    Catalog,
    Framework,
    FrameworkRequest,
    InstalledSet,
    Release,
    Source,
    Target,
    TpuBuild,
    Variant,
)
from colabenv.models.frameworks import FACTS

TPU_VARIANT = "tpu"
"""The variant the resolver offers on a TPU target, built from ``tpu.toml``."""
_RUNTIME = FACTS[Framework.JAX].tpu_runtime[0]


def offered_variants(release: Release, target: Target, catalog: Catalog) -> tuple[Variant, ...]:
    """The builds of ``release`` to weigh: its own, and on a TPU target its TPU build."""
    if target.tpu is None:
        return release.variants
    return (*release.variants, _tpu_variant(release, catalog))


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
    )


def tpu_rejection(
    variant: Variant, request: FrameworkRequest, target: Target, catalog: Catalog
) -> str | None:
    """Why ``variant`` cannot run on the TPU ``target``; None when it can. The resolver asks
    only of the TPU build and of a build the profile names: a release's CPU build is taken
    there when asked for, its CUDA builds never."""
    if variant.name != TPU_VARIANT:
        if variant.is_cpu:
            return None
        built = any(b.framework is request.framework for b in catalog.tpu.builds)
        instead = (
            "leave the variant out for its TPU build" if built else catalog.tpu.missing(request.framework)
        )
        return f"{variant.name} needs an NVIDIA GPU; the target is a TPU host ({instead})"
    if variant.tpu is None:
        return catalog.tpu.missing(request.framework)
    assert target.tpu is not None
    generation = target.tpu.generation
    if generation is not None and generation not in variant.tpu.generations:
        return (
            f"tpu does not run on TPU {generation} (its TPU generations:"
            f" {', '.join(variant.tpu.generations)})"
        )
    return None


def installed_tpu_variant(target: Target, variants: Sequence[Variant]) -> Variant | None:
    """On a TPU target, the TPU build among ``variants`` when what it adds (the TPU runtime,
    torch's XLA package) is installed at the versions it needs; else None."""
    if target.tpu is None:
        return None
    tpu = next((v for v in variants if v.tpu is not None), None)
    if tpu is not None and tpu.tpu is not None and _all_installed(tpu.tpu, target.installed):
        return tpu
    return None


def _all_installed(build: TpuBuild, installed: InstalledSet) -> bool:
    for text in build.requires:
        requirement = Requirement(text)
        present = installed.version_of(requirement.name)
        if present is None or not requirement.specifier.contains(present, prereleases=True):
            return False
    return True


def tpu_requirements(variant: Variant) -> tuple[str, ...]:
    return variant.tpu.requires if variant.tpu is not None else ()


def tpu_why(build: TpuBuild, target: Target) -> str:
    adds = ", ".join(build.requires)
    source = f" ({_RUNTIME} from the find-links page {build.find_links})" if build.find_links else ""
    tpu = target.tpu
    if tpu is None or tpu.generation is None:
        return f"tpu build with {adds}{source}; TPU generation unknown, not checked"
    return f"tpu build with {adds}{source}; runs on TPU {tpu.generation}"


def tpu_warnings(chosen: Sequence[Variant], target: Target) -> list[str]:
    """What to warn of the builds ``chosen`` for ``target``."""
    if target.tpu is None or target.tpu.generation is not None:
        return []
    if not any(variant.tpu is not None for variant in chosen):
        return []
    return ["TPU generation unknown: the TPU generations of the chosen builds were not checked"]
