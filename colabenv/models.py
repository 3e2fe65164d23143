"""The frozen values that flow between layers once parsing is done.

Nothing here reads files or the host. Versions are :class:`packaging.version.Version`,
specifiers :class:`packaging.specifiers.SpecifierSet`; mappings are tuples of pairs so that
every value is hashable and compares by content.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from colabenv._model import model


class Framework(str, enum.Enum):
    TORCH = "torch"
    TENSORFLOW = "tensorflow"
    JAX = "jax"

    def __str__(self) -> str:
        return self.value


class Installer(str, enum.Enum):
    AUTO = "auto"
    UV = "uv"
    PIP = "pip"

    def __str__(self) -> str:
        return self.value


class Accelerator(str, enum.Enum):
    """What a target computes on: an NVIDIA GPU, a Google TPU, or the CPU alone."""

    NVIDIA = "nvidia"
    TPU = "tpu"
    CPU = "cpu"

    def __str__(self) -> str:
        return self.value


class RuntimeKind(str, enum.Enum):
    COLAB = "colab"
    KAGGLE = "kaggle"
    GENERIC = "generic"

    def __str__(self) -> str:
        return self.value


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

    @classmethod
    def parse(cls, text: str) -> Arch:
        match = _ARCH_RE.match(text.strip())
        if match is None:
            raise ValueError(f"{text!r} is not an arch like sm_86 or compute_90")
        cap = ComputeCapability(int(match.group(2)), int(match.group(3)))
        return cls(cap, match.group(1) == "compute")

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


def format_driver(version: Version) -> str:
    """NVIDIA writes driver minor and patch with two digits: 450.80.02, not 450.80.2."""
    parts = list(version.release)
    return ".".join([str(parts[0])] + [f"{p:02d}" for p in parts[1:]])


def archs_cover(archs: Iterable[Arch], gpu: ComputeCapability) -> bool:
    return any(arch.covers(gpu) for arch in archs)


# ---------------------------------------------------------------------------------------------
# The host, as the resolver sees it


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
        return {"generation": self.generation, "accelerator_type": self.accelerator_type,
                "chips": self.chips}

    def __str__(self) -> str:
        what = f"TPU {self.generation}" if self.generation else "TPU of unknown generation"
        details = [d for d in (self.accelerator_type,
                               None if self.chips is None else
                               f"{self.chips} chip{'' if self.chips == 1 else 's'}") if d]
        return f"{what} ({', '.join(details)})" if details else what


@model
class Target:
    """Everything the resolver may know about the host it resolves for.

    ``driver`` and ``cuda`` are both None when there is no usable NVIDIA GPU (or ``--cpu``);
    ``cuda`` is the newest CUDA the driver supports, not an installed toolkit. An empty
    ``compute_capabilities`` on a GPU target means "not known": every arch list is accepted.
    ``tpu``: the TPU of a TPU host (never beside a driver).
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
    """

    driver: Version | None = None
    cuda: Version | None = None
    compute_capabilities: tuple[ComputeCapability, ...] = ()
    python: Version | None = None
    cpu: bool = False
    installed_from: Path | None = None
    origins: tuple[tuple[str, str], ...] = ()
    tpu: TpuTarget | None = None

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


# ---------------------------------------------------------------------------------------------
# The profile


@model
class FrameworkRequest:
    """What a profile asks of one framework: a version range, an optional variant, companions.

    ``companions`` maps a companion package (torchvision, torchaudio) to the specifier the
    profile gives it; the resolver pins each to the version the catalog pairs with the
    framework release, and refuses a pairing outside the given specifier.
    """

    framework: Framework
    specifier: SpecifierSet
    variant: str | None = None
    companions: tuple[tuple[NormalizedName, SpecifierSet], ...] = ()


@model
class InstallSettings:
    """The profile's ``[install]`` table: installer and index URLs (``${VAR}`` kept unexpanded)."""

    installer: Installer = Installer.AUTO
    index_url: str | None = None
    pytorch_index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()


@model
class IoCheck:
    """One ``[verify] io_paths`` entry: a folder whose write and uncached read throughput
    ``verify`` measures, with the MiB/s below which that is a FAIL (None: report only)."""

    path: str
    min_read_mib_s: float | None = None
    min_write_mib_s: float | None = None


@model
class VerifySettings:
    """The profile's ``[verify]`` table: which smoke tests run and what they require.

    ``io`` and ``io_size_mib``: storage throughput checks and the test file's size;
    ``min_free_ram_gib``: host memory that must be free; ``max_other_vram_share``: the share of a
    GPU's memory another process may hold before ``vram`` warns.
    """

    smoke: tuple[Framework, ...] | None = None
    require_gpu: bool = False
    min_free_vram_gib: float | None = None
    timeout_s: float = 120.0
    io: tuple[IoCheck, ...] = ()
    io_size_mib: int = 256
    min_free_ram_gib: float | None = None
    max_other_vram_share: float = 0.1


