"""A validated profile: what it asks of each framework and its ``[install]``, ``[verify]`` and
``[reproducibility]`` tables."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from colabenv.models.base import Framework, Installer
from colabenv.models.frozen import model
from colabenv.models.job import JobSettings
from colabenv.models.packages import PackageRequest

if TYPE_CHECKING:
    from packaging.requirements import Requirement  # 20 ms of grammar: imported where pins are parsed
    from packaging.specifiers import SpecifierSet  # annotations only: see colabenv.models.catalog
    from packaging.utils import NormalizedName


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
    # wheelhouse (issue 26): a persistent folder of wheels on the host (absolute path)
    wheelhouse: str | None = None


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
class TargetSpec:
    """One entry of a profile's ``[targets]``: a named target, its keys the target flags'
    values as written (checked for their shape when read; ``resolve.targets`` makes them
    overrides). ``compute_capability``: each capability once, as written."""

    name: str
    driver: str | None = None
    cuda: str | None = None
    compute_capability: tuple[str, ...] = ()
    python: str | None = None
    cpu: bool = False
    tpu: str | None = None
    runtime: str | None = None
    platform: str | None = None
    rocm: str | None = None
    gfx: tuple[str, ...] = ()


@model
class WatchSettings:
    """The profile's ``[watch]`` table: whether ``bootstrap()`` and ``verify()`` start the
    recorder (``colabenv watch``), its interval and how long it runs at most."""

    enabled: bool = False
    interval_s: float = 2.0
    max_hours: float = 24.0


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
    check_index: bool = True
    """``[catalog] check_index``: confirm choices against the indexes they come from."""
    targets: tuple[TargetSpec, ...] = ()
    """``[targets]``: the named targets ``lock --all-targets`` and ``--target NAME`` make
    sections for, in the order the merged document lists them."""

    def target(self, name: str) -> TargetSpec | None:
        for spec in self.targets:
            if spec.name == name:
                return spec
        return None

    watch: WatchSettings = field(default_factory=WatchSettings)
    cuda_packages: tuple[PackageRequest, ...] = ()
    job: JobSettings = field(default_factory=JobSettings)
    """``[job]``: what a Slurm or Kubernetes job asks of the cluster."""
    """The CUDA packages ``[frameworks]`` names beside the frameworks (``xformers = "*"``)."""

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
