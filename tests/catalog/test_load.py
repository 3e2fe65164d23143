"""The shipped catalog: every entry is checked, known upstream facts are pinned, and broken
catalogs are refused with the file and key path in the message."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv._util import toml
from colabenv.accelerators.registry import accelerator_of
from colabenv.catalog.load import (
    DRIVERS_FILE,
    FRAMEWORK_FILES,
    load_catalog,
    load_components,
    shipped_catalog,
)
from colabenv.errors import CatalogError
from colabenv.models import (
    Catalog,
    Component,
    ComponentFacts,
    ComponentRange,
    ComputeCapability,
    Framework,
    Release,
    Target,
    Variant,
    archs_cover,
    parsed_pin,
)
from tests.support.catalogs import DRIVERS, TORCH, write_catalog
from tests.support.paths import DATA
from tests.support.targets import cpu_target, nvidia_target, tpu_target

CATALOG = load_catalog()
RUNTIMES = DATA / "runtimes"
PYTORCH_INDEX = "https://download.pytorch.org/whl/"
PYTHONS = [Version(f"3.{minor}") for minor in range(8, 15)]

RELEASES = [pytest.param(r, id=f"{r.framework}-{r.version}") for r in CATALOG.releases]
VARIANTS = [
    pytest.param(r, v, id=f"{r.framework}-{r.version}-{v.name}") for r in CATALOG.releases for v in r.variants
]
CUDA_VARIANTS = [p for p in VARIANTS if p.values[1].cuda is not None]  # type: ignore[union-attr]
ROCM_VARIANTS = [p for p in VARIANTS if p.values[1].rocm is not None]  # type: ignore[union-attr]
CPU_VARIANTS = [p for p in VARIANTS if p.values[1].is_cpu]  # type: ignore[union-attr]


def _release(framework: Framework, version: str) -> Release:
    release = CATALOG.release(framework, Version(version))
    assert release is not None, f"{framework} {version} is not in the catalog"
    return release


def _variant(framework: Framework, version: str, name: str) -> Variant:
    variant = _release(framework, version).variant(name)
    assert variant is not None, f"{framework} {version} has no variant {name}"
    return variant


def _pin(variant: Variant, name: str) -> Requirement:
    for pin in variant.pins:
        if pin.name == name:
            return pin
    raise AssertionError(f"{variant.name} does not pin {name}: {[str(p) for p in variant.pins]}")


# ---------------------------------------------------------------------------------------------
# Coverage of the shipped catalog


def test_shipped_catalog_is_cached_and_equal_to_a_fresh_load() -> None:
    assert shipped_catalog() is shipped_catalog()
    assert shipped_catalog() == load_catalog(components=True)
    assert shipped_catalog().components == load_components()
    assert shipped_catalog(()).components == ComponentFacts(), "detection needs no component facts"


@pytest.mark.parametrize(
    ("target", "has_components", "has_tpu_builds"),
    [
        pytest.param(nvidia_target("550.54.15", "12.4"), True, False, id="gpu"),
        pytest.param(cpu_target(), False, False, id="cpu"),
        pytest.param(tpu_target("v5e", "v5litepod-8", 8), False, True, id="tpu"),
    ],
)
def test_a_target_reads_only_the_facts_it_can_use(
    target: Target, has_components: bool, has_tpu_builds: bool
) -> None:
    """Render's start pays for no file it ignores: component facts need GPUs, TPU builds a TPU."""
    full = shipped_catalog()
    narrowed = shipped_catalog(parts=accelerator_of(target).traits.catalog_parts)
    assert narrowed.releases == full.releases
    assert narrowed.toolkits == full.toolkits
    assert (narrowed.components == full.components) is has_components
    assert (narrowed.components == ComponentFacts()) is not has_components
    assert (narrowed.tpu == full.tpu) is has_tpu_builds
    assert bool(narrowed.tpu.builds) is has_tpu_builds
    assert shipped_catalog(parts=accelerator_of(target).traits.catalog_parts) is narrowed


