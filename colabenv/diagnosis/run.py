"""``doctor()``: read what the run is checked against, run each finder, and order what they find.

A finder is a function of the :class:`DoctorContext` returning :class:`Found` (findings, and
notes saying what could not be looked at); :data:`FINDERS` lists them, the most likely cause of
a broken session first: a silent death, leftovers holding a GPU, then imports that fail. Doctor
changes nothing, but ``kill_leftovers`` ends the leftovers of this user after naming them."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from colabenv._util.bounds import MAX_DOCTOR_SINCE_S
from colabenv.diagnosis.imports import (
    IMPORT_TIMEOUT_S,
    MAX_MODULES,
    checked_module,
    import_findings,
    import_targets,
    run_imports,
    scan_entries,
)
from colabenv.diagnosis.leftovers import (
    GRACE_S,
    Session,
    end_leftovers,
    find_leftovers,
    leftover_findings,
    this_session,
)
from colabenv.diagnosis.signatures import shipped_signatures
from colabenv.errors import StateError, UsageError, printable
from colabenv.host.gpu_holders import GpuHolders, ProcessNvml, gpu_holders
from colabenv.host.installed import PathScan, scan_path
from colabenv.host.interpreter import Interpreter, probe_interpreter, same_environment
from colabenv.host.probe import import_pynvml
from colabenv.host.started import process_started_at
from colabenv.models import CATALOG_PLATFORM, Finding, Framework, Sample
from colabenv.models.frameworks import framework_of, ordered
from colabenv.models.frozen import model, record
from colabenv.script.marker import RestartMarker

SINCE_RE = re.compile(r"([1-9][0-9]{0,6})([hms])", re.ASCII)
SINCE_UNITS = {"h": 3600, "m": 60, "s": 1}
Say = Callable[[str], None]


def parse_since(text: str) -> float:
    """``2h``, ``30m``, ``90s`` as seconds, at most :data:`MAX_DOCTOR_SINCE_S`; UsageError else."""
    match = SINCE_RE.fullmatch(text)
    seconds = int(match.group(1)) * SINCE_UNITS[match.group(2)] if match else None
    if seconds is None or seconds > MAX_DOCTOR_SINCE_S:
        shown = printable(text)[:40]
        hours = MAX_DOCTOR_SINCE_S // 3600
        raise UsageError(f"--since: {shown!r} is not a duration like 2h, 30m or 90s (at most {hours}h)")
    return float(seconds)


@model
class DoctorReport:
    """The findings, the most likely cause first, and notes on what could not be looked at."""

    findings: tuple[Finding, ...]
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, object]:
        return {"findings": [f.to_json() for f in self.findings], "notes": list(self.notes)}


@model
class Found:
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()


@record
class DoctorContext:
    """What every finder is given. ``since``: the start of the window asked about (seconds since
    the epoch; None: all that is recorded). ``own_python``: the checked interpreter is the one
    colabenv runs in (or of its environment), so the kernel's start says whether it is older
    than the installs. ``state``: the state directory (where the recorder's ring is), None when
    there is no home to put it in. ``session``: this process, the kernel it runs in or under
    (``session.kernel``), their ancestors and the kernel's children. ``environ``: the
    environment of this process, the notebook's where doctor runs in a cell, which the import
    children and the GPU runtime the notebook loads read too."""

    now: float
    since: float | None
    python: Interpreter
    own_python: bool
    frameworks: tuple[Framework, ...]
    dists: tuple[str, ...]
    modules: tuple[str, ...]
    marker: RestartMarker | None
    state: Path | None
    session: Session
    environ: Mapping[str, str]
    kill_leftovers: bool = False
    load_nvml: Callable[[], ProcessNvml] = import_pynvml
    nvml_needs_device: bool = True
    import_timeout: float = IMPORT_TIMEOUT_S
    grace: float = GRACE_S
    say: Say | None = None


Finder = Callable[[DoctorContext], Found]


def find_gpu_leftovers(context: DoctorContext) -> Found:
    """``gpu-leftover`` for each process holding GPU memory that is not this session's; with
    ``kill_leftovers``, those of this user ended after they are named."""
    from colabenv.host.gpu import nvidia_device_present

    if context.nvml_needs_device and not nvidia_device_present():
        return Found(notes=("GPU leftovers: no NVIDIA device here",))
    holders: GpuHolders = gpu_holders(context.load_nvml)
    if holders.note is not None:
        return Found(notes=(f"GPU leftovers: not looked for ({holders.note})",))
    leftovers = find_leftovers(holders, context.session)
    findings = leftover_findings(leftovers, holders, context.session, now=context.now)
    if not context.kill_leftovers:
        return Found(tuple(findings))
    if context.say is not None:
        for finding in findings:
            context.say(f"ending {finding.summary}")
    done = end_leftovers(leftovers, context.session, grace=context.grace)
    ended = [
        dataclasses.replace(finding, evidence=(*finding.evidence, what))
        for finding, what in zip(findings, done, strict=True)
    ]
    return Found(tuple(ended))


def find_import_failures(context: DoctorContext) -> Found:
    """``import-failure`` for each module of the environment that cannot be imported, or is
    shadowed, installed twice, or newer than the kernel."""
    python = context.python
    scan = scan_path(
        scan_entries(python.path), stdlib=python.stdlib, extension_suffixes=python.extension_suffixes
    )
    found = import_targets(context.frameworks, context.dists, context.modules, scan)
    targets = found[:MAX_MODULES]
    if not targets:
        return Found(notes=("imports: nothing to import (no framework or package named, none installed)",))
    outcomes = run_imports(targets, python.executable, timeout=context.import_timeout)
    started_at, who = None, "interpreter"
    if context.own_python:
        started_at, who = process_started_at(context.session.kernel), context.session.who
    findings = import_findings(
        outcomes, scan, shipped_signatures(), started_at=started_at, who=who, marker=context.marker
    )
    done = [o for o in outcomes if not o.skipped]
    count = f"{len(done)} module" + ("" if len(done) == 1 else "s")
    notes = [f"imports: {count} imported in {printable(python.executable)}"]
    if len(done) < len(outcomes):
        notes.append(f"imports: {len(outcomes) - len(done)} not imported (the time for imports ran out)")
    if len(found) > len(targets):
        notes.append(f"imports: {len(found) - len(targets)} more not imported (at most {MAX_MODULES})")
    return Found(findings, tuple(notes))


def find_gpu_variables(context: DoctorContext) -> Found:
    """The variables of the environment that change what the GPU runtime sees
    (``HSA_OVERRIDE_GFX_VERSION``), judged against the installed torch's gfx list where the
    catalog has it: a finding where the override names a gfx the build has no kernels for (or
    cannot be read), a note where it is set and does no harm that can be seen."""
    entries = shipped_signatures().variables
    if not any(entry.name in context.environ for entry in entries):
        return Found()
    from colabenv.catalog.load import shipped_catalog
    from colabenv.diagnosis.gpu_variables import gpu_variable_findings, installed_torch_gfx

    python = context.python
    scan = scan_path(
        scan_entries(python.path), stdlib=python.stdlib, extension_suffixes=python.extension_suffixes
    )
    platform = python.wheel_platform or CATALOG_PLATFORM
    installed = installed_torch_gfx(scan, shipped_catalog([Framework.TORCH]), platform)
    findings, notes = gpu_variable_findings(context.environ, installed, entries)
    return Found(findings, notes)


def find_silent_deaths(context: DoctorContext) -> Found:
    """Why a kernel died without a traceback: the recorder's samples (the ring of the state
    directory, and the one a recorder started for a new kernel moved aside), the memory cgroup
    read now and the kernel log's OOM lines, through
    :func:`colabenv.diagnosis.deaths.find_deaths`; the runtime whose session limits apply is
    told from the variables and ``/kaggle/input`` alone (:func:`colabenv.host.detect.runtime_kind`),
    no probe of the host. A ring that is not colabenv's own (a link,
    another user's file, a newer format) is refused: exit 2, one line."""
    from colabenv.diagnosis.deaths import find_deaths
    from colabenv.host.detect import runtime_kind
    from colabenv.host.kernel_log import read_kernel_log
    from colabenv.host.memory import cgroup_memory

    notes: list[str] = []
    samples = _ring_samples(context, notes)
    log = read_kernel_log()
    if log.reason is not None:
        notes.append(f"silent deaths: kernel log not read ({log.reason})")
    findings = find_deaths(
        samples,
        log.events,
        now=context.now,
        since=context.since,
        cgroup_now=cgroup_memory(notes=notes),
        runtime=runtime_kind(),
    )
    return Found(findings, tuple(notes))


