"""The check families ``verify`` runs, in :data:`FAMILIES`, the order of the report: each one a
name, when it applies, and the function that makes its checks from one :class:`VerifyContext`
and the :class:`Children` started for it (:mod:`colabenv.verification.run` starts them and walks
the table). The families before the first ``after_children`` one run while the children work
(the static checks first, then each smoke check as its child finishes); the others once every
child has ended (the VRAM probe has searched, the storage runs are done)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name

from colabenv.accelerators.base import DeviceSmoke, VerifyChecks
from colabenv.host.gpu_holders import gpu_holders
from colabenv.host.memory import host_memory
from colabenv.host.started import process_started_at, restarted_process
from colabenv.models import ComputeCapability, Framework
from colabenv.models.frameworks import FACTS
from colabenv.models.frozen import record
from colabenv.script.marker import marker_path
from colabenv.verification.causes import with_cause
from colabenv.verification.children import (
    GPU_SMOKE,
    PROBE_SEARCH_S,
    TPU_SMOKE,
    ChildRun,
    SmokeDevice,
    check_hbm,
    check_smoke,
    check_tpu_smoke,
    check_vram,
    parse_smoke,
)
from colabenv.verification.closure import check_consistency, check_versions, dependency_closure
from colabenv.verification.components import ComponentProblems, check_components
from colabenv.verification.cuda import check_cuda
from colabenv.verification.determinism import check_determinism
from colabenv.verification.duplicates import check_duplicates
from colabenv.verification.expectation import Expectation, ExpectationKind
from colabenv.verification.occupancy import with_host_facts
from colabenv.verification.packages import PackageRun, PackageSmoke, check_package, skipped
from colabenv.verification.report import Check, Status
from colabenv.verification.restart import check_env, check_env_of, check_marker, marker_fit
from colabenv.verification.rocm import ROCM_SMOKE, check_free_threading, check_rocm_smoke
from colabenv.verification.storage import IoRun, check_io

if TYPE_CHECKING:
    from colabenv.errors import StateError
    from colabenv.host.framework_builds import FrameworkBuild
    from colabenv.host.installed import Installed, PathScan
    from colabenv.host.interpreter import Interpreter
    from colabenv.models import Catalog, Gpu, Target
    from colabenv.script.marker import RestartMarker

CPU_SKIP = "--cpu: GPU checks skipped on request"
"""The detail of each GPU check ``verify(cpu=True)`` (``verify --cpu``) skips."""
NO_GPU_SKIP = "no GPU on this host (a GPU check)"
"""The detail of each ``smoke:<package>`` check on a host without a GPU."""


@record
class VerifyContext:
    """What every check family is given: the expectation, the restart marker (or why it could
    not be read), what is installed on the verified interpreter's path, the host, and the bounds.

    ``limit``: each child's timeout; ``probe_limit``: how long the VRAM probe waits for the smoke
    children; ``own_python``: the verified interpreter is the one running colabenv; ``cpu``:
    ``verify --cpu``; ``checks``: what the target's kind checks of its device
    (:class:`~colabenv.accelerators.base.VerifyChecks`); ``gpu_checks``: the GPU's children and
    checks run (the kind's ``gpus``, and ``cpu`` is off); ``smoke_on``: the device each
    framework's smoke test runs on (:data:`SMOKES`); ``packages``: the CUDA packages that get a
    smoke test; ``compare_seed``: the seed of the determinism children (None: not compared);
    ``environ_names``: the variables read in a new process of the verified interpreter;
    ``probe_with``: the framework the VRAM probe uses (None: no probe)."""

    expectation: Expectation
    marker: RestartMarker | None
    marker_error: StateError | None
    state: Path
    python: Interpreter
    own_python: bool
    scan: PathScan
    installed: Installed
    builds: Mapping[Framework, FrameworkBuild | None]
    target: Target
    gpus: tuple[Gpu, ...]
    catalog: Catalog
    limit: float
    probe_limit: float
    cpu: bool
    checks: VerifyChecks
    gpu_checks: bool
    smoke_on: Mapping[Framework, DeviceSmoke]
    packages: tuple[PackageSmoke, ...]
    compare_seed: int | None
    environ_names: tuple[str, ...]
    probe_with: str | None
    component_problems: ComponentProblems | None = None


@dataclass
class Children:
    """The children started for a run, as futures: each framework's smoke test (and its
    determinism child), the packages' smoke tests, the VRAM probe, the environment reader and
    the storage runs; None where not started."""

    smoke: dict[Framework, Future[tuple[ChildRun, ChildRun | None]]] = field(default_factory=dict)
    probe: Future[ChildRun] | None = None
    environ: Future[ChildRun] | None = None
    io: Future[list[IoRun]] | None = None
    packages: Future[list[PackageRun]] | None = None

    def wait(self) -> None:
        """Wait for the children that outlive the smoke tests (an error of one is raised)."""
        for future in (self.probe, self.environ, self.io):
            if future is not None:
                future.result()


def _always(context: VerifyContext) -> bool:
    return True


@record
class CheckFamily:
    """One family of checks: ``name``, what its checks are called; ``checks``, what makes them;
    ``applies``, whether the run has any; ``after_children``: it runs once every child has
    ended, not while they work."""

    name: str
    checks: Callable[[VerifyContext, Children], Iterable[Check]]
    applies: Callable[[VerifyContext], bool] = _always
    after_children: bool = False


def _marker(context: VerifyContext, children: Children) -> list[Check]:
    pid, who = restarted_process()
    fit = marker_fit(context.marker, context.expectation.profile, context.python.executable)
    check = check_marker(
        context.marker,
        context.marker_error,
        marker_path(context.state),
        process_started_at(pid),
        who,
        explicit=context.expectation.explicit,
        fit=fit,
    )
    return [check]


def _lock_target(context: VerifyContext, children: Children) -> list[Check]:
    """A WARN where this host is not the target a lock of one target was made for: its pins may
    still install and run here, which the checks after this one say."""
    differences = "; ".join(context.expectation.target_differences)
    return [Check("lock-target", Status.WARN, f"the lock was made for another target: {differences}")]


def _lock_target_differs(context: VerifyContext) -> bool:
    return bool(context.expectation.target_differences)


def _versions(context: VerifyContext, children: Children) -> list[Check]:
    return [check_versions(context.expectation, context.installed.version)]


def _declared(expectation: Expectation) -> set[NormalizedName]:
    """What the user asked for by name: a duplicate of one of these is a FAIL, not a WARN.

    Their dependencies are left out on purpose: a runtime image often carries a second, older
    copy of a common library in the system site directory, behind the one in use.
    """
    names = {canonicalize_name(r.name) for r in expectation.requirements}
    for framework in expectation.frameworks:
        names.update(FACTS[framework].dists)
    return names


def _duplicates(context: VerifyContext, children: Children) -> list[Check]:
    declared = _declared(context.expectation)
    modules = {m for name in declared for m in context.installed.top_level(name)}
    return [check_duplicates(context.scan, declared, modules)]


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


def _consistency(context: VerifyContext, children: Children) -> list[Check]:
    closure = dependency_closure(_roots(context.expectation, context.installed), context.installed.get)
    return [check_consistency(closure, _changed_by_script(context.marker))]


def _cuda(context: VerifyContext, children: Children) -> list[Check]:
    frameworks = context.expectation.frameworks
    if context.cpu:
        return [Check(f"cuda:{framework.value}", Status.SKIP, CPU_SKIP) for framework in frameworks]
    require_gpu = context.expectation.verify.require_gpu
    return [
        check_cuda(
            framework, context.builds[framework], context.target, context.catalog, require_gpu=require_gpu
        )
        for framework in frameworks
    ]


def shipped_component_problems(
    installed: Mapping[NormalizedName, str], capabilities: tuple[ComputeCapability, ...], platform: str
) -> Iterable[object]:
    """The installed components judged by the shipped facts, with the arch lists of the host's
    platform's wheels."""
    from colabenv.catalog.components import component_problems
    from colabenv.catalog.load import shipped_components

    return component_problems(
        {str(name): v for name, v in installed.items()},
        capabilities,
        shipped_components().for_platform(platform),
    )