@model
class Reproducibility:
    """The profile's ``[reproducibility]`` table: the seed ``colabenv.seed_everything()`` uses
    when given none, and whether GPU work must be deterministic (the ``.pth`` hook then sets
    the switches frameworks read at start, and ``verify`` checks bit-identical reruns)."""

    seed: int | None = None
    deterministic: bool = False


@model
class Profile:
    """A validated profile, its ``extends`` chain merged; ``content_hash`` is of that merge."""

    name: str
    description: str
    path: Path
    content_hash: str
    python: SpecifierSet | None
    frameworks: tuple[FrameworkRequest, ...]
    requirements: tuple[Requirement, ...]
    apt: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    install: InstallSettings
    verify: VerifySettings
    reproducibility: Reproducibility = field(default_factory=Reproducibility)
    catalog_paths: tuple[Path, ...] = ()
    allow_unconfirmed: bool = False

    def framework(self, framework: Framework) -> FrameworkRequest | None:
        for request in self.frameworks:
            if request.framework is framework:
                return request
        return None

    @property
    def smoke_frameworks(self) -> tuple[Framework, ...]:
        if self.verify.smoke is not None:
            return self.verify.smoke
        return tuple(r.framework for r in self.frameworks)


# ---------------------------------------------------------------------------------------------
# The catalog


@model
class Source:
    """Where a catalog fact comes from: a URL or a named upstream document."""

    text: str


@model
class CudaToolkit:
    """A CUDA toolkit release and the driver it shipped with ("fully supported")."""

    version: Version
    label: str
    toolkit_driver: Version
    source: Source


@model
class CudaMajorLine:
    """The oldest driver on which any toolkit of a major line runs (minor-version compatibility)."""

    major: int
    floor_driver: Version
    source: Source


@model
class TpuGeneration:
    """A TPU generation as ``tpu.toml`` names it (``v5e``): the accelerator type prefixes that
    say it (``v5litepod-8``, ``v5e-1``), the PCI device ids its chips show under Google's
    vendor id, and how many TensorCores a chip has (an accelerator type counts TensorCores)."""

    name: str
    type_prefixes: tuple[str, ...]
    pci_device_ids: tuple[str, ...]
    tensorcores_per_chip: int
    source: Source


@model
class TpuBuild:
    """The TPU build of one framework release: what it installs beside the framework's own
    wheel (``libtpu==0.0.17.*``; ``torch-xla[tpu]==2.8.1``), the TPU generations it runs on,
    its Python range, the find-links page its libtpu needs (None: the package index has it),
    and the release variant whose wheel it takes (``cpu`` for torch; None: the extra ``tpu``
    on the default index, for jax)."""

    framework: Framework
    release: Version
    requires: tuple[str, ...]
    generations: tuple[str, ...]
    python: SpecifierSet | None
    find_links: str | None
    base_variant: str | None
    extra: str | None
    source: Source


@model
class TpuFacts:
    """``profiles/catalog/tpu.toml``: TPU generations, the TPU builds of framework releases,
    and for a framework without any, why (``unsupported``)."""

    generations: tuple[TpuGeneration, ...] = ()
    builds: tuple[TpuBuild, ...] = ()
    unsupported: tuple[tuple[Framework, str], ...] = ()

    def generation(self, name: str) -> TpuGeneration | None:
        wanted = name.strip().lower()
        for generation in self.generations:
            if generation.name == wanted or wanted in generation.type_prefixes:
                return generation
        return None

    def generation_of_pci(self, device_id: str) -> TpuGeneration | None:
        wanted = device_id.strip().lower()
        for generation in self.generations:
            if wanted in generation.pci_device_ids:
                return generation
        return None

    def build(self, framework: Framework, release: Version) -> TpuBuild | None:
        for build in self.builds:
            if build.framework is framework and build.release == release:
                return build
        return None

    def missing(self, framework: Framework) -> str:
        """Why a release of ``framework`` has no TPU build."""
        for name, reason in self.unsupported:
            if name is framework:
                return reason
        built = sorted(b.release for b in self.builds if b.framework is framework)
        if not built:
            return "the catalog has no TPU build of it"
        span = str(built[0]) if len(built) == 1 else f"{built[0]} to {built[-1]}"
        return f"no TPU build (the catalog's TPU builds of {framework} are {span})"