def _ring_samples(context: DoctorContext, notes: list[str]) -> tuple[Sample, ...]:
    """The recorder's samples from ``context.since`` on, oldest first: the previous ring's, then
    the current one's; a note where there is none."""
    from colabenv.recorder.ring import LEFT_OUT, MAX_HELD_BYTES, read_ring, ring_paths

    if context.state is None:
        notes.append("silent deaths: no state directory, so no recorder samples")
        return ()
    samples: list[Sample] = []
    held = 0
    for path in ring_paths(context.state):  # the newest ring first: the bound keeps the newest
        if not os.path.lexists(path):
            continue
        ring = read_ring(path, since=context.since, held=max(0, MAX_HELD_BYTES - held))
        held += ring.held
        samples[:0] = ring.samples
        reasons = dict(ring.skipped)
        left_out = reasons.pop(LEFT_OUT, 0)
        skipped = sum(reasons.values())
        if skipped:
            notes.append(f"silent deaths: {skipped} torn or damaged records of {printable(path)} skipped")
        if left_out:
            notes.append(
                f"silent deaths: {left_out} older records of {printable(path)} left out: the newer "
                f"samples read hold {MAX_HELD_BYTES >> 20} MiB, the most doctor keeps"
            )
    if not samples:
        notes.append("silent deaths: no recorder samples (start one with `colabenv watch start`)")
    return tuple(samples)


