"""The protocol every accelerator kind meets: what the resolver asks of a kind about a target
and a framework build. A kind answers for targets of its own kind only (the registry hands a
target to its kind); nothing outside this package asks which kind a target is."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from colabenv.models import (
    Accelerator,
    Catalog,
    CatalogParts,
    Framework,
    FrameworkRequest,
    Profile,
    Release,
    Target,
    Variant,
)
from colabenv.models.frozen import model


@model
class ChosenBuild:
    """A build the resolver chose for a target: ``label`` names it ("torch 2.9.0"),
    ``fully_supported`` says whether the target runs it fully (:meth:`AcceleratorKind.fully_supported`)."""

    label: str
    release: Release
    variant: Variant
    fully_supported: bool


@model
class Traits:
    """What the rest of colabenv asks of a kind, as facts (a table, the way uv's torch backend
    keeps hardware facts): each names a capability, never a kind, so a new kind says which it
    has and the commands follow.

    ``gpu``: frameworks see it as a GPU and NVML reads it: verify's GPU smoke test, the CUDA
    packages' smoke tests, the VRAM probe and who holds each GPU, ``verify.require_gpu`` met,
    ``init``'s ``require_gpu``.
    ``cuda``: it runs CUDA builds: the NVIDIA component facts and wheels, the CUDA packages,
    verify's ``cuda:*`` and ``components`` checks.
    ``tpu_runtime``: frameworks run on it through their TPU runtime (libtpu, torch_xla): the
    catalog's TPU builds, verify's TPU smoke test and its HBM check."""

    gpu: bool
    cuda: bool
    tpu_runtime: bool

    @property
    def catalog_parts(self) -> CatalogParts:
        """The parts of the shipped catalog a target of the kind can use."""
        return CatalogParts(components=self.cuda, tpu=self.tpu_runtime)


NOT_ASKED = 'a CPU build on a GPU target (ask for it with variant = "cpu")'
"""A build the resolver passes over without listing it among the reasons: one the profile did
not ask for where the kind prefers its own builds. Compared by identity."""


class AcceleratorKind(Protocol):
    """One kind of accelerator: the builds it offers and takes, and what it says of them."""

    @property
    def kind(self) -> Accelerator:
        """The kind's name in the target, the lock header and ``resolve --json``."""
        ...

    @property
    def traits(self) -> Traits:
        """What the kind can do, for the commands that ask (:class:`Traits`)."""
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
        """What the target has instead of an NVIDIA GPU, for a CUDA package left out ("no GPU",
        "a TPU (TPU v5e ...)"); empty where it has one."""
        ...


class OwnBuilds:
    """What a kind that adds nothing to a release's own builds answers: the release's builds,
    no installed build of its own, no warning of a build, nothing to install beside it. A kind
    subclasses it and defines the rest of :class:`AcceleratorKind`."""

    def offered_variants(self, release: Release, target: Target, catalog: Catalog) -> tuple[Variant, ...]:
        return release.variants

    def installed_variant(self, target: Target, variants: Sequence[Variant]) -> Variant | None:
        return None

    def build_warnings(self, build: ChosenBuild, target: Target, catalog: Catalog) -> list[str]:
        return []

    def requirements(self, variant: Variant) -> tuple[str, ...]:
        return ()

    def find_links(self, variant: Variant) -> str | None:
        return None

    def installed_build(self, target: Target, framework: Framework) -> str | None:
        return None
