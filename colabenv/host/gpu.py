"""The NVIDIA driver and GPUs, for :func:`colabenv.host.detect.detect`: NVML, the kernel module's
version files, then nvidia-smi, each bounded in time, each failure a note.

Imported only when the GPUs must be looked at: a target whose driver and compute capabilities
come from flags (``colabenv render --driver ... --compute-capability ...``) never loads it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import Version

from colabenv.errors import ProcessError
from colabenv.host.probe import (
    HostProbe,
    Nvml,
    compute_capability,
    memory_mib,
)
from colabenv.models import (
    Catalog,
    ComputeCapability,
    Gpu,
    GpuReport,
    format_driver,
    parse_cuda,
    parse_driver,
)
from colabenv.models.frozen import model

if TYPE_CHECKING:
    from colabenv._util import processes

MIB = 1024 * 1024
MAX_GPUS = 256
DRIVER_VERSION_FILES = (Path("/proc/driver/nvidia/version"), Path("/sys/module/nvidia/version"))
SMI_QUERY_FIELDS = "name,compute_cap,memory.total,memory.free,driver_version"
SMI_QUERY_ARGS = (f"--query-gpu={SMI_QUERY_FIELDS}", "--format=csv,noheader,nounits")
NO_DRIVER_NOTE = "no NVIDIA driver found"
NVIDIA_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia/version", "/dev/dxg")
"""Where a host with a usable NVIDIA driver shows it (``/dev/dxg``: WSL2); without any of
them, importing nvidia-ml-py and loading libnvidia-ml is skipped."""


@model
class _SourceResult:
    """What one GPU source answered; ``answered`` False when it could not be asked."""

    driver: Version | None = None
    cuda: Version | None = None
    gpus: tuple[Gpu, ...] = ()
    answered: bool = False


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace").strip()
    return str(value).strip()


def cuda_from_nvml(value: int) -> Version | None:
    """NVML's encoded CUDA version (12040) as ``12.4``; None for what encodes no real one."""
    if value <= 0:
        return None
    return parse_cuda(f"{value // 1000}.{(value % 1000) // 10}")