def _components(context: VerifyContext, children: Children) -> list[Check]:
    if context.cpu:
        return [Check("components", Status.SKIP, CPU_SKIP)]
    installed = context.installed
    versions = {name: installed.version(name) or "" for name in installed.names()}
    judge = context.component_problems or functools.partial(
        shipped_component_problems, platform=context.target.platform
    )
    return [check_components(versions, context.target.compute_capabilities, judge)]


def _framework_smoke(context: VerifyContext, children: Children) -> list[Check]:
    """Each framework's smoke check, as its child finishes, in the order they were started,
    judged for the device it ran on (:data:`SMOKES`); a FAIL names its cause as doctor does, on
    every device alike (:func:`with_cause`: "no kernel image is available ...", "HIP error:
    invalid device function", a library missing at import)."""
    checks = []
    for framework, future in children.smoke.items():
        smoke, _ = future.result()
        judged = SMOKES[context.smoke_on[framework]].judge(framework, smoke, context)
        checks.append(with_cause(judged, smoke))
    results = [parse_smoke(future.result()[0].result) for future in children.smoke.values()]
    threading = check_free_threading([r for r in results if r is not None])
    return [*checks, *([threading] if threading is not None else [])]


def _package_smoke(context: VerifyContext, children: Children) -> list[Check]:
    """The packages' smoke checks (after the frameworks' and before the VRAM probe), or each
    SKIP where their children did not run (no GPU, ``--cpu``)."""
    if children.packages is not None:
        return [check_package(done, timeout=context.limit) for done in children.packages.result()]
    return skipped(context.packages, CPU_SKIP if context.cpu else NO_GPU_SKIP)


