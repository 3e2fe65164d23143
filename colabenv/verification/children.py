"""The children: one smoke test per framework and the VRAM probe, each in its own process
(``colabenv/_target/smoke/``, a folder run by its path in the interpreter being verified), and the
``smoke:<framework>`` and ``vram`` checks read from what they leave: an exit status, stderr to
quote, and a result file.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from colabenv._util import processes
from colabenv._util.files import FileProblem, read_limited
from colabenv._util.resources import SMOKE_PROGRAM
from colabenv.errors import ProcessError
from colabenv.models import Arch, ComputeCapability, Framework, Gpu, TpuTarget, archs_cover
from colabenv.models.frameworks import FACTS, ORDER
from colabenv.models.frozen import model, record
from colabenv.verification.report import Check, Status

PROBE_SEARCH_S = 10.0
MATMUL_TOLERANCE = 1e-3
GIB = 1024**3
MIB = 1024**2
STDERR_TAIL_LINES = 3
RESULT_LIMIT = 1024 * 1024
TERMINATE_GRACE_S = 3.0
"""How long a child given SIGTERM at its timeout has to kill what it started, before SIGKILL."""
MAX_BYTES = 2**62
MAX_COUNT = 2**31
"""The most non-finite values a child's count is taken as (more is not a real count, but still many)."""
TEXT_LIMIT = 2000
"""The most characters kept of one text a child reports: a whole error line, not a megabyte."""


@model
class ChildRun:
    """A finished child: its process, and the text of its result file (None: it wrote none)."""

    completed: processes.Completed
    result: str | None


@model
class DeviceResult:
    index: int
    name: str
    capability: str | None
    max_abs_diff: float | None
    non_finite: int
    error: str | None
    gfx: str | None = None


@model
class SmokeResult:
    framework: str
    stage: str
    version: str | None
    cuda: str | None
    cudnn: str | None
    arch_list: tuple[str, ...] | None
    devices: tuple[DeviceResult, ...]
    gpu_reason: str | None
    cpu_max_abs_diff: float | None
    cpu_non_finite: int
    error: str | None
    hip: str | None = None
    free_threaded: bool = False
    gil_enabled_by: tuple[str, ...] = ()
    platform: str | None = None
    """jax's GPU platform, ``cuda`` or ``rocm``, where it has GPUs and says which."""
    gil_before: bool | None = None
    gil_after: bool | None = None
    gil_forced_by: str | None = None
    """Whether the GIL was on before the framework imported and after (``sys._is_gil_enabled()``;
    None: the interpreter cannot say), and what asked for it before (``PYTHON_GIL=1 ...``)."""


@model
class GpuMemory:
    index: int
    free: int | None
    total: int | None
    largest: int | None
    complete: bool | None


@model
class ProbeResult:
    framework: str
    gpus: tuple[GpuMemory, ...]
    probed: bool
    reason: str | None
    error: str | None


