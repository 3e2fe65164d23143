"""The free-threaded Pythons a build has wheels for, as ``catalog refresh torch`` and ``catalog
refresh packages`` read them: the ``cp313t``/``cp314t`` files among a build's wheels
(``cp313-cp313t-manylinux_2_28_x86_64``) give its ``free_threaded`` range, confirmed (the files
were seen), and the summary says which builds it wrote one for. A cpXYt wheel widens no build's
ordinary Python range (:attr:`Wheel.pythons` leaves it out). A build the file has is held to
the files read of it, one comparison for a framework's variant and a CUDA package's build
(:func:`free_threaded_compared`)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from typing import TypeVar

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.curation.refresh.sources import Derived, Wheel
from colabenv.curation.refresh.writer import build_name, listed_as, specifier_text
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


def free_threaded_compared(label: str, had: _Build, read: _Build, says: str) -> tuple[str | None, str | None]:
    """Where the cpXYt files read of a build (``read``, derived from them; ``says``: where they
    were read, "the index has") say other than the file's build ``had``: a contradiction (the
    file's is kept) where they serve other free-threaded Pythons than its ``free_threaded`` (or
    none where it has a confirmed one); else a note where they confirm a range the file has
    from upstream's tests alone. Ranges are compared by the Pythons they admit (``==3.13.*``
    is ``>=3.13,<3.14``)."""
    had_text = specifier_text(had.free_threaded) if had.free_threaded is not None else "none"
    if read.free_threaded is None:
        if had.free_threaded is not None and had.free_threaded_unconfirmed is None:
            return f"{label}: free_threaded: the catalog has {had_text}, {says} no cp3XYt file of it", None
        return None, None
    if had.free_threaded is None or free_threaded_pythons(had.free_threaded) != free_threaded_pythons(
        read.free_threaded
    ):
        return (
            f"{label}: free_threaded: the catalog has {had_text}, {says} cp3XYt files for "
            f"{specifier_text(read.free_threaded)}"
        ), None
    if had.free_threaded_unconfirmed is not None:
        return None, f"{label}: its cp3XYt files confirm free_threaded (free_threaded_unconfirmed can go)"
    return None, None


def compare_framework_free_threaded(
    known: Sequence[Release], derived: Derived
) -> tuple[list[str], list[str]]:
    """The releases the file has (``known``) held to the cpXYt files read of their builds
    (``derived.free_threaded_read``), as :func:`free_threaded_compared` says: contradictions,
    notes."""
    found: list[str] = []
    confirmed: list[str] = []
    by_version = {r.version: r for r in known}
    for release in derived.releases:
        old = by_version.get(release.version)
        if old is None:
            continue
        for variant in release.variants:
            had = listed_as(old, variant)
            name = build_name(variant)
            if had is None or (release.version, name) not in derived.free_threaded_read:
                continue
            label = f"{release.framework} {release.version} {name}"
            differs, confirms = free_threaded_compared(label, had, variant, "the index has")
            found.extend([differs] if differs else [])
            confirmed.extend([confirms] if confirms else [])
    return found, confirmed


def free_threaded_read(
    releases: Iterable[Release], variant_index_read: bool
) -> frozenset[tuple[Version, str]]:
    """torch's builds (version, the name as the summary gives it) whose cpXYt files were read:
    every build of a release where the PyTorch index was read (the default build's files on both
    indexes, each other build's, aarch64 ones included, on the PyTorch index), else the default
    build alone (the cpu build is then carried over, and no aarch64 build is read)."""
    return frozenset(
        (release.version, build_name(variant))
        for release in releases
        for variant in release.variants
        if variant_index_read or variant.name == release.default_variant
    )


def free_threaded_pythons(ranged: SpecifierSet) -> str:
    """``3.13t, 3.14t``: the free-threaded Pythons ``ranged`` admits."""
    return ", ".join(f"3.{m}t" for m in range(3, 40) if ranged.contains(f"3.{m}"))


def free_threaded_said(
    releases: Sequence[Release], added: Iterable[Version], added_builds: Iterable[tuple[Version, str]]
) -> str:
    """``; free-threaded wheels seen for 2 build(s) (9.2.0 cu132 3.13t, 3.14t; ...)`` for the
    builds written that have some: those of the releases ``added``, and ``added_builds``
    (version, the build's name as the summary gives it) of releases the file has."""
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
