"""What :mod:`colabenv.host.detect` and :mod:`colabenv.host.gpu` share: the probe of the host, the
NVML interface and the strict readers of the numbers the host reports (the
driver and CUDA version rules are :func:`colabenv.models.parse_driver` and
:func:`colabenv.models.parse_cuda`, shared with the target flags).

It imports neither of them, so neither imports the other for its types: ``detect`` loads
``gpu`` only when the GPUs must be looked at, and ``gpu`` needs nothing of ``detect``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from packaging.version import InvalidVersion, Version

from colabenv.models import ComputeCapability
from colabenv.models.frozen import record

if TYPE_CHECKING:
    from colabenv._util import processes

NVIDIA_SMI_TIMEOUT_S = 5.0
NVML_TIMEOUT_S = 5.0
ROCM_TOOL_TIMEOUT_S = 10.0
"""Each run of ``rocminfo`` or ``amd-smi``: rocminfo starts the HSA runtime (about a second on an
8-GPU host); a hung driver costs this."""
MAX_GPU_MEMORY_MIB = 1 << 24
"""16 TiB: far beyond any GPU. A larger (or infinite, or NaN) figure from nvidia-smi or NVML is
not a size, and the memory is reported unknown."""

RunCommand = Callable[[Sequence[str], float], "processes.Completed"]


class Nvml(Protocol):
    """The part of ``pynvml`` (nvidia-ml-py) that detection uses; tests pass a fake."""

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlSystemGetDriverVersion(self) -> str | bytes: ...
    def nvmlSystemGetCudaDriverVersion_v2(self) -> int: ...
    def nvmlDeviceGetCount(self) -> int: ...
    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any: ...
    def nvmlDeviceGetName(self, handle: Any) -> str | bytes: ...
    def nvmlDeviceGetCudaComputeCapability(self, handle: Any) -> tuple[int, int]: ...
    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any: ...
    # what the recorder (colabenv.host.sampler) reads of each GPU at each sample
    def nvmlDeviceGetUUID(self, handle: Any) -> str | bytes: ...
    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> Any: ...
    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> Any: ...
    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: Any) -> Any: ...


def import_pynvml() -> Nvml:
    import pynvml

    nvml: Nvml = pynvml
    return nvml


def read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


MAX_LISTED = 4096
"""A folder the TPU probe lists (``/dev``, the PCI devices) is read this far and no further."""


def list_dir(path: Path) -> list[str]:
    """The names in ``path``, at most :data:`MAX_LISTED`, sorted; none when it cannot be read."""
    try:
        with os.scandir(path) as entries:
            names = []
            for entry in entries:
                names.append(entry.name)
                if len(names) >= MAX_LISTED:
                    break
    except OSError:
        return []
    return sorted(names)


def run_command(argv: Sequence[str], timeout: float) -> processes.Completed:
    from colabenv._util import processes

    return processes.run(argv, timeout=timeout)


@record
class HostProbe:
    """Everything detection reads from the host, injectable at the boundary.

    ``load_nvml`` returns the NVML module (raising if it cannot); ``read_text`` reads
    ``/proc``-style files; ``which`` finds nvidia-smi, rocminfo and amd-smi; ``run`` runs each
    within its time limit (``smi_timeout``, ``rocm_tool_timeout``); ``distributions`` yields
    ``(name, version)`` of what is installed. ``nvml_needs_device``: look for an NVIDIA device
    node or kernel module first and leave NVML alone without one (loading libnvidia-ml on a
    host without a driver costs time and says nothing); a probe with a stand-in NVML turns it
    off. ``root`` is where the TPU probe finds ``dev/`` and
    ``sys/bus/pci/devices`` (a folder of recorded device nodes in tests); ``list_dir`` lists a
    folder there, and None (the default of a probe built by hand) lists nothing, so that a
    probe made of stand-ins never reads this machine's devices.
    """

    environ: Mapping[str, str]
    distributions: Callable[[], Iterable[tuple[str, str]]]
    python_version: str
    python_implementation: str
    platform_tag: str
    glibc: str | None
    load_nvml: Callable[[], Nvml] = import_pynvml
    nvml_needs_device: bool = True
    read_text: Callable[[Path], str] = read_text
    path_exists: Callable[[Path], bool] = os.path.exists
    which: Callable[[str], str | None] | None = None
    run: RunCommand = run_command
    nvml_timeout: float = NVML_TIMEOUT_S
    smi_timeout: float = NVIDIA_SMI_TIMEOUT_S
    rocm_tool_timeout: float = ROCM_TOOL_TIMEOUT_S
    root: Path = Path("/")
    list_dir: Callable[[Path], Sequence[str]] | None = None
    free_threaded: bool = False
    """The Python is a free-threaded build (``Py_GIL_DISABLED``)."""
    cross_check: bool = False
    """Run ``rocminfo`` and ``amd-smi`` on an AMD host to check the KFD topology's GPUs and the
    installed ROCm's version (``detect``); without it ``amd-smi`` runs only for a ROCm version
    the installed ROCm does not state (the other commands: the tools take seconds)."""

    def find_executable(self, name: str) -> str | None:
        if self.which is not None:
            return self.which(name)
        import shutil

        return shutil.which(name, path=self.environ.get("PATH", os.defpath))


# ---------------------------------------------------------------------------------------------
# Strict readers of what the host (or a flag standing for it) reports


def parse_version(text: str) -> Version | None:
    """Any PEP 440 version, or None."""
    try:
        return Version(text.strip())
    except InvalidVersion:
        return None


def compute_capability(major: int, minor: int) -> ComputeCapability:
    """A compute capability from numbers a driver reported; ValueError when it is no real one."""
    return ComputeCapability.parse(f"{int(major)}.{int(minor)}")


def memory_mib(value: object, unit: int = 1) -> int | None:
    """A GPU memory figure, given in MiB as text (nvidia-smi) or as a number of ``unit`` bytes
    (NVML: bytes, ``unit`` 1 MiB), in whole MiB; None when it is no size (``[N/A]``, NaN,
    infinite, negative, or beyond :data:`MAX_GPU_MEMORY_MIB`)."""
    try:
        number = float(value) if isinstance(value, str) else value
    except ValueError:
        return None
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        return None
    if isinstance(number, float) and not math.isfinite(number):
        return None
    if not 0 <= number <= MAX_GPU_MEMORY_MIB * unit:
        return None
    return int(number) // unit
