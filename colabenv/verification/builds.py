"""The CUDA each installed framework was built for, read without importing it."""

from __future__ import annotations

import re

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from colabenv._host_dists import DistInfo, Installed
from colabenv._model import model
from colabenv._requirements import exact_pin, marker_applies
from colabenv.frameworks import FACTS
from colabenv.models import Arch, Catalog, Framework, cuda_from_local_tag


@model
class Build:
    framework: Framework
    dist: str
    version: str
    cuda: Version | None
    variant: str | None
    evidence: str

    @property
    def cpu_only(self) -> bool:
        return self.cuda is None

    @property
    def label(self) -> str:
        return f"{self.dist} {self.version}"


_TORCH_VERSION_CUDA_RE = re.compile(r"^cuda\s*(?::[^=]*)?=\s*['\"](\d+\.\d+)", re.MULTILINE)
_TF_BUILD_CUDA_RE = re.compile(r"['\"]cuda_version['\"]\s*,\s*['\"](\d+\.\d+)")
_TF_CUDA_BUILD_RE = re.compile(r"['\"]is_cuda_build['\"]\s*,\s*(True|False)")
_RUNTIME_RE = re.compile(r"^nvidia-cuda-runtime(?:-cu(\d+))?$")





def _major_minor(text: str) -> Version | None:
    try:
        version = Version(text)
    except InvalidVersion:
        return None
    release = (*version.release, 0)
    return Version(f"{release[0]}.{release[1]}")


def _cuda_from_requires(info: DistInfo) -> Version | None:
    for text in info.requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        name = canonicalize_name(req.name)
        pin = exact_pin(req)
        if pin is None or not marker_applies(req, ()):
            continue
        if _RUNTIME_RE.match(name) or name == "cuda-toolkit":
            return _major_minor(pin.split("+")[0])
    return None


def catalog_variant(catalog: Catalog, framework: Framework, version: str, variant: str | None
                     ) -> tuple[str | None, tuple[Arch, ...] | None]:
    try:
        public = Version(Version(version).public)
    except InvalidVersion:
        return None, None
    release = catalog.release(framework, public)
    if release is None:
        return None, None
    name = variant or release.default_variant
    chosen = release.variant(name) if name else None
    if chosen is None:
        return name, None
    return chosen.name, chosen.archs


def framework_build(framework: Framework, installed: Installed, catalog: Catalog) -> Build | None:
    dist_name = next((n for n in FACTS[framework].dists if installed.get(n)), None)
    info = installed.get(dist_name) if dist_name else None
    if info is None or dist_name is None:
        return None
    version = info.version
    try:
        local = Version(version).local
    except InvalidVersion:
        local = None
    if framework is Framework.TORCH:
        return _torch_build(info, local, installed, catalog)
    if framework is Framework.JAX:
        return _jax_build(info, installed, catalog)
    return _tensorflow_build(info, installed, catalog)


def _torch_build(info: DistInfo, local: str | None, installed: Installed, catalog: Catalog
                 ) -> Build:
    tag_cuda = cuda_from_local_tag(local)
    if tag_cuda is not None:
        return Build(Framework.TORCH, info.name, info.version, tag_cuda, local,
                     f"local tag +{local}")
    if local is not None:
        return Build(Framework.TORCH, info.name, info.version, None, local, f"local tag +{local}")
    text = installed.read_text(info.name, "torch/version.py")
    if text is not None:
        match = _TORCH_VERSION_CUDA_RE.search(text)
        cuda = Version(match.group(1)) if match else None
        variant = f"cu{cuda.major}{cuda.minor}" if cuda is not None else "cpu"
        return Build(Framework.TORCH, info.name, info.version, cuda, variant, "torch/version.py")
    cuda = _cuda_from_requires(info)
    if cuda is not None:
        return Build(Framework.TORCH, info.name, info.version, cuda,
                     f"cu{cuda.major}{cuda.minor}", "its NVIDIA requirements")
    default, _ = catalog_variant(catalog, Framework.TORCH, info.version, None)
    release = _catalog_release_cuda(catalog, Framework.TORCH, info.version, default)
    return Build(Framework.TORCH, info.name, info.version, release, default,
                 "the catalog's default variant")


def _catalog_release_cuda(catalog: Catalog, framework: Framework, version: str,
                          variant: str | None) -> Version | None:
    try:
        release = catalog.release(framework, Version(Version(version).public))
    except InvalidVersion:
        return None
    if release is None or variant is None:
        return None
    chosen = release.variant(variant)
    return chosen.cuda if chosen is not None else None


def _installed_runtime(installed: Installed, major: int) -> Version | None:
    for name in (f"nvidia-cuda-runtime-cu{major}", "nvidia-cuda-runtime"):
        version = installed.version(name)
        if version is not None:
            found = _major_minor(version)
            if found is not None and found.major == major:
                return found
    return None


def _jax_build(info: DistInfo, installed: Installed, catalog: Catalog) -> Build:
    plugin = next(
        (n for n in installed.names() if re.fullmatch(r"jax-cuda\d+-(plugin|pjrt)", n)), None
    )
    if plugin is None:
        return Build(Framework.JAX, info.name, info.version, None, "cpu", "no jax CUDA plugin")
    major = int(re.sub(r"\D", "", plugin.split("-")[1]))
    variant = f"cuda{major}"
    cuda = _installed_runtime(installed, major) or _catalog_release_cuda(
        catalog, Framework.JAX, info.version, variant
    ) or Version(f"{major}.0")
    return Build(Framework.JAX, info.name, info.version, cuda, variant,
                 f"{plugin} {installed.version(plugin)}")


def _tensorflow_build(info: DistInfo, installed: Installed, catalog: Catalog) -> Build:
    text = installed.read_text(info.name, "tensorflow/python/platform/build_info.py")
    if text is not None:
        built = _TF_CUDA_BUILD_RE.search(text)
        match = _TF_BUILD_CUDA_RE.search(text)
        if match is not None:
            return Build(Framework.TENSORFLOW, info.name, info.version,
                         _major_minor(match.group(1)), "and-cuda", "tensorflow build_info")
        if built is not None and built.group(1) == "False":
            return Build(Framework.TENSORFLOW, info.name, info.version, None, "cpu",
                         "tensorflow build_info")
    if info.name == "tensorflow-cpu":
        return Build(Framework.TENSORFLOW, info.name, info.version, None, "cpu", "tensorflow-cpu")
    try:
        release = catalog.release(Framework.TENSORFLOW, Version(Version(info.version).public))
    except InvalidVersion:
        release = None
    variant = next((v for v in release.variants if v.cuda is not None), None) if release else None
    if variant is None:
        return Build(Framework.TENSORFLOW, info.name, info.version, None, None, "unknown")
    return Build(Framework.TENSORFLOW, info.name, info.version, variant.cuda, variant.name,
                 "the catalog")

