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

from colabenv.curation.refresh.sources import (
    PYTHONS,
    PYTORCH_INDEX,
    IndexReader,
    Metadata,
    RefreshProblem,
    Wheel,
    by_version,
    cuda_of_pins,
    cuda_of_tag,
    mirrored,
    nvidia_pins,
    preferred,
    python_range,
    requirements_of,
    stamp,
)
from colabenv.curation.refresh.writer import coverage_difference, pins_differ
from colabenv.errors import IndexUnavailableError
from colabenv.models import Arch, CudaPackage, PackageBuild, PackageRelease, Source
from colabenv.models.frameworks import CUDA_PACKAGES, PACKAGE_MAJORS, package_of
from colabenv.models.frozen import model

if TYPE_CHECKING:
    from colabenv.curation.archs import LibraryArchs

_PAGE_NAME = re.compile(r"torch-(\d+\.\d+\.\d+)\+(cu\d{3}|cpu)\.html$")
"""A data.pyg.org find-links page: the torch release and CUDA build its wheels are built for."""
_TAG_CUDA = re.compile(r"cu(\d{2})(\d)(?!\d)")
"""``pt28cu126`` -> CUDA 12.6 (a ``cuNNN`` inside a local tag)."""
_LIBRARY_CUDA = re.compile(r"cuda(\d{2})(\d)(?!\d)")
"""``libbitsandbytes_cuda128.so`` -> CUDA 12.8 (a library of a wheel that carries one per CUDA)."""
_CUDA_SOURCE = re.compile(r"cuda: ([^;]+)")
"""Where a derived build's CUDA came from, as its source says (``the local tag +cu128``)."""
_TAG_TORCH = re.compile(r"^pt(\d)(\d{1,2})cu|torch(\d+)\.(\d+)")
"""``pt28cu126``, ``pt211cu128`` (torch 2.8, 2.11) and ``cu12torch2.8cxx11abiTRUE``."""


