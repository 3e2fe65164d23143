"""Start, stop and report on the recorder of a state directory (``colabenv watch``,
``colabenv.watch()``, and ``bootstrap()`` / ``verify()`` when the profile's ``[watch]`` says so).

A recorder runs when ``watch.lock`` is held (the recorder holds it while it lives; nothing else
does for more than a moment); which one is said by ``watch.json``, believed only where the pid's
start time and command line are still the recorder's (:func:`colabenv.host.sampler.process_identity`).
Starts are one at a time (``watch.start.lock``); a start that finds a recorder names it and
starts nothing, unless the kernel that recorder watches is gone and the start comes from
another (the restarted kernel): then it replaces it.

Every watch file is opened by one rule (:func:`colabenv._util.files.open_own`): a regular file
of this user, never through a link, never a wait on a FIFO; one that is not is a one-line
StateError naming it. A start waits for the recorder's own word (a pipe: ``ready``, or why not),
so one that cannot record (a full disk) fails at once, saying why.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from colabenv._util import processes
from colabenv._util.bounds import (
    MAX_WATCH_HOURS,
    MAX_WATCH_INTERVAL_S,
    MAX_WATCH_PATHS,
    MIN_WATCH_INTERVAL_S,
    finite_number,
)
from colabenv._util.files import FileProblem, open_own, read_own
from colabenv.errors import StateError, UsageError, printable
from colabenv.host.sampler import process_identity, watched_paths
from colabenv.models.profile import WatchSettings
from colabenv.models.watch import WatchStatus
from colabenv.recorder.loop import INFO_BYTES, INFO_NAME, LOCK_NAME, LOG_NAME, START_LOCK_NAME
from colabenv.script.state import state_dir

DEFAULT_INTERVAL_S = 2.0
DEFAULT_MAX_HOURS = 24.0
START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 10.0
RECORDER_MODULE = "colabenv.recorder"
LOG_BYTES = 1 << 20
READY = "ready"
CWD_GONE = "the working directory was deleted: the recorder watches /tmp and the state directory only"


def _held(path: Path) -> bool:
    """Whether another process holds ``path`` locked (a recorder lives)."""
    try:
        fd = open_own(path)
    except FileProblem:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _info(state: Path) -> dict[str, object]:
    try:
        data = json.loads(read_own(state / INFO_NAME, INFO_BYTES))
    except (FileProblem, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 31 else None


def _is_recorder(pid: int, start_ticks: object) -> bool:
    """Whether ``pid`` is still the recorder ``watch.json`` names (not a recycled pid)."""
    identity = process_identity(pid)
    return identity is not None and identity[0] == start_ticks and RECORDER_MODULE in identity[1]


def status(state: Path) -> WatchStatus:
    """The recorder of ``state``, or ``running`` False."""
    if not _held(state / LOCK_NAME):
        return WatchStatus(running=False)
    info = _info(state)
    pid = _int(info.get("pid"))
    if pid is None or not _is_recorder(pid, info.get("start_ticks")):
        return WatchStatus(running=True)
    ring = info.get("ring")
    return WatchStatus(
        running=True,
        pid=pid,
        since=finite_number(info.get("since")),
        interval_s=finite_number(info.get("interval_s")),
        max_hours=finite_number(info.get("max_hours")),
        kernel_pid=_int(info.get("kernel_pid")),
        ring=ring if isinstance(ring, str) else None,
    )


def checked_settings(
    interval_s: float, max_hours: float, paths: Sequence[str], where: str
) -> tuple[str, ...]:
    """The watched paths, absolute; UsageError naming ``where`` (``watch start``) for a value
    out of range or a path that is no directory."""
    if not MIN_WATCH_INTERVAL_S <= interval_s <= MAX_WATCH_INTERVAL_S:
        raise UsageError(
            f"{where}: --interval: expected seconds from {MIN_WATCH_INTERVAL_S:g} to {MAX_WATCH_INTERVAL_S:g}"
        )
    if not 0 < max_hours <= MAX_WATCH_HOURS:
        raise UsageError(f"{where}: --max-hours: expected more than 0 and at most {MAX_WATCH_HOURS:g}")
    if len(paths) > MAX_WATCH_PATHS:
        raise UsageError(f"{where}: --path: at most {MAX_WATCH_PATHS} paths")
    absolute = []
    for path in paths:
        if "\0" in path or not os.path.isdir(path):
            raise UsageError(f"{where}: --path: {printable(path)} is not a directory")
        absolute.append(os.path.abspath(path))
    return tuple(absolute)


def start(
    state: Path,
    *,
    kernel_pid: int,
    interval_s: float = DEFAULT_INTERVAL_S,
    max_hours: float = DEFAULT_MAX_HOURS,
    paths: Sequence[str] = (),
    python: str | None = None,
) -> tuple[WatchStatus, bool]:
    """The recorder of ``state``, started unless one runs: ``(its status, whether this call
    started it)``. A recorder whose kernel is gone (an OOM kill, a restart) is replaced when the
    start comes from another kernel: what it recorded stays in the previous ring. StateError
    when it could not be started (the last line of its log said)."""
    if not sys.platform.startswith("linux"):
        raise UsageError("watch start: the recorder runs on Linux only (it reads /proc)")
    given = checked_settings(interval_s, max_hours, paths, "watch start")
    try:
        state.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as error:
        raise StateError(
            f"{printable(state)}: cannot make the state directory: {error.strerror or error}"
        ) from None
    try:
        gate = open_own(state / START_LOCK_NAME, write=True, create=True)
    except FileProblem as problem:
        raise StateError(f"{printable(state / START_LOCK_NAME)}: {problem}") from None
    try:
        fcntl.flock(gate, fcntl.LOCK_EX)
        found = status(state)
        if found.running and not _orphaned(found, kernel_pid):
            return found, False
        if found.running:
            stop_recorder(state)
        token = os.urandom(8).hex()
        watched = watched_paths(given, state, working_directory())
        argv = [
            python or sys.executable,
            "-m",
            RECORDER_MODULE,
            "--state",
            str(state),
            "--interval",
            repr(float(interval_s)),
            "--max-hours",
            repr(float(max_hours)),
            "--kernel",
            str(kernel_pid),
            "--token",
            token,
        ]
        for path in watched:
            argv += ["--path", path]
        _launch(state, argv)
        return _wait_started(state, token), True
    finally:
        os.close(gate)


def _launch(state: Path, argv: list[str]) -> None:
    """Start the recorder, its output to ``watch.log`` (a regular file of this user, emptied),
    and wait for its word; StateError, at once, saying why it did not start."""
    log_path = state / LOG_NAME
    try:
        log = open_own(log_path, write=True, create=True, truncate=True)
    except FileProblem as problem:
        raise StateError(f"watch start: {printable(log_path)}: {problem}") from None
    try:
        started = processes.start_detached(
            argv, timeout=START_TIMEOUT_S, log=log, cwd=state, ready_flag="--ready-fd"
        )
    finally:
        os.close(log)
    if started.returncode != 0 or started.report == "":
        raise StateError(f"watch start: the recorder did not start ({_last_log_line(state)})")
    if started.report is None:
        raise StateError(
            f"watch start: the recorder did not say it was ready within {START_TIMEOUT_S:g} s "
            f"({_last_log_line(state)})"
        )
    if started.report != READY:
        raise StateError(f"watch start: the recorder did not start: {printable(started.report[:300])}")


def working_directory() -> Path | None:
    """The current directory; None when it was deleted (or cannot be known)."""
    try:
        return Path.cwd()
    except OSError:
        return None


def cwd_note(paths: Sequence[str]) -> str | None:
    """What a start with ``paths`` watches less than it says it does: the current directory,
    the default, when it was deleted (:data:`CWD_GONE`); else None."""
    if paths or working_directory() is not None:
        return None
    return CWD_GONE if watched_paths((), Path("/"), None)[0] == "/tmp" else None


def _orphaned(found: WatchStatus, kernel_pid: int) -> bool:
    """Whether a running recorder watches a kernel that is gone (killed, restarted) while this
    start comes from another: it is replaced, its ring kept as the previous one."""
    return (
        found.pid is not None
        and found.kernel_pid is not None
        and found.kernel_pid != kernel_pid
        and process_identity(found.kernel_pid) is None
    )


def _wait_started(state: Path, token: str) -> WatchStatus:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if _info(state).get("token") == token:
            found = status(state)
            if found.running and found.pid is not None:
                return found
        time.sleep(0.02)
    raise StateError(f"watch start: the recorder did not start ({_last_log_line(state)})")


def _last_log_line(state: Path) -> str:
    try:
        text = read_own(state / LOG_NAME, LOG_BYTES).decode("utf-8", "replace")
    except FileProblem:
        return "no log"
    lines = [line for line in text.splitlines() if line.strip()]
    return printable(lines[-1][:300]) if lines else f"nothing in {LOG_NAME}"


def stop_recorder(state: Path, timeout: float = STOP_TIMEOUT_S) -> WatchStatus:
    """End the recorder of ``state`` (SIGTERM, then SIGKILL after ``timeout``); returns the
    status it had (``running`` False: there was none)."""
    found = status(state)
    if not found.running or found.pid is None:
        return found
    info = _info(state)
    if not _is_recorder(found.pid, info.get("start_ticks")):
        return WatchStatus(running=False)
    os.kill(found.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _held(state / LOCK_NAME):
        if time.monotonic() >= deadline:
            if _is_recorder(found.pid, info.get("start_ticks")):
                os.kill(found.pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    return found


def kernel_pid(*, from_command: bool) -> int:
    """The process a recorder samples the family of: the IPython kernel this runs in or under;
    else, from the command line, the process that ran ``colabenv`` (a shell, a script), and from
    Python this interpreter."""
    from colabenv.host.started import restarted_process

    pid, kind = restarted_process()
    if kind == "kernel" or not from_command:
        return pid
    return os.getppid()


def start_here(
    *,
    interval_s: float = DEFAULT_INTERVAL_S,
    max_hours: float = DEFAULT_MAX_HOURS,
    paths: Sequence[str] = (),
    stop: bool = False,
) -> WatchStatus:
    """``colabenv.watch()``: the recorder of the state directory, started from Python (the
    kernel it watches is the IPython kernel this runs in, else this interpreter); ``stop``
    ends it instead."""
    state = state_dir()
    if stop:
        return stop_recorder(state)
    found, _ = start(
        state,
        kernel_pid=kernel_pid(from_command=False),
        interval_s=interval_s,
        max_hours=max_hours,
        paths=paths,
    )
    return found


def start_for_profile(settings: WatchSettings) -> WatchStatus | None:
    """What ``bootstrap()`` and ``verify()`` do with a profile's ``[watch]``: start the recorder
    when ``enabled``, else nothing (None). The kernel watched is as for ``watch start`` when
    this runs as the command (``colabenv verify --profile``), else as for ``colabenv.watch()``."""
    if not settings.enabled:
        return None
    state = state_dir()
    found, _ = start(
        state,
        kernel_pid=kernel_pid(from_command="colabenv.cli.main" in sys.modules),
        interval_s=settings.interval_s,
        max_hours=settings.max_hours,
    )
    return found
