"""``verify()``: build the expectation and the :class:`~colabenv.verification.families.VerifyContext`,
start the children, walk :data:`~colabenv.verification.families.FAMILIES` (the static checks while
the children work, the others once they have ended), and collect the report."""

from __future__ import annotations

import dataclasses
import tempfile
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from colabenv._util import processes
from colabenv.accelerators.base import DeviceSmoke, VerifyChecks
from colabenv.accelerators.registry import accelerator_of
from colabenv.errors import StateError, UsageError
from colabenv.host.framework_builds import framework_build
from colabenv.host.installed import Installed, scan_path
from colabenv.host.interpreter import Interpreter, probe_interpreter
from colabenv.models import Framework
from colabenv.models.frameworks import FACTS, ordered
from colabenv.models.frozen import record
from colabenv.script.marker import RestartMarker, read_marker
from colabenv.verification.children import ChildRun, probe_framework, run_probe, run_smoke
from colabenv.verification.components import ComponentProblems
from colabenv.verification.determinism import hook_names, run_determinism, run_environ, smoke_ran
from colabenv.verification.expectation import (
    Expectation,
    ExpectationKind,
    checked_timeout,
    expectation_from_lock,
    expectation_from_marker,
    expectation_from_profile,
)
from colabenv.verification.families import FAMILIES, SMOKES, CheckFamily, Children, VerifyContext
from colabenv.verification.packages import SHARED_TIMEOUTS, package_smokes, run_packages
from colabenv.verification.report import Check, VerifyReport
from colabenv.verification.restart import environ_words
from colabenv.verification.storage import run_io_checks

if TYPE_CHECKING:
    from colabenv.models import Catalog, Fingerprint, Profile, Target


def _framework_children(
    framework: Framework,
    limit: float,
    seed: int | None,
    *,
    python: str,
    scratch: Path,
    device: DeviceSmoke,
) -> tuple[ChildRun, ChildRun | None]:
    """The smoke test on ``device`` (:data:`~colabenv.verification.families.SMOKES`), then (when
    a seed is given: determinism is asked for, and the device's smoke test is followed by one)
    the determinism child, unless the smoke child never got its framework imported."""
    on = SMOKES[device]
    smoke = run_smoke(framework, limit, python=python, scratch=scratch, device=on.child)
    if seed is None or not on.determinism or not smoke_ran(smoke):
        return smoke, None
    return smoke, run_determinism(framework, seed, limit, python=python, scratch=scratch)


def _load_marker(state: Path) -> tuple[RestartMarker | None, StateError | None]:
    try:
        return read_marker(state), None
    except StateError as error:
        return None, error


def _expectation(
    profile: Profile | None, lock: str | None, marker: RestartMarker | None, target: Target
) -> Expectation:
    """The profile's install plan for this host, else the lock's pins, else the marker's record."""
    if profile is not None:
        return expectation_from_profile(profile, target)
    if lock is not None:
        return expectation_from_lock(lock, marker, target)
    if marker is not None:
        return expectation_from_marker(marker)
    return Expectation(source="no marker, profile or lock")


def _smoke_on(
    checks: VerifyChecks, smoke: Iterable[Framework], installed: Installed, *, cpu: bool = False
) -> dict[Framework, DeviceSmoke]:
    """The device each framework's smoke test runs on: the one the kind declares (the CPU with
    ``cpu``); where that device's test needs the framework's TPU runtime (libtpu, torch_xla),
    the CPU for a framework installed without it."""
    device = DeviceSmoke.CPU if cpu else checks.smoke
    runtime_only = SMOKES[device].runtime_only
    return {
        framework: device
        if not runtime_only or any(installed.version(name) for name in FACTS[framework].tpu_runtime)
        else DeviceSmoke.CPU
        for framework in smoke
    }


@record
class _Asked:
    """What the caller of :func:`verify` asked, past the profile and the host: the interpreter,
    whether it is colabenv's own, the timeout given (None: the expectation's), ``--cpu``."""

    python: Interpreter
    own_python: bool
    timeout: float | None
    cpu: bool
    component_problems: ComponentProblems | None