@model
class PackagesDerived:
    """The releases the index has that the file lacks (per package, newest first), the builds it
    has of releases the file has but lacks (each such release holding only those builds), the
    contradictions with the releases it has, and what could not be derived."""

    releases: tuple[PackageRelease, ...]
    contradictions: tuple[str, ...]
    notes: tuple[str, ...]
    builds: tuple[PackageRelease, ...] = ()


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
    reader: IndexReader,
    package: CudaPackage,
    version: Version,
    distribution: str,
    major: int | None,
    wheels: Sequence[Wheel],
    notes: list[str],
    index_url: str | None = None,
    find_links: str | None = None,
) -> list[PackageBuild]:
    """The build ``wheels`` are (one release of ``distribution`` in one place), or one build
    per library where the wheel carries one library per CUDA; empty: left out (in ``notes``)."""
    wheel = preferred(wheels)
    tag = wheel.version.local
    metadata = reader.metadata(wheel)
    pins = nvidia_pins(requirements_of(metadata))
    native = _native_wheel(reader, wheel, distribution, metadata, notes)
    if native is not None:
        pins = tuple(dict.fromkeys((*pins, *nvidia_pins(requirements_of(reader.metadata(native))))))
    previous = _previous_build(package, version, distribution, tag, index_url)
    cuda = cuda_of_tag(tag) if tag else None
    cuda_source = f"cuda: the local tag +{tag}"
    if cuda is None and find_links is not None:
        cuda, cuda_source = _page_cuda(find_links, tag)
    built = _built_with(reader.libraries(wheel)) if reader.options.read_archs else None
    line = previous is not None and len(previous.cuda.release) == 1  # one wheel per CUDA major
    if cuda is None and built is not None and not line:
        cuda = Version(".".join(built.split(".")[:2]))
        cuda_source = f"cuda: the nvcc its GPU code names ({built})"
    if cuda is None and previous is not None:
        cuda, cuda_source = previous.cuda, f"cuda: carried over from the build {previous.name} before"
    if cuda is None and major is not None:
        cuda, cuda_source = Version(str(major)), f"cuda: the distribution's major ({distribution})"
    if cuda is None:
        cuda = cuda_of_pins(pins)
        cuda_source = "cuda: the CUDA runtime its NVIDIA requirements ask for at least"
    if cuda is None:
        notes.append(f"{package.name} {version} {wheel.file.filename} left out: nothing states its CUDA")
        return []
    if find_links is not None and previous is not None:
        name = previous.name  # the build with this local tag (flash-attn's cu12torch2.8 ...)
    else:
        known = package.release(version)
        same = known is not None and previous is not None and previous in known.builds
        like = previous or _nearest_build(package, version, distribution, tag, index_url)
        name = tag or (previous.name if same and previous is not None else _build_name(like, cuda))
    archs: tuple[Arch, ...] = ()
    unconfirmed = None
    libraries: tuple[tuple[str, Version, LibraryArchs], ...] = ()
    if reader.options.read_archs:
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
    else:
        why = "the wheel was not read (--archs carry)"
    if not archs:
        if previous is None:
            notes.append(
                f"{package.name} {version} {name} left out: no arch list ({why}; no build before "
                "to carry it from)"
            )
            return []
        archs = previous.archs
        unconfirmed = f"{why}; the arch list is carried over from {previous.name} of the release before"
        archs_source = f"archs: {unconfirmed}"
    where = _where(reader, index_url, find_links)
    try:
        python: SpecifierSet | None = python_range(wheels, metadata.requires_python)
    except RefreshProblem:
        python = None
    torch = _torch_of(reader, wheel)
    torch_source = ""
    if find_links is not None and not torch:  # none, or any torch: the page and tag say which
        torch, torch_source = _page_torch(find_links, tag, previous)
    native_source = (
        f" and of {native.file.filename}, the wheel of its compiled code it requires" if native else ""
    )
    read = (
        f"{where}: {wheel.file.filename} METADATA Requires-Dist{native_source} (markers dropped), "
        f"Requires-Python {metadata.requires_python or 'not stated'}; {torch_source}"
    )
    build = PackageBuild(
        name=name,
        distribution=canonicalize_name(distribution),
        cuda=cuda,
        torch=torch,
        index_url=index_url,
        find_links=find_links,
        local_tag=tag,
        archs=archs,
        requires=pins,
        python=python,
        source=Source(f"{read}{cuda_source}; {archs_source}; {stamp()}"),
        unconfirmed=unconfirmed,
    )
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
    ] or [build]


def _where(reader: IndexReader, index_url: str | None, find_links: str | None) -> str:
    if find_links is not None:
        return f"the find-links page {find_links}"
    if index_url is not None and not index_url.startswith(PYTORCH_INDEX + "/"):
        return f"the index {index_url}"
    return "the PyTorch index" if index_url else reader.options.index_label


def _page_cuda(page: str, tag: str | None) -> tuple[Version | None, str]:
    """The CUDA a find-links build is for: the page's name (``torch-2.8.0+cu126.html``), else a
    ``cuNNN`` in its local tag; None when neither says."""
    named = _PAGE_NAME.search(page)
    if named is not None and named.group(2) != "cpu":
        return cuda_of_tag(named.group(2)), f"cuda: the find-links page's name (+{named.group(2)})"
    found = _TAG_CUDA.search(tag or "")
    if found is not None:
        return Version(f"{found.group(1)}.{found.group(2)}"), f"cuda: the local tag +{tag}"
    return None, ""


