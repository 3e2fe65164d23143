"""The requirements form of a lock: a pip requirements file with the header in comments.

Written by :func:`lock_lines`, read by :func:`parse_header` and :func:`parse_requirements` (the
latter also reads pip-compile's output). The layout is in :mod:`colabenv.lock.file`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName

from colabenv.errors import LockError, printable, shown
from colabenv.lock import content
from colabenv.lock.content import (
    check_digest,
    checked_url,
    header_value,
    is_sha256,
    joined,
    new_package,
    package_header_value,
)
from colabenv.lock.header import SHAPES, TARGET_KEYS, CudaPackageFields, FrameworkFields, checked_header
from colabenv.models import TpuTarget

_HASH_OPTION_RE = re.compile(r"^--hash[= ](?P<algo>[a-z0-9]+):(?P<digest>\S+)$")
_KEY_RE = re.compile(r"^[a-z][a-z0-9-]*$")


# ---------------------------------------------------------------------------------------------
# Writing the requirements format


def _header_pairs(lock: content.Lock) -> Iterator[tuple[str, str]]:
    header = lock.header
    yield "colabenv-version", header.colabenv_version
    yield "lock-schema", str(content.LOCK_SCHEMA)
    yield "profile", json.dumps(header.profile_name, ensure_ascii=True)
    yield "profile-hash", header.profile_hash
    yield from _target_pairs(lock)
    yield "resolver", header.resolver
    yield "pins-sha256", lock.pins_digest


def _target_pairs(lock: content.Lock) -> Iterator[tuple[str, str]]:
    """What a lock records of its one target: the target lines, frameworks and constraints."""
    header = lock.header
    target = header.target
    none = content.HeaderWord.NONE.value
    yield "target-driver", target.driver or none
    yield "target-requires-driver", target.required_driver or none
    yield "target-cuda", target.cuda or none
    yield "target-compute-capabilities", joined(target.compute_capabilities) or none
    yield "target-python", target.python
    if target.python_needs is not None:
        yield "target-python-needs", target.python_needs
    yield "target-platform", target.platform
    yield "target-accelerator", target.accelerator.value
    yield "target-tpu", tpu_text(target.tpu)
    if target.rocm is not None or target.gfx:
        yield "target-rocm", target.rocm or none
        yield "target-gfx", joined(target.gfx) or none
    for framework in header.frameworks:
        yield "framework", header_value(framework)
    for package in header.cuda_packages:
        yield "cuda-package", package_header_value(package)
    for constraint in header.constraints:
        yield "constraint", constraint


def _check_url(url: str) -> str:
    if checked_url(url) is None:
        raise LockError(f"index URL {shown(url)} cannot be written into a lock")
    return url


def lock_lines(lock: content.Lock) -> Iterator[str]:
    """The lock in the requirements format, line by line (no trailing newlines)."""
    yield "# colabenv lock: the full closure of a profile, pinned with hashes, for one target."
    yield "# Install exactly this: pip install --require-hashes -r THIS_FILE"
    yield "# Refresh: colabenv lock PROFILE -o THIS_FILE (target flags as below); do not edit."
    yield "#"
    for key, value in _header_pairs(lock):
        yield f"# {key}: {value}"
    yield ""
    yield from _body_lines(lock)


def _body_lines(lock: content.Lock) -> Iterator[str]:
    """The index lines, a blank line, then each pin with its hashes."""
    if lock.index_url:
        yield f"--index-url {_check_url(lock.index_url)}"
    for url in lock.extra_index_urls:
        yield f"--extra-index-url {_check_url(url)}"
    for url in lock.find_links:
        yield f"--find-links {_check_url(url)}"
    if lock.index_urls or lock.find_links:
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


SECTION_PREFIX = "# [target "
"""The line that opens a section of a sectioned lock: ``# [target NAME]``."""