def _context(
    loaded: Profile | None,
    lock: str | None,
    catalog: Catalog,
    fingerprint: Fingerprint,
    state: Path,
    asked: _Asked,
) -> VerifyContext:
    """The expectation (with the frameworks installed, where nothing names any), what is
    installed, and the bounds every child and check works to."""
    target, python, cpu = fingerprint.target, asked.python, asked.cpu
    marker, marker_error = _load_marker(state)
    expectation = _expectation(loaded, lock, marker, target)
    scan = scan_path(python.path, stdlib=python.stdlib, extension_suffixes=python.extension_suffixes)
    installed = Installed.of_scan(scan)
    if expectation.kind is ExpectationKind.NONE:
        present = ordered(
            f for f in Framework if framework_build(f, installed, catalog, platform=target.platform)
        )
        expectation = dataclasses.replace(expectation, frameworks=present, smoke=present)
    limit = asked.timeout or expectation.verify.timeout_s
    checks = accelerator_of(target).verify_checks
    gpu_checks = checks.gpus and not cpu
    packages = package_smokes([r.name for r in expectation.requirements], installed.names())
    repro = expectation.reproducibility
    compare_seed = (repro.seed or 0) if repro.deterministic else None
    # each framework's children take up to two timeouts when determinism is compared: the VRAM
    # probe, which waits for them, gets as long before it gives up
    probe_limit = limit * 2 if compare_seed is not None else limit
    if packages and gpu_checks:  # and the packages' children, one after another, as long as they share
        probe_limit = max(probe_limit, SHARED_TIMEOUTS * limit)
    # another interpreter's [env] is read in a new process of it, as its determinism variables
    read_env = not asked.own_python and expectation.env_known
    env_names = environ_words(expectation.env) if read_env else ()
    return VerifyContext(
        expectation=expectation,
        marker=marker,
        marker_error=marker_error,
        state=state,
        python=python,
        own_python=asked.own_python,
        scan=scan,
        installed=installed,
        builds={
            f: framework_build(f, installed, catalog, platform=target.platform)
            for f in (*expectation.frameworks, *expectation.smoke)
        },
        target=target,
        gpus=fingerprint.gpus,
        catalog=catalog,
        limit=limit,
        probe_limit=probe_limit,
        cpu=cpu,
        checks=checks,
        gpu_checks=gpu_checks,
        smoke_on=_smoke_on(checks, expectation.smoke, installed, cpu=cpu),
        packages=packages,
        compare_seed=compare_seed,
        environ_names=tuple(dict.fromkeys((*hook_names(repro), *env_names))),
        probe_with=probe_framework(scan.modules.__contains__) if gpu_checks else None,
        component_problems=asked.component_problems,
    )


def _start_children(
    context: VerifyContext,
    children: Children,
    pool: ThreadPoolExecutor,
    scratch: Path,
    go_file: Path,
    frameworks_done: threading.Event,
) -> None:
    """Each framework's smoke test (and determinism child), the packages' smoke tests (on a GPU
    host), the VRAM probe (it searches once ``go_file`` is there), the environment reader and
    the storage runs (those on the packages' disk wait for ``frameworks_done``); their files go
    in ``scratch``."""
    exe = context.python.executable
    expectation = context.expectation
    for framework in expectation.smoke:
        children.smoke[framework] = pool.submit(
            _framework_children,
            framework,
            context.limit,
            context.compare_seed,
            python=exe,
            scratch=scratch,
            device=context.smoke_on[framework],
        )
    if context.packages and context.gpu_checks:
        children.packages = pool.submit(
            run_packages, context.packages, context.limit, python=exe, scratch=scratch
        )
    if context.probe_with is not None:
        children.probe = pool.submit(
            run_probe, context.probe_with, go_file, context.probe_limit, python=exe, scratch=scratch
        )
    if context.environ_names:
        children.environ = pool.submit(
            run_environ,
            context.environ_names,
            context.limit,
            python=exe,
            scratch=scratch,
            own=context.own_python,
        )
    if expectation.verify.io:
        children.io = pool.submit(
            run_io_checks,
            expectation.verify.io,
            expectation.verify.io_size_mib,
            context.limit,
            python=exe,
            places=context.python.path,
            frameworks_done=frameworks_done,
        )


