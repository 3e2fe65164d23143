"""What ``catalog refresh packages`` reads of a CUDA package beyond its x86-64 CUDA wheels, from
the pages it reads anyway: a build's free-threaded ``cp3XYt`` files (its ``free_threaded``,
written for the builds refresh adds, compared for those the file has), the
``manylinux_*_aarch64`` files of each release read (their build proposed for linux_aarch64 in a
note: ``cuda_packages.toml`` lists package builds for linux_x86_64 only), and the ``+rocmX.Y``
wheels of its distributions on those pages (one note per package, most saying there is none).
No page is requested that the x86-64 derivation did not read."""

from __future__ import annotations

from collections.abc import Sequence

from packaging.version import Version

from colabenv.curation.refresh.package_builds import Found, where_read
from colabenv.curation.refresh.rocm_builds import rocm_of_tag
from colabenv.curation.refresh.sources import PYTORCH_INDEX, IndexReader, Wheel, mirrored, preferred
from colabenv.curation.refresh.writer import specifier_text
from colabenv.errors import IndexUnavailableError
from colabenv.models import CATALOG_PLATFORM, PackageBuild, PackageRelease

AARCH64 = "linux_aarch64"


def compare_free_threaded(
    release: PackageRelease, builds: Sequence[PackageBuild]
) -> tuple[list[str], list[str]]:
    """Where the cpXYt files of ``builds`` (read for ``release``, which the file has) say other
    than its builds' ``free_threaded`` (contradictions: the file's is kept), and the builds
    whose free-threaded Pythons the file has from what upstream tested alone that the files now
    confirm (notes)."""
    found: list[str] = []
    confirmed: list[str] = []
    for build in builds:
        known = release.build(build.name)
        if known is None or known.distribution != build.distribution:
            continue
        label = f"{release.package} {release.version} {build.name}"
        says = "its find-links page has" if build.find_links is not None else "the index has"
        had = specifier_text(known.free_threaded) if known.free_threaded is not None else "none"
        if build.free_threaded is None:
            if known.free_threaded is not None and known.free_threaded_unconfirmed is None:
                found.append(f"{label}: free_threaded: the catalog has {had}, {says} no cp3XYt file of it")
        elif known.free_threaded != build.free_threaded:
            found.append(
                f"{label}: free_threaded: the catalog has {had}, {says} cp3XYt files for "
                f"{specifier_text(build.free_threaded)}"
            )
        elif known.free_threaded_unconfirmed is not None:
            confirmed.append(
                f"{label}: its cp3XYt files confirm free_threaded (free_threaded_unconfirmed can go)"
            )
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


def aarch64_said(
    reader: IndexReader, package: str, version: Version, found: Found, builds: Sequence[PackageBuild]
) -> str | None:
    """One line where the release ``found`` is has ``manylinux_*_aarch64`` files beside its
    x86-64 ones (the same version and local tag, in the same place): its builds ``builds``
    proposed for linux_aarch64 too. None where it has none."""
    if not builds:
        return None
    read = preferred(found.wheels).version
    files = [
        wheel
        for wheel in _listed(reader, found, AARCH64)
        if wheel.version == read and any(_aarch64_manylinux(t.platform) for t in wheel.tags)
    ]
    if not files:
        return None
    tags = sorted({t.platform for w in files for t in w.tags if _aarch64_manylinux(t.platform)})
    names = ", ".join(b.name for b in builds)
    return (
        f"{package} {version} {names}: {len(files)} linux_aarch64 file(s) on "
        f"{where_read(reader, found.index_url, found.find_links)} ({', '.join(tags)}; "
        f"{preferred(files).file.filename}): proposed platforms {CATALOG_PLATFORM}, {AARCH64} "
        f"(cuda_packages.toml lists package builds for {CATALOG_PLATFORM} only: not written)"
    )


def _aarch64_manylinux(platform: str) -> bool:
    return platform.startswith("manylinux") and platform.endswith("_aarch64")


def rocm_said(
    reader: IndexReader,
    package: str,
    distributions: Sequence[str],
    read: dict[Version, list[Found]],
) -> str | None:
    """One line: the ``+rocmX.Y`` wheels of the releases ``read`` (by version, where each was
    read) on the pages they were read from (a PyTorch index page lists every local tag of a
    distribution; nothing more is requested), or that there are none; None where no release
    was read. ``distributions``: the package's, named in the line."""
    if not read:
        return None
    places = {f: None for founds in read.values() for f in founds}
    rocm: dict[tuple[Version, str], Wheel] = {}
    for wheel in (w for f in places for w in _listed(reader, f, CATALOG_PLATFORM)):
        tag = wheel.version.local
        public = Version(wheel.version.public)
        if tag is not None and rocm_of_tag(tag) is not None and public in read:
            rocm.setdefault((public, tag), wheel)
    names = ", ".join(distributions)
    if not rocm:
        versions = ", ".join(str(v) for v in sorted(read))
        return (
            f"{package}: no ROCm build of the releases read ({versions}): no +rocmX.Y wheel of "
            f"{names} on the indexes and pages read"
        )
    said = "; ".join(f"{v} {t} ({w.file.filename})" for (v, t), w in sorted(rocm.items()))
    return (
        f"{package}: ROCm builds on the indexes read: {said} (cuda_packages.toml lists CUDA builds "
        "only: not written)"
    )