def sectioned_lines(lock_file: content.LockFile) -> Iterator[str]:
    """A lock of several targets (schema 3): the shared header, then one section per target,
    each opened by ``# [target NAME]``, with its target lines and ``pins-sha256`` as comments
    and its own index lines and pins."""
    first = lock_file.first.header
    yield "# colabenv lock: the full closure of a profile, pinned with hashes, one section per target."
    yield "# Not for pip as a whole: colabenv render PROFILE --lock THIS_FILE installs the section"
    yield "# the host fits (or --target NAME). Refresh: colabenv lock PROFILE --all-targets -o THIS_FILE."
    yield "#"
    yield f"# colabenv-version: {first.colabenv_version}"
    yield f"# lock-schema: {content.SECTIONED_SCHEMA}"
    yield f"# profile: {json.dumps(first.profile_name, ensure_ascii=True)}"
    yield f"# profile-hash: {first.profile_hash}"
    yield f"# resolver: {first.resolver}"
    yield f"# targets: {' '.join(lock_file.names)}"
    for section in lock_file.sections:
        yield ""
        yield f"{SECTION_PREFIX}{section.name}]"
        for key, value in _target_pairs(section.lock):
            yield f"# {key}: {value}"
        yield f"# pins-sha256: {section.lock.pins_digest}"
        yield ""
        yield from _body_lines(section.lock)


# ---------------------------------------------------------------------------------------------
# Reading the requirements format


def _logical_lines(text: str, first_line: int = 1) -> Iterator[tuple[int, str]]:
    """(first line number, line) with backslash continuations joined, comments kept apart."""
    buffer: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=first_line):
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


def lock_name(path: Path | None) -> str:
    """How messages name a lock: its file name, escaped."""
    return printable(path.name) if path else "<lock>"


def _where(path: Path | None, number: int) -> str:
    return f"{lock_name(path)}: line {number}"


def _option_value(entry: str) -> str:
    if "=" in entry.split(None, 1)[0]:
        return entry.partition("=")[2].strip()
    return entry.split(None, 1)[1].strip() if " " in entry else ""


def parse_requirements(
    text: str, path: Path | None = None, first_line: int = 1
) -> tuple[tuple[content.LockedPackage, ...], str | None, tuple[str, ...], tuple[str, ...]]:
    """Pins with hashes, index options and find-links pages from pinned requirements (a lock's
    body, or pip-compile's output). Every requirement must be an exact ``==`` pin with at least
    one sha256 hash; the only options are ``--index-url``, ``--extra-index-url`` and
    ``--find-links``."""
    packages: dict[NormalizedName, content.LockedPackage] = {}
    index_url: str | None = None
    extra: list[str] = []
    links: list[str] = []
    for number, line in _logical_lines(text, first_line):
        entry = line.split(" #", 1)[0].strip() if not line.startswith("#") else ""
        if not entry:
            continue
        if entry.startswith(("-f ", "--find-links ", "--find-links=")):
            url = _option_value(entry)
            if checked_url(url) is None:
                raise LockError(f"{_where(path, number)}: {shown(url)} is not a find-links URL")
            links.append(url)
            continue
        if entry.startswith(
            ("-i ", "--index-url ", "--index-url=", "--extra-index-url ", "--extra-index-url=")
        ):
            url = _option_value(entry)
            if checked_url(url) is None:
                raise LockError(f"{_where(path, number)}: {shown(url)} is not an index URL")
            if entry.startswith("--extra"):
                extra.append(url)
            elif index_url is not None:
                raise LockError(f"{_where(path, number)}: a second --index-url")
            else:
                index_url = url
            continue
        if entry.startswith("-"):
            raise LockError(f"{_where(path, number)}: unexpected option {shown(entry.split()[0])}")
        package = _parse_pin(entry, _where(path, number))
        if package.name in packages:
            raise LockError(f"{_where(path, number)}: {package.name} is pinned twice")
        packages[package.name] = package
    return tuple(packages.values()), index_url, tuple(extra), tuple(links)


def _parse_pin(entry: str, where: str) -> content.LockedPackage:
    tokens = entry.split(" --")
    head = tokens[0].strip()
    options = [("--" + t.strip()) for t in tokens[1:]]
    try:
        requirement = Requirement(head)
    except InvalidRequirement:
        raise LockError(f"{where}: {shown(head)} is not a requirement") from None
    specs = list(requirement.specifier)
    if requirement.url or len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
        raise LockError(f"{where}: {shown(head)} is not pinned with ==")
    files: list[content.LockedFile] = []
    for option in options:
        match = _HASH_OPTION_RE.match(option)
        if match is None:
            raise LockError(f"{where}: unexpected option {shown(option)}")
        if match.group("algo") != "sha256":
            continue
        digest = match.group("digest").lower()
        if not is_sha256(digest):
            raise LockError(f"{where}: {shown(option)} is not a sha256 hash")
        if all(f.sha256 != digest for f in files):
            files.append(content.LockedFile(digest))
    marker = str(requirement.marker) if requirement.marker is not None else None
    return new_package(requirement.name, specs[0].version, files, marker, None, where)


