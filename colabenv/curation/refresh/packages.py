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

from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from colabenv.curation.refresh import sources
from colabenv.curation.refresh.find_links import by_local_tag, find_links_pages, guessed_pages
from colabenv.curation.refresh.package_builds import Found, derive_build, index_template
from colabenv.curation.refresh.package_platforms import (
    aarch64_builds,
    aarch64_read,
    catalog_platform_view,
    compare_aarch64,
    compare_free_threaded,
    rocm_said,
)
from colabenv.curation.refresh.package_pythons import PythonRange, compare_pythons
from colabenv.curation.refresh.package_rocm_builds import (
    compare_rocm_build,
    derive_rocm_build,
    gone_rocm_builds,
    on_pytorch_index,
    rocm_line_wheels,
    rocm_lines,
)
from colabenv.curation.refresh.rocm_builds import rocm_of_tag
from colabenv.curation.refresh.selection import bounded
from colabenv.curation.refresh.sources import (
    PYTORCH_INDEX,
    IndexReader,
    Wheel,
    by_version,
    cuda_of_tag,
    preferred,
    requirements_of,
    stamp,
)
from colabenv.curation.refresh.writer import coverage_difference, pins_differ
from colabenv.errors import IndexUnavailableError
from colabenv.models import CudaPackage, PackageBuild, PackageRelease, Source
from colabenv.models.frameworks import CUDA_PACKAGES, PACKAGE_MAJORS, package_of
from colabenv.models.frozen import model, record

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
            and (template := index_template(b.index_url, r.version)) is not None
        )
    )


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
        if (
            known.cuda is not None
            and build.cuda is not None
            and len(known.cuda.release) > 1
            and len(build.cuda.release) > 1
            and known.cuda != build.cuda
        ):
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
        if build.rocm is not None:
            rocm_found, rocm_confirmed = compare_rocm_build(
                f"{package.name} {release.version} {build.name}", known, build
            )
            found.extend(rocm_found)
            confirmed.extend(rocm_confirmed)
        elif build.unconfirmed is None:  # its arch list was read from the wheel
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
    pytorch_read: set[str]
    """The packages whose distributions' PyTorch index pages were read."""


def derive_packages(
    reader: IndexReader, packages: Sequence[CudaPackage], torch_builds: Sequence[tuple[Version, str]] = ()
) -> PackagesDerived:
    """For each known package of the file, the releases the default index has beyond its
    newest (``--releases``: those it names), the builds of those it has that it lacks, and the
    contradictions with those it has. ``torch_builds``: the torch releases and CUDA builds
    (``2.9.0``, ``cu128``) whose find-links pages are looked for beside the named ones."""
    run = _Derivation(reader, torch_builds, [], [], [], [], [], set())
    for package in packages:
        if package.name not in CUDA_PACKAGES:
            run.notes.append(f"{package.name}: not a package colabenv knows by name; not refreshed")
            continue
        newest = max(r.version for r in package.releases)
        on_index = _wheels_of(run, package, newest)
        wanted = [v for v in on_index if _wanted(reader.options.releases, v, newest)]
        read = bounded(wanted, reader.options, run.notes, package.name)
        for version in reversed(read):
            _derive_release(run, package, version, on_index[version])
        distributions = [name for name, _ in _distributions(package.name)]
        distributions += [name for name, _ in rocm_lines(package)]
        unread = _pytorch_rocm_unread(run, package)
        if unread is None:
            rocm = rocm_said(reader, package.name, distributions, {v: on_index[v] for v in read})
            run.notes.extend([rocm] if rocm else [])
        else:
            run.notes.extend(unread)
        known = (r.version for r in package.releases)
        run.notes.extend(reader.yanked.notes(package.name, distributions, known, reader.options))
    return PackagesDerived(
        tuple(run.releases), tuple(run.contradictions), tuple(run.notes), tuple(run.added), tuple(run.pythons)
    )


def _wheels_of(run: _Derivation, package: CudaPackage, newest: Version) -> dict[Version, list[Found]]:
    """The wheels of ``package``'s distributions by release, in each place they are: the default
    index, the PyTorch index, the other indexes and the find-links pages the file's builds name
    (and those guessed beside the pages); empty (noted) where there are none."""
    options = run.reader.options
    on_index: dict[Version, list[Found]] = {}
    pages = find_links_pages(package) if options.find_links else ()
    guessed = guessed_pages(pages, run.torch_builds)
    for distribution, major in _distributions(package.name):
        for version, wheels in by_version(run.reader.wheels(options.index, distribution)).items():
            on_index.setdefault(version, []).append(Found(distribution, major, tuple(wheels)))
        for version, place in _pytorch_index_wheels(run, package, distribution, major):
            on_index.setdefault(version, []).append(place)
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
                            Found(distribution, major, tuple(wheels), index_url=url)
                        )
        for page in (*pages, *guessed):
            try:
                listed = run.reader.page_wheels(page, distribution, guessed=page in guessed)
            except IndexUnavailableError as problem:
                run.notes.append(f"{package.name}: the find-links page {page} was not read ({problem})")
                continue
            for version, wheels in by_local_tag(listed):
                on_index.setdefault(version, []).append(
                    Found(distribution, major, tuple(wheels), find_links=page)
                )
    for version, place in rocm_line_wheels(run.reader, package):
        on_index.setdefault(version, []).append(place)
    if not on_index:
        run.notes.append(
            f"{package.name}: no Linux x86_64 wheel on its find-links pages: not refreshed"
            if pages
            else f"{package.name}: no Linux x86_64 wheel on {options.index_label} (its builds live "
            "elsewhere: not refreshed)"
        )
    return on_index


