"""The frozen values that flow between layers once parsing is done, by the layer that makes them:
:mod:`~colabenv.models.base` (frameworks, accelerators, compute capabilities, arch lists),
:mod:`~colabenv.models.target` (the host as the resolver sees it), :mod:`~colabenv.models.profile`,
:mod:`~colabenv.models.catalog`, :mod:`~colabenv.models.runtimes` (Colab runtime versions),
:mod:`~colabenv.models.watch` (the recorder's samples), :mod:`~colabenv.models.doctor` (findings)
and :mod:`~colabenv.models.resolution`; every name is taken
from here. :mod:`~colabenv.models.deaths`: the kernel log's OOM lines, session limits, remedies.

Nothing here reads files or the host. Versions are :class:`packaging.version.Version`,
specifiers :class:`packaging.specifiers.SpecifierSet`; mappings are tuples of pairs so that
every value is hashable and compares by content.
"""

from __future__ import annotations

from colabenv.models.base import (
    MAX_COMPUTE_MAJOR,
    Accelerator,
    Arch,
    ComputeCapability,
    Framework,
    Installer,
    RuntimeKind,
    archs_cover,
    format_driver,
    parse_cuda,
    parse_driver,
)
from colabenv.models.catalog import (
    Catalog,
    Companion,
    Component,
    ComponentFacts,
    ComponentRange,
    CudaMajorLine,
    CudaToolkit,
    Release,
    Source,
    ToolkitMeta,
    TpuBuild,
    TpuFacts,
    TpuGeneration,
    Variant,
    parsed_pin,
)
from colabenv.models.deaths import DeathFacts, KernelEvent, KernelLog, Remedy, SessionLimit
from colabenv.models.doctor import Evidence, Finding
from colabenv.models.profile import (
    FrameworkRequest,
    InstallSettings,
    IoCheck,
    Profile,
    Reproducibility,
    VerifySettings,
)
from colabenv.models.resolution import ComponentConstraint, FrameworkChoice, LockedFramework, Resolution
from colabenv.models.runtimes import ColabRuntime, RuntimeFacts, RuntimeImage
from colabenv.models.target import (
    MAX_TPU_CHIPS,
    TPU_NAME_PATTERN,
    TPU_TYPE_PATTERN,
    Fingerprint,
    Gpu,
    InstalledDist,
    InstalledSet,
    Target,
    TargetOverrides,
    TpuTarget,
)
from colabenv.models.watch import (
    CgroupMemory,
    FilesystemUse,
    GpuProcess,
    GpuSample,
    HostMemory,
    ProcessSample,
    Sample,
)

__all__ = [
    "MAX_COMPUTE_MAJOR",
    "MAX_TPU_CHIPS",
    "TPU_NAME_PATTERN",
    "TPU_TYPE_PATTERN",
    "Accelerator",
    "Arch",
    "Catalog",
    "CgroupMemory",
    "ColabRuntime",
    "Companion",
    "Component",
    "ComponentConstraint",
    "ComponentFacts",
    "ComponentRange",
    "ComputeCapability",
    "CudaMajorLine",
    "CudaToolkit",
    "DeathFacts",
    "Evidence",
    "FilesystemUse",
    "Finding",
    "Fingerprint",
    "Framework",
    "FrameworkChoice",
    "FrameworkRequest",
    "Gpu",
    "GpuProcess",
    "GpuSample",
    "HostMemory",
    "InstallSettings",
    "InstalledDist",
    "InstalledSet",
    "Installer",
    "IoCheck",
    "KernelEvent",
    "KernelLog",
    "LockedFramework",
    "ProcessSample",
    "Profile",
    "Release",
    "Remedy",
    "Reproducibility",
    "Resolution",
    "RuntimeFacts",
    "RuntimeImage",
    "RuntimeKind",
    "Sample",
    "SessionLimit",
    "Source",
    "Target",
    "TargetOverrides",
    "ToolkitMeta",
    "TpuBuild",
    "TpuFacts",
    "TpuGeneration",
    "TpuTarget",
    "Variant",
    "VerifySettings",
    "archs_cover",
    "format_driver",
    "parse_cuda",
    "parse_driver",
    "parsed_pin",
]
