"""What ``catalog refresh packages`` derives for the CUDA packages of ``cuda_packages.toml``
(xformers, CuPy, bitsandbytes ...): for each package the file has, the releases on the default
index it lacks, read like the frameworks' (:mod:`colabenv.curation.refresh.sources`): the
project page of each of its distributions (``cupy-cuda12x``, ``cupy-cuda13x``), and for each
new release the preferred Linux x86_64 wheel's METADATA (Requires-Dist ``torch``, the NVIDIA
wheels, Requires-Python) and its GPU code (:mod:`colabenv.curation.archs`).

A build is named by its wheel's local tag (``cu128``), else as the previous release's build of
the same distribution without one; its CUDA is the local tag's, else that build's, else the
distribution's major. What no wheel states (an arch list when the wheel is not read) is carried
from the previous release and marked ``unconfirmed``. Releases the file has are compared, never
overwritten: a torch range or Python range the index contradicts is reported.

A package whose builds live on find-links pages (torch-scatter and pyg-lib on
``data.pyg.org/whl/torch-2.8.0+cu126.html``, flash-attn on its release's asset page) is read
from each page its builds name too: the page's wheels of the package give the releases, each
local tag a build (``+pt28cu126``: named as the build with that tag before, else by the tag), the
Python range (cpXY, ``abi3``), and METADATA as for an index's wheels (PEP 658 where the page
offers it, else range requests into the wheel). What METADATA does not state is read from the
page's name (``torch-2.8.0+cu126.html``: torch ==2.8.*, CUDA 12.6), else from the local tag
(``pt28cu126``, ``cu12torch2.8``), else carried from the build before. Pages for torch releases
newer than any a build names are looked for beside them (``torch-2.9.0+cu128.html`` for each
newer X.Y.0 release and GPU build of the torch catalog; an absent one is not an error), and a
release the file has gets the builds found there that it lacks.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from colabenv.curation.refresh import sources
from colabenv.curation.refresh.find_links import (
    by_local_tag,
    find_links_pages,
    guessed_pages,
    page_cuda,
    page_torch,
)
from colabenv.curation.refresh.package_pythons import PythonRange, compare_pythons
from colabenv.curation.refresh.selection import bounded
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
from colabenv.curation.refresh.writer import coverage_difference, pins_differ
from colabenv.errors import IndexUnavailableError
from colabenv.models import Arch, CudaPackage, PackageBuild, PackageRelease, Source
from colabenv.models.frameworks import CUDA_PACKAGES, PACKAGE_MAJORS, package_of
from colabenv.models.frozen import model, record

if TYPE_CHECKING:
    from colabenv.curation.archs import LibraryArchs

_LIBRARY_CUDA = re.compile(r"cuda(\d{2})(\d)(?!\d)")
"""``libbitsandbytes_cuda128.so`` -> CUDA 12.8 (a library of a wheel that carries one per CUDA)."""
_CUDA_SOURCE = re.compile(r"cuda: ([^;]+)")
"""Where a derived build's CUDA came from, as its source says (``the local tag +cu128``)."""


@model
class PackagesDerived:
    """The releases the index has that the file lacks (per package, newest first), the builds it
    has of releases the file has but lacks (each such release holding only those builds), the
    contradictions with the releases it has, the Python ranges its wheels' tags narrow, and
    what could not be derived."""

    releases: tuple[PackageRelease, ...]
    contradictions: tuple[str, ...]
    notes: tuple[str, ...]
    builds: tuple[PackageRelease, ...] = ()
    pythons: tuple[PythonRange, ...] = ()


def _distributions(name: str) -> tuple[tuple[str, int | None], ...]:
    """The distributions of a known package: (name, the CUDA major it is for, None: any)."""
    pattern = CUDA_PACKAGES[canonicalize_name(name)].distribution
    if "{major}" not in pattern:
        return ((pattern, None),)
    return tuple((pattern.format(major=major), major) for major in PACKAGE_MAJORS)


def _torch_of(reader: IndexReader, wheel: Wheel) -> SpecifierSet | None:
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
    where = _index_template(index_url, version)
    return sorted(
        (
            (release, build)
            for release in package.releases
            for build in release.builds
            if build.distribution == canonicalize_name(distribution)
            and build.local_tag == tag
            and _index_template(build.index_url, release.version) == where
        ),
        key=lambda pair: pair[0].version,
        reverse=True,
    )


