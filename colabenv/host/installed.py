"""What is installed on a ``sys.path``, read from the ``*.dist-info`` / ``*.egg-info``
directories without importing anything: distributions in import order, the ones found twice,
the modules one entry hides in a later one, and each distribution's metadata on demand.

This is colabenv's one reader of installed distributions (``detect`` and ``verify`` use it).
Names and versions come from the directory names installers write, which spares parsing every
METADATA file; a name without a valid version falls back to the metadata. The bootstrap
script's helper keeps its own reader (it runs without colabenv); a test holds the two to the
same answers.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from colabenv._util.files import FileProblem, read_limited
from colabenv.models.frozen import model

if TYPE_CHECKING:
    import importlib.metadata

PACKAGE_FILE_LIMIT = 1024 * 1024
"""The most read of one file of an installed package (``torch/version.py`` and the like)."""

_DIST_DIR_RE = re.compile(r"^(?P<name>.+?)(?:-(?P<version>\d[^-]*)(?:-py\d[^-]*)?)?\.(?:dist|egg)-info$")


def dist_dir_parts(dirname: str) -> tuple[str, str | None] | None:
    """``torch-2.6.0+cu124.dist-info`` -> ``("torch", "2.6.0+cu124")``; an egg-info without a
    version in its name gives ``(name, None)``; anything else None. Installers write these
    names, so reading them spares parsing every METADATA file."""
    match = _DIST_DIR_RE.match(dirname)
    if match is None:
        return None
    return match.group("name"), match.group("version")


@model
class PathDist:
    """A ``*.dist-info``/``*.egg-info`` directory found in one sys.path entry."""

    name: NormalizedName
    version: str
    entry: str
    metadata_dir: Path


@model
class Shadow:
    """``module`` in ``hidden`` can never be imported: ``used`` comes earlier on sys.path.
    ``stdlib``: ``hidden`` is the standard library's (``importlib.py`` in the working directory);
    ``name``: the file or folder in ``used`` that is the module (``numpy.py``)."""

    module: str
    used: str
    hidden: str
    stdlib: bool = False
    name: str = ""

    @property
    def used_path(self) -> str:
        """The file or folder that is imported (``/work/numpy.py``), else its folder."""
        return os.path.join(self.used, self.name) if self.name else self.used


@model
class SecondMetadata:
    """One distribution with a ``*.dist-info`` and an ``*.egg-info`` in the same folder (Debian's
    Python ships some so): the dist-info is ``used``, the egg-info ``ignored``."""

    used: PathDist
    ignored: PathDist


@model
class PathScan:
    dists: tuple[PathDist, ...]
    duplicates: tuple[tuple[NormalizedName, tuple[PathDist, ...]], ...]
    shadows: tuple[Shadow, ...]
    modules: frozenset[str] = frozenset()
    """The top-level modules (packages with an ``__init__``, modules) that can be imported."""
    second_metadata: tuple[SecondMetadata, ...] = ()
    """Egg-info directories beside the dist-info of the same distribution: not a second copy."""


def metadata_order(dirname: str) -> tuple[bool, str]:
    """The order metadata directories of one folder are read in: every ``*.dist-info`` before
    any ``*.egg-info``, each by name, so that in one folder a dist-info wins over an egg-info of
    the same distribution (the script's helper reads them in the same order)."""
    return dirname.endswith(".egg-info"), dirname


def _valid_version(text: str | None) -> bool:
    if not text:
        return False
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def _name_and_version(entry: str, dirname: str) -> tuple[NormalizedName, str] | None:
    """What a metadata directory holds: its name's parts, else its metadata."""
    parts = dist_dir_parts(dirname)
    if parts is None:
        return None
    name, version = parts
    if version is None or not _valid_version(version):
        import importlib.metadata

        try:
            metadata = importlib.metadata.PathDistribution(Path(entry) / dirname).metadata
            if metadata is None or "Name" not in metadata or "Version" not in metadata:
                return None
            name, version = metadata["Name"], metadata["Version"]
        except Exception:
            return None
    if not name or not version:
        return None
    return canonicalize_name(name), version


def _dist_at(entry: str, dirname: str) -> PathDist | None:
    found = _name_and_version(entry, dirname)
    return None if found is None else PathDist(found[0], found[1], entry, Path(entry) / dirname)


def _unique_entries(entries: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    unique: list[str] = []
    for entry in entries:
        real = os.path.realpath(entry or os.getcwd())
        if real not in seen:
            seen.add(real)
            unique.append(entry or os.getcwd())
    return unique


def _listing(entry: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(entry) as found:
            return sorted(found, key=lambda e: e.name)
    except OSError:
        return []


def _metadata_dirs(entry: str) -> list[str]:
    """The names in ``entry`` that end in ``-info``, sorted (none when it cannot be listed)."""
    try:
        with os.scandir(entry) as found:
            return sorted((e.name for e in found if e.name.endswith("-info")), key=metadata_order)
    except OSError:
        return []


def installed_distributions(entries: Sequence[str]) -> Iterator[tuple[NormalizedName, str]]:
    """``(name, version)`` of each distribution on ``entries``, the first of a name winning
    (what :func:`scan_path` finds, without the modules and with no model made per distribution:
    every ``colabenv render`` asks this)."""
    seen: set[NormalizedName] = set()
    for entry in _unique_entries(entries):
        for dirname in _metadata_dirs(entry):
            found = _name_and_version(entry, dirname)
            if found is not None and found[0] not in seen:
                seen.add(found[0])
                yield found


def _module_name(entry: os.DirEntry[str], suffixes: Sequence[str]) -> str | None:
    """The top-level module a directory entry provides; None for namespace dirs and non-modules."""
    name = entry.name
    try:
        is_dir = entry.is_dir()
    except OSError:
        return None
    if is_dir:
        if not name.isidentifier():
            return None
        package = Path(entry.path)
        has_init = (package / "__init__.py").exists() or any(
            (package / f"__init__{suffix}").exists() for suffix in (".pyc", *suffixes)
        )
        return name if has_init else None
    stem: str | None = None
    if name.endswith(".py"):
        stem = name[:-3]
    else:
        for suffix in suffixes:
            if name.endswith(suffix):
                stem = name[: -len(suffix)]
                break
    if stem is None or not stem.isidentifier() or stem == "__init__":
        return None
    return stem


def scan_path(
    entries: Sequence[str],
    *,
    stdlib: Sequence[str] = (),
    extension_suffixes: Sequence[str] | None = None,
) -> PathScan:
    """Distributions and top-level modules of each sys.path entry, in import order.

    A distribution found in two entries (or twice in one) is a duplicate. A module found in two
    entries is shadowed in the later one, except a standard-library module shadowing an installed
    backport of itself, which is how backports are meant to work. ``extension_suffixes`` are the
    scanned interpreter's (``importlib.machinery.EXTENSION_SUFFIXES``), this one's by default.
    """
    suffixes = sorted(
        importlib.machinery.EXTENSION_SUFFIXES if extension_suffixes is None else extension_suffixes,
        key=len,
        reverse=True,
    )
    stdlib_real = {os.path.realpath(p) for p in stdlib}
    dists: list[PathDist] = []
    second: list[SecondMetadata] = []
    first_module: dict[str, tuple[str, str]] = {}
    shadows: list[Shadow] = []
    for entry in _unique_entries(entries):
        here: list[PathDist] = []
        for child in _listing(entry):
            if child.name.endswith("-info") and dist_dir_parts(child.name) is not None:
                dist = _dist_at(entry, child.name)
                if dist is not None:
                    here.append(dist)
                continue
            module = _module_name(child, suffixes)
            if module is None or module == "__pycache__":
                continue
            first = first_module.get(module)
            if first is None:
                first_module[module] = (entry, child.name)
                continue
            used, name = first
            if used != entry and os.path.realpath(used) not in stdlib_real:
                shadows.append(Shadow(module, used, entry, os.path.realpath(entry) in stdlib_real, name))
        dists.extend(_one_per_distribution(here, second))
    by_name: dict[NormalizedName, list[PathDist]] = {}
    for dist in dists:
        by_name.setdefault(dist.name, []).append(dist)
    duplicates = tuple((name, tuple(found)) for name, found in by_name.items() if len(found) > 1)
    return PathScan(
        tuple(dists),
        duplicates,
        tuple(dict.fromkeys(shadows)),
        frozenset(first_module),
        tuple(second),
    )


def _one_per_distribution(found: Sequence[PathDist], second: list[SecondMetadata]) -> list[PathDist]:
    """The metadata directories of one folder, in :func:`metadata_order`, less each egg-info
    beside a dist-info of the same name (recorded in ``second``): one distribution, whose
    dist-info is read (importlib.metadata, and pip through it, take whichever of the two the
    folder lists first: an order the file system picks). Two dist-infos (or two egg-infos) of a
    name stay two: an uninstall that left one behind."""
    ordered = sorted(found, key=lambda d: metadata_order(d.metadata_dir.name))
    info = {d.name: d for d in ordered if d.metadata_dir.name.endswith(".dist-info")}
    kept = []
    for dist in ordered:
        used = info.get(dist.name)
        if used is not None and dist.metadata_dir.name.endswith(".egg-info"):
            second.append(SecondMetadata(used, dist))
        else:
            kept.append(dist)
    return kept


@model
class DistInfo:
    name: NormalizedName
    version: str
    requires: tuple[str, ...]


class Installed:
    """Lazy metadata of the distributions found on a path; the first of each name is the one
    used, as for imports."""

    def __init__(self, dists: Sequence[PathDist]) -> None:
        self._dists: dict[NormalizedName, PathDist] = {}
        for dist in dists:
            self._dists.setdefault(dist.name, dist)
        self._cache: dict[NormalizedName, DistInfo | None] = {}

    @classmethod
    def of_scan(cls, scan: PathScan) -> Installed:
        return cls(scan.dists)

    def names(self) -> tuple[NormalizedName, ...]:
        return tuple(self._dists)

    def _distribution(self, name: str) -> importlib.metadata.Distribution | None:
        import importlib.metadata

        found = self._dists.get(canonicalize_name(name))
        return importlib.metadata.PathDistribution(found.metadata_dir) if found else None

    def get(self, name: str) -> DistInfo | None:
        key = canonicalize_name(name)
        if key not in self._cache:
            found = self._dists.get(key)
            info = None
            if found is not None:
                metadata = self._distribution(key)
                try:
                    requires = tuple(metadata.requires or ()) if metadata else ()
                except Exception:
                    requires = ()
                info = DistInfo(key, found.version, requires)
            self._cache[key] = info
        return self._cache[key]

    def version(self, name: str) -> str | None:
        found = self._dists.get(canonicalize_name(name))
        return found.version if found is not None else None

    def requires(self, name: str) -> tuple[str, ...]:
        info = self.get(name)
        return info.requires if info is not None else ()

    def read_text(self, name: str, relative: str) -> str | None:
        """A file of the distribution's package, read without importing it (bounded)."""
        dist = self._distribution(name)
        if dist is None:
            return None
        try:
            data = read_limited(Path(str(dist.locate_file(relative))), PACKAGE_FILE_LIMIT)
            return data.decode("utf-8")
        except (FileProblem, UnicodeDecodeError):
            return None

    def top_level(self, name: str) -> tuple[str, ...]:
        dist = self._distribution(name)
        if dist is None:
            return ()
        text = dist.read_text("top_level.txt")
        if text:
            return tuple(line.strip() for line in text.splitlines() if line.strip())
        tops: set[str] = set()
        for file in dist.files or ():
            parts = file.parts
            if (
                not parts
                or parts[0] in ("..", "__pycache__")
                or parts[0].endswith((".dist-info", ".egg-info", ".data", ".pth"))
            ):
                continue
            top = parts[0][:-3] if parts[0].endswith(".py") else parts[0].split(".")[0]
            if top.isidentifier():
                tops.add(top)
        return tuple(sorted(tops))


# ---------------------------------------------------------------------------------------------
# What ``doctor`` reads of a distribution, without importlib.metadata (which costs it more than
# the rest of its start)

NOT_MODULES = (".dist-info", ".egg-info", ".data", ".pth")
METADATA_LIMIT = 4 * 1024 * 1024
"""The most read of a ``top_level.txt`` or ``RECORD`` (torch's RECORD is about 2 MiB)."""


def _text(path: Path) -> str | None:
    try:
        return read_limited(path, METADATA_LIMIT).decode("utf-8", "replace")
    except FileProblem:
        return None


def top_level(dist: PathDist) -> tuple[str, ...]:
    """A distribution's top-level modules: its ``top_level.txt``, else the first part of each
    path its ``RECORD`` lists (read bounded, without importlib.metadata)."""
    listed = _text(dist.metadata_dir / "top_level.txt")
    if listed is not None:
        return tuple(dict.fromkeys(line.strip() for line in listed.splitlines() if line.strip()))
    record = _text(dist.metadata_dir / "RECORD") or ""
    tops: dict[str, None] = {}
    for line in record.splitlines():
        first = line.split(",", 1)[0].strip('"').split("/", 1)[0]
        if not first or first.startswith("..") or first.endswith(NOT_MODULES):
            continue
        name = first[:-3] if first.endswith(".py") else first.split(".")[0]
        if name != "__pycache__":
            tops[name] = None
    return tuple(tops)


def installed_at(dist: PathDist) -> float | None:
    """When a distribution was installed: its metadata folder's modification time."""
    try:
        return dist.metadata_dir.stat().st_mtime
    except OSError:
        return None
