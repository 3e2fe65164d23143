"""Imports that fail after installs: import each module the environment should have in a child
of the checked interpreter (``colabenv/_target/importcheck.py``, one module per child, as
verify's smoke children run), and say why one fails (``import-failure`` with its ``cause``).

What is imported: each framework the profile, lock or restart marker names, the top-level
modules of each other distribution it names (``top_level.txt``, else ``RECORD``), and each
``--import MODULE``. A failure is read against the signatures (:mod:`colabenv.diagnosis.signatures`);
besides, from the metadata and the file system: a module found first in another ``sys.path``
entry than its distribution's (``shadowed``), a distribution installed twice (``duplicate``),
and a kernel that started before the last install (``restart-needed``)."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from packaging.utils import NormalizedName, canonicalize_name

from colabenv._util import processes
from colabenv._util.files import FileProblem, read_limited
from colabenv._util.resources import IMPORT_PROGRAM
from colabenv.diagnosis.signatures import Signatures, classify, error_lines
from colabenv.errors import ProcessError, UsageError, printable
from colabenv.host.installed import PathScan, Shadow, installed_at, top_level
from colabenv.models import Evidence, Finding, Framework
from colabenv.models.frameworks import FACTS
from colabenv.models.frozen import model
from colabenv.script.marker import RestartMarker

IMPORT_TIMEOUT_S = 120.0
"""How long one import may take (TensorFlow's takes seconds; a hang is a finding, not a wait)."""
IMPORTS_TOTAL_S = 600.0
"""How long all the imports together may take: a module not started by then is not imported
(a note says how many), so that many slow imports cannot hold doctor for an hour."""
IMPORT_WORKERS = 2
"""Children at once: each may load a framework of a few GiB."""
MAX_MODULES = 64
RESULT_LIMIT = 256 * 1024
STDERR_LINES = 40
MAX_SHOWN_ERROR = 20
MODULE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}(?:\.[A-Za-z_][A-Za-z0-9_]{0,99}){0,9}", re.ASCII)
INSTALL_SLACK_S = 1.0
"""A distribution's metadata written this little after the kernel started is not "after": the
clocks compared are read from two places (``/proc`` and the file system)."""
CAUSE_ORDER = (
    "shadowed",
    "duplicate",
    "missing-library",
    "undefined-symbol",
    "numpy-abi",
    "driver-too-old",
    "no-gpu",
    "no-kernel-image",
    "invalid-device-function",
    "unsupported-gpu",
    "not-installed",
    "restart-needed",
    "unknown",
)
"""The most likely cause first: what a fresh process fails on is certain, and no restart fixes
it; ``restart-needed`` is said when a fresh process imports well but the kernel is older than
the install."""
UNKNOWN_REMEDY = (
    "colabenv does not know this error (it is shown whole above): restart once and try again; if it"
    " stays, recreate the environment from a minimal, pinned set of dependencies (colabenv lock)"
)


@model
class ImportTarget:
    """A module to import; ``dist``: the distribution it comes from (None: named by --import)."""

    module: str
    dist: NormalizedName | None = None


@model
class ImportOutcome:
    """How one import went in its child. ``error``: the exception's ``Type: text`` and the last
    lines of its traceback; ``died``: why the child ended without a result (a crash, a hang)."""

    target: ImportTarget
    ok: bool
    origin: str | None = None
    error: tuple[str, ...] = ()
    stderr: str = ""
    died: str | None = None
    skipped: bool = False
    """Not imported: the time for all the imports (:data:`IMPORTS_TOTAL_S`) had run out."""


def checked_module(text: str, origin: str = "--import") -> str:
    """A dotted module name, bounded; UsageError otherwise."""
    if not MODULE_RE.fullmatch(text):
        shown = printable(text)[:60]
        raise UsageError(f"{origin}: {shown!r} is not a module name like numpy or torch.cuda")
    return text