HeaderValues = dict[str, list[tuple[int, str]]]


def _header_block(text: str, first_line: int = 1) -> HeaderValues:
    """``# key: value`` lines of the leading comment block, by key, with their line numbers."""
    values: HeaderValues = {}
    for number, raw in enumerate(text.splitlines(), start=first_line):
        line = raw.strip()
        if not line:
            continue
        if not line.startswith("#"):
            break
        key, sep, value = line[1:].strip().partition(": ")
        if sep and _KEY_RE.match(key):
            values.setdefault(key, []).append((number, value.strip()))
    return values


_SINGLE_KEYS = (
    "colabenv-version",
    "lock-schema",
    "profile",
    "profile-hash",
    "target-driver",
    "target-requires-driver",
    "target-cuda",
    "target-compute-capabilities",
    "target-python",
    "target-platform",
    "resolver",
)
_OPTIONAL_KEYS = (
    "pins-sha256",
    "target-accelerator",
    "target-tpu",
    "target-python-needs",
    "target-rocm",
    "target-gfx",
)
"""Absent from the locks of earlier colabenv releases (the target keys: before TPU targets;
``target-python-needs``: before it, and where the pins need nothing of the patch release;
``target-rocm`` and ``target-gfx``: written for AMD GPUs only)."""
_REPEATED_KEYS = ("framework", "cuda-package", "constraint")


def parse_header(text: str, path: Path | None) -> tuple[content.LockHeader, str | None]:
    """The header and the ``pins-sha256`` it records (None in schema 1)."""
    return header_from_values(_header_block(text), lock_name(path))


def header_from_values(
    values: HeaderValues, name: str, schemas: tuple[int, ...] = content.READABLE_SCHEMAS
) -> tuple[content.LockHeader, str | None]:
    """The header the ``# key: value`` lines ``values`` record, for the lock called ``name``,
    whose ``lock-schema`` must be one of ``schemas``: the lines' keys and the schema checked
    here, every value by :func:`~colabenv.lock.header.checked_header`."""
    for key, found in values.items():
        line = found[0][0]
        if key not in (*_SINGLE_KEYS, *_OPTIONAL_KEYS, *_REPEATED_KEYS):
            raise LockError(f"{name}: line {line}: unknown header key {shown(key)}")
        if key not in _REPEATED_KEYS and len(found) > 1:
            raise LockError(f"{name}: line {found[1][0]}: {key} given twice")
    source = _CommentLines(values, name)
    schema = _schema(source.text("lock-schema"), lambda why: source.fail("lock-schema", why), schemas)
    return checked_header(source, schema)


_LIST_LINE_KEYS = {"frameworks": "framework", "cuda-packages": "cuda-package", "constraints": "constraint"}


def _line_key(key: str) -> str:
    """The comment line's key of a header field (:mod:`.header` names them as PEP 751 does)."""
    return f"target-{key}" if key in TARGET_KEYS else _LIST_LINE_KEYS.get(key, key)


