"""verify on AMD GPUs through ROCm, and on a free-threaded interpreter: torch must be a ROCm
build (``torch.version.hip``) and jax must see its GPUs as ROCm devices, each multiplying as the
CPU does; a module
that turned the GIL back on while the frameworks imported is a WARN naming it."""

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
    (``torch.version.hip``) and see the GPUs, each multiplying as the CPU does."""
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
    """On a free-threaded interpreter, WARN naming each module whose import turned the GIL back
    on (the smoke children saw CPython's warning); None on any other interpreter."""
    if not any(result.free_threaded for result in results):
        return None
    modules = list(dict.fromkeys(m for result in results for m in result.gil_enabled_by))
    if not modules:
        return Check("free-threading", Status.PASS, "the GIL stayed off while the frameworks imported")
    return Check(
        "free-threading",
        Status.WARN,
        f"the GIL was turned back on to import {', '.join(modules)} (not declared free-threading safe):"
        " the interpreter runs with the GIL; PYTHON_GIL=0 overrides it at your own risk",
    )
