"""A CUDA package's ROCm builds as ``catalog refresh packages`` reads them: the wheels of each ROCm
distribution the file's builds name on the default index (CuPy's ``cupy-rocm-7-0``: one project
page per ROCm line), and the ``+rocmX.Y`` wheels of a PyTorch index page the file has builds on
(xformers' ``rocm6.4``).

Each release's build is derived as a CUDA build is (:mod:`.package_builds`): its Python range and
free-threaded Pythons from the files' tags, the torch it requires from the wheel's METADATA; its
ROCm from the distribution's line or the local tag, its gfx list from the HIP offload bundles of
the wheel's libraries (:func:`colabenv.curation.offload_bundles.read_wheel_gfx`). A bundle that
cannot be unpacked here (zstd before Python 3.14), or a wheel with none, leaves the build out
with a note: a gfx list is never guessed. With ``--archs carry`` the list of the build before
(the same distribution in the same place) is carried over and the build marked unconfirmed.

A build the file has is compared (its gfx list, where read: a contradiction); one whose place
was read and has no file of its release is gone (a contradiction, the entry kept)."""

from __future__ import annotations

from collections.abc import Sequence

from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv.curation.refresh import sources
from colabenv.curation.refresh.build_facts import NOT_READ, python_tags
from colabenv.curation.refresh.package_builds import Found, found_build, torch_of, where_read
from colabenv.curation.refresh.rocm_builds import rocm_of_tag, wheel_gfx
from colabenv.curation.refresh.sources import PYTORCH_INDEX, IndexReader, Wheel, by_version, preferred, stamp
from colabenv.errors import IndexUnavailableError, InputError
from colabenv.models import CudaPackage, PackageBuild, PackageRelease, Source

GfxFound = tuple[tuple[str, ...], str | None, str]
"""A gfx list, the reason it is unconfirmed (None: read from the wheel), and where it comes from."""


def rocm_lines(package: CudaPackage) -> tuple[tuple[str, Version], ...]:
    """The ROCm distributions on the default index that the file's builds of ``package`` name
    (``cupy-rocm-7-0``, ROCm 7.0), each once, oldest ROCm first."""
    lines = {
        (str(build.distribution), build.rocm)
        for release in package.releases
        for build in release.builds
        if build.rocm is not None and build.index_url is None and build.find_links is None
    }
    return tuple(sorted(lines, key=lambda line: line[1]))


def rocm_line_wheels(reader: IndexReader, package: CudaPackage) -> list[tuple[Version, Found]]:
    """The wheels of each ROCm line of :func:`rocm_lines` on the default index, by release (a
    page the index does not have: none)."""
    found = []
    for distribution, rocm in rocm_lines(package):
        listed = reader.wheels(reader.options.index, distribution)
        for version, wheels in by_version(listed).items():
            found.append((version, Found(distribution, None, tuple(wheels), rocm=rocm)))
    return found


def on_pytorch_index(build: PackageBuild) -> bool:
    return build.index_url is not None and build.index_url.startswith(PYTORCH_INDEX + "/")


def rocm_build_before(package: CudaPackage, version: Version, found: Found) -> PackageBuild | None:
    """The file's ROCm build of ``found``'s distribution in the same place: in ``version`` where
    the file has it (to compare with), else in the newest older release (to carry from)."""
    like = sorted(
        (
            (release.version, build)
            for release in package.releases
            for build in release.builds
            if build.rocm is not None
            and build.distribution == canonicalize_name(found.distribution)
            and build.index_url == found.index_url
            and release.version <= version
        ),
        key=lambda pair: pair[0],
        reverse=True,
    )
    return like[0][1] if like else None


def derive_rocm_build(
    reader: IndexReader, package: CudaPackage, version: Version, found: Found, notes: list[str]
) -> list[PackageBuild]:
    """The ROCm build ``found`` is (one release of a ROCm distribution, or of ``+rocmX.Y``
    wheels, in one place); empty: left out (in ``notes``)."""
    assert found.rocm is not None
    wheel = preferred(found.wheels)
    metadata = reader.metadata(wheel)
    tag = wheel.version.local
    previous = rocm_build_before(package, version, found)
    name = previous.name if previous is not None else tag or f"rocm{found.rocm}"
    gfx = _gfx(reader, wheel, previous, f"{package.name} {version} {name}", notes)
    if gfx is None:
        return []
    listed, unconfirmed, gfx_source = gfx
    try:
        python = sources.python_range(found.wheels, metadata.requires_python)
    except sources.RefreshProblem:
        python = None
    if tag is not None and rocm_of_tag(tag) is not None:
        rocm_source = f"rocm: the local tag +{tag}"
    else:
        rocm_source = f"rocm: the distribution's ROCm line ({found.distribution})"
    where = where_read(reader, found.index_url, None)
    read = (
        f"{where}: {wheel.file.filename} ({python_tags(found.wheels)}) METADATA Requires-Dist "
        f"(markers dropped), Requires-Python {metadata.requires_python or 'not stated'}"
    )
    source = Source(f"{read}; {rocm_source}; {gfx_source}; {stamp()}")
    return [
        found_build(found, name, tag, python, source, unconfirmed, torch=torch_of(reader, wheel), gfx=listed)
    ]


