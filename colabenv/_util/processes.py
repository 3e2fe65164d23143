"""The one place that starts processes: argv lists, never a shell, always a timeout.

Every child starts in its own session, so a signal meant for colabenv never reaches it and
ending it ends what it started (its process group is killed). Its output is read as it comes
and only a bounded tail of each stream is kept (a child that prints without end costs
``keep_bytes``, not memory without bound); ``memory_bytes`` bounds the address space of the
child and of everything it starts (``RLIMIT_AS``, inherited), or, given ``resident`` (the
resident memory of a process group, as :class:`colabenv.host.proctree.GroupResident` reads
it), the resident memory of its process group together: a watchdog samples it every
:data:`_WATCH_S` and kills the group past the bound, and the address space of each process is
bounded at :data:`ADDRESS_FACTOR` times it, a backstop only (a program reserves address space
it never uses, and a program that reads a page without end reaches an address-space bound
holding most of it). A run that is interrupted
(``KeyboardInterrupt``, or the SIGTERM a command turns into one) kills its child's group before
the interruption goes on; :func:`ended_on_interrupt` lets the main thread end the children that
worker threads are waiting for.
"""

from __future__ import annotations

import codecs
import io
import os
import resource
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Protocol

from colabenv.errors import ProcessError
from colabenv.models.frozen import model

KEEP_BYTES = 1 << 20
"""What :func:`run` keeps of each stream by default: its last MiB."""
_READ = 1 << 16
_DRAIN_S = 2.0
_AFTER_EXIT_S = 1.0
"""How long the streams are still read once the child has exited: a process it started (a
helper an imported module left running) may keep them open for as long as it lives."""
_POLL_S = 0.1
"""How often a run whose streams are still open looks whether its child has exited."""
_WATCH_S = 0.02
"""How often the memory watchdog sums the resident memory of a child's process group: a reader
of a page without end grows by tens of MiB in that time."""
ADDRESS_FACTOR = 4
"""With a watched group, each process's address space is bounded at this many times the
group's resident bound."""


@model
class Completed:
    """``stdout_dropped``, ``stderr_dropped``: bytes the child wrote before the tail kept."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    stdout_dropped: int = 0
    stderr_dropped: int = 0
    memory_exceeded: bool = False
    """The group's resident memory went past ``memory_bytes``: it was killed."""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


class _Tail:
    """The last ``keep`` bytes of a stream, and how many came before them."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.data = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > 2 * self.keep:
            self._trim()

    def _trim(self) -> None:
        extra = len(self.data) - self.keep
        if extra > 0:
            del self.data[:extra]
            self.dropped += extra

    def text(self) -> str:
        self._trim()
        return self.data.decode("utf-8", errors="replace")


class _Children:
    """The children running now; while ``ending``, no new one starts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: set[subprocess.Popen[bytes]] = set()
        self.ending = False


_CHILDREN = _Children()


@contextmanager
def ended_on_interrupt() -> Iterator[Callable[[], None]]:
    """Yields ``end()``: it kills every child running now (its process group) and refuses new
    ones (:class:`ProcessError`) until the block exits. For the main thread, whose interruption
    must not wait for the children that worker threads run."""

    def end() -> None:
        with _CHILDREN.lock:
            _CHILDREN.ending = True
            running = list(_CHILDREN.running)
        for proc in running:
            _kill_group(proc)

    try:
        yield end
    finally:
        with _CHILDREN.lock:
            _CHILDREN.ending = False


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    input_text: str | None = None,
    check: bool = False,
    grace: float = 0.0,
    keep_bytes: int = KEEP_BYTES,
    memory_bytes: int | None = None,
    resident: Callable[[int], int] | None = None,
) -> Completed:
    """Run ``argv`` to completion or until ``timeout`` seconds pass.

    A program that cannot be started raises :class:`ProcessError`; a timeout is reported in the
    result (``timed_out``), the child killed, unless ``check`` asks for an error instead. With
    ``grace``, a child past its timeout is first sent SIGTERM and given that many seconds to
    clean up (kill what it started) before its process group is killed. Of each stream the last
    ``keep_bytes`` are kept; ``memory_bytes`` bounds the address space of the child and its own
    children, or with ``resident`` (a process group's resident bytes) the group's resident
    memory together (and each one's address space at :data:`ADDRESS_FACTOR` times that).
    """
    args = [str(a) for a in argv]
    proc = _start(args, env, cwd, input_text is not None)
    try:
        if memory_bytes is not None:
            _bound_memory(proc, args, memory_bytes * (ADDRESS_FACTOR if resident is not None else 1))
        out, err = _Tail(keep_bytes), _Tail(keep_bytes)
        data = input_text.encode("utf-8") if input_text is not None else b""
        watch = None
        if memory_bytes is not None and resident is not None:
            watch = _MemoryWatch(proc.pid, memory_bytes, resident)
        timed_out = not _collect(proc, data, out, err, time.monotonic() + timeout, watch)
        memory_exceeded = watch is not None and watch.exceeded
        if memory_exceeded:
            timed_out = False
            _kill_group(proc)
            _collect(proc, b"", out, err, time.monotonic() + _DRAIN_S)
        elif timed_out:
            if grace > 0:
                _terminate(proc, grace)
            _kill_group(proc)
            _collect(proc, b"", out, err, time.monotonic() + _DRAIN_S)
        returncode = proc.wait()
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    finally:
        _close(proc)
        with _CHILDREN.lock:
            _CHILDREN.running.discard(proc)
    stdout, stderr = out.text(), err.text()
    if timed_out:
        if check:
            raise ProcessError(args, f"did not finish within {timeout:g}s")
        return Completed(tuple(args), -1, stdout, stderr, True, out.dropped, err.dropped)
    result = Completed(
        tuple(args), returncode, stdout, stderr, False, out.dropped, err.dropped, memory_exceeded
    )
    if check and not result.ok:
        last = (stderr.strip().splitlines() or [""])[-1]
        raise ProcessError(args, f"exited {returncode}: {last}")
    return result


