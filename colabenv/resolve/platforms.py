"""What a target's platform and Python ABI allow of a release: a build the catalog lists for
another platform, or without a free-threaded wheel for a free-threaded Python, turned down (the
one free-threaded rule, for the CUDA packages' builds too); and
the CPU build that is all a release has on a platform, named rather than taken unasked
(docs/aarch64.md)."""

from __future__ import annotations

import dataclasses
from typing import TypeVar

from colabenv.accelerators.eligibility import platform_missing
from colabenv.models import CATALOG_PLATFORM, PackageBuild, Release, Target, Variant

_Build = TypeVar("_Build", Variant, PackageBuild)


def platform_rejection(variant: Variant, target: Target) -> str | None:
    """Why ``variant`` has no wheel the target's platform and ABI load; None when it has one.
    A CPU build serves every platform (the projects publish CPU wheels for each); a TPU build's
    platform is the TPU kind's rule (:mod:`colabenv.accelerators.tpu`)."""
    missing = None if variant.is_cpu else platform_missing(variant.name, variant.platforms, target)
    return missing if missing is not None else free_threaded_rejection(variant, target)


def free_threaded_rejection(build: Variant | PackageBuild, target: Target) -> str | None:
    """Why a framework's variant or a CUDA package's build has no wheel a free-threaded target
    loads: its ``free_threaded`` Pythons lack the target's. None for a Python with the GIL."""
    ranged = build.free_threaded
    if target.free_threaded and (ranged is None or not ranged.contains(target.python, prereleases=True)):
        tag = f"cp{target.python.major}{target.python.minor}t"
        return f"{build.name} has no free-threaded wheel ({tag}) in the catalog"
    return None


def free_threaded_view(release: Release, target: Target) -> Release:
    """The release as a free-threaded target sees it: a build whose free-threaded wheels are
    known from what upstream tested, not from its files (``free_threaded_unconfirmed``), is
    unconfirmed there, and taken as any unconfirmed build is. Unchanged for a Python with the
    GIL."""
    if not target.free_threaded or not any(v.free_threaded_unconfirmed for v in release.variants):
        return release
    variants = tuple(tested_only(variant, target) for variant in release.variants)
    return dataclasses.replace(release, variants=variants)


def tested_only(build: _Build, target: Target) -> _Build:
    """``build`` (a framework's variant, a CUDA package's build) as a free-threaded target sees
    it: unconfirmed where its free-threaded wheels are known from what upstream tested alone
    (``free_threaded_unconfirmed``); itself otherwise, and for a Python with the GIL."""
    if not target.free_threaded or build.free_threaded_unconfirmed is None:
        return build
    reason = f"free-threaded wheels: {build.free_threaded_unconfirmed}"
    if build.unconfirmed is not None:
        reason = f"{build.unconfirmed}; {reason}"
    return dataclasses.replace(build, unconfirmed=reason)


def platform_cpu_only(release: Release, variant: Variant, target: Target) -> str | None:
    """Why the CPU build a target's accelerator did not ask for is all there is: the release's
    plain wheel on a platform other than the catalog's is that CPU build, and the catalog lists
    no GPU build for the platform (torch 2.7 and 2.8 on linux_aarch64). ``release`` is as the
    platform sees it (:meth:`Release.on_platform`). None otherwise."""
    platform = target.platform
    if platform == CATALOG_PLATFORM or not variant.is_cpu or release.default_variant != variant.name:
        return None
    if any(not v.is_cpu and platform in v.platforms for v in release.variants):
        return None
    return (
        f"{variant.name} is the only {platform} build of {release.framework} {release.version} in "
        f"the catalog (the plain wheel there); a CPU build is taken only where the profile asks "
        f'for it (variant = "{variant.name}")'
    )
