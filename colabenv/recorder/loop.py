"""The recorder process (``python -m colabenv.recorder``): one sample each interval into the ring,
until SIGTERM, SIGINT or SIGHUP, or ``max_hours``.

It detaches first (:func:`colabenv._util.processes.detach`), then holds ``watch.lock`` in the
state directory (``flock``, for as long as it lives: a lock dies with its process, so a recycled
pid can never pass for a recorder), moves the last ring aside (``watch.prev.ring``: what a
recorder that died recorded stays readable), creates its ring and writes ``watch.json`` (its
pid, start time in clock ticks, the token its starter gave it). The signals that end it are
blocked and waited for between samples (``sigtimedwait``), so a record is never cut by them.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from colabenv._util import processes
from colabenv._util.bounds import MAX_WATCH_HOURS, MAX_WATCH_INTERVAL_S, MIN_WATCH_INTERVAL_S
from colabenv._util.files import FileProblem, open_own, write_atomic
from colabenv.host.sampler import Sampler, process_identity
from colabenv.models.watch import RingHeader, Sample
from colabenv.recorder.ring import PREVIOUS_RING_NAME, RING_NAME, VERSION, RingWriter, slots_for

LOCK_NAME = "watch.lock"
INFO_NAME = "watch.json"
LOG_NAME = "watch.log"
START_LOCK_NAME = "watch.start.lock"
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
) -> int:
    """Record until a signal of :data:`ENDING` or ``max_hours``; the exit status."""
    signal.pthread_sigmask(signal.SIG_BLOCK, ENDING)
    try:
        lock = hold_lock(state / LOCK_NAME)
    except FileProblem as problem:
        print(f"colabenv watch: {LOCK_NAME}: {problem}", file=sys.stderr)
        return 2
    if lock is None:
        print("colabenv watch: another recorder holds the lock", file=sys.stderr)
        return 3
    ring = state / RING_NAME
    info = state / INFO_NAME
    try:
        if ring.is_file() and not ring.is_symlink():
            os.replace(ring, state / PREVIOUS_RING_NAME)
        started = time.time()
        header = RingHeader(
            VERSION, os.getpid(), sampler.kernel_pid, interval_s, started, slots_for(interval_s)
        )
        writer = RingWriter.create(ring, header, max_hours=max_hours)
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
        write_atomic(info, (json.dumps(facts) + "\n").encode("utf-8"), mode=0o600)
        run = sampler.start()
        try:
            _loop(writer, run.sample, interval_s, max_hours, monotonic)
        finally:
            run.close()
            writer.close()
            if _ours(info, token):
                info.unlink(missing_ok=True)
    finally:
        os.close(lock)
    return 0


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
        return bool(json.loads(info.read_text(encoding="utf-8")).get("token") == token)
    except (OSError, ValueError, AttributeError):
        return False


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(sys.argv[1:] if argv is None else argv)
    if not args.foreground:
        processes.detach()
    sampler = Sampler(kernel_pid=args.kernel, paths=tuple(args.path))
    return record(args.state, sampler, interval_s=args.interval, max_hours=args.max_hours, token=args.token)
