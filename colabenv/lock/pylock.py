"""A lock as a PEP 751 ``pylock.toml``: written with tomlkit from a :class:`packaging.pylock.Pylock`
(validated before it is written), read and validated with :mod:`packaging.pylock`.

colabenv's header (the lock's target, frameworks, constraints, ``pins-sha256``) is the
``[tool.colabenv]`` table; a target value that does not exist (no driver on a CPU target) is an
absent key. The same reader turns ``uv pip compile --format pylock.toml`` output into pins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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

from colabenv._util.reader import Fail, Reader
from colabenv.errors import LockError, printable
from colabenv.lock.content import (
    LOCK_SCHEMA,
    READABLE_SCHEMAS,
    HeaderWord,
    Lock,
    LockedFile,
    LockedPackage,
    LockHeader,
    LockTarget,
    accelerator_problem,
    check_digest,
    check_header_text,
    checked_constraint,
    checked_framework,
    checked_profile_hash,
    checked_url,
    is_sha256,
    new_package,
    tpu_problem,
)
from colabenv.models import MAX_TPU_CHIPS, LockedFramework, TpuTarget

PYLOCK_VERSION = Version("1.0")
CREATED_BY = "colabenv"


# ---------------------------------------------------------------------------------------------
# Writing


def _environment(target: LockTarget) -> Marker:
    env = target.marker_environment()
    return Marker(
        f"python_version == '{target.python}' and sys_platform == "
        f"'{env['sys_platform']}' and platform_machine == '{env['platform_machine']}'"
    )


def _files(package: LockedPackage) -> tuple[list[PackageWheel], PackageSdist | None]:
    wheels: list[PackageWheel] = []
    sdists: list[PackageSdist] = []
    for file in package.files:
        if file.name is None or file.url is None:
            raise LockError(
                f"{package.name} {package.version}: no file name and URL known "
                f"for the hash sha256:{file.sha256}"
            )
        if file.is_wheel:
            wheels.append(PackageWheel(name=file.name, url=file.url, hashes={"sha256": file.sha256}))
        else:
            sdists.append(PackageSdist(name=file.name, url=file.url, hashes={"sha256": file.sha256}))
    return wheels, (sdists[0] if sdists else None)


def _tool_table(lock: Lock) -> dict[str, Any]:
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
    target_table["platform"] = target.platform
    target_table["accelerator"] = target.accelerator.value
    if target.tpu is not None:
        target_table["tpu"] = {
            key: value
            for key, value in (
                ("generation", target.tpu.generation),
                ("type", target.tpu.accelerator_type),
                ("chips", target.tpu.chips),
            )
            if value is not None
        }
    table: dict[str, Any] = {
        "colabenv-version": header.colabenv_version,
        "lock-schema": LOCK_SCHEMA,
        "profile": header.profile_name,
        "profile-hash": header.profile_hash,
        "resolver": header.resolver,
    }
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
    return table


def pylock_text(lock: Lock) -> str:
    """The lock as a PEP 751 ``pylock.toml``; every file needs its name and URL."""
    import tomlkit

    for url in (*lock.index_urls, *lock.find_links):
        if checked_url(url) is None:
            raise LockError(f"index URL {printable(url)!r} cannot be written into a lock")
    packages = []
    for package in lock.packages:
        wheels, sdist = _files(package)
        packages.append(
            Package(
                name=package.name,
                version=Version(package.version),
                marker=Marker(package.marker) if package.marker else None,
                index=package.index,
                sdist=sdist,
                wheels=wheels or None,
            )
        )
    target = lock.header.target
    pylock = Pylock(
        lock_version=PYLOCK_VERSION,
        environments=[_environment(target)],
        requires_python=SpecifierSet(f"=={target.python}.*"),
        created_by=CREATED_BY,
        packages=packages,
        tool={"colabenv": _tool_table(lock)},
    )
    try:
        pylock.validate()
    except PylockValidationError as exc:
        raise LockError(f"the lock cannot be written as PEP 751: {printable(exc)}") from None
    document = tomlkit.document()
    document.add(
        tomlkit.comment(
            "colabenv lock (PEP 751). Install exactly this with an installer that reads pylock.toml"
        )
    )
    document.add(
        tomlkit.comment(
            "(uv pip install -r pylock.toml). Refresh: colabenv lock --format pylock; do not edit."
        )
    )
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
            elif key == "sdist":
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
) -> tuple[LockedPackage, ...]:
    """The pins of ``pylock``, checked as a lock's are; ``url_of`` maps each file URL (to take
    credentials out of a resolver's output)."""
    packages: dict[str, LockedPackage] = {}
    for position, package in enumerate(pylock.packages):
        where = f"{name}: packages[{position}]"
        if package.vcs or package.directory or package.archive:
            raise LockError(
                f"{where}: {package.name}: a vcs, directory or archive source; "
                "colabenv locks install from indexes only"
            )
        if package.version is None:
            raise LockError(f"{where}: {package.name}: no version")
        files = []
        entries: Sequence[PackageWheel | PackageSdist] = [
            *(package.wheels or ()),
            *((package.sdist,) if package.sdist else ()),
        ]
        for entry in entries:
            digest = entry.hashes.get("sha256", "").lower()
            if not is_sha256(digest):
                raise LockError(f"{where}: {package.name}: a file without a sha256 hash")
            url = url_of(entry.url) if entry.url else None
            files.append(LockedFile(digest, _file_name(entry.name, entry.url, entry.path), url))
        locked = new_package(
            package.name,
            str(package.version),
            files,
            str(package.marker) if package.marker else None,
            url_of(package.index) if package.index else None,
            where,
        )
        if locked.name in packages:
            raise LockError(f"{where}: {locked.name} is pinned twice")
        packages[locked.name] = locked
    return tuple(packages.values())


