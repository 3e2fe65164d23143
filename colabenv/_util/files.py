"""Files colabenv reads and writes: bounded reads of regular files, outputs that never replace
a device, a link or a directory, and temporary-then-rename writes that are whole or absent.

Reading: :func:`read_limited` opens a path only if it is a regular file (or a link to one),
without blocking on a FIFO, and reads at most a stated number of bytes, so ``/dev/zero``, a FIFO
or a huge file is refused at once instead of hanging or filling memory.

Writing: :func:`write_output` is what ``-o FILE`` means everywhere. A regular file, or a link to
one, is replaced atomically at its real path (the link stays a link); a character device, a
FIFO or a ``/dev/stdout``-style path is opened and written through, never renamed over; a
directory, a block device or a socket is refused.

Own files: :func:`open_own` and :func:`read_own` are the rule for the files colabenv keeps for
itself in a state directory (every watch file): a regular file of this user, never through a
link, never a wait on a FIFO.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

MIB = 1024 * 1024
MAX_INPUT_BYTES = 64 * MIB
"""The default bound on a file colabenv reads: a freeze, lock or fingerprint of 64 MiB is far
beyond any real one."""

_WRITE_THROUGH_PREFIXES = ("/dev/", "/proc/")


class FileProblem(Exception):
    """Why a path cannot be read or written, in words for a one-line message (no path in it)."""


def read_limited(path: Path, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file at ``path`` (links followed), at most ``limit`` of them.

    Raises :class:`FileProblem` for a path that does not exist, is not a regular file, cannot
    be read, or holds more than ``limit`` bytes.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise FileProblem(_reason(error)) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise FileProblem("is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise FileProblem(f"is {_kind(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise FileProblem(f"is {_size(info.st_size)}; at most {_size(limit)} is read")
        return _read_at_most(fd, limit)
    except OSError as error:
        raise FileProblem(_reason(error)) from None
    finally:
        os.close(fd)


def _read_at_most(fd: int, limit: int) -> bytes:
    """What is left to read of ``fd``; FileProblem past ``limit`` bytes (a file that grew)."""
    chunks: list[bytes] = []
    remaining = limit + 1
    while remaining > 0:
        chunk = os.read(fd, min(remaining, MIB))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    if remaining <= 0:
        raise FileProblem(f"is larger than {_size(limit)}; at most that is read")
    return b"".join(chunks)


def write_output(
    path: Path,
    data: bytes,
    *,
    mode: int | None = None,
    exclusive: bool = False,
    validate: Callable[[Path], None] | None = None,
) -> Path:
    """Write ``data`` where ``path`` points, the way ``-o`` promises; returns the path written.

    A regular file, a link to one, or a new name: :func:`write_atomic` at the real path, so a
    link keeps pointing at the new file. A character device, a FIFO, or a path under ``/dev/``
    or ``/proc/`` (``/dev/stdout``, ``/dev/null``): opened and written, nothing renamed over it
    (``exclusive`` and ``validate`` do not apply there: there is nothing to keep or check).
    Raises :class:`FileProblem` for a directory, a block device, a socket, a missing directory,
    and for what the system refuses; FileExistsError when ``exclusive`` finds a file.
    """
    try:
        info: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise FileProblem(_reason(error)) from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise FileProblem("is a directory")
        through = stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode)
        if through or _is_special_path(path):
            if exclusive and not through:
                raise FileExistsError(errno.EEXIST, "exists", str(path))
            _write_through(path, data)
            return path
        if not stat.S_ISREG(info.st_mode):
            raise FileProblem(f"is {_kind(info.st_mode)}; colabenv writes only regular files")
    real = Path(os.path.realpath(path))
    if not real.parent.is_dir():
        raise FileProblem(f"directory {real.parent} does not exist")
    try:
        write_atomic(real, data, mode=mode, exclusive=exclusive, validate=validate)
    except FileExistsError:
        raise
    except OSError as error:
        raise FileProblem(_reason(error)) from None
    return real


def write_atomic(
    path: Path,
    data: bytes,
    *,
    mode: int | None = None,
    exclusive: bool = False,
    validate: Callable[[Path], None] | None = None,
) -> None:
    """Write ``data`` to ``path`` via a temporary file beside it: never half-written.

    ``validate`` sees the temporary file before it takes the name (an error leaves ``path`` as it
    was); ``exclusive`` refuses to replace an existing file (FileExistsError); ``mode`` defaults
    to the existing file's, else 0o644. Failures are OSError; the temporary file is removed.
    ``path`` is taken as it is: callers that were given a link resolve it first
    (:func:`write_output`).
    """
    fd, tmp = _create_beside(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if validate is not None:
            validate(tmp)
        if mode is None:
            mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
        os.chmod(tmp, mode)
        if exclusive:
            os.link(tmp, path)
        else:
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _is_special_path(path: Path) -> bool:
    text = os.path.abspath(path)
    return text.startswith(_WRITE_THROUGH_PREFIXES)


def _write_through(path: Path, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise FileProblem(_reason(error)) from None
    try:
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                os.ftruncate(fd, 0)
        except OSError:
            pass
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except OSError as error:
        raise FileProblem(_reason(error)) from None
    finally:
        os.close(fd)


def _create_beside(path: Path) -> tuple[int, Path]:
    """A new, empty, private file next to ``path``, named after it and this process.

    What :func:`tempfile.mkstemp` does, without importing tempfile (and with it shutil, random
    and the compression modules) on the path of ``colabenv render -o``.
    """
    directory = path.parent if str(path.parent) else Path(".")
    for attempt in range(100):
        candidate = directory / f".{path.stem}.{os.getpid()}.{attempt}{path.suffix}"
        try:
            return os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), candidate
        except FileExistsError:
            continue
    raise OSError(f"no free temporary name beside {path.name}")


def _reason(error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        return "no such file or directory"
    if error.errno == errno.ELOOP:
        return "is a loop of symbolic links"
    text = error.strerror or str(error) or type(error).__name__
    return text[:1].lower() + text[1:]


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _size(count: int) -> str:
    if count >= MIB:
        return f"{count / MIB:.0f} MiB"
    return f"{count} bytes"


# ---------------------------------------------------------------------------------------------
# Files colabenv keeps for itself (the watch ring, its lock, its log, watch.json): its own only


def open_own(
    path: Path,
    *,
    write: bool = False,
    create: bool = False,
    truncate: bool = False,
    limit: int | None = None,
) -> int:
    """A descriptor of ``path``, which must be a regular file owned by this user and no link
    (never followed, even as the last part), at most ``limit`` bytes; opened for reading and
    writing when ``write`` (created, private, when ``create``; emptied, once it passed those
    checks, when ``truncate``). Never blocks: a FIFO is refused, not waited on. What a file
    updated in place needs, where :func:`write_atomic` cannot serve: a ring written slot by
    slot, a lock held while a process lives, a log. Raises :class:`FileProblem` with the reason."""
    flags = os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NOFOLLOW", 0)
    flags |= os.O_RDWR if write else os.O_RDONLY
    if create:
        flags |= os.O_CREAT
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise FileProblem("is a symbolic link; colabenv reads and updates only its own files") from None
        raise FileProblem(_reason(error)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileProblem(f"is {_kind(info.st_mode)}, not a regular file")
        if info.st_uid != os.geteuid():
            raise FileProblem(f"is owned by user {info.st_uid}, not by this user ({os.geteuid()})")
        if limit is not None and info.st_size > limit:
            raise FileProblem(f"is {_size(info.st_size)}; at most {_size(limit)} is read")
        if truncate and write:
            os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
    except OSError as error:
        os.close(fd)
        raise FileProblem(_reason(error)) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_own(path: Path, limit: int) -> bytes:
    """The bytes of ``path`` by the rule of :func:`open_own` (a regular file of this user, no
    link, never a wait on a FIFO), at most ``limit`` of them. Raises :class:`FileProblem`."""
    fd = open_own(path, limit=limit)
    try:
        return _read_at_most(fd, limit)
    except OSError as error:
        raise FileProblem(_reason(error)) from None
    finally:
        os.close(fd)
