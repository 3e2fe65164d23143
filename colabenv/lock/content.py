"""What a lock holds, and the checks every value read from a lock passes (either form).

Models: :class:`Lock` (its :class:`LockHeader` with the :class:`LockTarget` it was made for, and
one :class:`LockedPackage` per pin), :class:`LockFile` (what one file holds: one lock, or one
:class:`LockSection` per named target), plus ``pins_digest``, the sha256 of what a lock installs
that its ``pins-sha256`` records. ``checked_*`` and :func:`new_package` are the one place a value
read from a lock or a resolver's output is checked: a name, version, URL or number of the wrong
shape is a :class:`~colabenv.errors.LockError` naming where it is, never a traceback.
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import field, replace
from datetime import datetime
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from colabenv.accelerators import registry
from colabenv.accelerators.base import RecordedDevice
from colabenv.errors import LockError, shown
from colabenv.lock.python_needs import checked_needs, needs_problem
from colabenv.models import (
    GFX_PATTERN,
    MAX_GFX,
    ROCM_FORMS,
    Accelerator,
    Framework,
    LockedCudaPackage,
    LockedFramework,
    Target,
    TpuTarget,
    format_driver,
)
from colabenv.models.frozen import model

LOCK_SCHEMA = 2
READABLE_SCHEMAS = (1, 2)
"""Schema 1 had no ``constraint`` and no ``pins-sha256`` lines; it is still read."""
SECTIONED_SCHEMA = 3
"""A lock of several named targets, one section each (:class:`LockFile`); a lock of one
target is still written as schema 2."""
MAX_SECTIONS = 16
"""The most sections a lock may hold (a profile's ``[targets]`` bound)."""
SECTION_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
"""A section's name: a profile's target name."""

_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_DRIVER_RE = re.compile(r"^\d{1,4}(\.\d{1,4}){0,3}$")
_CUDA_RE = re.compile(r"^\d{1,3}\.\d{1,3}$")
_CAPABILITY_RE = re.compile(r"^\d{1,2}\.\d{1,2}$")
_PYTHON_RE = re.compile(r"^\d{1,2}\.\d{1,3}$")
_PLATFORM_RE = re.compile(r"^[a-z0-9_]{1,64}$")
_ROCM_RE = re.compile(r"^[0-9]{1,2}\.[0-9]{1,2}(\.[0-9]{1,3})?$")
_GFX_RE = re.compile(f"^{GFX_PATTERN}$")
_VARIANT_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_PROFILE_HASH_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
MAX_VALUE = 500
"""The longest value (name, URL, requirement) a lock's header may hold."""


class HeaderWord(str, enum.Enum):
    """The words a header writes where a value is absent."""

    NONE = "none"
    """A target field with no value (a CPU target has no driver, CUDA or GPU)."""
    DEFAULT = "default"
    """A framework served by the default index."""


# ---------------------------------------------------------------------------------------------
# Models


@model
class LockedFile:
    """One file of a locked distribution: its sha256, and where known its name and URL, and
    where the index gives them (PEP 700) its ``size`` in bytes and its ``upload_time`` (a
    datetime with its offset, kept as the index or the lock wrote it)."""

    sha256: str
    name: str | None = None
    url: str | None = None
    size: int | None = None
    upload_time: datetime | None = None

    @property
    def is_wheel(self) -> bool:
        return self.name is None or self.name.endswith(".whl")


@model
class LockedPackage:
    """One pin. ``version`` is normalized (PEP 440), ``marker`` as :class:`Marker` writes it."""

    name: NormalizedName
    version: str
    files: tuple[LockedFile, ...]
    marker: str | None = None
    index: str | None = None

    @property
    def hashes(self) -> tuple[str, ...]:
        return tuple(f"sha256:{f.sha256}" for f in self.files)

    @property
    def pin(self) -> str:
        return f"{self.name}=={self.version}"

    def requirement_line(self) -> str:
        """``name==version [; marker] --hash=sha256:... ...`` on one line."""
        head = self.pin + (f" ; {self.marker}" if self.marker else "")
        return " ".join([head, *(f"--hash={h}" for h in self.hashes)])


def header_value(framework: LockedFramework) -> str:
    return (
        f"{framework.framework!s} {framework.version} variant={framework.variant} "
        f"index={framework.index_url or HeaderWord.DEFAULT.value}"
    )


def package_header_value(package: LockedCudaPackage) -> str:
    """A ``cuda-package`` header value: ``cupy cupy-cuda12x 14.2.0 variant=cuda12 index=default``."""
    return (
        f"{package.name} {package.distribution} {package.version} variant={package.variant} "
        f"index={package.index_url or HeaderWord.DEFAULT.value}"
    )


@model
class LockTarget:
    """The target a lock was made for, as the strings the header records; ``tpu``: the TPU of a
    TPU host (``target-tpu``; never beside a driver); ``rocm`` and ``gfx``: the ROCm (None: not
    known) and the GPU architectures of AMD GPUs (``target-rocm``, ``target-gfx``; never beside
    a driver). What differs by kind (its checks, its own fields, its differences) is asked of
    the kind its fields make (:attr:`recorded_device`).
    ``python_needs``: what the pins' Requires-Python asks of the full version within ``python``
    (``!=3.14.1``; ``target-python-needs``, absent from earlier locks); ``python_full``: of a
    current target, its full Python where known (never recorded: a lock's Python is X.Y)."""

    driver: str | None
    required_driver: str | None
    cuda: str | None
    compute_capabilities: tuple[str, ...]
    python: str
    platform: str
    tpu: TpuTarget | None = None
    python_needs: str | None = None
    python_full: str | None = None
    rocm: str | None = None
    gfx: tuple[str, ...] = ()

    @classmethod
    def from_target(cls, target: Target, required_driver: Version | None) -> LockTarget:
        return cls(
            driver=format_driver(target.driver) if target.driver is not None else None,
            required_driver=format_driver(required_driver) if required_driver is not None else None,
            cuda=str(target.cuda) if target.cuda is not None else None,
            compute_capabilities=tuple(str(c) for c in sorted(set(target.compute_capabilities))),
            python=target.python_minor,
            platform=target.platform,
            tpu=target.tpu,
            rocm=str(target.rocm) if target.rocm is not None else None,
            gfx=tuple(sorted(target.gfx)),
        )

    @classmethod
    def current(cls, target: Target, required_driver: Version | None) -> LockTarget:
        """``target`` as a lock's target is compared with (:meth:`differences`): with its full
        Python where it is known, for the pins' ``python-needs``."""
        full = str(target.python) if len(target.python.release) >= 3 else None
        return replace(cls.from_target(target, required_driver), python_full=full)

    @property
    def recorded_device(self) -> RecordedDevice:
        """The device fields, for the kind they make to check, write and compare."""
        return RecordedDevice(
            self.driver, self.cuda, self.compute_capabilities, self.tpu, self.rocm, self.gfx
        )

    def to_target(self) -> Target:
        """The target as the resolver takes it (nothing installed). Only for a checked target."""
        return Target(self.recorded_device.device(), Version(self.python), self.platform)

    @property
    def accelerator(self) -> Accelerator:
        """What the header's ``target-accelerator`` says: as :attr:`Target.accelerator`."""
        return self.recorded_device.kind

    def problem(self) -> str | None:
        """What is wrong with a target read from a lock (``key: why``), or None."""
        checks: tuple[tuple[str, str | None, re.Pattern[str]], ...] = (
            ("driver", self.driver, _DRIVER_RE),
            ("requires-driver", self.required_driver, _DRIVER_RE),
            ("cuda", self.cuda, _CUDA_RE),
            ("python", self.python, _PYTHON_RE),
            ("platform", self.platform, _PLATFORM_RE),
            *(("compute-capabilities", c, _CAPABILITY_RE) for c in self.compute_capabilities),
        )
        for key, value, pattern in checks:
            if value is not None and not pattern.match(value):
                return f"{key}: {shown(value)} is not a {key.replace('-', ' ')} value"
        amd = self._amd_problem()
        if amd is not None:
            return amd
        if self.python_needs is not None and checked_needs(self.python_needs) is None:
            return f"python-needs: {shown(self.python_needs)} is not a Python version specifier set"
        recorded = self.recorded_device
        return registry.accelerator(recorded.kind).recorded_problem(recorded)

    def _amd_problem(self) -> str | None:
        """What is wrong with the shape of ``rocm`` or ``gfx`` (``key: why``), or None."""
        if self.rocm is not None and not _ROCM_RE.match(self.rocm):
            return f"rocm: {shown(self.rocm)} is not {ROCM_FORMS}"
        for gfx in self.gfx:
            if not _GFX_RE.match(gfx):
                return f"gfx: {shown(gfx)} is not an AMD GPU architecture like gfx942, gfx90a or gfx1100"
        if len(set(self.gfx)) != len(self.gfx) or len(self.gfx) > MAX_GFX:
            return f"gfx: expected at most {MAX_GFX} architectures, each once"
        return None

    def marker_environment(self) -> dict[str, str]:
        """PEP 508 marker values of this target, for deciding which requirements apply."""
        system, _, machine = self.platform.partition("_")
        return {
            "python_version": self.python,
            "python_full_version": f"{self.python}.0",
            "implementation_version": f"{self.python}.0",
            "sys_platform": system,
            "platform_system": system.capitalize(),
            "platform_machine": machine,
            "os_name": "posix",
            "implementation_name": "cpython",
            "platform_python_implementation": "CPython",
        }

    def differences(self, other: LockTarget) -> list[str]:
        """What differs from ``other`` (the current target), one phrase per field. Of a TPU,
        the generation: another accelerator type or chip count runs the same wheels."""
        recorded, current = self.recorded_device, other.recorded_device
        kind_difference = registry.accelerator(recorded.kind).difference(recorded, current)
        found = [kind_difference] if kind_difference is not None else []
        for label, mine, theirs in (
            ("driver", self.driver, other.driver),
            ("CUDA", self.cuda, other.cuda),
            ("compute capabilities", joined(self.compute_capabilities), joined(other.compute_capabilities)),
            ("Python", self.python, other.python),
            ("platform", self.platform, other.platform),
        ):
            if _same_version(mine, theirs):
                continue
            none = HeaderWord.NONE.value
            found.append(f"{label} {mine or none} in the lock, {theirs or none} now")
        if other.python_full is not None and _same_version(self.python, other.python):
            excluded = needs_problem(self.python_needs, Version(other.python_full))
            if excluded is not None:
                found.append(excluded)
        return found


def accelerator_problem(written: str, target: LockTarget) -> str | None:
    """What is wrong with a lock's ``target-accelerator`` (it must say what the rest of the
    target says), or None."""
    try:
        named = Accelerator(written)
    except ValueError:
        known = [a.value for a in Accelerator]
        return f"{shown(written)} is not {', '.join(known[:-1])} or {known[-1]}"
    contradicted = registry.accelerator(target.accelerator).contradiction(named)
    return f"{shown(written)} but {contradicted}" if contradicted is not None else None


@model
class LockHeader:
    colabenv_version: str
    profile_name: str
    profile_hash: str
    target: LockTarget
    frameworks: tuple[LockedFramework, ...]
    resolver: str
    schema: int = LOCK_SCHEMA
    constraints: tuple[str, ...] = ()
    """Bounds on component wheels (``nvidia-cudnn-cu12<9.11``) the pins were made to honour."""
    cuda_packages: tuple[LockedCudaPackage, ...] = ()
    """The CUDA packages of ``[frameworks]`` chosen with the frameworks (none in older locks)."""


@model
class Lock:
    header: LockHeader
    packages: tuple[LockedPackage, ...]
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    path: Path | None = field(default=None, compare=False)
    find_links: tuple[str, ...] = ()
    """Pages of links the installer needs beside the indexes (an old release's TPU runtime)."""

    @property
    def pins(self) -> tuple[tuple[NormalizedName, str], ...]:
        """(canonical name, exact version with its local tag) for every locked distribution."""
        return tuple((p.name, p.version) for p in self.packages)

    @property
    def requirement_lines(self) -> tuple[str, ...]:
        """One ``name==version --hash=...`` line per distribution (no index options)."""
        return tuple(p.requirement_line() for p in self.packages)

    @property
    def index_urls(self) -> tuple[str, ...]:
        """The default index (when the lock names one) then the extra indexes, unexpanded."""
        first = (self.index_url,) if self.index_url else ()
        return first + self.extra_index_urls

    @property
    def install_lines(self) -> tuple[str, ...]:
        """The index and find-links lines (URLs unexpanded), then every pin with its marker and
        hashes: a requirements file that installs the lock exactly."""
        lines = [f"--index-url {self.index_url}"] if self.index_url else []
        lines.extend(f"--extra-index-url {url}" for url in self.extra_index_urls)
        lines.extend(f"--find-links {url}" for url in self.find_links)
        lines.extend(self.requirement_lines)
        return tuple(lines)

    @property
    def pins_digest(self) -> str:
        """sha256 of :attr:`install_lines`, in order: what ``pins-sha256`` records, in either
        format."""
        return hashlib.sha256("\n".join(self.install_lines).encode("utf-8")).hexdigest()

    def package(self, name: str) -> LockedPackage | None:
        wanted = canonicalize_name(name)
        for package in self.packages:
            if package.name == wanted:
                return package
        return None

    def version_of(self, name: str) -> str | None:
        package = self.package(name)
        return package.version if package else None


@model
class LockSection:
    """One target's lock in a lock file; ``name`` is None in a lock of one target (schema 1
    or 2), else the profile's name for the target."""

    name: str | None
    lock: Lock


@model
class LockFile:
    """What one lock file holds: a lock of one target (one unnamed section), or a section per
    named target (schema 3), each its own resolution, sharing the profile, its hash, the
    colabenv version and the resolver."""

    sections: tuple[LockSection, ...]
    path: Path | None = field(default=None, compare=False)

    @property
    def sectioned(self) -> bool:
        return bool(self.sections) and self.sections[0].name is not None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.sections if s.name is not None)

    @property
    def first(self) -> Lock:
        """The first section's lock: the header fields every section shares are read here."""
        return self.sections[0].lock

    def section(self, name: str) -> Lock | None:
        for section in self.sections:
            if section.name == name:
                return section.lock
        return None