@model
class Variant:
    """One build of a framework release.

    ``name`` is ``cu124``/``cpu`` for torch, the extra (``cuda12``, ``and-cuda``) or ``cpu`` for
    jax and tensorflow. ``cuda`` is the toolkit it was built with (None for CPU builds);
    ``index_url`` None means the default index. ``archs`` is the GPU arch list (empty for CPU).
    ``pins`` are the NVIDIA wheels the build requires, used for joint resolution.
    ``unconfirmed``: why a fact of this build (its arch list, say) could not be read from
    upstream; the resolver passes over such a build unless allowed. ``overlay``: the catalog
    overlay file it was read from (None: the shipped catalog).
    """

    name: str
    cuda: Version | None
    index_url: str | None
    local_tag: str | None
    extra: str | None
    archs: tuple[Arch, ...]
    pin_texts: tuple[str, ...]
    python: SpecifierSet | None
    source: Source
    tpu: TpuBuild | None = None
    """The TPU build this variant stands for (the resolver's ``tpu`` variant), else None."""
    unconfirmed: str | None = None
    overlay: str | None = None

    @property
    def is_cpu(self) -> bool:
        return self.cuda is None

    @functools.cached_property
    def pins(self) -> tuple[Requirement, ...]:
        """Parsed on first use: most variants of a large catalog are never asked."""
        return tuple(Requirement(text) for text in self.pin_texts)


@model
class Companion:
    """A package released in lockstep with a framework (torchvision, jaxlib, jax plugins)."""

    name: NormalizedName
    version: Version
    follows_variant: bool


@model
class Release:
    """One framework release in the catalog: its variants, companions and Python range."""

    framework: Framework
    version: Version
    python: SpecifierSet
    variants: tuple[Variant, ...]
    default_variant: str | None
    companions: tuple[Companion, ...]
    source: Source
    overlay: str | None = None
    """The catalog overlay file whose entry for this release was read last (None: shipped)."""

    def variant(self, name: str) -> Variant | None:
        for variant in self.variants:
            if variant.name == name:
                return variant
        return None

    def companion(self, name: str) -> Companion | None:
        wanted = canonicalize_name(name)
        for companion in self.companions:
            if companion.name == wanted:
                return companion
        return None


@model
class ComponentRange:
    """Versions of an NVIDIA component wheel that carry the same GPU code: ``lower <= v <
    upper`` (either bound may be open). ``archs`` are the entries every shared object with GPU
    code in those wheels carries, so the wheel covers a GPU only where they do. ``checked``:
    the releases whose wheels were read."""

    lower: Version | None
    upper: Version | None
    archs: tuple[Arch, ...]
    checked: tuple[Version, ...]
    source: Source

    def contains(self, version: Version) -> bool:
        return (self.lower is None or version >= self.lower) and (
            self.upper is None or version < self.upper
        )

    def covers(self, gpu: ComputeCapability) -> bool:
        return archs_cover(self.archs, gpu)

    @property
    def specifier(self) -> str:
        parts = ([f">={self.lower}"] if self.lower is not None else []) + (
            [f"<{self.upper}"] if self.upper is not None else []
        )
        return ",".join(parts)


@model
class Component:
    """An NVIDIA component distribution (``nvidia-cudnn-cu12``) and the GPU code of its
    releases, oldest range first."""

    name: NormalizedName
    cuda_major: int
    ranges: tuple[ComponentRange, ...]

    def range_of(self, version: Version) -> ComponentRange | None:
        for item in self.ranges:
            if item.contains(version):
                return item
        return None


@model
class ToolkitMeta:
    """A release of the ``cuda-toolkit`` meta-package: the component versions each extra pins
    (``cublas`` -> ``nvidia-cublas-cu12==12.6.4.1.*``), for the frameworks that pin
    ``cuda-toolkit[...]`` instead of the components themselves (torch 2.11 and later)."""

    version: Version
    extras: tuple[tuple[str, tuple[str, ...]], ...]
    source: Source

    def pins(self, extra: str) -> tuple[Requirement, ...]:
        for name, texts in self.extras:
            if name == extra:
                return tuple(Requirement(text) for text in texts)
        return ()


@model
class ComponentFacts:
    """``profiles/catalog/components.toml``: what GPU code each NVIDIA component release carries."""

    components: tuple[Component, ...] = ()
    toolkit_metas: tuple[ToolkitMeta, ...] = ()

    @functools.cached_property
    def memo(self) -> dict[object, object]:
        """What :mod:`colabenv.components` computes from these facts, kept with them: the
        resolver asks about the same GPUs for every build of every release."""
        return {}

    def component(self, name: str) -> Component | None:
        wanted = canonicalize_name(name)
        for component in self.components:
            if component.name == wanted:
                return component
        return None

    def toolkit_meta(self, version: Version) -> ToolkitMeta | None:
        for meta in self.toolkit_metas:
            if meta.version == version:
                return meta
        return None


