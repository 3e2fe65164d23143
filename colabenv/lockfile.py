"""The lockfile format: models, the requirements form written and read, and whether a lock is
still the one to install (staleness, completeness). No I/O but :func:`read_lock`.

A colabenv lock is a pip requirements file that any pip or uv installs with
``pip install --require-hashes -r LOCK``: ``--index-url``/``--extra-index-url`` lines, then one
exact pin per distribution of the closure with its ``--hash`` options. Its header comments
record what it was made for, one ``# key: value`` per line (schema 2)::

    # colabenv-version: 0.1.0
    # lock-schema: 2
    # profile: "pytorch"
    # profile-hash: sha256:...
    # target-driver: 550.54.15            (none without a GPU)
    # target-requires-driver: 525.60.13   (the driver floor the chosen builds need)
    # target-cuda: 12.4
    # target-compute-capabilities: 7.5
    # target-python: 3.12
    # target-platform: linux_x86_64
    # framework: torch 2.6.0 variant=cu124 index=https://download.pytorch.org/whl/cu124
    # constraint: nvidia-cudnn-cu12<9.11  (a bound the pins honour; one line each)
    # resolver: uv 0.8.0
    # pins-sha256: ...                    (of the index lines and every pin with its hashes)

Index URLs keep their ``${VAR}`` credential references: pip and uv expand them when they
install, and no expanded value is ever written. ``--format pylock`` writes the same facts as a
PEP 751 ``pylock.toml`` (:mod:`colabenv.pep751`, the header under ``[tool.colabenv]``).

A lock is read strictly: every value of the header has its shape, every pin is a valid PEP 508
name pinned ``==`` to a valid PEP 440 version with at least one sha256 hash, nothing else is in
the body, and ``pins-sha256`` matches what is there (a truncated or edited lock is refused).
Where the profile is at hand, :func:`unmet_requirements` also holds the pins to it.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import field
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from colabenv._digest import sha256_hex
from colabenv._model import model
from colabenv.errors import InputError, LockError, printable
from colabenv.frameworks import FACTS
from colabenv.models import (
    ComputeCapability,
    Framework,
    LockedFramework,
    Profile,
    Target,
    TargetOverrides,
    format_driver,
)

LOCK_SCHEMA = 2
READABLE_SCHEMAS = (1, 2)
"""Schema 1 had no ``constraint`` and no ``pins-sha256`` lines; it is still read."""

_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_HASH_OPTION_RE = re.compile(r"^--hash[= ](?P<algo>[a-z0-9]+):(?P<digest>\S+)$")
_KEY_RE = re.compile(r"^[a-z][a-z0-9-]*$")
_DRIVER_RE = re.compile(r"^\d{1,4}(\.\d{1,4}){0,3}$")
_CUDA_RE = re.compile(r"^\d{1,3}\.\d{1,3}$")
_CAPABILITY_RE = re.compile(r"^\d{1,2}\.\d{1,2}$")
_PYTHON_RE = re.compile(r"^\d{1,2}\.\d{1,3}$")
_PLATFORM_RE = re.compile(r"^[a-z0-9_]{1,64}$")
_VARIANT_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_PROFILE_HASH_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
_MAX_VALUE = 500
_ANY = SpecifierSet()


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
    """One file of a locked distribution: its sha256, and where known its name and URL."""

    sha256: str
    name: str | None = None
    url: str | None = None

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
    return (f"{framework.framework!s} {framework.version} variant={framework.variant} "
            f"index={framework.index_url or HeaderWord.DEFAULT.value}")


@model
class LockTarget:
    """The target a lock was made for, as the strings the header records."""

    driver: str | None
    required_driver: str | None
    cuda: str | None
    compute_capabilities: tuple[str, ...]
    python: str
    platform: str

    @classmethod
    def from_target(cls, target: Target, required_driver: Version | None) -> LockTarget:
        return cls(
            driver=format_driver(target.driver) if target.driver is not None else None,
            required_driver=format_driver(required_driver) if required_driver is not None else None,
            cuda=str(target.cuda) if target.cuda is not None else None,
            compute_capabilities=tuple(str(c) for c in sorted(set(target.compute_capabilities))),
            python=target.python_minor,
            platform=target.platform,
        )

    def to_target(self) -> Target:
        """The target as the resolver takes it (nothing installed). Only for a checked target."""
        return Target(
            driver=Version(self.driver) if self.driver else None,
            cuda=Version(self.cuda) if self.cuda else None,
            compute_capabilities=tuple(ComputeCapability.parse(c)
                                       for c in self.compute_capabilities),
            python=Version(self.python),
            platform=self.platform,
        )

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
                return f"{key}: {_shown(value)} is not a {key.replace('-', ' ')} value"
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
        """What differs from ``other`` (the current target), one phrase per field."""
        found = []
        for label, mine, theirs in (
            ("driver", self.driver, other.driver),
            ("CUDA", self.cuda, other.cuda),
            ("compute capabilities", _join(self.compute_capabilities),
             _join(other.compute_capabilities)),
            ("Python", self.python, other.python),
            ("platform", self.platform, other.platform),
        ):
            if _same_version(mine, theirs):
                continue
            none = HeaderWord.NONE.value
            found.append(f"{label} {mine or none} in the lock, {theirs or none} now")
        return found


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


@model
class Lock:
    header: LockHeader
    packages: tuple[LockedPackage, ...]
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    path: Path | None = field(default=None, compare=False)

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
    def pins_digest(self) -> str:
        """sha256 of the index lines and every pin with its marker and hashes, in order: what
        ``pins-sha256`` records, in either format."""
        lines = [f"--index-url {self.index_url}"] if self.index_url else []
        lines.extend(f"--extra-index-url {url}" for url in self.extra_index_urls)
        lines.extend(self.requirement_lines)
        return sha256_hex("\n".join(lines).encode("utf-8"))

    def package(self, name: str) -> LockedPackage | None:
        wanted = canonicalize_name(name)
        for package in self.packages:
            if package.name == wanted:
                return package
        return None

    def version_of(self, name: str) -> str | None:
        package = self.package(name)
        return package.version if package else None


def _join(values: Iterable[str]) -> str | None:
    text = ",".join(values)
    return text or None


def _same_version(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a == b
    try:
        return Version(a) == Version(b)
    except ValueError:
        return a == b


def _shown(value: str) -> str:
    return repr(printable(value[:_MAX_VALUE]))


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
    if len(text) > _MAX_VALUE:
        return None
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return None
    return None if requirement.url else str(requirement)


def checked_framework(
    name: str, version: str, variant: str, index: str | None
) -> LockedFramework | str:
    """The framework a header records, or what is wrong with it."""
    try:
        framework = Framework(name)
    except ValueError:
        return f"{_shown(name)} is not a framework ({', '.join(f.value for f in Framework)})"
    normalized = checked_version(version)
    if normalized is None:
        return f"{_shown(version)} is not a version"
    if not _VARIANT_RE.match(variant):
        return f"variant {_shown(variant)} is not a variant name"
    if index is not None and checked_url(index) is None:
        return f"index {_shown(index)} is not an index URL"
    return LockedFramework(framework, normalized, variant, index)


def check_header_text(key: str, value: str) -> str | None:
    """What is wrong with a free-text header value (colabenv-version, resolver), or None."""
    if key == "colabenv-version" and checked_version(value) is None:
        return f"{_shown(value)} is not a version"
    if len(value) > _MAX_VALUE or not value.isprintable():
        return f"{_shown(value)} is not one printable line"
    return None


def checked_profile_hash(value: str) -> str | None:
    return value if _PROFILE_HASH_RE.match(value) else None


def new_package(
    name: str, version: str, files: Sequence[LockedFile], marker: str | None,
    index: str | None, where: str,
) -> LockedPackage:
    """A pin from a lock or a resolver's output, checked: LockError(``where: why``) if not."""
    try:
        canonical = canonicalize_name(name, validate=True)
    except ValueError:
        raise LockError(f"{where}: {_shown(name)} is not a distribution name") from None
    normalized = checked_version(version)
    if normalized is None:
        raise LockError(f"{where}: {canonical}: {_shown(version)} is not a version")
    if not files:
        raise LockError(f"{where}: {canonical} has no sha256 hash")
    if marker is not None:
        try:
            marker = str(Marker(marker))
        except ValueError:
            raise LockError(f"{where}: {canonical}: {_shown(marker)} is not a marker") from None
    if index is not None and checked_url(index) is None:
        raise LockError(f"{where}: {canonical}: index {_shown(index)} is not an index URL")
    return LockedPackage(canonical, normalized, tuple(files), marker, index)


