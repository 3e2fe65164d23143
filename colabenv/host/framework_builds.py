"""What CUDA each installed framework was built for: one engine for ``detect`` and ``verify``.

The evidence, strongest first: a torch local tag (``+cu126``, ``+cpu``); the framework's own
build record (``torch/version.py``, TensorFlow's ``build_info.py``); the NVIDIA runtime wheel a
torch build pins; jax's CUDA plugin and the runtime wheel beside it; and last the catalog (the
release's default or only CUDA variant). What an :class:`Evidence` cannot give (a freeze file
has versions only, no files) is skipped, so a fingerprint read from a freeze and a live
environment are judged by the same rules. Nothing is imported.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Protocol

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from colabenv._util.pep508 import exact_pin, marker_applies, valid_requirements
from colabenv.models import CATALOG_PLATFORM, Arch, Catalog, Framework, InstalledSet, Release
from colabenv.models.frameworks import FACTS, framework_of
from colabenv.models.frozen import model

_CU_TAG_RE = re.compile(r"^cu(\d{2,3})$")


def cuda_from_local_tag(tag: str | None) -> Version | None:
    """``cu126`` -> ``12.6``; ``cu118`` -> ``11.8``; ``cu130`` -> ``13.0``; else None."""
    match = _CU_TAG_RE.match(tag or "")
    if match is None:
        return None
    digits = match.group(1)
    return Version(f"{digits[:-1]}.{digits[-1]}")


class Evidence(Protocol):
    """What is known of the installed distributions: names and versions always; requirements
    and package files where they can be read."""

    def names(self) -> Iterable[NormalizedName]: ...

    def version(self, name: str) -> str | None: ...

    def requires(self, name: str) -> tuple[str, ...]: ...

    def read_text(self, name: str, relative: str) -> str | None: ...


class VersionsOnly:
    """An :class:`InstalledSet` as evidence: a ``pip freeze`` or a name/version list."""

    def __init__(self, installed: InstalledSet) -> None:
        self._versions = {dist.name: dist.version for dist in installed.dists}

    def names(self) -> Iterable[NormalizedName]:
        return tuple(self._versions)

    def version(self, name: str) -> str | None:
        return self._versions.get(canonicalize_name(name))

    def requires(self, name: str) -> tuple[str, ...]:
        return ()

    def read_text(self, name: str, relative: str) -> str | None:
        return None


LOCAL_TAG = "local tag"


@model
class FrameworkBuild:
    """An installed framework and the CUDA it was built for (None: a CPU build, or unknown when
    ``variant`` is None too), with the evidence that says so."""

    framework: Framework
    name: str
    version: str
    cuda: Version | None
    variant: str | None
    evidence: str

    @property
    def cpu_only(self) -> bool:
        return self.cuda is None

    @property
    def is_cpu_variant(self) -> bool:
        """A build without CUDA by design (``+cpu``, ``tensorflow-cpu``, jax without a plugin),
        not one whose CUDA is merely unknown."""
        return self.cuda is None and self.variant is not None

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"

    @property
    def build(self) -> str:
        """The build in words, as ``detect`` lists it: ``CUDA 12.6``, ``CPU (no CUDA plugin)``."""
        if self.cuda is None and self.variant is None:
            return self.evidence
        base = f"CUDA {self.cuda}" if self.cuda is not None else "CPU"
        return base if self.evidence.startswith(LOCAL_TAG) else f"{base} ({self.evidence})"


_TORCH_VERSION_CUDA_RE = re.compile(r"^cuda\s*(?::[^=]*)?=\s*['\"](\d+\.\d+)", re.MULTILINE)
_TF_BUILD_CUDA_RE = re.compile(r"['\"]cuda_version['\"]\s*,\s*['\"](\d+\.\d+)")
_TF_CUDA_BUILD_RE = re.compile(r"['\"]is_cuda_build['\"]\s*,\s*(True|False)")
_RUNTIME_RE = re.compile(r"^nvidia-cuda-runtime(?:-cu(\d+))?$")
_JAX_PLUGIN_RE = re.compile(r"jax-cuda(\d+)-(?:plugin|pjrt)")


def as_evidence(installed: InstalledSet | Evidence) -> Evidence:
    return VersionsOnly(installed) if isinstance(installed, InstalledSet) else installed


def framework_builds(
    installed: InstalledSet | Evidence, catalog: Catalog | None, *, platform: str = CATALOG_PLATFORM
) -> tuple[FrameworkBuild, ...]:
    """The build of every installed framework distribution, by distribution name, as a host of
    ``platform`` sees the catalog (:meth:`Release.on_platform`)."""
    evidence = as_evidence(installed)
    found = (framework_build(f, evidence, catalog, platform=platform) for f in _present(evidence))
    return tuple(sorted((b for b in found if b is not None), key=lambda b: b.name))


def _present(evidence: Evidence) -> list[Framework]:
    frameworks = {framework_of(name) for name in evidence.names()}
    return [f for f in Framework if f in frameworks]


def framework_build(
    framework: Framework,
    installed: InstalledSet | Evidence,
    catalog: Catalog | None,
    *,
    platform: str = CATALOG_PLATFORM,
) -> FrameworkBuild | None:
    """The build of ``framework`` as installed, None when none of its distributions is; the
    catalog's builds are those of ``platform`` (torch's linux_aarch64 wheel is its own build)."""
    evidence = as_evidence(installed)
    name = next((n for n in FACTS[framework].dists if evidence.version(n)), None)
    version = evidence.version(name) if name is not None else None
    if name is None or version is None:
        return None
    if framework is Framework.TORCH:
        return _torch_build(name, version, evidence, catalog, platform)
    if framework is Framework.JAX:
        return _jax_build(name, version, evidence, catalog, platform)
    return _tensorflow_build(name, version, evidence, catalog, platform)


def _major_minor(text: str) -> Version | None:
    try:
        version = Version(text)
    except InvalidVersion:
        return None
    release = (*version.release, 0)
    return Version(f"{release[0]}.{release[1]}")


def _public(version: str) -> Version | None:
    try:
        return Version(Version(version).public)
    except InvalidVersion:
        return None


def _cuda_from_requires(requires: Iterable[str]) -> Version | None:
    for req in valid_requirements(requires):
        name = canonicalize_name(req.name)
        pin = exact_pin(req)
        if pin is None or not marker_applies(req, ()):
            continue
        if _RUNTIME_RE.match(name) or name == "cuda-toolkit":
            return _major_minor(pin.split("+")[0])
    return None


def _release(catalog: Catalog, framework: Framework, version: str, platform: str) -> Release | None:
    """The catalog's release of an installed ``version`` as a host of ``platform`` sees it."""
    public = _public(version)
    release = catalog.release(framework, public) if public is not None else None
    return release.on_platform(platform) if release is not None else None


