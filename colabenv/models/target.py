"""The host as the resolver sees it: what is installed, its GPUs or TPU, the target and the
overrides that replace detection, and what ``detect`` found."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from colabenv.models.base import Accelerator, ComputeCapability, RuntimeKind, format_driver
from colabenv.models.frozen import model

if TYPE_CHECKING:
    from colabenv.models.runtimes import ColabRuntime


@model
class InstalledDist:
    """A distribution present in the runtime. ``version`` keeps its local tag (``2.6.0+cu124``)."""

    name: NormalizedName
    version: str

    @property
    def parsed_version(self) -> Version | None:
        try:
            return Version(self.version)
        except InvalidVersion:
            return None


@model
class InstalledSet:
    """What the runtime already has, by canonical name."""

    dists: tuple[InstalledDist, ...] = ()

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, str]) -> InstalledSet:
        dists = {canonicalize_name(name): version for name, version in mapping.items()}
        return cls(tuple(InstalledDist(n, v) for n, v in sorted(dists.items())))

    def get(self, name: str) -> InstalledDist | None:
        wanted = canonicalize_name(name)
        for dist in self.dists:
            if dist.name == wanted:
                return dist
        return None

    def version_of(self, name: str) -> Version | None:
        dist = self.get(name)
        return dist.parsed_version if dist else None

    def __len__(self) -> int:
        return len(self.dists)


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

    generation: str | None
    accelerator_type: str | None = None
    chips: int | None = None

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
class Target:
    """Everything the resolver may know about the host it resolves for.

    ``driver`` and ``cuda`` are both None when there is no usable NVIDIA GPU (or ``--cpu``);
    ``cuda`` is the newest CUDA the driver supports, not an installed toolkit. An empty
    ``compute_capabilities`` on a GPU target means "not known": every arch list is accepted.
    ``tpu``: the TPU of a TPU host (never beside a driver).
    ``python``: the full version where it is known (``3.14.1``: the host's own interpreter, or
    ``--python 3.14.1``), else major.minor (``--python 3.14``); Python ranges are evaluated
    against it as it is, so a wheel's ``!=3.14.1`` turns down 3.14.1 and not 3.14.
    """

    driver: Version | None
    cuda: Version | None
    compute_capabilities: tuple[ComputeCapability, ...]
    python: Version
    platform: str = "linux_x86_64"
    installed: InstalledSet = field(default_factory=InstalledSet)
    tpu: TpuTarget | None = None

    @property
    def has_gpu(self) -> bool:
        return self.driver is not None or self.cuda is not None

    @property
    def accelerator(self) -> Accelerator:
        if self.has_gpu:
            return Accelerator.NVIDIA
        return Accelerator.TPU if self.tpu is not None else Accelerator.CPU

    @property
    def python_minor(self) -> str:
        return f"{self.python.major}.{self.python.minor}"

    def to_json(self) -> dict[str, object]:
        return {
            "driver": format_driver(self.driver) if self.driver is not None else None,
            "cuda": str(self.cuda) if self.cuda is not None else None,
            "compute_capabilities": [str(c) for c in self.compute_capabilities],
            "python": self.python_minor,
            "platform": self.platform,
            "accelerator": self.accelerator.value,
            "tpu": self.tpu.to_json() if self.tpu is not None else None,
        }


@model
class TargetOverrides:
    """Values that replace detection, from flags or ``COLABENV_*`` variables (flags win).

    ``origins`` says where a value came from, for messages: ``("driver", "--driver")`` or
    ``("driver", "COLABENV_DRIVER_VERSION")``; a value without one is named by its flag.
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

    def origin(self, field: str) -> str:
        """The flag or variable that gave ``field`` (``driver``, ``cuda`` ...)."""
        return dict(self.origins).get(field, "--" + field.replace("_", "-"))


@model
class Fingerprint:
    """What ``colabenv detect`` found: the target plus the details only people need."""

    target: Target
    gpus: tuple[Gpu, ...]
    runtime: RuntimeKind
    python_implementation: str
    python_full: str
    glibc: str | None
    state_dir: Path | None
    notes: tuple[str, ...]