def _previous_build(
    package: CudaPackage, version: Version, distribution: str, tag: str | None, index_url: str | None = None
) -> PackageBuild | None:
    """The build like this one in ``version`` where the file has it (to compare with), else in
    the newest older release (to carry facts from)."""
    return next(
        (b for r, b in _builds_like(package, version, distribution, tag, index_url) if r.version <= version),
        None,
    )


def _nearest_build(
    package: CudaPackage, version: Version, distribution: str, tag: str | None, index_url: str | None
) -> PackageBuild | None:
    """For a release older than any the file has: the build like this one in its oldest
    release, whose name a new build is named after (cuDF 26.2.0's ``cuda12`` as 26.2.1's)."""
    like = _builds_like(package, version, distribution, tag, index_url)
    return like[-1][1] if like else None


def _index_template(index_url: str | None, version: Version) -> str | None:
    """``index_url`` with the release's version as a path segment written ``{version}``
    (``https://wheels.vllm.ai/{version}/cu129``); the URL itself where it names none."""
    if index_url is None:
        return None
    path, segment = index_url.rstrip("/") + "/", f"/{version}/"
    if segment not in path:
        return index_url
    return path.replace(segment, "/{version}/", 1).rstrip("/")


def _other_indexes(package: CudaPackage, distribution: str) -> tuple[str, ...]:
    """The indexes besides the default and the PyTorch index that the file's builds of
    ``distribution`` name (Microsoft's onnxruntime-cuda-12 feed), one named per release as a
    template (``https://wheels.vllm.ai/{version}/cu129``)."""
    return tuple(
        dict.fromkeys(
            template
            for r in package.releases
            for b in r.builds
            if b.distribution == canonicalize_name(distribution)
            and b.index_url is not None
            and not b.index_url.startswith(PYTORCH_INDEX + "/")
            and (template := _index_template(b.index_url, r.version)) is not None
        )
    )


