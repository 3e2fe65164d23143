"""One build of a CUDA package release, as ``catalog refresh packages`` derives it from the wheels
of one distribution in one place (the default index, a PyTorch index folder, another index, a
find-links page): its name, CUDA, arch list (read, or carried from the build before and marked
``unconfirmed``), NVIDIA pins, torch range and Python range, each with where it comes from
(:mod:`colabenv.curation.refresh.packages` gathers the builds into releases)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv.curation.refresh import sources
from colabenv.curation.refresh.find_links import page_cuda, page_torch
from colabenv.curation.refresh.free_threaded import free_threaded_range
from colabenv.curation.refresh.sources import (
    PYTORCH_INDEX,
    IndexReader,
    Wheel,
    by_version,
    cuda_of_tag,
    nvidia_pins,
    preferred,
    requirements_of,
    stamp,
)
from colabenv.errors import IndexUnavailableError
from colabenv.models import Arch, CudaPackage, PackageBuild, PackageRelease, Source
from colabenv.models.frozen import model

if TYPE_CHECKING:
    from colabenv.curation.archs import LibraryArchs

_LIBRARY_CUDA = re.compile(r"cuda(\d{2})(\d)(?!\d)")
"""``libbitsandbytes_cuda128.so`` -> CUDA 12.8 (a library of a wheel that carries one per CUDA)."""


def torch_of(reader: IndexReader, wheel: Wheel) -> SpecifierSet | None:
    """The torch range a wheel's METADATA requires (None: none; ``*``: any torch)."""
    for requirement in requirements_of(reader.metadata(wheel)):
        if canonicalize_name(requirement.name) == "torch":
            return requirement.specifier
    return None


def _builds_like(
    package: CudaPackage, version: Version, distribution: str, tag: str | None, index_url: str | None
) -> list[tuple[PackageRelease, PackageBuild]]:
    """The file's builds of ``distribution`` with the same local tag on the same index as a
    build of ``version``, newest release first; an index named per release
    (``wheels.vllm.ai/0.31.0/cu129``) is the same index in another release
    (``wheels.vllm.ai/0.32.0/cu129``)."""
    where = index_template(index_url, version)
    return sorted(
        (
            (release, build)
            for release in package.releases
            for build in release.builds
            if build.distribution == canonicalize_name(distribution)
            and build.cuda is not None  # a ROCm build is no CUDA build's before
            and build.local_tag == tag
            and index_template(build.index_url, release.version) == where
        ),
        key=lambda pair: pair[0].version,
        reverse=True,
    )


def previous_build(
    package: CudaPackage, version: Version, distribution: str, tag: str | None, index_url: str | None = None
) -> PackageBuild | None:
    """The build like this one in ``version`` where the file has it (to compare with), else in
    the newest older release (to carry facts from)."""
    return next(
        (b for r, b in _builds_like(package, version, distribution, tag, index_url) if r.version <= version),
        None,
    )


def nearest_build(
    package: CudaPackage, version: Version, distribution: str, tag: str | None, index_url: str | None
) -> PackageBuild | None:
    """For a release older than any the file has: the build like this one in its oldest
    release, whose name a new build is named after (cuDF 26.2.0's ``cuda12`` as 26.2.1's)."""
    like = _builds_like(package, version, distribution, tag, index_url)
    return like[-1][1] if like else None


def index_template(index_url: str | None, version: Version) -> str | None:
    """``index_url`` with the release's version as a path segment written ``{version}``
    (``https://wheels.vllm.ai/{version}/cu129``); the URL itself where it names none."""
    if index_url is None:
        return None
    path, segment = index_url.rstrip("/") + "/", f"/{version}/"
    if segment not in path:
        return index_url
    return path.replace(segment, "/{version}/", 1).rstrip("/")