def _io(context: VerifyContext, children: Children) -> list[Check]:
    runs = children.io.result() if children.io is not None else []
    return [check_io(run, timeout=context.limit) for run in runs]


def _determinism(context: VerifyContext, children: Children) -> list[Check]:
    """The frameworks whose smoke device is followed by a determinism child are compared; the
    others (a smoke test on the TPU) are named as not run twice, never as failed."""
    environ = children.environ.result() if children.environ is not None else None
    runs: dict[Framework, ChildRun | None] = {}
    elsewhere: list[str] = []
    for framework, future in children.smoke.items():
        device = context.smoke_on.get(framework, DeviceSmoke.CPU)
        if SMOKES[device].determinism:
            runs[framework] = future.result()[1]
        else:
            elsewhere.append(f"{framework} (its smoke test ran on the {device.name})")
    reproducibility = context.expectation.reproducibility
    return [
        check_determinism(reproducibility, environ, runs, timeout=context.limit, not_run=tuple(elsewhere))
    ]


def _device_memory(context: VerifyContext, children: Children) -> Check:
    """``vram`` before the host's facts join it: SKIP with ``--cpu``, the memory the kind's
    smoke device reads where it has its own (a TPU's HBM), else the GPUs' memory as NVML and the
    probe saw it."""
    verify = context.expectation.verify
    if context.cpu:
        return Check("vram", Status.SKIP, CPU_SKIP)
    own = SMOKES[context.checks.smoke].memory
    if own is not None:
        return own(context, children)
    return check_vram(
        context.gpus,
        children.probe.result() if children.probe is not None else None,
        probe_timeout=context.probe_limit + PROBE_SEARCH_S + 5,
        host_has_gpu=context.gpu_checks,
        require_gpu=verify.require_gpu,
        min_free_gib=verify.min_free_vram_gib,
    )


def _vram(context: VerifyContext, children: Children) -> list[Check]:
    """``vram``, with who holds each GPU (asked once verify's own children are gone) and the
    host's RAM joined to it."""
    verify = context.expectation.verify
    vram = _device_memory(context, children)
    holders = gpu_holders() if context.gpu_checks else None
    check = with_host_facts(
        vram,
        holders,
        host_memory(),
        min_free_ram_gib=verify.min_free_ram_gib,
        max_other_share=verify.max_other_vram_share,
    )
    return [check]


def _env(context: VerifyContext, children: Children) -> list[Check]:
    expectation = context.expectation
    executable = context.python.executable
    fit = marker_fit(context.marker, expectation.profile, executable)
    if context.own_python or not expectation.env_known:
        return [check_env(expectation.env, hint=fit.hint, known=expectation.env_known)]
    environ = children.environ.result() if children.environ is not None else None
    return [check_env_of(expectation.env, environ, executable, timeout=context.limit, fit=fit)]


