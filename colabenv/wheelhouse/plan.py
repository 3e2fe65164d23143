"""Which wheel of each pin a lock's target installs, and what a wheelhouse's manifest says. No
I/O: the files a lock names, the index's answers and the folder's contents are given.

:func:`lock_sections` is the one place a lock's pins are listed for a wheelhouse: a lock of one
target is one section; a lock with one section per target lists each (``--target NAME`` picks one).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence

from packaging.markers import Marker
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from colabenv.errors import LockError, UsageError, printable
from colabenv.lock.content import Lock, LockedPackage, LockFile, LockTarget
from colabenv.lock.wheel_tags import WHEELHOUSE_GLIBC_MINOR, interpreter_tags
from colabenv.models.frozen import model

MANIFEST_NAME = "colabenv-wheelhouse.json"
README_NAME = "README.md"
MANIFEST_SCHEMA = 1
MAX_MANIFEST_BYTES = 16 << 20


@model
class Section:
    """The pins one target of a lock installs (``packages``: those whose marker holds there),
    with that target's lock (its indexes, find-links pages, pins digest): ``name`` None for a
    lock of one target."""

    name: str | None
    lock: Lock
    packages: tuple[LockedPackage, ...]

    @property
    def target(self) -> LockTarget:
        return self.lock.header.target


@model
class Wanted:
    """One wheel a wheelhouse holds: the file, the pin it serves, where it comes from."""

    filename: str
    name: str
    version: str
    sha256: str
    url: str
    sections: tuple[str, ...]
    size: int | None = None
    """The file's size in bytes as the lock records it (a pylock's ``size``); None: not recorded."""


def lock_sections(lock_file: LockFile, target: str | None) -> tuple[Section, ...]:
    """The sections of ``lock_file`` to bundle (all, or the one ``target`` names), each with the
    pins whose marker holds on its target.

    A lock of one target is one section named None, which no ``--target`` names: UsageError
    listing the sections (none there) as :func:`colabenv.lock.file.locked_files` words it.
    """
    if target is None:
        return tuple(applying(s.name, s.lock) for s in lock_file.sections)
    for section in lock_file.sections:
        if section.name is not None and section.name == target:
            return (applying(section.name, section.lock),)
    where = printable(lock_file.path.name) if lock_file.path else "<lock>"
    known = ", ".join(lock_file.names) or "none: it is a lock of one target"
    raise UsageError(f"{where}: no section {printable(target)[:40]!r} (sections: {known})")


def applying(name: str | None, lock: Lock) -> Section:
    """The section of ``lock`` named ``name``, with the pins whose marker holds on its target."""
    environment = lock.header.target.marker_environment()
    packages = tuple(
        p for p in lock.packages if p.marker is None or Marker(p.marker).evaluate(dict(environment))
    )
    return Section(name, lock, packages)


def target_tags(target: LockTarget) -> tuple[str, ...]:
    """The wheel tags an interpreter of ``target`` installs, most specific first (CPython;
    manylinux up to glibc 2.40)."""
    try:
        major, minor = (int(part) for part in target.python.split(".")[:2])
    except ValueError:
        raise LockError(f"target-python {printable(target.python)} is not X.Y") from None
    tags = interpreter_tags((major, minor), target.platform, WHEELHOUSE_GLIBC_MINOR)
    return tuple(str(tag) for tag in tags)


def wheel_pin(filename: str) -> tuple[str, str] | None:
    """(canonical name, normalized version) a wheel's file name says, or None: not a wheel."""
    try:
        name, version, _build, _tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, ValueError):
        return None
    return str(name), str(version)


