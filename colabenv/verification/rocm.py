"""verify on AMD GPUs through ROCm, and on a free-threaded interpreter: torch must be a ROCm
build (``torch.version.hip``) and jax must see its GPUs as ROCm devices, each multiplying as the
CPU does (``verify`` names a failure's cause as ``doctor`` reads it, on every device:
:mod:`colabenv.verification.causes`, "HIP error: invalid device function" at the first kernel,
"No HIP GPUs are available" at the GPU's first use); a GIL that was on before the frameworks imported (naming
what asked for it), or that an import turned back on (naming the module), is a WARN."""

from __future__ import annotations

from collections.abc import Sequence

from colabenv.models import Framework
from colabenv.verification.children import (
    ChildRun,
    DeviceResult,
    SmokeDevice,
    SmokeResult,
    check_device_smoke,
    smoke_env,
    smoke_outcome,
    with_tail,
)
from colabenv.verification.report import Check, Status


def check_rocm_smoke(
    framework: Framework, run: ChildRun, *, timeout: float, require_gpu: bool, cpu_build: bool = False
) -> Check:
    """One framework's smoke test on AMD GPUs through ROCm: torch must be a ROCm build
    (``torch.version.hip``) and see the GPUs, each multiplying as the CPU does. ``verify``
    adds the cause of a FAIL as it does on every device
    (:func:`colabenv.verification.causes.with_cause`)."""
    name = f"smoke:{framework.value}"

    def no_gpu(result: SmokeResult, label: str) -> Check:
        reason = result.gpu_reason or "no GPU visible"
        if cpu_build and not require_gpu:
            return Check(name, Status.PASS, f"CPU matmul ok ({label}, a CPU build)")
        return Check(
            name,
            Status.FAIL,
            with_tail(f"{label} sees no AMD GPU ({reason}); the host has AMD GPUs", run.completed),
        )

    ran = smoke_outcome(name, framework, run, timeout)
    if isinstance(ran, Check):
        return ran
    result, label = ran
    if framework is Framework.TORCH and result.hip is None and not cpu_build:
        cuda = f"CUDA {result.cuda}" if result.cuda else "the CPU"
        return Check(name, Status.FAIL, f"{label} is built for {cuda}, not ROCm (torch.version.hip is None)")
    if result.platform is not None and result.platform != "rocm":
        return Check(name, Status.FAIL, f"{label} runs its GPUs through {result.platform}, not ROCm")
    return check_device_smoke(ROCM_SMOKE, framework, run, timeout=timeout, no_device=no_gpu)


def _rocm_passed(result: SmokeResult, label: str) -> str:
    names = sorted({f"{d.name} ({d.gfx})" if d.gfx else d.name for d in result.devices})
    count = f"{len(result.devices)} GPUs: " if len(result.devices) > 1 else ""
    through = f"HIP {result.hip}" if result.hip else "ROCm" if result.platform == "rocm" else "HIP ?"
    return f"{count}{', '.join(names)}: matmul agrees with CPU; {label}, {through}"


def _label(device: DeviceResult) -> str:
    return f"GPU {device.index} {device.name}" + (f" ({device.gfx})" if device.gfx else "")


def _no_gap(result: SmokeResult, device: DeviceResult) -> None:
    return None


ROCM_SMOKE = SmokeDevice(mode="smoke", env=smoke_env, label=_label, passed=_rocm_passed, gap=_no_gap)
"""The framework's smoke child on AMD GPUs: torch sees them through HIP as ``cuda`` devices."""


def check_free_threading(results: Sequence[SmokeResult]) -> Check | None:
    """On a free-threaded interpreter, whether the GIL stayed off while the frameworks imported,
    as each smoke child saw it: the interpreter asked before and after the imports
    (``sys._is_gil_enabled()``), and CPython's warning naming each module whose import turned it
    back on. A WARN when it was on already before them (naming what asked for it:
    ``PYTHON_GIL=1``, ``-X gil=1``, else a module imported at startup), or when an import turned
    it on (naming the module, or saying that no warning named one): the problems, then that the
    interpreter runs with the GIL, then each one's remedy (:data:`GIL_REMEDIES` for what asked
    at startup). Else a PASS. None on any other interpreter."""
    threaded = [result for result in results if result.free_threaded]
    if not threaded:
        return None
    found = [*_on_before(threaded), *_turned_on(threaded)]
    if found:
        problems = "; ".join(problem for problem, _ in found)
        remedies = "".join(f"; {remedy}" for remedy in dict.fromkeys(remedy for _, remedy in found))
        return Check(
            "free-threading", Status.WARN, f"{problems}: the interpreter runs with the GIL{remedies}"
        )
    if any(result.gil_after is False for result in threaded):
        return Check(
            "free-threading",
            Status.PASS,
            "the GIL stayed off while the frameworks imported (sys._is_gil_enabled() is False after them)",
        )
    return Check(
        "free-threading",
        Status.PASS,
        "no import warned that it turned the GIL back on"
        " (this interpreter cannot be asked whether it is off)",
    )


GIL_REMEDIES = {
    "-X gil=1 on the interpreter's command line": "drop -X gil=1 to run free-threaded",
    "PYTHON_GIL=1 in the environment": "unset PYTHON_GIL to run free-threaded",
    "the interpreter's configuration (sys.flags.gil is 1)": (
        "start the interpreter without the configuration that asks for the GIL (its embedding"
        " program's) to run free-threaded"
    ),
}
"""The remedy for each thing the smoke child names as having asked for the GIL at startup
(``gil_forced_by`` in ``colabenv/_target/smoke/base.py``)."""


def _on_before(threaded: Sequence[SmokeResult]) -> list[tuple[str, str]]:
    """What a WARN says of a GIL that was on before the frameworks imported: (the problem, its
    remedy)."""
    if not any(result.gil_before for result in threaded):
        return []
    forced = list(dict.fromkeys(r.gil_forced_by for r in threaded if r.gil_before and r.gil_forced_by))
    if forced:
        remedies = [GIL_REMEDIES.get(f, "remove what asks for it to run free-threaded") for f in forced]
        return [
            (
                f"the GIL was on before the frameworks imported: {', '.join(forced)} asks for it",
                "; ".join(dict.fromkeys(remedies)),
            )
        ]
    return [
        (
            "the GIL was on before the frameworks imported, and neither PYTHON_GIL nor -X gil asks for it"
            " (a module imported at startup, by a .pth file or sitecustomize, turned it on before verify"
            " could see CPython's warning)",
            "python -c pass prints that warning, naming the module",
        )
    ]


def _turned_on(threaded: Sequence[SmokeResult]) -> list[tuple[str, str]]:
    """What a WARN says of the imports that turned the GIL on, (the problem, its remedy): the
    modules CPython's warning named, and the frameworks after whose import it was on with no
    warning naming one."""
    found = []
    modules = list(dict.fromkeys(m for result in threaded for m in result.gil_enabled_by))
    if modules:
        found.append(
            (
                f"the GIL was turned back on to import {', '.join(modules)} (not declared free-threading"
                " safe)",
                "PYTHON_GIL=0 keeps it off at your own risk",
            )
        )
    unnamed = [
        r.framework for r in threaded if r.gil_before is False and r.gil_after and not r.gil_enabled_by
    ]
    if unnamed:
        found.append(
            (
                f"the GIL was turned on while {', '.join(dict.fromkeys(unnamed))} imported, and no warning"
                " named the module",
                "the smoke child's stderr may name it",
            )
        )
    return found
