"""The curated catalog: the driver table, framework releases and their builds, the NVIDIA
component facts, the TPU facts (``tpu.toml``) and the CUDA packages around the frameworks
(``cuda_packages.toml``).

``SpecifierSet`` and ``NormalizedName`` are named in annotations only, and ``canonicalize_name``
imported where a name is looked up: packaging.specifiers and packaging.utils (which imports
packaging.tags, with logging, subprocess and sysconfig) are not loaded with the models, so the
recorder, which takes its samples' models and never a specifier, goes without them."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import field
from typing import TYPE_CHECKING

from packaging.version import Version

from colabenv.models.base import Arch, ComputeCapability, Framework, archs_cover
from colabenv.models.frozen import model

if TYPE_CHECKING:
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    from packaging.utils import NormalizedName


@functools.lru_cache(maxsize=1024)
def parsed_pin(text: str) -> Requirement:
    """A catalog pin parsed once per process: the resolver asks of every build of every
    release, and many builds share their NVIDIA pins. Not to be changed by the caller.
    (packaging.requirements is imported here, not with the models: its grammar costs about
    20 ms, and commands such as ``doctor`` and ``watch`` read models without parsing a pin.)"""
    from packaging.requirements import Requirement

    return Requirement(text)


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


CATALOG_PLATFORM = "linux_x86_64"
"""The platform every catalog entry is for unless it names its ``platforms``."""


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
    rocm: Version | None = None
    """The ROCm a ROCm build was built with (``6.4`` for torch's ``rocm6.4``); None for others."""
    gfx: tuple[str, ...] = ()
    """A ROCm build's AMD GPU architectures (``PYTORCH_ROCM_ARCH``: ``gfx942``, ``gfx90a`` ...)."""
    platforms: tuple[str, ...] = (CATALOG_PLATFORM,)
    """The platforms the build has wheels for (``platforms``; the catalog's own by default)."""
    free_threaded: SpecifierSet | None = None
    """The Pythons it has free-threaded wheels for (``cp314t``); None: none known."""
    free_threaded_unconfirmed: str | None = None
    """Why ``free_threaded`` is not read from the files (a release's validation matrix lists
    what upstream tested): the build is then unconfirmed for a free-threaded Python alone."""
    requires: tuple[str, ...] = ()
    """What installing the build adds beside the framework and its companions (``requires``:
    jax's ROCm plugin and PJRT wheels, pinned), where no extra of the framework pulls them in."""
    find_links: str | None = None
    """The find-links page those come from where the package index lacks them (AMD's
    ``repo.radeon.com`` ``rocm-rel-7.1`` page); None: the default index."""

    @property
    def is_cpu(self) -> bool:
        return self.cuda is None and self.rocm is None

    @functools.cached_property
    def pins(self) -> tuple[Requirement, ...]:
        """Parsed on first use: most variants of a large catalog are never asked."""
        return tuple(parsed_pin(text) for text in self.pin_texts)


@model
class Companion:
    """A package released in lockstep with a framework (torchvision, jaxlib, jax plugins).

    ``python``: the Python versions that release of the companion has wheels for, where that
    is narrower than its framework's (its Requires-Python may exclude a patch release:
    ``>=3.11,!=3.14.1``); None: wherever the framework has them."""

    name: NormalizedName
    version: Version
    follows_variant: bool
    python: SpecifierSet | None = None


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
    platform_defaults: tuple[tuple[str, str], ...] = ()
    """``(platform, variant)``: the build the default index serves as the plain wheel on a
    platform other than the catalog's (torch's ``linux_aarch64`` wheel is ``cpu`` for 2.7 to
    2.11, ``cu130`` from 2.12); ``default_variant`` is the catalog platform's."""

    def variant(self, name: str) -> Variant | None:
        for variant in self.variants:
            if variant.name == name:
                return variant
        return None

    def on_platform(self, platform: str) -> Release:
        """The release as a host of ``platform`` sees it: a build listed for that platform
        stands in for the build of the same name listed for others (torch's ``cu130`` wheel for
        linux_aarch64 has its own arch list), and the default build is the platform's (None
        where the catalog does not say which it is)."""
        own = {v.name for v in self.variants if platform in v.platforms}
        variants = tuple(v for v in self.variants if platform in v.platforms or v.name not in own)
        default = dict(self.platform_defaults).get(platform)
        if default is None and platform == CATALOG_PLATFORM:
            default = self.default_variant
        if variants == self.variants and default == self.default_variant:
            return self
        return dataclasses.replace(self, variants=variants, default_variant=default)

    def companion(self, name: str) -> Companion | None:
        from packaging.utils import canonicalize_name

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
    the releases whose wheels were read. ``platform_archs``: a platform whose wheels of these
    releases carry another list (NVIDIA's ``linux_aarch64`` wheels), with that list; ``archs``
    holds for the catalog's platform and every platform not named there."""

    lower: Version | None
    upper: Version | None
    archs: tuple[Arch, ...]
    checked: tuple[Version, ...]
    source: Source
    platform_archs: tuple[tuple[str, tuple[Arch, ...]], ...] = ()

    def contains(self, version: Version) -> bool:
        return (self.lower is None or version >= self.lower) and (self.upper is None or version < self.upper)

    def covers(self, gpu: ComputeCapability) -> bool:
        return archs_cover(self.archs, gpu)

    def on(self, platform: str) -> ComponentRange:
        """The range as a host of ``platform`` sees it: ``archs`` that platform's wheels carry."""
        own = dict(self.platform_archs).get(platform)
        return self if own is None or own == self.archs else dataclasses.replace(self, archs=own)

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

    def on(self, platform: str) -> Component:
        """The component as a host of ``platform`` sees it (each range's arch list there)."""
        ranges = tuple(item.on(platform) for item in self.ranges)
        return self if ranges == self.ranges else dataclasses.replace(self, ranges=ranges)


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
                return tuple(parsed_pin(text) for text in texts)
        return ()


@model
class ComponentFacts:
    """``profiles/catalog/components.toml``: what GPU code each NVIDIA component release carries."""

    components: tuple[Component, ...] = ()
    toolkit_metas: tuple[ToolkitMeta, ...] = ()

    @functools.cached_property
    def memo(self) -> dict[object, object]:
        """What :mod:`colabenv.catalog.components` computes from these facts, kept with them: the
        resolver asks about the same GPUs for every build of every release."""
        return {}

    def for_platform(self, platform: str) -> ComponentFacts:
        """The facts as a host of ``platform`` sees them: every range with the arch list that
        platform's wheels carry (these facts themselves where no range records another, as on
        the catalog's platform); made once per platform (kept in ``memo``)."""
        key = ("platform", platform)
        kept = self.memo.get(key)
        if isinstance(kept, ComponentFacts):
            return kept
        components = tuple(component.on(platform) for component in self.components)
        view = self if components == self.components else ComponentFacts(components, self.toolkit_metas)
        self.memo[key] = view
        return view

    def component(self, name: str) -> Component | None:
        from packaging.utils import canonicalize_name

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


# ---------------------------------------------------------------------------------------------
# CUDA packages around the frameworks (cuda_packages.toml)


@model
class PackageBuild:
    """One build of a package release: the distribution it is for its CUDA major
    (``cupy-cuda12x``) or ROCm line (``cupy-rocm-7-0``), the CUDA it was built with (``12.8``; a
    major alone, ``12``, where one wheel serves the whole line) or, for a ROCm build, None with
    its ``rocm`` and ``gfx`` as a framework's ROCm variant has them, the torch its wheel
    requires (None: no torch), where it lives
    (an index, a find-links page; both None: the default index), its local version tag on that
    index (``cu128``), its GPU arch list, the NVIDIA wheels it requires, its Python range where
    narrower than the release's; ``extra``: the extra it is installed with
    (``flash-attn-4[cu13]``)."""

    name: str
    distribution: NormalizedName
    cuda: Version | None
    torch: SpecifierSet | None
    index_url: str | None
    find_links: str | None
    local_tag: str | None
    archs: tuple[Arch, ...]
    requires: tuple[str, ...]
    python: SpecifierSet | None
    source: Source
    unconfirmed: str | None = None
    overlay: str | None = None
    extra: str | None = None
    min_driver: Version | None = None
    """The driver its project documents as its floor where that is above its CUDA major's
    (None: the major's floor, ``drivers.toml``)."""
    free_threaded: SpecifierSet | None = None
    """The Pythons it has free-threaded wheels for, as :attr:`Variant.free_threaded`."""
    free_threaded_unconfirmed: str | None = None
    """Why ``free_threaded`` is not read from the files, as :attr:`Variant.free_threaded_unconfirmed`."""
    platforms: tuple[str, ...] = (CATALOG_PLATFORM,)
    """The platforms it has wheels for, as :attr:`Variant.platforms`."""
    rocm: Version | None = None
    """A ROCm build's ROCm (``7.0`` for ``cupy-rocm-7-0``), as :attr:`Variant.rocm`; None for a
    CUDA build."""
    gfx: tuple[str, ...] = ()
    """A ROCm build's AMD GPU architectures, as :attr:`Variant.gfx`."""

    @property
    def toolkit(self) -> Version:
        """The CUDA or the ROCm it was built with."""
        toolkit = self.cuda if self.cuda is not None else self.rocm
        assert toolkit is not None
        return toolkit

    @property
    def cuda_major(self) -> int | None:
        """Its CUDA major; None for a ROCm build."""
        return self.cuda.major if self.cuda is not None else None

    @functools.cached_property
    def pins(self) -> tuple[Requirement, ...]:
        return tuple(parsed_pin(text) for text in self.requires)


@model
class PackageRelease:
    """One release of a package and its builds, and the other CUDA packages it requires."""

    package: NormalizedName
    version: Version
    python: SpecifierSet
    builds: tuple[PackageBuild, ...]
    source: Source
    overlay: str | None = None
    needs: tuple[tuple[NormalizedName, SpecifierSet], ...] = ()
    """The other CUDA packages its wheels require, by package name (cuML 26.8: ``cudf==26.8.*``)."""

    def build(self, name: str, platform: str = CATALOG_PLATFORM) -> PackageBuild | None:
        """The build ``name`` listed for ``platform`` (the catalog's by default)."""
        for build in self.builds:
            if build.name == name and platform in build.platforms:
                return build
        return None

    def on_platform(self, platform: str) -> PackageRelease:
        """The release as a host of ``platform`` sees it, as :meth:`Release.on_platform`: a
        build listed for that platform stands in for the build of the same name listed for
        others (bitsandbytes' ``cuda128`` library for linux_aarch64 has its own arch list)."""
        own = {b.name for b in self.builds if platform in b.platforms}
        builds = tuple(b for b in self.builds if platform in b.platforms or b.name not in own)
        return self if builds == self.builds else dataclasses.replace(self, builds=builds)

    def listed_for(self, platform: str) -> PackageRelease:
        """The release with only its builds listed for ``platform``."""
        builds = tuple(b for b in self.builds if platform in b.platforms)
        return self if builds == self.builds else dataclasses.replace(self, builds=builds)


@model
class CudaPackage:
    """A package the catalog knows, by the name a profile gives it (``cupy``), with its
    releases newest first."""

    name: NormalizedName
    releases: tuple[PackageRelease, ...]

    def release(self, version: Version) -> PackageRelease | None:
        for release in self.releases:
            if release.version == version:
                return release
        return None


@model
class CatalogParts:
    """The parts of the shipped catalog beside the frameworks' releases that a target can use:
    the NVIDIA component facts (``components.toml``) and the TPU builds (``tpu.toml``). Each
    accelerator kind says which it uses; without a target, all."""

    components: bool = True
    tpu: bool = True


@model
class Catalog:
    """The curated catalog: the driver table, the framework releases that were read, and the
    NVIDIA component facts when a resolution needs them (empty otherwise)."""

    toolkits: tuple[CudaToolkit, ...]
    major_lines: tuple[CudaMajorLine, ...]
    releases: tuple[Release, ...]
    components: ComponentFacts = field(default_factory=ComponentFacts)
    tpu: TpuFacts = field(default_factory=TpuFacts)
    packages: tuple[CudaPackage, ...] = ()
    """The CUDA packages (``cuda_packages.toml``), read when a profile names one."""

    def package(self, name: str) -> CudaPackage | None:
        from packaging.utils import canonicalize_name

        wanted = canonicalize_name(name)
        for package in self.packages:
            if package.name == wanted:
                return package
        return None

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