@model
class Catalog:
    """The curated catalog: the driver table, the framework releases that were read, and the
    NVIDIA component facts when a resolution needs them (empty otherwise)."""

    toolkits: tuple[CudaToolkit, ...]
    major_lines: tuple[CudaMajorLine, ...]
    releases: tuple[Release, ...]
    components: ComponentFacts = field(default_factory=ComponentFacts)
    tpu: TpuFacts = field(default_factory=TpuFacts)

    def releases_of(self, framework: Framework) -> tuple[Release, ...]:
        """Releases of one framework, newest first."""
        found = [r for r in self.releases if r.framework is framework]
        return tuple(sorted(found, key=lambda r: r.version, reverse=True))

    def release(self, framework: Framework, version: Version) -> Release | None:
        for release in self.releases:
            if release.framework is framework and release.version == version:
                return release
        return None

    def floor_driver(self, cuda: Version) -> Version | None:
        for line in self.major_lines:
            if line.major == cuda.major:
                return line.floor_driver
        return None

    def toolkit_driver(self, cuda: Version) -> Version | None:
        """Driver of that major.minor's GA release: from it on, the toolkit is fully supported."""
        return self._toolkit_drivers.get((cuda.major, cuda.minor))

    @functools.cached_property
    def _toolkit_drivers(self) -> dict[tuple[int, int], Version]:
        drivers: dict[tuple[int, int], Version] = {}
        for toolkit in self.toolkits:
            key = (toolkit.version.major, toolkit.version.minor)
            if key not in drivers or toolkit.toolkit_driver < drivers[key]:
                drivers[key] = toolkit.toolkit_driver
        return drivers

    def max_cuda_for_driver(self, driver: Version) -> Version | None:
        """The newest CUDA major.minor whose toolkit driver this driver meets."""
        met = [t.version for t in self.toolkits if driver >= t.toolkit_driver]
        if not met:
            return None
        best = max(met)
        return Version(f"{best.major}.{best.minor}")


# ---------------------------------------------------------------------------------------------
# The resolution


@model
class FrameworkChoice:
    """What the resolver chose for one framework, the requirements to install and why."""

    framework: Framework
    release: Version
    variant: str
    index_url: str | None
    requirements: tuple[str, ...]
    installed: bool
    reason: str
    cuda: Version | None
    pins: tuple[Requirement, ...]
    archs: tuple[Arch, ...]
    find_links: str | None = None
    """A find-links page the requirements need (an old release's libtpu), else None."""
    catalog_file: str | None = None
    """The catalog overlay file the choice came from (None: the shipped catalog)."""

    def to_json(self) -> dict[str, object]:
        shown: dict[str, object] = {
            "version": str(self.release),
            "variant": self.variant,
            "index_url": self.index_url,
            "requirements": list(self.requirements),
            "installed": self.installed,
            "reason": self.reason,
        }
        if self.find_links is not None:
            shown["find_links"] = self.find_links
        if self.catalog_file is not None:
            shown["catalog_file"] = self.catalog_file
        return shown


@model
class ComponentConstraint:
    """A bound on an NVIDIA component wheel a chosen framework can pull in (``nvidia-cudnn-cu12
    <9.11``): the versions whose kernels cover every GPU of the target. It goes into every
    install's constraints and into the lock; ``reason`` says which GPU and which fact."""

    requirement: str
    reason: str


@model
class Resolution:
    """The resolver's answer for a profile on a target: everything render and lock need.

    ``constraints`` bound what the chosen frameworks pull in (never installed by themselves).
    """

    profile_name: str
    profile_hash: str
    target: Target
    choices: tuple[FrameworkChoice, ...]
    packages: tuple[str, ...]
    apt: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    warnings: tuple[str, ...]
    required_driver: Version | None
    install: InstallSettings = field(default_factory=InstallSettings)
    constraints: tuple[ComponentConstraint, ...] = ()

    @property
    def constraint_lines(self) -> tuple[str, ...]:
        return tuple(c.requirement for c in self.constraints)

    @property
    def requirements(self) -> tuple[str, ...]:
        reqs: list[str] = []
        for choice in self.choices:
            reqs.extend(choice.requirements)
        reqs.extend(self.packages)
        return tuple(reqs)

    def choice(self, framework: Framework) -> FrameworkChoice | None:
        for choice in self.choices:
            if choice.framework is framework:
                return choice
        return None

    def to_json(self) -> dict[str, object]:
        return {
            "target": self.target.to_json(),
            "frameworks": {c.framework.value: c.to_json() for c in self.choices},
            "requirements": list(self.requirements),
            "constraints": [
                {"requirement": c.requirement, "reason": c.reason} for c in self.constraints
            ],
            "apt": list(self.apt),
            "warnings": list(self.warnings),
        }


@model
class LockedFramework:
    """A framework as a lock records it: the release and variant its pins came from, and the
    index that variant is served by (None: the default index)."""

    framework: Framework
    version: str
    variant: str
    index_url: str | None
