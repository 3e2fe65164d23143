"""What the resolver says when nothing in the catalog fits a request: the rejections grouped by
problem, and the details for a variant or version range the catalog does not have."""

from __future__ import annotations

import re
from collections.abc import Sequence

from packaging.version import Version

from colabenv.errors import printable
from colabenv.models import Catalog, Framework, FrameworkRequest


def grouped_rejections(framework: Framework | str, rejections: Sequence[tuple[Version, str]]) -> list[str]:
    """One line per distinct problem, with the range of releases it stops."""
    by_problem: dict[str, list[Version]] = {}
    for version, problem in rejections:
        by_problem.setdefault(problem, []).append(version)
    lines = []
    for problem, versions in by_problem.items():
        low, high = min(versions), max(versions)
        span = str(low) if low == high else f"{low} to {high}"
        lines.append(f"{framework} {span}: {problem}")
    return lines


def unknown_variant(request: FrameworkRequest, catalog: Catalog) -> str:
    """The error detail for a variant no release of the framework has (``cu999``), else ""."""
    known = sorted(
        {v.name for r in catalog.releases_of(request.framework) for v in r.variants}, key=variant_order
    )
    if request.variant is None or request.variant in known:
        return ""
    return (
        f"{printable(request.variant)!r} is not a {request.framework} variant the catalog "
        f"knows (known: {', '.join(known)})"
    )


def no_match(request: FrameworkRequest, catalog: Catalog) -> str:
    """Nothing in the catalog matches the request at all: a variant the matching releases
    lack, or a version range outside the catalog."""
    releases = catalog.releases_of(request.framework)
    matching = [r for r in releases if request.specifier.contains(r.version, prereleases=True)]
    if request.variant is not None and matching:
        offered = sorted({v.name for r in matching for v in r.variants}, key=variant_order)
        return (
            f"\n  no {request.framework} release satisfying {request.specifier} has the "
            f"variant {request.variant} (they have: {', '.join(offered)})"
        )
    return f"\n  the catalog has no {request.framework} release matching it"


def variant_order(name: str) -> tuple[int, tuple[int, ...], str]:
    """cu118 before cu126 before cu130, then the ROCm builds by version (rocm6.2.4 before
    rocm6.4 before rocm7.14); names without digits (cpu, and-cuda) last."""
    rocm = name.startswith("rocm")
    numbers = re.findall(r"[0-9]+", name)
    if not numbers:
        return (2, (), name)
    if rocm:
        return (1, tuple(int(n) for n in numbers), name)
    return (0, (int("".join(numbers)),), name)
