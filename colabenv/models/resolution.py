"""The resolver's answer: what it chose for each framework and why, and the frameworks a lock
records."""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

from packaging.version import Version

from colabenv.models.base import Arch, Framework
from colabenv.models.frozen import model
from colabenv.models.packages import PackageChoice, choice_json
from colabenv.models.profile import InstallSettings

if TYPE_CHECKING:
    from packaging.requirements import Requirement  # 20 ms of grammar: imported where pins are parsed
    from packaging.utils import NormalizedName  # annotations only: see colabenv.models.catalog
from colabenv.models.target import Target


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
    """A find-links page the requirements need (an old release's TPU runtime), else None."""
    catalog_file: str | None = None
    """The catalog overlay file the choice came from (None: the shipped catalog)."""
    rocm: Version | None = None
    """A ROCm build's ROCm (``6.4``), which the host's must reach; None for any other build."""
    gfx: tuple[str, ...] = ()
    """A ROCm build's AMD GPU architectures: the script's preflight refuses a GPU of another."""

    def to_json(self) -> dict[str, object]:
        return choice_json(self)


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
    cuda_packages: tuple[PackageChoice, ...] = ()
    """The CUDA packages chosen with the frameworks (installed after them, constrained by them)."""

    @property
    def constraint_lines(self) -> tuple[str, ...]:
        return tuple(c.requirement for c in self.constraints)

    @property
    def requirements(self) -> tuple[str, ...]:
        reqs: list[str] = []
        for choice in self.choices:
            reqs.extend(choice.requirements)
        for package in self.cuda_packages:
            reqs.extend(package.requirements)
        reqs.extend(self.packages)
        return tuple(reqs)

    def choice(self, framework: Framework) -> FrameworkChoice | None:
        for choice in self.choices:
            if choice.framework is framework:
                return choice
        return None

    @property
    def notes(self) -> tuple[str, ...]:
        """What the resolution says of its target beside the warnings: why no installed version
        was read (the target is another platform or Python than this interpreter's)."""
        note = self.target.installed_note
        return (note,) if note is not None else ()

    def to_json(self) -> dict[str, object]:
        return {
            "target": self.target.to_json(),
            "frameworks": {
                **{c.framework.value: c.to_json() for c in self.choices},
                **{str(p.name): p.to_json() for p in self.cuda_packages},
            },
            "requirements": list(self.requirements),
            "constraints": [{"requirement": c.requirement, "reason": c.reason} for c in self.constraints],
            "apt": list(self.apt),
            "warnings": list(self.warnings),
            **({"notes": list(self.notes)} if self.notes else {}),
        }


@model
class LockedCudaPackage:
    """A CUDA package of ``[frameworks]`` as a lock records it: its name (``cupy``), the
    distribution chosen (``cupy-cuda12x``), the release, build (``cuda12``) and the index that
    build is served by (None: the default index)."""

    name: NormalizedName
    distribution: NormalizedName
    version: str
    variant: str
    index_url: str | None


@model
class LockedFramework:
    """A framework as a lock records it: the release and variant its pins came from, and the
    index that variant is served by (None: the default index)."""

    framework: Framework
    version: str
    variant: str
    index_url: str | None