@pytest.mark.parametrize(
    ("framework", "first", "last", "minors"),
    [
        (Framework.TORCH, "2.0.0", "2.15.0", [f"2.{n}" for n in range(16)]),
        (Framework.TENSORFLOW, "2.12.0", "2.21.0", [f"2.{n}" for n in range(12, 22)]),
        (
            Framework.JAX,
            "0.4.26",
            "0.12.0.1",
            ["0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "0.10", "0.11", "0.12"],
        ),
    ],
)
def test_every_minor_line_in_scope_is_covered(
    framework: Framework, first: str, last: str, minors: list[str]
) -> None:
    versions = [r.version for r in CATALOG.releases_of(framework)]
    assert min(versions) == Version(first)
    assert max(versions) == Version(last)
    lines = {f"{v.major}.{v.minor}" for v in versions}
    assert set(minors) <= lines


def _image_python(snapshot: str) -> Version:
    """The Python of a Colab image, as its ``os-info.txt`` records ``python --version``."""
    for line in (RUNTIMES / snapshot / "os-info.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("Python "):
            return Version(line.split()[1])
    raise AssertionError(f"{snapshot}/os-info.txt names no Python")


@pytest.mark.parametrize(
    ("framework", "version", "snapshot"),
    [
        (Framework.TORCH, "2.6.0", "colab-2025.07"),
        (Framework.TORCH, "2.8.0", "colab-2025.10"),
        (Framework.JAX, "0.5.2", "colab-2025.07"),
        (Framework.JAX, "0.5.3", "colab-2025.10"),
        (Framework.TENSORFLOW, "2.18.0", "colab-2025.07"),
        (Framework.TENSORFLOW, "2.19.0", "colab-2025.10"),
    ],
)
def test_releases_colab_images_ship_are_present(framework: Framework, version: str, snapshot: str) -> None:
    """A release a Colab image ships is a shipped entry with a default, a CPU and a CUDA build,
    admitting the image's Python; the image's torch build (its local tag) is one of its variants
    and the companions the image has beside it are the ones the catalog pairs with it."""
    installed = _freeze_versions(RUNTIMES / snapshot / "pip-freeze.txt")
    shipped = Version(installed[framework.value])
    assert shipped.public == version, f"{snapshot} ships {framework} {shipped}"
    release = _release(framework, version)
    assert release.overlay is None
    assert shipped_catalog().release(framework, release.version) == release
    assert release.default_variant is not None
    assert release.variant(release.default_variant) is not None, release.default_variant
    assert any(variant.is_cpu for variant in release.variants)
    assert any(not variant.is_cpu for variant in release.variants)
    python = _image_python(snapshot)
    assert release.python.contains(python), f"{release.python} refuses {snapshot}'s Python {python}"
    if framework is Framework.TORCH:
        assert shipped.local is not None
        build = release.variant(shipped.local)
        assert build is not None and not build.is_cpu, shipped
    for companion in release.companions:
        assert Version(installed[companion.name]).public == str(companion.version), companion.name


def test_every_torch_patch_release_from_2_0_to_2_15_is_listed() -> None:
    expected = {
        "2.0.0",
        "2.0.1",
        "2.1.0",
        "2.1.1",
        "2.1.2",
        "2.2.0",
        "2.2.1",
        "2.2.2",
        "2.3.0",
        "2.3.1",
        "2.4.0",
        "2.4.1",
        "2.5.0",
        "2.5.1",
        "2.6.0",
        "2.7.0",
        "2.7.1",
        "2.8.0",
        "2.9.0",
        "2.9.1",
        "2.10.0",
        "2.11.0",
        "2.12.0",
        "2.12.1",
        "2.13.0",
        "2.14.0",
        "2.14.1",
        "2.15.0",
    }
    assert {str(r.version) for r in CATALOG.releases_of(Framework.TORCH)} == expected


# ---------------------------------------------------------------------------------------------
# Every release


@pytest.mark.parametrize("release", RELEASES)
def test_release_has_a_source(release: Release) -> None:
    assert release.source.text.strip()
    assert len(release.source.text) > 20


@pytest.mark.parametrize("release", RELEASES)
def test_release_version_is_a_final_release(release: Release) -> None:
    assert not release.version.is_prerelease
    assert release.version.local is None
    assert Version(str(release.version)) == release.version


@pytest.mark.parametrize("release", RELEASES)
def test_release_python_range_admits_a_supported_python(release: Release) -> None:
    admitted = [py for py in PYTHONS if release.python.contains(py)]
    assert admitted, f"{release.python} admits none of 3.8-3.14"
    assert not release.python.contains(Version("3.7"))
    assert not release.python.contains(Version("3.16"))


@pytest.mark.parametrize("release", RELEASES)
def test_default_variant_exists_and_is_a_gpu_build(release: Release) -> None:
    assert release.default_variant is not None
    default = release.variant(release.default_variant)
    assert default is not None
    assert not default.is_cpu


@pytest.mark.parametrize("release", RELEASES)
def test_release_has_exactly_one_cpu_variant(release: Release) -> None:
    assert [v.name for v in release.variants if v.is_cpu] == ["cpu"]


def test_the_only_unconfirmed_builds_are_the_known_ones_each_with_its_reason() -> None:
    unconfirmed = {
        (str(r.framework), str(r.version), v.name, v.platforms): v.unconfirmed
        for r in CATALOG.releases
        for v in r.variants
        if v.unconfirmed is not None
    }
    rocm = {key for key in unconfirmed if key[2].startswith("rocm") and key[0] == "torch"}
    # jax's ROCm plugin builds: each gfx list read from its plugin's HIP offload bundles (those of
    # 0.9.2 and later zstd-compressed, unpacked with the zstandard module in a scratch venv)
    jax_rocm = {key for key in unconfirmed if key[2].startswith("rocm") and key[0] == "jax"}
    assert not jax_rocm
    # torch's linux_aarch64 CUDA builds: arch lists from build scripts not read at the release
    arm = {key for key in unconfirmed if key[3] == ("linux_aarch64",)}
    x86 = ("linux_x86_64",)
    assert set(unconfirmed) - rocm - jax_rocm - arm == {
        ("torch", "2.15.0", "cpu", x86),
        ("torch", "2.15.0", "cu130", x86),
    }
    # jax's linux_aarch64 CUDA plugin builds: each read from its plugin's and PJRT's aarch64 wheels
    assert not {key for key in arm if key[0] == "jax"}
    # torch's aarch64 builds whose wheel was not read: 2.9-2.10 (the package index's plain aarch64
    # wheel is their CPU build), 2.11's cu126/cu128 and 2.15's cu130; the cu130 builds of 2.11-2.14
    # and 2.15's cu132 are the plain aarch64 wheel itself, read (torch/version.py, METADATA, archs)
    assert {key[1:3] for key in arm if key[0] == "torch"} == {
        (version, name) for version in ("2.9.0", "2.9.1", "2.10.0") for name in ("cu126", "cu128", "cu130")
    } | {("2.11.0", "cu126"), ("2.11.0", "cu128"), ("2.15.0", "cu130")}
    # torch's ROCm builds from 2.5 on: gfx lists read from copies bracketing each release
    # (docs/rocm.md); 2.4's, read at the release's own commit, are confirmed
    assert {key[1] for key in rocm} >= {"2.5.0", "2.9.0", "2.14.1"}
    # their release commits (git_version of the release's wheels) are named, with what was not read
    assert all("not confirmed at the release commit" in unconfirmed[key] for key in rocm)
    assert not {key for key in rocm if key[1].startswith("2.4.")}
    assert all(reason and len(reason) > 20 for reason in unconfirmed.values())
    assert all(v.overlay is None for r in CATALOG.releases for v in r.variants)


@pytest.mark.parametrize("release", RELEASES)
def test_companions_exist_with_sensible_versions(release: Release) -> None:
    companions = {str(c.name): c for c in release.companions}
    version = release.version
    if release.framework is Framework.TORCH:
        assert set(companions) == {"torchvision", "torchaudio"}
        vision = companions["torchvision"].version
        if version == Version("2.15.0"):
            # torchvision 0.29.2 came with torch 2.15.0 (uploaded with it, built +cu132)
            assert vision == Version("0.29.2")
        else:
            assert (vision.major, vision.minor) == (0, version.minor + 15)
        assert companions["torchvision"].follows_variant
        audio = companions["torchaudio"]
        if version < Version("2.12"):
            assert (audio.version.major, audio.version.minor) == (version.major, version.minor)
            assert audio.follows_variant
        else:
            # torchaudio 2.11.0 declares no torch pin; 2.11.1 (torch>=2.11) came with torch 2.15.0
            assert audio.version == Version("2.11.1" if version == Version("2.15.0") else "2.11.0")
            assert not audio.follows_variant
    elif release.framework is Framework.JAX:
        assert set(companions) == {"jaxlib"}
        jaxlib = companions["jaxlib"].version
        assert (jaxlib.major, jaxlib.minor) == (version.major, version.minor)
        assert jaxlib <= version
        assert version.micro - jaxlib.micro <= 1
        assert not companions["jaxlib"].follows_variant
    else:
        assert companions == {}


# ---------------------------------------------------------------------------------------------
# Every variant


@pytest.mark.parametrize(("release", "variant"), VARIANTS)
def test_variant_has_a_source(release: Release, variant: Variant) -> None:
    assert variant.source.text.strip()
    assert len(variant.source.text) > 20


@pytest.mark.parametrize(("release", "variant"), CUDA_VARIANTS)
def test_cuda_variant_has_driver_floor_and_toolkit_driver(release: Release, variant: Variant) -> None:
    assert variant.cuda is not None
    floor = CATALOG.floor_driver(variant.cuda)
    toolkit = CATALOG.toolkit_driver(variant.cuda)
    assert floor is not None
    assert toolkit is not None
    assert floor <= toolkit


@pytest.mark.parametrize(("release", "variant"), CUDA_VARIANTS)
def test_cuda_variant_has_archs(release: Release, variant: Variant) -> None:
    assert variant.archs
    assert len(set(variant.archs)) == len(variant.archs)
    assert any(not arch.ptx for arch in variant.archs)


@pytest.mark.parametrize(("release", "variant"), CUDA_VARIANTS)
def test_cuda13_builds_need_turing_or_newer(release: Release, variant: Variant) -> None:
    assert variant.cuda is not None
    if variant.cuda.major >= 13:
        assert min(arch.capability for arch in variant.archs) >= ComputeCapability(7, 5)
        assert not archs_cover(variant.archs, ComputeCapability(7, 0))


@pytest.mark.parametrize(("release", "variant"), ROCM_VARIANTS)
def test_rocm_variant_has_its_gfx_list_and_no_cuda(release: Release, variant: Variant) -> None:
    assert variant.cuda is None and variant.archs == () and variant.pins == ()
    assert variant.gfx and len(set(variant.gfx)) == len(variant.gfx)
    assert "gfx90a" in variant.gfx and "gfx942" in variant.gfx  # MI200 and MI300 in every one
    assert variant.rocm is not None and variant.rocm >= Version("6.0")


@pytest.mark.parametrize(("release", "variant"), CPU_VARIANTS)
def test_cpu_variant_has_no_archs_and_no_pins(release: Release, variant: Variant) -> None:
    assert variant.cuda is None
    assert variant.archs == ()
    assert variant.pins == ()
    assert variant.extra is None


@pytest.mark.parametrize(("release", "variant"), VARIANTS)
def test_pins_are_nvidia_or_cuda_wheels_of_the_variant_cuda_line(release: Release, variant: Variant) -> None:
    names = [pin.name for pin in variant.pins]
    assert len(set(names)) == len(names), "a package is pinned twice"
    for pin in variant.pins:
        assert pin.name.startswith(("nvidia-", "cuda-")), pin
        assert pin.marker is None, f"{pin}: the catalog is Linux x86_64 only, no markers"
        suffix = re.search(r"-cu(\d+)$", pin.name)
        if suffix is not None:
            assert variant.cuda is not None
            assert int(suffix.group(1)) == variant.cuda.major, f"{pin} in CUDA {variant.cuda}"


@pytest.mark.parametrize(("release", "variant"), CUDA_VARIANTS)
def test_default_builds_pin_cudnn(release: Release, variant: Variant) -> None:
    if variant.name != release.default_variant or variant.name == "cuda":
        return
    assert variant.cuda is not None
    assert any(pin.name.startswith("nvidia-cudnn-cu") for pin in variant.pins)


@pytest.mark.parametrize(("release", "variant"), VARIANTS)
def test_index_urls_are_https(release: Release, variant: Variant) -> None:
    if variant.index_url is None:
        assert release.framework is not Framework.TORCH
        return
    parsed = urllib.parse.urlsplit(variant.index_url)
    assert parsed.scheme == "https"
    assert parsed.netloc
    assert not parsed.username and not parsed.password


@pytest.mark.parametrize(("release", "variant"), VARIANTS)
def test_variant_naming_matches_its_build(release: Release, variant: Variant) -> None:
    if release.framework is Framework.TORCH:
        assert variant.index_url == PYTORCH_INDEX + variant.name
        assert variant.local_tag == variant.name
        assert variant.extra is None
        if variant.rocm is not None:
            assert variant.name == f"rocm{variant.rocm}"
        elif not variant.is_cpu:
            assert variant.cuda is not None
            assert variant.name == f"cu{variant.cuda.major}{variant.cuda.minor}"
    elif release.framework is Framework.JAX:
        assert variant.index_url is None
        assert variant.local_tag is None
        if variant.rocm is not None:
            # the plugin's namespace (jax-rocm7-plugin); jax's extra of the release names
            # another plugin, so the plugin and PJRT are pinned in requires
            assert variant.name == f"rocm{variant.rocm.major}" and variant.extra is None
            assert {f"jax-{variant.name}-plugin", f"jax-{variant.name}-pjrt"} == {
                parsed_pin(text).name for text in variant.requires
            }
        elif not variant.is_cpu:
            assert variant.cuda is not None
            assert variant.name == variant.extra == f"cuda{variant.cuda.major}"
            assert variant.find_links is None
            # an aarch64 build pins its plugin and PJRT, whose files confirm it (jax is pure
            # Python); an x86-64 build installs them through its extra alone
            pinned = {parsed_pin(text).name for text in variant.requires}
            aarch64 = "linux_aarch64" in variant.platforms
            assert pinned == (
                {f"jax-{variant.name}-plugin", f"jax-{variant.name}-pjrt"} if aarch64 else set()
            )
    else:
        assert variant.index_url is None
        assert variant.local_tag is None
        if variant.name == "and-cuda":
            assert variant.extra == "and-cuda"
        elif variant.name == "cuda":
            assert variant.extra is None
            assert variant.pins == ()


# ---------------------------------------------------------------------------------------------
# Known facts (light-the-torch style): each row is one upstream fact the catalog must keep


@dataclass(frozen=True)
class Fact:
    framework: Framework
    version: str
    variant: str
    check: Callable[[Variant], bool]
    why: str


def covers(cap: str) -> Callable[[Variant], bool]:
    return lambda v: archs_cover(v.archs, ComputeCapability.parse(cap))


def lacks(cap: str) -> Callable[[Variant], bool]:
    return lambda v: not archs_cover(v.archs, ComputeCapability.parse(cap))


def native(cap: str) -> Callable[[Variant], bool]:
    """Machine code for the GPU, not only PTX to JIT-compile."""
    gpu = ComputeCapability.parse(cap)
    return lambda v: any(a.covers(gpu) and not a.ptx for a in v.archs)


def ptx_only(cap: str) -> Callable[[Variant], bool]:
    gpu = ComputeCapability.parse(cap)
    return lambda v: archs_cover(v.archs, gpu) and not native(cap)(v)


def pins(name: str, spec: str) -> Callable[[Variant], bool]:
    return lambda v: _pin(v, name).specifier == SpecifierSet(spec)


def cuda(version: str) -> Callable[[Variant], bool]:
    return lambda v: v.cuda == Version(version)


T, TF, J = Framework.TORCH, Framework.TENSORFLOW, Framework.JAX

FACTS = [
    Fact(T, "2.8.0", "cu128", lacks("6.0"), "cu128 dropped Pascal from 2.8 (pytorch#158700)"),
    Fact(T, "2.8.0", "cu128", lacks("5.2"), "cu128 dropped Maxwell from 2.8"),
    Fact(T, "2.8.0", "cu126", covers("6.0"), "cu126 kept Pascal (P100) in 2.8"),
    Fact(T, "2.8.0", "cu126", covers("6.1"), "cu126 covers a GTX 1080 Ti"),
    Fact(T, "2.8.0", "cu128", covers("7.0"), "2.8 cu128 kept Volta (pytorch#157517)"),
    Fact(T, "2.11.0", "cu128", lacks("7.0"), "2.11 cu128 dropped Volta"),
    Fact(T, "2.14.1", "cu126", covers("6.0"), "cu126 still carries Pascal in 2.14"),
    Fact(T, "2.9.0", "cu130", lacks("7.0"), "CUDA 13 builds need sm_75+"),
    Fact(T, "2.9.0", "cu130", covers("7.5"), "CUDA 13 builds cover a T4"),
    Fact(T, "2.14.1", "cu130", lacks("7.0"), "cu130 has no Volta"),
    Fact(T, "2.11.0", "cu130", lacks("7.5"), "2.11 cu130's libtorch_cuda_linalg has no sm_75"),
    Fact(T, "2.14.1", "cu130", lacks("7.5"), "2.14.1 cu130's libtorch_cuda_linalg has no sm_75"),
    Fact(T, "2.14.1", "cu130", covers("8.9"), "an L4 runs 2.14.1 cu130 through sm_86 code"),
    Fact(T, "2.14.1", "cu126", covers("7.5"), "a T4 keeps the cu126 build of 2.14.1"),
    Fact(T, "2.14.1", "cu132", lacks("7.5"), "2.14.1 cu132 taken to be like its cu130 build"),
    Fact(T, "2.15.0", "cu132", covers("7.5"), "2.15 cu132 has sm_75 in every library"),
    Fact(T, "2.7.0", "cu128", covers("12.0"), "2.7 cu128 added sm_120 (RTX 50xx)"),
    Fact(T, "2.7.0", "cu128", covers("10.0"), "2.7 cu128 added sm_100 (B200)"),
    Fact(T, "2.7.0", "cu126", lacks("12.0"), "cu126 has no Blackwell kernels and no PTX"),
    Fact(T, "2.6.0", "cu124", lacks("10.0"), "cu124 has no Blackwell kernels and no PTX"),
    Fact(T, "2.6.0", "cu124", covers("7.5"), "Colab T4"),
    Fact(T, "2.6.0", "cu124", covers("8.9"), "L4 through sm_86 machine code"),
    Fact(T, "2.6.0", "cu124", covers("9.0"), "H100"),
    Fact(T, "2.0.0", "cu117", covers("3.7"), "2.0 still built sm_37 (K80)"),
    Fact(T, "2.0.0", "cu117", lacks("9.0"), "cu117 has no Hopper kernels"),
    Fact(T, "2.1.0", "cu121", lacks("3.7"), "CUDA 12 builds dropped Kepler"),
    Fact(T, "2.6.0", "cu124", pins("nvidia-cudnn-cu12", "==9.1.0.70"), "2.6.0 PyPI METADATA"),
    Fact(T, "2.6.0", "cu124", pins("nvidia-cuda-runtime-cu12", "==12.4.127"), "2.6.0 METADATA"),
    Fact(T, "2.6.0", "cu124", pins("nvidia-nccl-cu12", "==2.21.5"), "2.6.0 METADATA"),
    Fact(T, "2.0.1", "cu117", pins("nvidia-cudnn-cu11", "==8.5.0.96"), "2.0 PyPI METADATA"),
    Fact(T, "2.3.1", "cu121", pins("nvidia-cudnn-cu12", "==8.9.2.26"), "2.3 PyPI METADATA"),
    Fact(T, "2.7.1", "cu126", pins("nvidia-cudnn-cu12", "==9.5.1.17"), "2.7 PyPI METADATA"),
    Fact(T, "2.8.0", "cu128", pins("nvidia-cudnn-cu12", "==9.10.2.21"), "2.8 PyPI METADATA"),
    Fact(T, "2.8.0", "cu126", pins("nvidia-cudnn-cu12", "==9.10.2.21"), "Colab 2025.10 image"),
    Fact(T, "2.11.0", "cu130", pins("nvidia-cudnn-cu13", "==9.19.0.56"), "2.11 PyPI METADATA"),
    Fact(T, "2.14.1", "cu130", pins("nvidia-cudnn-cu13", "==9.24.0.43"), "2.14.1 METADATA"),
    Fact(T, "2.14.1", "cu130", pins("nvidia-nccl-cu13", "==2.30.7"), "2.14.1 METADATA"),
    Fact(T, "2.12.0", "cu126", pins("nvidia-cudnn-cu12", "==9.10.2.21"), "RELEASE.md 2.12 row"),
    Fact(T, "2.14.1", "cu130", cuda("13.0"), "PyPI wheel torch.version.cuda"),
    Fact(T, "2.14.0", "cu130", pins("cuda-toolkit", "==13.0.3"), "2.14.0 PyPI METADATA: CUDA 13.0"),
    Fact(T, "2.14.1", "cu130", pins("cuda-toolkit", "==13.0.3"), "2.14.1 PyPI METADATA: CUDA 13.0"),
    Fact(T, "2.14.1", "cu132", pins("cuda-toolkit", "==13.2.1"), "cu132 is the PyTorch index's build"),
    Fact(T, "2.15.0", "cu132", cuda("13.2"), "torch/version.py of the PyPI wheel: 2.15.0+cu132"),
    Fact(T, "2.15.0", "cu132", pins("nvidia-cudnn-cu13", "==9.26.0.51"), "2.15.0 METADATA"),
    Fact(T, "2.15.0", "cu132", pins("nvidia-nvshmem-cu13", "==3.7.2"), "2.15.0 METADATA"),
    Fact(T, "2.15.0", "cu132", pins("cuda-toolkit", "==13.2.2"), "2.15.0 METADATA"),
    Fact(T, "2.15.0", "cu132", lacks("7.0"), "read from the wheel: sm_75 and newer"),
    Fact(T, "2.15.0", "cu132", native("7.5"), "read from the wheel: sm_75 cubins (T4)"),
    Fact(T, "2.15.0", "cu132", native("9.0"), "read from the wheel: sm_90 cubins (H100/H200)"),
    Fact(T, "2.15.0", "cu132", native("12.0"), "read from the wheel: sm_120 cubins"),
    Fact(J, "0.12.0", "cuda12", pins("nvidia-cudnn-cu12", ">=9.10.2.21,<10.0"), "plugin 0.12.0"),
    Fact(J, "0.12.0.1", "cuda13", pins("nvidia-cudnn-cu13", ">=9.12.0.46,<10.0"), "plugin"),
    Fact(J, "0.12.0.1", "cuda12", native("10.1"), "plugin/pjrt 0.12.0.1 carry sm_101 cubins"),
    Fact(J, "0.12.0.1", "cuda12", covers("6.0"), "plugin/pjrt 0.12.0.1 carry sm_60 cubins"),
    Fact(J, "0.12.0.1", "cuda13", native("11.0"), "plugin/pjrt 0.12.0.1 carry sm_110 cubins"),
    Fact(J, "0.12.0.1", "cuda13", lacks("7.0"), "CUDA 13 plugin: sm_75 and newer"),
    Fact(TF, "2.18.0", "and-cuda", pins("nvidia-cudnn-cu12", "==9.3.0.75"), "and-cuda extra"),
    Fact(TF, "2.18.0", "and-cuda", pins("nvidia-cuda-runtime-cu12", "==12.5.82"), "and-cuda"),
    Fact(TF, "2.19.0", "and-cuda", pins("nvidia-cudnn-cu12", "==9.3.0.75"), "and-cuda extra"),
    Fact(TF, "2.20.0", "and-cuda", pins("nvidia-cudnn-cu12", ">=9.3.0.75,<10.0"), "ranges"),
    Fact(TF, "2.21.0", "and-cuda", pins("nvidia-cuda-runtime-cu12", ">=12.5.82,<13.0"), "ranges"),
    Fact(TF, "2.14.0", "and-cuda", pins("nvidia-cudnn-cu11", "==8.7.0.84"), "first and-cuda"),
    Fact(TF, "2.18.0", "and-cuda", cuda("12.5"), "build_info cuda_version 12.5.1"),
    Fact(TF, "2.17.1", "and-cuda", lacks("5.2"), "TF 2.17 dropped Maxwell"),
    Fact(TF, "2.16.2", "and-cuda", covers("5.2"), "TF 2.16 still built sm_50"),
    Fact(TF, "2.18.0", "and-cuda", covers("7.5"), "T4 through sm_70 machine code"),
    Fact(TF, "2.18.0", "and-cuda", covers("12.0"), "compute_90 PTX reaches Blackwell"),
    Fact(TF, "2.12.0", "cuda", cuda("11.8"), "system CUDA 11.8, no and-cuda extra"),
    Fact(J, "0.6.0", "cuda12", pins("nvidia-cudnn-cu12", ">=9.8,<10.0"), "plugin with-cuda"),
    Fact(J, "0.5.3", "cuda12", pins("nvidia-cudnn-cu12", ">=9.1,<10.0"), "plugin with-cuda"),
    Fact(J, "0.4.26", "cuda12", pins("nvidia-cudnn-cu12", ">=8.9.2.26,<9.0"), "jax cuda12"),
    Fact(J, "0.12.0", "cuda12", covers("5.0"), "the wheels carry sm_50 (SM 5.2 is what jax supports)"),
    Fact(J, "0.12.0", "cuda13", lacks("7.0"), "jax's CUDA 13 builds start at sm_75"),
    Fact(J, "0.7.2", "cuda13", pins("nvidia-cudnn-cu13", ">=9.12.0.46,<10.0"), "cuda13 plugin"),
    Fact(J, "0.7.2", "cuda13", lacks("7.0"), "CUDA 13: SM 7.5 or newer"),
    Fact(J, "0.7.2", "cuda12", covers("6.0"), "CUDA 12 plugin still runs on Pascal"),
    Fact(J, "0.6.0", "cuda12", cuda("12.8"), "CHANGELOG 0.6.0: built using CUDA 12.8"),
    # machine code read from the binaries with colabenv catalog archs
    Fact(TF, "2.21.0", "and-cuda", native("9.0"), "libtensorflow_cc carries sm_90 cubins"),
    Fact(TF, "2.16.1", "and-cuda", native("9.0"), "libtensorflow_cc carries sm_90 cubins"),
    Fact(TF, "2.15.0", "and-cuda", native("8.0"), "libtensorflow_cc carries sm_80 cubins"),
    Fact(TF, "2.15.0", "and-cuda", ptx_only("9.0"), "no sm_90 cubins before 2.16"),
    Fact(TF, "2.21.0", "and-cuda", ptx_only("12.0"), "Blackwell through compute_90 only"),
    Fact(J, "0.5.3", "cuda12", native("9.0"), "xla_cuda_plugin 0.5.3 carries sm_90 cubins"),
    Fact(J, "0.5.3", "cuda12", ptx_only("10.0"), "no Blackwell cubins before 0.6"),
    Fact(J, "0.6.0", "cuda12", native("12.0"), "plugin 0.6.0 carries sm_120 cubins"),
    Fact(J, "0.10.0", "cuda12", native("10.0"), "plugin 0.10.0 carries sm_100 cubins"),
    Fact(J, "0.10.2", "cuda12", native("10.1"), "plugin 0.10.2 added sm_101"),
    Fact(J, "0.11.2", "cuda13", native("11.0"), "cuda13 plugin 0.10.2 added sm_110"),
    Fact(J, "0.11.2", "cuda13", lacks("7.0"), "CUDA 13 plugin: sm_75 and newer"),
]


@pytest.mark.parametrize(
    "fact", [pytest.param(f, id=f"{f.framework}-{f.version}-{f.variant}-{f.why}") for f in FACTS]
)
def test_known_fact(fact: Fact) -> None:
    variant = _variant(fact.framework, fact.version, fact.variant)
    assert fact.check(variant), fact.why


@pytest.mark.parametrize(
    ("framework", "version", "default"),
    [
        (T, "2.0.0", "cu117"),
        (T, "2.1.0", "cu121"),
        (T, "2.4.1", "cu121"),
        (T, "2.5.0", "cu124"),
        (T, "2.6.0", "cu124"),
        (T, "2.7.0", "cu126"),
        (T, "2.8.0", "cu128"),
        (T, "2.10.0", "cu128"),
        (T, "2.11.0", "cu130"),
        (T, "2.14.0", "cu130"),  # not cu132, as pytorch#190355 proposed: see the Facts rows
        (T, "2.14.1", "cu130"),
        (T, "2.15.0", "cu132"),
        (TF, "2.12.0", "cuda"),
        (TF, "2.14.0", "and-cuda"),
        (J, "0.5.3", "cuda12"),
        (J, "0.11.2", "cuda12"),
        (J, "0.12.0", "cuda12"),
        (J, "0.12.0.1", "cuda12"),
    ],
)
def test_default_variant_is_what_pypi_serves(framework: Framework, version: str, default: str) -> None:
    assert _release(framework, version).default_variant == default


@pytest.mark.parametrize(
    ("framework", "version", "variants"),
    [
        (T, "2.0.1", {"cu117", "cu118", "cpu"}),
        (T, "2.4.0", {"cu118", "cu121", "cu124", "cpu", "rocm6.0", "rocm6.1"}),
        (T, "2.6.0", {"cu118", "cu124", "cu126", "cpu", "rocm6.1", "rocm6.2.4"}),
        (T, "2.7.1", {"cu118", "cu126", "cu128", "cpu", "rocm6.2.4", "rocm6.3"}),
        (T, "2.8.0", {"cu126", "cu128", "cu129", "cpu", "rocm6.3", "rocm6.4"}),
        (T, "2.9.1", {"cu126", "cu128", "cu130", "cpu", "rocm6.3", "rocm6.4"}),
        (T, "2.11.0", {"cu126", "cu128", "cu130", "cpu", "rocm7.1", "rocm7.2"}),
        (T, "2.13.0", {"cu126", "cu130", "cu132", "cpu", "rocm7.1", "rocm7.2"}),
        (T, "2.15.0", {"cu132", "cu130", "cpu", "rocm7.14", "rocm10.0"}),  # the 2.15 cycle's ROCm
        (J, "0.12.0", {"cuda12", "cuda13", "cpu", "rocm7"}),
        (J, "0.12.0.1", {"cuda12", "cuda13", "cpu"}),
        (J, "0.7.1", {"cuda12", "cpu", "rocm7"}),
        (J, "0.7.2", {"cuda12", "cuda13", "cpu"}),
        (TF, "2.13.1", {"cuda", "cpu"}),
        (TF, "2.15.1", {"and-cuda", "cpu"}),
    ],
)
def test_variant_sets(framework: Framework, version: str, variants: set[str]) -> None:
    assert {v.name for v in _release(framework, version).variants} == variants


@pytest.mark.parametrize(
    ("framework", "version", "python", "admitted"),
    [
        (T, "2.0.0", "3.8", True),
        (T, "2.0.0", "3.12", False),
        (T, "2.2.0", "3.12", True),
        (T, "2.5.0", "3.8", False),
        (T, "2.9.0", "3.9", False),
        (T, "2.9.0", "3.14", True),
        (TF, "2.15.0", "3.12", False),
        (TF, "2.16.1", "3.12", True),
        (TF, "2.21.0", "3.9", False),
        (J, "0.4.30", "3.9", True),
        (J, "0.4.31", "3.9", False),
        (J, "0.7.0", "3.10", False),
        (J, "0.11.0", "3.11", False),
        (T, "2.15.0", "3.10", False),
        (T, "2.15.0", "3.11", True),
        (T, "2.15.0", "3.15", True),
        (J, "0.12.0", "3.11", False),
        (J, "0.12.0.1", "3.15", True),
    ],
)
def test_python_ranges(framework: Framework, version: str, python: str, admitted: bool) -> None:
    assert _release(framework, version).python.contains(Version(python)) is admitted


@pytest.mark.parametrize(
    ("framework", "version", "companion", "expected"),
    [
        (T, "2.0.0", "torchvision", "0.15.1"),
        (T, "2.0.1", "torchaudio", "2.0.2"),
        (T, "2.6.0", "torchvision", "0.21.0"),
        (T, "2.8.0", "torchvision", "0.23.0"),
        (T, "2.12.1", "torchvision", "0.27.1"),
        (T, "2.14.1", "torchaudio", "2.11.0"),
        (J, "0.5.2", "jaxlib", "0.5.1"),
        (J, "0.4.35", "jaxlib", "0.4.34"),
        (J, "0.5.3", "jaxlib", "0.5.3"),
        (T, "2.15.0", "torchvision", "0.29.2"),
        (T, "2.15.0", "torchaudio", "2.11.1"),  # pytorch/audio v2.11.1, released with 2.15.0
        (J, "0.12.0.1", "jaxlib", "0.12.0.1"),
    ],
)
def test_companion_pairs(framework: Framework, version: str, companion: str, expected: str) -> None:
    found = {str(c.name): c.version for c in _release(framework, version).companions}
    assert found[companion] == Version(expected)


def _freeze_versions(path: Path) -> dict[str, str]:
    versions: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if "==" in line:
            name, _, version = line.partition("==")
            versions[name.strip().lower()] = version.strip()
        elif " @ " in line:
            name, _, url = line.partition(" @ ")
            filename = urllib.parse.unquote(url.rsplit("/", 1)[-1])
            if filename.endswith(".whl"):
                versions[name.strip().lower()] = filename.split("-")[1]
    return versions


@pytest.mark.parametrize(
    ("snapshot", "torch_cudnn_kept"),
    [
        # The image ships torch 2.6.0+cu124 beside tensorflow 2.18 and keeps TF's cuDNN 9.3.0.75
        # (torch pins 9.1.0.70): images force one cuDNN and skip the other framework's pin.
        ("colab-2025.07", False),
        ("colab-2025.10", True),
    ],
)
def test_colab_snapshot_builds_are_in_the_catalog(snapshot: str, torch_cudnn_kept: bool) -> None:
    installed = _freeze_versions(RUNTIMES / snapshot / "pip-freeze.txt")
    torch = Version(installed["torch"])
    assert torch.local is not None
    variant = _variant(T, torch.public, torch.local)
    cudnn = _pin(variant, "nvidia-cudnn-cu12").specifier
    assert cudnn.contains(installed["nvidia-cudnn-cu12"]) is torch_cudnn_kept
    jax = _release(J, installed["jax"])
    assert {str(c.name): str(c.version) for c in jax.companions}["jaxlib"] == installed["jaxlib"]
    _release(TF, installed["tensorflow"])


# ---------------------------------------------------------------------------------------------
# Driver table


@pytest.mark.parametrize(
    ("driver", "expected"),
    [
        ("550.54.15", "12.4"),  # Colab T4 host driver
        ("550.54.14", "12.4"),
        ("550.54.13", "12.3"),
        ("580.65.06", "13.0"),
        ("580.95.05", "13.0"),
        ("590.44.01", "13.1"),
        ("595.45.04", "13.2"),
        ("610.43.01", "13.2"),
        ("610.43.02", "13.3"),  # CUDA 13.3 GA and Update 1
        ("615.71.08", "13.3"),
        ("615.71.09", "13.4"),  # cuda-compat-13-4 (13.4 unbundled its driver)
        ("570.124.06", "12.8"),
        ("560.35.03", "12.6"),
        ("535.104.05", "12.2"),
        ("520.61.05", "11.8"),
        ("515.43.04", "11.7"),
        ("470.82.01", "11.4"),
        ("450.36.06", None),
    ],
)
def test_max_cuda_for_driver(driver: str, expected: str | None) -> None:
    found = CATALOG.max_cuda_for_driver(Version(driver))
    assert found == (Version(expected) if expected else None)


@pytest.mark.parametrize(
    ("cuda_version", "floor", "toolkit"),
    [
        ("11.7", "450.80.02", "515.43.04"),
        ("11.8", "450.80.02", "520.61.05"),
        ("12.4", "525.60.13", "550.54.14"),
        ("12.8", "525.60.13", "570.26"),
        ("13.0", "580.65.06", "580.65.06"),
        ("13.2", "580.65.06", "595.45.04"),
        ("13.4", "580.65.06", "615.71.09"),
    ],
)
def test_floor_and_toolkit_drivers(cuda_version: str, floor: str, toolkit: str) -> None:
    assert CATALOG.floor_driver(Version(cuda_version)) == Version(floor)
    assert CATALOG.toolkit_driver(Version(cuda_version)) == Version(toolkit)


@pytest.mark.parametrize(
    ("version", "driver"),
    [
        ("12.9.1", "575.57.08"),
        ("13.0.2", "580.95.05"),
        ("13.1.1", "590.48.01"),
        ("13.2.1", "595.58.03"),
        ("13.3.0", "610.43.02"),
        ("13.3.1", "610.43.02"),
    ],
)
def test_toolkit_update_releases(version: str, driver: str) -> None:
    """The update releases current wheels are built with (Table 3 of the release notes)."""
    (toolkit,) = [t for t in CATALOG.toolkits if t.version == Version(version)]
    assert toolkit.toolkit_driver == Version(driver)
    assert "Table 3" in toolkit.source.text


@pytest.mark.parametrize("version", ["13.4.1", "13.4.2"])
def test_cuda_13_4_driver_is_its_compat_package(version: str) -> None:
    """CUDA 13.4 unbundled its Linux driver and Table 3 names none: the row says where its
    number comes from instead."""
    (toolkit,) = [t for t in CATALOG.toolkits if t.version == Version(version)]
    assert toolkit.toolkit_driver == Version("615.71.09")
    assert "cuda-compat-13-4" in toolkit.source.text
    assert "No Table 3 driver" in toolkit.source.text


def test_cuda_13_floor_says_where_its_number_comes_from() -> None:
    (line,) = [m for m in CATALOG.major_lines if m.major == 13]
    assert line.floor_driver == Version("580.65.06")
    assert ">= 580" in line.source.text and "13.0 GA" in line.source.text


def test_driver_table_sources_and_order() -> None:
    versions = [toolkit.version for toolkit in CATALOG.toolkits]
    assert len(set(versions)) == len(versions), "a toolkit release is listed twice"
    for toolkit in CATALOG.toolkits:
        assert toolkit.source.text.strip()
        assert toolkit.label.startswith(f"{toolkit.version.major}.{toolkit.version.minor} ")
        assert CATALOG.floor_driver(toolkit.version) is not None
    for line in CATALOG.major_lines:
        assert line.source.text.strip()
    ordered = sorted(CATALOG.toolkits, key=lambda t: t.version)
    drivers = [t.toolkit_driver for t in ordered]
    assert drivers == sorted(drivers), "a newer toolkit must not need an older driver"


# ---------------------------------------------------------------------------------------------
# Loader errors: small broken catalogs in a temporary directory (tests/support/catalogs.py)


def test_minimal_catalog_loads(tmp_path: Path) -> None:
    catalog = load_catalog(write_catalog(tmp_path))
    assert isinstance(catalog, Catalog)
    release = catalog.release(Framework.TORCH, Version("1.0.0"))
    assert release is not None
    assert [v.name for v in release.variants] == ["cu124", "cpu"]


def _replace(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


BROKEN = [
    pytest.param(
        lambda t: _replace(
            t,
            'python = ">=3.10"\ndefault_variant = "cu124"\n'
            'companions = { torchvision = "0.1.0" }\nsource = "test"\n',
            'python = ">=3.10"\ndefault_variant = "cu124"\ncompanions = { torchvision = "0.1.0" }\n',
        ),
        "torch.toml",
        "release[0].source",
        id="release-without-source",
    ),
    pytest.param(
        lambda t: _replace(t, 'name = "cpu"\nsource = "test"\n', 'name = "cpu"\n'),
        "torch.toml",
        "release[0].variant[1].source",
        id="variant-without-source",
    ),
    pytest.param(
        lambda t: _replace(t, 'name = "cpu"\nsource = "test"\n', 'name = "cpu"\nsource = ""\n'),
        "torch.toml",
        "release[0].variant[1].source",
        id="variant-with-empty-source",
    ),
    pytest.param(
        lambda t: _replace(t, 'version = "1.0.0"', 'version = "one point oh"'),
        "torch.toml",
        "release[0].version",
        id="bad-release-version",
    ),
    pytest.param(
        lambda t: _replace(t, 'cuda = "12.4"', 'cuda = "twelve"'),
        "torch.toml",
        "release[0].variant[0].cuda",
        id="bad-cuda-version",
    ),
    pytest.param(
        lambda t: _replace(t, 'python = ">=3.10"', 'python = "3.x"'),
        "torch.toml",
        "release[0].python",
        id="bad-python-specifier",
    ),
    pytest.param(
        lambda t: _replace(t, 'local_tag = "cu124"', 'local_tag = "cu124"\ncolour = "green"'),
        "torch.toml",
        "release[0].variant[0].colour",
        id="unknown-variant-key",
    ),
    pytest.param(
        lambda t: _replace(t, 'default_variant = "cu124"', 'default_variant = "cu124"\nlts = true'),
        "torch.toml",
        "release[0].lts",
        id="unknown-release-key",
    ),
    pytest.param(lambda t: t + t[t.index("[[release]]") :], "torch.toml", "release", id="duplicate-release"),
    pytest.param(
        lambda t: _replace(t, 'archs = "modern"', 'archs = "ancient"'),
        "torch.toml",
        "release[0].variant[0].archs",
        id="unknown-arch-list",
    ),
    pytest.param(
        lambda t: _replace(t, '"compute_90"]', '"sm_eighty"]'),
        "torch.toml",
        "archs.modern",
        id="bad-arch-entry",
    ),
    pytest.param(
        lambda t: _replace(t, 'archs = "modern"\n', ""),
        "torch.toml",
        "release[0].variant[0].archs",
        id="cuda-variant-without-archs",
    ),
    pytest.param(
        lambda t: _replace(t, 'name = "cpu"\n', 'name = "cpu"\narchs = "modern"\n'),
        "torch.toml",
        "release[0].variant[1].archs",
        id="cpu-variant-with-archs",
    ),
    pytest.param(
        lambda t: _replace(t, 'cuda = "12.4"', 'cuda = "11.8"'),
        "torch.toml",
        "release 1.0.0 variant cu124",
        id="cuda-variant-without-driver-floor",
    ),
    pytest.param(
        lambda t: _replace(t, 'cuda = "12.4"', 'cuda = "12.7"'),
        "torch.toml",
        "release 1.0.0 variant cu124",
        id="cuda-variant-without-toolkit-driver",
    ),
    pytest.param(
        lambda t: _replace(t, 'default_variant = "cu124"', 'default_variant = "cu999"'),
        "torch.toml",
        "release[0].default_variant",
        id="default-variant-missing",
    ),
    pytest.param(
        lambda t: _replace(t, 'name = "cpu"', 'name = "cu124"'),
        "torch.toml",
        "release[0].variant",
        id="duplicate-variant",
    ),
    pytest.param(
        lambda t: _replace(t, '"nvidia-cudnn-cu12==9.1.0.70"', '"nvidia cudnn !! 9"'),
        "torch.toml",
        "release[0].variant[0].pins",
        id="bad-pin",
    ),
    pytest.param(
        lambda t: _replace(t, "https://example.invalid/cu124", "http://example.invalid/cu124"),
        "torch.toml",
        "release[0].variant[0].index_url",
        id="plain-http-index",
    ),
    pytest.param(
        lambda t: _replace(t, 'torchvision = "0.1.0"', 'torchvision = "zero"'),
        "torch.toml",
        "release[0].companions.torchvision",
        id="bad-companion-version",
    ),
    pytest.param(
        lambda t: _replace(
            t, 'torchvision = "0.1.0"', 'torchvision = { version = "0.1.0", follows_variant = "no" }'
        ),
        "torch.toml",
        "release[0].companions.torchvision.follows_variant",
        id="companion-follows-variant-not-bool",
    ),
    pytest.param(
        lambda t: _replace(t, 'torchvision = "0.1.0"', 'torchvision = { version = "0.1.0", tag = "cu124" }'),
        "torch.toml",
        "release[0].companions.torchvision.tag",
        id="companion-unknown-key",
    ),
    pytest.param(
        lambda t: _replace(t, 'framework = "torch"', 'framework = "jax"'),
        "torch.toml",
        "framework",
        id="wrong-framework",
    ),
    pytest.param(
        lambda t: _replace(t, "schema = 1", "schema = 2"), "torch.toml", "schema", id="unknown-schema"
    ),
    pytest.param(lambda t: t + "\n[[release\n", "torch.toml", "invalid TOML", id="syntax-error"),
]


@pytest.mark.parametrize(("mutate", "filename", "key"), BROKEN)
def test_broken_catalog_is_refused_with_file_and_key(
    tmp_path: Path, mutate: Callable[[str], str], filename: str, key: str
) -> None:
    root = write_catalog(tmp_path, torch=mutate(TORCH))
    with pytest.raises(CatalogError) as caught:
        load_catalog(root)
    message = str(caught.value)
    assert message.startswith(f"catalog {filename}: "), message
    assert key in message, message
    assert "\n" not in message
    assert caught.value.exit_code == 70


def test_companion_table_form_is_read(tmp_path: Path) -> None:
    torch = _replace(
        TORCH,
        'torchvision = "0.1.0"',
        'torchvision = "0.1.0", torchaudio = { version = "2.0.0", follows_variant = false }',
    )
    catalog = load_catalog(write_catalog(tmp_path, torch=torch))
    release = catalog.release(Framework.TORCH, Version("1.0.0"))
    assert release is not None
    found = {str(c.name): (str(c.version), c.follows_variant) for c in release.companions}
    assert found == {"torchvision": ("0.1.0", True), "torchaudio": ("2.0.0", False)}


@pytest.mark.parametrize(
    ("drivers", "key"),
    [
        pytest.param(
            DRIVERS.replace('source = "test"\n', "", 1),
            "major_line[0].source",
            id="major-line-without-source",
        ),
        pytest.param(
            DRIVERS.replace('driver = "550.54.14"', 'driver = "new"'),
            "toolkit[0].driver",
            id="bad-toolkit-driver",
        ),
        pytest.param(
            DRIVERS.replace("cuda_major = 12", 'cuda_major = "12"'),
            "major_line[0].cuda_major",
            id="cuda-major-not-integer",
        ),
        pytest.param(
            DRIVERS + DRIVERS[DRIVERS.index("[[major_line]]") : DRIVERS.index("[[tool")],
            "major_line",
            id="duplicate-major-line",
        ),
        pytest.param(
            DRIVERS.replace('label = "12.4 GA"', 'label = "12.4 GA"\nnote = "x"'),
            "toolkit[0].note",
            id="unknown-toolkit-key",
        ),
    ],
)
def test_broken_driver_table_is_refused(tmp_path: Path, drivers: str, key: str) -> None:
    root = write_catalog(tmp_path, drivers=drivers)
    with pytest.raises(CatalogError) as caught:
        load_catalog(root)
    assert str(caught.value).startswith(f"catalog {DRIVERS_FILE}: ")
    assert key in str(caught.value)


def test_missing_catalog_file_is_refused(tmp_path: Path) -> None:
    root = write_catalog(tmp_path)
    (root / FRAMEWORK_FILES[Framework.JAX]).unlink()
    with pytest.raises(CatalogError, match=r"catalog jax\.toml: cannot read"):
        load_catalog(root)


# ---------------------------------------------------------------------------------------------
# NVIDIA component facts (components.toml, issue 13)

COMPONENT_FACTS = load_components()
COMPONENT_RANGES = [
    pytest.param(c, r, id=f"{c.name}{r.specifier}") for c in COMPONENT_FACTS.components for r in c.ranges
]
CUDA_TOOLKIT = "cuda-toolkit"
LEFT_OUT = {
    # no GPU code, or compilers that target every GPU of their CUDA line (header of the file)
    "cuda-bindings",
    "nvidia-nvvm",
    "nvidia-cuda-runtime",
    "nvidia-cuda-nvrtc",
    "nvidia-nvjitlink",
    "nvidia-cuda-nvcc",
    "nvidia-nvtx",
    "nvidia-cufile",
    "nvidia-cuda-cupti",
    *(
        f"nvidia-{name}-cu{major}"
        for major in (11, 12)
        for name in ("cuda-runtime", "cuda-nvrtc", "nvjitlink", "cuda-nvcc", "nvtx", "cufile", "cuda-cupti")
    ),
    # kernels for Ampere and newer only, used by the frameworks only there
    "nvidia-cusparselt-cu12",
    "nvidia-cusparselt-cu13",
}


@pytest.mark.parametrize(("component", "item"), COMPONENT_RANGES)
def test_component_range_is_read_from_the_wheels_it_names(component: Component, item: ComponentRange) -> None:
    assert "colabenv catalog archs" in item.source.text
    wheel_name = str(component.name).replace("-", "_")
    for version in item.checked:
        assert f"{wheel_name}-{version}-" in item.source.text, version
    assert len(set(item.archs)) == len(item.archs)
    assert any(not a.ptx for a in item.archs)


@pytest.mark.parametrize(("component", "item"), COMPONENT_RANGES)
def test_cuda13_components_cover_nothing_before_volta(component: Component, item: ComponentRange) -> None:
    if component.cuda_major < 13:
        return
    assert not archs_cover(item.archs, ComputeCapability(6, 1))
    if component.name != "nvidia-cusparse":  # cuSPARSE for CUDA 13 still carries sm_70
        assert min(a.capability for a in item.archs) >= ComputeCapability(7, 5)


def _component_names(variant: Variant) -> set[str]:
    names = set()
    for pin in variant.pins:
        if pin.name != CUDA_TOOLKIT:
            names.add(canonicalize_name(pin.name))
            continue
        (exact,) = [s.version for s in pin.specifier if s.operator == "=="]
        meta = COMPONENT_FACTS.toolkit_meta(Version(exact))
        assert meta is not None, f"no cuda-toolkit {exact} in components.toml"
        for extra in pin.extras:
            names.update(canonicalize_name(p.name) for p in meta.pins(extra))
    return names


@pytest.mark.parametrize(("release", "variant"), CUDA_VARIANTS)
def test_every_component_a_build_pulls_in_is_known_or_left_out(release: Release, variant: Variant) -> None:
    known = {str(c.name) for c in COMPONENT_FACTS.components}
    unknown = _component_names(variant) - known - LEFT_OUT
    assert not unknown, f"{release.framework} {release.version} {variant.name}: {sorted(unknown)}"


@dataclass(frozen=True)
class ComponentFact:
    name: str
    version: str
    gpu: str
    covered: bool
    why: str


COMPONENT_KNOWN = [
    ComponentFact("nvidia-cudnn-cu12", "9.10.2.21", "6.0", True, "issue 13: libcudnn_ops sm_60"),
    ComponentFact("nvidia-cudnn-cu12", "9.10.2.21", "6.1", True, "GTX 1080 Ti"),
    ComponentFact("nvidia-cudnn-cu12", "9.10.2.21", "7.0", True, "V100"),
    ComponentFact("nvidia-cudnn-cu12", "9.10.2.21", "5.0", True, "Maxwell"),
    ComponentFact("nvidia-cudnn-cu12", "9.11.0.98", "6.0", False, "sm_75 and newer only"),
    ComponentFact("nvidia-cudnn-cu12", "9.11.0.98", "7.0", False, "no Volta from 9.11"),
    ComponentFact("nvidia-cudnn-cu12", "9.11.0.98", "7.5", True, "T4"),
    ComponentFact("nvidia-cudnn-cu12", "9.28.0.42", "6.1", False, "sm_75 and newer only"),
    ComponentFact("nvidia-cudnn-cu12", "9.3.0.75", "6.0", True, "TF 2.18's exact pin has Pascal"),
    ComponentFact("nvidia-cudnn-cu12", "9.1.0.70", "12.0", True, "Blackwell through compute_90"),
    ComponentFact("nvidia-cudnn-cu12", "8.9.2.26", "6.0", True, "cuDNN 8.9 for CUDA 12"),
    ComponentFact("nvidia-cudnn-cu13", "9.12.0.46", "7.0", False, "CUDA 13: sm_75 and newer"),
    ComponentFact("nvidia-cudnn-cu13", "9.28.1.4", "7.5", True, "T4"),
    ComponentFact("nvidia-cudnn-cu13", "9.26.0.51", "9.0", True, "torch 2.15.0's cuDNN on H200"),
    ComponentFact("nvidia-cudnn-cu13", "9.26.0.51", "7.0", False, "no Volta in 9.26 either"),
    ComponentFact("nvidia-nvshmem-cu13", "3.7.2", "7.5", True, "torch 2.15.0's NVSHMEM on a T4"),
    ComponentFact("nvidia-cublas", "13.4.1.3", "9.0", True, "cuda-toolkit 13.2.2 cuBLAS"),
    ComponentFact("nvidia-nccl-cu12", "2.27.7", "5.2", True, "NCCL kept sm_50 up to 2.27"),
    ComponentFact("nvidia-nccl-cu12", "2.28.9", "5.2", False, "NCCL 2.28 dropped sm_50"),
    ComponentFact("nvidia-nccl-cu12", "2.32.3", "6.0", True, "NCCL still has sm_60"),
    ComponentFact("nvidia-cublas-cu12", "12.9.3.13", "5.0", True, "cuBLAS 12.9 keeps sm_50"),
    ComponentFact("nvidia-cublas-cu12", "12.6.4.1", "6.1", True, "cuda-toolkit 12.6.3 cuBLAS"),
    ComponentFact("nvidia-cufft-cu12", "11.4.1.4", "6.0", True, "cuFFT 11.4 sm_60 in .ldata"),
    ComponentFact("nvidia-cusparse", "12.6.3.3", "7.0", True, "CUDA 13 cuSPARSE keeps sm_70"),
    ComponentFact("nvidia-cublas", "13.1.0.3", "7.0", False, "CUDA 13 cuBLAS: sm_75 and newer"),
    ComponentFact("nvidia-nvshmem-cu13", "3.3.20", "7.5", False, "NVSHMEM 3.3.20: sm_80+"),
    ComponentFact("nvidia-nvshmem-cu13", "3.3.24", "7.5", True, "NVSHMEM 3.3.24 adds sm_75"),
    ComponentFact("nvidia-cudnn-cu11", "8.7.0.84", "3.7", True, "TF 2.14's cuDNN runs on a K80"),
    ComponentFact("nvidia-cudnn-cu11", "9.1.0.70", "3.7", False, "cuDNN 9 starts at sm_50"),
    ComponentFact("nvidia-cudnn-cu11", "9.1.0.70", "6.0", True, "torch 2.4-2.7 cu118 on a P100"),
    ComponentFact("nvidia-nccl-cu11", "2.21.5", "3.5", True, "NCCL for CUDA 11 keeps sm_35"),
]


@pytest.mark.parametrize(
    "fact", [pytest.param(f, id=f"{f.name}-{f.version}-{f.gpu}") for f in COMPONENT_KNOWN]
)
def test_known_component_fact(fact: ComponentFact) -> None:
    component = COMPONENT_FACTS.component(fact.name)
    assert component is not None
    item = component.range_of(Version(fact.version))
    assert item is not None, f"{fact.version} is in no range"
    assert item.covers(ComputeCapability.parse(fact.gpu)) is fact.covered, fact.why


def test_component_facts_read_through_the_catalog_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLABENV_CACHE_DIR", str(tmp_path / "cache"))
    fresh = load_components()
    assert len(list((tmp_path / "cache" / "parsed").iterdir())) == 1

    def no_parsing(text: str) -> dict[str, object]:
        raise AssertionError("parsed again instead of read from the cache")

    monkeypatch.setattr(toml, "loads", no_parsing)
    assert load_components() == fresh