def import_targets(
    frameworks: Iterable[Framework],
    dists: Iterable[str],
    modules: Iterable[str],
    scan: PathScan,
) -> tuple[ImportTarget, ...]:
    """The frameworks (their module, from the first of their distributions installed), then
    ``modules``, then each distribution's top-level modules; each module once. The caller keeps
    the first :data:`MAX_MODULES`."""
    first = {d.name: d for d in reversed(scan.dists)}
    found: dict[str, ImportTarget] = {}
    for framework in frameworks:
        names = FACTS[framework].dists
        dist = next((n for n in names if n in first), names[0])
        found.setdefault(framework.value, ImportTarget(framework.value, dist))
    for module in modules:
        found.setdefault(module, ImportTarget(checked_module(module)))
    for name in dists:
        installed = first.get(canonicalize_name(name))
        if installed is None:
            continue
        for top in top_level(installed):
            if MODULE_RE.fullmatch(top):
                found.setdefault(top, ImportTarget(top, installed.name))
    return tuple(found.values())


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _parse_result(target: ImportTarget, text: str | None, completed: processes.Completed) -> ImportOutcome:
    data: object = None
    if text is not None:
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            data = None
    stderr = "\n".join(completed.stderr.splitlines()[-STDERR_LINES:])
    if not isinstance(data, dict) or data.get("mode") != "import" or not isinstance(data.get("ok"), bool):
        if completed.timed_out:
            died = "did not finish within its time (killed)"
        elif completed.returncode < 0:
            died = f"crashed with {_signal_name(-completed.returncode)}"
        else:
            died = f"exited {completed.returncode} without a result"
        return ImportOutcome(target, False, stderr=stderr, died=died)
    if data["ok"]:
        origin = data.get("origin")
        return ImportOutcome(target, True, origin if isinstance(origin, str) else None, stderr=stderr)
    kind = str(data.get("type", "?"))[:200]
    tail = data.get("tail")
    lines = [str(line) for line in tail] if isinstance(tail, list) else []
    head = f"{kind}: {data.get('text', '')}".splitlines() or [kind]
    frames = [f"  at {line}" for line in lines[-STDERR_LINES:]]
    return ImportOutcome(target, False, error=(*head[:STDERR_LINES], *frames), stderr=stderr)


def _child_env() -> dict[str, str]:
    """The environment an import child runs in: this one, and no bytecode written (doctor
    changes nothing, not even a ``__pycache__``)."""
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}


def _run_one(
    target: ImportTarget, python: str, scratch: Path, index: int, timeout: float, deadline: float
) -> ImportOutcome:
    left = deadline - time.monotonic()
    if left <= 0:
        return ImportOutcome(target, False, skipped=True)
    timeout = min(timeout, left)
    result = scratch / f"import-{index}.json"
    argv = [python, str(IMPORT_PROGRAM), target.module, str(result)]
    try:
        completed = processes.run(argv, timeout=timeout, env=_child_env(), keep_bytes=64 * 1024)
    except ProcessError as error:
        completed = processes.Completed(tuple(argv), 127, "", str(error), False)
    try:
        text: str | None = read_limited(result, RESULT_LIMIT).decode("utf-8", "replace")
    except FileProblem:
        text = None
    return _parse_result(target, text, completed)