# ---------------------------------------------------------------------------------------------
# Writing the requirements format


def _header_pairs(lock: Lock) -> Iterator[tuple[str, str]]:
    header = lock.header
    target = header.target
    none = HeaderWord.NONE.value
    yield "colabenv-version", header.colabenv_version
    yield "lock-schema", str(LOCK_SCHEMA)
    yield "profile", json.dumps(header.profile_name, ensure_ascii=True)
    yield "profile-hash", header.profile_hash
    yield "target-driver", target.driver or none
    yield "target-requires-driver", target.required_driver or none
    yield "target-cuda", target.cuda or none
    yield "target-compute-capabilities", _join(target.compute_capabilities) or none
    yield "target-python", target.python
    yield "target-platform", target.platform
    for framework in header.frameworks:
        yield "framework", header_value(framework)
    for constraint in header.constraints:
        yield "constraint", constraint
    yield "resolver", header.resolver
    yield "pins-sha256", lock.pins_digest


def _check_url(url: str) -> str:
    if checked_url(url) is None:
        raise LockError(f"index URL {_shown(url)} cannot be written into a lock")
    return url


def lock_lines(lock: Lock) -> Iterator[str]:
    """The lock in the requirements format, line by line (no trailing newlines)."""
    yield "# colabenv lock: the full closure of a profile, pinned with hashes, for one target."
    yield "# Install exactly this: pip install --require-hashes -r THIS_FILE"
    yield "# Refresh: colabenv lock PROFILE -o THIS_FILE (target flags as below); do not edit."
    yield "#"
    for key, value in _header_pairs(lock):
        yield f"# {key}: {value}"
    yield ""
    if lock.index_url:
        yield f"--index-url {_check_url(lock.index_url)}"
    for url in lock.extra_index_urls:
        yield f"--extra-index-url {_check_url(url)}"
    if lock.index_urls:
        yield ""
    for package in lock.packages:
        head = package.pin + (f" ; {package.marker}" if package.marker else "")
        if not package.files:
            raise LockError(f"{package.name}: no hash to lock it with")
        yield head + " \\"
        hashes = package.hashes
        for position, digest in enumerate(hashes):
            tail = " \\" if position < len(hashes) - 1 else ""
            yield f"    --hash={digest}{tail}"