def catalog_variant(
    catalog: Catalog,
    framework: Framework,
    version: str,
    variant: str | None,
    *,
    platform: str = CATALOG_PLATFORM,
) -> tuple[str | None, tuple[Arch, ...] | None]:
    """The catalog's name and arch list of ``variant`` (the release's default when None), the
    build of ``platform``."""
    release = _release(catalog, framework, version, platform)
    if release is None:
        return None, None
    name = variant or release.default_variant
    chosen = release.variant(name) if name else None
    if chosen is None:
        return name, None
    return chosen.name, chosen.archs


def _catalog_release_cuda(
    catalog: Catalog | None, framework: Framework, version: str, variant: str | None, platform: str
) -> Version | None:
    if catalog is None or variant is None:
        return None
    release = _release(catalog, framework, version, platform)
    chosen = release.variant(variant) if release is not None else None
    return chosen.cuda if chosen is not None else None


def _torch_build(
    name: str, version: str, evidence: Evidence, catalog: Catalog | None, platform: str
) -> FrameworkBuild:
    def build(cuda: Version | None, variant: str | None, why: str) -> FrameworkBuild:
        return FrameworkBuild(Framework.TORCH, name, version, cuda, variant, why)

    try:
        local = Version(version).local
    except InvalidVersion:
        local = None
    if local is not None:
        return build(cuda_from_local_tag(local), local, f"{LOCAL_TAG} +{local}")
    text = evidence.read_text(name, "torch/version.py")
    if text is not None:
        match = _TORCH_VERSION_CUDA_RE.search(text)
        cuda = Version(match.group(1)) if match else None
        return build(cuda, f"cu{cuda.major}{cuda.minor}" if cuda is not None else "cpu", "torch/version.py")
    cuda = _cuda_from_requires(evidence.requires(name))
    if cuda is not None:
        return build(cuda, f"cu{cuda.major}{cuda.minor}", "its NVIDIA requirements")
    if catalog is not None:
        default, _ = catalog_variant(catalog, Framework.TORCH, version, None, platform=platform)
        if default is not None:
            return build(
                _catalog_release_cuda(catalog, Framework.TORCH, version, default, platform),
                default,
                "the catalog's default variant",
            )
    return build(None, None, "default index build")


def _installed_runtime(evidence: Evidence, major: int) -> Version | None:
    for name in (f"nvidia-cuda-runtime-cu{major}", "nvidia-cuda-runtime"):
        version = evidence.version(name)
        if version is not None:
            found = _major_minor(version)
            if found is not None and found.major == major:
                return found
    return None


def _jax_build(
    name: str, version: str, evidence: Evidence, catalog: Catalog | None, platform: str
) -> FrameworkBuild:
    plugins = (_JAX_PLUGIN_RE.fullmatch(n) for n in sorted(evidence.names()))
    plugin = next((match for match in plugins if match is not None), None)
    if plugin is None:
        return FrameworkBuild(Framework.JAX, name, version, None, "cpu", "no CUDA plugin")
    major = int(plugin.group(1))
    variant = f"cuda{major}"
    cuda = (
        _installed_runtime(evidence, major)
        or _catalog_release_cuda(catalog, Framework.JAX, version, variant, platform)
        or Version(str(major))
    )
    return FrameworkBuild(
        Framework.JAX, name, version, cuda, variant, f"{plugin.group(0)} {evidence.version(plugin.group(0))}"
    )


def _tensorflow_build(
    name: str, version: str, evidence: Evidence, catalog: Catalog | None, platform: str
) -> FrameworkBuild:
    def build(cuda: Version | None, variant: str | None, why: str) -> FrameworkBuild:
        return FrameworkBuild(Framework.TENSORFLOW, name, version, cuda, variant, why)

    text = evidence.read_text(name, "tensorflow/python/platform/build_info.py")
    if text is not None:
        built = _TF_CUDA_BUILD_RE.search(text)
        match = _TF_BUILD_CUDA_RE.search(text)
        if match is not None:
            return build(_major_minor(match.group(1)), "and-cuda", "tensorflow build_info")
        if built is not None and built.group(1) == "False":
            return build(None, "cpu", "tensorflow build_info")
    if name in FACTS[Framework.TENSORFLOW].cpu_dists:
        return build(None, "cpu", name)
    release = _release(catalog, Framework.TENSORFLOW, version, platform) if catalog else None
    variant = next((v for v in release.variants if v.cuda is not None), None) if release else None
    if release is not None and platform != CATALOG_PLATFORM and release.default_variant is not None:
        variant = release.variant(release.default_variant)  # the plain wheel there (AWS's CPU build)
    if variant is None:
        return build(None, None, "unknown")
    return build(variant.cuda, variant.name, "catalog")