def joined(values: Iterable[str]) -> str | None:
    """Comma-joined, or None for none (how a header writes a list)."""
    text = ",".join(values)
    return text or None


def _same_version(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a == b
    try:
        return Version(a) == Version(b)
    except ValueError:
        return a == b


# ---------------------------------------------------------------------------------------------
# Values read from a lock, either format


def checked_version(text: str) -> str | None:
    """``text`` as a normalized PEP 440 version, or None when it is not one."""
    if len(text) > 64:
        return None
    try:
        return str(Version(text))
    except ValueError:
        return None


def checked_url(url: str) -> str | None:
    """An index URL as a lock may hold it: printable, no whitespace, http(s) or file."""
    if not url or len(url) > 2000 or any(ch.isspace() or not ch.isprintable() for ch in url):
        return None
    if not url.startswith(("https://", "http://", "file://")):
        return None
    return url


def checked_constraint(text: str) -> str | None:
    """A component constraint as :class:`Requirement` writes it, or None."""
    if len(text) > MAX_VALUE:
        return None
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return None
    return None if requirement.url else str(requirement)


def _build_problem(version: str, variant: str, index: str | None) -> str | None:
    """What is wrong with the release, build and index a header line records, or None."""
    if checked_version(version) is None:
        return f"{shown(version)} is not a version"
    if not _VARIANT_RE.match(variant):
        return f"variant {shown(variant)} is not a variant name"
    if index is not None and checked_url(index) is None:
        return f"index {shown(index)} is not an index URL"
    return None


def checked_framework(name: str, version: str, variant: str, index: str | None) -> LockedFramework | str:
    """The framework a header records, or what is wrong with it."""
    try:
        framework = Framework(name)
    except ValueError:
        return f"{shown(name)} is not a framework ({', '.join(f.value for f in Framework)})"
    problem = _build_problem(version, variant, index)
    if problem is not None:
        return problem
    return LockedFramework(framework, str(checked_version(version)), variant, index)


_NAME_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,98}[A-Za-z0-9])?$")


