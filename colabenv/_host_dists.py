"""What is installed on a ``sys.path``, read from the ``*.dist-info`` / ``*.egg-info``
directories without importing anything: distributions in import order, the ones found twice,
the modules one entry hides in a later one, and each distribution's metadata on demand.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import os
import sysconfig
from collections.abc import Sequence
from pathlib import Path

from packaging.utils import NormalizedName, canonicalize_name

from colabenv._model import model
from colabenv.models import dist_dir_parts


@model
class PathDist:
    """A ``*.dist-info``/``*.egg-info`` directory found in one sys.path entry."""

    name: NormalizedName
    version: str | None
    entry: str
    metadata_dir: Path


@model
class Shadow:
    """``module`` in ``hidden`` can never be imported: ``used`` comes earlier on sys.path."""

    module: str
    used: str
    hidden: str


@model
class PathScan:
    dists: tuple[PathDist, ...]
    duplicates: tuple[tuple[NormalizedName, tuple[PathDist, ...]], ...]
    shadows: tuple[Shadow, ...]


_EXTENSION_SUFFIXES = tuple(sorted(importlib.machinery.EXTENSION_SUFFIXES, key=len, reverse=True))


def _module_name(entry: os.DirEntry[str]) -> str | None:
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
            (package / f"__init__{suffix}").exists() for suffix in (".pyc", *_EXTENSION_SUFFIXES)
        )
        return name if has_init else None
    stem: str | None = None
    if name.endswith(".py"):
        stem = name[:-3]
    else:
        for suffix in _EXTENSION_SUFFIXES:
            if name.endswith(suffix):
                stem = name[: -len(suffix)]
                break
    if stem is None or not stem.isidentifier() or stem == "__init__":
        return None
    return stem


def _dist_from_dirname(entry: str, path: Path) -> PathDist | None:
    parts = dist_dir_parts(path.name)
    if parts is None:
        return None
    name, version = parts
    return PathDist(canonicalize_name(name), version, entry, path)


def _unique_entries(entries: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    unique: list[str] = []
    for entry in entries:
        real = os.path.realpath(entry or os.getcwd())
        if real not in seen:
            seen.add(real)
            unique.append(entry or os.getcwd())
    return unique


def scan_path(entries: Sequence[str], *, stdlib: Sequence[str] = ()) -> PathScan:
    """Distributions and top-level modules of each sys.path entry, in import order.

    A distribution found in two entries (or twice in one) is a duplicate. A module found in two
    entries is shadowed in the later one, except a standard-library module shadowing an installed
    backport of itself, which is how backports are meant to work.
    """
    stdlib_real = {os.path.realpath(p) for p in stdlib}
    dists: list[PathDist] = []
    first_module: dict[str, str] = {}
    shadows: list[Shadow] = []
    for entry in _unique_entries(entries):
        try:
            children = sorted(os.scandir(entry), key=lambda e: e.name)
        except OSError:
            continue
        for child in children:
            dist = _dist_from_dirname(entry, Path(child.path))
            if dist is not None:
                dists.append(dist)
                continue
            module = _module_name(child)
            if module is None or module == "__pycache__":
                continue
            used = first_module.get(module)
            if used is None:
                first_module[module] = entry
            elif used != entry and os.path.realpath(used) not in stdlib_real:
                shadows.append(Shadow(module, used, entry))
    by_name: dict[NormalizedName, list[PathDist]] = {}
    for dist in dists:
        by_name.setdefault(dist.name, []).append(dist)
    duplicates = tuple((name, tuple(found)) for name, found in by_name.items() if len(found) > 1)
    return PathScan(tuple(dists), duplicates, tuple(dict.fromkeys(shadows)))


def stdlib_entries() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    found = {paths[key] for key in ("stdlib", "platstdlib") if key in paths}
    found |= {os.path.join(p, "lib-dynload") for p in list(found)}
    return tuple(sorted(found))



@model
class DistInfo:
    name: NormalizedName
    version: str
    requires: tuple[str, ...]


class Installed:
    """Lazy metadata of the distributions a scan found; the first of each name is the one used."""

    def __init__(self, scan: PathScan) -> None:
        self._dirs: dict[NormalizedName, Path] = {}
        for dist in scan.dists:
            self._dirs.setdefault(dist.name, dist.metadata_dir)
        self._cache: dict[NormalizedName, DistInfo | None] = {}

    def names(self) -> tuple[NormalizedName, ...]:
        return tuple(self._dirs)

    def _distribution(self, name: str) -> importlib.metadata.Distribution | None:
        path = self._dirs.get(canonicalize_name(name))
        return importlib.metadata.PathDistribution(path) if path is not None else None

    def get(self, name: str) -> DistInfo | None:
        key = canonicalize_name(name)
        if key not in self._cache:
            dist = self._distribution(key)
            info = None
            if dist is not None:
                version = dist.version
                if version:
                    info = DistInfo(key, version, tuple(dist.requires or ()))
            self._cache[key] = info
        return self._cache[key]

    def version(self, name: str) -> str | None:
        info = self.get(name)
        return info.version if info is not None else None

    def read_text(self, name: str, relative: str) -> str | None:
        """A file of the distribution's package, read without importing it."""
        dist = self._distribution(name)
        if dist is None:
            return None
        try:
            return Path(str(dist.locate_file(relative))).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
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
            if not parts or parts[0] in ("..", "__pycache__") or parts[0].endswith(
                (".dist-info", ".egg-info", ".data", ".pth")
            ):
                continue
            top = parts[0][:-3] if parts[0].endswith(".py") else parts[0].split(".")[0]
            if top.isidentifier():
                tops.add(top)
        return tuple(sorted(tops))