def _start(
    args: list[str], env: Mapping[str, str] | None, cwd: Path | None, with_input: bool
) -> subprocess.Popen[bytes]:
    with _CHILDREN.lock:
        if _CHILDREN.ending:
            raise ProcessError(args, "not started: interrupted")
        try:
            proc = subprocess.Popen(
                args,
                stdin=subprocess.PIPE if with_input else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise ProcessError(args, "not found") from exc
        except PermissionError as exc:
            raise ProcessError(args, "not executable") from exc
        except OSError as exc:
            raise ProcessError(args, f"cannot start: {exc.strerror or exc}") from exc
        _CHILDREN.running.add(proc)
    return proc


def _bound_memory(proc: subprocess.Popen[bytes], args: list[str], limit: int) -> None:
    """``RLIMIT_AS`` of the child (just started; what it starts inherits it), set from here with
    ``prlimit`` rather than in the child before exec (``preexec_fn`` is unsafe while other
    threads run). Where there is no ``prlimit`` (not Linux), the child runs unbounded."""
    if not hasattr(resource, "prlimit"):
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)  # the child inherited ours: it can only be lowered
    try:
        resource.prlimit(proc.pid, resource.RLIMIT_AS, (limit, limit))
    except (OSError, ValueError) as exc:
        raise ProcessError(args, f"cannot bound its memory: {exc}") from exc


class _MemoryWatch:
    """The resident memory of process group ``group`` as ``resident`` reads it, at most every
    :data:`_WATCH_S`; ``exceeded`` once it went past ``limit`` bytes."""

    def __init__(self, group: int, limit: int, resident: Callable[[int], int]) -> None:
        self.group = group
        self.limit = limit
        self.resident = resident
        self.exceeded = False
        self.next = 0.0

    def due(self, now: float) -> float:
        """Seconds until the next sample."""
        return max(0.0, self.next - now)

    def check(self, now: float) -> bool:
        """Sample when due; True once the group is past its bound."""
        if now >= self.next:
            self.next = now + _WATCH_S
            self.exceeded = self.resident(self.group) > self.limit
        return self.exceeded


class _Sink(Protocol):
    def add(self, chunk: bytes) -> None: ...


def _collect(
    proc: subprocess.Popen[bytes],
    data: bytes,
    out: _Sink,
    err: _Sink,
    deadline: float,
    watch: _MemoryWatch | None = None,
) -> bool:
    """Feed ``data`` to the child and read its streams until both end or the child has exited
    :data:`_AFTER_EXIT_S` ago (True), the deadline passes (False) or ``watch`` finds the group
    past its memory bound (True, ``watch.exceeded``)."""
    with selectors.DefaultSelector() as selector:
        if proc.stdin is not None and not proc.stdin.closed:
            if data:
                selector.register(proc.stdin, selectors.EVENT_WRITE)
            else:
                proc.stdin.close()
        for stream, tail in ((proc.stdout, out), (proc.stderr, err)):
            if stream is not None and not stream.closed:
                selector.register(stream, selectors.EVENT_READ, tail)
        written = 0
        exited: float | None = None
        while selector.get_map():
            now = time.monotonic()
            left = deadline - now
            if left <= 0:
                return False
            if watch is not None:
                if watch.check(now):
                    return True
                left = min(left, watch.due(now) + 0.001)
            if exited is None and proc.poll() is not None:
                exited = now
            if exited is not None and now - exited >= _AFTER_EXIT_S:
                return True
            for key, _ in selector.select(min(left, _POLL_S)):
                if key.fileobj is proc.stdin:
                    assert proc.stdin is not None
                    try:
                        written += os.write(key.fd, data[written : written + 512])
                    except BrokenPipeError:
                        written = len(data)
                    if written >= len(data):
                        selector.unregister(proc.stdin)
                        proc.stdin.close()
                    continue
                chunk = os.read(key.fd, _READ)
                if chunk:
                    key.data.add(chunk)
                else:
                    selector.unregister(key.fileobj)
    return True