def _components_apply(context: VerifyContext) -> bool:
    """``components`` is there where the kind checks CUDA (and SKIP with ``--cpu``)."""
    return context.cpu or context.checks.cuda


def _io_asked(context: VerifyContext) -> bool:
    return bool(context.expectation.verify.io)


# ---------------------------------------------------------------------------------------------
# The smoke tests, per device a kind declares


def _cpu_build(context: VerifyContext, framework: Framework) -> bool:
    build = context.builds[framework]
    return build is not None and build.is_cpu_variant


def _require_gpu(context: VerifyContext) -> bool:
    return context.expectation.verify.require_gpu and not context.cpu


def _gpu_smoke(framework: Framework, run: ChildRun, context: VerifyContext) -> Check:
    return check_smoke(
        framework,
        run,
        timeout=context.limit,
        host_has_gpu=context.gpu_checks,
        require_gpu=_require_gpu(context),
        cpu_build=_cpu_build(context, framework),
    )


def _hip_smoke(framework: Framework, run: ChildRun, context: VerifyContext) -> Check:
    return check_rocm_smoke(
        framework,
        run,
        timeout=context.limit,
        require_gpu=_require_gpu(context),
        cpu_build=_cpu_build(context, framework),
    )


def _tpu_smoke(framework: Framework, run: ChildRun, context: VerifyContext) -> Check:
    tpu = context.target.tpu
    assert tpu is not None, "a TPU smoke test on a target of a kind without a TPU"
    return check_tpu_smoke(framework, run, timeout=context.limit, tpu=tpu)


def _hbm(context: VerifyContext, children: Children) -> Check:
    tpu = context.target.tpu
    assert tpu is not None, "a TPU's HBM on a target of a kind without a TPU"
    runs = {
        framework: children.smoke[framework].result()[0]
        for framework in context.expectation.smoke
        if context.smoke_on.get(framework) is DeviceSmoke.TPU
    }
    return check_hbm(tpu, runs, min_free_gib=context.expectation.verify.min_free_vram_gib)


@record
class SmokeOn:
    """How ``verify`` runs and judges a framework's smoke test on one
    :class:`~colabenv.accelerators.base.DeviceSmoke`: ``child``, the smoke child's device;
    ``judge``, its ``smoke:<framework>`` check; ``runtime_only``: the test runs on the device only
    for a framework installed with its TPU runtime (libtpu, torch_xla), the others' on the CPU;
    ``determinism``: the determinism child follows it (where a seed is compared); ``memory``:
    the ``vram`` check of the device's own memory (None: NVML's GPUs and the probe)."""

    child: SmokeDevice
    judge: Callable[[Framework, ChildRun, VerifyContext], Check]
    runtime_only: bool = False
    determinism: bool = True
    memory: Callable[[VerifyContext, Children], Check] | None = None


SMOKES: Mapping[DeviceSmoke, SmokeOn] = {
    DeviceSmoke.CPU: SmokeOn(GPU_SMOKE, _gpu_smoke),
    DeviceSmoke.GPU: SmokeOn(GPU_SMOKE, _gpu_smoke),
    DeviceSmoke.HIP: SmokeOn(ROCM_SMOKE, _hip_smoke),
    DeviceSmoke.TPU: SmokeOn(TPU_SMOKE, _tpu_smoke, runtime_only=True, determinism=False, memory=_hbm),
}
"""What each device a kind declares (``VerifyChecks.smoke``) runs and checks: a new device is
one entry here, a new kind on a known device none."""


FAMILIES: Sequence[CheckFamily] = (
    CheckFamily("marker", _marker),
    CheckFamily("lock-target", _lock_target, applies=_lock_target_differs),
    CheckFamily("versions", _versions),
    CheckFamily("duplicates", _duplicates),
    CheckFamily("consistency", _consistency),
    CheckFamily("cuda:<framework>", _cuda),
    CheckFamily("components", _components, applies=_components_apply),
    CheckFamily("smoke:<framework>", _framework_smoke),
    CheckFamily("smoke:<package>", _package_smoke),
    CheckFamily("io:<path>", _io, applies=_io_asked, after_children=True),
    CheckFamily("determinism", _determinism, after_children=True),
    CheckFamily("vram", _vram, after_children=True),
    CheckFamily("env", _env, after_children=True),
)
"""Every check family, in the order of the report."""