def _walk(families: Sequence[CheckFamily], context: VerifyContext, children: Children) -> list[Check]:
    return [
        check for family in families if family.applies(context) for check in family.checks(context, children)
    ]


def _run_checks(context: VerifyContext, families: Sequence[CheckFamily] = FAMILIES) -> list[Check]:
    """Start the children, walk ``families`` in order (those ``after_children`` once every
    child has ended), and return the checks. Interrupted (Ctrl-C, SIGTERM) or failed, the
    children end at once, not at their timeout."""
    during = [family for family in families if not family.after_children]
    after = [family for family in families if family.after_children]
    frameworks_done = threading.Event()
    children = Children()
    with (
        processes.ended_on_interrupt() as end_children,
        tempfile.TemporaryDirectory(prefix="colabenv-verify-") as folder,
        ThreadPoolExecutor(max_workers=len(context.expectation.smoke) + 4) as pool,
    ):
        try:
            scratch = Path(folder)
            go_file = scratch / "smoke-done"
            try:
                _start_children(context, children, pool, scratch, go_file, frameworks_done)
                checks = _walk(during, context, children)
            finally:
                frameworks_done.set()
                go_file.touch()
            children.wait()
        except BaseException:
            # the children end now, before the pool waits for its threads and the scratch
            # folder goes
            end_children()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return checks + _walk(after, context, children)


def verify(
    profile: str | None = None,
    lock: str | None = None,
    timeout: float | None = None,
    interpreter: str | None = None,
    *,
    cpu: bool = False,
    component_problems: ComponentProblems | None = None,
) -> VerifyReport:
    """Run every check and return the report; never raises for a failed check.

    ``interpreter``: the Python to verify (its sys.path, version, smoke tests), by default the
    one running colabenv. It needs nothing but the standard library and its own packages.
    ``cpu``: the GPU (and TPU) checks (``cuda:``, ``components``, ``smoke:<package>``, the GPU
    part of ``vram``) are SKIP with :data:`~colabenv.verification.families.CPU_SKIP`, the
    framework smoke tests ask for no GPU, and every other check runs: a GPU profile's CPU
    checks, on a CPU host (CI).
    ``component_problems``: what judges the installed NVIDIA component wheels against the GPUs;
    by default the shipped component facts (``profiles/catalog/components.toml``); given,
    a ``components`` check follows the ``cuda:`` checks.
    """
    from colabenv.app.resolution import host_fingerprint, load_catalog
    from colabenv.profile.files import find_profile
    from colabenv.profile.load import load_profile

    if profile is not None and lock is not None:
        raise UsageError("verify: give --profile or --lock, not both")
    limit_given = checked_timeout(timeout) if timeout is not None else None
    python = probe_interpreter(interpreter) if interpreter is not None else Interpreter.current()
    loaded = load_profile(find_profile(profile)) if profile is not None else None
    if loaded is not None and loaded.watch.enabled:
        from colabenv.recorder.control import start_for_profile

        start_for_profile(loaded.watch)  # [watch] enabled: the recorder runs from here on
    catalog = load_catalog(loaded, frameworks=Framework)
    fingerprint = host_fingerprint(interpreter=python)
    if fingerprint.state_dir is None:
        from colabenv.script.state import NO_HOME

        raise StateError(f"verify: no restart marker can be looked for: {NO_HOME}")
    asked = _Asked(python, interpreter is None, limit_given, cpu, component_problems)
    context = _context(loaded, lock, catalog, fingerprint, fingerprint.state_dir, asked)
    return VerifyReport(tuple(_run_checks(context)), context.expectation.source)