def run_imports(
    targets: Sequence[ImportTarget],
    python: str,
    *,
    timeout: float = IMPORT_TIMEOUT_S,
    total: float = IMPORTS_TOTAL_S,
) -> tuple[ImportOutcome, ...]:
    """Each target imported in its own child of ``python``, :data:`IMPORT_WORKERS` at a time,
    each within ``timeout`` and all within ``total`` (those not started by then: ``skipped``)."""
    if not targets:
        return ()
    import tempfile

    deadline = time.monotonic() + total
    with (
        processes.ended_on_interrupt() as end_children,
        tempfile.TemporaryDirectory(prefix="colabenv-doctor-") as folder,
        ThreadPoolExecutor(max_workers=IMPORT_WORKERS) as pool,
    ):
        try:
            futures = [
                pool.submit(_run_one, target, python, Path(folder), index, timeout, deadline)
                for index, target in enumerate(targets)
            ]
            return tuple(future.result() for future in futures)
        except BaseException:
            end_children()
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def _blamed_shadow(lines: Sequence[str], scan: PathScan) -> Shadow | None:
    """The shadow a failed import's lines name (``module 'numpy' has no attribute ...``, a
    frame in ``/work/numpy.py``): the file earlier on sys.path that hides an installed module."""
    text = "\n".join(lines)
    for shadow in scan.shadows:
        named = re.search(rf"['\"]{re.escape(shadow.module)}(?:\.[\w.]+)?['\"]", text)
        if named or (shadow.name and shadow.used_path in text):
            return shadow
    return None


def _shadowed_failure(outcome: ImportOutcome, shadow: Shadow, shown: list[Evidence]) -> Finding:
    module = outcome.target.module
    used, hidden = printable(shadow.used_path), printable(shadow.hidden)
    whose = "the standard library's" if shadow.stdlib else "the installed one"
    return Finding(
        kind="import-failure",
        summary=f"import {module} fails: {shadow.module} is taken from {used}, not {whose} in {hidden}",
        evidence=(Evidence(f"{shadow.module} found first at {used}"), *shown),
        remedy=f"rename or remove {used} (it hides {whose} {shadow.module}); then import {module} again",
        module=module,
        path=shadow.used_path,
        cause="shadowed",
    )


def _failure(outcome: ImportOutcome, signatures: Signatures, scan: PathScan) -> Finding:
    module = outcome.target.module
    lines = error_lines([*outcome.error, outcome.stderr])
    found = classify(lines, signatures)
    shown = [
        Evidence(printable(line)) for line in (outcome.error or lines[-MAX_SHOWN_ERROR:])[:MAX_SHOWN_ERROR]
    ]
    if outcome.died is not None:
        shown.insert(0, Evidence(f"the import child {outcome.died}"))
    shadow = _blamed_shadow([*lines, *outcome.error], scan)
    if shadow is not None:
        return _shadowed_failure(outcome, shadow, shown)
    if found is None:
        what = outcome.died or (printable(outcome.error[0])[:200] if outcome.error else "failed")
        return Finding(
            kind="import-failure",
            summary=f"import {module} fails: {what}",
            evidence=tuple(shown),
            remedy=UNKNOWN_REMEDY,
            module=module,
            cause="unknown",
        )
    if Evidence(found.line) not in shown:
        shown.insert(0, Evidence(found.line))
    return Finding(
        kind="import-failure",
        summary=f"import {module} fails: {found.line[:200]}",
        evidence=tuple(shown),
        remedy=found.remedy,
        module=module,
        cause=found.cause,
    )


def _shadows(targets: Sequence[ImportTarget], scan: PathScan) -> list[Finding]:
    """The shadows of the modules imported, and every module of the standard library shadowed
    (``importlib.py`` in the working directory breaks whatever imports it, named or not)."""
    wanted = {t.module.split(".")[0] for t in targets}
    found = []
    for shadow in scan.shadows:
        if shadow.module not in wanted and not shadow.stdlib:
            continue
        used, hidden = printable(shadow.used), printable(shadow.hidden)
        whose = "the standard library's, in" if shadow.stdlib else "the one in"
        found.append(
            Finding(
                kind="import-failure",
                summary=f"module {shadow.module} is imported from {used}: {whose} {hidden}, later on"
                " sys.path, is never imported",
                evidence=(
                    Evidence(f"{shadow.module} found first in {used}"),
                    Evidence(f"{shadow.module} also in {hidden} (later on sys.path: never imported)"),
                ),
                remedy=f"rename or remove the {shadow.module} in {used} (a file or folder of that name"
                " earlier on sys.path, often the working directory), or fix the sys.path order; then restart",
                module=shadow.module,
                path=shadow.used,
                cause="shadowed",
            )
        )
    return found


