"""``verify()``: build the expectation, start the children, run the static checks while they
work, and collect the report."""

from __future__ import annotations

import dataclasses
import tempfile
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name

from colabenv._util import processes
from colabenv.errors import StateError, UsageError
from colabenv.host.framework_builds import FrameworkBuild, framework_build
from colabenv.host.installed import Installed, PathScan, scan_path
from colabenv.host.interpreter import Interpreter, probe_interpreter
from colabenv.host.started import process_started_at, restarted_process
from colabenv.models import ComputeCapability, Framework
from colabenv.models.frameworks import FACTS, ordered
from colabenv.script.marker import RestartMarker, marker_path, read_marker
from colabenv.verification.children import (
    PROBE_SEARCH_S,
    ChildRun,
    check_hbm,
    check_smoke,
    check_tpu_smoke,
    check_vram,
    probe_framework,
    run_probe,
    run_smoke,
    run_tpu_smoke,
)
from colabenv.verification.closure import check_consistency, check_versions, dependency_closure
from colabenv.verification.components import ComponentProblems, check_components
from colabenv.verification.cuda import check_cuda
from colabenv.verification.determinism import (
    check_determinism,
    hook_names,
    run_determinism,
    run_environ,
    smoke_ran,
)
from colabenv.verification.duplicates import check_duplicates
from colabenv.verification.expectation import (
    Expectation,
    ExpectationKind,
    checked_timeout,
    expectation_from_lock,
    expectation_from_marker,
    expectation_from_profile,
)
from colabenv.verification.occupancy import gpu_holders, read_host_memory, with_host_facts
from colabenv.verification.packages import (
    SHARED_TIMEOUTS,
    PackageRun,
    check_package,
    package_smokes,
    run_packages,
    skipped,
)
from colabenv.verification.report import Check, Status, VerifyReport
from colabenv.verification.restart import check_env, check_env_of, check_marker, marker_fit
from colabenv.verification.storage import IoRun, check_io, run_io_checks

if TYPE_CHECKING:
    from colabenv.models import Catalog, Fingerprint, Profile, Target
    from colabenv.script.marker import RestartMarker

CPU_SKIP = "--cpu: GPU checks skipped on request"
"""The detail of each GPU check ``verify(cpu=True)`` (``verify --cpu``) skips."""
NO_GPU_SKIP = "no GPU on this host (a GPU check)"
"""The detail of each ``smoke:<package>`` check on a host without a GPU."""


@dataclass
class _Children:
    smoke: dict[Framework, Future[tuple[ChildRun, ChildRun | None]]] = field(default_factory=dict)
    probe: Future[ChildRun] | None = None
    environ: Future[ChildRun] | None = None
    io: Future[list[IoRun]] | None = None
    packages: Future[list[PackageRun]] | None = None


def _framework_children(
    framework: Framework, limit: float, seed: int | None, *, python: str, scratch: Path, tpu: bool = False
) -> tuple[ChildRun, ChildRun | None]:
    """The smoke test (on the TPU when ``tpu``), then (when a seed is given: determinism is asked
    for) the determinism child, unless the smoke child never got its framework imported."""
    if tpu:
        return run_tpu_smoke(framework, limit, python=python, scratch=scratch), None
    smoke = run_smoke(framework, limit, python=python, scratch=scratch)
    if seed is None or not smoke_ran(smoke):
        return smoke, None
    return smoke, run_determinism(framework, seed, limit, python=python, scratch=scratch)


def _roots(expectation: Expectation, installed: Installed) -> list[tuple[str, frozenset[str]]]:
    if expectation.requirements:
        return [(r.name, frozenset(r.extras)) for r in expectation.requirements]
    if expectation.kind is not ExpectationKind.NONE:
        return []
    return [(name, frozenset()) for name in installed.names()]


def _changed_by_script(marker: RestartMarker | None) -> frozenset[str] | None:
    """Names of what the bootstrap script installed or moved; None without a marker."""
    if marker is None:
        return None
    names = set()
    for entry in marker.installed:
        kind, _, rest = entry.partition(":")
        text = rest if kind == "dist" else entry
        if kind in ("apt", "env"):
            continue
        try:
            names.add(canonicalize_name(Requirement(text).name))
        except InvalidRequirement:
            continue
    return frozenset(names)