def derive_build(
    reader: IndexReader, package: CudaPackage, version: Version, found: Found, notes: list[str]
) -> list[PackageBuild]:
    """The build ``found`` is (one release of its distribution in one place), or one build per
    library where the wheel carries one library per CUDA; empty: left out (in ``notes``)."""
    wheel = preferred(found.wheels)
    tag = wheel.version.local
    metadata = reader.metadata(wheel)
    pins = nvidia_pins(requirements_of(metadata))
    native = _native_wheel(reader, wheel, found.distribution, metadata, notes)
    if native is not None:
        pins = tuple(dict.fromkeys((*pins, *nvidia_pins(requirements_of(reader.metadata(native))))))
    previous = previous_build(package, version, found.distribution, tag, found.index_url)
    stated = _build_cuda(reader, found, previous, pins)
    if stated is None:
        notes.append(f"{package.name} {version} {wheel.file.filename} left out: nothing states its CUDA")
        return []
    cuda, cuda_source = stated
    name = _new_build_name(package, version, found, previous, cuda)
    read_archs = _wheel_archs(reader, wheel, native)
    archs, archs_source, unconfirmed = read_archs.archs, read_archs.source, None
    if not archs:
        if previous is None:
            notes.append(
                f"{package.name} {version} {name} left out: no arch list ({read_archs.why}; no build "
                "before to carry it from)"
            )
            return []
        archs = previous.archs
        unconfirmed = (
            f"{read_archs.why}; the arch list is carried over from {previous.name} of the release before"
        )
        archs_source = f"archs: {unconfirmed}"
    where = where_read(reader, found.index_url, found.find_links)
    try:
        python: SpecifierSet | None = sources.python_range(found.wheels, metadata.requires_python)
    except sources.RefreshProblem:
        python = None
    torch = torch_of(reader, wheel)
    torch_source = ""
    if found.find_links is not None and not torch:  # none, or any torch: the page and tag say which
        torch, torch_source = page_torch(found.find_links, tag, previous)
    native_source = (
        f" and of {native.file.filename}, the wheel of its compiled code it requires" if native else ""
    )
    read = (
        f"{where}: {wheel.file.filename} METADATA Requires-Dist{native_source} (markers dropped), "
        f"Requires-Python {metadata.requires_python or 'not stated'}; {torch_source}"
    )
    build = found_build(
        found,
        name,
        tag,
        python,
        Source(f"{read}{cuda_source}; {archs_source}; {stamp()}{_floor_source(previous)}"),
        unconfirmed,
        cuda=cuda,
        torch=torch,
        archs=archs,
        requires=pins,
        min_driver=previous.min_driver if previous is not None else None,
    )
    return _per_library_builds(build, read_archs.libraries, read) or [build]


def found_build(
    found: Found,
    name: str,
    tag: str | None,
    python: SpecifierSet | None,
    source: Source,
    unconfirmed: str | None,
    *,
    cuda: Version | None = None,
    torch: SpecifierSet | None = None,
    archs: tuple[Arch, ...] = (),
    requires: tuple[str, ...] = (),
    min_driver: Version | None = None,
    gfx: tuple[str, ...] = (),
) -> PackageBuild:
    """The build ``name`` of the wheels ``found``: its distribution, index, find-links page, ROCm
    and free-threaded Pythons are the wheels' and their place's; the rest as read."""
    return PackageBuild(
        name=name,
        distribution=canonicalize_name(found.distribution),
        cuda=cuda,
        torch=torch,
        index_url=found.index_url,
        find_links=found.find_links,
        local_tag=tag,
        archs=archs,
        requires=requires,
        python=python,
        free_threaded=free_threaded_range(found.wheels),
        source=source,
        unconfirmed=unconfirmed,
        min_driver=min_driver,
        rocm=found.rocm,
        gfx=gfx,
    )


def _floor_source(previous: PackageBuild | None) -> str:
    """Where a driver floor carried over comes from (a project's documentation, no wheel)."""
    carried = previous is not None and previous.min_driver is not None
    return f"; min_driver: carried over from the build {previous.name} before" if previous and carried else ""


