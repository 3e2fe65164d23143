"""The free-threaded Pythons a build has wheels for, as ``catalog refresh torch`` and ``catalog
refresh packages`` read them: the ``cp313t``/``cp314t`` files among a build's wheels
(``cp313-cp313t-manylinux_2_28_x86_64``) give its ``free_threaded`` range, confirmed (the files
were seen), and the summary says which builds it wrote one for. A cpXYt wheel widens no build's
ordinary Python range (:attr:`Wheel.pythons` leaves it out)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from typing import TypeVar

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.curation.refresh.sources import Wheel
from colabenv.models import PackageBuild, PackageRelease, Release, Variant

_FREE_THREADED_ABI = re.compile(r"cp3(\d+)t")
_Build = TypeVar("_Build", Variant, PackageBuild)


def free_threaded_minors(wheels: Iterable[Wheel]) -> list[int]:
    """The minors of the CPythons ``wheels`` have free-threaded (``cp3XYt``) files for."""
    return sorted(
        {int(m.group(1)) for w in wheels for t in w.tags if (m := _FREE_THREADED_ABI.fullmatch(t.abi))}
    )


def free_threaded_range(wheels: Iterable[Wheel]) -> SpecifierSet | None:
    """The range of ``wheels``' cpXYt files (``>=3.13,<3.15``); None where there are none."""
    minors = free_threaded_minors(wheels)
    return SpecifierSet(f">=3.{minors[0]},<3.{minors[-1] + 1}") if minors else None


def with_free_threaded(build: _Build, wheels: Sequence[Wheel]) -> _Build:
    """``build`` (a framework's variant, a CUDA package's build) with ``free_threaded`` the
    range of its wheels' cpXYt files (``>=3.13,<3.15``); as it was where it has none."""
    ranged = free_threaded_range(wheels)
    if ranged is None:
        return build
    return dataclasses.replace(build, free_threaded=ranged, free_threaded_unconfirmed=None)


def free_threaded_pythons(ranged: SpecifierSet) -> str:
    """``3.13t, 3.14t``: the free-threaded Pythons ``ranged`` admits."""
    return ", ".join(f"3.{m}t" for m in range(3, 40) if ranged.contains(f"3.{m}"))


def free_threaded_said(
    releases: Sequence[Release], added: Iterable[Version], added_builds: Iterable[tuple[Version, str]]
) -> str:
    """``; free-threaded wheels seen for 2 build(s) (9.2.0 cu132 3.13t, 3.14t; ...)`` for the
    builds written that have some: those of the releases ``added``, and ``added_builds``
    (version, the build's name as the summary gives it) of releases the file has."""
    from colabenv.curation.refresh.writer import build_name

    new_releases, new_builds = set(added), set(added_builds)
    said = []
    for release in releases:
        for variant in release.variants:
            name = build_name(variant)
            written = release.version in new_releases or (release.version, name) in new_builds
            if variant.free_threaded is None or not written:
                continue
            said.append(f"{release.version} {name} {free_threaded_pythons(variant.free_threaded)}")
    return _seen(said)


def packages_free_threaded_said(written: Iterable[PackageRelease]) -> str:
    """``; free-threaded wheels seen for 1 build(s) (cupy 99.0.0 cuda13x 3.13t, 3.14t)`` for the
    CUDA package builds written (new releases, new builds of releases the file has) that have
    some; empty where none has."""
    said = [
        f"{release.package} {release.version} {build.name} {free_threaded_pythons(build.free_threaded)}"
        for release in written
        for build in release.builds
        if build.free_threaded is not None
    ]
    return _seen(said)


def _seen(said: Sequence[str]) -> str:
    return f"; free-threaded wheels seen for {len(said)} build(s) ({'; '.join(said)})" if said else ""