def _declared(expectation: Expectation) -> set[NormalizedName]:
    """What the user asked for by name: a duplicate of one of these is a FAIL, not a WARN.

    Their dependencies are left out on purpose: a runtime image often carries a second, older
    copy of a common library in the system site directory, behind the one in use.
    """
    names = {canonicalize_name(r.name) for r in expectation.requirements}
    for framework in expectation.frameworks:
        names.update(FACTS[framework].dists)
    return names


def _load_marker(state: Path) -> tuple[RestartMarker | None, StateError | None]:
    try:
        return read_marker(state), None
    except StateError as error:
        return None, error


def _expectation(
    profile: Profile | None, lock: str | None, marker: RestartMarker | None, target: Target, catalog: Catalog
) -> Expectation:
    if profile is not None:
        return expectation_from_profile(profile, target, catalog)
    if lock is not None:
        return expectation_from_lock(lock, marker, target)
    if marker is not None:
        return expectation_from_marker(marker)
    return Expectation(source="no marker, profile or lock")


def _shipped_component_problems(
    installed: Mapping[NormalizedName, str], capabilities: tuple[ComputeCapability, ...]
) -> Iterable[object]:
    from colabenv.catalog.components import component_problems
    from colabenv.catalog.load import shipped_components

    return component_problems(
        {str(name): v for name, v in installed.items()}, capabilities, shipped_components()
    )


