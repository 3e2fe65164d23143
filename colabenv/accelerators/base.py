"""The protocol every accelerator kind meets: what the resolver asks of a kind about a target
and a framework build, and what ``detect`` asks of it about the host (:class:`HostReadings`,
read by :mod:`colabenv.host`, a layer above). A kind answers for targets of its own kind only
(the registry hands a target to its kind); nothing outside this package asks which kind a
target is."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from packaging.version import Version

from colabenv.models import (
    Accelerator,
    Catalog,
    CatalogParts,
    ComputeCapability,
    Device,
    Framework,
    FrameworkRequest,
    Gpu,
    GpuReport,
    KfdReport,
    PackageBuild,
    Profile,
    Release,
    RocmTarget,
    RocmToolsReport,
    Target,
    TargetOverrides,
    TpuReport,
    TpuTarget,
    Variant,
    VersionReading,
    device_of,
    format_driver,
)
from colabenv.models.frozen import model

if TYPE_CHECKING:
    from packaging.requirements import Requirement


@model
class ChosenBuild:
    """A build the resolver chose for a target: ``label`` names it ("torch 2.9.0"),
    ``fully_supported`` says whether the target runs it fully (:meth:`AcceleratorKind.fully_supported`)."""

    label: str
    release: Release
    variant: Variant
    fully_supported: bool


@model
class ClusterGpus:
    """How a Kubernetes cluster knows a kind's GPUs: the vendor of its types in
    ``gpu_products.toml``, the device plugin's extended resource a pod asks for, the node label
    a GPU type is matched on (a message calls the GPUs what the kind's traits are ``named``)."""

    vendor: str
    resource: str
    node_label: str


@model
class Traits:
    """What the rest of colabenv asks of a kind, as facts (a table, the way uv's torch backend
    keeps hardware facts): each names a capability, never a kind, so a new kind says which it
    has (each is False unless it says so) and the commands follow.

    ``named``: what a message calls the kind's hosts (``AMD GPUs``, ``the CPU alone``).
    ``gpu``: frameworks see it as a GPU and NVML reads it: ``verify.require_gpu`` met,
    ``init``'s ``require_gpu``.
    ``cuda``: it runs CUDA builds: the NVIDIA component facts and wheels, the CUDA packages.
    ``tpu_runtime``: frameworks run on it through their TPU runtime (libtpu, torch_xla): the
    catalog's TPU builds.
    ``hip``: AMD GPUs through ROCm (HIP): the catalog's ROCm builds; a CUDA package with no
    ROCm build is exit 3 naming it, never left out.
    What ``verify`` checks on the device is the kind's :class:`VerifyChecks`.
    ``docker_devices``, ``apptainer_devices``: how a container of the kind's image is handed the
    devices (the check line of a Dockerfile and an Apptainer definition).
    ``cluster_gpus``: how a Kubernetes cluster schedules the kind's GPUs (None: it has none a
    pod asks for); ``kubernetes_job``: ``render --format kubernetes`` writes a Job for it."""

    named: str
    gpu: bool = False
    cuda: bool = False
    tpu_runtime: bool = False
    hip: bool = False
    docker_devices: str = "--gpus all"
    apptainer_devices: str = "--nv"
    cluster_gpus: ClusterGpus | None = None
    kubernetes_job: bool = True

    @property
    def catalog_parts(self) -> CatalogParts:
        """The parts of the shipped catalog a target of the kind can use."""
        return CatalogParts(components=self.cuda, tpu=self.tpu_runtime)


@model
class RecordedDevice:
    """A device as a lock's header records it: ``driver``, ``cuda`` and ``compute_capabilities``
    as the header writes them, ``tpu`` as the header's TPU field reads (its parts unchecked).
    Which kind it is follows :func:`~colabenv.models.device_of`'s rule; each kind checks, writes
    and compares its own fields (:meth:`AcceleratorKind.recorded_problem` and the methods after it).
    """

    driver: str | None
    cuda: str | None
    compute_capabilities: tuple[str, ...]
    tpu: TpuTarget | None = None
    rocm: str | None = None
    gfx: tuple[str, ...] = ()

    @property
    def kind(self) -> Accelerator:
        """The kind the fields make (the compute capabilities never decide it); only for
        fields whose driver and CUDA are versions."""
        return self._device(()).kind

    def device(self) -> Device:
        """The device the fields make; only for checked fields (each a version, a compute
        capability)."""
        return self._device(tuple(ComputeCapability.parse(c) for c in self.compute_capabilities))

    def _device(self, capabilities: tuple[ComputeCapability, ...]) -> Device:
        driver = Version(self.driver) if self.driver is not None else None
        cuda = Version(self.cuda) if self.cuda is not None else None
        amd = None
        if self.rocm is not None or self.gfx:
            amd = RocmTarget(Version(self.rocm) if self.rocm is not None else None, self.gfx)
        return device_of(driver, cuda, capabilities, self.tpu, amd)

    def overridden(self, overrides: TargetOverrides) -> RecordedDevice:
        """The device with whatever the flags or ``COLABENV_*`` variables override: ``--cpu``
        and ``--tpu`` replace it; an NVIDIA value makes it an NVIDIA device (no TPU), as the
        flags do for a new resolution."""
        if overrides.cpu or overrides.tpu is not None:
            return RecordedDevice(None, None, (), overrides.tpu)
        amd = overrides.rocm
        if amd is not None:
            rocm = str(amd.rocm) if amd.rocm is not None else self.rocm
            return RecordedDevice(None, None, (), None, rocm, amd.gfx or self.gfx)
        nvidia = (
            overrides.driver is not None or overrides.cuda is not None or bool(overrides.compute_capabilities)
        )
        return RecordedDevice(
            driver=format_driver(overrides.driver) if overrides.driver else self.driver,
            cuda=str(overrides.cuda) if overrides.cuda else self.cuda,
            compute_capabilities=tuple(str(c) for c in overrides.compute_capabilities)
            or self.compute_capabilities,
            tpu=None if nvidia else self.tpu,
            rocm=None if nvidia else self.rocm,
            gfx=() if nvidia else self.gfx,
        )


def kind_changed(recorded: RecordedDevice, now: RecordedDevice) -> str:
    """A lock's device of one kind, the current one of another, as a difference says it."""
    return f"accelerator {recorded.kind} in the lock, {now.kind} now"


TPU_BESIDE_A_DRIVER = "a TPU host has no NVIDIA driver or CUDA"
"""What a lock header with a TPU beside a driver, CUDA or compute capabilities is refused for."""
AMD_BESIDE_A_DRIVER = "a host with AMD GPUs (ROCm) has no NVIDIA driver, CUDA or compute capabilities"
"""What a lock header with a ROCm version or a gfx beside a driver, CUDA or compute
capabilities is refused for."""


class HostReadings(Protocol):
    """What the host says, as :mod:`colabenv.host` reads it: each reading is taken when a kind
    asks for it, so a kind calls only what it must look at (the NVIDIA sources stay unread on
    a TPU host, the catalog unread on a host without a driver)."""

    def tpu(self) -> TpuReport:
        """The TPU report: the PCI devices, device nodes and TPU variables of the host."""
        ...

    def nvidia_gpus(self) -> GpuReport:
        """The NVIDIA driver, its CUDA and the GPUs: NVML, ``/proc``, then ``nvidia-smi``."""
        ...

    def amd_gpus(self) -> KfdReport | None:
        """The GPU nodes of the KFD topology; None where the host's folders are not listed
        (a probe of stand-ins), so that nothing of the machine is read."""
        ...

    def rocm_version(self) -> VersionReading:
        """The installed ROCm's version, or why it is not known."""
        ...

    @property
    def cross_check(self) -> bool:
        """Whether the ROCm tools run to check the KFD topology and the installed ROCm's
        version (``detect``'s own run); where not, ``amd-smi`` runs only for a ROCm version the
        installed ROCm does not state, and ``rocminfo`` not at all."""
        ...

    def amdgpu_version(self) -> VersionReading:
        """The amdgpu kernel driver's version, or why it is not known."""
        ...

    def rocm_tools(self, *, gfx: bool, rocm: bool) -> RocmToolsReport:
        """What ``rocminfo`` and ``amd-smi`` say where installed, each run within its time
        limit, for what is asked: ``gfx``, each GPU's architecture; ``rocm``, the ROCm version.
        Asked only where the KFD topology has AMD GPUs."""
        ...

    def driver_table(self) -> Catalog:
        """The catalog's driver table (CUDA per driver and back)."""
        ...


@model
class Detected:
    """What a kind found on the host or took from the flags: the target's device, the GPUs the
    host listed (shown by ``detect``; none but for NVIDIA's), and the amdgpu kernel driver's
    version where AMD GPUs were read from the host (None: not read)."""

    device: Device
    gpus: tuple[Gpu, ...] = ()
    amdgpu_driver: VersionReading | None = None


GPU_DETECTION_SKIPPED = "a TPU target: NVIDIA GPU detection skipped"
"""The note of a TPU target, whose NVIDIA GPUs are not looked for (AMD GPUs given by
``--rocm``/``--gfx`` say so in their own note, naming what was given)."""


NOT_ASKED = 'a CPU build on a GPU target (ask for it with variant = "cpu")'
"""A build the resolver passes over without listing it among the reasons: one the profile did
not ask for where the kind prefers its own builds. Compared by identity."""


@model
class DeviceChecks:
    """What the embedded helper's preflight checks of the host's device before anything is
    installed (its ``--driver``, ``--rocm-gfx`` and ``--rocm`` options), as a kind declares it
    for the builds chosen: ``driver``, the NVIDIA driver the builds need (None: none checked);
    ``gfx``, the AMD GPU architectures every ROCm build chosen has kernels for (None: no ROCm
    build, none checked) and ``rocm``, the newest ROCm they were built with (the host's, where
    readable, must reach it). A kind with nothing to check (the TPU, the CPU) declares
    :data:`NO_DEVICE_CHECKS`."""

    driver: str | None = None
    gfx: tuple[str, ...] | None = None
    rocm: str | None = None

    @property
    def says_why(self) -> bool:
        """Whether the helper's refusal of the device (its exit 4) prints its reason, as the AMD
        GPUs' checks do (a driver too old is said on stderr: the script names it)."""
        return self.gfx is not None


NO_DEVICE_CHECKS = DeviceChecks()
"""The preflight of a device that checks nothing of it."""


class DeviceSmoke(str, enum.Enum):
    """The device a framework's smoke test runs on and is judged for (``verify``'s
    ``smoke:<framework>``): the CPU alone, a GPU through CUDA, AMD GPUs through ROCm's HIP (the
    build must be a ROCm one), or TPUs through the framework's TPU runtime (for a framework
    installed with it; the others' run on the CPU)."""

    CPU = "cpu"
    GPU = "gpu"
    HIP = "hip"
    TPU = "tpu"


@model
class VerifyChecks:
    """What ``verify`` checks of a kind's device, declared as data by the kind;
    ``colabenv.verification`` maps each value to the children it starts and the checks it makes
    (a kind sits a layer below it). ``smoke``: the device the frameworks' smoke tests run on
    (:class:`DeviceSmoke`; its memory is the ``vram`` check's: a TPU's HBM, else NVML's GPUs);
    ``gpus``: NVML reads the GPUs: the VRAM probe, who holds each GPU, the CUDA packages' smoke
    tests, and a GPU the frameworks cannot see is a FAIL; ``cuda``: the ``cuda:<framework>``
    checks judge the builds against the driver and the GPUs, and ``components`` runs. ``verify
    --cpu`` checks none of it."""

    smoke: DeviceSmoke
    gpus: bool = False
    cuda: bool = False


class BuiltFor(Protocol):
    """A build chosen (a framework's or a CUDA package's), as the script's preflight sees it:
    the ROCm a ROCm build was built with and its AMD GPU architectures (None and none for any
    other build)."""

    @property
    def rocm(self) -> Version | None: ...

    @property
    def gfx(self) -> tuple[str, ...]: ...


class AcceleratorKind(Protocol):
    """One kind of accelerator: what the host has of it, the builds it offers and takes, and
    what it says of them."""

    @property
    def kind(self) -> Accelerator:
        """The kind's name in the target, the lock header and ``resolve --json``."""
        ...

    @property
    def traits(self) -> Traits:
        """What the kind can do, for the commands that ask (:class:`Traits`)."""
        ...

    def detected(self, wanted: TargetOverrides, host: HostReadings, notes: list[str]) -> Detected | None:
        """The device of the kind the flags (``wanted``) give or the host has, with what was seen
        appended to ``notes``; None where the target is not of the kind. ``detect`` asks the
        kinds in the registry's order and takes the first answer; flags win over the host."""
        ...

    def offered_variants(self, release: Release, target: Target, catalog: Catalog) -> tuple[Variant, ...]:
        """The builds of ``release`` to weigh on ``target``: its own, and any the kind adds."""
        ...

    def rejection(
        self, variant: Variant, request: FrameworkRequest, target: Target, catalog: Catalog
    ) -> str | None:
        """Why ``variant`` (its Python already checked) cannot run on ``target``: None when it
        can, :data:`NOT_ASKED` when it is passed over unlisted."""
        ...

    def fully_supported(self, variant: Variant, target: Target, catalog: Catalog) -> bool:
        """The target runs ``variant`` fully, not by a compatibility that may fail at run time."""
        ...

    def installed_variant(self, target: Target, variants: Sequence[Variant]) -> Variant | None:
        """The kind's own build among ``variants`` that the target has installed whole, where
        the installed distribution alone cannot say (the TPU build's runtime); else None."""
        ...

    def why(self, variant: Variant, fully_supported: bool, target: Target, catalog: Catalog) -> str:
        """Why ``variant`` runs on ``target``: the reason's part after the release's."""
        ...

    def warnings(
        self, chosen: Sequence[ChosenBuild], profile: Profile, target: Target, catalog: Catalog
    ) -> list[str]:
        """What to warn of the target for the builds chosen, before any build's own warnings."""
        ...

    def build_warnings(self, build: ChosenBuild, target: Target, catalog: Catalog) -> list[str]:
        """What to warn of one build chosen for ``target``."""
        ...

    def package_warnings(self, label: str, build: PackageBuild, target: Target) -> list[str]:
        """What to warn of a CUDA package's ``build`` chosen for ``target`` (``label`` names it:
        "cupy (cupy-rocm-7-0) 14.2.0")."""
        ...

    def requirements(self, variant: Variant) -> tuple[str, ...]:
        """What installing ``variant`` adds beside the framework's own distributions."""
        ...

    def find_links(self, variant: Variant) -> str | None:
        """A find-links page the installer needs for ``variant``; None for none."""
        ...

    def describe(self, target: Target) -> str:
        """The device as the script's header and ``resolve`` say it ("driver 550.54.15, CUDA
        12.4, compute capability 7.5", "TPU v5e (v5litepod-8, 8 chips)", "no GPU")."""
        ...

    def shown(self, target: Target) -> str:
        """The device as ``detect``'s ``accelerator:`` line says it."""
        ...

    def installed_build(self, target: Target, framework: Framework) -> str | None:
        """How ``detect`` names ``framework``'s installed build where the kind's own runtime says
        more than the wheel (``TPU (libtpu 0.0.17)``); None: the wheel's build says it."""
        ...

    def lacks(self, target: Target) -> str:
        """What the target has instead of a GPU the CUDA packages have builds for, for such a
        package left out ("no GPU", "a TPU (TPU v5e ...)"); empty where the kind takes their
        builds (NVIDIA's CUDA builds, AMD's ROCm builds: :meth:`package_rejection`)."""
        ...

    def package_rejection(self, build: PackageBuild, target: Target, catalog: Catalog) -> str | None:
        """Why a CUDA package's ``build`` (its Python, platform and free-threaded wheels already
        checked) cannot run on ``target``: None when it can, :data:`NOT_ASKED` for a build of
        another kind (a ROCm build on NVIDIA GPUs), passed over unlisted. Asked only of a kind
        that :meth:`lacks` nothing."""
        ...

    def no_package_build(self, name: str, target: Target) -> str:
        """Why the package ``name`` has no build for the target where every build of it is of
        another kind (all :data:`NOT_ASKED`): exit 3, never left out."""
        ...

    def package_said(self, build: PackageBuild, target: Target, catalog: Catalog) -> tuple[str, ...]:
        """What the reason of a CUDA package's chosen ``build`` says of the device: the build's
        toolkit against the host's (``cu128: CUDA 12.8 (driver 550.54.15 >= 525.60.13)``), and
        the GPUs it has kernels for where the target names them."""
        ...

    def refused_requirements(
        self, requirements: Sequence[Requirement], target: Target, catalog: Catalog
    ) -> str | None:
        """Why the target cannot take a profile's ``[packages]`` ``requirements`` (exit 3): those
        naming a distribution the catalog knows as a CUDA package's build (``cupy-cuda12x``)
        where the kind has no build of the package, each named; None where it takes them."""
        ...

    # A lock header's device fields, ``recorded`` of this kind (RecordedDevice.kind)

    def recorded_problem(self, recorded: RecordedDevice) -> str | None:
        """What is wrong with ``recorded`` beyond each value's shape, as ``key: why`` (another
        kind's fields beside the kind's own, its own fields' parts); None."""
        ...

    def contradiction(self, written: Accelerator) -> str | None:
        """What a header's ``target-accelerator`` naming ``written`` contradicts in a device
        of this kind ("the target is a TPU host"); None where it names this kind."""
        ...

    def difference(self, recorded: RecordedDevice, now: RecordedDevice) -> str | None:
        """What differs from a lock's device ``recorded`` to the device ``now`` that the driver,
        CUDA and compute-capability fields do not say (another kind, a TPU's generation); None."""
        ...

    def recorded_table(self, recorded: RecordedDevice) -> dict[str, object]:
        """The kind's own entries of a PEP 751 lock's target table, beside the driver, CUDA and
        compute capabilities every lock writes (a TPU's ``tpu`` table); empty for none."""
        ...

    # What the script's preflight and ``verify`` check of the device

    def device_checks(self, choices: Sequence[BuiltFor], required_driver: str | None) -> DeviceChecks:
        """What the script's preflight checks of a device of the kind before it installs the
        builds ``choices``, the frameworks' and the CUDA packages' (:class:`DeviceChecks`);
        ``required_driver`` is the NVIDIA driver floor the resolution or the lock records."""
        ...

    @property
    def verify_checks(self) -> VerifyChecks:
        """What ``verify`` checks of a device of the kind (:class:`VerifyChecks`)."""
        ...


class OwnBuilds:
    """What a kind that adds nothing to a release's own builds answers: the release's builds,
    no installed build of its own, no warning of a build, and beside it what the build's own
    ``requires`` and ``find_links`` name (jax's ROCm plugin and PJRT wheels, AMD's page), and no
    ``[packages]`` requirement refused. A kind subclasses it and defines the rest of
    :class:`AcceleratorKind`."""

    def offered_variants(self, release: Release, target: Target, catalog: Catalog) -> tuple[Variant, ...]:
        return release.variants

    def installed_variant(self, target: Target, variants: Sequence[Variant]) -> Variant | None:
        return None

    def build_warnings(self, build: ChosenBuild, target: Target, catalog: Catalog) -> list[str]:
        return []

    def package_warnings(self, label: str, build: PackageBuild, target: Target) -> list[str]:
        return []

    def requirements(self, variant: Variant) -> tuple[str, ...]:
        return variant.requires

    def find_links(self, variant: Variant) -> str | None:
        return variant.find_links

    def installed_build(self, target: Target, framework: Framework) -> str | None:
        return None

    def refused_requirements(
        self, requirements: Sequence[Requirement], target: Target, catalog: Catalog
    ) -> str | None:
        return None

    def package_rejection(self, build: PackageBuild, target: Target, catalog: Catalog) -> str | None:
        return "needs an NVIDIA GPU; the target has none"

    def no_package_build(self, name: str, target: Target) -> str:
        return f"{name} has no build in the catalog for the target's device"

    def package_said(self, build: PackageBuild, target: Target, catalog: Catalog) -> tuple[str, ...]:
        return (build.name,)


class DriverFields:
    """What a kind answers of a lock header's device fields when they are only the driver, CUDA
    and compute capabilities every header writes (NVIDIA, the CPU): a TPU beside them refused;
    a header naming the TPU, or the kind the driver fields do not make (:attr:`contradicted`),
    contradicted; a change of kind said in words only to a TPU or AMD GPUs, which the driver
    fields cannot say; no table of its own. A kind subclasses it beside :class:`OwnBuilds`."""

    kind: Accelerator
    contradicted: str
    """What a header naming the other kind of driver fields contradicts ("the target has an
    NVIDIA driver")."""

    def recorded_problem(self, recorded: RecordedDevice) -> str | None:
        if recorded.gfx:
            return f"gfx: {AMD_BESIDE_A_DRIVER}"
        if recorded.rocm is not None:
            return f"rocm: {AMD_BESIDE_A_DRIVER}"
        return f"tpu: {TPU_BESIDE_A_DRIVER}" if recorded.tpu is not None else None

    def contradiction(self, written: Accelerator) -> str | None:
        if written is self.kind:
            return None
        return "the target is not a TPU host" if written is Accelerator.TPU else self.contradicted

    def difference(self, recorded: RecordedDevice, now: RecordedDevice) -> str | None:
        other = now.tpu is not None or now.rocm is not None or bool(now.gfx)
        return kind_changed(recorded, now) if other else None

    def recorded_table(self, recorded: RecordedDevice) -> dict[str, object]:
        return {}
