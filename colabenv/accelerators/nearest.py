"""The build nearest a GPU that no build the profile allows has kernels for, for an NVIDIA
compute capability and an AMD gfx alike (docs/catalog.md, "A GPU no build has kernels for").
Where builds of the target's platform outside the profile's range have the kernels, the
nearest of them by release that a gap in the range (a ``!=``) excludes, below the range and
above it, and what else keeps it out (the driver, the ROCm, its component pins ...; or, for a
build the target would run, the index or being unconfirmed) or that only the range does. Where
none in the catalog has them, the build whose list has the closest architecture of the GPU's
major (an sm_37 build for a 3.0 GPU, gfx1030 for a gfx1013), else the closest newer one; where
only another platform's builds have the kernels, that is said instead."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.models import (
    GFX_PATTERN,
    PLATFORMS,
    Catalog,
    ComputeCapability,
    Framework,
    Release,
    Target,
    Variant,
    archs_cover,
)
from colabenv.models.frozen import model


@model
class NotTaken:
    """Why the target would not take a build were its release in the profile's range:
    ``reason``; ``runs``: the target would run it, and something else keeps it out (the index
    lacks a file it pins, it is unconfirmed, the profile names another variant), not its
    device, driver, ROCm or Python."""

    reason: str
    runs: bool = False


WhyNot = Callable[[Version, str], NotTaken | None]
"""Why the target would not take a build (its release, its variant's name) were the release in
the profile's range; None where it would."""

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


def _builds(catalog: Catalog, framework: Framework, platform: str) -> Iterator[tuple[Release, Variant]]:
    """Each GPU build of ``framework`` for ``platform``, newest release first."""
    for release in catalog.releases_of(framework):
        for variant in release.on_platform(platform).variants:
            if platform in variant.platforms and (variant.archs or variant.gfx):
                yield release, variant


def _label(build: tuple[Release, Variant]) -> str:
    release, variant = build
    return f"{release.framework} {release.version} {variant.name}"


def _nearest(gpu: _Key, candidates: list[tuple[str, str, _Key]]) -> tuple[str, str] | None:
    """The (build, architecture) of ``candidates`` nearest ``gpu``; the first of equals."""
    best: tuple[tuple[int, int, int], str, str] | None = None
    for label, arch, key in candidates:
        distance = _distance(gpu, key)
        if distance is not None and (best is None or distance < best[0]):
            best = (distance, label, arch)
    return (best[1], best[2]) if best is not None else None


def nearest_lines(
    catalog: Catalog, framework: Framework, target: Target, allowed: SpecifierSet, why_not: WhyNot
) -> list[str]:
    """For each GPU of the target that no build of ``framework`` in ``allowed`` (the profile's
    range) for its platform has kernels for, one line: where builds outside the range have
    them, the nearest on each side and what keeps it out (``why_not``: beside the range); else
    the platforms whose builds have them, or that none has, with the nearest build for its
    platform. A framework with no ROCm build at all (TensorFlow) is said to have none, for AMD
    GPUs of any gfx."""
    builds = list(_builds(catalog, framework, target.platform))
    elsewhere = {p: list(_builds(catalog, framework, p)) for p in PLATFORMS if p != target.platform}
    releases = catalog.releases_of(framework)
    ranged = [r.version for r in releases if allowed.contains(r.version, prereleases=True)]
    lines = []
    for cap in target.compute_capabilities:
        having = [build for build in builds if archs_cover(build[1].archs, cap)]
        if having:
            lines.extend(_outside_range(cap.sm, having, allowed, ranged, why_not))
            continue
        found = _nearest(
            _cc_key(cap),
            [(_label((r, v)), str(a), _cc_key(a.capability)) for r, v in builds for a in v.archs],
        )
        others = [p for p, its in elsewhere.items() if any(archs_cover(v.archs, cap) for _, v in its)]
        lines.append(_line(framework, cap.sm, found, others, target.platform))
    if target.gfx and not any(v.rocm is not None for r in releases for v in r.variants):
        return [*lines, f"{framework} has no ROCm build in the catalog"]
    for gfx in target.gfx:
        key = _gfx_key(gfx)
        having = [build for build in builds if gfx in build[1].gfx]
        if having:
            lines.extend(_outside_range(gfx, having, allowed, ranged, why_not))
            continue
        if key is None:
            continue
        pairs = [(_label((r, v)), name, _gfx_key(name)) for r, v in builds for name in v.gfx]
        found = _nearest(key, [(label, name, k) for label, name, k in pairs if k is not None])
        others = [p for p, its in elsewhere.items() if any(gfx in v.gfx for _, v in its)]
        lines.append(_line(framework, gfx, found, others, target.platform))
    return lines


def _outside_range(
    gpu: str,
    having: Sequence[tuple[Release, Variant]],
    allowed: SpecifierSet,
    ranged: Sequence[Version],
    why_not: WhyNot,
) -> list[str]:
    """The line of a GPU whose kernels only builds outside the profile's range have: the
    nearest such build the range excludes within its bounds (a ``!=``), and the nearest below
    its oldest release and above its newest (by release), each with what keeps it out.
    ``having``: the builds with its kernels, newest release first; ``ranged``: the releases in
    range. None where a build in range has them, or no release is in range (the refusal says
    that instead)."""
    if not ranged or any(release.version in ranged for release, _ in having):
        return []
    framework = having[0][0].framework
    lowest, highest = min(ranged), max(ranged)
    inside = [b for b in having if lowest < b[0].version < highest]
    older = [b for b in having if b[0].version < lowest]
    newer = [b for b in reversed(having) if b[0].version > highest]
    parts = [f"no {framework} release in {allowed} (the profile's range) has kernels for {gpu}"]
    if inside:  # nearer than any outside the bounds
        parts.append(_side("excluded by the range", inside[:1], why_not))
    for side, found in (("older", older), ("newer", newer)):
        if found:
            named = (
                f"the nearest {side} build that has them" if len(parts) == 1 else f"the nearest {side} one"
            )
            parts.append(_side(named, found, why_not))
    return ["; ".join(parts)]


def _kept_out(why: NotTaken) -> str:
    """What keeps a build out beside the range: the target would not run it, or it is not
    taken for another reason (the index, being unconfirmed)."""
    if why.runs:
        return f"which is not taken either ({why.reason})"
    return f"which the target would not run either ({why.reason})"


def _side(named: str, found: Sequence[tuple[Release, Variant]], why_not: WhyNot) -> str:
    """The nearest of ``found`` (nearest first) and what keeps it out; where more than the range
    does, also the nearest of the others that only the range keeps out, or that there is none."""
    first = found[0]
    why = why_not(first[0].version, first[1].name)
    if why is None:
        return f"{named}: {_label(first)}, which only the range keeps out"
    text = f"{named}: {_label(first)}, {_kept_out(why)}"
    others = [why_not(b[0].version, b[1].name) for b in found[1:]]
    runs = next((b for b, other in zip(found[1:], others, strict=True) if other is None), None)
    if runs is not None:
        return f"{text}; of those, the nearest only the range keeps out: {_label(runs)}"
    if not others:
        return text
    if any(other is not None and other.runs for other in others):
        return f"{text}; nor is any other of them taken"
    return f"{text}; nor would the target run any other of them"


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