class _CommentLines:
    """The ``# key: value`` lines of a requirements lock as a
    :class:`~colabenv.lock.header.HeaderSource`: the profile's name JSON-quoted, ``none`` for
    a target value there is none of, a list comma-joined, a framework or CUDA package in words
    on one line, each error naming the line."""

    def __init__(self, values: HeaderValues, name: str) -> None:
        self.values = values
        self.name = name

    def _line(self, key: str) -> tuple[int, str]:
        found = self.values.get(_line_key(key))
        if not found:
            raise LockError(f"{self.name}: not a colabenv lock (no '# {_line_key(key)}:' header line)")
        return found[0]

    def text(self, key: str) -> str:
        value = self._line(key)[1]
        if key != "profile":
            return value
        try:
            profile_name = json.loads(value)
        except (ValueError, RecursionError):
            profile_name = None
        if not isinstance(profile_name, str) or len(profile_name) > content.MAX_VALUE:
            raise self.fail("profile", "expected a quoted name")
        return profile_name

    def given(self, key: str) -> str | None:
        return self._line(key)[1] if _line_key(key) in self.values else None

    def optional(self, key: str) -> str | None:
        return _optional(self.text(key))

    def listed(self, key: str) -> tuple[str, ...]:
        text = self.optional(key)
        return tuple(item.strip() for item in text.split(",")) if text else ()

    def kind_value(self, key: str) -> str | None:
        given = self.given(key)
        return _optional(given) if given is not None else None

    def kind_listed(self, key: str) -> tuple[str, ...]:
        text = self.kind_value(key)
        return tuple(item.strip() for item in text.split(",")) if text else ()

    def tpu(self) -> TpuTarget | None:
        tpu = _parse_tpu(self.given("tpu") or content.HeaderWord.NONE.value)
        if isinstance(tpu, str):
            raise self.fail("tpu", tpu)
        return tpu

    def frameworks(self) -> Iterator[tuple[int, FrameworkFields]]:
        for number, value in self.values.get("framework", []):
            yield number, _framework_fields(value, f"{self.name}: line {number}: framework")

    def cuda_packages(self) -> Iterator[tuple[int, CudaPackageFields]]:
        for number, value in self.values.get("cuda-package", []):
            yield number, _cuda_package_fields(value, f"{self.name}: line {number}: cuda-package")

    def constraints(self) -> list[tuple[int, str]]:
        return self.values.get("constraint", [])

    def pins_digest(self, schema: int) -> str | None:
        if schema >= 2:
            return self.text("pins-sha256")
        if "pins-sha256" in self.values or "constraint" in self.values:
            raise LockError(f"{self.name}: lock-schema 1 has no pins-sha256 or constraint lines")
        return None

    def fail(self, key: str, why: str, at: int | None = None) -> LockError:
        number = at if at is not None else self._line(key)[0]
        return LockError(f"{self.name}: line {number}: {_line_key(key)}: {why}")

    def malformed(self, key: str, value: str, at: int | None = None) -> LockError:
        return self.fail(key, f"{shown(value)} is not {SHAPES[key]}", at)


def _schema(text: str, fail: Callable[[str], LockError], schemas: tuple[int, ...]) -> int:
    if not re.fullmatch(r"\d{1,4}", text):
        raise fail(f"{shown(text)} is not a schema number")
    schema = int(text)
    if schema > content.SECTIONED_SCHEMA:
        raise fail(
            f"{schema} is newer than this colabenv reads ({content.SECTIONED_SCHEMA}); upgrade colabenv"
        )
    if schema == content.SECTIONED_SCHEMA and schema not in schemas:
        raise fail(f"{schema}: a lock of several targets; one section of it is read with its name")
    if schema not in schemas:
        raise fail(f"{schema} is not a schema this colabenv reads")
    return schema


def _optional(value: str) -> str | None:
    return None if value == content.HeaderWord.NONE.value else value


def tpu_text(tpu: TpuTarget | None) -> str:
    """A lock's ``target-tpu``: ``none``, or ``generation=v5e type=v5e-1 chips=1`` (``none``
    for what is not known)."""
    if tpu is None:
        return content.HeaderWord.NONE.value
    none = content.HeaderWord.NONE.value
    chips = str(tpu.chips) if tpu.chips is not None else none
    return f"generation={tpu.generation or none} type={tpu.accelerator_type or none} chips={chips}"


_TPU_KEYS = ("generation", "type", "chips")


def _parse_tpu(value: str) -> TpuTarget | str | None:
    """The TPU of a ``target-tpu`` value (its parts not yet checked), or what is wrong with
    how it is written."""
    if value == content.HeaderWord.NONE.value:
        return None
    parts = [part.partition("=") for part in value.split(" ")]
    if [key for key, _, _ in parts] != list(_TPU_KEYS) or any(not sep for _, sep, _ in parts):
        return "expected generation=, type= and chips= (or none)"
    generation, kind, chips_text = (_optional(text) for _, _, text in parts)
    chips = None
    if chips_text is not None:
        if not re.fullmatch(r"[0-9]{1,8}", chips_text):
            return f"chips={printable(chips_text[:16])} is not a number of chips"
        chips = int(chips_text)
    return TpuTarget(generation, kind, chips)


def _cuda_package_fields(value: str, where: str) -> CudaPackageFields:
    parts = value.split()
    fields = dict(p.split("=", 1) for p in parts[3:] if "=" in p)
    if len(parts) != 5 or "variant" not in fields or "index" not in fields:
        raise LockError(
            f"{where}: {shown(value)} is not '<package> <distribution> <version> variant=<v> index=<url>'"
        )
    index = None if fields["index"] == content.HeaderWord.DEFAULT.value else fields["index"]
    return parts[0], parts[1], parts[2], fields["variant"], index