FINDERS: tuple[Finder, ...] = (
    find_silent_deaths,
    find_gpu_leftovers,
    find_import_failures,
    find_gpu_variables,
)
"""The finders, the most likely cause of a broken session first: a silent death, leftovers
holding a GPU, imports that fail, a GPU variable that hides the GPU's kernels."""


def _state() -> tuple[Path | None, RestartMarker | None, str | None]:
    """The state directory, the restart marker in it, and why either is missing."""
    from colabenv.script.marker import read_marker
    from colabenv.script.state import state_dir

    try:
        state = state_dir()
    except StateError as error:
        return None, None, f"state directory: {error}"
    try:
        return state, read_marker(state), None
    except StateError as error:
        return state, None, f"restart marker: {error}"


def _expected(
    profile: str | None, lock: str | None, marker: RestartMarker | None, installed: Callable[[], PathScan]
) -> tuple[tuple[Framework, ...], tuple[str, ...]]:
    """The frameworks and distributions to import: the profile's, the lock's, the marker's, or
    (none of them) the frameworks installed."""
    if profile is not None:
        from colabenv.profile.files import find_profile
        from colabenv.profile.load import load_profile

        loaded = load_profile(find_profile(profile))
        return tuple(r.framework for r in loaded.frameworks), tuple(r.name for r in loaded.requirements)
    if lock is not None:
        from colabenv.lock.file import read_lock

        if not Path(lock).is_file():
            raise UsageError(f"{printable(lock)}: no such lock file")
        packages = read_lock(Path(lock)).packages
        frameworks = ordered(f for f in (framework_of(p.name) for p in packages) if f is not None)
        return frameworks, tuple(p.name for p in packages if framework_of(p.name) is None)
    if marker is not None:
        from colabenv._util.pep508 import valid_requirements

        names = [r.name for r in valid_requirements(marker.requirements)]
        found = ordered(f for f in (framework_of(m.name) for m in marker.frameworks) if f is not None)
        return found, tuple(n for n in names if framework_of(n) is None)
    have = {d.name for d in installed().dists}
    return ordered(f for f in Framework if any(d in have for d in _dists(f))), ()


def _dists(framework: Framework) -> tuple[str, ...]:
    from colabenv.models.frameworks import FACTS

    return FACTS[framework].dists


def doctor(
    *,
    since: str | float | None = None,
    interpreter: str | None = None,
    profile: str | None = None,
    lock: str | None = None,
    imports: Sequence[str] = (),
    kill_leftovers: bool = False,
    load_nvml: Callable[[], ProcessNvml] = import_pynvml,
    nvml_needs_device: bool = True,
    import_timeout: float = IMPORT_TIMEOUT_S,
    grace: float = GRACE_S,
    finders: Sequence[Finder] = FINDERS,
    say: Say | None = None,
) -> DoctorReport:
    """Run every finder and return the report; bad input (a duration, an interpreter, a profile
    or lock) is a :class:`~colabenv.errors.ColabenvError` before anything is looked at.

    ``since``: ``2h``, ``30m``, ``90s`` (or seconds): the window the recorder's samples are read
    over. ``load_nvml`` and ``nvml_needs_device``: the NVML boundary (tests pass a stand-in)."""
    if profile is not None and lock is not None:
        raise UsageError("doctor: give --profile or --lock, not both")
    window = parse_since(since) if isinstance(since, str) else since
    if window is not None and not 0 < window <= MAX_DOCTOR_SINCE_S:
        raise UsageError(f"since: {window!r} seconds is not above 0 and at most {MAX_DOCTOR_SINCE_S}")
    modules = tuple(checked_module(m) for m in imports)
    python = probe_interpreter(interpreter) if interpreter is not None else Interpreter.current()
    own = interpreter is None or same_environment(python.executable, sys.executable)
    state, marker, marker_note = _state()

    def installed() -> PathScan:
        return scan_path(python.path, stdlib=python.stdlib)

    frameworks, dists = _expected(profile, lock, marker, installed)
    now = time.time()
    context = DoctorContext(
        now=now,
        since=now - window if window is not None else None,
        python=python,
        own_python=own,
        frameworks=frameworks,
        dists=dists,
        modules=modules,
        marker=marker,
        state=state,
        session=this_session(),
        environ=os.environ,
        kill_leftovers=kill_leftovers,
        load_nvml=load_nvml,
        nvml_needs_device=nvml_needs_device,
        import_timeout=import_timeout,
        grace=grace,
        say=say,
    )
    findings: list[Finding] = []
    notes: list[str] = [marker_note] if marker_note else []
    for finder in finders:
        found = finder(context)
        findings.extend(found.findings)
        notes.extend(found.notes)
    findings.sort(key=lambda finding: finding.elsewhere)  # this runtime's first, each finder's order kept
    return DoctorReport(tuple(findings), tuple(notes))
