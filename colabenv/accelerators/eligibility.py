"""Whether a build can run on a target, each rule a function: its Python, its platform (a
framework's GPU or TPU build, a CUDA package's build), the driver's floor for its CUDA major (a
CUDA package's build's too), the driver's full support of its CUDA minor line, its kernels for
each GPU, and the builds of a release that the target would run better than the one chosen."""

from __future__ import annotations

from collections.abc import Sequence

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv._util.reader import cached_version
from colabenv.models import (
    Catalog,
    ComputeCapability,
    PackageBuild,
    Release,
    Target,
    Variant,
    archs_cover,
)

UNCONFIRMED_HINT = "allow it with --allow-unconfirmed or [catalog] allow_unconfirmed = true"
"""How a refusal of an unconfirmed build says to take it."""


def build_floor(build: PackageBuild, catalog: Catalog) -> Version | None:
    """The oldest driver a CUDA package's ``build`` runs on: its CUDA major's floor, or the
    higher one its project documents (``min_driver``); None where the driver table has no floor
    for its major, or the build is no CUDA build."""
    floor = catalog.floor_driver(build.cuda) if build.cuda is not None else None
    if floor is None or build.min_driver is None:
        return floor
    return max(floor, build.min_driver)


def python_ok(spec: SpecifierSet | None, python: Version) -> bool:
    """``python`` is in ``spec`` (no range: any Python)."""
    return spec is None or spec.contains(python, prereleases=True)


def platform_missing(name: str, platforms: Sequence[str], target: Target) -> str | None:
    """Why a build ``name`` the catalog lists for ``platforms`` has no wheel for the target's
    platform; None when it has one. The one wording of this refusal, for every kind of build."""
    if target.platform in platforms:
        return None
    return f"{name} has no {target.platform} wheel in the catalog ({', '.join(platforms)} only)"


def floor_met(variant: Variant, target: Target, catalog: Catalog) -> bool:
    """The target's driver (else its CUDA) reaches the floor of the build's CUDA major: the
    build runs, by minor-version compatibility at least."""
    assert variant.cuda is not None
    if target.driver is not None:
        floor = catalog.floor_driver(variant.cuda)
        return floor is not None and target.driver >= floor
    assert target.cuda is not None
    return variant.cuda.major <= target.cuda.major


def fully_met(variant: Variant, target: Target, catalog: Catalog) -> bool:
    """The target's driver fully supports the build's CUDA toolkit (not by minor-version
    compatibility only)."""
    assert variant.cuda is not None
    minor_line = cached_version(f"{variant.cuda.major}.{variant.cuda.minor}")
    if target.cuda is not None and minor_line > target.cuda:
        return False
    if target.driver is not None:
        needed = catalog.toolkit_driver(variant.cuda)
        return needed is not None and target.driver >= needed
    return True


def uncovered(variant: Variant, caps: Sequence[ComputeCapability]) -> list[ComputeCapability]:
    """The GPUs the build has no code for."""
    return [cap for cap in caps if not archs_cover(variant.archs, cap)]


def unconfirmed_fuller(release: Release, target: Target, catalog: Catalog) -> list[str]:
    """The release's unconfirmed GPU builds that the target's driver fully supports and that have
    code for each of its GPUs: what a build running by minor-version compatibility only could
    be swapped for, once unconfirmed builds are allowed."""
    return [
        v.name
        for v in release.variants
        if v.unconfirmed is not None
        and v.cuda is not None
        and floor_met(v, target, catalog)
        and fully_met(v, target, catalog)
        and not uncovered(v, target.compute_capabilities)
    ]
