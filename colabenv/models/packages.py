"""The CUDA packages around the frameworks (xformers, flash-attn, bitsandbytes, CuPy, cuDF ...):
what a profile asks of one, and what the resolver chose for it (their catalog facts, from
``cuda_packages.toml``, are in :mod:`colabenv.models.catalog`).

A package's builds are tied to one CUDA major (``cupy-cuda12x``), often to one torch release
(xformers' ``Requires-Dist: torch==2.10.0``), and carry kernels for some GPUs only; the resolver
chooses them jointly with the frameworks (docs/cuda-packages.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from packaging.version import Version

from colabenv.models.base import Arch
from colabenv.models.frozen import model

if TYPE_CHECKING:  # annotations only: see colabenv.models.catalog
    from packaging.specifiers import SpecifierSet
    from packaging.utils import NormalizedName


class Chosen(Protocol):
    """What a framework's choice and a CUDA package's both say in ``resolve --json``."""

    @property
    def release(self) -> Version: ...
    @property
    def variant(self) -> str: ...
    @property
    def index_url(self) -> str | None: ...
    @property
    def find_links(self) -> str | None: ...
    @property
    def requirements(self) -> tuple[str, ...]: ...
    @property
    def installed(self) -> bool: ...
    @property
    def reason(self) -> str: ...
    @property
    def catalog_file(self) -> str | None: ...


def choice_json(choice: Chosen) -> dict[str, object]:
    """A choice as ``resolve --json`` shows it under ``frameworks`` (docs/formats.md)."""
    shown: dict[str, object] = {
        "version": str(choice.release),
        "variant": choice.variant,
        "index_url": choice.index_url,
        "requirements": list(choice.requirements),
        "installed": choice.installed,
        "reason": choice.reason,
    }
    if choice.find_links is not None:
        shown["find_links"] = choice.find_links
    if choice.catalog_file is not None:
        shown["catalog_file"] = choice.catalog_file
    return shown


@model
class PackageRequest:
    """What a profile's ``[frameworks]`` asks of a CUDA package: ``key`` as written (``cupy``),
    ``name`` normalized, a version range and optionally a build by name (``cu128``)."""

    name: NormalizedName
    key: str
    specifier: SpecifierSet
    variant: str | None = None


@model
class PackageChoice:
    """What the resolver chose for one CUDA package: the distribution, release and build, the
    requirements to install (``xformers==0.0.34+cu128``) and why."""

    name: NormalizedName
    distribution: NormalizedName
    release: Version
    variant: str
    cuda: Version | None
    index_url: str | None
    find_links: str | None
    requirements: tuple[str, ...]
    reason: str
    archs: tuple[Arch, ...] = ()
    installed: bool = False
    catalog_file: str | None = None
    rocm: Version | None = None
    """A ROCm build's ROCm (``7.0`` for ``cupy-rocm-7-0``); None for a CUDA build."""
    gfx: tuple[str, ...] = ()
    """A ROCm build's AMD GPU architectures: the script's preflight refuses a GPU of another."""

    def to_json(self) -> dict[str, object]:
        return {"distribution": str(self.distribution), **choice_json(self)}
