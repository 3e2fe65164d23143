"""The ``io:<path>`` checks: write and uncached read throughput of each ``[verify] io_paths``
folder, measured by a child (``colabenv/_target/storage.py``, run by its path in the verified
interpreter) with a timeout, like the smoke tests.

The parent chooses the test file's name (a new random name in the folder) and removes the file
after the child, whatever happened to it: a child killed at the timeout cannot remove its own.
It never removes a file that was there before: the child refuses an existing name (O_EXCL), and
a name found taken is not the parent's to remove.

The checks run one after another (two on one disk would share its bandwidth). Those on another
device than the verified interpreter's packages start at once, alongside the smoke tests; those
on the same device wait until the framework children are done, since importing a framework
reads hundreds of MiB from that disk and would make the figures wrong.
"""

from __future__ import annotations

import errno
import json
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from colabenv._target.storage import PREFIX
from colabenv._util import processes
from colabenv._util.resources import STORAGE_PROGRAM
from colabenv.errors import ProcessError, printable
from colabenv.models import IoCheck
from colabenv.models.frozen import model
from colabenv.verification.children import TERMINATE_GRACE_S, child_failure, stderr_tail
from colabenv.verification.report import Check, Status

FILE_PREFIX = ".colabenv-io-"
MIB = 1024 * 1024
KILL_AFTER_S = 5.0
"""How long past its own deadline the child has before the parent kills it (a write stuck in a
filesystem that stopped answering does not see the deadline)."""


@model
class IoRun:
    """One finished ``io:`` child: what it reported, and what became of its test file."""

    check: IoCheck
    completed: processes.Completed
    test_file: Path
    removal_problem: str | None = None


def _result(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(PREFIX):
            try:
                data = json.loads(line[len(PREFIX) :])
            except (ValueError, RecursionError):
                return None
            return data if isinstance(data, dict) else None
    return None


def fresh_name(folder: Path) -> Path:
    """A name in ``folder`` that nothing has now; a name taken in between makes the child fail
    (it creates the file with O_EXCL) and is then left alone."""
    candidate = folder / f"{FILE_PREFIX}{os.getpid()}-{os.urandom(6).hex()}"
    while os.path.lexists(candidate):
        candidate = folder / f"{FILE_PREFIX}{os.getpid()}-{os.urandom(6).hex()}"
    return candidate


def _remove(path: Path) -> str | None:
    try:
        os.unlink(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return f"the test file {printable(str(path))} could not be removed: {exc.strerror or exc}"
    return None


def _name_was_taken(completed: processes.Completed | None) -> bool:
    result = _result(completed.stdout) if completed is not None else None
    return result is not None and result.get("errno") == errno.EEXIST


def run_io(check: IoCheck, size_mib: int, timeout: float, *, python: str) -> IoRun:
    """Measure ``check.path`` with a test file of ``size_mib`` MiB, the child given ``timeout``
    seconds (it stops writing at half and reading at 95% of them), then remove the file, also
    when the child was killed or this thread is interrupted."""
    target = fresh_name(Path(check.path))
    argv = [python, str(STORAGE_PROGRAM), str(target), str(size_mib * MIB), f"{timeout:g}"]
    completed: processes.Completed | None = None
    problem: str | None = None
    try:
        completed = processes.run(argv, timeout=timeout + KILL_AFTER_S, grace=TERMINATE_GRACE_S)
    except ProcessError as error:
        completed = processes.Completed(tuple(argv), 127, "", str(error), False)
    finally:
        if not _name_was_taken(completed):
            problem = _remove(target)
    return IoRun(check, completed, target, problem)


def _figure(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if number >= 0 else None


def _mib(count: object) -> str:
    figure = _figure(count)
    return "?" if figure is None else f"{figure / MIB:g} MiB"


def check_io(run: IoRun, *, timeout: float) -> Check:
    """PASS with the write and uncached read MiB/s; FAIL naming the path when the child died,
    the folder cannot be written, or a figure is below the profile's threshold."""
    check = run.check
    name = f"io:{check.path}"
    shown = printable(check.path)
    left = f"; {run.removal_problem}" if run.removal_problem else ""
    completed = run.completed
    died = child_failure(completed, timeout + KILL_AFTER_S)
    if died is not None:
        tail = stderr_tail(completed.stderr)
        return Check(
            name,
            Status.FAIL,
            f"{shown}: the measurement {died}" + (f"; stderr: {tail}" if tail else "") + left,
        )
    result = _result(completed.stdout)
    if result is None:
        tail = stderr_tail(completed.stderr)
        return Check(
            name,
            Status.FAIL,
            f"{shown}: the measurement exited {completed.returncode} "
            "without a result" + (f"; stderr: {tail}" if tail else "") + left,
        )
    if result.get("error"):
        return Check(name, Status.FAIL, f"{shown}: {printable(str(result['error']))[:200]}{left}")
    write, read = _figure(result.get("write_mib_s")), _figure(result.get("read_mib_s"))
    if write is None or read is None:
        return Check(name, Status.FAIL, f"{shown}: the measurement reported no figures{left}")
    method = printable(str(result.get("read_method", "?")))[:40]
    figures = (
        f"write {write:.1f} MiB/s, read {read:.1f} MiB/s uncached ({method}); "
        f"{_mib(result.get('written_bytes'))} written"
    )
    if result.get("partial"):
        figures += f", {_mib(result.get('read_bytes'))} read before the deadline"
    notes = result.get("notes")
    if isinstance(notes, list) and notes:
        figures += "; " + "; ".join(printable(str(n))[:120] for n in notes[:2])
    low = []
    if check.min_write_mib_s is not None and write < check.min_write_mib_s:
        low.append(f"write {write:.1f} MiB/s is below the {check.min_write_mib_s:g} MiB/s asked for")
    if check.min_read_mib_s is not None and read < check.min_read_mib_s:
        low.append(f"read {read:.1f} MiB/s is below the {check.min_read_mib_s:g} MiB/s asked for")
    if low:
        return Check(name, Status.FAIL, f"{shown}: " + "; ".join(low) + f" ({figures}){left}")
    if left:
        return Check(name, Status.WARN, figures + left)
    return Check(name, Status.PASS, figures)


def _device(path: str) -> int | None:
    try:
        return os.stat(path).st_dev
    except OSError:
        return None


def shares_a_device(path: str, places: Iterable[str]) -> bool:
    """Whether ``path`` is on the device of one of ``places`` (the verified interpreter's
    ``sys.path``): its measurement waits for the framework imports."""
    device = _device(path)
    return device is not None and any(_device(place) == device for place in places)


def run_io_checks(
    checks: Sequence[IoCheck],
    size_mib: int,
    timeout: float,
    *,
    python: str,
    places: Sequence[str],
    frameworks_done: threading.Event,
) -> list[IoRun]:
    """Every check, one at a time: first those on other devices than ``places``, then, once
    ``frameworks_done`` is set, the others; the runs come back in the order of ``checks``."""
    apart = [c for c in checks if not shares_a_device(c.path, places)]
    runs = {c.path: run_io(c, size_mib, timeout, python=python) for c in apart}
    rest = [c for c in checks if c.path not in runs]
    if rest:
        frameworks_done.wait()
        runs.update((c.path, run_io(c, size_mib, timeout, python=python)) for c in rest)
    return [runs[c.path] for c in checks]
