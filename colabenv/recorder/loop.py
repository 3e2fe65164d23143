"""The recorder process (``python -m colabenv.recorder``): one sample each interval into the ring,
until SIGTERM, SIGINT or SIGHUP, or ``max_hours``.

It detaches first (:func:`colabenv._util.processes.detach`), then holds ``watch.lock`` in the
state directory (``flock``, for as long as it lives: a lock dies with its process, so a recycled
pid can never pass for a recorder), moves the last ring aside (``watch.prev.ring``: what a
recorder that died recorded stays readable), creates its ring and writes ``watch.json`` (its
pid, start time in clock ticks, the token its starter gave it). The signals that end it are
blocked and waited for between samples (``sigtimedwait``), so a record is never cut by them.
Given ``--ready-fd N`` (its starter's pipe), it writes one line there once it records (``ready``)
or why it cannot (a full disk named as such), and closes it: the start waits on that line, not
on the disk.
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path

from colabenv._util import processes
from colabenv._util.bounds import MAX_WATCH_HOURS, MAX_WATCH_INTERVAL_S, MIN_WATCH_INTERVAL_S
from colabenv._util.files import FileProblem, open_own, read_own, write_atomic
from colabenv.errors import StateError, printable
from colabenv.host.sampler import Sampler, process_identity
from colabenv.models.watch import RingHeader, Sample
from colabenv.recorder.ring import PREVIOUS_RING_NAME, RING_NAME, VERSION, RingWriter, slots_for

LOCK_NAME = "watch.lock"
INFO_NAME = "watch.json"
LOG_NAME = "watch.log"
START_LOCK_NAME = "watch.start.lock"
INFO_BYTES = 64 * 1024
"""The most of ``watch.json`` that is read: a real one is some 300 bytes."""
ENDING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
LOCK_WAIT_S = 2.0
SYNC_EVERY_S = 30.0
MAX_LOGGED_ERRORS = 10
"""The failed samples ``watch.log`` says, at most: a reader that fails every time must not fill
the disk."""


def _arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m colabenv.recorder")
    parser.add_argument("--state", required=True, type=Path)
    parser.add_argument("--interval", required=True, type=float)
    parser.add_argument("--max-hours", required=True, type=float)
    parser.add_argument("--kernel", required=True, type=int)
    parser.add_argument("--token", required=True)
    parser.add_argument("--path", action="append", default=[])
    parser.add_argument("--foreground", action="store_true", help="do not detach (tests)")
    parser.add_argument("--ready-fd", type=int, default=None, help="the starter's pipe")
    args = parser.parse_args(argv)
    if not MIN_WATCH_INTERVAL_S <= args.interval <= MAX_WATCH_INTERVAL_S:
        parser.error("--interval out of range")
    if not 0 < args.max_hours <= MAX_WATCH_HOURS:
        parser.error("--max-hours out of range")
    return args


def hold_lock(path: Path, wait_s: float = LOCK_WAIT_S) -> int | None:
    """The descriptor of ``path`` locked for this process (``flock``), or None when another
    holds it still after ``wait_s`` (a status check holds it for a moment only)."""
    fd = open_own(path, write=True, create=True)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(0.02)


def record(
    state: Path,
    sampler: Sampler,
    *,
    interval_s: float,
    max_hours: float,
    token: str,
    monotonic: Callable[[], float] = time.monotonic,
    ready_fd: int | None = None,
) -> int:
    """Record until a signal of :data:`ENDING` or ``max_hours``; the exit status. ``ready_fd``
    (the starter's pipe) is told ``ready`` once recording begins, or why it cannot."""
    signal.pthread_sigmask(signal.SIG_BLOCK, ENDING)
    try:
        lock = hold_lock(state / LOCK_NAME)
    except FileProblem as problem:
        return _failed(ready_fd, f"{printable(state / LOCK_NAME)}: {problem}", 2)
    if lock is None:
        return _failed(ready_fd, "another recorder holds the lock", 3)
    info = state / INFO_NAME
    try:
        try:
            writer = _begin(state, sampler, interval_s=interval_s, max_hours=max_hours, token=token)
        except (OSError, FileProblem, StateError) as error:
            return _failed(ready_fd, _why(state, error), 2)
        try:
            run = sampler.start()
            try:
                _tell(ready_fd, "ready")
                _loop(writer, run.sample, interval_s, max_hours, monotonic)
            finally:
                run.close()
        finally:
            writer.close()
            if _ours(info, token):
                info.unlink(missing_ok=True)
    finally:
        os.close(lock)
    return 0


def _begin(state: Path, sampler: Sampler, *, interval_s: float, max_hours: float, token: str) -> RingWriter:
    """The last ring moved aside, a new one, and ``watch.json`` saying who records."""
    ring = state / RING_NAME
    if ring.is_file() and not ring.is_symlink():
        os.replace(ring, state / PREVIOUS_RING_NAME)
    started = time.time()
    header = RingHeader(VERSION, os.getpid(), sampler.kernel_pid, interval_s, started, slots_for(interval_s))
    writer = RingWriter.create(ring, header, max_hours=max_hours)
    try:
        identity = process_identity(os.getpid())
        facts = {
            "pid": os.getpid(),
            "start_ticks": identity[0] if identity else None,
            "token": token,
            "since": started,
            "interval_s": interval_s,
            "max_hours": max_hours,
            "kernel_pid": sampler.kernel_pid,
            "ring": str(ring),
        }
        write_atomic(state / INFO_NAME, (json.dumps(facts) + "\n").encode("utf-8"), mode=0o600)
    except BaseException:
        writer.close()
        raise
    return writer


def _why(state: Path, error: OSError | FileProblem | StateError) -> str:
    """Why the recorder cannot record, in one line: a full disk named as such."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        name = "ENOSPC" if error.errno == errno.ENOSPC else "EDQUOT: over quota"
        return f"{printable(state)}: the state directory's filesystem is full ({name})"
    if isinstance(error, OSError):
        where = printable(error.filename) if error.filename else printable(state)
        return f"{where}: {error.strerror or error}"
    return str(error)


def _failed(ready_fd: int | None, why: str, code: int) -> int:
    """Say ``why`` in the log and to the starter; the exit status ``code``."""
    with suppress(OSError):
        print(f"colabenv watch: {why}", file=sys.stderr, flush=True)
    _tell(ready_fd, why)
    return code


def _tell(ready_fd: int | None, line: str) -> None:
    """Write ``line`` to the starter's pipe and close it (a starter gone: nothing to tell)."""
    if ready_fd is None:
        return
    with suppress(OSError):
        os.write(ready_fd, (line.replace("\n", " ")[:1000] + "\n").encode("utf-8", "replace"))
    with suppress(OSError):
        os.close(ready_fd)


def _loop(
    writer: RingWriter,
    sample: Callable[[], Sample],
    interval_s: float,
    max_hours: float,
    monotonic: Callable[[], float],
) -> int:
    """Sample into ``writer`` every ``interval_s`` until a signal of :data:`ENDING` or
    ``max_hours``; returns how many samples failed. A sample that fails (a bug of a reader) is
    one line in the log, the first :data:`MAX_LOGGED_ERRORS` of them: the recording goes on."""
    begun = monotonic()
    end = begun + max_hours * 3600.0
    due = begun
    synced = begun
    failed = 0
    while True:
        try:
            writer.append(sample())
        except Exception as exc:  # the recorder outlives what one sample does wrong
            failed += 1
            if failed <= MAX_LOGGED_ERRORS:
                print(
                    f"colabenv watch: a sample failed: {type(exc).__name__}: {exc}",
                    file=sys.stderr,
                    flush=True,
                )
        now = monotonic()
        if now - synced >= SYNC_EVERY_S:
            writer.sync()
            synced = now
        due = max(due + interval_s, now)
        if due >= end:
            signal.sigtimedwait(ENDING, max(0.0, end - now))
            return failed
        if signal.sigtimedwait(ENDING, max(0.0, due - now)) is not None:
            return failed


def _ours(info: Path, token: str) -> bool:
    try:
        return bool(json.loads(read_own(info, INFO_BYTES)).get("token") == token)
    except (FileProblem, ValueError, UnicodeDecodeError, AttributeError):
        return False


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(sys.argv[1:] if argv is None else argv)
    if not args.foreground:
        processes.detach()
    sampler = Sampler(kernel_pid=args.kernel, paths=tuple(args.path))
    return record(
        args.state,
        sampler,
        interval_s=args.interval,
        max_hours=args.max_hours,
        token=args.token,
        ready_fd=args.ready_fd,
    )