def _build_cuda(
    reader: IndexReader, found: Found, previous: PackageBuild | None, pins: tuple[str, ...]
) -> tuple[Version, str] | None:
    """The CUDA of the build ``found`` is, and where it comes from: its local tag, else its
    find-links page, else the nvcc its GPU code names (unless the build before is for a CUDA
    major), else the build before's, else the distribution's major, else what ``pins`` ask for
    at least; None where nothing states it."""
    wheel = preferred(found.wheels)
    tag = wheel.version.local
    cuda = cuda_of_tag(tag) if tag else None
    cuda_source = f"cuda: the local tag +{tag}"
    if cuda is None and found.find_links is not None:
        cuda, cuda_source = page_cuda(found.find_links, tag)
    built = _built_with(reader.libraries(wheel)) if reader.options.read_archs else None
    before = previous.cuda if previous is not None else None
    line = before is not None and len(before.release) == 1  # one wheel per CUDA major
    if cuda is None and built is not None and not line:
        cuda = Version(".".join(built.split(".")[:2]))
        cuda_source = f"cuda: the nvcc its GPU code names ({built})"
    if cuda is None and previous is not None and before is not None:
        cuda, cuda_source = before, f"cuda: carried over from the build {previous.name} before"
    if cuda is None and found.major is not None:
        cuda, cuda_source = (
            Version(str(found.major)),
            f"cuda: the distribution's major ({found.distribution})",
        )
    if cuda is None:
        cuda = sources.cuda_of_pins(pins)
        cuda_source = "cuda: the CUDA runtime its NVIDIA requirements ask for at least"
    return None if cuda is None else (cuda, cuda_source)


def _new_build_name(
    package: CudaPackage, version: Version, found: Found, previous: PackageBuild | None, cuda: Version
) -> str:
    """The name of the build ``found`` is: on a find-links page, the build's with its local tag
    before; else its local tag, else the name it has in the file, else after the build like it
    (:func:`build_name_after`)."""
    tag = preferred(found.wheels).version.local
    if found.find_links is not None and previous is not None:
        return previous.name  # the build with this local tag (flash-attn's cu12torch2.8 ...)
    known = package.release(version)
    same = known is not None and previous is not None and previous in known.builds
    like = previous or nearest_build(package, version, found.distribution, tag, found.index_url)
    return tag or (previous.name if same and previous is not None else build_name_after(like, cuda))


@model
class _WheelArchs:
    """What a wheel's GPU code says (with ``--archs read``): the archs every library carries (or
    the wheel of its compiled code's, where it has none), where they come from, why there are
    none where there are none, and its libraries for one CUDA each (:func:`_per_cuda`)."""

    archs: tuple[Arch, ...]
    source: str
    why: str
    libraries: tuple[tuple[str, Version, LibraryArchs], ...] = ()


def _wheel_archs(reader: IndexReader, wheel: Wheel, native: Wheel | None) -> _WheelArchs:
    """The arch list ``wheel`` carries, else ``native``'s (the wheel of its compiled code); none
    with ``--archs carry``."""
    if not reader.options.read_archs:
        return _WheelArchs((), "", "the wheel was not read (--archs carry)")
    archs = reader.archs([wheel])
    archs_source = f"archs: what every library with GPU code carries in {wheel.file.filename}"
    why = "no library with GPU code found in the wheel"
    libraries = _per_cuda(reader.libraries(wheel))
    if not archs and native is not None:
        archs = reader.archs([native])
        archs_source = (
            f"archs: what every library with GPU code carries in {native.file.filename}, the "
            f"wheel of its compiled code that {wheel.file.filename} requires (it has none itself)"
        )
        why += f" nor in {native.file.filename}"
    return _WheelArchs(archs, archs_source, why, libraries)


def _per_library_builds(
    build: PackageBuild, libraries: Sequence[tuple[str, Version, LibraryArchs]], read: str
) -> list[PackageBuild]:
    """``build`` as one build per library of a wheel that carries one per CUDA (each named, with
    its CUDA and archs, by its library); empty where it carries one for all."""
    return [
        dataclasses.replace(
            build,
            name=library_name,
            cuda=library_cuda,
            archs=library.archs,
            source=Source(
                f"{read}cuda and archs: {library.path}, the wheel's library for CUDA {library_cuda} "
                f"(it carries one per CUDA and loads the one for torch's); {stamp()}"
            ),
        )
        for library_name, library_cuda, library in libraries
    ]