def _tpu_smoke(
    target: Target, smoke: Iterable[Framework], installed: Installed, *, cpu: bool = False
) -> frozenset[Framework]:
    """The frameworks whose smoke test runs on the TPU: on a TPU host, those installed with
    their TPU runtime (libtpu, torch_xla); the others run the CPU smoke test (all, with
    ``cpu``)."""
    if target.tpu is None or target.has_gpu or cpu:
        return frozenset()
    return frozenset(
        framework
        for framework in smoke
        if any(installed.version(name) for name in FACTS[framework].tpu_runtime)
    )


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
    part of ``vram``) are SKIP with :data:`CPU_SKIP`, the framework smoke tests ask for no GPU,
    and every other check runs: a GPU profile's CPU checks, on a CPU host (CI).
    ``component_problems``: what judges the installed NVIDIA component wheels against the GPUs;
    by default the shipped component facts (``profiles/catalog/components.toml``); given,
    a ``components`` check follows the ``cuda:`` checks.
    """
    from colabenv.app.resolution import load_catalog
    from colabenv.catalog.load import shipped_tpu
    from colabenv.host.detect import detect
    from colabenv.profile.files import find_profile
    from colabenv.profile.load import load_profile
    from colabenv.resolve.overrides import TargetFlags, resolve_overrides

    if profile is not None and lock is not None:
        raise UsageError("verify: give --profile or --lock, not both")
    limit_given = checked_timeout(timeout) if timeout is not None else None
    python = probe_interpreter(interpreter) if interpreter is not None else Interpreter.current()
    loaded = load_profile(find_profile(profile)) if profile is not None else None
    if loaded is not None and loaded.watch.enabled:
        from colabenv.recorder.control import start_for_profile

        start_for_profile(loaded.watch)  # [watch] enabled: the recorder runs from here on
    catalog = load_catalog(loaded, frameworks=Framework)
    fingerprint: Fingerprint = detect(
        resolve_overrides(TargetFlags(), tpu_facts=shipped_tpu), interpreter=python
    )
    target = fingerprint.target
    if fingerprint.state_dir is None:
        from colabenv.script.state import NO_HOME

        raise StateError(f"verify: no restart marker can be looked for: {NO_HOME}")
    state = fingerprint.state_dir
    marker, marker_error = _load_marker(state)
    expectation = _expectation(loaded, lock, marker, target, catalog)
    scan = scan_path(python.path, stdlib=python.stdlib, extension_suffixes=python.extension_suffixes)
    installed = Installed.of_scan(scan)
    if expectation.kind is ExpectationKind.NONE:
        present = ordered(f for f in Framework if framework_build(f, installed, catalog))
        expectation = dataclasses.replace(expectation, frameworks=present, smoke=present)
    limit = limit_given or expectation.timeout_s
    has_gpu = target.has_gpu and not cpu
    tpu_smoke = _tpu_smoke(target, expectation.smoke, installed, cpu=cpu)
    probe_with = probe_framework(scan.modules.__contains__) if has_gpu else None
    packages = package_smokes([r.name for r in expectation.requirements], installed.names())
    builds = {
        f: framework_build(f, installed, catalog) for f in (*expectation.frameworks, *expectation.smoke)
    }

    repro = expectation.reproducibility
    compare_seed = (repro.seed or 0) if repro.deterministic else None
    # each framework's children take up to two timeouts when determinism is compared: the VRAM
    # probe, which waits for them, gets as long before it gives up
    probe_limit = limit * 2 if compare_seed is not None else limit
    if packages and has_gpu:  # and the packages' children, one after another, as long as they share
        probe_limit = max(probe_limit, SHARED_TIMEOUTS * limit)
    # another interpreter's [env] is read in a new process of it, as its determinism variables
    own_python = interpreter is None
    env_names = () if own_python or not expectation.env_known else tuple(n for n, _ in expectation.env)
    environ_names = tuple(dict.fromkeys((*hook_names(repro), *env_names)))
    frameworks_done = threading.Event()
    with (
        processes.ended_on_interrupt() as end_children,
        tempfile.TemporaryDirectory(prefix="colabenv-verify-") as folder,
        ThreadPoolExecutor(max_workers=len(expectation.smoke) + 4) as pool,
    ):
        try:
            scratch = Path(folder)
            go_file = scratch / "smoke-done"
            exe = python.executable
            children = _Children()
            try:
                for framework in expectation.smoke:
                    children.smoke[framework] = pool.submit(
                        _framework_children,
                        framework,
                        limit,
                        compare_seed,
                        python=exe,
                        scratch=scratch,
                        tpu=framework in tpu_smoke,
                    )
                if packages and has_gpu:
                    children.packages = pool.submit(
                        run_packages, packages, limit, python=exe, scratch=scratch
                    )
                if probe_with is not None:
                    children.probe = pool.submit(
                        run_probe, probe_with, go_file, probe_limit, python=exe, scratch=scratch
                    )
                if environ_names:
                    children.environ = pool.submit(
                        run_environ, environ_names, limit, python=exe, scratch=scratch, own=own_python
                    )
                if expectation.io:
                    children.io = pool.submit(
                        run_io_checks,
                        expectation.io,
                        expectation.io_size_mib,
                        limit,
                        python=exe,
                        places=python.path,
                        frameworks_done=frameworks_done,
                    )
                checks, deterministic_runs = _while_children_run(
                    expectation,
                    children,
                    marker,
                    marker_error,
                    state,
                    scan,
                    installed,
                    builds,
                    target,
                    catalog,
                    exe,
                    limit,
                    component_problems,
                    tpu_smoke,
                    cpu=cpu,
                )
                # the packages' smoke tests, after the frameworks' and before the VRAM probe
                if children.packages is not None:
                    runs = children.packages.result()
                    checks.extend(check_package(done, timeout=limit) for done in runs)
                else:
                    checks.extend(skipped(packages, CPU_SKIP if cpu else NO_GPU_SKIP))
            finally:
                frameworks_done.set()
                go_file.touch()
            probe = children.probe.result() if children.probe is not None else None
            environ_run = children.environ.result() if children.environ is not None else None
            io_runs = children.io.result() if children.io is not None else []
        except BaseException:
            # interrupted (Ctrl-C, SIGTERM) or failed: the children end now, not at their
            # timeout, before the pool waits for its threads and the scratch folder goes
            end_children()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    checks.extend(check_io(run, timeout=limit) for run in io_runs)
    checks.append(check_determinism(repro, environ_run, deterministic_runs, timeout=limit))

    if cpu:
        vram = Check("vram", Status.SKIP, CPU_SKIP)
    elif target.tpu is not None and not has_gpu:
        tpu_runs = {f: children.smoke[f].result()[0] for f in expectation.smoke if f in tpu_smoke}
        vram = check_hbm(target.tpu, tpu_runs, min_free_gib=expectation.min_free_vram_gib)
    else:
        vram = check_vram(
            fingerprint.gpus,
            probe,
            probe_timeout=probe_limit + PROBE_SEARCH_S + 5,
            host_has_gpu=has_gpu,
            require_gpu=expectation.require_gpu,
            min_free_gib=expectation.min_free_vram_gib,
        )
    holders = gpu_holders() if has_gpu else None
    checks.append(
        with_host_facts(
            vram,
            holders,
            read_host_memory(),
            min_free_ram_gib=expectation.min_free_ram_gib,
            max_other_share=expectation.max_other_vram_share,
        )
    )
    fit = marker_fit(marker, expectation.profile, python.executable)
    if own_python or not expectation.env_known:
        checks.append(check_env(expectation.env, hint=fit.hint, known=expectation.env_known))
    else:
        checks.append(check_env_of(expectation.env, environ_run, python.executable, timeout=limit, fit=fit))
    return VerifyReport(tuple(checks), expectation.source)


def _while_children_run(
    expectation: Expectation,
    children: _Children,
    marker: RestartMarker | None,
    marker_error: StateError | None,
    state: Path,
    scan: PathScan,
    installed: Installed,
    builds: Mapping[Framework, FrameworkBuild | None],
    target: Target,
    catalog: Catalog,
    exe: str,
    limit: float,
    component_problems: ComponentProblems | None,
    tpu_smoke: frozenset[Framework] = frozenset(),
    *,
    cpu: bool = False,
) -> tuple[list[Check], dict[Framework, ChildRun | None]]:
    """The static checks, then each framework's smoke check as its child finishes; returns the
    checks and the determinism children's runs (None: not run) for the determinism check."""
    pid, who = restarted_process()
    fit = marker_fit(marker, expectation.profile, exe)
    checks = [
        check_marker(
            marker,
            marker_error,
            marker_path(state),
            process_started_at(pid),
            who,
            explicit=expectation.explicit,
            fit=fit,
        ),
        check_versions(expectation, installed.version),
    ]
    closure = dependency_closure(_roots(expectation, installed), installed.get)
    declared = _declared(expectation)
    modules = {m for name in declared for m in installed.top_level(name)}
    checks.append(check_duplicates(scan, declared, modules))
    checks.append(check_consistency(closure, _changed_by_script(marker)))
    for framework in expectation.frameworks:
        if cpu:
            checks.append(Check(f"cuda:{framework.value}", Status.SKIP, CPU_SKIP))
            continue
        checks.append(
            check_cuda(framework, builds[framework], target, catalog, require_gpu=expectation.require_gpu)
        )
    if cpu:
        checks.append(Check("components", Status.SKIP, CPU_SKIP))
    elif target.has_gpu:
        versions = {name: installed.version(name) or "" for name in installed.names()}
        checks.append(
            check_components(
                versions, target.compute_capabilities, component_problems or _shipped_component_problems
            )
        )
    deterministic_runs: dict[Framework, ChildRun | None] = {}
    for framework, future in children.smoke.items():
        build = builds[framework]
        smoke, deterministic = future.result()
        deterministic_runs[framework] = deterministic
        if framework in tpu_smoke and target.tpu is not None:
            checks.append(check_tpu_smoke(framework, smoke, timeout=limit, tpu=target.tpu))
            continue
        checks.append(
            check_smoke(
                framework,
                smoke,
                timeout=limit,
                host_has_gpu=target.has_gpu and not cpu,
                require_gpu=expectation.require_gpu and not cpu,
                cpu_build=build is not None and build.is_cpu_variant,
            )
        )
    return checks, deterministic_runs
