"""What ``colabenv catalog refresh FRAMEWORK`` reads (the indexes, the wheels and their METADATA)
and what the derivation of every framework's entries shares.

What is read, per framework (all through :class:`colabenv.index.client.SimpleClient`, PEP 691
JSON else PEP 503 HTML; a wheel's METADATA from its PEP 658 file where the page offers one,
else from the wheel with HTTP range requests, :func:`colabenv.curation.archs.open_wheel`):

- torch: the default index's wheels give the releases, the Python range (cpXY tags and
  Requires-Python), the default build (``torch/version.py``: ``2.15.0+cu132``, CUDA 13.2) and
  its NVIDIA pins; the PyTorch index (one page listing every ``+cuXYZ``/``+cpu`` wheel) gives
  the other variants and their pins; torchvision and torchaudio are the releases that pin
  ``torch==X``, else the newest that admits X and was built for the same CUDA.
- jax: jax's METADATA gives the jaxlib and the ``cudaNN`` extras, the plugin's METADATA the pins
  (``with-cuda``), jaxlib's wheels the Python range (aarch64, ROCm: :mod:`.jax_platform_builds`).
- tensorflow: the ``and-cuda`` extra's pins, and ``build_info.py`` inside the wheel the CUDA
  it was built with and its compute capabilities.
- the driver table: where a build's CUDA minor line has no ``[[toolkit]]`` entry, NVIDIA's CUDA
  Toolkit Release Notes page (``--cuda-notes``), whose Table 3 gives the driver each toolkit
  release (GA and updates) shipped with: :func:`toolkit_rows`.

Arch lists are read from the wheels with the arch reader (:mod:`colabenv.curation.archs`); where that
is not asked for (``--archs carry``) or a build has no wheel with GPU code, the list of the
previous release's build of the same name is carried over and the entry marked
``unconfirmed`` with the reason. Facts no index states (jax's build CUDA) are carried over
from the previous release and said so in ``source``. Everything is returned as catalog models;
:mod:`colabenv.curation.refresh.writer` turns them into the file. A file a page marks
yanked (PEP 592) is never read as a release's: :mod:`colabenv.curation.refresh.yanked_files`.
"""

from __future__ import annotations

import email.parser
import re
import zipfile
from collections.abc import Callable, Iterable, Sequence
from datetime import date
from html.parser import HTMLParser
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from colabenv._util.pep508 import NVIDIA_PREFIXES
from colabenv.curation.refresh.selection import DEFAULT_RELEASES
from colabenv.curation.refresh.unreadable_files import UnreadableFiles
from colabenv.curation.refresh.yanked_files import YankedFiles
from colabenv.errors import IndexUnavailableError, InputError, printable
from colabenv.index.client import IndexFile, SimpleClient
from colabenv.lock.wheel_tags import VariantFiles
from colabenv.models import Arch, Catalog, CudaToolkit, Framework, Release, Source, Variant
from colabenv.models.frozen import model

if TYPE_CHECKING:
    from colabenv.curation.archs import LibraryArchs, WheelArchs

