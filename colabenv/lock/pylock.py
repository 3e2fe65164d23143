"""A lock as a PEP 751 ``pylock.toml``: written with tomlkit from a :class:`packaging.pylock.Pylock`
(validated before it is written), read and validated with :mod:`packaging.pylock`.

colabenv's header (the lock's target, frameworks, constraints, ``pins-sha256``) is the
``[tool.colabenv]`` table; a target value that does not exist (no driver on a CPU target) is an
absent key. The same reader turns ``uv pip compile --format pylock.toml`` output into pins.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from packaging.markers import Marker
from packaging.pylock import (
    Package,
    PackageSdist,
    PackageWheel,
    Pylock,
    PylockUnsupportedVersionError,
    PylockValidationError,
)
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv._util.bounds import MAX_FILE_BYTES, file_size
from colabenv._util.reader import Fail, Reader
from colabenv.accelerators import registry
from colabenv.errors import ColabenvError, LockError, printable
from colabenv.lock import content
from colabenv.lock.content import check_digest, checked_url, is_sha256, new_package
from colabenv.lock.header import (
    SHAPES,
    SHARED_KEYS,
    TARGET_KEYS,
    CudaPackageFields,
    FrameworkFields,
    checked_header,
)
from colabenv.models import MAX_TPU_CHIPS, TpuTarget

PYLOCK_VERSION = Version("1.0")
CREATED_BY = "colabenv"


# ---------------------------------------------------------------------------------------------
# Writing


def _environment(target: content.LockTarget) -> Marker:
    env = target.marker_environment()
    return Marker(
        f"python_version == '{target.python}' and sys_platform == "
        f"'{env['sys_platform']}' and platform_machine == '{env['platform_machine']}'"
    )


def _files(package: content.LockedPackage) -> tuple[list[PackageWheel], PackageSdist | None]:
    wheels: list[PackageWheel] = []
    sdists: list[PackageSdist] = []
    for file in package.files:
        if file.name is None or file.url is None:
            raise LockError(
                f"{package.name} {package.version}: no file name and URL known "
                f"for the hash sha256:{file.sha256}"
            )
        facts: dict[str, Any] = {
            "name": file.name,
            "url": file.url,
            "hashes": {"sha256": file.sha256},
            "size": file.size,
            "upload_time": file.upload_time,
        }
        if file.is_wheel:
            wheels.append(PackageWheel(**facts))
        else:
            sdists.append(PackageSdist(**facts))
    return wheels, (sdists[0] if sdists else None)


def _tool_table(lock: content.Lock) -> dict[str, Any]:
    table: dict[str, Any] = _shared_table(lock.header, content.LOCK_SCHEMA)
    table.update(_target_table(lock))
    return table


def _shared_table(header: content.LockHeader, schema: int) -> dict[str, Any]:
    return {
        "colabenv-version": header.colabenv_version,
        "lock-schema": schema,
        "profile": header.profile_name,
        "profile-hash": header.profile_hash,
        "resolver": header.resolver,
    }


def _target_table(lock: content.Lock) -> dict[str, Any]:
    """What a lock records of its one target: indexes, constraints, ``pins-sha256``, the
    target and the frameworks."""
    header = lock.header
    target = header.target
    target_table: dict[str, Any] = {
        key: value
        for key, value in (
            ("driver", target.driver),
            ("requires-driver", target.required_driver),
            ("cuda", target.cuda),
        )
        if value is not None
    }
    target_table["compute-capabilities"] = list(target.compute_capabilities)
    target_table["python"] = target.python
    if target.python_needs is not None:
        target_table["python-needs"] = target.python_needs
    target_table["platform"] = target.platform
    target_table["accelerator"] = target.accelerator.value
    recorded = target.recorded_device
    target_table.update(registry.accelerator(recorded.kind).recorded_table(recorded))
    table: dict[str, Any] = {}
    if lock.index_url:
        table["index-url"] = lock.index_url
    table["extra-index-urls"] = list(lock.extra_index_urls)
    if lock.find_links:
        table["find-links"] = list(lock.find_links)
    table["constraints"] = list(header.constraints)
    table["pins-sha256"] = lock.pins_digest
    table["target"] = target_table
    table["frameworks"] = [
        {
            "framework": str(f.framework),
            "version": f.version,
            "variant": f.variant,
            **({"index": f.index_url} if f.index_url else {}),
        }
        for f in header.frameworks
    ]
    if header.cuda_packages:
        table["cuda-packages"] = [
            {
                "name": str(p.name),
                "distribution": str(p.distribution),
                "version": p.version,
                "variant": p.variant,
                **({"index": p.index_url} if p.index_url else {}),
            }
            for p in header.cuda_packages
        ]
    return table


def _package(package: content.LockedPackage, marker: Marker | None) -> Package:
    wheels, sdist = _files(package)
    return Package(
        name=package.name,
        version=Version(package.version),
        marker=marker,
        index=package.index,
        sdist=sdist,
        wheels=wheels or None,
    )


def _requires_python(target: content.LockTarget) -> SpecifierSet:
    """The target's X.Y, and what the pins need of its patch release (``!=3.14.1``)."""
    return SpecifierSet(f"=={target.python}.*") & SpecifierSet(target.python_needs or "")