def render_lock(lock: Lock, *, pylock: bool = False) -> str:
    if pylock:
        from colabenv.pep751 import pylock_text

        return pylock_text(lock)
    return "\n".join(lock_lines(lock)) + "\n"


# ---------------------------------------------------------------------------------------------
# Reading the requirements format


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, line) with backslash continuations joined, comments kept apart."""
    buffer: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not buffer:
            start = number
        if line.endswith("\\"):
            buffer.append(line[:-1].strip())
            continue
        buffer.append(line.strip())
        yield start, " ".join(part for part in buffer if part)
        buffer = []
    if buffer:
        yield start, " ".join(part for part in buffer if part)


def _name(path: Path | None) -> str:
    return printable(path.name) if path else "<lock>"


def _where(path: Path | None, number: int) -> str:
    return f"{_name(path)}: line {number}"


def _option_value(content: str) -> str:
    if "=" in content.split(None, 1)[0]:
        return content.partition("=")[2].strip()
    return content.split(None, 1)[1].strip() if " " in content else ""


def parse_requirements(text: str, path: Path | None = None) -> tuple[
    tuple[LockedPackage, ...], str | None, tuple[str, ...]
]:
    """Pins with hashes and index options from pinned requirements (a lock's body, or
    pip-compile's output). Every requirement must be an exact ``==`` pin with at least one sha256
    hash; the only options are ``--index-url`` and ``--extra-index-url``."""
    packages: dict[NormalizedName, LockedPackage] = {}
    index_url: str | None = None
    extra: list[str] = []
    for number, line in _logical_lines(text):
        content = line.split(" #", 1)[0].strip() if not line.startswith("#") else ""
        if not content:
            continue
        if content.startswith(("-i ", "--index-url ", "--index-url=", "--extra-index-url ",
                               "--extra-index-url=")):
            url = _option_value(content)
            if checked_url(url) is None:
                raise LockError(f"{_where(path, number)}: {_shown(url)} is not an index URL")
            if content.startswith("--extra"):
                extra.append(url)
            elif index_url is not None:
                raise LockError(f"{_where(path, number)}: a second --index-url")
            else:
                index_url = url
            continue
        if content.startswith("-"):
            raise LockError(f"{_where(path, number)}: unexpected option "
                            f"{_shown(content.split()[0])}")
        package = _parse_pin(content, _where(path, number))
        if package.name in packages:
            raise LockError(f"{_where(path, number)}: {package.name} is pinned twice")
        packages[package.name] = package
    return tuple(packages.values()), index_url, tuple(extra)


def _parse_pin(content: str, where: str) -> LockedPackage:
    tokens = content.split(" --")
    head = tokens[0].strip()
    options = [("--" + t.strip()) for t in tokens[1:]]
    try:
        requirement = Requirement(head)
    except InvalidRequirement:
        raise LockError(f"{where}: {_shown(head)} is not a requirement") from None
    specs = list(requirement.specifier)
    if requirement.url or len(specs) != 1 or specs[0].operator != "==" or \
            "*" in specs[0].version:
        raise LockError(f"{where}: {_shown(head)} is not pinned with ==")
    files: list[LockedFile] = []
    for option in options:
        match = _HASH_OPTION_RE.match(option)
        if match is None:
            raise LockError(f"{where}: unexpected option {_shown(option)}")
        if match.group("algo") != "sha256":
            continue
        digest = match.group("digest").lower()
        if not _SHA256_RE.match(digest):
            raise LockError(f"{where}: {_shown(option)} is not a sha256 hash")
        if all(f.sha256 != digest for f in files):
            files.append(LockedFile(digest))
    marker = str(requirement.marker) if requirement.marker is not None else None
    return new_package(requirement.name, specs[0].version, files, marker, None, where)


def _header_block(text: str) -> dict[str, list[tuple[int, str]]]:
    """``# key: value`` lines of the leading comment block, by key, with their line numbers."""
    values: dict[str, list[tuple[int, str]]] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if not line.startswith("#"):
            break
        key, sep, value = line[1:].strip().partition(": ")
        if sep and _KEY_RE.match(key):
            values.setdefault(key, []).append((number, value.strip()))
    return values


_SINGLE_KEYS = ("colabenv-version", "lock-schema", "profile", "profile-hash", "target-driver",
                "target-requires-driver", "target-cuda", "target-compute-capabilities",
                "target-python", "target-platform", "resolver")
_OPTIONAL_KEYS = ("pins-sha256",)
_REPEATED_KEYS = ("framework", "constraint")


def _parse_header(text: str, path: Path | None) -> tuple[LockHeader, str | None]:
    """The header and the ``pins-sha256`` it records (None in schema 1)."""
    values = _header_block(text)
    name = _name(path)
    for key, found in values.items():
        line = found[0][0]
        if key not in (*_SINGLE_KEYS, *_OPTIONAL_KEYS, *_REPEATED_KEYS):
            raise LockError(f"{name}: line {line}: unknown header key {_shown(key)}")
        if key not in _REPEATED_KEYS and len(found) > 1:
            raise LockError(f"{name}: line {found[1][0]}: {key} given twice")

    def one(key: str) -> tuple[int, str]:
        found = values.get(key)
        if not found:
            raise LockError(f"{name}: not a colabenv lock (no '# {key}:' header line)")
        return found[0]

    def fail(key: str, why: str) -> LockError:
        return LockError(f"{name}: line {one(key)[0]}: {key}: {why}")

    schema = _schema(one("lock-schema")[1], lambda why: fail("lock-schema", why))
    try:
        profile_name = json.loads(one("profile")[1])
    except (ValueError, RecursionError):
        profile_name = None
    if not isinstance(profile_name, str) or len(profile_name) > _MAX_VALUE:
        raise fail("profile", "expected a quoted name")
    profile_hash = one("profile-hash")[1]
    if checked_profile_hash(profile_hash) is None:
        raise fail("profile-hash", f"{_shown(profile_hash)} is not sha256:<64 hex digits>")
    for key in ("colabenv-version", "resolver"):
        problem = check_header_text(key, one(key)[1])
        if problem:
            raise fail(key, problem)
    caps = _optional(one("target-compute-capabilities")[1])
    target = LockTarget(
        driver=_optional(one("target-driver")[1]),
        required_driver=_optional(one("target-requires-driver")[1]),
        cuda=_optional(one("target-cuda")[1]),
        compute_capabilities=tuple(c.strip() for c in caps.split(",")) if caps else (),
        python=one("target-python")[1],
        platform=one("target-platform")[1],
    )
    problem = target.problem()
    if problem:
        key, _, why = problem.partition(": ")
        raise fail(f"target-{key}" if key != "requires-driver" else "target-requires-driver",
                   why)
    frameworks = tuple(_parse_framework(value, f"{name}: line {number}: framework")
                       for number, value in values.get("framework", []))
    constraints = []
    for number, value in values.get("constraint", []):
        constraint = checked_constraint(value)
        if constraint is None:
            raise LockError(f"{name}: line {number}: constraint: {_shown(value)} is not a "
                            "requirement")
        constraints.append(constraint)
    digest = None
    if schema >= 2:
        digest = one("pins-sha256")[1]
        if not _SHA256_RE.match(digest):
            raise fail("pins-sha256", f"{_shown(digest)} is not 64 hex digits")
    elif "pins-sha256" in values or constraints:
        raise LockError(f"{name}: lock-schema 1 has no pins-sha256 or constraint lines")
    header = LockHeader(
        colabenv_version=one("colabenv-version")[1],
        profile_name=profile_name,
        profile_hash=profile_hash,
        target=target,
        frameworks=frameworks,
        resolver=one("resolver")[1],
        schema=schema,
        constraints=tuple(constraints),
    )
    return header, digest


def _schema(text: str, fail: Callable[[str], LockError]) -> int:
    if not re.fullmatch(r"\d{1,4}", text):
        raise fail(f"{_shown(text)} is not a schema number")
    schema = int(text)
    if schema > LOCK_SCHEMA:
        raise fail(f"{schema} is newer than this colabenv reads ({LOCK_SCHEMA}); upgrade colabenv")
    if schema not in READABLE_SCHEMAS:
        raise fail(f"{schema} is not a schema this colabenv reads")
    return schema


def _optional(value: str) -> str | None:
    return None if value == HeaderWord.NONE.value else value


def _parse_framework(value: str, where: str) -> LockedFramework:
    parts = value.split()
    fields = dict(p.split("=", 1) for p in parts[2:] if "=" in p)
    if len(parts) < 2 or "variant" not in fields or len(parts) > 4:
        raise LockError(f"{where}: {_shown(value)} is not "
                        "'<framework> <version> variant=<v> index=<url>'")
    index = fields.get("index", HeaderWord.DEFAULT.value)
    found = checked_framework(parts[0], parts[1], fields["variant"],
                              None if index == HeaderWord.DEFAULT.value else index)
    if isinstance(found, str):
        raise LockError(f"{where}: {found}")
    return found


def _is_pylock(text: str, path: Path | None) -> bool:
    if path is not None and path.suffix == ".toml":
        return True
    return any(line.startswith("lock-version") for line in text.splitlines()[:20])


def check_digest(lock: Lock, recorded: str | None, where: str) -> None:
    """``pins-sha256`` must match the pins that were read (None: a schema-1 lock has none)."""
    if recorded is not None and recorded != lock.pins_digest:
        raise LockError(f"{where}: the pins do not match the lock's pins-sha256 (the lock was "
                        "truncated or edited); make it again with colabenv lock")


def parse_lock(text: str, path: Path | None = None) -> Lock:
    """A lock in either format (``pylock.toml`` by suffix or content) as a :class:`Lock`."""
    if _is_pylock(text, path):
        from colabenv.pep751 import parse_pylock

        return parse_pylock(text, path)
    header, digest = _parse_header(text, path)
    packages, index_url, extra = parse_requirements(text, path)
    if not packages:
        raise LockError(f"{_name(path)}: the lock pins nothing")
    lock = Lock(header, packages, index_url, extra, path)
    check_digest(lock, digest, _name(path))
    return lock


def read_lock(path: Path) -> Lock:
    """The lock at ``path``: a regular file of at most 64 MiB of UTF-8, read strictly."""
    from colabenv._files import MAX_INPUT_BYTES, FileProblem, read_limited

    try:
        data = read_limited(Path(path), MAX_INPUT_BYTES)
    except FileProblem as problem:
        raise InputError(f"{printable(path)}: lockfile: {problem}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise LockError(f"{printable(path)}: not a text file (not UTF-8)") from None
    return parse_lock(text, Path(path))


# ---------------------------------------------------------------------------------------------
# Is it still the lock to install?


def current_target(recorded: LockTarget, overrides: TargetOverrides) -> LockTarget:
    """The recorded target with whatever the flags or ``COLABENV_*`` variables override."""
    if overrides.cpu:
        return LockTarget(None, recorded.required_driver, None, (),
                          f"{overrides.python.major}.{overrides.python.minor}"
                          if overrides.python else recorded.python, recorded.platform)
    return LockTarget(
        driver=format_driver(overrides.driver) if overrides.driver else recorded.driver,
        required_driver=recorded.required_driver,
        cuda=str(overrides.cuda) if overrides.cuda else recorded.cuda,
        compute_capabilities=tuple(str(c) for c in overrides.compute_capabilities)
        or recorded.compute_capabilities,
        python=(f"{overrides.python.major}.{overrides.python.minor}" if overrides.python
                else recorded.python),
        platform=recorded.platform,
    )


def stale_reasons(
    lock: Lock, profile: Profile, target: LockTarget, constraints: Sequence[str] | None = None
) -> list[str]:
    """Why ``lock`` no longer matches ``profile`` on ``target``; empty when it is fresh.

    ``constraints``: the component bounds a resolution for ``target`` has now (None: not
    compared).
    """
    reasons = []
    header = lock.header
    if header.profile_name != profile.name:
        reasons.append(f"made for profile {_shown(header.profile_name)}, not {profile.name!r}")
    if header.profile_hash != profile.content_hash:
        reasons.append(f"the profile changed (hash {_short(header.profile_hash)} in the lock, "
                       f"{_short(profile.content_hash)} now)")
    reasons.extend(f"target: {d}" for d in header.target.differences(target))
    if constraints is not None:
        recorded = sorted(header.constraints)
        now = sorted(filter(None, (checked_constraint(c) for c in constraints)))
        if recorded != now:
            none = HeaderWord.NONE.value
            reasons.append(f"component constraints: {', '.join(recorded) or none} in the lock, "
                           f"{', '.join(now) or none} now")
    return reasons


def _short(digest: str) -> str:
    algo, _, hexdigest = digest.partition(":")
    return f"{algo}:{hexdigest[:12]}" if hexdigest else digest[:12]


def unmet_requirements(lock: Lock, profile: Profile) -> list[str]:
    """Each requirement of ``profile`` (its frameworks, their companions, ``[packages]``) that
    the lock's pins do not satisfy on the lock's target; empty for a whole lock."""
    unmet: list[str] = []
    environment = lock.header.target.marker_environment()
    recorded = {f.framework: f for f in lock.header.frameworks}
    for request in profile.frameworks:
        framework = request.framework
        facts = FACTS[framework]
        locked = recorded.get(framework)
        if locked is None:
            unmet.append(f"frameworks.{framework}: not recorded in the lock")
            continue
        public = Version(locked.version).public
        if not request.specifier.contains(public, prereleases=True):
            unmet.append(f"frameworks.{framework}: the lock has {public}, outside "
                         f"{request.specifier}")
        if request.variant and request.variant != locked.variant:
            unmet.append(f"frameworks.{framework}: the lock has variant {locked.variant}, "
                         f"not {request.variant}")
        if not any(_public(lock.version_of(d)) == public for d in facts.dists):
            unmet.append(f"{facts.dists[0]}=={public} is not pinned")
        wanted = dict(request.companions)
        for name in facts.required_companions:
            wanted.setdefault(name, _ANY)
        for name, specifier in sorted(wanted.items()):
            version = _public(lock.version_of(name))
            if version is None or not specifier.contains(version, prereleases=True):
                unmet.append(f"{name}{specifier} (frameworks.{framework}) is "
                             f"{'pinned at ' + version if version else 'not pinned'}")
    for requirement in profile.requirements:
        if requirement.marker is not None and not requirement.marker.evaluate(environment):
            continue
        version = lock.version_of(requirement.name)
        if version is None:
            unmet.append(f"{requirement} is not pinned")
        elif not requirement.url and not requirement.specifier.contains(version,
                                                                        prereleases=True):
            unmet.append(f"{requirement} is pinned at {version}")
    return unmet


def _public(version: str | None) -> str | None:
    return Version(version).public if version is not None else None


def check_satisfies(lock: Lock, profile: Profile, where: str) -> None:
    """LockError naming what is missing when ``lock`` does not hold every requirement of
    ``profile`` (call it once the profile hash matched: a whole lock of this profile does)."""
    unmet = unmet_requirements(lock, profile)
    if unmet:
        raise LockError(f"{where}: the lock does not satisfy profile {profile.name!r}: "
                        f"{'; '.join(unmet)}; make it again with colabenv lock")