def choose_wheel(
    package: LockedPackage, files: Mapping[str, tuple[str, str]], tags: Sequence[str]
) -> tuple[str, str, str] | None:
    """(file name, URL, sha256) of the best wheel of ``package`` for ``tags``: among the files
    whose sha256 the lock records (``files`` maps a sha256 to its name and URL), the one whose
    most specific tag comes first; None when none fits."""
    from colabenv._target.wheelhouse import wheel_file_pin

    rank = {tag: position for position, tag in enumerate(tags)}
    best: tuple[int, str, str, str] | None = None
    for locked in package.files:
        known = files.get(locked.sha256)
        if known is None or wheel_file_pin(known[0]) is None:  # the fill's rule: no path, no hidden name
            continue
        filename, url = known
        try:
            name, version, _build, wheel_tags = parse_wheel_filename(filename)
        except (InvalidWheelFilename, ValueError):
            continue
        if name != package.name or str(version) != package.version:
            continue
        score = min((rank[str(t)] for t in wheel_tags if str(t) in rank), default=None)
        if score is not None and (best is None or score < best[0]):
            best = (score, filename, url, locked.sha256)
    return None if best is None else best[1:]


def recorded_size(package: LockedPackage, sha256: str) -> int | None:
    """The size the lock records for the file of ``package`` with ``sha256``, if any."""
    return next((f.size for f in package.files if f.sha256 == sha256 and f.size is not None), None)


def merge(wanted: Iterable[Wanted]) -> tuple[Wanted, ...]:
    """One entry per file, with every section that installs it, sorted by file name."""
    by_file: dict[str, Wanted] = {}
    for item in wanted:
        seen = by_file.get(item.filename)
        if seen is None:
            by_file[item.filename] = item
        elif seen.sha256 != item.sha256:
            raise LockError(f"{printable(item.filename)}: two sha256 hashes in the lock for one file name")
        else:
            sections = tuple(dict.fromkeys((*seen.sections, *item.sections)))
            by_file[item.filename] = dataclasses.replace(seen, sections=sections)
    return tuple(by_file[name] for name in sorted(by_file))


def section_label(section: Section) -> str:
    return section.name or "default"


def manifest_text(lock_name: str, sections: Sequence[Section], wanted: Sequence[Wanted]) -> str:
    """The manifest (docs/formats.md, "The wheelhouse manifest"): JSON, keys sorted, one file a
    line's worth of object; URLs as given (credentials already stripped and redacted)."""
    document = {
        "schema": MANIFEST_SCHEMA,
        "lock": lock_name,
        "sections": [
            {
                "name": section_label(s),
                "pins_sha256": s.lock.pins_digest,
                "python": s.target.python,
                "platform": s.target.platform,
                "accelerator": s.target.accelerator.value,
                "driver": s.target.driver,
                "compute_capabilities": list(s.target.compute_capabilities),
            }
            for s in sections
        ],
        "files": [
            {
                "file": w.filename,
                "name": w.name,
                "version": w.version,
                "sha256": w.sha256,
                "url": w.url,
                "sections": list(w.sections),
            }
            for w in wanted
        ],
    }
    return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=True) + "\n"


def readme_text(lock_name: str, count: int) -> str:
    """What a person (or a Kaggle Dataset page) reads about the folder."""
    return (
        f"# colabenv wheelhouse of {lock_name}\n\n"
        f"{count} wheels, each checked against the lock's sha256 (listed in {MANIFEST_NAME}).\n\n"
        "Kaggle with the internet off: render the script where colabenv is installed, naming the\n"
        "folder as Kaggle will mount the Dataset, and put it in the folder:\n\n"
        f"    colabenv render PROFILE --lock {lock_name} --wheelhouse /kaggle/input/DATASET -o setup.sh\n\n"
        "Upload the folder as a Dataset (`kaggle datasets create -p FOLDER`, or New Dataset on the\n"
        "site), attach it to the notebook (Add Input), and run in a cell:\n\n"
        "    !bash /kaggle/input/DATASET/setup.sh\n\n"
        "The script installs only from the Dataset, with no index, after checking every wheel's\n"
        "sha256 against the lock.\n"
    )


def canonical(name: str) -> str:
    return str(canonicalize_name(name))
