"""What ``catalog refresh packages`` reads of a CUDA package beyond its x86-64 CUDA wheels, from
the pages it reads anyway: a build's free-threaded ``cp3XYt`` files (its ``free_threaded``,
written for the builds refresh adds, compared for those the file has), the
``manylinux_*_aarch64`` files of each release read (a new build written again for linux_aarch64,
unconfirmed; a known build's platforms compared), and the ``+rocmX.Y``
wheels of its distributions on those pages that are not read as ROCm builds (one note per
package, most saying there is none).
No page is requested that the x86-64 derivation did not read."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from packaging.version import Version

from colabenv.curation.refresh.aarch64_builds import AARCH64, manylinux_aarch64
from colabenv.curation.refresh.free_threaded import free_threaded_compared
from colabenv.curation.refresh.package_builds import Found, where_read
from colabenv.curation.refresh.rocm_builds import rocm_of_tag
from colabenv.curation.refresh.sources import PYTORCH_INDEX, IndexReader, Wheel, mirrored, preferred
from colabenv.errors import IndexUnavailableError
from colabenv.models import CATALOG_PLATFORM, CudaPackage, PackageBuild, PackageRelease, Source
from colabenv.models.frozen import model


def compare_free_threaded(
    release: PackageRelease, builds: Sequence[PackageBuild]
) -> tuple[list[str], list[str]]:
    """Where the cpXYt files of ``builds`` (read for ``release``, which the file has) say other
    than its builds' ``free_threaded`` (contradictions: the file's is kept), and the builds
    whose free-threaded Pythons the file has from what upstream tested alone that the files now
    confirm (notes): :func:`free_threaded_compared`, as for a framework's builds."""
    found: list[str] = []
    confirmed: list[str] = []
    for build in builds:
        known = release.build(build.name)
        if known is None or known.distribution != build.distribution:
            continue
        label = f"{release.package} {release.version} {build.name}"
        says = "its find-links page has" if build.find_links is not None else "the index has"
        differs, confirms = free_threaded_compared(label, known, build, says)
        found.extend([differs] if differs else [])
        confirmed.extend([confirms] if confirms else [])
    return found, confirmed


def _listed(reader: IndexReader, found: Found, platform: str) -> list[Wheel]:
    """The ``platform`` wheels of ``found``'s distribution where ``found`` was read (its pages are
    read already: no new request)."""
    options = reader.options
    try:
        if found.find_links is not None:
            return reader.page_wheels(found.find_links, found.distribution, platform=platform)
        if found.index_url is None:
            return reader.wheels(options.index, found.distribution, platform=platform)
        if found.index_url.startswith(PYTORCH_INDEX + "/"):
            index = options.pytorch_index
            return [] if index is None else reader.wheels(index, found.distribution, platform=platform)
        return reader.wheels(
            mirrored(found.index_url, options.index_mirror), found.distribution, platform=platform
        )
    except IndexUnavailableError:
        return []


@model
class Aarch64Read:
    """The builds derived from the x86-64 wheels of one place a release was read (``found``),
    and the ``manylinux_*_aarch64`` files of the same version and local tag there."""

    found: Found
    builds: tuple[PackageBuild, ...]
    files: tuple[Wheel, ...]


def aarch64_read(reader: IndexReader, found: Found, builds: Sequence[PackageBuild]) -> Aarch64Read:
    """The ``manylinux_*_aarch64`` files beside the x86-64 ones ``builds`` were derived from
    (none looked for where no build was derived)."""
    if not builds:
        return Aarch64Read(found, (), ())
    read = preferred(found.wheels).version
    files = [
        wheel
        for wheel in _listed(reader, found, AARCH64)
        if wheel.version == read and any(manylinux_aarch64(t.platform) for t in wheel.tags)
    ]
    return Aarch64Read(found, tuple(builds), tuple(files))


def _files_text(reader: IndexReader, read: Aarch64Read) -> str:
    where = where_read(reader, read.found.index_url, read.found.find_links)
    tags = sorted({t.platform for w in read.files for t in w.tags if manylinux_aarch64(t.platform)})
    return (
        f"{len(read.files)} linux_aarch64 file(s) on {where} ({', '.join(tags)}; "
        f"{preferred(list(read.files)).file.filename})"
    )


_TWIN_REASON = (
    "its arch list and requirements are the linux_x86_64 wheel's (the linux_aarch64 wheel was not read)"
)
"""Why a build written again for linux_aarch64 is unconfirmed."""


