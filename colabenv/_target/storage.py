"""The child side of ``colabenv verify``'s ``io:<path>`` checks: write and read throughput.

Run as ``python _iocheck.py FILE SIZE_BYTES DEADLINE_S`` (by path: the interpreter checked need
not have colabenv). It creates FILE (which must not exist), writes up to SIZE_BYTES of random
data and fsyncs it, then reads it back the way a data loader's first epoch does: not from the
page cache. The cache is bypassed with ``O_DIRECT`` where the filesystem allows it, else dropped
for the file with ``posix_fadvise(DONTNEED)`` after the fsync; a read the cache may still have
served (tmpfs keeps its pages in memory, which is its real speed) says so. A cached read
measures memory, not the disk: that is the mistake of timing ``open(f).read()`` right after
writing f.

Both phases stop early at their share of DEADLINE_S and report what they moved. One JSON line
starting with ``COLABENV_IO`` is the result, on stdout. The file is removed at the end; the
parent removes it too if this process is killed, since it chose the name.

Standard library only; runs on Python 3.8 and newer.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import sys
import time
from typing import Any

PREFIX = "COLABENV_IO "
CHUNK = 4 * 1024 * 1024
WRITE_SHARE = 0.5


def _emit(result: dict[str, Any]) -> None:
    sys.stdout.write("\n" + PREFIX + json.dumps(result, sort_keys=True) + "\n")
    sys.stdout.flush()


def _mib_per_s(count: int, seconds: float) -> float:
    return round(count / (1024 * 1024) / max(seconds, 1e-6), 1)


def _create(path: str) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)


def _write(fd: int, size: int, until: float) -> int:
    block = os.urandom(CHUNK)
    written = 0
    try:
        while written < size and time.monotonic() < until:
            view = memoryview(block)[: min(CHUNK, size - written)]
            while view:
                count = os.write(fd, view)
                view = view[count:]
                written += count
        os.fsync(fd)
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return written


def _read_direct(path: str, until: float) -> int:
    """Read with O_DIRECT into a page-aligned buffer; OSError where the filesystem refuses."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        raise OSError("no O_DIRECT on this platform")
    fd = os.open(path, os.O_RDONLY | flag)
    buffer = mmap.mmap(-1, CHUNK)
    total = 0
    try:
        while time.monotonic() < until:
            count = os.readv(fd, [buffer])
            if count <= 0:
                break
            total += count
    finally:
        buffer.close()
        os.close(fd)
    return total


def _read_plain(path: str, until: float) -> int:
    fd = os.open(path, os.O_RDONLY)
    total = 0
    try:
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while time.monotonic() < until:
            data = os.read(fd, CHUNK)
            if not data:
                break
            total += len(data)
    finally:
        os.close(fd)
    return total


def _filesystem(path: str) -> str:
    """The filesystem type of the mount holding ``path`` (from /proc/self/mounts), or ""."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as handle:
            mounts = [line.split() for line in handle]
    except OSError:
        return ""
    best, kind = "", ""
    real = os.path.realpath(path)
    for fields in mounts:
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind


def measure(path: str, size: int, deadline_s: float) -> dict[str, Any]:
    directory = os.path.dirname(path) or "."
    result: dict[str, Any] = {"file": path, "filesystem": _filesystem(directory)}
    if not os.path.isdir(directory):
        result["error"] = "does not exist" if not os.path.exists(directory) else "not a directory"
        return result
    started = time.monotonic()
    write_until = started + deadline_s * WRITE_SHARE
    try:
        fd = _create(path)
    except OSError as exc:
        result["error"] = "cannot write: " + (exc.strerror or str(exc))
        result["errno"] = exc.errno
        return result
    try:
        try:
            before = time.monotonic()
            written = _write(fd, size, write_until)
            write_s = time.monotonic() - before
        except OSError as exc:
            result["error"] = "cannot write: " + (exc.strerror or str(exc))
            return result
        result.update(
            written_bytes=written, write_s=round(write_s, 3), write_mib_s=_mib_per_s(written, write_s)
        )
        read_until = started + deadline_s * 0.95
        notes: list[str] = []
        before = time.monotonic()
        try:
            read = _read_direct(path, read_until)
            method = "O_DIRECT"
        except OSError:
            before = time.monotonic()
            read = _read_plain(path, read_until)
            method = "posix_fadvise(DONTNEED)"
        read_s = time.monotonic() - before
        if result["filesystem"] in ("tmpfs", "ramfs"):
            notes.append("a memory filesystem: its pages are its storage, so reads run at memory speed")
        result.update(
            read_bytes=read,
            read_s=round(read_s, 3),
            read_mib_s=_mib_per_s(read, read_s),
            read_method=method,
            notes=notes,
            partial=written < size or read < written,
        )
        return result
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        sys.stderr.write("usage: _iocheck.py FILE SIZE_BYTES DEADLINE_S\n")
        return 2
    path, size_text, deadline_text = argv
    try:
        size = int(size_text)
        deadline = float(deadline_text)
    except ValueError:
        sys.stderr.write("SIZE_BYTES and DEADLINE_S must be numbers\n")
        return 2
    if not (0 < size <= 1 << 40) or not (0 < deadline <= 86400):
        sys.stderr.write("SIZE_BYTES or DEADLINE_S out of range\n")
        return 2
    _emit(measure(path, size, deadline))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