def _check_urls(lock: content.Lock) -> None:
    for url in (*lock.index_urls, *lock.find_links):
        if checked_url(url) is None:
            raise LockError(f"index URL {printable(url)!r} cannot be written into a lock")


def pylock_text(lock: content.Lock) -> str:
    """The lock as a PEP 751 ``pylock.toml``; every file needs its name and URL."""
    _check_urls(lock)
    packages = [_package(p, Marker(p.marker) if p.marker else None) for p in lock.packages]
    target = lock.header.target
    pylock = Pylock(
        lock_version=PYLOCK_VERSION,
        environments=[_environment(target)],
        requires_python=_requires_python(target),
        created_by=CREATED_BY,
        packages=packages,
        tool={"colabenv": _tool_table(lock)},
    )
    return _dumped(
        pylock,
        (
            "colabenv lock (PEP 751). Install exactly this with an installer that reads pylock.toml",
            "(uv pip install -r pylock.toml). Refresh: colabenv lock --format pylock; do not edit.",
        ),
    )


def group_marker(section: str, own: str | None) -> Marker:
    """A sectioned ``pylock.toml``'s marker of a package of ``section``: the section is a
    dependency group (PEP 751), so a package applies only where that group is installed."""
    group = f"'{section}' in dependency_groups"
    return Marker(f"{group} and ({own})" if own else group)


_GROUP_MARKER_RE = re.compile(r'^"([a-z][a-z0-9-]{0,31})" in dependency_groups(?: and (.+))?$')


def marker_group(marker: Marker) -> tuple[str, str | None] | None:
    """The section and the package's own marker that :func:`group_marker` made ``marker``
    of, or None when it is not such a marker (the own marker must not name a group)."""
    written = str(marker)
    match = _GROUP_MARKER_RE.match(written)
    if match is None:
        return None
    section, rest = match.groups()
    try:
        own = str(Marker(rest)) if rest else None
    except ValueError:
        return None
    if own is not None and "dependency_groups" in own:
        return None
    return (section, own) if str(group_marker(section, own)) == written else None


def sectioned_pylock_text(lock_file: content.LockFile) -> str:
    """A lock of several targets as one PEP 751 ``pylock.toml``: each target a dependency group,
    the first the default one (``default-groups``: what a plain install installs), each package
    marked with its group (the marker alone says which section it is of); every target's
    header in ``[[tool.colabenv.targets]]``."""
    packages: list[Package] = []
    targets: list[dict[str, Any]] = []
    environments: list[Marker] = []
    for section in lock_file.sections:
        name = str(section.name)
        lock = section.lock
        _check_urls(lock)
        packages.extend(_package(p, group_marker(name, p.marker)) for p in lock.packages)
        targets.append({"name": name, **_target_table(lock)})
        environment = _environment(lock.header.target)
        if all(str(e) != str(environment) for e in environments):
            environments.append(environment)
    shared = _shared_table(lock_file.first.header, content.SECTIONED_SCHEMA)
    shared["targets"] = targets
    names = list(lock_file.names)
    pylock = Pylock(
        lock_version=PYLOCK_VERSION,
        environments=environments,
        dependency_groups=names,
        default_groups=names[:1],
        created_by=CREATED_BY,
        packages=packages,
        tool={"colabenv": shared},
    )
    return _dumped(
        pylock,
        (
            "colabenv lock (PEP 751), one dependency group per target; a plain install installs",
            f"the default group, target {names[0]} (pip install -r THIS_FILE); another target: its",
            "group, its own pylock.NAME.toml, or colabenv render PROFILE --lock THIS_FILE. Do not edit.",
        ),
    )


def _dumped(pylock: Pylock, comments: Sequence[str]) -> str:
    import tomlkit

    try:
        pylock.validate()
    except PylockValidationError as exc:
        raise LockError(f"the lock cannot be written as PEP 751: {printable(exc)}") from None
    document = tomlkit.document()
    for comment in comments:
        document.add(tomlkit.comment(comment))
    for key, value in pylock.to_dict().items():
        document[key] = _packages_table(value) if key == "packages" else value
    return tomlkit.dumps(document)