def result_object(text: str | None, mode: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and data.get("mode") == mode else None


def reported_text(value: object, limit: int = TEXT_LIMIT) -> str | None:
    """A text a child reported (an error, a version), cut at ``limit`` characters with ``...``;
    None stays None."""
    if value is None:
        return None
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def reported_number(value: object) -> float | None:
    """A number a child reported (None: not a number); NaN stays NaN (it fails every comparison
    and bound), a number too large for a float is infinite."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _opt_int(value: object, limit: int = MAX_BYTES) -> int | None:
    """A count or size the child reported, None when it is not one."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        return None
    return value


def reported_count(value: object) -> int:
    """A count a child reported (non-finite values): one past :data:`MAX_COUNT` is held there, not
    read as none; anything but a whole number is 0."""
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return min(max(value, 0), MAX_COUNT)


def _entries(data: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    """The objects of the list ``key`` a child reported (anything else in it left out)."""
    return [item for item in data.get(key) or [] if isinstance(item, dict)]


def _index(entry: Mapping[str, Any]) -> int:
    """The device index a child reported for one device, 0 when it is not one."""
    return _opt_int(entry.get("index"), 4096) or 0


def _device_result(entry: Mapping[str, Any]) -> DeviceResult:
    """One device of a smoke child's ``devices``."""
    return DeviceResult(
        index=_index(entry),
        name=str(entry.get("name", "?")),
        capability=reported_text(entry.get("capability")),
        max_abs_diff=reported_number(entry.get("max_abs_diff")),
        non_finite=reported_count(entry.get("non_finite")),
        error=reported_text(entry.get("error")),
        gfx=reported_text(entry.get("gfx")),
    )


def _gpu_memory(entry: Mapping[str, Any]) -> GpuMemory:
    """One GPU of the VRAM probe's ``gpus``."""
    complete = entry.get("complete")
    return GpuMemory(
        index=_index(entry),
        free=_opt_int(entry.get("free")),
        total=_opt_int(entry.get("total")),
        largest=_opt_int(entry.get("largest")),
        complete=complete if isinstance(complete, bool) else None,
    )


def parse_smoke(text: str | None) -> SmokeResult | None:
    data = result_object(text, "smoke")
    if data is None:
        return None
    devices = tuple(map(_device_result, _entries(data, "devices")))
    arch = data.get("arch_list")
    return SmokeResult(
        framework=str(data.get("framework", "?")),
        stage=str(data.get("stage", "?")),
        version=reported_text(data.get("version")),
        cuda=reported_text(data.get("cuda")),
        cudnn=reported_text(data.get("cudnn")),
        arch_list=tuple(str(a) for a in arch) if isinstance(arch, list) else None,
        devices=devices,
        gpu_reason=reported_text(data.get("gpu_reason")),
        cpu_max_abs_diff=reported_number(data.get("cpu_max_abs_diff")),
        cpu_non_finite=reported_count(data.get("cpu_non_finite")),
        error=reported_text(data.get("error")),
        hip=reported_text(data.get("hip")),
        platform=reported_text(data.get("platform")),
        free_threaded=data.get("free_threaded") is True,
        gil_enabled_by=tuple(reported_text(m) or "?" for m in _strings(data.get("gil_enabled_by"))),
        gil_before=data["gil_before"] if isinstance(data.get("gil_before"), bool) else None,
        gil_after=data["gil_after"] if isinstance(data.get("gil_after"), bool) else None,
        gil_forced_by=reported_text(data.get("gil_forced_by"), 200),
    )


def _strings(value: object, limit: int = 64) -> list[object]:
    """A list from a child's result, at most ``limit`` items (anything else: none)."""
    return list(value[:limit]) if isinstance(value, list) else []


def parse_probe(text: str | None) -> ProbeResult | None:
    data = result_object(text, "vram")
    if data is None:
        return None
    return ProbeResult(
        str(data.get("framework", "?")),
        tuple(map(_gpu_memory, _entries(data, "gpus"))),
        bool(data.get("probed")),
        reported_text(data.get("reason")),
        reported_text(data.get("error")),
    )


def stderr_tail(
    stderr: str, lines: int = STDERR_TAIL_LINES, limit: int = 300, skip: str | None = None
) -> str:
    """The last few lines of stderr that say something: no traceback frames, no source lines,
    not ``skip`` (the error the child already reported)."""
    kept = []
    for raw in stderr.splitlines():
        line = raw.strip()
        if not line or raw.startswith("    ") or line.startswith(('File "', "Traceback (")):
            continue
        if set(line) <= set("^~ ") or line == skip:
            continue
        kept.append(line)
    text = " | ".join(kept[-lines:])
    return text if len(text) <= limit else "..." + text[-limit:]


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def child_failure(completed: processes.Completed, timeout: float) -> str | None:
    """Why a child died (hang, signal), or None when it exited by itself."""
    if completed.timed_out:
        return f"did not finish within {timeout:g}s (killed)"
    if completed.returncode < 0:
        return f"crashed with {_signal_name(completed.returncode)}"
    return None


def with_tail(text: str, completed: processes.Completed, skip: str | None = None) -> str:
    tail = stderr_tail(completed.stderr, skip=skip)
    return f"{text}; stderr: {tail}" if tail else text


def _device_label(device: DeviceResult) -> str:
    cap = f" (sm_{device.capability.replace('.', '')})" if device.capability else ""
    return f"GPU{device.index} {device.name}{cap}"


def _arch_gap(result: SmokeResult, device: DeviceResult) -> str | None:
    if not result.arch_list or not device.capability:
        return None
    try:
        cap = ComputeCapability.parse(device.capability)
    except ValueError:
        return None
    archs = []
    for text in result.arch_list:
        try:
            archs.append(Arch.parse(text))
        except ValueError:
            continue
    if not archs or archs_cover(archs, cap):
        return None
    listed = " ".join(result.arch_list)
    return f"no kernels for {cap.sm} in {result.framework}'s arch list ({listed})"


def _plural(count: int, what: str) -> str:
    return f"{count} {what}" + ("" if count == 1 else "s")


def _matmul_problem(diff: float | None, non_finite: int, against: str) -> str | None:
    """What is wrong with one matmul, or None; a NaN difference fails every comparison."""
    if non_finite:
        return f"matmul returned {_plural(non_finite, 'non-finite value')} (NaN or infinity)"
    if diff is None or not diff <= MATMUL_TOLERANCE:
        return f"matmul differs from {against} (max abs diff {diff})"
    return None


class ChildResult(Protocol):
    """What every smoke child's result says of how far it got."""

    @property
    def stage(self) -> str: ...
    @property
    def version(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...


Result = TypeVar("Result", bound=ChildResult)


def child_result(
    name: str, run: ChildRun, limit: float, parse: Callable[[str | None], Result | None]
) -> Check | Result:
    """What every smoke child's check (a framework's or a package's) looks at first: the child
    finished within ``limit``, left a result ``parse`` reads, and raised nothing. A FAIL check
    named ``name``, else the result."""
    completed = run.completed
    died = child_failure(completed, limit)
    if died is not None:
        return Check(name, Status.FAIL, with_tail(died, completed))
    result = parse(run.result)
    if result is None:
        return Check(
            name, Status.FAIL, with_tail(f"exited {completed.returncode} without a result", completed)
        )
    if result.error is not None:
        what = "import failed" if result.stage == "import" and result.version is None else "failed"
        return Check(name, Status.FAIL, with_tail(f"{what}: {result.error}", completed, skip=result.error))
    return result


def smoke_outcome(
    name: str, framework: Framework, run: ChildRun, timeout: float
) -> Check | tuple[SmokeResult, str]:
    """What every smoke test checks first, GPU or TPU: :func:`child_result`, and the child
    multiplied right on the CPU. A FAIL check, else the result and its label."""
    result = child_result(name, run, timeout, parse_smoke)
    if isinstance(result, Check):
        return result
    label = f"{framework.value} {result.version}"
    cpu_problem = _matmul_problem(result.cpu_max_abs_diff, result.cpu_non_finite, "the exact product")
    if cpu_problem is not None:
        return Check(name, Status.FAIL, f"{label}: CPU {cpu_problem}")
    return result, label


@record
class SmokeDevice:
    """What a framework's smoke test differs in from one kind of accelerator to another; the
    rest (running the child, reading its result, the CPU's matmul and each device's) is shared:
    :func:`run_smoke` and :func:`check_device_smoke`.

    ``mode``: the smoke program's mode (``colabenv/_target/smoke/``), which also names the
    result file; ``env``: the child's environment; ``label``: one device as a check names it;
    ``gap``: what a device that failed lacks (no kernels for it), or None; ``passed``: the detail
    of a PASS, given the result and its label; ``one_at_a_time``: a lock held while the child
    runs, where the device opens for one process only (None: children run side by side)."""

    mode: str
    env: Callable[[Framework], dict[str, str]]
    label: Callable[[DeviceResult], str]
    passed: Callable[[SmokeResult, str], str]
    gap: Callable[[SmokeResult, DeviceResult], str | None]
    one_at_a_time: threading.Lock | None = None


NoDevice = Callable[[SmokeResult, str], Check]
"""What a smoke test that listed no device comes to, given its result and label."""


def check_device_smoke(
    device: SmokeDevice, framework: Framework, run: ChildRun, *, timeout: float, no_device: NoDevice
) -> Check:
    """One framework's smoke test on ``device``'s kind of accelerator: :func:`child_result`, the
    CPU's matmul, then each device's (``no_device`` says what none listed comes to)."""
    name = f"smoke:{framework.value}"
    ran = smoke_outcome(name, framework, run, timeout)
    if isinstance(ran, Check):
        return ran
    result, label = ran
    if not result.devices:
        return no_device(result, label)
    problems = []
    for one in result.devices:
        wrong = _matmul_problem(one.max_abs_diff, one.non_finite, "the CPU result")
        if one.error is not None:
            gap = device.gap(result, one)
            problems.append(f"{device.label(one)}: " + (f"{gap}: " if gap else "") + one.error)
        elif wrong is not None:
            problems.append(f"{device.label(one)}: {wrong}")
    if problems:
        return Check(name, Status.FAIL, f"{label}: " + "; ".join(problems))
    return Check(name, Status.PASS, device.passed(result, label))


def check_smoke(
    framework: Framework,
    run: ChildRun,
    *,
    timeout: float,
    host_has_gpu: bool,
    require_gpu: bool,
    cpu_build: bool = False,
) -> Check:
    """One framework's smoke test on the GPUs (or the CPU). ``cpu_build``: the installed build
    has no CUDA support by design (a ``cpu`` variant), so a GPU it cannot see is expected."""
    name = f"smoke:{framework.value}"

    def no_gpu(result: SmokeResult, label: str) -> Check:
        reason = result.gpu_reason or "no GPU visible"
        if require_gpu:
            return Check(
                name,
                Status.FAIL,
                with_tail(f"{label} sees no GPU ({reason}); the profile requires one", run.completed),
            )
        if not host_has_gpu:
            return Check(name, Status.PASS, f"CPU matmul ok ({label}); no GPU on this host")
        if cpu_build:
            return Check(name, Status.PASS, f"CPU matmul ok ({label}, a CPU build)")
        return Check(
            name,
            Status.FAIL,
            with_tail(f"{label} sees no GPU although the host has one ({reason})", run.completed),
        )

    return check_device_smoke(GPU_SMOKE, framework, run, timeout=timeout, no_device=no_gpu)


def _gpu_passed(result: SmokeResult, label: str) -> str:
    names = sorted({_device_label(d).split(" ", 1)[1] for d in result.devices})
    count = f"{len(result.devices)} GPUs: " if len(result.devices) > 1 else ""
    versions = f"CUDA {result.cuda or '?'}, cuDNN {result.cudnn or '?'}"
    return f"{count}{', '.join(names)}: matmul agrees with CPU; {label}, {versions}"


def smoke_env(framework: Framework, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """TensorFlow grows its GPU memory and JAX does not preallocate, so they can share a GPU."""
    env = dict(os.environ if base is None else base)
    if framework is Framework.TENSORFLOW:
        env["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    elif framework is Framework.JAX:
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    return env


def _read_result(path: Path) -> str | None:
    try:
        return read_limited(path, RESULT_LIMIT).decode("utf-8", errors="replace")
    except FileProblem:
        return None


def run_child(argv: list[str], result: Path, timeout: float, env: Mapping[str, str]) -> ChildRun:
    try:
        completed = processes.run(argv, timeout=timeout, env=env, grace=TERMINATE_GRACE_S)
    except ProcessError as error:
        completed = processes.Completed(tuple(argv), 127, "", str(error), False)
    return ChildRun(completed, _read_result(result))


def smoke_argv(framework: Framework, python: str, result: Path, mode: str = "smoke") -> list[str]:
    return [python, str(SMOKE_PROGRAM), mode, framework.value, "--result", str(result)]


GPU_SMOKE = SmokeDevice(mode="smoke", env=smoke_env, label=_device_label, passed=_gpu_passed, gap=_arch_gap)
"""The smoke test on the GPUs (on the CPU alone where there is none)."""


def run_smoke(
    framework: Framework, timeout: float, *, python: str, scratch: Path, device: SmokeDevice = GPU_SMOKE
) -> ChildRun:
    """The smoke test of ``framework`` on ``device``'s kind of accelerator, in the interpreter
    ``python`` (after any other child of a device that opens for one process has ended); files
    go in ``scratch``."""
    result = scratch / f"{device.mode}-{framework.value}.json"
    argv = smoke_argv(framework, python, result, device.mode)
    with device.one_at_a_time or contextlib.nullcontext():
        return run_child(argv, result, timeout, device.env(framework))


PROBE_FRAMEWORKS = ("torch", "cupy", "jax")


def probe_framework(is_installed: Callable[[str], bool]) -> str | None:
    """The first of torch, cupy, jax importable in the verified interpreter (not imported)."""
    return next((name for name in PROBE_FRAMEWORKS if is_installed(name)), None)


def run_probe(framework: str, go_file: Path, timeout: float, *, python: str, scratch: Path) -> ChildRun:
    """The VRAM probe: it waits for ``go_file`` (the smoke tests are done) before it searches."""
    result = scratch / "vram.json"
    argv = [
        python,
        str(SMOKE_PROGRAM),
        "vram",
        framework,
        "--go",
        str(go_file),
        "--deadline",
        f"{timeout:g}",
        "--search",
        f"{PROBE_SEARCH_S:g}",
        "--result",
        str(result),
    ]
    env = dict(os.environ)
    if framework == "jax":
        env.update(XLA_PYTHON_CLIENT_PREALLOCATE="false", XLA_PYTHON_CLIENT_ALLOCATOR="platform")
    return run_child(argv, result, timeout + PROBE_SEARCH_S + 5, env)


def _gib(value: int) -> str:
    return f"{value / GIB:.1f} GiB"


def check_vram(
    gpus: Sequence[Gpu],
    run: ChildRun | None,
    *,
    probe_timeout: float,
    host_has_gpu: bool,
    require_gpu: bool,
    min_free_gib: float | None,
) -> Check:
    if not host_has_gpu:
        if require_gpu:
            return Check("vram", Status.FAIL, "the profile requires a GPU and none was found")
        return Check("vram", Status.SKIP, "no GPU on this host")
    probe = run.completed if run is not None else None
    result = parse_probe(run.result) if run is not None else None
    probe_problem: str | None = None
    note = ""
    if probe is None:
        note = "; largest block not probed (no torch, cupy or jax here)"
    elif (died := child_failure(probe, probe_timeout)) is not None:
        probe_problem = with_tail(f"probe {died}", probe)
    elif result is None:
        probe_problem = with_tail(f"probe exited {probe.returncode} without a result", probe)
    elif result.error is not None:
        probe_problem = f"probe failed: {result.error}"
    elif not result.gpus:
        probe_problem = f"{result.framework} sees no GPU"
    elif not result.probed:
        probe_problem = f"largest block not probed: {result.reason}"
    probed = {g.index: g for g in result.gpus} if result is not None else {}
    indices = sorted(set(range(len(gpus))) | set(probed))
    parts: list[str] = []
    low: list[str] = []
    known = False
    for index in indices:
        nvml = gpus[index] if index < len(gpus) else None
        seen = probed.get(index)
        free = nvml.memory_free_mib * MIB if nvml and nvml.memory_free_mib is not None else None
        total = nvml.memory_total_mib * MIB if nvml and nvml.memory_total_mib is not None else None
        if free is None and seen is not None:
            free, total = seen.free, seen.total
        name = f"GPU{index}" + (f" {nvml.name}" if nvml is not None else "")
        if free is None or total is None:
            parts.append(f"{name}: memory unknown")
            continue
        known = True
        text = f"{name}: {_gib(free)} free of {_gib(total)}"
        if seen is not None and seen.largest is not None:
            bound = "" if seen.complete else ">= "
            text += f", largest block {bound}{_gib(seen.largest)}"
        parts.append(text)
        if min_free_gib is not None and free < min_free_gib * GIB:
            low.append(f"{name} has {_gib(free)} free, the profile asks for {min_free_gib:g} GiB")
    if not parts:
        why = probe_problem or note.removeprefix("; ") or "no GPU listed"
        return Check("vram", Status.WARN, f"no memory information ({why})")
    detail = "; ".join(parts)
    if low:
        return Check("vram", Status.WARN, "; ".join(low) + f" ({detail})")
    if probe_problem is not None or not known:
        return Check("vram", Status.WARN, f"{detail}; {probe_problem or 'memory unknown'}")
    return Check("vram", Status.PASS, detail + note)


# ---------------------------------------------------------------------------------------------
# A TPU host: the smoke test on the TPU devices, and their HBM from the same child

TPU_LOCK = threading.Lock()
"""One TPU child at a time: the TPU runtime opens the TPU for one process, a second one fails with
"Device or resource busy" (jax-ml/jax#13260, marin-community/marin#2618)."""


@model
class HbmReport:
    """The HBM one TPU smoke child read: per device ``(index, name, limit, in_use)`` in bytes,
    or why there is none."""

    framework: str
    devices: tuple[tuple[int, str, int, int], ...]
    reason: str | None


def tpu_smoke_env(framework: Framework, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """torch_xla picks its device from ``PJRT_DEVICE``: a TPU, unless the caller said another."""
    env = dict(os.environ if base is None else base)
    if framework is Framework.TORCH:
        env.setdefault("PJRT_DEVICE", "TPU")
    return env


def _tpu_label(device: DeviceResult) -> str:
    return f"TPU{device.index} {device.name}"


def _tpu_passed(result: SmokeResult, label: str) -> str:
    kinds = sorted({d.name for d in result.devices})
    count = len(result.devices)
    devices = f"{count} TPU device{'' if count == 1 else 's'} ({', '.join(kinds)})"
    return f"{devices}: matmul agrees with CPU; {label}"


def _no_gap(result: SmokeResult, device: DeviceResult) -> None:
    return None


TPU_SMOKE = SmokeDevice(
    mode="smoke-tpu",
    env=tpu_smoke_env,
    label=_tpu_label,
    passed=_tpu_passed,
    gap=_no_gap,
    one_at_a_time=TPU_LOCK,
)
"""The smoke test on the TPU devices, one TPU child at a time."""


def check_tpu_smoke(framework: Framework, run: ChildRun, *, timeout: float, tpu: TpuTarget) -> Check:
    """The smoke test on a TPU host: the framework must list TPU devices, and each must
    multiply like the CPU."""

    def no_tpu(result: SmokeResult, label: str) -> Check:
        reason = result.gpu_reason or "no TPU device listed"
        return Check(
            f"smoke:{framework.value}",
            Status.FAIL,
            with_tail(f"{label} sees no TPU although the host has one ({tpu}; {reason})", run.completed),
        )

    return check_device_smoke(TPU_SMOKE, framework, run, timeout=timeout, no_device=no_tpu)


def parse_hbm(framework: str, text: str | None) -> HbmReport | None:
    data = result_object(text, "smoke")
    if data is None or data.get("accelerator") != "tpu":
        return None
    devices = []
    for entry in _entries(data, "hbm"):
        limit, in_use = _opt_int(entry.get("limit")), _opt_int(entry.get("in_use"))
        if limit is None or in_use is None:
            continue
        devices.append((_index(entry), str(entry.get("name", "?")), limit, in_use))
    return HbmReport(framework, tuple(devices), reported_text(data.get("hbm_reason")))


def check_hbm(tpu: TpuTarget, runs: Mapping[Framework, ChildRun], *, min_free_gib: float | None) -> Check:
    """``vram`` on a TPU host: the HBM of each TPU device, as the first framework that reports
    it does (the smoke children read it); SKIP with the reason where none does."""
    reasons = []
    for framework, run in runs.items():
        report = parse_hbm(framework.value, run.result)
        if report is None:
            reasons.append(f"{framework.value}: its TPU smoke test left no result")
            continue
        if not report.devices:
            reasons.append(f"{framework.value}: {report.reason or 'no memory figures'}")
            continue
        parts, low = [], []
        for index, name, limit, in_use in report.devices:
            free = max(limit - in_use, 0)
            parts.append(f"TPU{index} {name}: {_gib(free)} HBM free of {_gib(limit)}")
            if min_free_gib is not None and free < min_free_gib * GIB:
                low.append(f"TPU{index} has {_gib(free)} HBM free, the profile asks for {min_free_gib:g} GiB")
        detail = "; ".join(parts) + f" (from {framework.value})"
        if low:
            return Check("vram", Status.WARN, "; ".join(low) + f" ({detail})")
        return Check("vram", Status.PASS, detail)
    if not runs:
        smoked = " or ".join(f.value for f in ORDER if FACTS[f].tpu_runtime)
        return Check("vram", Status.SKIP, f"{tpu}: HBM not reported: no TPU smoke test of {smoked} ran")
    return Check("vram", Status.SKIP, f"{tpu}: HBM not reported ({'; '.join(reasons)})")
