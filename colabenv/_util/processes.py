"""The one place that starts processes: argv lists, never a shell, always a timeout."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from colabenv.errors import ProcessError
from colabenv.models.frozen import model


@model
class Completed:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    input_text: str | None = None,
    check: bool = False,
    grace: float = 0.0,
) -> Completed:
    """Run ``argv`` to completion or until ``timeout`` seconds pass.

    A program that cannot be started raises :class:`ProcessError`; a timeout is reported in the
    result (``timed_out``), the child killed, unless ``check`` asks for an error instead. With
    ``grace``, a child past its timeout is first sent SIGTERM and given that many seconds to
    clean up (kill what it started) before its process group is killed.
    """
    args = [str(a) for a in argv]
    try:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
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
    try:
        stdout, stderr = proc.communicate(input=input_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        if grace > 0:
            _terminate(proc, grace)
        _kill_group(proc)
        try:
            stdout, stderr = proc.communicate(timeout=2)
        except subprocess.TimeoutExpired:
            stdout, stderr = "", ""
        if check:
            raise ProcessError(args, f"did not finish within {timeout:g}s") from None
        return Completed(tuple(args), -1, stdout or "", stderr or "", True)
    result = Completed(tuple(args), proc.returncode, stdout, stderr, False)
    if check and not result.ok:
        last = (stderr.strip().splitlines() or [""])[-1]
        raise ProcessError(args, f"exited {proc.returncode}: {last}")
    return result


def _terminate(proc: subprocess.Popen[str], grace: float) -> None:
    try:
        proc.terminate()
        proc.wait(timeout=grace)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """Kill the child and everything it started (a hung nvidia-smi may hold our pipes)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


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
            text=True,
            errors="replace",
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    except OSError as exc:
        raise ProcessError(args, f"cannot start: {exc.strerror or exc}") from exc
    timer = threading.Timer(timeout, _kill_group, args=(proc,))
    timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            on_line(line.rstrip("\n"))
        return proc.wait()
    finally:
        timer.cancel()
