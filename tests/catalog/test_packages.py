"""``cuda_packages.toml``: every shipped entry internally consistent (a table test over the
catalog), a table of known facts, what the loader refuses (file and key path), overlays."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.catalog.load import load_overlay, shipped_catalog, with_overlays
from colabenv.catalog.packages import PACKAGES_FILE, shipped_packages
from colabenv.errors import CatalogOverlayError
from colabenv.models import (
    GFX_PATTERN,
    ComputeCapability,
    CudaPackage,
    Framework,
    PackageBuild,
    PackageRelease,
    Release,
    archs_cover,
)
from colabenv.models.frameworks import CUDA_PACKAGES
from tests.support.package_entries import (
    build_entry,
    package_entry,
    packages_file,
    release_entry,
    write_packages,
)

PYTHONS = [Version(f"3.{minor}") for minor in range(8, 16)]


def _builds() -> list[tuple[CudaPackage, PackageRelease, PackageBuild]]:
    return [(p, r, b) for p in shipped_packages() for r in p.releases for b in r.builds]


BUILDS = _builds()
IDS = [f"{p.name}-{r.version}-{b.name}" for p, r, b in BUILDS]


def test_the_shipped_file_has_the_packages_checked_so_far() -> None:
    names = {p.name for p in shipped_packages()}
    assert {"xformers", "cupy", "bitsandbytes", "cudf", "cuml", "flash-attn"} <= names
    assert names <= set(CUDA_PACKAGES), "a shipped package takes its names from colabenv.models.frameworks"


def _rocm_build_is_consistent(
    package: CudaPackage, release: PackageRelease, build: PackageBuild, torches: Sequence[Release]
) -> None:
    """A ROCm build: its distribution is the one for its ROCm line; one built against torch names
    torch releases the catalog has a ROCm build of its own ROCm for (the same local tag, on the
    PyTorch index's folder of it); no CUDA facts beside it; its gfx list is AMD GPUs'."""
    assert build.rocm is not None and build.cuda is None and not build.archs and not build.requires
    assert build.distribution == CUDA_PACKAGES[package.name].rocm_distribution_for(build.rocm)
    assert build.gfx and all(re.fullmatch(GFX_PATTERN, gfx) for gfx in build.gfx)
    if build.torch is not None:
        matching = [t for t in torches if build.torch.contains(t.version, prereleases=True)]
        assert any(v.rocm == build.rocm for t in matching for v in t.variants), build.torch
        assert build.local_tag == f"rocm{build.rocm}" and str(build.index_url).endswith(f"/rocm{build.rocm}")
    if build.index_url is not None:
        assert build.unconfirmed is not None, "a ROCm build off the package index is not read here"


@pytest.mark.parametrize(("package", "release", "build"), BUILDS, ids=IDS)
def test_every_build_is_consistent(
    package: CudaPackage, release: PackageRelease, build: PackageBuild
) -> None:
    catalog = shipped_catalog([Framework.TORCH])
    torches = catalog.releases_of(Framework.TORCH)
    if build.rocm is not None:
        _rocm_build_is_consistent(package, release, build, torches)
        return
    # a torch pin names a torch release the catalog has, and one of its builds shares the CUDA major
    if build.torch is not None:
        matching = [t for t in torches if build.torch.contains(t.version, prereleases=True)]
        assert matching, f"no torch release in the catalog satisfies torch{build.torch}"
        assert any(
            v.cuda is not None and v.cuda.major == build.cuda_major for t in matching for v in t.variants
        ), f"no torch{build.torch} build is CUDA {build.cuda_major}"
        exact = [s for s in build.torch if s.operator == "=="]
        on_pytorch_index = build.index_url is not None and build.index_url.startswith(
            "https://download.pytorch.org/"
        )
        if exact and build.local_tag is not None and on_pytorch_index:
            (torch,) = matching
            assert torch.variant(build.local_tag) is not None, (
                f"torch {torch.version} has no {build.local_tag}"
            )
    # the distribution is the one for its CUDA major
    assert build.distribution == CUDA_PACKAGES[package.name].distribution_for(build.cuda_major)
    # the Python range is sane: some Python 3 release, no Python 2
    python = release.python & (build.python or SpecifierSet())
    assert any(python.contains(v) for v in PYTHONS), python
    assert not python.contains(Version("2.7"))
    # the archs parse, are GPU code and lie within known GPUs; the driver table has the major
    assert build.archs and all(arch.capability.major <= 12 for arch in build.archs)
    assert catalog.floor_driver(build.cuda) is not None
    # a local tag names its CUDA build; a build off the default index names its index
    if build.local_tag is not None:
        assert build.index_url is not None or build.find_links is not None
        assert build.index_url is None or build.index_url.endswith(build.local_tag)
    if build.unconfirmed is not None:
        assert build.unconfirmed.strip()
    assert release.source.text.startswith("https://") and build.source.text.startswith("https://")


def _shipped_build(name: str, version: str, build_name: str) -> tuple[PackageRelease, PackageBuild]:
    package = next(p for p in shipped_packages() if p.name == name)
    release = package.release(Version(version))
    assert release is not None
    build = release.build(build_name)
    assert build is not None
    return release, build


# (package, release, build): (torch, distribution, index, local tag, covers, does not cover)
FACTS = [
    ("xformers", "0.0.34", "cu128", "==2.10.0", "xformers", None, None, "7.5 8.0 8.6 9.0 12.0", "6.0 7.0"),
    (
        "xformers",
        "0.0.34",
        "cu126",
        "==2.10.0",
        "xformers",
        "https://download.pytorch.org/whl/cu126",
        "cu126",
        "7.5",
        "7.0",
    ),
    (
        "xformers",
        "0.0.35",
        "cu130",
        ">=2.10",
        "xformers",
        "https://download.pytorch.org/whl/cu130",
        "cu130",
        "10.0 12.0",
        "6.1",
    ),
    ("xformers", "0.0.33.post2", "cu128", "==2.9.1", "xformers", None, None, "9.0", "6.0"),
    (
        "xformers",
        "0.0.32.post2",
        "cu129",
        "==2.8.0",
        "xformers",
        "https://download.pytorch.org/whl/cu129",
        "cu129",
        "8.9",
        "7.0",
    ),
    ("xformers", "0.0.31.post1", "cu126", "==2.7.1", "xformers", None, None, "7.5", "6.0"),
    ("cupy", "14.0.1", "cuda12", None, "cupy-cuda12x", None, None, "5.0 6.0 7.0 7.5 9.0 10.0 12.0", ""),
    ("cupy", "14.2.0", "cuda13", None, "cupy-cuda13x", None, None, "7.5 8.6 12.0", "6.0 7.0"),
    ("cupy", "13.6.0", "cuda12", None, "cupy-cuda12x", None, None, "6.1", ""),
    # 0.50.2: one build per library of its wheel, each arch list read from that library
    ("bitsandbytes", "0.50.2", "cuda118", "<3,>=2.4", "bitsandbytes", None, None, "6.0 7.0 9.0", "5.0"),
    ("bitsandbytes", "0.50.2", "cuda128", "<3,>=2.4", "bitsandbytes", None, None, "7.0 10.0 12.0", "6.0"),
    ("bitsandbytes", "0.50.2", "cuda132", "<3,>=2.4", "bitsandbytes", None, None, "7.5 12.0", "7.0"),
    ("bitsandbytes", "0.50.1", "cuda126", "<3,>=2.4", "bitsandbytes", None, None, "6.0 7.5 9.0 10.0", "5.0"),
    ("bitsandbytes", "0.50.1", "cuda128", "<3,>=2.4", "bitsandbytes", None, None, "7.0 12.0", "6.0 6.1"),
    ("bitsandbytes", "0.50.1", "cuda132", "<3,>=2.4", "bitsandbytes", None, None, "7.5 12.0", "7.0"),
    ("bitsandbytes", "0.49.2", "cuda129", "<3,>=2.3", "bitsandbytes", None, None, "7.0", "6.0"),
    ("bitsandbytes", "0.48.2", "cuda118", "<3,>=2.3", "bitsandbytes", None, None, "6.0", "5.2"),
    (
        "torch-scatter",
        "2.1.2",
        "pt28cu126",
        "==2.8.*",
        "torch-scatter",
        None,
        "pt28cu126",
        "5.0 6.0 12.0",
        "3.7",
    ),
    ("torch-scatter", "2.1.2", "pt28cu129", "==2.8.*", "torch-scatter", None, "pt28cu129", "7.0 12.0", "6.0"),
    (
        "torch-scatter",
        "2.1.2",
        "pt29cu130",
        "==2.9.*",
        "torch-scatter",
        None,
        "pt29cu130",
        "7.5 12.0 12.1",
        "7.0",
    ),
    (
        "torch-scatter",
        "2.1.2",
        "pt210cu128",
        "==2.10.*",
        "torch-scatter",
        None,
        "pt210cu128",
        "5.0 9.0",
        "3.7",
    ),
    (
        "torch-scatter",
        "2.1.2",
        "pt212cu132",
        "==2.12.*",
        "torch-scatter",
        None,
        "pt212cu132",
        "7.5 10.0",
        "6.1",
    ),
    ("pyg-lib", "0.7.0", "pt29cu126", "==2.9.*", "pyg-lib", None, "pt29cu126", "6.0 9.0", "5.0"),
    (
        "flash-attn",
        "2.8.3",
        "cu12torch2.8",
        "==2.8.*",
        "flash-attn",
        None,
        "cu12torch2.8cxx11abiTRUE",
        "8.0 8.6 9.0 12.0",
        "7.5",
    ),
    (
        "flash-attn",
        "2.8.3",
        "cu12torch2.6",
        "==2.6.*",
        "flash-attn",
        None,
        "cu12torch2.6cxx11abiFALSE",
        "8.0",
        "7.0",
    ),
    (
        "vllm",
        "0.31.0",
        "cu129",
        "==2.13.0",
        "vllm",
        "https://wheels.vllm.ai/0.31.0/cu129",
        "cu129",
        "7.5",
        "7.0",
    ),
    ("onnxruntime-gpu", "1.26.0", "cuda12", None, "onnxruntime-gpu", None, None, "6.0 8.6 9.0", "5.0"),
    ("onnxruntime-gpu", "1.29.0", "cuda13", None, "onnxruntime-gpu", None, None, "7.5 9.0", "7.0"),
    (
        "onnxruntime-gpu",
        "1.29.0",
        "cuda12",
        None,
        "onnxruntime-gpu",
        "https://aiinfra.pkgs.visualstudio.com/PublicPackages/_packaging/onnxruntime-cuda-12/pypi/simple/",
        None,
        "6.1 8.0",
        "5.0",
    ),
]


def test_builds_whose_wheels_were_not_read_are_unconfirmed() -> None:
    """vLLM 0.31.0's wheels and onnxruntime-gpu's on Microsoft's CUDA 12 feed were not read
    (docs/cuda-packages.md): the resolver takes them only with --allow-unconfirmed; the builds
    read from their wheels are confirmed."""
    unread = {
        ("vllm", "0.31.0", "cu129"),
        ("onnxruntime-gpu", "1.29.0", "cuda12"),
    }
    for package, release, build in BUILDS:
        if package.name in ("vllm", "onnxruntime-gpu"):
            key = (package.name, str(release.version), build.name)
            assert (build.unconfirmed is not None) == (key in unread), key


# onnxruntime-gpu's PyPI builds read from their wheels: (release, build, covers, does not cover)
ORT_READ = [
    ("1.31.1", "cuda13", "7.5 8.0 8.6 8.9 9.0 12.0 12.1", "6.0 7.0 10.0 10.3 11.0"),
    ("1.29.0", "cuda13", "7.5 8.0 8.6 8.9 9.0 12.0 12.1", "6.0 7.0 10.0 10.3 11.0"),
    ("1.26.0", "cuda12", "6.0 6.1 7.0 7.5 8.0 8.6 9.0 10.0 12.0", "5.0 5.2"),
]


@pytest.mark.parametrize(("version", "build_name", "covers", "misses"), ORT_READ)
def test_onnxruntime_gpu_builds_read_from_their_wheels(
    version: str, build_name: str, covers: str, misses: str
) -> None:
    """Python 3.11 to 3.14 (no cp310 wheel, even for 1.26.0); the CUDA 13 wheels carry no PTX, so
    no Blackwell datacenter GPU (sm_100) runs them; 1.26.0's CUDA 12 wheel has compute_90 PTX."""
    release, build = _shipped_build("onnxruntime-gpu", version, build_name)
    assert build.unconfirmed is None and build.index_url is None
    assert build.cuda_major == int(build_name.removeprefix("cuda"))
    assert [v for v in ("3.10", "3.11", "3.14", "3.15") if release.python.contains(v)] == ["3.11", "3.14"]
    for cap in covers.split():
        assert archs_cover(build.archs, ComputeCapability.parse(cap)), cap
    for cap in misses.split():
        assert not archs_cover(build.archs, ComputeCapability.parse(cap)), cap


# vLLM releases read from their wheels: (release, torch pin, NVIDIA requirements)
VLLM_READ = [
    ("0.33.0", "==2.14.0", "3.11", ("nvidia-cudnn-frontend>=1.31.0", "nvidia-cutlass-dsl[cu13]==4.8.0")),
    ("0.32.0", "==2.13.0", "3.11", ("nvidia-cudnn-frontend>=1.19.1", "nvidia-cutlass-dsl[cu13]==4.8.0")),
    ("0.31.0", "==2.13.0", "3.10", ("nvidia-cudnn-frontend>=1.19.1", "nvidia-cutlass-dsl[cu13]==4.7.1")),
]


@pytest.mark.parametrize(("version", "torch", "oldest", "requires"), VLLM_READ)
def test_vllm_releases_read_from_their_wheels(
    version: str, torch: str, oldest: str, requires: tuple[str, ...]
) -> None:
    """A CUDA 13.0 build on the default index, confirmed; Python from 3.10 (0.31) or 3.11 to
    3.14; kernels from sm_75, PTX from compute_80 for what comes after (sm_87, sm_110)."""
    release, build = _shipped_build("vllm", version, "cu130")
    assert build.unconfirmed is None
    assert str(build.torch) == torch and build.requires == requires
    assert (build.cuda, build.index_url, build.local_tag) == (Version("13.0"), None, None)
    pythons = [v for v in ("3.9", "3.10", "3.11", "3.14", "3.15") if release.python.contains(v)]
    assert pythons == [v for v in ("3.10", "3.11", "3.14") if Version(v) >= Version(oldest)]
    for cap in ("7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "11.0", "12.0"):
        assert archs_cover(build.archs, ComputeCapability.parse(cap)), cap
    for cap in ("6.1", "7.0", "7.2"):
        assert not archs_cover(build.archs, ComputeCapability.parse(cap)), cap


VLLM_CU12_READ = [
    ("0.26.0", "cu130", "==2.11.0", "3.14", "7.5 8.6 12.0", "7.0"),
    ("0.19.1", "cu129", "==2.10.0", "3.13", "7.0 7.5 8.0 8.6 8.9 9.0 10.0 12.0", "6.1"),
    ("0.16.0", "cu129", "==2.9.1", "3.13", "7.0 8.6 12.0", "6.1"),
    ("0.13.0", "cu129", "==2.9.0", "3.13", "7.0 8.6 12.0", "6.1"),
]


@pytest.mark.parametrize(("version", "build_name", "torch", "newest", "covers", "misses"), VLLM_CU12_READ)
def test_vllm_releases_for_older_torch_read_from_their_wheels(
    version: str, build_name: str, torch: str, newest: str, covers: str, misses: str
) -> None:
    """The newest vLLM pinning each of torch 2.9.0 to 2.11.0, read from its wheel on the default
    index: CUDA 12.9 (libcudart.so.12) to 0.19.1, CUDA 13.0 for 0.26.0; Python 3.10 up."""
    release, build = _shipped_build("vllm", version, build_name)
    assert build.unconfirmed is None and str(build.torch) == torch
    assert (build.cuda, build.index_url, build.local_tag) == (
        Version("13.0" if build_name == "cu130" else "12.9"),
        None,
        None,
    )
    pythons = [v for v in ("3.9", "3.10", "3.13", "3.14", "3.15") if release.python.contains(v)]
    assert pythons == [v for v in ("3.10", "3.13", "3.14") if Version(v) <= Version(newest)]
    for cap in covers.split():
        assert archs_cover(build.archs, ComputeCapability.parse(cap)), cap
    for cap in misses.split():
        assert not archs_cover(build.archs, ComputeCapability.parse(cap)), cap


@pytest.mark.parametrize(
    ("name", "version", "build_name", "torch", "distribution", "index", "tag", "covers", "misses"), FACTS
)
def test_known_facts(
    name: str,
    version: str,
    build_name: str,
    torch: str | None,
    distribution: str,
    index: str | None,
    tag: str | None,
    covers: str,
    misses: str,
) -> None:
    _, build = _shipped_build(name, version, build_name)
    assert (str(build.torch) if build.torch is not None else None) == torch
    assert (build.distribution, build.index_url, build.local_tag) == (distribution, index, tag)
    for cap in covers.split():
        assert archs_cover(build.archs, ComputeCapability.parse(cap)), cap
    for cap in misses.split():
        assert not archs_cover(build.archs, ComputeCapability.parse(cap)), cap
    assert build.requires == REQUIRES.get((name, version), ())


REQUIRES = {
    ("cupy", "14.0.1"): ("cuda-pathfinder>=1.3.3,==1.*",),
    ("cupy", "14.2.0"): ("cuda-pathfinder>=1.3.4,==1.*",),
}
"""The NVIDIA wheels a FACTS row's wheel requires (CuPy 14's library finder, as its METADATA
says); none for the rest."""


def test_flash_attn_2_8_3_post1_has_the_builds_of_2_8_3_on_its_own_asset_page() -> None:
    """The v2.8.3.post1 tag's publish.yml and arch flags are v2.8.3's (no CUDA 13 asset)."""
    package = next(p for p in shipped_packages() if p.name == "flash-attn")
    post, base = package.release(Version("2.8.3.post1")), package.release(Version("2.8.3"))
    assert post is not None and base is not None and post.python == base.python

    def facts(release: PackageRelease) -> list[tuple[object, ...]]:
        return [(b.name, b.cuda, b.torch, b.local_tag, b.archs, b.python) for b in release.builds]

    assert facts(post) == facts(base)
    assert all(b.cuda_major == 12 and b.unconfirmed for b in post.builds)
    assert {b.find_links for b in post.builds} == {
        "https://github.com/Dao-AILab/flash-attention/releases/expanded_assets/v2.8.3.post1"
    }


def test_torch_scatter_builds_past_torch_2_8_are_unconfirmed_and_pyg_lib_0_7_is_per_python() -> None:
    """torch-scatter's builds for torch 2.9.0, 2.10.0 and 2.12.0 come from its workflow's matrix
    at later commits (their pages not read); pyg-lib 0.7.0 has a wheel per Python, none for
    Python 3.14 beside torch 2.9.0."""
    package = next(p for p in shipped_packages() if p.name == "torch-scatter")
    (release,) = package.releases
    newer = {b.name for b in release.builds if b.torch is not None and not b.torch.contains("2.8.0")}
    assert newer == {f"pt{t}{c}" for t in ("29", "210") for c in ("cu126", "cu128", "cu130")} | {
        "pt212cu126",
        "pt212cu130",
        "pt212cu132",
    }
    assert all(b.unconfirmed for b in release.builds if b.name in newer)
    assert not any(b.unconfirmed for b in release.builds if b.name not in newer)
    _, py29 = _shipped_build("pyg-lib", "0.7.0", "pt29cu130")
    _, py212 = _shipped_build("pyg-lib", "0.7.0", "pt212cu132")
    assert py29.python is not None and not py29.python.contains("3.14") and py29.python.contains("3.13")
    assert py212.python is not None and py212.python.contains("3.14")


def test_cupy_13_6_has_no_cuda13_build_and_python_3_9() -> None:
    package = next(p for p in shipped_packages() if p.name == "cupy")
    old = package.release(Version("13.6.0"))
    assert old is not None and [b.name for b in old.builds] == ["cuda12", "cuda12"]
    assert [b.platforms for b in old.builds] == [("linux_x86_64",), ("linux_aarch64",)]
    assert old.python.contains("3.9") and not package.releases[0].python.contains("3.9")


# ---------------------------------------------------------------------------------------------
# What the loader refuses, and overlays

GOOD = {"cuda": "12.8", "archs": ["sm_80"], "source": "https://example.org/b"}
GOOD_BUILD = build_entry("cu128", **GOOD)  # type: ignore[arg-type]


def _build(**changes: object) -> str:
    """The good build with ``changes``."""
    return build_entry("cu128", **{**GOOD, **changes})  # type: ignore[arg-type]


def _package(
    name: str = "xformers", *builds: str, distribution: str | None = None, python: str = ">=3.9"
) -> str:
    """A file of one package with one release (1.0) of ``builds`` (the good build alone)."""
    release = release_entry("1.0", *(builds or (GOOD_BUILD,)), python=python, source="https://example.org/r")
    return packages_file(package_entry(name, release, distribution=distribution))


BAD = [
    (_package(distribution="xformers"), "distribution", "named in colabenv.models.frameworks"),
    (_package("team-ext"), "distribution", "give its distribution name"),
    (_package(python="3.x"), "python", "specifier"),
    (_package("xformers", _build(archs=["sm_8"])), "archs", "not an arch"),
    (_package("xformers", _build(archs=[])), "archs", "arch list"),
    (_package("xformers", _build(cuda="12.8+x")), "cuda", "not a CUDA version"),
    (_package("xformers", _build(requires=["numpy>=2"])), "requires", "not an NVIDIA wheel requirement"),
    (
        _package("xformers", _build(index_url="http://example.org/simple")),
        "index_url",
        "scheme 'http' not allowed",
    ),
    (
        _package("xformers", _build(index_url="https://a.org/s", find_links="https://b.org/l.html")),
        "find_links",
        "not both",
    ),
    (_package("xformers", GOOD_BUILD, GOOD_BUILD), "build", "listed twice"),
    (
        _package("xformers", GOOD_BUILD, _build(platforms=["linux_aarch64", "linux_x86_64"])),
        "build",
        "a build name is listed twice for one platform",
    ),
    (
        _package("xformers", _build(platforms=["linux_arm64"])),
        "build[0].platforms",
        "'linux_arm64' is not a list of platforms (linux_x86_64, linux_aarch64)",
    ),
    (_package("xformers", _build(platforms=[])), "platforms", "expected a list of platforms"),
    (_package("xformers", _build(platforms="linux_aarch64")), "platforms", "expected an array of strings"),
    (
        _package("xformers", _build(unconfirmed=True)),
        "build[0].unconfirmed_reason",
        "an unconfirmed entry needs the reason",
    ),
    (
        _package("xformers", _build(unconfirmed=False, unconfirmed_reason="carried over")),
        "build[0].unconfirmed_reason",
        "only with unconfirmed = true",
    ),
    (_package("xformers", _build(cuda="14.0")), "build cu128", "no driver floor for CUDA 14"),
    (_package("xformers", _build(min_driver="59x.1")), "min_driver", "not a driver version like"),
    (_package("xformers", _build(min_driver="5350")), "min_driver", "or a branch like 535"),
    (
        _package("xformers", _build(min_driver="525.60.13")),
        "build cu128.min_driver",
        "525.60.13 is not above CUDA 12's floor 525.60.13",
    ),
]


@pytest.mark.parametrize(("text", "key", "problem"), BAD)
def test_a_bad_overlay_entry_names_the_file_and_key(
    tmp_path: Path, text: str, key: str, problem: str
) -> None:
    folder = write_packages(tmp_path / "catalog", text)
    with pytest.raises(CatalogOverlayError) as caught:
        overlay = load_overlay(folder, "test")
        with_overlays(shipped_catalog([Framework.TORCH]), [overlay])
    message = str(caught.value)
    assert str(folder / PACKAGES_FILE) in message
    assert key in message and problem in message
    assert "\n" not in message


def test_an_overlay_adds_a_package_and_a_build_of_a_known_release(tmp_path: Path) -> None:
    team_ext = _package("team-ext", distribution="team-ext-cu{major}")
    xformers_cu129 = build_entry(
        "cu129",
        cuda="12.9",
        index_url="https://download.pytorch.org/whl/cu129",
        local_tag="cu129",
        archs=["sm_80"],
        source="https://example.org/team",
    )
    folder = write_packages(
        tmp_path / "catalog",
        team_ext
        + package_entry(
            "xformers",
            release_entry("0.0.34", xformers_cu129, torch="==2.10.0", source="https://example.org/team"),
        ),
    )
    base = shipped_catalog([Framework.TORCH])
    merged = with_overlays(replace(base, packages=shipped_packages()), [load_overlay(folder, "test")])
    team = merged.package("team-ext")
    assert team is not None and team.releases[0].builds[0].distribution == "team-ext-cu12"
    assert team.releases[0].builds[0].overlay == str(folder / PACKAGES_FILE)
    xformers = merged.package("xformers")
    assert xformers is not None
    release = xformers.release(Version("0.0.34"))
    assert release is not None
    assert sorted(b.name for b in release.builds) == ["cu126", "cu128", "cu129", "cu130", "rocm7.1"]
    assert release.source.text == "https://example.org/team"
    assert len(xformers.releases) == len(next(p for p in shipped_packages() if p.name == "xformers").releases)


def test_a_build_listed_again_for_another_platform_stands_in_for_it_there(tmp_path: Path) -> None:
    arm = _build(platforms=["linux_aarch64"], archs=["sm_90", "sm_110"])
    both = _build(platforms=["linux_x86_64", "linux_aarch64"])
    text = packages_file(
        package_entry("xformers", release_entry("1.0", GOOD_BUILD, arm)),
        package_entry("cupy", release_entry("1.0", both)),
    )
    xformers, cupy = load_overlay(write_packages(tmp_path / "catalog", text), "test").packages
    (release,) = xformers.releases
    assert release.builds[0].platforms == ("linux_x86_64",), "linux_x86_64 when absent"
    assert release.build("cu128") is release.builds[0], "the catalog platform's by default"
    assert release.build("cu128", "linux_aarch64") is release.builds[1]
    (on_arm,) = release.on_platform("linux_aarch64").builds
    assert on_arm.platforms == ("linux_aarch64",) and [str(a) for a in on_arm.archs] == ["sm_90", "sm_110"]
    assert release.on_platform("linux_x86_64").builds == (release.builds[0],)
    assert release.listed_for("linux_aarch64").builds == (on_arm,)
    (cupy_build,) = cupy.releases[0].builds
    assert cupy_build.platforms == ("linux_x86_64", "linux_aarch64")
    assert cupy.releases[0].on_platform("linux_aarch64").builds == (cupy_build,)


def test_an_overlay_build_for_another_platform_is_added_beside_the_shipped_one(tmp_path: Path) -> None:
    arm = build_entry(
        "cuda12", cuda="12", platforms=["linux_aarch64"], archs=["sm_90"], source="https://e.org/t"
    )
    folder = write_packages(
        tmp_path / "catalog", packages_file(package_entry("cupy", release_entry("13.6.0", arm)))
    )
    base = shipped_catalog([Framework.TORCH])
    merged = with_overlays(replace(base, packages=shipped_packages()), [load_overlay(folder, "test")])
    cupy = merged.package("cupy")
    release = cupy.release(Version("13.6.0")) if cupy is not None else None
    assert release is not None
    assert [(b.name, b.platforms) for b in release.builds] == [
        ("cuda12", ("linux_x86_64",)),
        ("cuda12", ("linux_aarch64",)),
    ]
    assert [str(a) for a in release.builds[1].archs] == ["sm_90"], "the overlay's wins for its platform"


AARCH64_FACTS = [
    # (package, release, build): covered on aarch64, not covered there, not covered by the x86-64 build
    ("cupy", "14.2.0", "cuda13", ["8.7", "9.0", "11.0"], ["7.0"], "11.0"),
    ("cupy", "14.0.1", "cuda12", ["7.2", "8.7", "9.0"], [], None),
    ("cupy", "13.6.0", "cuda12", ["7.2", "8.7", "9.0"], [], None),
    ("bitsandbytes", "0.50.1", "cuda130", ["9.0", "11.0", "12.1"], ["7.0"], "11.0"),
    ("bitsandbytes", "0.49.2", "cuda126", ["7.5", "9.0", "10.0"], ["7.0", "6.0"], None),
    ("bitsandbytes", "0.48.2", "cuda130", ["9.0", "11.0", "12.0"], ["7.0"], "11.0"),
    # read from the aarch64 wheels: vLLM's carry Jetson's sm_87 (and sm_110 with CUDA 13) and no
    # code below sm_80; onnxruntime-gpu's CUDA provider has cubins for 8.9, 9.0, 12.0, 12.1 alone
    ("vllm", "0.33.0", "cu130", ["8.0", "8.6", "8.7", "9.0", "11.0", "12.1"], ["7.5", "7.0"], None),
    ("vllm", "0.13.0", "cu129", ["8.0", "8.7", "9.0", "12.0"], ["7.5", "7.0"], None),
    ("onnxruntime-gpu", "1.31.1", "cuda13", ["8.9", "9.0", "12.0", "12.1"], ["8.0", "8.6", "11.0"], "11.0"),
    ("onnxruntime-gpu", "1.29.0", "cuda13", ["9.0", "12.1"], ["8.0", "11.0"], "11.0"),
    ("cudf", "26.10.2", "cuda13", ["7.5", "9.0", "12.1"], ["7.0"], None),
    ("cuml", "26.2.0", "cuda12", ["7.0", "9.0", "12.0"], ["6.0"], None),
]


@pytest.mark.parametrize(("name", "version", "build_name", "covers", "lacks", "x86_lacks"), AARCH64_FACTS)
def test_aarch64_builds_carry_their_own_arch_lists(
    name: str, version: str, build_name: str, covers: list[str], lacks: list[str], x86_lacks: str | None
) -> None:
    release, x86 = _shipped_build(name, version, build_name)
    arm = release.build(build_name, "linux_aarch64")
    assert arm is not None and arm.platforms == ("linux_aarch64",) and arm.cuda == x86.cuda
    for cap in covers:
        assert archs_cover(arm.archs, ComputeCapability.parse(cap)), cap
    for cap in lacks:
        assert not archs_cover(arm.archs, ComputeCapability.parse(cap)), cap
    if x86_lacks is not None:
        assert not archs_cover(x86.archs, ComputeCapability.parse(x86_lacks))
    assert "aarch64" in arm.source.text and arm.source.text.startswith("https://github.com/")


AARCH64_PACKAGES = {
    "cupy",
    "bitsandbytes",
    "cudf",
    "cuml",
    "vllm",
    "onnxruntime-gpu",
    "flash-attn-4",
    "pyg-lib",
}
"""The CUDA packages with linux_aarch64 builds; xformers, flash-attn and torch-scatter have none
on the package index or in their build files for the releases listed."""


def test_which_packages_have_aarch64_builds_and_which_are_unconfirmed() -> None:
    found = {(p.name, str(r.version)) for p, r, b in BUILDS if "linux_aarch64" in b.platforms}
    assert {name for name, _ in found} == AARCH64_PACKAGES
    assert ("onnxruntime-gpu", "1.26.0") not in found and ("pyg-lib", "0.7.0") not in found
    for package, release, build in BUILDS:
        if "linux_aarch64" in build.platforms:
            unread = str(release.version) == "0.50.2" or package.name == "pyg-lib"
            assert (build.unconfirmed is not None) == unread, build
            assert (build.free_threaded is not None) == (package.name == "onnxruntime-gpu"), build
            assert build.platforms == ("linux_aarch64",)
            x86 = release.build(build.name)
            assert x86 is not None and (x86.torch, x86.requires) == (build.torch, build.requires)
            assert (x86.cuda, x86.min_driver, x86.extra) == (build.cuda, build.min_driver, build.extra)
            if not unread and package.name not in {"cupy", "bitsandbytes", "flash-attn-4"}:
                assert "aarch64.whl (sha256 " in build.source.text, "read from the aarch64 wheel"


def test_a_folder_with_only_a_packages_file_is_an_overlay(tmp_path: Path) -> None:
    folder = write_packages(tmp_path / "catalog", _package("cupy"))
    assert load_overlay(folder, "test").packages[0].name == "cupy"


# (package, release, build): (distribution, python, NVIDIA wheels required, other packages required)
RAPIDS = [
    (
        "cudf",
        "26.10.2",
        "cuda13",
        "cudf-cu13",
        ">=3.11",
        (
            "cuda-bindings>=13.0.1,<14.0",
            "cuda-pathfinder",
            "cuda-toolkit[nvrtc]==13.*",
            "nvidia-libnvcomp-cu13==5.3.0.16",
            "nvidia-nvjitlink>=13.3,<14",
        ),
        "cupy>=14.0.1,!=14.1.0",
    ),
    (
        "cudf",
        "26.8.0",
        "cuda12",
        "cudf-cu12",
        ">=3.11",
        (
            "cuda-bindings>=12.9.2,<13.0",
            "cuda-toolkit[nvcc,nvrtc]==12.*",
            "nvidia-cufile-cu12",
            "nvidia-libnvcomp-cu12==5.3.0.16",
            "nvidia-nvjitlink-cu12>=12.9,<13",
        ),
        "cupy>=14.0.1,!=14.1.0",
    ),
    (
        "cudf",
        "26.8.0",
        "cuda13",
        "cudf-cu13",
        ">=3.11",
        (
            "cuda-bindings>=13.0.1,<14.0",
            "cuda-toolkit[cufile,nvcc,nvrtc]==13.*",
            "nvidia-libnvcomp-cu13==5.3.0.16",
            "nvidia-nvjitlink>=13.3,<14",
        ),
        "cupy>=14.0.1,!=14.1.0",
    ),
    (
        "cudf",
        "26.6.0",
        "cuda12",
        "cudf-cu12",
        ">=3.11",
        ("cuda-python>=12.9.2,<13.0", "cuda-toolkit[nvcc,nvrtc]==12.*", "nvidia-libnvcomp-cu12==5.2.0.13"),
        "cupy>=13.6.0,!=14.0.0,!=14.1.0",
    ),
    (
        "cudf",
        "26.2.1",
        "cuda12",
        "cudf-cu12",
        ">=3.10",
        ("cuda-python>=12.9.2,<13.0", "cuda-toolkit[nvcc,nvrtc]==12.*", "nvidia-libnvcomp-cu12==5.1.0.21"),
        "cupy>=13.6.0",
    ),
    (
        "cuml",
        "26.10.0",
        "cuda12",
        "cuml-cu12",
        ">=3.11",
        (
            "cuda-bindings>=12.9.2,<13.0",
            "cuda-toolkit[cublas,cufft,curand,cusolver,cusparse]==12.*",
            "nvidia-nvjitlink-cu12>=12.9,<13",
        ),
        "cudf==26.10.* cupy>=14.0.1,!=14.1.0",
    ),
    (
        "cuml",
        "26.6.0",
        "cuda12",
        "cuml-cu12",
        ">=3.11",
        (
            "cuda-python>=12.9.2,<13.0",
            "cuda-toolkit[cublas,cufft,curand,cusolver,cusparse]==12.*",
            "nvidia-nvjitlink-cu12>=12.9,<13",
        ),
        "cudf==26.6.* cupy>=13.6.0,!=14.0.0,!=14.1.0",
    ),
    (
        "cuml",
        "26.2.0",
        "cuda12",
        "cuml-cu12",
        ">=3.10",
        ("cuda-python>=12.9.2,<13.0", "cuda-toolkit[cublas,cufft,curand,cusolver,cusparse]==12.*"),
        "cudf==26.2.* cupy>=13.6.0",
    ),
]


@pytest.mark.parametrize(
    ("name", "version", "build_name", "distribution", "python", "requires", "needs"), RAPIDS
)
def test_rapids_facts(
    name: str,
    version: str,
    build_name: str,
    distribution: str,
    python: str,
    requires: tuple[str, ...],
    needs: str,
) -> None:
    release, build = _shipped_build(name, version, build_name)
    assert (build.distribution, str(release.python), build.requires) == (distribution, python, requires)
    assert sorted(f"{n}{s}" for n, s in release.needs) == sorted(_normalized(t) for t in needs.split())
    assert archs_cover(build.archs, ComputeCapability(7, 5)) and archs_cover(
        build.archs, ComputeCapability(12, 0)
    )
    assert archs_cover(build.archs, ComputeCapability(7, 0)) is (build.cuda_major == 12)


def _normalized(text: str) -> str:
    """``cupy>=13.6.0,!=14.0.0`` as the loader writes it (its specifier normalized)."""
    name = text.split(">")[0].split("=")[0].split("!")[0]
    return f"{name}{SpecifierSet(text[len(name) :])}"


def test_pyg_lib_builds_carry_the_arch_list_of_their_torch_build_from_sm_60() -> None:
    """pyg-lib's setup.py compiles for the arch list of the torch it is built against, less
    what is below sm_60: each build's list must be torch.toml's, so filtered (kept in step)."""
    catalog = shipped_catalog([Framework.TORCH])
    package = next(p for p in shipped_packages() if p.name == "pyg-lib")
    seen = 0
    for release in package.releases:
        for build in release.builds:
            assert build.torch is not None
            (pin,) = list(build.torch)
            assert pin.operator == "==" and pin.version.endswith(".*"), "a page serves a torch minor"
            page_torch = pin.version.replace(".*", ".0")
            torch = catalog.release(Framework.TORCH, Version(page_torch))
            # an aarch64 build is built against torch's aarch64 wheel of the same CUDA
            (platform,) = build.platforms
            variant = torch.on_platform(platform).variant(build.name[-5:]) if torch is not None else None
            assert variant is not None and platform in variant.platforms, build.name
            assert build.archs == tuple(a for a in variant.archs if a.capability.major >= 6), build.name
            assert build.local_tag == build.name and build.find_links is not None
            assert build.find_links.endswith(f"torch-{page_torch}+{variant.name}.html")
            seen += 1
    assert seen == 32


def test_flash_attn_4_is_one_pure_python_release_whose_cuda_13_form_is_an_extra() -> None:
    """4.0.0b36's wheel: any torch, nvidia-cutlass-dsl, the cu13 extra for CUDA 13; kernels
    compiled at first use for what its interface accepts forward and backward (9.x to 12.x)."""
    package = next(p for p in shipped_packages() if p.name == "flash-attn-4")
    (release,) = package.releases
    assert str(release.version) == "4.0.0b36" and release.python == SpecifierSet(">=3.10")
    builds = {b.name: b for b in release.builds}
    assert set(builds) == {"cu12", "cu13"}
    assert (builds["cu12"].extra, builds["cu13"].extra) == (None, "cu13")
    for build in builds.values():
        assert build.distribution == "flash-attn-4" and build.local_tag is None
        assert build.index_url is None and build.find_links is None and build.unconfirmed is None
        assert build.requires == ("nvidia-cutlass-dsl>=4.6.2",)
        assert build.torch is not None and build.torch.contains("2.15.0")
        for cap in ("9.0", "10.0", "10.3", "11.0", "12.0", "12.1"):
            assert archs_cover(build.archs, ComputeCapability.parse(cap)), cap
        for cap in ("7.5", "8.0", "8.6", "8.9"):
            assert not archs_cover(build.archs, ComputeCapability.parse(cap)), cap
