"""Post-restart verification: is the environment what was asked for, and does the GPU compute?

``verify()`` builds the expectation (a profile resolved for this host, a lock's pins, or the
restart marker's record), starts one smoke-test child per framework (``colabenv._smoke``) and the
VRAM probe concurrently, runs the static checks while they work, and returns a
:class:`VerifyReport`. A crash, hang or import error in a child is that child's FAIL; nothing a
child does can stop the other checks. Check names, statuses and the JSON shape are design
section 8.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import os
import re
import signal
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.markers import UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from colabenv import _proc
from colabenv._model import model
from colabenv._smoke import PREFIX as SMOKE_PREFIX
from colabenv.errors import ColabenvError, ProcessError, StateError, UsageError
from colabenv.frameworks import FACTS, framework_of, ordered
from colabenv.marker import Marker, marker_path, read_marker
from colabenv.models import (
    Arch,
    Catalog,
    ComputeCapability,
    Framework,
    Gpu,
    Target,
    archs_cover,
    cuda_from_local_tag,
    dist_dir_parts,
    format_driver,
)

if TYPE_CHECKING:
    from colabenv.models import Fingerprint

DEFAULT_TIMEOUT_S = 120.0
PROBE_SEARCH_S = 10.0
MATMUL_TOLERANCE = 1e-3
GIB = 1024**3
MIB = 1024**2
STDERR_TAIL_LINES = 3

KERNEL_LAUNCHERS = ("ipykernel_launcher", "colab_kernel_launcher", "ipykernel")


class Status(str, enum.Enum):
    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    SKIP = "SKIP"

    def __str__(self) -> str:
        return self.value


@model
class Check:
    """One row of the report; ``detail`` is always a single line."""

    name: str
    status: Status
    detail: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "detail", " ".join(self.detail.split()))

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status.value, "detail": self.detail}


@model
class VerifyReport:
    checks: tuple[Check, ...]
    expected_from: str = ""

    @property
    def ok(self) -> bool:
        return all(check.status is not Status.FAIL for check in self.checks)

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)

    def to_json(self) -> dict[str, object]:
        return {"ok": self.ok, "checks": [check.to_json() for check in self.checks]}

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython shows the report as its table when a cell ends with ``colabenv.verify()``."""
        printer.text(str(self))

    def __str__(self) -> str:
        width = max((len(c.name) for c in self.checks), default=5)
        lines = [f"{c.name:<{width}}  {c.status.value:<4}  {c.detail}" for c in self.checks]
        failed = sum(c.status is Status.FAIL for c in self.checks)
        lines.append("all checks passed" if failed == 0 else f"{failed} check(s) failed")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# What is expected