def _close(proc: subprocess.Popen[bytes]) -> None:
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with suppress(OSError):
                stream.close()


def _terminate(proc: subprocess.Popen[bytes], grace: float) -> None:
    try:
        proc.terminate()
        proc.wait(timeout=grace)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass


def _kill_group(proc: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """Kill the child and everything it started (a hung nvidia-smi may hold our pipes)."""
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with suppress(ProcessLookupError):
            proc.kill()


class _Lines:
    """What :func:`stream` reads, handed on line by line as a text stream would (UTF-8, errors
    replaced, ``\r\n`` and ``\r`` ending a line as ``\n`` does)."""

    def __init__(self, on_line: Callable[[str], None]) -> None:
        self.on_line = on_line
        self.decoder = io.IncrementalNewlineDecoder(codecs.getincrementaldecoder("utf-8")("replace"), True)
        self.partial = ""

    def add(self, chunk: bytes) -> None:
        *whole, self.partial = (self.partial + self.decoder.decode(chunk)).split("\n")
        for line in whole:
            self.on_line(line)

    def flush(self) -> None:
        rest = self.partial + self.decoder.decode(b"", final=True)
        self.partial = ""
        for line in rest.removesuffix("\n").split("\n") if rest else ():
            self.on_line(line)


def stream(
    argv: Sequence[str],
    *,
    timeout: float,
    on_line: Callable[[str], None],
    env: Mapping[str, str] | None = None,
) -> int:
    """Run ``argv`` with stdout and stderr merged, handing each line to ``on_line`` as it comes.

    Returns the exit status; a run past ``timeout`` seconds is killed and returns -9.
    """
    args = [str(a) for a in argv]
    try:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    except OSError as exc:
        raise ProcessError(args, f"cannot start: {exc.strerror or exc}") from exc
    timer = threading.Timer(timeout, _kill_group, args=(proc,))
    timer.start()
    try:
        lines = _Lines(on_line)
        _collect(proc, b"", lines, lines, float("inf"))
        lines.flush()
        return proc.wait()
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    finally:
        timer.cancel()


# ---------------------------------------------------------------------------------------------
# A process that outlives colabenv (the watch recorder)


@model
class Detached:
    """What :func:`start_detached` saw: the launcher's exit status (-1 when it did not exit in
    time: it was then killed) and, where a ready pipe was asked for, the line the program wrote
    on it (``""`` when it closed the pipe, or died, without one; None when no line came in
    time or none was asked for)."""

    returncode: int
    report: str | None = None


_REPORT_BYTES = 4096


def start_detached(
    argv: Sequence[str],
    *,
    timeout: float,
    log: int | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    ready_flag: str | None = None,
) -> Detached:
    """Start ``argv`` (an argv list, no shell) in a new session with no terminal, standard input
    from /dev/null and its output to the descriptor ``log`` (the caller opened it, by the rule
    of its files; /dev/null without one), and wait at most ``timeout`` seconds for it to exit: a
    program started this way calls :func:`detach` first, so what exits at once is the launcher
    and the program goes on in its child, reaped by init (never a zombie of the caller's).

    With ``ready_flag``, argv gets ``ready_flag N``: N is the write end of a pipe, on which the
    program writes one line (that it is ready, or why it is not) and closes it; the same
    ``timeout`` bounds the wait for that line. A program that dies first closes the pipe too, so
    a start that fails is known at once, whatever the disk holds (a full disk loses the log)."""
    args = [str(a) for a in argv]
    deadline = time.monotonic() + timeout
    reader, writer = os.pipe() if ready_flag is not None else (-1, -1)
    if ready_flag is not None:
        args += [ready_flag, str(writer)]
    out = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC) if log is None else log
    try:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
            pass_fds=(writer,) if writer >= 0 else (),
        )
    except OSError as exc:
        raise ProcessError(args, f"cannot start: {exc.strerror or exc}") from exc
    finally:
        if log is None:
            os.close(out)
        if writer >= 0:
            os.close(writer)
    try:
        try:
            code = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()
            return Detached(-1)
        if reader < 0 or code != 0:
            return Detached(code)
        return Detached(code, _report_line(reader, deadline))
    finally:
        if reader >= 0:
            os.close(reader)


def _report_line(fd: int, deadline: float) -> str | None:
    """The first line written on ``fd`` (a pipe) before ``deadline``, without its newline; what
    came before the pipe closed when no newline did; None past the deadline."""
    data = bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while b"\n" not in data and len(data) < _REPORT_BYTES:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                return None
            chunk = os.read(fd, _REPORT_BYTES)
            if not chunk:
                break
            data += chunk
    return bytes(data).split(b"\n", 1)[0].decode("utf-8", "replace")


def detach() -> None:
    """In a program :func:`start_detached` started: fork, the parent exits at once (its
    launcher's wait returns), the child goes on; it is no session leader, so it can never take
    a terminal. Call it before any thread starts."""
    if os.fork() > 0:
        os._exit(0)