def checked_cuda_package(
    name: str, distribution: str, version: str, variant: str, index: str | None
) -> LockedCudaPackage | str:
    """The CUDA package a header records, or what is wrong with it."""
    for kind, text in (("package", name), ("distribution", distribution)):
        if not _NAME_RE.match(text):
            return f"{kind} {shown(text)} is not a distribution name"
    problem = _build_problem(version, variant, index)
    if problem is not None:
        return problem
    return LockedCudaPackage(
        canonicalize_name(name),
        canonicalize_name(distribution),
        str(checked_version(version)),
        variant,
        index,
    )


def check_header_text(key: str, value: str) -> str | None:
    """What is wrong with a free-text header value (colabenv-version, resolver), or None."""
    if key == "colabenv-version" and checked_version(value) is None:
        return f"{shown(value)} is not a version"
    if len(value) > MAX_VALUE or not value.isprintable():
        return f"{shown(value)} is not one printable line"
    return None


def is_sha256(value: str) -> bool:
    """64 lowercase hex digits."""
    return _SHA256_RE.match(value) is not None


def checked_profile_hash(value: str) -> str | None:
    return value if _PROFILE_HASH_RE.match(value) else None


def new_package(
    name: str,
    version: str,
    files: Sequence[LockedFile],
    marker: str | None,
    index: str | None,
    where: str,
) -> LockedPackage:
    """A pin from a lock or a resolver's output, checked: LockError(``where: why``) if not."""
    try:
        canonical = canonicalize_name(name, validate=True)
    except ValueError:
        raise LockError(f"{where}: {shown(name)} is not a distribution name") from None
    normalized = checked_version(version)
    if normalized is None:
        raise LockError(f"{where}: {canonical}: {shown(version)} is not a version")
    if not files:
        raise LockError(f"{where}: {canonical} has no sha256 hash")
    if marker is not None:
        try:
            marker = str(Marker(marker))
        except ValueError:
            raise LockError(f"{where}: {canonical}: {shown(marker)} is not a marker") from None
    if index is not None and checked_url(index) is None:
        raise LockError(f"{where}: {canonical}: index {shown(index)} is not an index URL")
    return LockedPackage(canonical, normalized, tuple(files), marker, index)


def check_digest(lock: Lock, recorded: str | None, where: str) -> None:
    """``pins-sha256`` must match the pins that were read (None: a schema-1 lock has none)."""
    if recorded is not None and recorded != lock.pins_digest:
        raise LockError(
            f"{where}: the pins do not match the lock's pins-sha256 (the lock was "
            "truncated or edited); make it again with colabenv lock"
        )