def _build(
    reader: IndexReader, package: CudaPackage, version: Version, found: _Found, notes: list[str]
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
    previous = _previous_build(package, version, found.distribution, tag, found.index_url)
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
    where = _where(reader, found.index_url, found.find_links)
    try:
        python: SpecifierSet | None = sources.python_range(found.wheels, metadata.requires_python)
    except sources.RefreshProblem:
        python = None
    torch = _torch_of(reader, wheel)
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
    build = PackageBuild(
        name=name,
        distribution=canonicalize_name(found.distribution),
        cuda=cuda,
        torch=torch,
        index_url=found.index_url,
        find_links=found.find_links,
        local_tag=tag,
        archs=archs,
        requires=pins,
        python=python,
        source=Source(f"{read}{cuda_source}; {archs_source}; {stamp()}{_floor_source(previous)}"),
        unconfirmed=unconfirmed,
        min_driver=previous.min_driver if previous is not None else None,
    )
    return _per_library_builds(build, read_archs.libraries, read) or [build]


def _floor_source(previous: PackageBuild | None) -> str:
    """Where a driver floor carried over comes from (a project's documentation, no wheel)."""
    carried = previous is not None and previous.min_driver is not None
    return f"; min_driver: carried over from the build {previous.name} before" if previous and carried else ""


def _build_cuda(
    reader: IndexReader, found: _Found, previous: PackageBuild | None, pins: tuple[str, ...]
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
    line = previous is not None and len(previous.cuda.release) == 1  # one wheel per CUDA major
    if cuda is None and built is not None and not line:
        cuda = Version(".".join(built.split(".")[:2]))
        cuda_source = f"cuda: the nvcc its GPU code names ({built})"
    if cuda is None and previous is not None:
        cuda, cuda_source = previous.cuda, f"cuda: carried over from the build {previous.name} before"
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
    package: CudaPackage, version: Version, found: _Found, previous: PackageBuild | None, cuda: Version
) -> str:
    """The name of the build ``found`` is: on a find-links page, the build's with its local tag
    before; else its local tag, else the name it has in the file, else after the build like it
    (:func:`_build_name`)."""
    tag = preferred(found.wheels).version.local
    if found.find_links is not None and previous is not None:
        return previous.name  # the build with this local tag (flash-attn's cu12torch2.8 ...)
    known = package.release(version)
    same = known is not None and previous is not None and previous in known.builds
    like = previous or _nearest_build(package, version, found.distribution, tag, found.index_url)
    return tag or (previous.name if same and previous is not None else _build_name(like, cuda))


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


def _where(reader: IndexReader, index_url: str | None, find_links: str | None) -> str:
    if find_links is not None:
        return f"the find-links page {find_links}"
    if index_url is not None and not index_url.startswith(PYTORCH_INDEX + "/"):
        return f"the index {index_url}"
    return "the PyTorch index" if index_url else reader.options.index_label


def _compare(
    package: CudaPackage, release: PackageRelease, builds: Sequence[PackageBuild]
) -> tuple[list[str], list[str]]:
    """Where the index says otherwise than a release the file has (its entry is kept), and the
    file's builds marked unconfirmed whose arch list the wheels now confirm (notes)."""
    found: list[str] = []
    confirmed: list[str] = []
    for build in builds:
        known = release.build(build.name)
        if known is None:
            continue
        if known.distribution != build.distribution:
            continue
        says = "its find-links page says" if build.find_links is not None else "the index says"
        if len(known.cuda.release) > 1 and len(build.cuda.release) > 1 and known.cuda != build.cuda:
            why = _CUDA_SOURCE.search(build.source.text)
            found.append(
                f"{package.name} {release.version} {build.name}: cuda: the catalog has {known.cuda}, "
                f"the wheel {build.cuda}{f' ({why.group(1)})' if why else ''}"
            )
        if (known.torch or SpecifierSet()) != (build.torch or SpecifierSet()):
            found.append(
                f"{package.name} {release.version} {build.name}: torch: the catalog has "
                f"{known.torch or 'none'!s}, {says} {build.torch or 'none'!s}"
            )
        if pins_differ(known.requires, build.requires):
            found.append(
                f"{package.name} {release.version} {build.name}: requires: the catalog has "
                f"[{', '.join(known.requires)}], {says} [{', '.join(build.requires)}]"
            )
        if build.unconfirmed is None:  # its arch list was read from the wheel
            label = f"{package.name} {release.version} {build.name}"
            differ = coverage_difference(known.archs, build.archs)
            if differ:
                shown = " ".join(str(a) for a in sorted(known.archs))
                read = " ".join(str(a) for a in sorted(build.archs))
                found.append(
                    f"{label}: archs: the catalog has {shown}, the wheel's libraries carry {read} ({differ})"
                )
            elif known.unconfirmed is not None:
                confirmed.append(
                    f"{label}: the wheel confirms the arch list marked unconfirmed (unconfirmed can go)"
                )
    return found, confirmed


@record
class _Derivation:
    """What ``derive_packages`` reads with and gathers as it goes: the new releases, the new
    builds of releases the file has, the contradictions and the notes."""

    reader: IndexReader
    torch_builds: Sequence[tuple[Version, str]]
    releases: list[PackageRelease]
    added: list[PackageRelease]
    contradictions: list[str]
    notes: list[str]
    pythons: list[PythonRange]


def derive_packages(
    reader: IndexReader, packages: Sequence[CudaPackage], torch_builds: Sequence[tuple[Version, str]] = ()
) -> PackagesDerived:
    """For each known package of the file, the releases the default index has beyond its
    newest (``--releases``: those it names), the builds of those it has that it lacks, and the
    contradictions with those it has. ``torch_builds``: the torch releases and CUDA builds
    (``2.9.0``, ``cu128``) whose find-links pages are looked for beside the named ones."""
    run = _Derivation(reader, torch_builds, [], [], [], [], [])
    for package in packages:
        if package.name not in CUDA_PACKAGES:
            run.notes.append(f"{package.name}: not a package colabenv knows by name; not refreshed")
            continue
        newest = max(r.version for r in package.releases)
        on_index = _wheels_of(run, package, newest)
        wanted = [v for v in on_index if _wanted(reader.options.releases, v, newest)]
        for version in reversed(bounded(wanted, reader.options, run.notes, package.name)):
            _derive_release(run, package, version, on_index[version])
    return PackagesDerived(
        tuple(run.releases), tuple(run.contradictions), tuple(run.notes), tuple(run.added), tuple(run.pythons)
    )


def _wheels_of(run: _Derivation, package: CudaPackage, newest: Version) -> dict[Version, list[_Found]]:
    """The wheels of ``package``'s distributions by release, in each place they are: the default
    index, the PyTorch index, the other indexes and the find-links pages the file's builds name
    (and those guessed beside the pages); empty (noted) where there are none."""
    options = run.reader.options
    on_index: dict[Version, list[_Found]] = {}
    pages = find_links_pages(package) if options.find_links else ()
    guessed = guessed_pages(pages, run.torch_builds)
    for distribution, major in _distributions(package.name):
        for version, wheels in by_version(run.reader.wheels(options.index, distribution)).items():
            on_index.setdefault(version, []).append(_Found(distribution, major, tuple(wheels)))
        if options.pytorch_index is not None and _on_pytorch_index(package, distribution):
            for tag, version, wheels in _tagged(run.reader.wheels(options.pytorch_index, distribution)):
                on_index.setdefault(version, []).append(
                    _Found(distribution, major, tuple(wheels), index_url=f"{PYTORCH_INDEX}/{tag}")
                )
        for template in _other_indexes(package, distribution):
            versions = sorted({*on_index, *(r.version for r in package.releases)})
            wanted = [v for v in versions if _wanted(options.releases, v, newest)][-options.release_count :]
            for url in dict.fromkeys(template.replace("{version}", str(v)) for v in wanted):
                try:
                    listed = run.reader.wheels(sources.mirrored(url, options.index_mirror), distribution)
                except IndexUnavailableError as problem:
                    run.notes.append(f"{package.name}: the index {url} was not read ({problem})")
                    continue
                for version, wheels in by_local_tag(listed):
                    if "{version}" not in template or url == template.replace("{version}", str(version)):
                        on_index.setdefault(version, []).append(
                            _Found(distribution, major, tuple(wheels), index_url=url)
                        )
        for page in (*pages, *guessed):
            try:
                listed = run.reader.page_wheels(page, distribution, guessed=page in guessed)
            except IndexUnavailableError as problem:
                run.notes.append(f"{package.name}: the find-links page {page} was not read ({problem})")
                continue
            for version, wheels in by_local_tag(listed):
                on_index.setdefault(version, []).append(
                    _Found(distribution, major, tuple(wheels), find_links=page)
                )
    if not on_index:
        run.notes.append(
            f"{package.name}: no Linux x86_64 wheel on its find-links pages: not refreshed"
            if pages
            else f"{package.name}: no Linux x86_64 wheel on {options.index_label} (its builds live "
            "elsewhere: not refreshed)"
        )
    return on_index


def _derive_release(
    run: _Derivation, package: CudaPackage, version: Version, found: Sequence[_Found]
) -> None:
    """Release ``version`` of ``package`` from its wheels ``found``: where the file has it, the
    builds it lacks and where the wheels contradict it; else the new release."""
    builds = [b for f in found for b in _build(run.reader, package, version, f, run.notes)]
    needs = _needs(run.reader, package, version, found, run.notes)
    known = package.release(version)
    if known is None:
        _new_release(run, package, version, builds, needs)
        return
    differing, confirmed = _compare(package, known, builds)
    if builds and known.needs != needs:
        differing.append(
            f"{package.name} {version}: packages: the catalog has [{_needs_text(known.needs)}], "
            f"the wheels require [{_needs_text(needs)}]"
        )
    python_differing, run_pythons = compare_pythons(known, builds)
    run.contradictions.extend([*differing, *python_differing])
    run.pythons.extend(run_pythons)
    run.notes.extend(confirmed)
    new = [_trimmed(b, known.python) for b in builds if known.build(b.name) is None]
    if new:
        run.added.append(dataclasses.replace(known, builds=tuple(new), overlay=None))


def _new_release(
    run: _Derivation,
    package: CudaPackage,
    version: Version,
    builds: list[PackageBuild],
    needs: tuple[tuple[NormalizedName, SpecifierSet], ...],
) -> None:
    """Release ``version`` of ``package``, which the file lacks, from its ``builds``: one Python
    range for all where they agree; left out (noted) where there is no build, two have one
    name, or one states no Python range."""
    if not builds:
        run.notes.append(f"{package.name} {version} left out: no build could be derived")
        return
    names = [b.name for b in builds]
    if len(set(names)) != len(names):
        run.notes.append(f"{package.name} {version} left out: two wheels give the build name {names}")
        return
    pythons = [b.python for b in builds if b.python is not None]
    if len(pythons) != len(builds):
        run.notes.append(f"{package.name} {version} left out: a wheel states no Python range")
        return
    if all(p == pythons[0] for p in pythons):
        python = pythons[0]
        builds = [_without_python(b) for b in builds]
    else:  # each build keeps its own range under the release's widest lower bound
        low = min(v for p in pythons for v in sources.PYTHONS if p.contains(v, prereleases=True))
        python = SpecifierSet(f">={low}")
    read_pages = sorted({b.find_links for b in builds if b.find_links is not None})
    indexed = any(b.find_links is None for b in builds)
    where = f"{run.reader.options.index_label} " if indexed else ""
    run.releases.append(
        PackageRelease(
            package.name,
            version,
            python,
            tuple(builds),
            Source(
                f"{where}{package.name} {version}: the Linux x86_64 wheels of "
                f"{', '.join(sorted({str(b.distribution) for b in builds}))}"
                f"{' on ' + ', '.join(read_pages) if read_pages else ''}; {stamp()}"
            ),
            needs=needs,
        )
    )
    if read_pages:
        run.notes.append(
            f"{package.name} {version}: read from {len(read_pages)} find-links page(s) "
            f"({', '.join(read_pages)}): those its builds before name, and those of the torch "
            "catalog's newer releases"
        )


def _on_pytorch_index(package: CudaPackage, distribution: str) -> bool:
    """Whether the file has a build of ``distribution`` on the PyTorch index (xformers')."""
    return any(
        b.distribution == canonicalize_name(distribution)
        and b.index_url is not None
        and b.index_url.startswith(PYTORCH_INDEX + "/")
        for r in package.releases
        for b in r.builds
    )


def _tagged(wheels: Sequence[Wheel]) -> list[tuple[str, Version, list[Wheel]]]:
    """The ``+cuXYZ`` wheels of a PyTorch index page: (tag, public version, wheels)."""
    found: dict[tuple[str, Version], list[Wheel]] = {}
    for wheel in wheels:
        tag = wheel.version.local
        if tag is not None and cuda_of_tag(tag) is not None:
            found.setdefault((tag, Version(wheel.version.public)), []).append(wheel)
    return [(tag, version, found[(tag, version)]) for tag, version in sorted(found)]


@model
class _Found:
    """Wheels of one release of ``distribution`` in one place: the default index, a PyTorch
    index folder (``index_url``) or a find-links page (``find_links``)."""

    distribution: str
    major: int | None
    wheels: tuple[Wheel, ...]
    index_url: str | None = None
    find_links: str | None = None


def _without_python(build: PackageBuild) -> PackageBuild:
    """``build`` whose Python range is its release's (not written twice)."""
    return dataclasses.replace(build, python=None)


def _wanted(releases: SpecifierSet | None, version: Version, newest: Version) -> bool:
    """Whether refresh reads ``version``: those ``--releases`` names, else the file's newest
    release and those past it."""
    return releases.contains(version, prereleases=True) if releases is not None else version >= newest


def _trimmed(build: PackageBuild, python: SpecifierSet) -> PackageBuild:
    """A new build of a release the file has: its own Python range only where it differs."""
    return _without_python(build) if build.python == python else build


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


def _needs(
    reader: IndexReader, package: CudaPackage, version: Version, found: Sequence[_Found], notes: list[str]
) -> tuple[tuple[NormalizedName, SpecifierSet], ...]:
    """The other known CUDA packages the release's wheels require (cuML's ``cudf-cu12==26.8.*``:
    cudf ==26.8.*), by package name; where its wheels differ, the first's, with a note."""
    needs: dict[NormalizedName, SpecifierSet] = {}
    for where in found:
        for requirement in requirements_of(reader.metadata(preferred(where.wheels))):
            other = package_of(requirement.name)
            if other is None or other.name == package.name:
                continue
            known = needs.setdefault(other.name, requirement.specifier)
            if known != requirement.specifier:
                notes.append(
                    f"{package.name} {version}: its wheels require {other.name} differently "
                    f"({known} and {requirement.specifier}); the first is written"
                )
    return tuple(sorted(needs.items()))


def _needs_text(needs: Sequence[tuple[NormalizedName, SpecifierSet]]) -> str:
    return ", ".join(f"{name}{spec}" for name, spec in needs) or "none"


def _built_with(libraries: Sequence[LibraryArchs]) -> str | None:
    """The newest toolkit nvcc names in the GPU code of the wheel's libraries (``12.9.86``),
    None where none names one (compressed fat binaries)."""
    found = {text for library in libraries for text in library.nvcc}
    return max(found, key=Version, default=None)


def _build_name(previous: PackageBuild | None, cuda: Version) -> str:
    """A build without a local tag: named as the build before where their CUDA is the same,
    else after it with this CUDA's digits (``cu130`` before, CUDA 12.9: ``cu129``; a name for
    a CUDA major, ``cuda13``, stays one: ``cuda13`` for 13.1), else ``cuXY`` (``cu12`` for a
    major alone)."""
    digits = "".join(str(part) for part in cuda.release[:2])
    if previous is None:
        return f"cu{digits}"
    if previous.cuda == cuda or (previous.cuda.major == cuda.major and len(previous.cuda.release) == 1):
        return previous.name
    number = re.search(r"\d+", previous.name)
    if number is None:
        return f"cu{digits}"
    new = str(cuda.major) if number.group() == str(previous.cuda.major) else digits
    return previous.name[: number.start()] + new + previous.name[number.end() :]
