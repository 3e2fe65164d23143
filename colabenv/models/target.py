"""The host as the resolver sees it: its device (NVIDIA GPUs, AMD GPUs, a TPU, or the CPU alone, one
sum-typed field), its Python and what is installed, the overrides that replace detection, and
what ``detect`` found."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from packaging.version import Version

from colabenv.errors import TargetError
from colabenv.models.base import Accelerator, ComputeCapability, RuntimeKind, format_driver
from colabenv.models.frozen import model
from colabenv.models.installed import InstalledSet
from colabenv.models.runtimes import ColabRuntime

if TYPE_CHECKING:
    from colabenv.models.readings import VersionReading


@model
class Gpu:
    """One GPU as detection lists it; memory in MiB when known."""

    name: str
    compute_capability: ComputeCapability
    memory_total_mib: int | None = None
    memory_free_mib: int | None = None


TPU_NAME_PATTERN = r"[a-z][a-z0-9]{0,15}"
"""A TPU generation or accelerator type prefix as ``tpu.toml`` names it (``v5e``, ``v5litepod``,
``tpu7x``)."""
TPU_TYPE_PATTERN = rf"({TPU_NAME_PATTERN})(?:-([1-9][0-9]{{0,6}}))?"
"""An accelerator type: a prefix, then the TensorCore count where given (``v5litepod-8``)."""
MAX_TPU_CHIPS = 1 << 20


@model
class TpuTarget:
    """A TPU host as the resolver sees it: the generation (``v5e``, a name from the catalog's
    ``tpu.toml``), the accelerator type that named it (``v5litepod-8``, ``v6e-1``) and the
    number of chips. Each is None where nothing told it (a generation the catalog does not
    know, a host whose accelerator type is not in its environment)."""

    kind: ClassVar[Accelerator] = Accelerator.TPU
    rocm: ClassVar[None] = None
    gfx: ClassVar[tuple[str, ...]] = ()
    driver: ClassVar[None] = None
    cuda: ClassVar[None] = None
    compute_capabilities: ClassVar[tuple[ComputeCapability, ...]] = ()
    generation: str | None
    accelerator_type: str | None = None
    chips: int | None = None

    @property
    def tpu(self) -> TpuTarget:
        return self

    def tpu_json(self) -> dict[str, object] | None:
        return self.to_json()

    def to_json(self) -> dict[str, object]:
        return {"generation": self.generation, "accelerator_type": self.accelerator_type, "chips": self.chips}

    def __str__(self) -> str:
        what = f"TPU {self.generation}" if self.generation else "TPU of unknown generation"
        details = [
            d
            for d in (
                self.accelerator_type,
                None if self.chips is None else f"{self.chips} chip{'' if self.chips == 1 else 's'}",
            )
            if d
        ]
        return f"{what} ({', '.join(details)})" if details else what


@model
class NvidiaTarget:
    """NVIDIA GPUs as the resolver sees them: the driver, the newest CUDA it supports (not an
    installed toolkit), each GPU's compute capability. One of ``driver`` and ``cuda`` is always
    known (``--cuda`` alone stands for a driver of that CUDA); an empty
    ``compute_capabilities`` means "not known": every arch list is accepted."""

    kind: ClassVar[Accelerator] = Accelerator.NVIDIA
    rocm: ClassVar[None] = None
    gfx: ClassVar[tuple[str, ...]] = ()
    tpu: ClassVar[None] = None
    driver: Version | None
    cuda: Version | None
    compute_capabilities: tuple[ComputeCapability, ...] = ()

    def __post_init__(self) -> None:
        if self.driver is None and self.cuda is None:
            raise ValueError("an NVIDIA target has a driver or a CUDA version")

    def tpu_json(self) -> dict[str, object] | None:
        return None


GFX_PATTERN = r"gfx([1-9][0-9]?)([0-9a-f])([0-9a-f])"
"""An AMD GPU architecture as LLVM's AMDGPU target and ROCm name it: ``gfx`` then the major
version in decimal, the minor and the stepping as one hex digit each (``gfx942``, ``gfx90a``,
``gfx1100``, ``gfx1201``)."""
GFX_FORMS = "an AMD GPU architecture like gfx942, gfx90a or gfx1100"
MAX_GFX = 16
PLATFORMS = ("linux_x86_64", "linux_aarch64")
"""The platforms a target may name (``--platform``, a named target's ``platform``)."""


def flag_or_key(field: str, named: bool) -> str:
    """How a target field given by hand is named: a named target's key (``compute_capability``),
    else its flag (``--compute-capability``)."""
    return field if named else "--" + field.replace("_", "-")


def python_shown(release: Sequence[int], free_threaded: bool) -> str:
    """A Python as ``--python`` takes it: ``3.14`` or, free-threaded, ``3.14t``."""
    return ".".join(str(n) for n in release) + ("t" if free_threaded else "")


def gfx_names(items: Sequence[str]) -> tuple[str, ...]:
    """AMD GPU architectures (``gfx942,gfx90a`` items, comma lists allowed), lowercase, each
    once, in order; ValueError naming the first that is none (an empty item too: ``gfx942,,``
    is malformed, not one architecture), or too many."""
    found: list[str] = []
    for item in items:
        for part in item.split(","):
            name = part.strip().lower()
            if not name:
                raise ValueError(f"an empty item is not {GFX_FORMS} (no empty item in a comma list)")
            if not re.fullmatch(GFX_PATTERN, name):
                raise ValueError(f"{part.strip()[:40]!a} is not {GFX_FORMS}{_without_features(name)}")
            if name not in found:
                found.append(name)
    if len(found) > MAX_GFX:
        raise ValueError(f"{len(found)} architectures; at most {MAX_GFX}")
    return tuple(found)


def _without_features(name: str) -> str:
    """For a gfx with target features (``gfx942:sramecc+:xnack-``, as torch's ``gcnArchName``
    and ``rocminfo`` name a GPU), what to give instead; empty for any other name."""
    gfx, colon, features = name.partition(":")
    if not colon or not re.fullmatch(GFX_PATTERN, gfx) or not re.fullmatch(_FEATURES, colon + features):
        return ""
    return f" (give {gfx} without its target features ({colon}{features}))"


_FEATURES = r"(:[a-z][a-z0-9]*[+-])+"
"""LLVM's AMDGPU target features after a processor name (``:sramecc+``, ``:xnack-``)."""


@model
class RocmTarget:
    """AMD GPUs through ROCm as the resolver sees them: the host's ROCm (``6.4``; None where
    only the kernel driver is known, no ROCm userspace) and each GPU's architecture (``gfx942``;
    empty: not known, every build's gfx list is accepted)."""

    kind: ClassVar[Accelerator] = Accelerator.ROCM
    driver: ClassVar[None] = None
    cuda: ClassVar[None] = None
    compute_capabilities: ClassVar[tuple[ComputeCapability, ...]] = ()
    tpu: ClassVar[None] = None
    rocm: Version | None
    gfx: tuple[str, ...] = ()

    def tpu_json(self) -> dict[str, object] | None:
        return None


@model
class CpuTarget:
    """The CPU alone: no NVIDIA GPU and no TPU (or ``--cpu``)."""

    kind: ClassVar[Accelerator] = Accelerator.CPU
    rocm: ClassVar[None] = None
    gfx: ClassVar[tuple[str, ...]] = ()
    driver: ClassVar[None] = None
    cuda: ClassVar[None] = None
    compute_capabilities: ClassVar[tuple[ComputeCapability, ...]] = ()
    tpu: ClassVar[None] = None

    def tpu_json(self) -> dict[str, object] | None:
        return None


Device = NvidiaTarget | RocmTarget | TpuTarget | CpuTarget
"""What a target computes on: one value of its kind (colabenv.accelerators has a module per kind)."""


@model
class Target:
    """Everything the resolver may know about the host it resolves for.

    ``device``: its NVIDIA GPUs, its TPU, or the CPU alone; ``driver``, ``cuda``,
    ``compute_capabilities`` and ``tpu`` read it (each device answers them: None, or no GPUs,
    where it is of another kind). What differs by kind is asked of the kind
    (``colabenv.accelerators.registry.accelerator_of``), never of the target.
    ``python``: the full version where it is known (``3.14.1``: the host's own interpreter, or
    ``--python 3.14.1``), else major.minor (``--python 3.14``); Python ranges are evaluated
    against it as it is, so a wheel's ``!=3.14.1`` turns down 3.14.1 and not 3.14.
    ``glibc``: where it is known (this host, undescribed by flags; a Colab runtime's image), the
    glibc whose ``manylinux_2_N`` wheels it installs; None: not known (a target made of flags).
    ``free_threaded``: a free-threaded CPython (``3.14t``), which loads only its own ``cp314t``
    wheels (never an abi3 one).
    ``installed_note``: why ``installed`` is empty where that needs saying (this host's installed
    versions not read: the target is another platform or Python); not part of its value.
    """

    device: Device
    python: Version
    platform: str = "linux_x86_64"
    installed: InstalledSet = field(default_factory=InstalledSet)
    glibc: Version | None = None
    free_threaded: bool = False
    installed_note: str | None = field(default=None, compare=False)

    @property
    def driver(self) -> Version | None:
        return self.device.driver

    @property
    def cuda(self) -> Version | None:
        return self.device.cuda

    @property
    def compute_capabilities(self) -> tuple[ComputeCapability, ...]:
        return self.device.compute_capabilities

    @property
    def tpu(self) -> TpuTarget | None:
        return self.device.tpu

    @property
    def accelerator(self) -> Accelerator:
        return self.device.kind

    @property
    def python_minor(self) -> str:
        return f"{self.python.major}.{self.python.minor}"

    @property
    def python_shown(self) -> str:
        """The Python as the flag takes it: ``3.14`` or, free-threaded, ``3.14t``."""
        return python_shown((self.python.major, self.python.minor), self.free_threaded)

    @property
    def python_given(self) -> str:
        """The Python as given, its patch release kept: ``3.14.1`` or, free-threaded, ``3.14.1t``."""
        return str(self.python) + ("t" if self.free_threaded else "")

    @property
    def rocm(self) -> Version | None:
        return self.device.rocm

    @property
    def gfx(self) -> tuple[str, ...]:
        return self.device.gfx

    def to_json(self) -> dict[str, object]:
        return {
            "driver": format_driver(self.driver) if self.driver is not None else None,
            "cuda": str(self.cuda) if self.cuda is not None else None,
            "compute_capabilities": [str(c) for c in self.compute_capabilities],
            "python": self.python_minor,
            "platform": self.platform,
            "accelerator": self.accelerator.value,
            "tpu": self.device.tpu_json(),
            **self._amd_and_free_threaded(),
        }

    def _amd_and_free_threaded(self) -> dict[str, object]:
        """``rocm`` and ``gfx`` of AMD GPUs, ``free_threaded`` of a free-threaded Python: only
        where they say something, so that every other target reads as it always has."""
        found: dict[str, object] = {}
        if self.rocm is not None or self.gfx:
            found.update(rocm=str(self.rocm) if self.rocm is not None else None, gfx=list(self.gfx))
        if self.free_threaded:
            found["free_threaded"] = True
        return found


def device_of(
    driver: Version | None,
    cuda: Version | None,
    compute_capabilities: tuple[ComputeCapability, ...],
    tpu: TpuTarget | None,
    rocm: RocmTarget | None = None,
) -> Device:
    """The device a host's parts describe: NVIDIA GPUs where a driver or CUDA is known, else AMD
    GPUs where ROCm or a gfx is known, else the TPU where there is one, else the CPU (never a
    TPU or AMD GPUs beside a driver: the driver wins)."""
    if driver is not None or cuda is not None:
        return NvidiaTarget(driver, cuda, compute_capabilities)
    if rocm is not None:
        return rocm
    return tpu if tpu is not None else CpuTarget()


def given_problem(origin: str, value: object | None, detail: str, *, key: bool = False) -> TargetError:
    """The one line of a problem with a target value: after the flag or variable that gave it
    and the value (``--cuda 13.0 conflicts with ...``; with no value, ``--cuda: ...``). For a
    named target's key (``key``: ``origin`` is the key), the value and ``detail`` alone, the key
    carried for the profile's key path (``targets.nv.cuda: 13.0 conflicts with ...``)."""
    if key:
        return TargetError(detail if value is None else f"{value} {detail}", key=origin)
    return TargetError(f"{origin}: {detail}" if value is None else f"{origin} {value} {detail}")


def taken_back(origin: str, *, key: bool = False) -> str:
    """How to take back a value ``origin`` gave: ``leave --python out``, ``unset
    COLABENV_PYTHON_VERSION``, or a named target's ``leave python out``."""
    if not key and not origin.startswith("--"):
        return f"unset {origin}"
    return f"leave {origin} out"


@model
class TargetOverrides:
    """Values that replace detection, from flags or ``COLABENV_*`` variables (flags win), or a
    profile's named target's keys (``named``).

    ``origins`` says where a value came from, for messages: ``("driver", "--driver")`` or
    ``("driver", "COLABENV_DRIVER_VERSION")``, a named target's ``("driver", "driver")``; a value
    without one is named by its flag (its key, in a named target's).
    ``runtime``: the Colab runtime version ``--runtime`` named (its Python is ``python``; its
    image for the target's accelerator is what is installed).
    """

    driver: Version | None = None
    cuda: Version | None = None
    compute_capabilities: tuple[ComputeCapability, ...] = ()
    python: Version | None = None
    cpu: bool = False
    installed_from: Path | None = None
    origins: tuple[tuple[str, str], ...] = ()
    tpu: TpuTarget | None = None
    runtime: ColabRuntime | None = None
    platform: str | None = None
    rocm: RocmTarget | None = None
    free_threaded: bool | None = None
    named: bool = False
    """The values are a named target's keys: each is named by its key, and a problem with one
    is a TargetError carrying it (:func:`given_problem`)."""

    def origin(self, field: str) -> str:
        """The flag, variable or named target's key that gave ``field`` (``driver``, ``cuda`` ...)."""
        return dict(self.origins).get(field, flag_or_key(field, self.named))

    def problem(self, field: str, value: object | None, detail: str) -> TargetError:
        """The one line of a problem with ``field``'s ``value`` (:func:`given_problem`)."""
        return given_problem(self.origin(field), value, detail, key=self.named)

    def taken_back(self, field: str) -> str:
        """How to take back ``field``'s value (:func:`taken_back`)."""
        return taken_back(self.origin(field), key=self.named)


@model
class Fingerprint:
    """What ``colabenv detect`` found: the target plus the details only people need
    (``amdgpu_driver``: the amdgpu kernel driver's version, read where the host's AMD GPUs were;
    None where it was not read; ``glibc``: the target's where known)."""

    target: Target
    gpus: tuple[Gpu, ...]
    runtime: RuntimeKind
    python_implementation: str
    python_full: str
    glibc: str | None
    state_dir: Path | None
    notes: tuple[str, ...]
    amdgpu_driver: VersionReading | None = None
    read_platform: str | None = None
    """The platform detection read (the interpreter's); the target's may be another
    (``--platform``), whose glibc ``detect`` does not know."""