Progress = Callable[[str], None]
PYTORCH_INDEX = "https://download.pytorch.org/whl"
"""Where torch's variant indexes are (``<this>/cu126``): what the catalog's index_url says."""
CUDA_RELEASE_NOTES = "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html"
"""NVIDIA's CUDA Toolkit Release Notes, whose Table 3 names each toolkit release's driver."""
MAX_METADATA_BYTES = 8 * 1024 * 1024
MAX_MEMBER_BYTES = 1024 * 1024
"""``torch/version.py``, ``build_info.py``: a few KiB each."""
WHEEL_METADATA_READ = 256 * 1024 * 1024
"""The most read of one wheel for its METADATA and small files (the central directory of a
torch wheel is about 2 MiB)."""
PYTHONS = tuple(f"3.{minor}" for minor in range(8, 20))
_LINUX = {
    "platform_system": "Linux",
    "sys_platform": "linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}
_CU_TAG = re.compile(r"^cu(\d{2})(\d)$|^cu(\d{3})$")
_PY_STRING = re.compile(r"""^\s*(\w+)\s*(?::\s*[^=]+)?=\s*['"]([^'"\n]*)['"]""", re.MULTILINE)


class RefreshProblem(Exception):
    """A fact the index states that cannot be read (the reason, for a note)."""


# ---------------------------------------------------------------------------------------------
# Options and results


@model
class RefreshOptions:
    """What ``catalog refresh`` was asked.

    ``index``: the default index; ``pytorch_index``: the index whose torch page lists every
    variant's wheels (None: not read, ``--no-variant-index``); ``releases``: which versions to
    examine; ``read_archs``: read arch lists from the wheels (else carry them over)."""

    framework: Framework | None
    """None: the CUDA packages (``catalog refresh packages``)."""
    index: str
    index_label: str
    pytorch_index: str | None
    releases: SpecifierSet | None
    read_archs: bool
    max_wheel_bytes: int
    timeout_s: float
    cuda_notes: str | None = None
    """The CUDA release notes page read for a driver the table lacks (None: not read)."""
    find_links: bool = True
    """packages: read the find-links pages the file's builds name (``--no-find-links``: not)."""
    find_links_mirror: str | None = None
    """packages: where those pages are read instead (``https://HOST/PATH`` is read as
    ``<mirror>HOST/PATH``); the file still names the page itself."""
    release_count: int = DEFAULT_RELEASES
    """The most releases of one project examined (``--releases N``): the newest of those
    selected; the others are left out, said in a note."""
    index_mirror: str | None = None
    """packages: where the other indexes the file's builds name (wheels.vllm.ai's, Microsoft's
    feeds) are read instead, as ``find_links_mirror`` does for pages."""
    rocm_find_links: str | None = None
    """jax: the find-links page of AMD's ROCm plugin wheels (None: the one the file names)."""


@model
class Derived:
    """What the indexes say: releases as catalog models, what could not be derived, and the
    builds whose arch lists, CUDA and cpXYt files were read (only those are compared)."""

    releases: tuple[Release, ...]
    notes: tuple[str, ...]
    archs_read: frozenset[tuple[Version, str]] = frozenset()
    cuda_read: frozenset[tuple[Version, str]] = frozenset()
    """The builds whose CUDA a file in the wheel states (jax's never does)."""
    offered: frozenset[tuple[Version, str]] = frozenset()
    """The builds the indexes have, derived or not (a catalog build missing here is gone)."""
    toolkits: tuple[CudaToolkit, ...] = ()
    """The driver table entries the release notes gave for builds whose CUDA it lacked."""
    free_threaded_read: frozenset[tuple[Version, str]] = frozenset()


# ---------------------------------------------------------------------------------------------
# Reading the indexes


@model
class Wheel:
    index: str
    file: IndexFile
    version: Version
    tags: frozenset[Tag]

    @property
    def pythons(self) -> tuple[str, ...]:
        """The CPython minors of the wheel's cpXY tags (free-threaded ``cpXYt`` builds aside)."""
        found = set()
        for tag in self.tags:
            match = re.fullmatch(r"cp3(\d+)", tag.interpreter)
            if match and not tag.abi.endswith("t"):
                found.add(f"3.{match.group(1)}")
        return tuple(sorted(found, key=lambda text: int(text.split(".")[1])))

    @property
    def abi3(self) -> bool:
        """A stable-ABI wheel (``cp310-abi3``): it runs on its cpXY and every newer CPython."""
        return any(t.abi == "abi3" for t in self.tags)

    def serves(self, platform: str) -> bool:
        """Whether it installs on ``platform`` (``linux_x86_64``, ``linux_aarch64``; pure: any)."""
        machine = platform.removeprefix("linux_")
        return any(
            t.platform == "any" or (t.platform.endswith(machine) and "linux" in t.platform) for t in self.tags
        )


@model
class Metadata:
    requires_python: str | None
    requires: tuple[Requirement, ...]
    extras: tuple[str, ...]


class IndexReader:
    """Project pages, METADATA and small members of wheels, each read once."""

    def __init__(self, client: SimpleClient, options: RefreshOptions, progress: Progress) -> None:
        self.client = client
        self.options = options
        self.progress = progress
        self._pages: dict[tuple[str, str], tuple[IndexFile, ...]] = {}
        self._metadata: dict[str, Metadata] = {}
        self._members: dict[tuple[str, str], bytes | None] = {}
        self._archs: dict[str, WheelArchs] = {}
        self.variants = VariantFiles()  # what _wheels_of leaves aside, for a note
        self.unreadable = UnreadableFiles()  # names _wheels_of cannot read, for a note
        self.yanked = YankedFiles()  # the yanked files the pages list, left aside, for a note

    def wheels(
        self, index: str, project: str, *, required: bool = False, platform: str = "linux_x86_64"
    ) -> list[Wheel]:
        """The ``platform`` (or pure) wheels of ``project`` on ``index``, final releases only;
        ``required``: an index without the project is an error (the framework itself)."""
        key = (index, project)
        if key not in self._pages:
            self.progress(f"reading the {project} page of {index}")
            files = self.client.project_files(index, project)
            if files is None and required:
                raise IndexUnavailableError(
                    f"index {printable(index)} has no project {canonicalize_name(project)}"
                )
            self._pages[key] = self.yanked.kept(files or ())
        return self._wheels_of(index, self._pages[key], project, platform)

    def page_wheels(
        self, page: str, project: str, *, guessed: bool = False, platform: str = "linux_x86_64"
    ) -> list[Wheel]:
        """The ``platform`` (or pure) wheels of ``project`` that a find-links page links to
        (a flat list of links: ``data.pyg.org/whl/torch-2.8.0+cu126.html``, a release's asset
        page), final releases only; the page is read once, from the mirror where one is set.
        A ``guessed`` page the server does not have has no wheels (not an error)."""
        read = mirrored(page, self.options.find_links_mirror)
        key = (read, "")
        if key not in self._pages:
            self.progress(f"reading the find-links page {page}")
            found = self.client.page_files_if_any(read) if guessed else self.client.page_files(read)
            self._pages[key] = self.yanked.kept(found or ())
        return self._wheels_of(read, self._pages[key], project, platform)

    def _wheels_of(
        self, index: str, files: Iterable[IndexFile], project: str, platform: str = "linux_x86_64"
    ) -> list[Wheel]:
        found = []
        for file in files:
            if not file.filename.endswith(".whl"):
                continue
            if self.variants.took(file.filename):
                continue
            try:
                name, version, _, tags = parse_wheel_filename(file.filename)
            except (InvalidWheelFilename, InvalidVersion, ValueError) as problem:
                self.unreadable.took(file.url, problem)
                continue
            if name != canonicalize_name(project) or version.is_prerelease or version.is_devrelease:
                continue
            wheel = Wheel(index, file, version, frozenset(tags))
            if wheel.serves(platform):
                found.append(wheel)
        return found

    def metadata(self, wheel: Wheel) -> Metadata:
        url = wheel.file.url
        if url not in self._metadata:
            self.progress(f"reading the METADATA of {wheel.file.filename}")
            data = None
            if wheel.file.metadata:
                data = self.client.file_bytes(wheel.index, url + ".metadata")
            if data is None:
                data = self._wheel_file(
                    wheel, lambda name: name.count("/") == 1 and name.endswith(".dist-info/METADATA")
                )
            if data is None:
                raise IndexUnavailableError(f"{printable(wheel.file.filename)}: no METADATA")
            self._metadata[url] = parse_metadata(data, wheel.file.filename)
        return self._metadata[url]

    def member(self, wheel: Wheel, path: str) -> bytes | None:
        """A small file of the wheel (``torch/version.py``), None when it has none."""
        key = (wheel.file.url, path)
        if key not in self._members:
            self._members[key] = self._wheel_file(wheel, lambda name: name == path)
        return self._members[key]

    def _wheel_file(self, wheel: Wheel, wanted: Callable[[str], bool]) -> bytes | None:
        from colabenv.curation.archs import open_wheel

        try:
            with open_wheel(
                wheel.file.url, max_download=WHEEL_METADATA_READ, timeout=self.options.timeout_s
            ) as stream:
                archive = zipfile.ZipFile(stream)
                for info in archive.infolist():
                    if not wanted(info.filename):
                        continue
                    limit = MAX_METADATA_BYTES if info.filename.endswith("METADATA") else MAX_MEMBER_BYTES
                    if info.file_size > limit:
                        raise RefreshProblem(f"{info.filename} is {info.file_size} bytes")
                    return archive.read(info)
        except (
            zipfile.BadZipFile,
            zipfile.LargeZipFile,
            EOFError,
            NotImplementedError,
            RuntimeError,
            ValueError,
            RefreshProblem,
        ) as problem:
            raise IndexUnavailableError(
                f"{printable(wheel.file.filename)}: not a wheel that can be read ({printable(problem)})"
            ) from None
        return None

    def page(self, url: str) -> bytes | None:
        """A page that is not an index's (the CUDA release notes), bounded like one; None when
        it cannot be read (what it would have given is then left out, with a note)."""
        self.progress(f"reading {url}")
        try:
            return self.client.file_bytes(url, url)
        except IndexUnavailableError:
            return None

    def archs(self, wheels: Sequence[Wheel], members: Sequence[str] = ()) -> tuple[Arch, ...]:
        """What every library with GPU code in ``wheels`` carries (empty: none has GPU code)."""
        common: set[Arch] | None = None
        for wheel in wheels:
            archs = self._read(wheel, members).common
            if archs:
                common = set(archs) if common is None else common & set(archs)
        return tuple(sorted(common or ()))

    def libraries(self, wheel: Wheel, members: Sequence[str] = ()) -> tuple[LibraryArchs, ...]:
        """Each library with GPU code in ``wheel`` and what it carries."""
        return self._read(wheel, members).libraries

    def _read(self, wheel: Wheel, members: Sequence[str]) -> WheelArchs:
        """The GPU code of ``wheel``'s libraries, read once."""
        from colabenv.curation.archs import read_wheel_archs

        url = wheel.file.url
        if url not in self._archs:
            self.progress(f"reading the GPU code of {wheel.file.filename}")
            try:
                found = read_wheel_archs(
                    url,
                    members,
                    max_member=self.options.max_wheel_bytes,
                    max_download=self.options.max_wheel_bytes,
                    timeout=self.options.timeout_s,
                )
            except InputError as problem:
                raise IndexUnavailableError(str(problem)) from None
            self._archs[url] = found
        return self._archs[url]


def mirrored(page: str, mirror: str | None) -> str:
    """Where ``page`` is read: itself, or ``<mirror>HOST/PATH`` for ``https://HOST/PATH``."""
    if mirror is None:
        return page
    parts = urlsplit(page)
    return mirror.rstrip("/") + "/" + parts.netloc + parts.path + (f"?{parts.query}" if parts.query else "")


def parse_metadata(data: bytes, where: str) -> Metadata:
    """Requires-Python, Requires-Dist and Provides-Extra of a METADATA file (core metadata)."""
    if len(data) > MAX_METADATA_BYTES:
        raise IndexUnavailableError(
            f"{printable(where)}: METADATA larger than {MAX_METADATA_BYTES >> 20} MiB"
        )
    message = email.parser.BytesHeaderParser().parsebytes(data)
    requires = []
    for text in message.get_all("Requires-Dist") or ():
        try:
            requires.append(Requirement(str(text)))
        except InvalidRequirement:
            raise IndexUnavailableError(
                f"{printable(where)}: METADATA Requires-Dist {printable(str(text))[:120]!r} is "
                "not a requirement"
            ) from None
    python = message.get("Requires-Python")
    extras = tuple(canonicalize_name(str(e)) for e in message.get_all("Provides-Extra") or ())
    return Metadata(str(python).strip() if python else None, tuple(requires), extras)


def _applies(marker: Marker | None, extra: str) -> bool:
    """Whether a requirement with ``marker`` applies on Linux x86_64 for some Python, with
    ``extra`` asked for ("" for none)."""
    if marker is None:
        return True
    return any(
        marker.evaluate({**_LINUX, "python_version": py, "python_full_version": f"{py}.0", "extra": extra})
        for py in PYTHONS
    )


def requirements_of(metadata: Metadata, extra: str | None = None) -> list[Requirement]:
    """The requirements of the wheel itself (``extra`` None), or those only ``extra`` adds."""
    found = []
    for requirement in metadata.requires:
        base = _applies(requirement.marker, "")
        wanted = base if extra is None else not base and _applies(requirement.marker, extra)
        if wanted:
            found.append(requirement)
    return found


_ORDER = {op: n for n, op in enumerate((">=", ">", "==", "===", "~=", "!=", "<=", "<"))}


def pin_text(requirement: Requirement) -> str:
    """``name[extras]`` and the specifier, lower bounds first, without the marker: how the
    catalog writes a pin."""
    extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
    items = sorted(requirement.specifier, key=lambda s: (_ORDER.get(s.operator, 9), s.version))
    return canonicalize_name(requirement.name) + extras + ",".join(str(s) for s in items)


def nvidia_pins(requirements: Iterable[Requirement]) -> tuple[str, ...]:
    """The NVIDIA and CUDA wheels among ``requirements``, as pins (triton, tensorrt aside)."""
    return tuple(pin_text(r) for r in requirements if canonicalize_name(r.name).startswith(NVIDIA_PREFIXES))


def python_range(wheels: Sequence[Wheel], requires_python: str | None) -> SpecifierSet:
    """``>=3.A,<3.B+1`` from the cpXY tags (``>=3.A`` alone for a stable-ABI ``abi3`` wheel);
    Requires-Python raises the floor (and bounds an ``abi3`` wheel's range) where it says so,
    and the patch releases it excludes inside that range are kept (``!=3.14.1``: the resolver
    holds a full target version to them); pure wheels alone: Requires-Python as it is."""
    minors = sorted({int(p.split(".")[1]) for w in wheels for p in w.pythons})
    stable = any(w.abi3 for w in wheels)
    declared = None
    if requires_python:
        try:
            declared = SpecifierSet(requires_python)
        except InvalidSpecifier:
            declared = None
    if not minors:
        if declared is None:
            raise RefreshProblem("no cpXY wheel and no Requires-Python")
        return declared
    if stable:  # its tag's Python and each newer one Requires-Python admits (vLLM's <3.14)
        minors = [
            m for m in range(minors[0], 40) if declared is None or declared.contains(f"3.{m}")
        ] or minors
    elif declared is not None:
        minors = [m for m in minors if declared.contains(f"3.{m}")] or minors
    clauses = [f">=3.{minors[0]}"] + ([] if minors[-1] == 39 else [f"<3.{minors[-1] + 1}"])
    if declared is not None:
        clauses.extend(
            str(item)
            for item in declared
            if item.operator == "!=" and _excluded_patch(item.version, minors[0], minors[-1])
        )
    return SpecifierSet(",".join(clauses))


def _excluded_patch(text: str, low: int, high: int) -> bool:
    """Whether ``text`` (of a ``!=`` clause) is one patch release ``3.M.P`` with M in [low, high]."""
    parts = text.split(".")
    return (
        len(parts) == 3
        and parts[0] == "3"
        and all(p.isdigit() for p in parts)
        and low <= int(parts[1]) <= high
    )


def preferred(wheels: Sequence[Wheel]) -> Wheel:
    """The wheel to read: cp312 when there is one, else the newest CPython, else any."""

    def rank(wheel: Wheel) -> tuple[int, int, str]:
        pythons = wheel.pythons
        return (
            0 if "3.12" in pythons else 1,
            -max((int(p.split(".")[1]) for p in pythons), default=0),
            wheel.file.filename,
        )

    return sorted(wheels, key=rank)[0]


def by_version(wheels: Iterable[Wheel]) -> dict[Version, list[Wheel]]:
    grouped: dict[Version, list[Wheel]] = {}
    for wheel in wheels:
        grouped.setdefault(wheel.version, []).append(wheel)
    return grouped


def python_strings(text: str) -> dict[str, str]:
    """``name = 'value'`` assignments of a small Python file (``torch/version.py``)."""
    return {m.group(1): m.group(2) for m in _PY_STRING.finditer(text)}


def cuda_of_tag(tag: str) -> Version | None:
    """``cu126`` -> 12.6, ``cu118`` -> 11.8, ``cu132`` -> 13.2; None for ``cpu`` and others."""
    match = _CU_TAG.match(tag)
    if match is None:
        return None
    digits = match.group(0)[2:]
    return Version(f"{digits[:2]}.{digits[2:]}")


def cuda_of_pins(pins: Sequence[str]) -> Version | None:
    """The CUDA a build's pins name: ``cuda-toolkit[...]==13.2.2`` or the CUDA runtime's."""
    for text in pins:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        if name == "cuda-toolkit" or name.startswith("nvidia-cuda-runtime"):
            for spec in requirement.specifier:
                if spec.operator in ("==", ">=", "==="):
                    release = Version(spec.version.removesuffix(".*")).release
                    return Version(f"{release[0]}.{release[1]}")
    return None


# ---------------------------------------------------------------------------------------------
# The previous release, for what is carried over


class History:
    """The releases known so far (the catalog's, then the derived ones), to carry facts from."""

    def __init__(self, releases: Iterable[Release]) -> None:
        self.releases = list(releases)

    def add(self, release: Release) -> None:
        """A derived release, unless the catalog has that version: what is carried over comes
        from the catalog's entry, which stays as it is."""
        if all(r.version != release.version for r in self.releases):
            self.releases.append(release)

    def before(self, version: Version) -> list[Release]:
        return sorted(
            (r for r in self.releases if r.version < version), key=lambda r: r.version, reverse=True
        )

    def variant_before(self, version: Version, name: str) -> tuple[Release, Variant] | None:
        for release in self.before(version):
            variant = release.variant(name)
            if variant is not None:
                return release, variant
        return None


def carried_archs(
    history: History, version: Version, name: str, why: str
) -> tuple[tuple[Arch, ...], str] | None:
    """The arch list of the previous release's build ``name``, and the unconfirmed reason."""
    found = history.variant_before(version, name)
    if found is None or not found[1].archs:
        return None
    release, variant = found
    return variant.archs, f"archs carried over from {release.version} {variant.name}: {why}"


def stamp() -> str:
    return f"read by colabenv catalog refresh, {date.today().isoformat()}"


def variant_model(
    name: str,
    *,
    cuda: Version | None = None,
    index_url: str | None = None,
    local_tag: str | None = None,
    extra: str | None = None,
    archs: tuple[Arch, ...] = (),
    pins: tuple[str, ...] = (),
    source: str,
    unconfirmed: str | None = None,
) -> Variant:
    return Variant(
        name=name,
        cuda=cuda,
        index_url=index_url,
        local_tag=local_tag,
        extra=extra,
        archs=archs,
        pin_texts=pins,
        python=None,
        source=Source(source),
        unconfirmed=unconfirmed,
    )


# ---------------------------------------------------------------------------------------------
# The CUDA release notes (Table 3: "CUDA Toolkit and Corresponding Driver Versions")

_TOOLKIT_CELL = re.compile(
    r"CUDA\s+(\d+)\.(\d+)(?:\.(\d+))?(?:\.\d+)?\s*(?:\(([^)]*)\)\s*)?(GA\d?|Update\s+(\d+))?\s*$", re.ASCII
)
_DRIVER_CELL = re.compile(r">=\s*(\d{3}\.\d{1,3}(?:\.\d{1,3})?)\s*$", re.ASCII)


class _TableCells(HTMLParser):
    """The text of each table row's cells, in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th") and self.rows:
            self._cell = []

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.rows:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None


def toolkit_rows(page: bytes, url: str) -> tuple[CudaToolkit, ...]:
    """The Linux x86_64 rows of the release notes' Table 3: ``CUDA 13.2 Update 1`` with
    ``>=595.58.03`` is toolkit 13.2.1, label "13.2 Update 1"; a release without "Update" is
    the GA (X.Y.0). Rows without a Linux driver (``N/A``: 13.4 unbundled it) are left out."""
    parser = _TableCells()
    try:
        parser.feed(page.decode("utf-8", "replace"))
        parser.close()
    except (AssertionError, ValueError):
        return ()
    found: dict[Version, CudaToolkit] = {}
    source = Source(f"CUDA Toolkit Release Notes, Table 3 ({url}); {stamp()}")
    for cells in parser.rows:
        if len(cells) < 2:
            continue
        toolkit, driver = _TOOLKIT_CELL.match(cells[0]), _DRIVER_CELL.match(cells[1])
        if toolkit is None or driver is None or toolkit.group(4):
            continue
        major, minor = int(toolkit.group(1)), int(toolkit.group(2))
        update = int(toolkit.group(6) or toolkit.group(3) or 0)
        label = f"{major}.{minor} Update {update}" if update else f"{major}.{minor} GA"
        version = Version(f"{major}.{minor}.{update}")
        found.setdefault(version, CudaToolkit(version, label, Version(driver.group(1)), source))
    return tuple(sorted(found.values(), key=lambda t: t.version))


def proposed_toolkits(
    reader: IndexReader, releases: Sequence[Release], catalog: Catalog, notes: list[str]
) -> tuple[CudaToolkit, ...]:
    """The driver table entries (every release, GA and updates, of each CUDA minor line a
    derived build needs and the table lacks) that the CUDA release notes give; none where
    the major line has no floor (a new major needs NVIDIA's compatibility guide first)."""
    url = reader.options.cuda_notes
    wanted = sorted(
        {
            Version(f"{v.cuda.major}.{v.cuda.minor}")
            for r in releases
            for v in r.variants
            if v.cuda is not None and catalog.toolkit_driver(v.cuda) is None
        }
    )
    wanted = [line for line in wanted if catalog.floor_driver(line) is not None]
    if url is None or not wanted:
        return ()
    page = reader.page(url)
    rows = toolkit_rows(page, url) if page is not None else ()
    if page is None:
        notes.append(f"the CUDA release notes ({url}) could not be read: no driver entry proposed")
    known = {t.version for t in catalog.toolkits}
    found = tuple(
        row
        for row in rows
        if (row.version.major, row.version.minor) in {(w.major, w.minor) for w in wanted}
        and row.version not in known
    )
    for line in wanted:
        if page is not None and not any(t.version.release[:2] == line.release[:2] for t in found):
            notes.append(f"the CUDA release notes ({url}) name no driver for CUDA {line}")
    return found


# ---------------------------------------------------------------------------------------------
# Companions' own Python ranges


def candidate_pythons(*specs: SpecifierSet) -> list[Version]:
    """The Python versions where ranges like these can change their answer: each 3.M and
    each version a clause names, with the patch release after it."""
    points = {Version(f"3.{minor}") for minor in range(40)}
    for spec in specs:
        for item in spec:
            text = item.version.removesuffix(".*")
            try:
                found = Version(text)
            except InvalidVersion:
                continue
            points.add(found)
            release = found.release + (0,) * (3 - len(found.release))
            points.add(Version(".".join(str(n) for n in (*release[:2], release[2] + 1))))
    return sorted(points)


def narrower_python(companion: SpecifierSet | None, framework: SpecifierSet) -> bool:
    """Whether a companion's range leaves out a Python its framework's range admits (only
    then is the companion's range worth a line in the catalog)."""
    if companion is None:
        return False
    return any(
        framework.contains(point, prereleases=True) and not companion.contains(point, prereleases=True)
        for point in candidate_pythons(companion, framework)
    )