def _framework_fields(value: str, where: str) -> FrameworkFields:
    parts = value.split()
    fields = dict(p.split("=", 1) for p in parts[2:] if "=" in p)
    if len(parts) < 2 or "variant" not in fields or len(parts) > 4:
        raise LockError(f"{where}: {shown(value)} is not '<framework> <version> variant=<v> index=<url>'")
    index = fields.get("index", content.HeaderWord.DEFAULT.value)
    return parts[0], parts[1], fields["variant"], None if index == content.HeaderWord.DEFAULT.value else index


# ---------------------------------------------------------------------------------------------
# A lock of several targets (schema 3)

_FILE_KEYS = ("colabenv-version", "lock-schema", "profile", "profile-hash", "resolver", "targets")
"""The shared header of a sectioned lock; every other key belongs to a section."""
_SECTION_RE = re.compile(r"^# \[target (?P<name>[^\]]{0,64})\]$")


def is_sectioned(text: str) -> bool:
    """Whether the requirements lock ``text`` says it holds sections (``lock-schema: 3``)."""
    found = _header_block(text).get("lock-schema") or []
    return bool(found) and found[0][1] == str(content.SECTIONED_SCHEMA)


def parse_sectioned(text: str, path: Path | None = None) -> content.LockFile:
    """A requirements lock of several targets: the shared header, then each ``# [target NAME]``
    section, read as strictly as a lock of one target (its own ``pins-sha256``)."""
    name = lock_name(path)
    lines = text.splitlines()
    starts = [number for number, line in enumerate(lines) if line.startswith(SECTION_PREFIX)]
    shared = _header_block("\n".join(lines[: starts[0]] if starts else lines))
    for key, found in shared.items():
        if key not in _FILE_KEYS:
            raise LockError(f"{name}: line {found[0][0]}: {key} belongs in a section, not the shared header")
        if len(found) > 1:
            raise LockError(f"{name}: line {found[1][0]}: {key} given twice")
    listed = shared.get("targets")
    if not listed:
        raise LockError(f"{name}: a lock of several targets without its '# targets:' line")
    names = listed[0][1].split()
    if not names or len(names) > content.MAX_SECTIONS or len(set(names)) != len(names):
        raise LockError(
            f"{name}: line {listed[0][0]}: targets: expected 1 to {content.MAX_SECTIONS} "
            "distinct target names"
        )
    head = "\n".join(lines[: starts[0]] if starts else lines)
    stray, index_url, extra, links = parse_requirements(head, path)
    if stray or index_url or extra or links:
        raise LockError(f"{name}: a pin or an index line before the first '# [target NAME]' section")
    common = {key: found for key, found in shared.items() if key != "targets"}
    sections: list[content.LockSection] = []
    for position, start in enumerate(starts):
        match = _SECTION_RE.match(lines[start])
        section = match.group("name") if match else ""
        if not content.SECTION_NAME_RE.match(section):
            raise LockError(f"{name}: line {start + 1}: expected '# [target NAME]' with a target name")
        end = starts[position + 1] if position + 1 < len(starts) else len(lines)
        chunk = "\n".join(lines[start + 1 : end])
        sections.append(content.LockSection(section, _section_lock(chunk, start + 2, common, section, path)))
    found_names = [s.name for s in sections]
    if found_names != names:
        raise LockError(
            f"{name}: line {listed[0][0]}: targets: lists {' '.join(names)}, but the sections are "
            f"{' '.join(str(n) for n in found_names) or 'none'} (the lock was truncated or edited)"
        )
    return content.LockFile(tuple(sections), path)


def _section_lock(
    chunk: str, first_line: int, common: HeaderValues, section: str, path: Path | None
) -> content.Lock:
    where = f"{lock_name(path)}: section {section}"
    own = _header_block(chunk, first_line)
    for key, found in own.items():
        if key in _FILE_KEYS:
            raise LockError(f"{lock_name(path)}: line {found[0][0]}: {key} belongs in the shared header")
    header, digest = header_from_values({**common, **own}, where, (content.SECTIONED_SCHEMA,))
    packages, index_url, extra, links = parse_requirements(chunk, path, first_line)
    if not packages:
        raise LockError(f"{where}: the section pins nothing")
    lock = content.Lock(header, packages, index_url, extra, path, links)
    check_digest(lock, digest, where)
    return lock