def where_read(reader: IndexReader, index_url: str | None, find_links: str | None) -> str:
    if find_links is not None:
        return f"the find-links page {find_links}"
    if index_url is not None and not index_url.startswith(PYTORCH_INDEX + "/"):
        return f"the index {index_url}"
    return "the PyTorch index" if index_url else reader.options.index_label


@model
class Found:
    """Wheels of one release of ``distribution`` in one place: the default index, a PyTorch
    index folder (``index_url``) or a find-links page (``find_links``); ``rocm``: the ROCm of a
    ROCm build's wheels (``cupy-rocm-7-0``'s 7.0, a ``+rocm6.4`` tag's 6.4), None for CUDA ones."""

    distribution: str
    major: int | None
    wheels: tuple[Wheel, ...]
    index_url: str | None = None
    find_links: str | None = None
    rocm: Version | None = None


def _per_cuda(libraries: Sequence[LibraryArchs]) -> tuple[tuple[str, Version, LibraryArchs], ...]:
    """The libraries of a wheel that carries one per CUDA (bitsandbytes'
    ``libbitsandbytes_cuda128.so``): (build name ``cuda128``, CUDA 12.8, library); empty unless
    there are two or more, each with another CUDA in its file name."""
    found = []
    for library in libraries:
        named = _LIBRARY_CUDA.search(library.path.rsplit("/", 1)[-1])
        if named is None:
            return ()
        found.append(
            (f"cuda{named.group(1)}{named.group(2)}", Version(f"{named.group(1)}.{named.group(2)}"), library)
        )
    if len(found) < 2 or len({cuda for _, cuda, _ in found}) != len(found):
        return ()
    return tuple(sorted(found, key=lambda item: item[1]))


def _native_wheel(
    reader: IndexReader, wheel: Wheel, distribution: str, metadata: sources.Metadata, notes: list[str]
) -> Wheel | None:
    """The wheel of the compiled code ``wheel`` requires where it is a distribution of its own
    named ``lib`` + its name (cuDF's ``libcudf-cu12``, pinned ``==26.8.*``), read from the same
    index: the newest release the requirement allows; None where it requires none."""
    wanted = canonicalize_name(f"lib{distribution}")
    for requirement in requirements_of(metadata):
        if canonicalize_name(requirement.name) != wanted:
            continue
        try:
            listed = reader.wheels(wheel.index, wanted)
        except IndexUnavailableError as problem:
            notes.append(f"{distribution}: {wanted} was not read ({problem})")
            return None
        fitting = {
            version: found
            for version, found in by_version(listed).items()
            if requirement.specifier.contains(version, prereleases=True)
        }
        if not fitting:
            notes.append(f"{wheel.file.filename}: no {wanted} wheel the requirement {requirement} allows")
            return None
        return preferred(fitting[max(fitting)])
    return None


def _built_with(libraries: Sequence[LibraryArchs]) -> str | None:
    """The newest toolkit nvcc names in the GPU code of the wheel's libraries (``12.9.86``),
    None where none names one (compressed fat binaries)."""
    found = {text for library in libraries for text in library.nvcc}
    return max(found, key=Version, default=None)


def build_name_after(previous: PackageBuild | None, cuda: Version) -> str:
    """A build without a local tag: named as the build before where their CUDA is the same,
    else after it with this CUDA's digits (``cu130`` before, CUDA 12.9: ``cu129``; a name for
    a CUDA major, ``cuda13``, stays one: ``cuda13`` for 13.1), else ``cuXY`` (``cu12`` for a
    major alone)."""
    digits = "".join(str(part) for part in cuda.release[:2])
    before = previous.cuda if previous is not None else None
    if previous is None or before is None:
        return f"cu{digits}"
    if before == cuda or (before.major == cuda.major and len(before.release) == 1):
        return previous.name
    number = re.search(r"\d+", previous.name)
    if number is None:
        return f"cu{digits}"
    new = str(cuda.major) if number.group() == str(before.major) else digits
    return previous.name[: number.start()] + new + previous.name[number.end() :]