def _gfx(
    reader: IndexReader, wheel: Wheel, previous: PackageBuild | None, label: str, notes: list[str]
) -> GfxFound | None:
    """The gfx list of the build ``label``: read from ``wheel``, or with ``--archs carry`` the
    build before's (``previous``); None, noted, where neither is there."""
    if not reader.options.read_archs:
        if previous is None or not previous.gfx:
            notes.append(f"{label} left out: no gfx list ({NOT_READ}; no ROCm build before to carry it from)")
            return None
        why = f"{NOT_READ}; the gfx list is carried over from {previous.name} of the release before"
        return previous.gfx, why, f"gfx: {why}"
    read = _read_gfx(reader, wheel)
    if isinstance(read, str):
        notes.append(f"{label} left out: no gfx list ({read}): a ROCm build's gfx list is never guessed")
        return None
    return read


def _read_gfx(reader: IndexReader, wheel: Wheel) -> GfxFound | str:
    """The gfx every library with HIP offload bundles in ``wheel`` carries, and where it was
    read; else why there is none (a bundle not unpacked here, none found, the wheel unread)."""
    file = wheel.file.filename
    try:
        found = wheel_gfx(reader, wheel)
    except (InputError, IndexUnavailableError) as problem:
        return f"{file} could not be read: {problem}"
    if found.unread:
        return (
            f"{found.unread} compressed HIP offload bundle(s) in {file} cannot be unpacked here "
            "(zstd: read where Python has compression.zstd, 3.14 and later)"
        )
    if not found.libraries:
        return f"no library with HIP offload bundles in {file}"
    if not found.common:
        return f"the libraries with HIP offload bundles in {file} share no gfx"
    names = ", ".join(library.path for library in found.libraries)
    digest = f" (sha256 {wheel.file.sha256})" if wheel.file.sha256 else ""
    return found.common, None, f"gfx: the targets every HIP offload bundle names in {names} of {file}{digest}"


def compare_rocm_build(label: str, known: PackageBuild, build: PackageBuild) -> tuple[list[str], list[str]]:
    """Where a ROCm build read from its wheel (``build``) and the file's (``known``) disagree
    (contradictions), and a gfx list marked unconfirmed that the wheel confirms (a note);
    nothing where the gfx list was carried, not read."""
    found: list[str] = []
    if known.rocm != build.rocm:
        found.append(f"{label}: rocm: the catalog has {known.rocm}, the files read say {build.rocm}")
    if build.unconfirmed is not None:
        return found, []
    if set(known.gfx) != set(build.gfx):
        found.append(
            f"{label}: gfx: the catalog has {' '.join(known.gfx)}, the wheel's libraries carry "
            f"{' '.join(build.gfx)}"
        )
        return found, []
    if known.unconfirmed is not None:
        return found, [f"{label}: the wheel confirms the gfx list marked unconfirmed (unconfirmed can go)"]
    return found, []


def gone_rocm_builds(
    reader: IndexReader, release: PackageRelease, found: Sequence[Found], pytorch_read: bool
) -> list[str]:
    """The ROCm builds the file lists for ``release`` whose place was read (a ROCm line's page
    on the default index; the PyTorch index where ``pytorch_read``) and has no file of it."""
    said = []
    for build in release.builds:
        if build.rocm is None or build.find_links is not None:
            continue
        if build.index_url is not None and not (on_pytorch_index(build) and pytorch_read):
            continue  # another index, or the PyTorch index unread: carried over as it is
        if any(
            f.rocm is not None
            and canonicalize_name(f.distribution) == build.distribution
            and f.index_url == build.index_url
            for f in found
        ):
            continue
        where = where_read(reader, build.index_url, None)
        said.append(
            f"{release.package} {release.version}: the catalog lists {build.name}, which the index does "
            f"not have (no {build.distribution} {release.version} wheel on {where})"
        )
    return said