def _packages_table(packages: list[dict[str, Any]]) -> Any:
    """An array of tables whose file entries are inline tables, one line per file."""
    import tomlkit

    array = tomlkit.aot()
    for package in packages:
        table = tomlkit.table()
        for key, value in package.items():
            if key == "wheels":
                inline = tomlkit.array()
                inline.multiline(True)
                for wheel in value:
                    inline.append(_inline(wheel))
                table[key] = inline
            elif key in ("sdist", "tool"):
                table[key] = _inline(value)
            else:
                table[key] = value
        array.append(table)
    return array


def _inline(values: Mapping[str, Any]) -> Any:
    import tomlkit

    table = tomlkit.inline_table()
    for key, value in values.items():
        table[key] = _inline(value) if isinstance(value, Mapping) else value
    return table


# ---------------------------------------------------------------------------------------------
# Reading


def load_pylock(text: str, name: str) -> Pylock:
    """``text`` as a validated :class:`Pylock`; LockError naming the key when it is not one."""
    from colabenv._util import toml

    try:
        document = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        raise LockError(f"{name}: not valid TOML: {printable(exc)}") from None
    except (ValueError, RecursionError):
        raise LockError(f"{name}: not valid TOML (a value out of range)") from None
    try:
        return Pylock.from_dict(document)
    except PylockUnsupportedVersionError as exc:
        raise LockError(f"{name}: lock-version: {printable(exc)}") from None
    except PylockValidationError as exc:
        raise LockError(f"{name}: {printable(exc)}") from None
    except (ValueError, TypeError, RecursionError) as exc:
        raise LockError(f"{name}: not a PEP 751 lock: {printable(exc)}") from None


def _file_name(name: str | None, url: str | None, path: str | None) -> str | None:
    if name:
        return name
    location = urlsplit(url).path if url else path
    return unquote(location.rsplit("/", 1)[-1]) if location else None


def pylock_packages(
    pylock: Pylock, name: str, url_of: Callable[[str], str] = str
) -> tuple[content.LockedPackage, ...]:
    """The pins of ``pylock``, checked as a lock's are; ``url_of`` maps each file URL (to take
    credentials out of a resolver's output)."""
    entries = [(i, p, str(p.marker) if p.marker else None) for i, p in enumerate(pylock.packages)]
    return _read_packages(entries, name, url_of)


def _read_packages(
    entries: Sequence[tuple[int, Package, str | None]], name: str, url_of: Callable[[str], str] = str
) -> tuple[content.LockedPackage, ...]:
    """(position, package, the marker to record) to pins, each name once."""
    packages: dict[str, content.LockedPackage] = {}
    for position, package, marker in entries:
        where = f"{name}: packages[{position}]"
        if package.vcs or package.directory or package.archive:
            raise LockError(
                f"{where}: {package.name}: a vcs, directory or archive source; "
                "colabenv locks install from indexes only"
            )
        if package.version is None:
            raise LockError(f"{where}: {package.name}: no version")
        files = []
        sources: Sequence[PackageWheel | PackageSdist] = [
            *(package.wheels or ()),
            *((package.sdist,) if package.sdist else ()),
        ]
        for entry in sources:
            digest = entry.hashes.get("sha256", "").lower()
            if not is_sha256(digest):
                raise LockError(f"{where}: {package.name}: a file without a sha256 hash")
            url = url_of(entry.url) if entry.url else None
            file_name = _file_name(entry.name, entry.url, entry.path)
            size, uploaded = _size_and_time(entry, f"{where}: {package.name}: {printable(file_name or '')}")
            files.append(content.LockedFile(digest, file_name, url, size, uploaded))
        locked = new_package(
            package.name,
            str(package.version),
            files,
            marker,
            url_of(package.index) if package.index else None,
            where,
        )
        if locked.name in packages:
            raise LockError(f"{where}: {locked.name} is pinned twice")
        packages[locked.name] = locked
    return tuple(packages.values())


def _size_and_time(entry: PackageWheel | PackageSdist, where: str) -> tuple[int | None, datetime | None]:
    """A file's ``size`` and ``upload-time``, checked: LockError(``where: key: why``) if not."""
    if entry.size is not None and file_size(entry.size) is None:
        raise LockError(f"{where}: size: expected a whole number of bytes from 0 to {MAX_FILE_BYTES}")
    uploaded = entry.upload_time
    if uploaded is not None and uploaded.utcoffset() is None:
        raise LockError(f"{where}: upload-time: expected a date-time with its offset (UTC: Z)")
    return entry.size, uploaded