def _error_text(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _query_nvml(nvml: Nvml, notes: list[str]) -> _SourceResult:
    nvml.nvmlInit()
    try:
        driver_text = _text(nvml.nvmlSystemGetDriverVersion())
        driver = parse_driver(driver_text)
        if driver is None:
            notes.append(f"NVML: driver version {driver_text[:40]!r} is not a driver version")
        try:
            cuda = cuda_from_nvml(int(nvml.nvmlSystemGetCudaDriverVersion_v2()))
        except Exception as exc:
            cuda = None
            notes.append(f"NVML: no CUDA version from the driver ({_error_text(exc)})")
        gpus: list[Gpu] = []
        count = int(nvml.nvmlDeviceGetCount())
        if count > MAX_GPUS:
            notes.append(f"NVML: {count} GPUs reported; the first {MAX_GPUS} are listed")
        for index in range(min(count, MAX_GPUS)):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                name = _text(nvml.nvmlDeviceGetName(handle))
                major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
                capability = compute_capability(major, minor)
            except Exception as exc:
                notes.append(f"NVML: GPU {index} skipped ({_error_text(exc)})")
                continue
            total: int | None = None
            free: int | None = None
            try:
                memory = nvml.nvmlDeviceGetMemoryInfo(handle)
                total = memory_mib(memory.total, unit=MIB)
                free = memory_mib(memory.free, unit=MIB)
            except Exception as exc:
                notes.append(f"NVML: GPU {index} memory unknown ({_error_text(exc)})")
            else:
                if total is None or free is None:
                    notes.append(
                        f"NVML: GPU {index} memory unknown (reported"
                        f" {_short(memory.total)} total, {_short(memory.free)} free)"
                    )
            gpus.append(Gpu(name, capability, total, free))
        return _SourceResult(driver, cuda, tuple(gpus), answered=True)
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception as exc:
            notes.append(f"NVML: shutdown failed ({_error_text(exc)})")


def _from_nvml(probe: HostProbe, notes: list[str]) -> _SourceResult:
    """NVML in a daemon thread, so a driver that never answers costs at most the timeout."""
    if probe.nvml_needs_device and not any(probe.path_exists(Path(node)) for node in NVIDIA_NODES):
        notes.append("NVML: skipped, no NVIDIA device or kernel module on this host")
        return _SourceResult()
    outcome: list[_SourceResult] = []
    thread_notes: list[str] = []
    failure: list[str] = []

    def work() -> None:
        try:
            nvml = probe.load_nvml()
        except Exception as exc:
            failure.append(f"NVML: nvidia-ml-py not importable ({_error_text(exc)})")
            return
        try:
            outcome.append(_query_nvml(nvml, thread_notes))
        except Exception as exc:
            failure.append(f"NVML: not available ({_error_text(exc)})")

    thread = threading.Thread(target=work, name="colabenv-nvml", daemon=True)
    thread.start()
    thread.join(probe.nvml_timeout)
    if thread.is_alive():
        notes.append(f"NVML: did not answer within {probe.nvml_timeout:g}s")
        return _SourceResult()
    notes.extend(thread_notes)
    notes.extend(failure)
    return outcome[0] if outcome else _SourceResult()


_KERNEL_MODULE_RE = re.compile(r"NVRM version:.*?\s([0-9]+\.[0-9.]+)(?=\s|$)", re.ASCII)
_BARE_VERSION_RE = re.compile(r"\s*([0-9]+\.[0-9.]+)\s*", re.ASCII)


def parse_kernel_module_version(text: str) -> Version | None:
    """The driver version from ``/proc/driver/nvidia/version`` or ``/sys/module/nvidia/version``."""
    match = _KERNEL_MODULE_RE.search(text) or _BARE_VERSION_RE.fullmatch(text)
    return parse_driver(match.group(1)) if match else None


def _from_kernel_module(probe: HostProbe, notes: list[str]) -> Version | None:
    for path in DRIVER_VERSION_FILES:
        try:
            text = probe.read_text(path)
        except (OSError, UnicodeError):
            continue
        driver = parse_kernel_module_version(text)
        if driver is not None:
            return driver
        notes.append(f"{path}: no driver version in it")
    return None


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 24 else text[:21] + "..."


def _smi_memory(text: str, what: str, gpu: str, problems: list[str]) -> int | None:
    mib = memory_mib(text)
    if mib is None and text not in _NO_VALUE:
        problems.append(f"GPU {gpu[:60]!r}: {what} {text[:20]!r} is not a size in MiB")
    return mib


_NO_VALUE = ("[N/A]", "N/A", "[Not Supported]", "")


@model
class SmiQuery:
    """Parsed ``nvidia-smi --query-gpu`` CSV output."""

    driver: Version | None
    gpus: tuple[Gpu, ...]
    problems: tuple[str, ...]


def parse_smi_query(text: str) -> SmiQuery:
    """Parse ``name, compute_cap, memory.total, memory.free, driver_version`` lines."""
    gpus: list[Gpu] = []
    problems: list[str] = []
    driver: Version | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        fields = [part.strip() for part in line.split(",")]
        if len(fields) < 5:
            problems.append(f"line {number} is not a GPU row: {line[:80]!r}")
            continue
        name = ", ".join(fields[:-4]).strip()
        cap_text, total, free, driver_text = fields[-4:]
        try:
            capability = ComputeCapability.parse(cap_text)
        except ValueError:
            problems.append(f"GPU {name[:60]!r}: compute capability {cap_text[:20]!r} unknown")
            continue
        row_driver = parse_driver(driver_text)
        if row_driver is not None and driver is None:
            driver = row_driver
        gpus.append(
            Gpu(
                name or "NVIDIA GPU",
                capability,
                _smi_memory(total, "memory.total", name, problems),
                _smi_memory(free, "memory.free", name, problems),
            )
        )
    return SmiQuery(driver, tuple(gpus), tuple(problems))


# R610 and later label them "KMD Version" and "CUDA UMD Version" (nvidia-smi's documentation:
# "deprecated Driver Version and CUDA Version in favor of KMD Version and CUDA UMD Version")
_CUDA_BANNER_RE = re.compile(r"CUDA (?:UMD )?Version\s*:\s*([0-9]+\.[0-9]+)", re.ASCII)
_DRIVER_BANNER_RE = re.compile(r"(?:Driver|KMD) Version\s*:\s*([0-9]+\.[0-9.]+)", re.ASCII)


def parse_smi_banner(text: str) -> tuple[Version | None, Version | None]:
    """``(driver, cuda)`` from the header of plain ``nvidia-smi``."""
    driver = _DRIVER_BANNER_RE.search(text)
    cuda = _CUDA_BANNER_RE.search(text)
    return (
        parse_driver(driver.group(1)) if driver else None,
        parse_cuda(cuda.group(1)) if cuda else None,
    )


def _smi_failure(result: processes.Completed) -> str:
    lines = [ln.strip() for ln in (result.stdout + "\n" + result.stderr).splitlines() if ln.strip()]
    detail = lines[0][:200] if lines else "no output"
    return f"exited {result.returncode}: {detail}"


def _run_smi(
    probe: HostProbe, argv: Sequence[str], notes: list[str]
) -> tuple[processes.Completed | None, bool]:
    """Run nvidia-smi once: ``(output if it succeeded, whether trying again is pointless)``."""
    try:
        result = probe.run(argv, probe.smi_timeout)
    except ProcessError as exc:
        notes.append(f"nvidia-smi: {exc.message.split(': ', 1)[-1]}")
        return None, True
    except OSError as exc:
        notes.append(f"nvidia-smi: cannot start ({exc.strerror or exc})")
        return None, True
    if result.timed_out:
        notes.append(f"nvidia-smi: did not answer within {probe.smi_timeout:g}s (killed)")
        return None, True
    if result.returncode != 0:
        notes.append(f"nvidia-smi: {_smi_failure(result)}")
        return None, False
    return result, False


def _from_nvidia_smi(probe: HostProbe, notes: list[str]) -> _SourceResult:
    """The GPU query, then the banner for "CUDA Version" ("CUDA UMD Version" from R610; also
    when an old query fails)."""
    exe = probe.find_executable("nvidia-smi")
    if exe is None:
        notes.append("nvidia-smi: not found on PATH")
        return _SourceResult()
    query, give_up = _run_smi(probe, [exe, *SMI_QUERY_ARGS], notes)
    if give_up:
        return _SourceResult()
    parsed = parse_smi_query(query.stdout) if query is not None else SmiQuery(None, (), ())
    notes.extend(f"nvidia-smi: {problem}" for problem in parsed.problems)
    banner, _ = _run_smi(probe, [exe], notes)
    banner_driver, cuda = parse_smi_banner(banner.stdout) if banner is not None else (None, None)
    if banner is not None and cuda is None:
        notes.append("nvidia-smi: no 'CUDA Version' (or R610's 'CUDA UMD Version') in its banner")
    driver = parsed.driver or banner_driver
    answered = query is not None or banner is not None
    return _SourceResult(driver, cuda, parsed.gpus, answered=answered)


def probe_gpus(probe: HostProbe, driver_table: Callable[[], Catalog]) -> GpuReport:
    """Driver, max CUDA and GPUs from NVML, the kernel module files and nvidia-smi, in order;
    ``driver_table`` is called for the CUDA of a driver no source gave one for."""
    notes: list[str] = []
    nvml = _from_nvml(probe, notes)
    kernel = _from_kernel_module(probe, notes)
    smi = _SourceResult()
    if not nvml.answered:
        smi = _from_nvidia_smi(probe, notes)
    driver = nvml.driver or smi.driver or kernel
    cuda = nvml.cuda or smi.cuda
    gpus = nvml.gpus if nvml.answered else smi.gpus
    if kernel is not None and nvml.driver is not None and kernel != nvml.driver:
        notes.append(
            f"driver/library version mismatch: kernel module {format_driver(kernel)},"
            f" NVML {format_driver(nvml.driver)}"
            " (reboot or reload the driver)"
        )
    if driver is None:
        notes.append(NO_DRIVER_NOTE)
        return GpuReport(None, None, (), _unique(notes))
    if not gpus:
        notes.append(f"driver {format_driver(driver)} found but no GPU could be listed")
    if cuda is None:
        cuda = _cuda_from_catalog(driver, driver_table, notes)
    visible = probe.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and gpus:
        notes.append(f"CUDA_VISIBLE_DEVICES={visible!r}: frameworks see only those GPUs")
    return GpuReport(driver, cuda, gpus, _unique(notes))


def _unique(notes: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(notes))


def _cuda_from_catalog(
    driver: Version, driver_table: Callable[[], Catalog], notes: list[str]
) -> Version | None:
    cuda = driver_table().max_cuda_for_driver(driver)
    shown = format_driver(driver)
    if cuda is None:
        notes.append(f"driver {shown} is older than every CUDA in the catalog's driver table")
    else:
        notes.append(f"max CUDA {cuda} derived from driver {shown} (catalog driver table)")
    return cuda


def nvidia_device_present() -> bool:
    """Whether this host shows an NVIDIA driver (:data:`NVIDIA_NODES`): without one, NVML is
    not worth loading (``doctor`` asks before it looks for GPU leftovers)."""
    return any(Path(node).exists() for node in NVIDIA_NODES)
