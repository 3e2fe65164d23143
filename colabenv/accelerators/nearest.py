"""The build nearest a GPU that no build in the catalog has kernels for, for an NVIDIA compute
capability and an AMD gfx alike: of the builds for the target's platform, the build whose list
has the closest architecture of the GPU's major (an sm_37 build for a 3.0 GPU, gfx1030 for a
gfx1013), else the closest newer one; where only another platform's builds have the kernels,
that is said instead (docs/catalog.md, "A GPU no build has kernels for")."""

from __future__ import annotations

import re
from collections.abc import Iterator

from colabenv.models import (
    GFX_PATTERN,
    PLATFORMS,
    Catalog,
    ComputeCapability,
    Framework,
    Target,
    Variant,
    archs_cover,
)

_Key = tuple[int, int]
"""An architecture as (major, minor): a compute capability's, or a gfx's (minor and stepping
read as one hexadecimal number: gfx90a is (9, 10))."""


def _gfx_key(name: str) -> _Key | None:
    match = re.fullmatch(GFX_PATTERN, name)
    return (int(match.group(1)), int(match.group(2) + match.group(3), 16)) if match else None


def _cc_key(cap: ComputeCapability) -> _Key:
    return cap.major, cap.minor


def _distance(gpu: _Key, arch: _Key) -> tuple[int, int, int] | None:
    """How far ``arch`` is from ``gpu``: the same major first (by minor), then newer majors
    (the closest first); None for an older major."""
    if arch[0] == gpu[0]:
        return 0, abs(arch[1] - gpu[1]), 0
    if arch[0] > gpu[0]:
        return 1, arch[0] - gpu[0], arch[1]
    return None


def _builds(catalog: Catalog, framework: Framework, platform: str) -> Iterator[tuple[str, Variant]]:
    """Each GPU build of ``framework`` for ``platform``, newest release first."""
    for release in catalog.releases_of(framework):
        for variant in release.on_platform(platform).variants:
            if platform in variant.platforms and (variant.archs or variant.gfx):
                yield f"{framework} {release.version} {variant.name}", variant


def _nearest(gpu: _Key, candidates: list[tuple[str, str, _Key]]) -> tuple[str, str] | None:
    """The (build, architecture) of ``candidates`` nearest ``gpu``; the first of equals."""
    best: tuple[tuple[int, int, int], str, str] | None = None
    for label, arch, key in candidates:
        distance = _distance(gpu, key)
        if distance is not None and (best is None or distance < best[0]):
            best = (distance, label, arch)
    return (best[1], best[2]) if best is not None else None


def nearest_lines(catalog: Catalog, framework: Framework, target: Target) -> list[str]:
    """For each GPU of the target that no build of ``framework`` for its platform has kernels
    for, one line naming the platforms whose builds have them, else saying none has; and the
    nearest build for the target's platform. A framework with no ROCm build at all (TensorFlow)
    is said to have none, for AMD GPUs of any gfx."""
    builds = list(_builds(catalog, framework, target.platform))
    elsewhere = {p: list(_builds(catalog, framework, p)) for p in PLATFORMS if p != target.platform}
    lines = []
    for cap in target.compute_capabilities:
        if any(archs_cover(v.archs, cap) for _, v in builds):
            continue
        found = _nearest(
            _cc_key(cap), [(label, str(a), _cc_key(a.capability)) for label, v in builds for a in v.archs]
        )
        others = [p for p, its in elsewhere.items() if any(archs_cover(v.archs, cap) for _, v in its)]
        lines.append(_line(framework, cap.sm, found, others, target.platform))
    if target.gfx and not any(v.rocm is not None for r in catalog.releases_of(framework) for v in r.variants):
        return [*lines, f"{framework} has no ROCm build in the catalog"]
    for gfx in target.gfx:
        key = _gfx_key(gfx)
        if key is None or any(gfx in v.gfx for _, v in builds):
            continue
        pairs = [(label, name, _gfx_key(name)) for label, v in builds for name in v.gfx]
        found = _nearest(key, [(label, name, k) for label, name, k in pairs if k is not None])
        others = [p for p, its in elsewhere.items() if any(gfx in v.gfx for _, v in its)]
        lines.append(_line(framework, gfx, found, others, target.platform))
    return lines


def _line(
    framework: Framework, gpu: str, found: tuple[str, str] | None, others: list[str], platform: str
) -> str:
    """The line of a GPU: where ``others`` (platforms but the target's) have builds with its
    kernels, that they alone do, with the nearest build for ``platform``; else that no build
    has them, with the nearest."""
    if others:
        text = f"{framework}'s builds with kernels for {gpu} are {' and '.join(others)} only"
        return f"{text}; the nearest on {platform}: {found[0]} ({found[1]})" if found else text
    text = f"no {framework} build in the catalog has kernels for {gpu}"
    return f"{text}; the nearest: {found[0]} ({found[1]})" if found else text