def aarch64_builds(
    reader: IndexReader, package: str, version: Version, reads: Sequence[Aarch64Read], new: Sequence[str]
) -> tuple[list[PackageBuild], list[str]]:
    """For the builds named ``new`` (those refresh writes) whose place has linux_aarch64 files:
    the build again for linux_aarch64 (``platforms = ["linux_aarch64"]``), unconfirmed, as the
    arch list and requirements are the x86-64 wheel's; and a note per place saying so."""
    twins: list[PackageBuild] = []
    notes: list[str] = []
    for read in reads:
        builds = [b for b in read.builds if b.name in new]
        if not read.files or not builds:
            continue
        file = preferred(list(read.files)).file.filename
        for build in builds:
            reason = f"{_TWIN_REASON} ({file})"
            twins.append(
                dataclasses.replace(
                    build,
                    platforms=(AARCH64,),
                    unconfirmed=f"{build.unconfirmed}; {reason}" if build.unconfirmed else reason,
                    free_threaded=None,
                    free_threaded_unconfirmed=None,
                    source=Source(f"{build.source.text}; {AARCH64}: {file}"),
                )
            )
        notes.append(
            f"{package} {version} {', '.join(b.name for b in builds)}: {_files_text(reader, read)}: "
            f'written for {AARCH64} too (platforms = ["{AARCH64}"]), unconfirmed: {_TWIN_REASON}'
        )
    return twins, notes


def compare_aarch64(reader: IndexReader, release: PackageRelease, reads: Sequence[Aarch64Read]) -> list[str]:
    """Where the aarch64 files of a release the file has (``release``, all its builds) say other
    than its builds' platforms: a build of a place with linux_aarch64 files that the file lists
    for linux_x86_64 alone, or one it lists for linux_aarch64 whose place has none
    (contradictions: the file's entry is kept)."""
    found: list[str] = []
    for read in reads:
        for build in read.builds:
            listed = any(
                b.name == build.name and b.distribution == build.distribution and AARCH64 in b.platforms
                for b in release.builds
            )
            if release.build(build.name) is None or listed == bool(read.files):
                continue
            label = f"{release.package} {release.version} {build.name}: platforms"
            if read.files:
                found.append(
                    f"{label}: the catalog lists it for {CATALOG_PLATFORM} only, {_files_text(reader, read)}"
                )
            else:
                where = where_read(reader, read.found.index_url, read.found.find_links)
                found.append(f"{label}: the catalog lists it for {AARCH64}, {where} has no {AARCH64} file")
    return found


def catalog_platform_view(package: CudaPackage) -> CudaPackage:
    """``package`` with only the builds it lists for the catalog's platform: what the x86-64
    wheels are derived from and compared with."""
    releases = tuple(r.listed_for(CATALOG_PLATFORM) for r in package.releases)
    return package if releases == package.releases else dataclasses.replace(package, releases=releases)


def rocm_said(
    reader: IndexReader,
    package: str,
    distributions: Sequence[str],
    read: dict[Version, list[Found]],
) -> str | None:
    """One line on the ROCm builds of the releases ``read`` (by version, where each was read):
    the ``+rocmX.Y`` wheels on the pages read that are not read as builds (those of another
    index or a find-links page; the PyTorch index's and a ROCm distribution's are, by
    :mod:`.package_rocm_builds`), or that there is no ROCm build at all; None where no release
    was read, or where only ROCm builds read as such were found. ``distributions``: the
    package's, named in the line. No page is requested that was not read already."""
    if not read:
        return None
    founds = [f for founds in read.values() for f in founds]
    places = {f: None for f in founds if f.rocm is None and not _pytorch_place(f)}
    rocm: dict[tuple[Version, str], Wheel] = {}
    for wheel in (w for f in places for w in _listed(reader, f, CATALOG_PLATFORM)):
        tag = wheel.version.local
        public = Version(wheel.version.public)
        if tag is not None and rocm_of_tag(tag) is not None and public in read:
            rocm.setdefault((public, tag), wheel)
    if rocm:
        said = "; ".join(f"{v} {t} ({w.file.filename})" for (v, t), w in sorted(rocm.items()))
        return (
            f"{package}: ROCm wheels on the indexes read: {said} (ROCm builds are read from the "
            "PyTorch index and the package's ROCm distributions only: not written)"
        )
    if any(f.rocm is not None for f in founds):
        return None
    names = ", ".join(distributions)
    versions = ", ".join(str(v) for v in sorted(read))
    return (
        f"{package}: no ROCm build of the releases read ({versions}): no +rocmX.Y wheel of "
        f"{names} on the indexes and pages read"
    )


def _pytorch_place(found: Found) -> bool:
    return found.index_url is not None and found.index_url.startswith(PYTORCH_INDEX + "/")
