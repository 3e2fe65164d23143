"""The lockfile format: models, writers (lines out) and readers (text in). No I/O but ``read_lock``.

A colabenv lock is a pip requirements file that any pip or uv installs with
``pip install --require-hashes -r LOCK``: ``--index-url``/``--extra-index-url`` lines, then one
exact pin per distribution of the closure with its ``--hash`` options. Its header comments
record what it was made for, one ``# key: value`` per line::

    # colabenv-version: 0.1.0
    # lock-schema: 1
    # profile: "pytorch"
    # profile-hash: sha256:...
    # target-driver: 550.54.15            (none without a GPU)
    # target-requires-driver: 525.60.13   (the driver floor the chosen builds need)
    # target-cuda: 12.4
    # target-compute-capabilities: 7.5
    # target-python: 3.12
    # target-platform: linux_x86_64
    # framework: torch 2.6.0 variant=cu124 index=https://download.pytorch.org/whl/cu124
    # resolver: uv 0.8.0

Index URLs keep their ``${VAR}`` credential references: pip and uv expand them when they
install, and no expanded value is ever written. ``--format pylock`` writes the same facts as a
PEP 751 ``pylock.toml`` (the header under ``[tool.colabenv]``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from colabenv._model import model
from colabenv.errors import LockError
from colabenv.models import Target, format_driver

LOCK_SCHEMA = 1
PYLOCK_VERSION = "1.0"
NONE = "none"

_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_HASH_OPTION_RE = re.compile(r"^--hash[= ](?P<algo>[a-z0-9]+):(?P<digest>\S+)$")


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


@model
class LockedFramework:
    framework: str
    version: str
    variant: str
    index_url: str | None

    def header_value(self) -> str:
        return (f"{self.framework} {self.version} variant={self.variant} "
                f"index={self.index_url or 'default'}")


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
            found.append(f"{label} {mine or NONE} in the lock, {theirs or NONE} now")
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
    def index_options(self) -> tuple[str, ...]:
        options = [f"--index-url {self.index_url}"] if self.index_url else []
        options.extend(f"--extra-index-url {url}" for url in self.extra_index_urls)
        return tuple(options)

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
    except InvalidVersion:
        return a == b


# ---------------------------------------------------------------------------------------------
# Writing the requirements format


def _header_pairs(header: LockHeader) -> Iterator[tuple[str, str]]:
    target = header.target
    yield "colabenv-version", header.colabenv_version
    yield "lock-schema", str(header.schema)
    yield "profile", json.dumps(header.profile_name, ensure_ascii=True)
    yield "profile-hash", header.profile_hash
    yield "target-driver", target.driver or NONE
    yield "target-requires-driver", target.required_driver or NONE
    yield "target-cuda", target.cuda or NONE
    yield "target-compute-capabilities", _join(target.compute_capabilities) or NONE
    yield "target-python", target.python
    yield "target-platform", target.platform
    for framework in header.frameworks:
        yield "framework", framework.header_value()
    yield "resolver", header.resolver


def _check_url(url: str) -> str:
    if not url or any(ch.isspace() or not ch.isprintable() for ch in url):
        raise LockError(f"index URL {url!r} cannot be written into a lock")
    return url


def lock_lines(lock: Lock) -> Iterator[str]:
    """The lock in the requirements format, line by line (no trailing newlines)."""
    yield "# colabenv lock: the full closure of a profile, pinned with hashes, for one target."
    yield "# Install exactly this: pip install --require-hashes -r THIS_FILE"
    yield "# Refresh: colabenv lock PROFILE -o THIS_FILE (target flags as below); do not edit."
    yield "#"
    for key, value in _header_pairs(lock.header):
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


# ---------------------------------------------------------------------------------------------
# Writing PEP 751 pylock.toml


def _toml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=True).replace("\x7f", "\\u007f")


def _file_inline(file: LockedFile) -> str:
    return (f"{{ name = {_toml_str(file.name or '')}, url = {_toml_str(file.url or '')}, "
            f"hashes = {{ sha256 = {_toml_str(file.sha256)} }} }}")


def _toml_array(values: Iterable[str]) -> str:
    return "[" + ", ".join(_toml_str(v) for v in values) + "]"


def _environment_marker(target: LockTarget) -> str:
    machine = target.platform.rsplit("_", 2)[-1] if "_" in target.platform else target.platform
    if target.platform.endswith("x86_64"):
        machine = "x86_64"
    system = target.platform.split("_", 1)[0]
    return (f"python_version == '{target.python}' and sys_platform == '{system}' "
            f"and platform_machine == '{machine}'")


def pylock_lines(lock: Lock) -> Iterator[str]:
    """The lock as a PEP 751 ``pylock.toml``; every file needs its name and URL."""
    header = lock.header
    target = header.target
    yield "# colabenv lock (PEP 751). Install exactly this: pip install -r is not for it;"
    yield "# use an installer that reads pylock.toml. Refresh: colabenv lock --format pylock."
    yield f"lock-version = {_toml_str(PYLOCK_VERSION)}"
    yield f"environments = {_toml_array([_environment_marker(target)])}"
    yield f"requires-python = {_toml_str(f'=={target.python}.*')}"
    yield f"created-by = {_toml_str('colabenv')}"
    for package in lock.packages:
        yield ""
        yield "[[packages]]"
        yield f"name = {_toml_str(package.name)}"
        yield f"version = {_toml_str(package.version)}"
        if package.marker:
            yield f"marker = {_toml_str(package.marker)}"
        if package.index:
            yield f"index = {_toml_str(package.index)}"
        wheels = [f for f in package.files if f.is_wheel]
        sdists = [f for f in package.files if not f.is_wheel]
        for file in (*wheels, *sdists):
            if file.name is None or file.url is None:
                raise LockError(f"{package.name} {package.version}: no file name and URL known "
                                f"for the hash sha256:{file.sha256}")
        if sdists:
            yield f"sdist = {_file_inline(sdists[0])}"
        if wheels:
            yield "wheels = ["
            for wheel in wheels:
                yield f"  {_file_inline(wheel)},"
            yield "]"
    yield ""
    yield "[tool.colabenv]"
    yield f"colabenv-version = {_toml_str(header.colabenv_version)}"
    yield f"lock-schema = {header.schema}"
    yield f"profile = {_toml_str(header.profile_name)}"
    yield f"profile-hash = {_toml_str(header.profile_hash)}"
    yield f"resolver = {_toml_str(header.resolver)}"
    if lock.index_url:
        yield f"index-url = {_toml_str(lock.index_url)}"
    yield f"extra-index-urls = {_toml_array(lock.extra_index_urls)}"
    yield ""
    yield "[tool.colabenv.target]"
    yield f"driver = {_toml_str(target.driver or NONE)}"
    yield f"requires-driver = {_toml_str(target.required_driver or NONE)}"
    yield f"cuda = {_toml_str(target.cuda or NONE)}"
    yield f"compute-capabilities = {_toml_array(target.compute_capabilities)}"
    yield f"python = {_toml_str(target.python)}"
    yield f"platform = {_toml_str(target.platform)}"
    for framework in header.frameworks:
        yield ""
        yield "[[tool.colabenv.frameworks]]"
        yield f"framework = {_toml_str(framework.framework)}"
        yield f"version = {_toml_str(framework.version)}"
        yield f"variant = {_toml_str(framework.variant)}"
        if framework.index_url:
            yield f"index = {_toml_str(framework.index_url)}"


def render_lock(lock: Lock, *, pylock: bool = False) -> str:
    lines = pylock_lines(lock) if pylock else lock_lines(lock)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Reading


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


def _where(path: Path | None, number: int) -> str:
    return f"{path.name if path else '<lock>'}: line {number}"


def _split_requirement(line: str) -> tuple[str, list[str]]:
    """The requirement part and its ``--hash`` options."""
    tokens = line.split(" --")
    head = tokens[0].strip()
    options = [("--" + t.strip()) for t in tokens[1:]]
    return head, options


def parse_requirements(text: str, path: Path | None = None) -> tuple[
    tuple[LockedPackage, ...], str | None, tuple[str, ...]
]:
    """Pins with hashes and index options from pinned requirements (a lock, or uv/pip-compile
    output). Every requirement must be an exact ``==`` pin with at least one sha256 hash."""
    packages: dict[NormalizedName, LockedPackage] = {}
    index_url: str | None = None
    extra: list[str] = []
    for number, line in _logical_lines(text):
        content = line.split(" #", 1)[0].strip() if not line.startswith("#") else ""
        if not content:
            continue
        if content.startswith(("-i ", "--index-url")):
            index_url = content.split(None, 1)[1].strip() if " " in content else \
                content.partition("=")[2].strip()
            continue
        if content.startswith("--extra-index-url"):
            url = content.split(None, 1)[1].strip() if " " in content else \
                content.partition("=")[2].strip()
            extra.append(url)
            continue
        if content.startswith("-"):
            continue
        package = _parse_pin(content, path, number)
        if package.name in packages:
            raise LockError(f"{_where(path, number)}: {package.name} is pinned twice")
        packages[package.name] = package
    return tuple(packages.values()), index_url, tuple(extra)


def _parse_pin(content: str, path: Path | None, number: int) -> LockedPackage:
    head, options = _split_requirement(content)
    try:
        requirement = Requirement(head)
    except InvalidRequirement:
        raise LockError(f"{_where(path, number)}: {head!r} is not a requirement") from None
    specs = list(requirement.specifier)
    if len(specs) != 1 or specs[0].operator not in ("==", "==="):
        raise LockError(f"{_where(path, number)}: {head!r} is not pinned with ==")
    version = specs[0].version
    try:
        Version(version)
    except InvalidVersion:
        raise LockError(f"{_where(path, number)}: {version!r} is not a version") from None
    files: list[LockedFile] = []
    for option in options:
        match = _HASH_OPTION_RE.match(option)
        if match is None:
            raise LockError(f"{_where(path, number)}: unexpected option {option!r}")
        if match.group("algo") != "sha256":
            continue
        digest = match.group("digest").lower()
        if not _SHA256_RE.match(digest):
            raise LockError(f"{_where(path, number)}: {option!r} is not a sha256 hash")
        if all(f.sha256 != digest for f in files):
            files.append(LockedFile(digest))
    if not files:
        raise LockError(f"{_where(path, number)}: {requirement.name} has no sha256 hash")
    marker = str(requirement.marker) if requirement.marker is not None else None
    return LockedPackage(canonicalize_name(requirement.name), version, tuple(files), marker)


def _header_values(text: str) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith("#"):
            continue
        key, sep, value = line[1:].strip().partition(": ")
        if sep and re.fullmatch(r"[a-z][a-z0-9-]*", key):
            values.setdefault(key, []).append(value.strip())
    return values


def _optional(value: str) -> str | None:
    return None if value == NONE else value


def _parse_framework(value: str, path: Path | None) -> LockedFramework:
    parts = value.split()
    fields = dict(p.split("=", 1) for p in parts[2:] if "=" in p)
    if len(parts) < 2 or "variant" not in fields:
        raise LockError(f"{_name(path)}: framework: {value!r} is not "
                        "'<framework> <version> variant=<v> index=<url>'")
    index = fields.get("index", "default")
    return LockedFramework(parts[0], parts[1], fields["variant"],
                           None if index == "default" else index)


def _name(path: Path | None) -> str:
    return path.name if path else "<lock>"


def _parse_header(text: str, path: Path | None) -> LockHeader:
    values = _header_values(text)

    def one(key: str) -> str:
        found = values.get(key)
        if not found:
            raise LockError(f"{_name(path)}: not a colabenv lock (no '# {key}:' header line)")
        return found[0]

    schema_text = one("lock-schema")
    if not schema_text.isdigit() or int(schema_text) > LOCK_SCHEMA:
        raise LockError(f"{_name(path)}: lock-schema {schema_text} is newer than this colabenv "
                        f"reads ({LOCK_SCHEMA}); upgrade colabenv")
    try:
        profile_name = json.loads(one("profile"))
    except json.JSONDecodeError:
        profile_name = None
    if not isinstance(profile_name, str):
        raise LockError(f"{_name(path)}: profile: expected a quoted name")
    caps = _optional(one("target-compute-capabilities"))
    target = LockTarget(
        driver=_optional(one("target-driver")),
        required_driver=_optional(one("target-requires-driver")),
        cuda=_optional(one("target-cuda")),
        compute_capabilities=tuple(c.strip() for c in caps.split(",")) if caps else (),
        python=one("target-python"),
        platform=one("target-platform"),
    )
    return LockHeader(
        colabenv_version=one("colabenv-version"),
        profile_name=profile_name,
        profile_hash=one("profile-hash"),
        target=target,
        frameworks=tuple(_parse_framework(v, path) for v in values.get("framework", [])),
        resolver=one("resolver"),
        schema=int(schema_text),
    )


def _is_pylock(text: str, path: Path | None) -> bool:
    if path is not None and path.suffix == ".toml":
        return True
    return any(line.startswith("lock-version") for line in text.splitlines()[:20])


def parse_lock(text: str, path: Path | None = None) -> Lock:
    """A lock in either format (``pylock.toml`` by suffix or content) as a :class:`Lock`."""
    if _is_pylock(text, path):
        return _parse_pylock(text, path)
    header = _parse_header(text, path)
    packages, index_url, extra = parse_requirements(text, path)
    if not packages:
        raise LockError(f"{_name(path)}: the lock pins nothing")
    return Lock(header, packages, index_url, extra, path)


def read_lock(path: Path) -> Lock:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LockError(f"{path}: no such lockfile") from None
    except UnicodeDecodeError:
        raise LockError(f"{path}: not a text file") from None
    except OSError as exc:
        raise LockError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return parse_lock(text, Path(path))


def _parse_pylock(text: str, path: Path | None) -> Lock:
    from colabenv import _toml

    name = _name(path)
    try:
        document = _toml.loads(text)
    except _toml.TOMLDecodeError as exc:
        raise LockError(f"{name}: not valid TOML: {exc}") from None
    if document.get("lock-version") != PYLOCK_VERSION:
        raise LockError(f"{name}: lock-version: expected {PYLOCK_VERSION!r}")
    tool = _mapping(_mapping(document.get("tool"), name, "tool").get("colabenv"), name,
                    "tool.colabenv")
    target_table = _mapping(tool.get("target"), name, "tool.colabenv.target")

    def text_of(table: Mapping[str, Any], key: str, where: str) -> str:
        value = table.get(key)
        if not isinstance(value, str):
            raise LockError(f"{name}: {where}.{key}: expected a string")
        return value

    def strings(value: object, where: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise LockError(f"{name}: {where}: expected a list of strings")
        return tuple(value)

    where = "tool.colabenv.target"
    target = LockTarget(
        driver=_optional(text_of(target_table, "driver", where)),
        required_driver=_optional(text_of(target_table, "requires-driver", where)),
        cuda=_optional(text_of(target_table, "cuda", where)),
        compute_capabilities=strings(target_table.get("compute-capabilities", []),
                                     f"{where}.compute-capabilities"),
        python=text_of(target_table, "python", where),
        platform=text_of(target_table, "platform", where),
    )
    frameworks = []
    raw_frameworks = tool.get("frameworks", [])
    if not isinstance(raw_frameworks, list):
        raise LockError(f"{name}: tool.colabenv.frameworks: expected an array of tables")
    for position, raw in enumerate(raw_frameworks):
        at = f"tool.colabenv.frameworks[{position}]"
        item = _mapping(raw, name, at)
        index = item.get("index")
        frameworks.append(LockedFramework(
            text_of(item, "framework", at), text_of(item, "version", at),
            text_of(item, "variant", at), index if isinstance(index, str) else None))
    schema = tool.get("lock-schema", LOCK_SCHEMA)
    if not isinstance(schema, int) or schema > LOCK_SCHEMA:
        raise LockError(f"{name}: tool.colabenv.lock-schema: newer than this colabenv reads")
    header = LockHeader(
        colabenv_version=text_of(tool, "colabenv-version", "tool.colabenv"),
        profile_name=text_of(tool, "profile", "tool.colabenv"),
        profile_hash=text_of(tool, "profile-hash", "tool.colabenv"),
        target=target,
        frameworks=tuple(frameworks),
        resolver=text_of(tool, "resolver", "tool.colabenv"),
        schema=schema,
    )
    packages = []
    raw_packages = document.get("packages", [])
    if not isinstance(raw_packages, list) or not raw_packages:
        raise LockError(f"{name}: packages: the lock pins nothing")
    for position, raw in enumerate(raw_packages):
        at = f"packages[{position}]"
        item = _mapping(raw, name, at)
        files = []
        entries = list(item.get("wheels", []) or [])
        if "sdist" in item:
            entries.append(item["sdist"])
        for entry in entries:
            file = _mapping(entry, name, at)
            hashes = _mapping(file.get("hashes"), name, f"{at}.hashes")
            digest = hashes.get("sha256")
            if not isinstance(digest, str) or not _SHA256_RE.match(digest.lower()):
                raise LockError(f"{name}: {at}: a file without a sha256 hash")
            file_name = file.get("name")
            url = file.get("url")
            files.append(LockedFile(digest.lower(),
                                    file_name if isinstance(file_name, str) else None,
                                    url if isinstance(url, str) else None))
        if not files:
            raise LockError(f"{name}: {at}: no wheels or sdist")
        marker = item.get("marker")
        index = item.get("index")
        packages.append(LockedPackage(
            canonicalize_name(text_of(item, "name", at)), text_of(item, "version", at),
            tuple(files), marker if isinstance(marker, str) else None,
            index if isinstance(index, str) else None))
    index_url = tool.get("index-url")
    extra = strings(tool.get("extra-index-urls", []), "tool.colabenv.extra-index-urls")
    return Lock(header, tuple(packages), index_url if isinstance(index_url, str) else None,
                extra, path)


def _mapping(value: object, name: str, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise LockError(f"{name}: {where}: expected a table")
    return value
