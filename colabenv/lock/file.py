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
Where the profile is at hand, :func:`unmet_requirements` also holds the pins to it.
"""

from __future__ import annotations

from pathlib import Path

from colabenv.errors import InputError, LockError, printable
from colabenv.lock.content import (
    LOCK_SCHEMA,
    READABLE_SCHEMAS,
    HeaderWord,
    Lock,
    LockedFile,
    LockedPackage,
    LockHeader,
    LockTarget,
    check_digest,
    new_package,
)
from colabenv.lock.fit import (
    check_satisfies,
    current_target,
    settled_markers,
    stale_reasons,
    unmet_requirements,
)
from colabenv.lock.requirements import lock_lines, lock_name, parse_header, parse_requirements
from colabenv.models import LockedFramework

__all__ = [
    "LOCK_SCHEMA",
    "READABLE_SCHEMAS",
    "HeaderWord",
    "Lock",
    "LockHeader",
    "LockTarget",
    "LockedFile",
    "LockedFramework",
    "LockedPackage",
    "check_satisfies",
    "current_target",
    "lock_lines",
    "new_package",
    "parse_lock",
    "parse_requirements",
    "read_lock",
    "render_lock",
    "settled_markers",
    "stale_reasons",
    "unmet_requirements",
]


def render_lock(lock: Lock, *, pylock: bool = False) -> str:
    if pylock:
        from colabenv.lock.pylock import pylock_text

        return pylock_text(lock)
    return "\n".join(lock_lines(lock)) + "\n"


def _is_pylock(text: str, path: Path | None) -> bool:
    if path is not None and path.suffix == ".toml":
        return True
    return any(line.startswith("lock-version") for line in text.splitlines()[:20])


def parse_lock(text: str, path: Path | None = None) -> Lock:
    """A lock in either format (``pylock.toml`` by suffix or content) as a :class:`Lock`."""
    if _is_pylock(text, path):
        from colabenv.lock.pylock import parse_pylock

        return parse_pylock(text, path)
    header, digest = parse_header(text, path)
    packages, index_url, extra, links = parse_requirements(text, path)
    if not packages:
        raise LockError(f"{lock_name(path)}: the lock pins nothing")
    lock = Lock(header, packages, index_url, extra, path, links)
    check_digest(lock, digest, lock_name(path))
    return lock


def read_lock(path: Path) -> Lock:
    """The lock at ``path``: a regular file of at most 64 MiB of UTF-8, read strictly."""
    from colabenv._util.files import MAX_INPUT_BYTES, FileProblem, read_limited

    try:
        data = read_limited(Path(path), MAX_INPUT_BYTES)
    except FileProblem as problem:
        raise InputError(f"{printable(path)}: lockfile: {problem}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise LockError(f"{printable(path)}: not a text file (not UTF-8)") from None
    return parse_lock(text, Path(path))