def _failing(name: str) -> Fail:
    def fail(key: str | None, problem: str) -> LockError:
        return LockError(f"{name}: {key}: {problem}" if key else f"{name}: {problem}")

    return fail


def _absent(value: str | None) -> str | None:
    return None if value in (None, content.HeaderWord.NONE.value) else value


class _ToolTable:
    """``[tool.colabenv]`` as a :class:`~colabenv.lock.header.HeaderSource`: the shared keys
    read from ``tool``, the rest from ``src`` (``tool`` itself, or one entry of a sectioned
    lock's ``targets``), the target's from its ``target`` table, where an absent key is a value
    there is none of; each error naming the key's path."""

    def __init__(self, tool: Reader, src: Reader) -> None:
        self.tool = tool
        self.src = src
        self._target: Reader | None = None

    def _table(self, key: str) -> Reader:
        if key in SHARED_KEYS:
            return self.tool
        if key not in TARGET_KEYS:
            return self.src
        if self._target is None:
            self._target = self.src.sub("target", required=True)
        return self._target

    def text(self, key: str) -> str:
        return self._table(key).text(key, empty=True)

    def given(self, key: str) -> str | None:
        return self._table(key).opt_text(key, empty=True)

    def optional(self, key: str) -> str | None:
        return _absent(self.given(key))

    def listed(self, key: str) -> tuple[str, ...]:
        return tuple(self._table(key).text_list(key))

    def kind_value(self, key: str) -> str | None:
        return self.optional(key)

    def kind_listed(self, key: str) -> tuple[str, ...]:
        return self.listed(key)

    def tpu(self) -> TpuTarget | None:
        """``[tool.colabenv.target.tpu]``: absent on every other target."""
        table = self._table("tpu")
        if "tpu" not in table.data:
            return None
        tpu = table.sub("tpu")
        tpu.allow("generation", "type", "chips")
        return TpuTarget(
            tpu.opt_text("generation"),
            tpu.opt_text("type"),
            tpu.integer("chips", low=1, high=MAX_TPU_CHIPS) if "chips" in tpu.data else None,
        )

    def frameworks(self) -> Iterator[tuple[int, FrameworkFields]]:
        for position, (name, version, variant), index in self._items("frameworks", "framework"):
            yield position, (name, version, variant, index)

    def cuda_packages(self) -> Iterator[tuple[int, CudaPackageFields]]:
        for position, (name, distribution, version, variant), index in self._items(
            "cuda-packages", "name", "distribution"
        ):
            yield position, (name, distribution, version, variant, index)

    def _items(self, key: str, *names: str) -> Iterator[tuple[int, list[str], str | None]]:
        """Each table of the array ``key``: its position, its ``names`` then ``version`` and
        ``variant``, and its ``index`` (None: the default), read in that order."""
        for position, item in enumerate(self.src.tables(key)):
            texts = [item.text(name, empty=True) for name in (*names, "version", "variant")]
            yield position, texts, item.opt_text("index", empty=True)

    def constraints(self) -> list[tuple[int, str]]:
        return list(enumerate(self.src.text_list("constraints")))

    def pins_digest(self, schema: int) -> str | None:
        if schema < 2:
            return self.src.opt_text("pins-sha256", empty=True)
        return self.src.text("pins-sha256", empty=True)

    def fail(self, key: str, why: str, at: int | None = None) -> ColabenvError:
        return self._table(key).fail(key, why, index=at)

    def malformed(self, key: str, value: str, at: int | None = None) -> ColabenvError:
        if key == "constraints":
            return self.fail(key, f"{printable(value)!r} is not a requirement", at)
        return self.fail(key, f"expected {SHAPES[key]}", at)


def _tool(pylock: Pylock, name: str) -> tuple[Reader, int]:
    """``[tool.colabenv]`` and its ``lock-schema``."""
    tool = Reader(pylock.tool or {}, _failing(name), "tool").sub("colabenv", required=True)
    schema = tool.data.get("lock-schema")
    known = (*content.READABLE_SCHEMAS, content.SECTIONED_SCHEMA)
    if not isinstance(schema, int) or isinstance(schema, bool) or schema not in known:
        raise tool.fail("lock-schema", f"expected one of {known}; a newer lock needs a newer colabenv")
    return tool, schema