def _duplicates(targets: Sequence[ImportTarget], scan: PathScan) -> list[Finding]:
    by_dist = {t.dist: t for t in reversed(targets) if t.dist is not None}
    found = []
    for name, copies in scan.duplicates:
        target = by_dist.get(name)
        if target is None:
            continue
        where = [Evidence(f"{name} {printable(d.version)} in {printable(d.metadata_dir)}") for d in copies]
        found.append(
            Finding(
                kind="import-failure",
                summary=f"{name} is installed {len(copies)} times; {target.module} is imported from"
                f" {printable(copies[0].entry)} ({printable(copies[0].version)})",
                evidence=tuple(where),
                remedy=f"remove the copies that should not be there (pip uninstall {name} until none is"
                " left, then install it once), and keep one site-packages on sys.path; then restart",
                module=target.module,
                path=copies[0].entry,
                cause="duplicate",
            )
        )
    return found


def _clock(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def restart_findings(
    targets: Sequence[ImportTarget],
    scan: PathScan,
    started_at: float | None,
    who: str,
    marker: RestartMarker | None,
) -> list[Finding]:
    """``restart-needed`` for each target whose distribution was installed after the kernel (or
    interpreter, ``who``) started; without one, for a restart marker written after it by a run
    that changed something."""
    if started_at is None:
        return []
    first = {d.name: d for d in reversed(scan.dists)}
    started = Evidence(f"this {who} started {_clock(started_at)}", started_at)
    found = []
    for target in targets:
        dist = first.get(target.dist) if target.dist is not None else None
        when = installed_at(dist) if dist is not None else None
        if dist is None or when is None or when <= started_at + INSTALL_SLACK_S:
            continue
        found.append(
            Finding(
                kind="import-failure",
                summary=f"{target.module}: {dist.name} {printable(dist.version)} was installed"
                f" {_clock(when)}, after this {who} started: it still runs what it imported before",
                evidence=(Evidence(f"{printable(dist.metadata_dir)} written {_clock(when)}", when), started),
                remedy="restart the runtime once (Runtime > Restart session), then import again",
                module=target.module,
                path=str(dist.metadata_dir),
                cause="restart-needed",
                time=when,
            )
        )
    if (
        not found
        and marker is not None
        and marker.changed
        and marker.written_at > started_at + INSTALL_SLACK_S
    ):
        found.append(
            Finding(
                kind="import-failure",
                summary=f"the setup script finished {_clock(marker.written_at)}, after this {who} started",
                evidence=(
                    Evidence(f"restart marker {printable(marker.path)} written", marker.written_at),
                    started,
                ),
                remedy="restart the runtime once (Runtime > Restart session), then import again",
                path=str(marker.path),
                cause="restart-needed",
                time=marker.written_at,
            )
        )
    return found


def import_findings(
    outcomes: Sequence[ImportOutcome],
    scan: PathScan,
    signatures: Signatures,
    *,
    started_at: float | None = None,
    who: str = "interpreter",
    marker: RestartMarker | None = None,
) -> tuple[Finding, ...]:
    """Every import finding, the most likely cause first (:data:`CAUSE_ORDER`)."""
    targets = [o.target for o in outcomes]
    found = _shadows(targets, scan) + _duplicates(targets, scan)
    found.extend(_failure(o, signatures, scan) for o in outcomes if not o.ok and not o.skipped)
    found.extend(restart_findings(targets, scan, started_at, who, marker))
    rank = {cause: i for i, cause in enumerate(CAUSE_ORDER)}
    return tuple(sorted(found, key=lambda f: rank.get(f.cause or "unknown", len(rank))))


def scan_entries(path: Sequence[str], cwd: str | None = None) -> list[str]:
    """The ``sys.path`` an import child has: the working directory first, then ``path``."""
    here = cwd if cwd is not None else os.getcwd()
    return [here, *(p for p in path if p)]
