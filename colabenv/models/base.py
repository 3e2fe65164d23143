"""The words every layer shares: frameworks, installers, accelerators, runtimes, GPU compute
capabilities and the arch lists that cover them."""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Iterable

from packaging.version import Version

from colabenv.models.frozen import model


class TextEnum(str, enum.Enum):
    """An enum of words, each a ``str`` that is shown as its value (``str(Framework.TORCH)`` is
    ``torch``, as Python 3.11's ``enum.StrEnum`` shows it)."""

    _value_: str

    def __str__(self) -> str:
        return self.value


class Framework(TextEnum):
    TORCH = "torch"
    TENSORFLOW = "tensorflow"
    JAX = "jax"


class Installer(TextEnum):
    AUTO = "auto"
    UV = "uv"
    PIP = "pip"


class Accelerator(TextEnum):
    """What a target computes on: an NVIDIA GPU, an AMD GPU through ROCm, a Google TPU, or the
    CPU alone."""

    NVIDIA = "nvidia"
    ROCM = "rocm"
    TPU = "tpu"
    CPU = "cpu"


class RuntimeKind(TextEnum):
    COLAB = "colab"
    KAGGLE = "kaggle"
    GENERIC = "generic"


_CC_RE = re.compile(r"\s*([1-9][0-9]?)\.([0-9])\s*", re.ASCII)
MAX_COMPUTE_MAJOR = 19
"""Real compute capabilities run from 1.0 to 12.x, with a one-digit minor; a major past this is
no GPU (and ASCII digits only: ``\\d`` would take any script's digits)."""


@functools.total_ordering
@model
class ComputeCapability:
    """An NVIDIA compute capability such as 7.5 (T4) or 9.0 (H100, H200)."""

    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> ComputeCapability:
        match = _CC_RE.fullmatch(text)
        if match is None or int(match.group(1)) > MAX_COMPUTE_MAJOR:
            raise ValueError(f"{text!r} is not a compute capability like 7.5 or 12.0")
        return cls(int(match.group(1)), int(match.group(2)))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ComputeCapability):
            return NotImplemented
        return (self.major, self.minor) < (other.major, other.minor)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def sm(self) -> str:
        return f"sm_{self.major}{self.minor}"


_ARCH_RE = re.compile(r"^(sm|compute)_(\d{1,2})(\d)a?$")


@functools.total_ordering
@model
class Arch:
    """One entry of a wheel's arch list: machine code (``sm_86``) or PTX (``compute_90``).

    Machine code runs on GPUs of the same major version with a minor version at least its own;
    PTX is compiled at load time for any GPU at least as new (CUDA C++ Programming Guide,
    "Binary Compatibility" and "PTX Compatibility").
    """

    capability: ComputeCapability
    ptx: bool

    @staticmethod
    def parse(text: str) -> Arch:
        """``sm_86`` or ``compute_90``; the same text gives the same (immutable) Arch, parsed
        once per process: the catalog names a few dozen arches some hundreds of times."""
        return _parse_arch(text)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Arch):
            return NotImplemented
        return (self.capability, self.ptx) < (other.capability, other.ptx)

    def covers(self, gpu: ComputeCapability) -> bool:
        if self.ptx:
            return gpu >= self.capability
        return gpu.major == self.capability.major and gpu.minor >= self.capability.minor

    def __str__(self) -> str:
        prefix = "compute" if self.ptx else "sm"
        return f"{prefix}_{self.capability.major}{self.capability.minor}"


@functools.lru_cache(maxsize=512)
def _parse_arch(text: str) -> Arch:
    match = _ARCH_RE.match(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not an arch like sm_86 or compute_90")
    cap = ComputeCapability(int(match.group(2)), int(match.group(3)))
    return Arch(cap, match.group(1) == "compute")


_DRIVER_RE = re.compile(r"[1-9][0-9]{2}\.[0-9]{1,3}(?:\.[0-9]{1,3})?", re.ASCII)
_CUDA_RE = re.compile(r"[1-9][0-9]?\.[0-9]{1,2}(?:\.[0-9]{1,3})?", re.ASCII)


def parse_driver(text: str) -> Version | None:
    """An NVIDIA driver version as NVIDIA writes them (``550.54.15``, ``580.65``): a three-digit
    branch and one or two numbers, ASCII digits only; no epoch, local part or pre-release. The
    rule for a driver read from the host and for one given as a flag or variable."""
    text = text.strip()
    return Version(text) if _DRIVER_RE.fullmatch(text) else None


def parse_cuda(text: str) -> Version | None:
    """A CUDA version (``12.4``, ``11.8.0``): ASCII digits, no epoch, local part or suffix."""
    text = text.strip()
    return Version(text) if _CUDA_RE.fullmatch(text) else None


_ROCM_RE = re.compile(r"[0-9]{1,2}\.[0-9]{1,2}(?:\.[0-9]{1,3})?", re.ASCII)
ROCM_FORMS = "a ROCm version X.Y or X.Y.Z, e.g. 6.4 or 7.0.2"
"""The forms a ROCm version is given in (``--rocm``, its variable, a named target's key, a lock
header's), named by every refusal."""


def parse_rocm(text: str) -> Version | None:
    """A ROCm version (``6.4``, ``7.0.2``): ASCII digits only, no letters or suffix."""
    text = text.strip()
    return Version(text) if _ROCM_RE.fullmatch(text) else None


_PYTHON_RE = re.compile(r"3\.([0-9]{1,2})(?:\.[0-9]{1,3})?(t?)", re.ASCII)
FREE_THREADED_SINCE = 13
"""The first CPython 3 minor with a free-threaded build: PEP 703 (Making the Global Interpreter
Lock Optional in CPython) landed in 3.13, "Starting with the 3.13 release, CPython has
experimental support for a build of Python called free threading"
(https://docs.python.org/3.13/howto/free-threading-python.html); no ``3.12t`` exists."""
PYTHON_FORMS = "a Python version like 3.12 or 3.12.4 (free-threaded CPython is 3.13t or later, e.g. 3.14t)"
"""The forms a target Python is given in (``--python``, its variable, a named target's key)."""


def parse_python(text: str) -> tuple[Version, bool] | None:
    """A target Python (``3.12``, ``3.12.4``; ``3.14t``: free-threaded) as its version and whether
    it is free-threaded; None for any other text, a free-threaded one before 3.13 included."""
    found = _PYTHON_RE.fullmatch(text.strip())
    if found is None:
        return None
    free_threaded = found.group(2) == "t"
    if free_threaded and int(found.group(1)) < FREE_THREADED_SINCE:
        return None
    return Version(text.strip().removesuffix("t")), free_threaded


def format_driver(version: Version) -> str:
    """NVIDIA writes driver minor and patch with two digits: 450.80.02, not 450.80.2."""
    parts = list(version.release)
    return ".".join([str(parts[0])] + [f"{p:02d}" for p in parts[1:]])


def archs_cover(archs: Iterable[Arch], gpu: ComputeCapability) -> bool:
    return any(arch.covers(gpu) for arch in archs)