def _page_torch(page: str, tag: str | None, previous: PackageBuild | None) -> tuple[SpecifierSet | None, str]:
    """The torch a find-links build is for, where its METADATA names none (or any): the page's
    name (``torch-2.9.0+cu128.html``: ==2.9.*, as data.pyg.org serves the binaries of a torch
    minor's every patch release from its .0 page), else its local tag (``pt28cu126``,
    ``cu12torch2.8``: ==2.8.*), else the build before's."""
    named = _PAGE_NAME.search(page)
    if named is not None:
        minor = ".".join(named.group(1).split(".")[:2])  # a page serves every patch release
        return SpecifierSet(f"=={minor}.*"), "torch: the find-links page's name; "
    found = _TAG_TORCH.search(tag or "")
    if found is not None:
        major, minor = (
            (found.group(1), found.group(2)) if found.group(1) else (found.group(3), found.group(4))
        )
        return SpecifierSet(f"=={major}.{minor}.*"), f"torch: the local tag +{tag}; "
    if previous is not None and previous.torch is not None:
        return previous.torch, f"torch: carried over from the build {previous.name} before; "
    return None, ""


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


def derive_packages(
    reader: IndexReader, packages: Sequence[CudaPackage], torch_builds: Sequence[tuple[Version, str]] = ()
) -> PackagesDerived:
    """For each known package of the file, the releases the default index has beyond its
    newest (``--releases``: those it names), the builds of those it has that it lacks, and the
    contradictions with those it has. ``torch_builds``: the torch releases and CUDA builds
    (``2.9.0``, ``cu128``) whose find-links pages are looked for beside the named ones."""
    options = reader.options
    releases: list[PackageRelease] = []
    added: list[PackageRelease] = []
    contradictions: list[str] = []
    notes: list[str] = []
    for package in packages:
        if package.name not in CUDA_PACKAGES:
            notes.append(f"{package.name}: not a package colabenv knows by name; not refreshed")
            continue
        on_index: dict[Version, list[_Found]] = {}
        newest = max(r.version for r in package.releases)
        pages = _find_links_pages(package) if options.find_links else ()
        guessed = _guessed_pages(pages, torch_builds)
        for distribution, major in _distributions(package.name):
            for version, wheels in by_version(reader.wheels(options.index, distribution)).items():
                on_index.setdefault(version, []).append(_Found(distribution, major, tuple(wheels)))
            if options.pytorch_index is not None and _on_pytorch_index(package, distribution):
                for tag, version, wheels in _tagged(reader.wheels(options.pytorch_index, distribution)):
                    on_index.setdefault(version, []).append(
                        _Found(distribution, major, tuple(wheels), index_url=f"{PYTORCH_INDEX}/{tag}")
                    )
            for template in _other_indexes(package, distribution):
                versions = sorted({*on_index, *(r.version for r in package.releases)})
                wanted = [v for v in versions if _wanted(options.releases, v, newest)]
                for url in dict.fromkeys(template.replace("{version}", str(v)) for v in wanted):
                    try:
                        listed = reader.wheels(mirrored(url, options.index_mirror), distribution)
                    except IndexUnavailableError as problem:
                        notes.append(f"{package.name}: the index {url} was not read ({problem})")
                        continue
                    for version, wheels in _by_local(listed):
                        if "{version}" not in template or url == template.replace("{version}", str(version)):
                            on_index.setdefault(version, []).append(
                                _Found(distribution, major, tuple(wheels), index_url=url)
                            )
            for page in (*pages, *guessed):
                try:
                    listed = reader.page_wheels(page, distribution, guessed=page in guessed)
                except IndexUnavailableError as problem:
                    notes.append(f"{package.name}: the find-links page {page} was not read ({problem})")
                    continue
                for version, wheels in _by_local(listed):
                    on_index.setdefault(version, []).append(
                        _Found(distribution, major, tuple(wheels), find_links=page)
                    )
        if not on_index:
            notes.append(
                f"{package.name}: no Linux x86_64 wheel on its find-links pages: not refreshed"
                if pages
                else f"{package.name}: no Linux x86_64 wheel on {options.index_label} (its builds live "
                "elsewhere: not refreshed)"
            )
            continue
        for version in sorted(on_index, reverse=True):
            if not _wanted(options.releases, version, newest):
                continue
            builds = [
                b
                for f in on_index[version]
                for b in _build(
                    reader,
                    package,
                    version,
                    f.distribution,
                    f.major,
                    f.wheels,
                    notes,
                    f.index_url,
                    f.find_links,
                )
            ]
            needs = _needs(reader, package, version, on_index[version], notes)
            known = package.release(version)
            if known is not None:
                differing, confirmed = _compare(package, known, builds)
                if builds and known.needs != needs:
                    differing.append(
                        f"{package.name} {version}: packages: the catalog has [{_needs_text(known.needs)}], "
                        f"the wheels require [{_needs_text(needs)}]"
                    )
                contradictions.extend(differing)
                notes.extend(confirmed)
                new = [_trimmed(b, known.python) for b in builds if known.build(b.name) is None]
                if new:
                    added.append(dataclasses.replace(known, builds=tuple(new), overlay=None))
                continue
            if not builds:
                notes.append(f"{package.name} {version} left out: no build could be derived")
                continue
            names = [b.name for b in builds]
            if len(set(names)) != len(names):
                notes.append(f"{package.name} {version} left out: two wheels give the build name {names}")
                continue
            pythons = [b.python for b in builds if b.python is not None]
            if len(pythons) != len(builds):
                notes.append(f"{package.name} {version} left out: a wheel states no Python range")
                continue
            if all(p == pythons[0] for p in pythons):
                python = pythons[0]
                builds = [_without_python(b) for b in builds]
            else:  # each build keeps its own range under the release's widest lower bound
                low = min(v for p in pythons for v in PYTHONS if p.contains(v, prereleases=True))
                python = SpecifierSet(f">={low}")
            read_pages = sorted({b.find_links for b in builds if b.find_links is not None})
            indexed = any(b.find_links is None for b in builds)
            where = f"{options.index_label} " if indexed else ""
            releases.append(
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
                notes.append(
                    f"{package.name} {version}: read from {len(read_pages)} find-links page(s) "
                    f"({', '.join(read_pages)}): those its builds before name, and those of the torch "
                    "catalog's newer releases"
                )
    return PackagesDerived(tuple(releases), tuple(contradictions), tuple(notes), tuple(added))


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


def _find_links_pages(package: CudaPackage) -> tuple[str, ...]:
    """The find-links pages the file's builds of ``package`` name, newest release first."""
    ordered = sorted(package.releases, key=lambda r: r.version, reverse=True)
    return tuple(dict.fromkeys(b.find_links for r in ordered for b in r.builds if b.find_links))


def _by_local(wheels: Sequence[Wheel]) -> list[tuple[Version, list[Wheel]]]:
    """A find-links page's wheels by public version and local tag (one build each)."""
    found: dict[tuple[Version, str], list[Wheel]] = {}
    for wheel in wheels:
        found.setdefault((Version(wheel.version.public), wheel.version.local or ""), []).append(wheel)
    return [(version, found[(version, tag)]) for version, tag in sorted(found)]


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


def _guessed_pages(pages: Sequence[str], torch_builds: Sequence[tuple[Version, str]]) -> tuple[str, ...]:
    """The pages data.pyg.org would have for the torch releases newer than any the named pages
    are for: ``torch-X.Y.0+cuNNN.html`` beside them, for each such X.Y.0 release and CUDA build
    of ``torch_builds`` (a site names one page per torch minor, by its .0 release)."""
    named = [(m, page) for page in pages if (m := _PAGE_NAME.search(page)) is not None]
    if not named:
        return ()
    newest = max(Version(m.group(1)) for m, _ in named)
    folders = dict.fromkeys(page[: m.start()] for m, page in named)
    return tuple(
        page
        for folder in folders
        for version, tag in sorted(torch_builds)
        if version > newest and version.micro == 0 and cuda_of_tag(tag) is not None
        if (page := f"{folder}torch-{version}+{tag}.html") not in pages
    )


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
    reader: IndexReader, wheel: Wheel, distribution: str, metadata: Metadata, notes: list[str]
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