@model
class Expectation:
    """What this run checks against, whichever source it came from."""

    source: str
    requirements: tuple[Requirement, ...] = ()
    frameworks: tuple[Framework, ...] = ()
    smoke: tuple[Framework, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    require_gpu: bool = False
    min_free_vram_gib: float | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    problems: tuple[str, ...] = ()
    kind: str = "none"

    @property
    def explicit(self) -> bool:
        """A profile or lock was named: the marker is then a record, not the only source."""
        return self.kind in ("profile", "lock")


def _parse_requirements(lines: Iterable[str]) -> tuple[tuple[Requirement, ...], tuple[str, ...]]:
    reqs: list[Requirement] = []
    bad: list[str] = []
    for line in lines:
        try:
            reqs.append(Requirement(line))
        except InvalidRequirement:
            bad.append(f"{line!r} is not a requirement")
    return tuple(reqs), tuple(bad)


def expectation_from_marker(marker: Marker) -> Expectation:
    reqs, bad = _parse_requirements(marker.requirements)
    frameworks = ordered(
        f for f in (framework_of(m.name) for m in marker.frameworks) if f is not None
    )
    smoke = ordered(f for f in (framework_of(s) for s in marker.smoke) if f is not None)
    return Expectation(
        source=f"restart marker ({marker.profile})",
        requirements=reqs,
        frameworks=frameworks,
        smoke=smoke if marker.smoke else frameworks,
        env=marker.env,
        require_gpu=marker.require_gpu,
        min_free_vram_gib=marker.min_free_vram_gib,
        timeout_s=marker.timeout_s or DEFAULT_TIMEOUT_S,
        problems=bad,
        kind="marker",
    )


def expectation_from_profile(name_or_path: str, target: Target, catalog: Catalog) -> Expectation:
    from colabenv.profile import find_profile, load_profile
    from colabenv.resolver import resolve

    profile = load_profile(find_profile(name_or_path))
    problems: tuple[str, ...] = ()
    reqs: tuple[Requirement, ...] = ()
    try:
        resolution = resolve(profile, target, catalog)
    except ColabenvError as error:
        problems = (f"no resolution for this host: {error}",)
    else:
        reqs, problems = _parse_requirements(resolution.requirements)
    frameworks = ordered(r.framework for r in profile.frameworks)
    return Expectation(
        source=f"profile {profile.name}",
        requirements=reqs,
        frameworks=frameworks,
        smoke=ordered(profile.smoke_frameworks),
        env=profile.env,
        require_gpu=profile.verify.require_gpu,
        min_free_vram_gib=profile.verify.min_free_vram_gib,
        timeout_s=profile.verify.timeout_s,
        problems=problems,
        kind="profile",
    )


def expectation_from_lock(path: str, marker: Marker | None) -> Expectation:
    lock_path = Path(path)
    if not lock_path.is_file():
        raise UsageError(f"{path}: no such lock file")
    from colabenv.lockfile import read_lock

    packages = read_lock(lock_path).packages
    reqs, problems = _parse_requirements(
        p.pin + (f" ; {p.marker}" if p.marker else "") for p in packages
    )
    frameworks = ordered(f for f in (framework_of(p.name) for p in packages) if f is not None)
    base = expectation_from_marker(marker) if marker is not None else Expectation(source="")
    return Expectation(
        source=f"lock {lock_path.name}",
        requirements=reqs,
        frameworks=frameworks,
        smoke=frameworks,
        env=base.env,
        require_gpu=base.require_gpu,
        min_free_vram_gib=base.min_free_vram_gib,
        timeout_s=base.timeout_s,
        problems=problems,
        kind="lock",
    )


# ---------------------------------------------------------------------------------------------
# sys.path: distributions, duplicates, shadowed modules


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


def check_duplicates(
    scan: PathScan, relevant_dists: Iterable[str] = (), relevant_modules: Iterable[str] = ()
) -> Check:
    """FAIL when a duplicate or shadow touches what this run expects; WARN for the rest."""
    dists = {canonicalize_name(n) for n in relevant_dists}
    modules = set(relevant_modules)
    findings: list[tuple[bool, str]] = []
    for name, found in scan.duplicates:
        where = ", ".join(f"{d.version or '?'} in {d.entry}" for d in found)
        findings.append((name in dists, f"{name} installed {len(found)} times ({where})"))
    for shadow in scan.shadows:
        findings.append(
            (shadow.module in modules,
             f"module {shadow.module} in {shadow.hidden} is shadowed by {shadow.used}")
        )
    if not findings:
        return Check("duplicates", Status.PASS,
                     f"{len(scan.dists)} distributions, none twice, no module shadowed")
    findings.sort(key=lambda f: not f[0])
    status = Status.FAIL if findings[0][0] else Status.WARN
    return Check("duplicates", status, _join([text for _, text in findings]))


# ---------------------------------------------------------------------------------------------
# Installed distributions (first one on sys.path wins, as for imports)


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


def _join(items: Sequence[str], limit: int = 3) -> str:
    shown = "; ".join(items[:limit])
    return shown + (f"; and {len(items) - limit} more" if len(items) > limit else "")


def _marker_applies(req: Requirement, extras: Iterable[str]) -> bool:
    if req.marker is None:
        return True
    try:
        return any(req.marker.evaluate({"extra": extra}) for extra in ("", *extras))
    except (UndefinedComparison, UndefinedEnvironmentName):
        return True


def _exact_pin(req: Requirement) -> str | None:
    specs = list(req.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        return specs[0].version
    return None


def _satisfies(installed: str, req: Requirement) -> bool:
    pin = _exact_pin(req)
    if pin is not None:
        if next(iter(req.specifier)).operator == "===":
            return installed == pin
        try:
            return Version(installed) == Version(pin)
        except InvalidVersion:
            return installed == pin
    if not req.specifier:
        return True
    return req.specifier.contains(installed, prereleases=True)


def check_versions(expectation: Expectation, lookup: Callable[[str], str | None]) -> Check:
    """Installed versions, local tags included: ``==2.6.0+cu124`` is not met by ``2.6.0+cu126``."""
    if not expectation.requirements and not expectation.problems:
        return Check("versions", Status.SKIP, f"nothing to compare with: {expectation.source}")
    problems = list(expectation.problems)
    checked = 0
    frameworks: list[str] = []
    for req in expectation.requirements:
        if not _marker_applies(req, ()):
            continue
        checked += 1
        installed = lookup(req.name)
        wanted = str(req.specifier) or "any version"
        if installed is None:
            problems.append(f"{req.name}: not installed, expected {wanted}")
        elif not _satisfies(installed, req):
            problems.append(f"{req.name}: installed {installed}, expected {wanted}")
        elif framework_of(req.name) is not None:
            frameworks.append(f"{canonicalize_name(req.name)} {installed}")
    if problems:
        return Check("versions", Status.FAIL, _join(problems))
    shown = f" ({', '.join(frameworks)})" if frameworks else ""
    return Check("versions", Status.PASS,
                 f"{checked} requirement(s) of the {expectation.source} met{shown}")


@model
class Closure:
    """The distributions reached from the roots through their Requires-Dist, and what is unmet."""

    names: tuple[NormalizedName, ...]
    problems: tuple[str, ...]
    involved: tuple[tuple[NormalizedName, NormalizedName], ...] = ()
    """For each problem, the distribution that requires and the one required."""


def dependency_closure(
    roots: Iterable[tuple[str, frozenset[str]]], lookup: Callable[[str], DistInfo | None]
) -> Closure:
    """What ``pip check`` reports, limited to the roots and everything they pull in.

    Markers are evaluated for this interpreter, with the extras each requirement asks for.
    Roots that are not installed are the versions check's business and are skipped here.
    """
    seen: set[tuple[NormalizedName, frozenset[str]]] = set()
    order: dict[NormalizedName, None] = {}
    problems: dict[str, tuple[NormalizedName, NormalizedName]] = {}
    queue = [(canonicalize_name(name), extras) for name, extras in roots]
    while queue:
        name, extras = queue.pop(0)
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        info = lookup(name)
        if info is None:
            continue
        order[name] = None
        for text in info.requires:
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if not _marker_applies(req, extras):
                continue
            dep = lookup(req.name)
            label = f"{info.name} {info.version} requires {req.name}{req.specifier}"
            pair = (name, canonicalize_name(req.name))
            if dep is None:
                problems.setdefault(f"{label}, which is not installed", pair)
                continue
            if req.specifier and not req.specifier.contains(dep.version, prereleases=True):
                problems.setdefault(f"{label}, installed {dep.version}", pair)
            queue.append((canonicalize_name(req.name), frozenset(req.extras)))
    return Closure(tuple(order), tuple(problems), tuple(problems.values()))


def check_consistency(closure: Closure, changed: frozenset[str] | None = None) -> Check:
    """Unmet requirements are a FAIL, unless the bootstrap script (``changed``: what its marker
    says it installed or moved) touched neither side: then the runtime image shipped them
    that way (Colab forces one cuDNN under frameworks that pin another) and it is a WARN."""
    if closure.problems:
        if changed is not None and closure.involved and not any(
            owner in changed or dep in changed for owner, dep in closure.involved
        ):
            return Check("consistency", Status.WARN,
                         "as the runtime image shipped it (colabenv changed neither side): "
                         + _join(list(closure.problems)))
        return Check("consistency", Status.FAIL, _join(list(closure.problems)))
    if not closure.names:
        return Check("consistency", Status.SKIP, "no installed distribution to check")
    return Check("consistency", Status.PASS,
                 f"{len(closure.names)} distribution(s) checked, every requirement met")


# ---------------------------------------------------------------------------------------------
# The CUDA each framework was built for, read without importing it


@model
class Build:
    framework: Framework
    dist: str
    version: str
    cuda: Version | None
    variant: str | None
    evidence: str

    @property
    def cpu_only(self) -> bool:
        return self.cuda is None

    @property
    def label(self) -> str:
        return f"{self.dist} {self.version}"


_TORCH_VERSION_CUDA_RE = re.compile(r"^cuda\s*(?::[^=]*)?=\s*['\"](\d+\.\d+)", re.MULTILINE)
_TF_BUILD_CUDA_RE = re.compile(r"['\"]cuda_version['\"]\s*,\s*['\"](\d+\.\d+)")
_TF_CUDA_BUILD_RE = re.compile(r"['\"]is_cuda_build['\"]\s*,\s*(True|False)")
_RUNTIME_RE = re.compile(r"^nvidia-cuda-runtime(?:-cu(\d+))?$")





def _major_minor(text: str) -> Version | None:
    try:
        version = Version(text)
    except InvalidVersion:
        return None
    release = (*version.release, 0)
    return Version(f"{release[0]}.{release[1]}")


def _cuda_from_requires(info: DistInfo) -> Version | None:
    for text in info.requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        name = canonicalize_name(req.name)
        pin = _exact_pin(req)
        if pin is None or not _marker_applies(req, ()):
            continue
        if _RUNTIME_RE.match(name) or name == "cuda-toolkit":
            return _major_minor(pin.split("+")[0])
    return None


def _catalog_variant(catalog: Catalog, framework: Framework, version: str, variant: str | None
                     ) -> tuple[str | None, tuple[Arch, ...] | None]:
    try:
        public = Version(Version(version).public)
    except InvalidVersion:
        return None, None
    release = catalog.release(framework, public)
    if release is None:
        return None, None
    name = variant or release.default_variant
    chosen = release.variant(name) if name else None
    if chosen is None:
        return name, None
    return chosen.name, chosen.archs


def framework_build(framework: Framework, installed: Installed, catalog: Catalog) -> Build | None:
    dist_name = next((n for n in FACTS[framework].dists if installed.get(n)), None)
    info = installed.get(dist_name) if dist_name else None
    if info is None or dist_name is None:
        return None
    version = info.version
    try:
        local = Version(version).local
    except InvalidVersion:
        local = None
    if framework is Framework.TORCH:
        return _torch_build(info, local, installed, catalog)
    if framework is Framework.JAX:
        return _jax_build(info, installed, catalog)
    return _tensorflow_build(info, installed, catalog)


def _torch_build(info: DistInfo, local: str | None, installed: Installed, catalog: Catalog
                 ) -> Build:
    tag_cuda = cuda_from_local_tag(local)
    if tag_cuda is not None:
        return Build(Framework.TORCH, info.name, info.version, tag_cuda, local,
                     f"local tag +{local}")
    if local is not None:
        return Build(Framework.TORCH, info.name, info.version, None, local, f"local tag +{local}")
    text = installed.read_text(info.name, "torch/version.py")
    if text is not None:
        match = _TORCH_VERSION_CUDA_RE.search(text)
        cuda = Version(match.group(1)) if match else None
        variant = f"cu{cuda.major}{cuda.minor}" if cuda is not None else "cpu"
        return Build(Framework.TORCH, info.name, info.version, cuda, variant, "torch/version.py")
    cuda = _cuda_from_requires(info)
    if cuda is not None:
        return Build(Framework.TORCH, info.name, info.version, cuda,
                     f"cu{cuda.major}{cuda.minor}", "its NVIDIA requirements")
    default, _ = _catalog_variant(catalog, Framework.TORCH, info.version, None)
    release = _catalog_release_cuda(catalog, Framework.TORCH, info.version, default)
    return Build(Framework.TORCH, info.name, info.version, release, default,
                 "the catalog's default variant")


def _catalog_release_cuda(catalog: Catalog, framework: Framework, version: str,
                          variant: str | None) -> Version | None:
    try:
        release = catalog.release(framework, Version(Version(version).public))
    except InvalidVersion:
        return None
    if release is None or variant is None:
        return None
    chosen = release.variant(variant)
    return chosen.cuda if chosen is not None else None


def _installed_runtime(installed: Installed, major: int) -> Version | None:
    for name in (f"nvidia-cuda-runtime-cu{major}", "nvidia-cuda-runtime"):
        version = installed.version(name)
        if version is not None:
            found = _major_minor(version)
            if found is not None and found.major == major:
                return found
    return None


def _jax_build(info: DistInfo, installed: Installed, catalog: Catalog) -> Build:
    plugin = next(
        (n for n in installed.names() if re.fullmatch(r"jax-cuda\d+-(plugin|pjrt)", n)), None
    )
    if plugin is None:
        return Build(Framework.JAX, info.name, info.version, None, "cpu", "no jax CUDA plugin")
    major = int(re.sub(r"\D", "", plugin.split("-")[1]))
    variant = f"cuda{major}"
    cuda = _installed_runtime(installed, major) or _catalog_release_cuda(
        catalog, Framework.JAX, info.version, variant
    ) or Version(f"{major}.0")
    return Build(Framework.JAX, info.name, info.version, cuda, variant,
                 f"{plugin} {installed.version(plugin)}")


def _tensorflow_build(info: DistInfo, installed: Installed, catalog: Catalog) -> Build:
    text = installed.read_text(info.name, "tensorflow/python/platform/build_info.py")
    if text is not None:
        built = _TF_CUDA_BUILD_RE.search(text)
        match = _TF_BUILD_CUDA_RE.search(text)
        if match is not None:
            return Build(Framework.TENSORFLOW, info.name, info.version,
                         _major_minor(match.group(1)), "and-cuda", "tensorflow build_info")
        if built is not None and built.group(1) == "False":
            return Build(Framework.TENSORFLOW, info.name, info.version, None, "cpu",
                         "tensorflow build_info")
    if info.name == "tensorflow-cpu":
        return Build(Framework.TENSORFLOW, info.name, info.version, None, "cpu", "tensorflow-cpu")
    try:
        release = catalog.release(Framework.TENSORFLOW, Version(Version(info.version).public))
    except InvalidVersion:
        release = None
    variant = next((v for v in release.variants if v.cuda is not None), None) if release else None
    if variant is None:
        return Build(Framework.TENSORFLOW, info.name, info.version, None, None, "unknown")
    return Build(Framework.TENSORFLOW, info.name, info.version, variant.cuda, variant.name,
                 "the catalog")


def _driver_cuda(target: Target, catalog: Catalog) -> Version | None:
    if target.cuda is not None:
        return target.cuda
    return catalog.max_cuda_for_driver(target.driver) if target.driver is not None else None


def check_cuda(
    framework: Framework,
    build: Build | None,
    target: Target,
    catalog: Catalog,
    *,
    require_gpu: bool,
) -> Check:
    name = f"cuda:{framework.value}"
    if build is None:
        return Check(name, Status.FAIL, f"{framework.value} is not installed")
    built = f"{build.label} built for CUDA {build.cuda}" if build.cuda else f"{build.label} (CPU)"
    if not target.has_gpu:
        if require_gpu:
            return Check(name, Status.FAIL,
                         f"the profile requires a GPU and none was found; {built}")
        return Check(name, Status.SKIP, f"no GPU on this host; {built}")
    if build.cpu_only:
        status = Status.FAIL if require_gpu else Status.WARN
        return Check(name, status,
                     f"{build.label} has no CUDA support ({build.evidence}) on a GPU host")
    assert build.cuda is not None
    driver = format_driver(target.driver) if target.driver is not None else "unknown"
    host_cuda = _driver_cuda(target, catalog)
    problems: list[str] = []
    warnings: list[str] = []
    notes: list[str] = []
    floor = catalog.floor_driver(build.cuda)
    if target.driver is not None and floor is not None and target.driver < floor:
        problems.append(f"CUDA {build.cuda.major} builds need driver >= {format_driver(floor)}, "
                        f"this driver is {driver}")
    elif host_cuda is not None and build.cuda.major > host_cuda.major:
        problems.append(f"built for CUDA {build.cuda}, the driver ({driver}) supports up to "
                        f"CUDA {host_cuda}")
    elif host_cuda is not None and build.cuda > host_cuda:
        warnings.append(f"built for CUDA {build.cuda}, newer than the driver's {host_cuda}: runs "
                        "by minor-version compatibility, PTX JIT may fail")
    _, archs = _catalog_variant(catalog, framework, build.version, build.variant)
    caps = target.compute_capabilities
    if archs:
        missing = [cap.sm for cap in caps if not archs_cover(archs, cap)]
        if missing:
            listed = " ".join(str(a) for a in archs)
            problems.append(f"no kernels for {', '.join(missing)} in its arch list ({listed})")
        elif caps:
            notes.append(f"kernels for {', '.join(c.sm for c in caps)}")
    elif caps:
        notes.append("arch list not in the catalog, left to the smoke test")
    if problems:
        return Check(name, Status.FAIL, f"{build.label}: " + "; ".join(problems))
    if warnings:
        return Check(name, Status.WARN, f"{build.label}: " + "; ".join(warnings + notes))
    fits = f"{built} ({build.evidence}), driver {driver} (CUDA {host_cuda or '?'})"
    return Check(name, Status.PASS, "; ".join([fits, *notes]))


# ---------------------------------------------------------------------------------------------
# Smoke tests and the VRAM probe (children)


@model
class DeviceResult:
    index: int
    name: str
    capability: str | None
    max_abs_diff: float | None
    error: str | None


@model
class SmokeResult:
    framework: str
    stage: str
    version: str | None
    cuda: str | None
    cudnn: str | None
    arch_list: tuple[str, ...] | None
    devices: tuple[DeviceResult, ...]
    gpu_reason: str | None
    cpu_max_abs_diff: float | None
    error: str | None


@model
class GpuMemory:
    index: int
    free: int | None
    total: int | None
    largest: int | None
    complete: bool | None


@model
class ProbeResult:
    framework: str
    gpus: tuple[GpuMemory, ...]
    probed: bool
    reason: str | None
    error: str | None


def _result_line(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(SMOKE_PREFIX):
            try:
                data = json.loads(line[len(SMOKE_PREFIX):])
            except json.JSONDecodeError:
                return None
            return data if isinstance(data, dict) else None
    return None


def _opt_str(value: object) -> str | None:
    return str(value) if value is not None else None


def _opt_float(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _opt_int(value: object) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def parse_smoke(stdout: str) -> SmokeResult | None:
    data = _result_line(stdout)
    if data is None or data.get("mode") != "smoke":
        return None
    devices = tuple(
        DeviceResult(
            index=_opt_int(d.get("index")) or 0,
            name=str(d.get("name", "?")),
            capability=_opt_str(d.get("capability")),
            max_abs_diff=_opt_float(d.get("max_abs_diff")),
            error=_opt_str(d.get("error")),
        )
        for d in data.get("devices") or []
        if isinstance(d, dict)
    )
    arch = data.get("arch_list")
    return SmokeResult(
        framework=str(data.get("framework", "?")),
        stage=str(data.get("stage", "?")),
        version=_opt_str(data.get("version")),
        cuda=_opt_str(data.get("cuda")),
        cudnn=_opt_str(data.get("cudnn")),
        arch_list=tuple(str(a) for a in arch) if isinstance(arch, list) else None,
        devices=devices,
        gpu_reason=_opt_str(data.get("gpu_reason")),
        cpu_max_abs_diff=_opt_float(data.get("cpu_max_abs_diff")),
        error=_opt_str(data.get("error")),
    )


def parse_probe(stdout: str) -> ProbeResult | None:
    data = _result_line(stdout)
    if data is None or data.get("mode") != "vram":
        return None
    gpus = tuple(
        GpuMemory(
            index=_opt_int(g.get("index")) or 0,
            free=_opt_int(g.get("free")),
            total=_opt_int(g.get("total")),
            largest=_opt_int(g.get("largest")),
            complete=g.get("complete") if isinstance(g.get("complete"), bool) else None,
        )
        for g in data.get("gpus") or []
        if isinstance(g, dict)
    )
    return ProbeResult(str(data.get("framework", "?")), gpus, bool(data.get("probed")),
                       _opt_str(data.get("reason")), _opt_str(data.get("error")))


def stderr_tail(stderr: str, lines: int = STDERR_TAIL_LINES, limit: int = 300,
                skip: str | None = None) -> str:
    """The last few lines of stderr that say something: no traceback frames, no source lines,
    not ``skip`` (the error the child already reported)."""
    kept = []
    for raw in stderr.splitlines():
        line = raw.strip()
        if not line or raw.startswith("    ") or line.startswith(("File \"", "Traceback (")):
            continue
        if set(line) <= set("^~ ") or line == skip:
            continue
        kept.append(line)
    text = " | ".join(kept[-lines:])
    return text if len(text) <= limit else "..." + text[-limit:]


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def child_failure(completed: _proc.Completed, timeout: float) -> str | None:
    """Why a child died (hang, signal), or None when it exited by itself."""
    if completed.timed_out:
        return f"did not finish within {timeout:g}s (killed)"
    if completed.returncode < 0:
        return f"crashed with {_signal_name(completed.returncode)}"
    return None


def _with_tail(text: str, completed: _proc.Completed, skip: str | None = None) -> str:
    tail = stderr_tail(completed.stderr, skip=skip)
    return f"{text}; stderr: {tail}" if tail else text


def _device_label(device: DeviceResult) -> str:
    cap = f" (sm_{device.capability.replace('.', '')})" if device.capability else ""
    return f"GPU{device.index} {device.name}{cap}"


def _arch_gap(result: SmokeResult, device: DeviceResult) -> str | None:
    if not result.arch_list or not device.capability:
        return None
    try:
        cap = ComputeCapability.parse(device.capability)
    except ValueError:
        return None
    archs = []
    for text in result.arch_list:
        try:
            archs.append(Arch.parse(text))
        except ValueError:
            continue
    if not archs or archs_cover(archs, cap):
        return None
    listed = " ".join(result.arch_list)
    return f"no kernels for {cap.sm} in {result.framework}'s arch list ({listed})"


def check_smoke(
    framework: Framework,
    completed: _proc.Completed,
    *,
    timeout: float,
    host_has_gpu: bool,
    require_gpu: bool,
) -> Check:
    name = f"smoke:{framework.value}"
    died = child_failure(completed, timeout)
    if died is not None:
        return Check(name, Status.FAIL, _with_tail(died, completed))
    result = parse_smoke(completed.stdout)
    if result is None:
        return Check(name, Status.FAIL,
                     _with_tail(f"exited {completed.returncode} without a result", completed))
    if result.error is not None:
        what = "import failed" if result.stage == "import" and result.version is None else "failed"
        return Check(name, Status.FAIL,
                     _with_tail(f"{what}: {result.error}", completed, skip=result.error))
    label = f"{framework.value} {result.version}"
    if result.cpu_max_abs_diff is None or result.cpu_max_abs_diff > MATMUL_TOLERANCE:
        return Check(name, Status.FAIL,
                     f"{label}: CPU matmul wrong (max abs diff {result.cpu_max_abs_diff})")
    if not result.devices:
        reason = result.gpu_reason or "no GPU visible"
        if require_gpu:
            return Check(name, Status.FAIL,
                         _with_tail(f"{label} sees no GPU ({reason}); the profile requires one",
                                    completed))
        if host_has_gpu:
            return Check(name, Status.FAIL,
                         _with_tail(f"{label} sees no GPU although the host has one ({reason})",
                                    completed))
        return Check(name, Status.SKIP,
                     f"GPU part skipped: no GPU on this host; CPU matmul ok ({label})")
    problems = []
    for device in result.devices:
        gap = _arch_gap(result, device)
        if device.error is not None:
            problems.append(f"{_device_label(device)}: " + (f"{gap}: " if gap else "")
                            + device.error)
        elif device.max_abs_diff is None or device.max_abs_diff > MATMUL_TOLERANCE:
            problems.append(f"{_device_label(device)}: matmul differs from the CPU result "
                            f"(max abs diff {device.max_abs_diff})")
    if problems:
        return Check(name, Status.FAIL, f"{label}: " + "; ".join(problems))
    names = sorted({_device_label(d).split(" ", 1)[1] for d in result.devices})
    count = f"{len(result.devices)} GPUs: " if len(result.devices) > 1 else ""
    versions = f"CUDA {result.cuda or '?'}, cuDNN {result.cudnn or '?'}"
    return Check(name, Status.PASS,
                 f"{count}{', '.join(names)}: matmul agrees with CPU; {label}, {versions}")


def smoke_env(framework: Framework, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """TensorFlow grows its GPU memory and JAX does not preallocate, so they can share a GPU."""
    env = dict(os.environ if base is None else base)
    if framework is Framework.TENSORFLOW:
        env["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    elif framework is Framework.JAX:
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    return env


def smoke_argv(framework: Framework) -> list[str]:
    return [sys.executable, "-m", "colabenv._smoke", "smoke", framework.value]


def run_smoke(framework: Framework, timeout: float) -> _proc.Completed:
    argv = smoke_argv(framework)
    try:
        return _proc.run(argv, timeout=timeout, env=smoke_env(framework))
    except ProcessError as error:
        return _proc.Completed(tuple(argv), 127, "", str(error), False)


PROBE_FRAMEWORKS = ("torch", "cupy", "jax")


def probe_framework(is_installed: Callable[[str], bool] | None = None) -> str | None:
    """The first of torch, cupy, jax present here (found, not imported)."""
    present = is_installed or (lambda name: importlib.util.find_spec(name) is not None)
    return next((name for name in PROBE_FRAMEWORKS if present(name)), None)


def run_probe(framework: str, go_file: Path, timeout: float) -> _proc.Completed:
    argv = [sys.executable, "-m", "colabenv._smoke", "vram", framework, "--go", str(go_file),
            "--deadline", f"{timeout:g}", "--search", f"{PROBE_SEARCH_S:g}"]
    env = dict(os.environ)
    if framework == "jax":
        env.update(XLA_PYTHON_CLIENT_PREALLOCATE="false", XLA_PYTHON_CLIENT_ALLOCATOR="platform")
    try:
        return _proc.run(argv, timeout=timeout + PROBE_SEARCH_S + 5, env=env)
    except ProcessError as error:
        return _proc.Completed(tuple(argv), 127, "", str(error), False)


def _gib(value: int) -> str:
    return f"{value / GIB:.1f} GiB"


def check_vram(
    gpus: Sequence[Gpu],
    probe: _proc.Completed | None,
    *,
    probe_timeout: float,
    host_has_gpu: bool,
    require_gpu: bool,
    min_free_gib: float | None,
) -> Check:
    if not host_has_gpu:
        if require_gpu:
            return Check("vram", Status.FAIL, "the profile requires a GPU and none was found")
        return Check("vram", Status.SKIP, "no GPU on this host")
    result = parse_probe(probe.stdout) if probe is not None else None
    probe_problem: str | None = None
    note = ""
    if probe is None:
        note = "; largest block not probed (no torch, cupy or jax here)"
    elif (died := child_failure(probe, probe_timeout)) is not None:
        probe_problem = _with_tail(f"probe {died}", probe)
    elif result is None:
        probe_problem = _with_tail(f"probe exited {probe.returncode} without a result", probe)
    elif result.error is not None:
        probe_problem = f"probe failed: {result.error}"
    elif not result.gpus:
        probe_problem = f"{result.framework} sees no GPU"
    elif not result.probed:
        probe_problem = f"largest block not probed: {result.reason}"
    probed = {g.index: g for g in result.gpus} if result is not None else {}
    indices = sorted(set(range(len(gpus))) | set(probed))
    parts: list[str] = []
    low: list[str] = []
    known = False
    for index in indices:
        nvml = gpus[index] if index < len(gpus) else None
        seen = probed.get(index)
        free = nvml.memory_free_mib * MIB if nvml and nvml.memory_free_mib is not None else None
        total = nvml.memory_total_mib * MIB if nvml and nvml.memory_total_mib is not None else None
        if free is None and seen is not None:
            free, total = seen.free, seen.total
        name = f"GPU{index}" + (f" {nvml.name}" if nvml is not None else "")
        if free is None or total is None:
            parts.append(f"{name}: memory unknown")
            continue
        known = True
        text = f"{name}: {_gib(free)} free of {_gib(total)}"
        if seen is not None and seen.largest is not None:
            bound = "" if seen.complete else ">= "
            text += f", largest block {bound}{_gib(seen.largest)}"
        parts.append(text)
        if min_free_gib is not None and free < min_free_gib * GIB:
            low.append(f"{name} has {_gib(free)} free, the profile asks for {min_free_gib:g} GiB")
    if not parts:
        why = probe_problem or note.removeprefix("; ") or "no GPU listed"
        return Check("vram", Status.WARN, f"no memory information ({why})")
    detail = "; ".join(parts)
    if low:
        return Check("vram", Status.WARN, "; ".join(low) + f" ({detail})")
    if probe_problem is not None or not known:
        return Check("vram", Status.WARN, f"{detail}; {probe_problem or 'memory unknown'}")
    return Check("vram", Status.PASS, detail + note)


# ---------------------------------------------------------------------------------------------
# The restart marker and when this kernel started


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _stat_fields(proc: Path, pid: int) -> list[str] | None:
    text = _read(proc / str(pid) / "stat")
    if text is None or ")" not in text:
        return None
    return text[text.rindex(")") + 2:].split()


def process_started_at(pid: int, proc: Path = Path("/proc"), now: float | None = None
                       ) -> float | None:
    """Wall-clock start of ``pid``: /proc/PID/stat starttime against /proc/uptime (or btime)."""
    fields = _stat_fields(proc, pid)
    if fields is None or len(fields) < 20:
        return None
    try:
        ticks = int(fields[19])
        hertz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    except (ValueError, OSError):
        return None
    since_boot = ticks / hertz
    uptime = _read(proc / "uptime")
    if uptime:
        try:
            return (time.time() if now is None else now) - (float(uptime.split()[0]) - since_boot)
        except (ValueError, IndexError):
            pass
    stat = _read(proc / "stat") or ""
    match = re.search(r"^btime\s+(\d+)", stat, re.MULTILINE)
    return int(match.group(1)) + since_boot if match else None


def _parent(proc: Path, pid: int) -> int | None:
    fields = _stat_fields(proc, pid)
    try:
        return int(fields[1]) if fields and len(fields) > 1 else None
    except ValueError:
        return None


def _is_kernel(proc: Path, pid: int) -> bool:
    raw = (proc / str(pid) / "cmdline")
    try:
        args = raw.read_bytes().split(b"\0")
    except OSError:
        return False
    text = [a.decode("utf-8", "replace") for a in args]
    return any(any(k in a for k in KERNEL_LAUNCHERS) for a in text)


def restarted_process(proc: Path = Path("/proc"), pid: int | None = None) -> tuple[int, str]:
    """The IPython kernel this runs in or under (``!colabenv verify``), else this interpreter."""
    start = os.getpid() if pid is None else pid
    current: int | None = start
    for _ in range(16):
        if current is None or current <= 1:
            break
        if _is_kernel(proc, current):
            return current, "kernel"
        current = _parent(proc, current)
    return start, "interpreter"


def _clock(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def check_marker(
    marker: Marker | None,
    error: StateError | None,
    location: Path,
    started_at: float | None,
    who: str,
    *,
    explicit: bool,
) -> Check:
    if error is not None:
        return Check("marker", Status.FAIL, f"corrupted restart marker: {error}")
    if marker is None:
        text = f"no restart marker at {location}: the setup script has not finished here"
        if explicit:
            return Check("marker", Status.WARN, text)
        return Check("marker", Status.FAIL, text + " (or pass --profile/--lock)")
    if started_at is None:
        return Check("marker", Status.WARN,
                     f"marker of {_clock(marker.written_at)} found, but when this {who} started "
                     "cannot be told (no /proc)")
    if started_at >= marker.written_at:
        return Check("marker", Status.PASS,
                     f"{marker.profile}: setup finished {_clock(marker.written_at)}, "
                     f"this {who} started {_clock(started_at)}")
    if not marker.changed:
        return Check("marker", Status.PASS,
                     f"{marker.profile}: the last setup run changed nothing, no restart needed")
    return Check("marker", Status.FAIL,
                 f"restart required: setup finished {_clock(marker.written_at)}, after this "
                 f"{who} started ({_clock(started_at)})")


def check_env(expected: Sequence[tuple[str, str]], environ: Mapping[str, str] | None = None
              ) -> Check:
    env = os.environ if environ is None else environ
    if not expected:
        return Check("env", Status.SKIP, "no [env] variables asked for")
    problems = []
    for name, value in expected:
        actual = env.get(name)
        if actual is None:
            problems.append(f"{name} is not set (expected {value!r})")
        elif actual != value:
            problems.append(f"{name}={actual!r}, expected {value!r}")
    if problems:
        return Check("env", Status.FAIL, _join(problems) + " (restart after setup)")
    return Check("env", Status.PASS, f"{', '.join(n for n, _ in expected)} set as asked")


# ---------------------------------------------------------------------------------------------
# Putting it together


@dataclass
class _Children:
    smoke: dict[Framework, Future[_proc.Completed]] = field(default_factory=dict)
    probe: Future[_proc.Completed] | None = None


def _roots(expectation: Expectation, installed: Installed) -> list[tuple[str, frozenset[str]]]:
    if expectation.requirements:
        return [(r.name, frozenset(r.extras)) for r in expectation.requirements]
    if expectation.kind != "none":
        return []
    return [(name, frozenset()) for name in installed.names()]


def _changed_by_script(marker: Marker | None) -> frozenset[str] | None:
    """Names of what the bootstrap script installed or moved; None without a marker."""
    if marker is None:
        return None
    names = set()
    for entry in marker.installed:
        kind, _, rest = entry.partition(":")
        text = rest if kind == "dist" else entry
        if kind in ("apt", "env"):
            continue
        try:
            names.add(canonicalize_name(Requirement(text).name))
        except InvalidRequirement:
            continue
    return frozenset(names)


def _declared(expectation: Expectation) -> set[NormalizedName]:
    """What the user asked for by name: a duplicate of one of these is a FAIL, not a WARN.

    Their dependencies are left out on purpose: a runtime image often carries a second, older
    copy of a common library in the system site directory, behind the one in use.
    """
    names = {canonicalize_name(r.name) for r in expectation.requirements}
    for framework in expectation.frameworks:
        names.update(FACTS[framework].dists)
    return names


def _load_marker(state: Path) -> tuple[Marker | None, StateError | None]:
    try:
        return read_marker(state), None
    except StateError as error:
        return None, error


def verify(
    profile: str | None = None, lock: str | None = None, timeout: float | None = None
) -> VerifyReport:
    """Run every check and return the report; never raises for a failed check."""
    from colabenv.catalog import shipped_catalog
    from colabenv.detect import detect
    from colabenv.settings import TargetFlags, resolve_overrides

    if profile is not None and lock is not None:
        raise UsageError("verify: give --profile or --lock, not both")
    if timeout is not None and not timeout > 0:
        raise UsageError(f"--timeout: {timeout:g} is not a positive number of seconds")
    catalog = shipped_catalog()
    fingerprint: Fingerprint = detect(resolve_overrides(TargetFlags()))
    target = fingerprint.target
    marker, marker_error = _load_marker(fingerprint.state_dir)
    if profile is not None:
        expectation = expectation_from_profile(profile, target, catalog)
    elif lock is not None:
        expectation = expectation_from_lock(lock, marker)
    elif marker is not None:
        expectation = expectation_from_marker(marker)
    else:
        expectation = Expectation(source="no marker, profile or lock")

    scan = scan_path(sys.path, stdlib=stdlib_entries())
    installed = Installed(scan)
    if expectation.kind == "none":
        present = ordered(f for f in Framework if framework_build(f, installed, catalog))
        expectation = dataclasses.replace(expectation, frameworks=present, smoke=present)
    limit = timeout or expectation.timeout_s
    has_gpu = target.has_gpu
    probe_with = probe_framework() if has_gpu else None

    with tempfile.TemporaryDirectory(prefix="colabenv-verify-") as scratch, \
            ThreadPoolExecutor(max_workers=len(expectation.smoke) + 1) as pool:
        go_file = Path(scratch) / "smoke-done"
        children = _Children()
        for framework in expectation.smoke:
            children.smoke[framework] = pool.submit(run_smoke, framework, limit)
        if probe_with is not None:
            children.probe = pool.submit(run_probe, probe_with, go_file, limit)

        pid, who = restarted_process()
        checks = [
            check_marker(marker, marker_error, marker_path(fingerprint.state_dir),
                         process_started_at(pid), who, explicit=expectation.explicit),
            check_versions(expectation, installed.version),
        ]
        closure = dependency_closure(_roots(expectation, installed), installed.get)
        declared = _declared(expectation)
        modules = {m for name in declared for m in installed.top_level(name)}
        checks.append(check_duplicates(scan, declared, modules))
        checks.append(check_consistency(closure, _changed_by_script(marker)))
        for framework in expectation.frameworks:
            build = framework_build(framework, installed, catalog)
            checks.append(check_cuda(framework, build, target, catalog,
                                     require_gpu=expectation.require_gpu))

        for framework, future in children.smoke.items():
            checks.append(check_smoke(framework, future.result(), timeout=limit,
                                      host_has_gpu=has_gpu, require_gpu=expectation.require_gpu))
        go_file.touch()
        probe = children.probe.result() if children.probe is not None else None
    checks.append(check_vram(fingerprint.gpus, probe, probe_timeout=limit + PROBE_SEARCH_S + 5,
                             host_has_gpu=has_gpu, require_gpu=expectation.require_gpu,
                             min_free_gib=expectation.min_free_vram_gib))
    checks.append(check_env(expectation.env))
    return VerifyReport(tuple(checks), expectation.source)