def _derive_release(run: _Derivation, full: CudaPackage, version: Version, found: Sequence[Found]) -> None:
    """Release ``version`` of ``full`` from its wheels ``found``: where the file has it, the
    builds it lacks and where the wheels contradict it; else the new release. The x86-64 wheels
    are held to the builds listed for linux_x86_64; the aarch64 files beside them to the
    builds' platforms."""
    package = catalog_platform_view(full)
    derive = {False: derive_build, True: derive_rocm_build}
    per_place = [(f, derive[f.rocm is not None](run.reader, package, version, f, run.notes)) for f in found]
    builds = [b for _, place_builds in per_place for b in place_builds]
    needs = _needs(run.reader, package, version, found, run.notes)
    aarch64 = [aarch64_read(run.reader, f, b) for f, b in per_place if f.rocm is None]
    known = package.release(version)
    if known is None:
        twins, said = aarch64_builds(run.reader, package.name, version, aarch64, [b.name for b in builds])
        if _new_release(run, package, version, builds, needs, twins):
            run.notes.extend(said)
        return
    full_known = full.release(version)
    assert full_known is not None
    run.contradictions.extend(compare_aarch64(run.reader, full_known, aarch64))
    pytorch_read = package.name in run.pytorch_read
    run.contradictions.extend(gone_rocm_builds(run.reader, full_known, found, pytorch_read))
    differing, confirmed = _compare(package, known, builds)
    free_threaded_differing, free_threaded_confirmed = compare_free_threaded(known, builds)
    if builds and known.needs != needs:
        differing.append(
            f"{package.name} {version}: packages: the catalog has [{_needs_text(known.needs)}], "
            f"the wheels require [{_needs_text(needs)}]"
        )
    python_differing, run_pythons = compare_pythons(known, builds)
    run.contradictions.extend([*differing, *python_differing, *free_threaded_differing])
    run.pythons.extend(run_pythons)
    run.notes.extend([*confirmed, *free_threaded_confirmed])
    new = [_trimmed(b, known.python) for b in builds if known.build(b.name) is None]
    twins, said = aarch64_builds(run.reader, package.name, version, aarch64, [b.name for b in new])
    run.notes.extend(said)
    if new:
        run.added.append(dataclasses.replace(known, builds=(*new, *twins), overlay=None))


def _new_release(
    run: _Derivation,
    package: CudaPackage,
    version: Version,
    builds: list[PackageBuild],
    needs: tuple[tuple[NormalizedName, SpecifierSet], ...],
    twins: Sequence[PackageBuild] = (),
) -> bool:
    """Release ``version`` of ``package``, which the file lacks, from its ``builds`` (and
    ``twins``: those of them written again for linux_aarch64): one Python range for all where
    they agree; left out (noted) where there is no build, two have one name, or one states no
    Python range. Whether it is written."""
    if not builds:
        run.notes.append(f"{package.name} {version} left out: no build could be derived")
        return False
    names = [b.name for b in builds]
    if len(set(names)) != len(names):
        run.notes.append(f"{package.name} {version} left out: two wheels give the build name {names}")
        return False
    pythons = [b.python for b in builds if b.python is not None]
    if len(pythons) != len(builds):
        run.notes.append(f"{package.name} {version} left out: a wheel states no Python range")
        return False
    builds = [*builds, *twins]
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
    return True


def _pytorch_index_wheels(
    run: _Derivation, package: CudaPackage, distribution: str, major: int | None
) -> list[tuple[Version, Found]]:
    """The ``+cuXYZ`` and ``+rocmX.Y`` wheels of ``distribution``'s PyTorch index page, where the
    file has a build there and the index is read (``--no-variant-index``: not; unreachable: a
    note, and the file's builds there are carried over as they are)."""
    index = run.reader.options.pytorch_index
    if index is None or not _on_pytorch_index(package, distribution):
        return []
    try:
        listed = run.reader.wheels(index, distribution)
    except IndexUnavailableError as problem:
        run.notes.append(
            f"{package.name}: the PyTorch index was not read ({problem}): its builds there are "
            "carried over as the catalog has them"
        )
        return []
    run.pytorch_read.add(package.name)
    return [
        (
            version,
            Found(
                distribution, major, tuple(wheels), index_url=f"{PYTORCH_INDEX}/{tag}", rocm=rocm_of_tag(tag)
            ),
        )
        for tag, version, wheels in _tagged(listed)
    ]


def _pytorch_rocm_unread(run: _Derivation, package: CudaPackage) -> list[str] | None:
    """Where the file has ROCm builds of ``package`` on the PyTorch index and that index was not
    read, the notes to say in place of :func:`rocm_said`'s: that they are carried over as they
    are (``--no-variant-index``; an unreachable index has its own note already). None where
    there are none, or they were read."""
    names = sorted({b.name for r in package.releases for b in r.builds if b.rocm and on_pytorch_index(b)})
    if not names or package.name in run.pytorch_read:
        return None
    if run.reader.options.pytorch_index is not None:
        return []
    return [
        f"{package.name}: its ROCm builds on the PyTorch index ({', '.join(names)}) are carried over "
        "as the catalog has them: that index was not read (--no-variant-index)"
    ]


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
    """The ``+cuXYZ`` and ``+rocmX.Y`` wheels of a PyTorch index page: (tag, public version,
    wheels)."""
    found: dict[tuple[str, Version], list[Wheel]] = {}
    for wheel in wheels:
        tag = wheel.version.local
        if tag is not None and (cuda_of_tag(tag) is not None or rocm_of_tag(tag) is not None):
            found.setdefault((tag, Version(wheel.version.public)), []).append(wheel)
    return [(tag, version, found[(tag, version)]) for tag, version in sorted(found)]


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


def _needs(
    reader: IndexReader, package: CudaPackage, version: Version, found: Sequence[Found], notes: list[str]
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