def _header(
    tool: Reader, schema: int, src: Reader
) -> tuple[content.LockHeader, str | None, str | None, tuple[str, ...], tuple[str, ...]]:
    """The header, the ``pins-sha256``, the index URL, the extra index URLs and the
    find-links pages; the target's keys read from ``src`` (``tool`` itself, or one entry of a
    sectioned lock's ``targets``)."""
    header, digest = checked_header(_ToolTable(tool, src), schema)
    index_url = src.opt_text("index-url", empty=True)
    if index_url is not None and checked_url(index_url) is None:
        raise src.fail("index-url", f"{printable(index_url)!r} is not an index URL")
    extra = tuple(src.text_list("extra-index-urls"))
    for position, url in enumerate(extra):
        if checked_url(url) is None:
            raise src.fail("extra-index-urls", f"{printable(url)!r} is not an index URL", index=position)
    links = tuple(src.text_list("find-links"))
    for position, url in enumerate(links):
        if checked_url(url) is None:
            raise src.fail("find-links", f"{printable(url)!r} is not a find-links URL", index=position)
    return header, digest, index_url, extra, links


def parse_pylock(text: str, path: Path | None = None) -> content.Lock:
    name = printable(path.name) if path else "<lock>"
    pylock = load_pylock(text, name)
    tool, schema = _tool(pylock, name)
    if schema == content.SECTIONED_SCHEMA:
        raise tool.fail(
            "lock-schema", f"{schema}: a lock of several targets; one section of it is read with its name"
        )
    header, digest, index_url, extra, links = _header(tool, schema, tool)
    packages = pylock_packages(pylock, name)
    if not packages:
        raise LockError(f"{name}: packages: the lock pins nothing")
    lock = content.Lock(header, packages, index_url, extra, path, links)
    check_digest(lock, digest, name)
    return lock


def is_sectioned_pylock(text: str, path: Path | None = None) -> bool:
    """Whether the ``pylock.toml`` ``text`` holds several targets (``lock-schema = 3``)."""
    name = printable(path.name) if path else "<lock>"
    return _tool(load_pylock(text, name), name)[1] == content.SECTIONED_SCHEMA


def parse_sectioned_pylock(text: str, path: Path | None = None) -> content.LockFile:
    """A ``pylock.toml`` of several targets: each ``[[tool.colabenv.targets]]`` entry with the
    packages whose marker names its dependency group (no ``[packages.tool]`` table is read)."""
    name = printable(path.name) if path else "<lock>"
    pylock = load_pylock(text, name)
    tool, schema = _tool(pylock, name)
    entries = tool.tables("targets", required=True)
    if not entries or len(entries) > content.MAX_SECTIONS:
        raise tool.fail("targets", f"expected 1 to {content.MAX_SECTIONS} targets")
    names: list[str] = []
    for entry in entries:
        written = entry.text("name", empty=True)
        if not content.SECTION_NAME_RE.match(written) or written in names:
            raise entry.fail("name", f"{printable(written)[:40]!r} is not a target name, or not the only one")
        names.append(written)
    _check_groups(pylock, names, name)
    grouped: dict[str, list[tuple[int, Package, str | None]]] = {n: [] for n in names}
    for position, package in enumerate(pylock.packages):
        found = marker_group(package.marker) if package.marker is not None else None
        if found is None or found[0] not in grouped:
            raise LockError(
                f"{name}: packages[{position}].marker: expected '\"TARGET\" in dependency_groups' "
                f"(and the package's own marker) naming a target of the lock ({', '.join(names)})"
            )
        grouped[found[0]].append((position, package, found[1]))
    sections = []
    for section, entry in zip(names, entries, strict=True):
        header, digest, index_url, extra, links = _header(tool, schema, entry)
        packages = _read_packages(grouped[section], name)
        if not packages:
            raise LockError(f"{name}: target {section}: the section pins nothing")
        lock = content.Lock(header, packages, index_url, extra, path, links)
        check_digest(lock, digest, f"{name}: target {section}")
        sections.append(content.LockSection(section, lock))
    return content.LockFile(tuple(sections), path)


def _check_groups(pylock: Pylock, names: Sequence[str], name: str) -> None:
    """``dependency-groups`` must be the targets, in order; ``default-groups`` one of them (the
    first, as colabenv writes it), or none (as colabenv wrote it before)."""
    groups = list(pylock.dependency_groups or ())
    if groups != list(names):
        raise LockError(
            f"{name}: dependency-groups: expected the targets of tool.colabenv.targets "
            f"({', '.join(names)}), in order"
        )
    defaults = list(pylock.default_groups or ())
    for position, group in enumerate(defaults):
        if group not in names:
            raise LockError(
                f"{name}: default-groups[{position}]: {printable(group)[:40]!r} names no target "
                f"of the lock ({', '.join(names)})"
            )
    if len(defaults) > 1:
        raise LockError(
            f"{name}: default-groups: expected one target (a plain install installs it), not {len(defaults)}"
        )