def _failing(name: str) -> Fail:
    def fail(key: str | None, problem: str) -> LockError:
        return LockError(f"{name}: {key}: {problem}" if key else f"{name}: {problem}")

    return fail


def _absent(value: str | None) -> str | None:
    return None if value in (None, HeaderWord.NONE.value) else value


def _tpu(table: Reader) -> TpuTarget | None:
    """``[tool.colabenv.target.tpu]``: absent on every other target."""
    if "tpu" not in table.data:
        return None
    tpu = table.sub("tpu")
    tpu.allow("generation", "type", "chips")
    found = TpuTarget(
        tpu.opt_text("generation"),
        tpu.opt_text("type"),
        tpu.integer("chips", low=1, high=MAX_TPU_CHIPS) if "chips" in tpu.data else None,
    )
    problem = tpu_problem(found)
    if problem is not None:
        raise table.fail("tpu", problem)
    return found


def _header(
    pylock: Pylock, name: str
) -> tuple[LockHeader, str | None, str | None, tuple[str, ...], tuple[str, ...]]:
    """The header, the ``pins-sha256``, the index URL, the extra index URLs and the
    find-links pages."""
    tool = Reader(pylock.tool or {}, _failing(name), "tool").sub("colabenv", required=True)
    schema = tool.data.get("lock-schema")
    if not isinstance(schema, int) or isinstance(schema, bool) or schema not in READABLE_SCHEMAS:
        raise tool.fail(
            "lock-schema", f"expected one of {READABLE_SCHEMAS}; a newer lock needs a newer colabenv"
        )
    for key in ("colabenv-version", "resolver"):
        problem = check_header_text(key, tool.text(key, empty=True))
        if problem:
            raise tool.fail(key, problem)
    profile_name = tool.text("profile", empty=True)
    profile_hash = tool.text("profile-hash", empty=True)
    if checked_profile_hash(profile_hash) is None:
        raise tool.fail("profile-hash", "expected sha256:<64 hex digits>")
    table = tool.sub("target", required=True)
    target = LockTarget(
        driver=_absent(table.opt_text("driver", empty=True)),
        required_driver=_absent(table.opt_text("requires-driver", empty=True)),
        cuda=_absent(table.opt_text("cuda", empty=True)),
        compute_capabilities=tuple(table.text_list("compute-capabilities")),
        python=table.text("python", empty=True),
        platform=table.text("platform", empty=True),
        tpu=_tpu(table),
    )
    problem = target.problem()
    if problem:
        key, _, why = problem.partition(": ")
        raise table.fail(key, why)
    if "accelerator" in table.data:
        problem = accelerator_problem(table.text("accelerator", empty=True), target)
        if problem:
            raise table.fail("accelerator", problem)
    frameworks: list[LockedFramework] = []
    for item in tool.tables("frameworks"):
        found = checked_framework(
            item.text("framework", empty=True),
            item.text("version", empty=True),
            item.text("variant", empty=True),
            item.opt_text("index", empty=True),
        )
        if isinstance(found, str):
            raise item.fail(None, found)
        frameworks.append(found)
    constraints = []
    for position, text in enumerate(tool.text_list("constraints")):
        constraint = checked_constraint(text)
        if constraint is None:
            raise tool.fail("constraints", f"{printable(text)!r} is not a requirement", index=position)
        constraints.append(constraint)
    digest = tool.opt_text("pins-sha256", empty=True) if schema < 2 else tool.text("pins-sha256", empty=True)
    if digest is not None and not is_sha256(digest):
        raise tool.fail("pins-sha256", "expected 64 hex digits")
    index_url = tool.opt_text("index-url", empty=True)
    if index_url is not None and checked_url(index_url) is None:
        raise tool.fail("index-url", f"{printable(index_url)!r} is not an index URL")
    extra = tuple(tool.text_list("extra-index-urls"))
    for position, url in enumerate(extra):
        if checked_url(url) is None:
            raise tool.fail("extra-index-urls", f"{printable(url)!r} is not an index URL", index=position)
    links = tuple(tool.text_list("find-links"))
    for position, url in enumerate(links):
        if checked_url(url) is None:
            raise tool.fail("find-links", f"{printable(url)!r} is not a find-links URL", index=position)
    header = LockHeader(
        colabenv_version=tool.text("colabenv-version", empty=True),
        profile_name=profile_name,
        profile_hash=profile_hash,
        target=target,
        frameworks=tuple(frameworks),
        resolver=tool.text("resolver", empty=True),
        schema=schema,
        constraints=tuple(constraints),
    )
    return header, digest, index_url, extra, links


def parse_pylock(text: str, path: Path | None = None) -> Lock:
    name = printable(path.name) if path else "<lock>"
    pylock = load_pylock(text, name)
    header, digest, index_url, extra, links = _header(pylock, name)
    packages = pylock_packages(pylock, name)
    if not packages:
        raise LockError(f"{name}: packages: the lock pins nothing")
    lock = Lock(header, packages, index_url, extra, path, links)
    check_digest(lock, digest, name)
    return lock
