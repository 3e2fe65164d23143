"""A lock read, parsed or written in either of its forms (:mod:`.requirements`,
:mod:`.pylock`), holding what :mod:`.content` says a lock holds. No I/O but :func:`read_lock`.

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
    # target-accelerator: nvidia           (nvidia, tpu or cpu: what the target lines say)
    # target-tpu: none                     (generation=v5e type=v5e-1 chips=1 on a TPU host)
    # framework: torch 2.6.0 variant=cu124 index=https://download.pytorch.org/whl/cu124
    # constraint: nvidia-cudnn-cu12<9.11  (a bound the pins honour; one line each)
    # resolver: uv 0.8.0
    # pins-sha256: ...                    (of the index lines and every pin with its hashes)

``target-accelerator`` and ``target-tpu`` came with TPU targets; a lock without them (made by
an earlier colabenv) is read as before: its accelerator is what its driver says, and no TPU.
A ``--find-links`` line names a page of links an install needs beside the indexes (the libtpu
of an old jax or torch_xla release).

Index URLs keep their ``${VAR}`` credential references: pip and uv expand them when they
install, and no expanded value is ever written. ``--format pylock`` writes the same facts as a
PEP 751 ``pylock.toml`` (:mod:`.pylock`, the header under ``[tool.colabenv]``).

A lock is read strictly: every value of the header has its shape, every pin is a valid PEP 508
name pinned ``==`` to a valid PEP 440 version with at least one sha256 hash, nothing else is in
the body, and ``pins-sha256`` matches what is there (a truncated or edited lock is refused).
Where the profile is at hand, :func:`~colabenv.lock.fit.unmet_requirements` also holds the pins
to it.

A lock of several named targets (``lock-schema: 3``, :class:`LockFile`) holds one section per
target, each a lock of its own with the header's shared part written once
(:func:`~colabenv.lock.requirements.sectioned_lines`; in PEP 751, one dependency group per
target): :func:`read_lock_file` reads either kind, :func:`read_lock` only a lock of one target,
and :func:`locked_files` lists every file with its section (what a wheelhouse downloads).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from colabenv.errors import InputError, LockError, printable
from colabenv.lock.content import SECTIONED_SCHEMA, Lock, LockFile, LockSection, check_digest
from colabenv.lock.requirements import (
    is_sectioned,
    lock_lines,
    lock_name,
    parse_header,
    parse_requirements,
    parse_sectioned,
    sectioned_lines,
)
from colabenv.models.frozen import model

__all__ = [
    "LockedFileEntry",
    "locked_files",
    "parse_lock",
    "parse_lock_file",
    "read_lock",
    "read_lock_file",
    "render_lock",
    "render_lock_file",
]


def render_lock_file(lock_file: LockFile, *, pylock: bool = False) -> str:
    """A lock file in either form: a lock of one target as :func:`render_lock` writes it, a lock
    of several targets with one section each (schema 3)."""
    if not lock_file.sectioned:
        return render_lock(lock_file.first, pylock=pylock)
    if pylock:
        from colabenv.lock.pylock import sectioned_pylock_text

        return sectioned_pylock_text(lock_file)
    return "\n".join(sectioned_lines(lock_file)) + "\n"


def render_lock(lock: Lock, *, pylock: bool = False) -> str:
    if pylock:
        from colabenv.lock.pylock import pylock_text

        return pylock_text(lock)
    return "\n".join(lock_lines(lock)) + "\n"


def _is_pylock(text: str, path: Path | None) -> bool:
    if path is not None and path.suffix == ".toml":
        return True
    return any(line.startswith("lock-version") for line in text.splitlines()[:20])


def parse_lock_file(text: str, path: Path | None = None) -> LockFile:
    """A lock file in either format: one target (one unnamed section) or several."""
    if _is_pylock(text, path):
        from colabenv.lock.pylock import is_sectioned_pylock, parse_sectioned_pylock

        if is_sectioned_pylock(text, path):
            return parse_sectioned_pylock(text, path)
    elif is_sectioned(text):
        return parse_sectioned(text, path)
    return LockFile((LockSection(None, parse_lock(text, path)),), path)


def parse_lock(text: str, path: Path | None = None) -> Lock:
    """A lock of one target in either format (``pylock.toml`` by suffix or content) as a
    :class:`Lock`; a lock of several targets is refused (:func:`parse_lock_file` reads it)."""
    if _is_pylock(text, path):
        from colabenv.lock.pylock import parse_pylock

        return parse_pylock(text, path)
    if is_sectioned(text):
        raise LockError(
            f"{lock_name(path)}: a lock of several targets (lock-schema {SECTIONED_SCHEMA}); "
            "one section of it is read with its name"
        )
    header, digest = parse_header(text, path)
    packages, index_url, extra, links = parse_requirements(text, path)
    if not packages:
        raise LockError(f"{lock_name(path)}: the lock pins nothing")
    lock = Lock(header, packages, index_url, extra, path, links)
    check_digest(lock, digest, lock_name(path))
    return lock


def read_lock(path: Path) -> Lock:
    """The lock of one target at ``path``: a regular file of at most 64 MiB of UTF-8, read
    strictly."""
    return parse_lock(_lock_text(path), Path(path))


def read_lock_file(path: Path) -> LockFile:
    """The lock file at ``path``, one target or several, read as :func:`read_lock` reads."""
    return parse_lock_file(_lock_text(path), Path(path))


def _lock_text(path: Path) -> str:
    from colabenv._util.files import MAX_INPUT_BYTES, FileProblem, read_limited

    try:
        data = read_limited(Path(path), MAX_INPUT_BYTES)
    except FileProblem as problem:
        raise InputError(f"{printable(path)}: lockfile: {problem}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise LockError(f"{printable(path)}: not a text file (not UTF-8)") from None
    return text


@model
class LockedFileEntry:
    """One file a lock pins, with where it belongs: the section (None in a lock of one
    target), the distribution and version, the file's sha256 and, where the lock records them
    (``pylock.toml``), its name and URL; ``indexes``: the section's index URLs then its
    find-links pages, unexpanded (``${VAR}``), where a file known by its hash alone is found."""

    section: str | None
    name: str
    version: str
    sha256: str
    filename: str | None
    url: str | None
    indexes: tuple[str, ...]


def locked_files(lock_file: LockFile, target: str | None = None) -> Iterator[LockedFileEntry]:
    """Every file of every section (or of the section ``target`` names; LockError when there is
    none of that name), in the lock's order."""
    if target is not None and lock_file.section(target) is None:
        known = ", ".join(lock_file.names) or "none: it is a lock of one target"
        raise LockError(
            f"{lock_name(lock_file.path)}: no section {printable(target)[:40]!r} (sections: {known})"
        )
    for section in lock_file.sections:
        if target is not None and section.name != target:
            continue
        lock = section.lock
        indexes = (*lock.index_urls, *lock.find_links)
        for package in lock.packages:
            for file in package.files:
                yield LockedFileEntry(
                    section.name, package.name, package.version, file.sha256, file.name, file.url, indexes
                )
