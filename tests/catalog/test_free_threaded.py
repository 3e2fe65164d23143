"""The catalog's free-threaded wheels (issue 36): which builds of the frameworks and of the CUDA
packages have ``cp313t``/``cp314t`` wheels, each fact from a source that lists the files or,
marked unconfirmed, from a release's validation matrix (what upstream tested), and the loader's
checks of the two keys, one rule for both."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from colabenv.catalog.load import load_catalog, load_overlay, shipped_catalog, with_overlays
from colabenv.catalog.packages import shipped_packages
from colabenv.errors import CatalogError, CatalogOverlayError
from colabenv.models import Framework, PackageBuild
from tests.support.catalogs import DRIVERS, TORCH, write_catalog
from tests.support.package_entries import (
    build_entry,
    package_entry,
    packages_file,
    release_entry,
    write_packages,
)

CATALOG = load_catalog()
X86, ARM = "linux_x86_64", "linux_aarch64"

# (framework, release, variant, platform, Python, "confirmed" | "unconfirmed" | None)
FREE_THREADED = [
    # no source lists a free-threaded torch file before 2.7
    ("torch", "2.6.0", "cu126", X86, "3.13", None),
    # the cu128 index page of 2.7.0 (astral-sh/uv#13195) lists cp313t for both platforms
    ("torch", "2.7.0", "cu128", X86, "3.13", "confirmed"),
    # the PyPI files of 2.7.1 (astral-sh/uv#14237's lock): cp313t
    ("torch", "2.7.1", "cu126", X86, "3.13", "confirmed"),
    # test-infra's release/2.8 matrix tests 3.13t: tested, files not read
    ("torch", "2.8.0", "cu128", X86, "3.13", "unconfirmed"),
    ("torch", "2.8.0", "cu128", X86, "3.14", None),
    # nixpkgs' torch binary-hashes.nix: 2.9.1+cu126 cp313t and cp314t files with their hashes
    ("torch", "2.9.1", "cu126", X86, "3.13", "confirmed"),
    ("torch", "2.9.1", "cu126", X86, "3.14", "confirmed"),
    ("torch", "2.9.1", "cu128", X86, "3.14", "unconfirmed"),
    ("torch", "2.9.1", "cu130", ARM, "3.14", "unconfirmed"),
    ("torch", "2.11.0", "cpu", X86, "3.13", "unconfirmed"),
    # 3.13t dropped from the matrix of release/2.12 on
    ("torch", "2.12.0", "cu130", X86, "3.13", None),
    ("torch", "2.12.0", "cu130", X86, "3.14", "unconfirmed"),
    ("torch", "2.14.1", "cu130", ARM, "3.14", "unconfirmed"),
    # the PyPI files of 2.15.0: cp314t and cp315t
    ("torch", "2.15.0", "cu132", X86, "3.14", "confirmed"),
    ("torch", "2.15.0", "cu132", X86, "3.15", "confirmed"),
    # jaxlib 0.12.0's PyPI files: cp314t, cp315t
    ("jax", "0.12.0", "cpu", X86, "3.14", "confirmed"),
    # the package index's file lists of jaxlib and the plugins (read 2026-11-29)
    ("jax", "0.12.0", "cuda12", X86, "3.14", "confirmed"),
    ("jax", "0.11.2", "cpu", X86, "3.14", "confirmed"),
    ("jax", "0.11.0", "cuda13", X86, "3.13", None),  # cp314t alone from 0.11.0
    ("jax", "0.7.2", "cuda13", ARM, "3.13", "confirmed"),
    ("jax", "0.5.3", "cuda12", X86, "3.13", "confirmed"),
    ("jax", "0.5.3", "cpu", X86, "3.13", None),  # jaxlib 0.5.3: cp313t for x86-64, none for aarch64
    ("jax", "0.4.35", "cuda12", X86, "3.13", None),
    ("jax", "0.12.0", "rocm7", X86, "3.14", None),  # jax-rocm7-plugin has no cp3XYt file
    ("tensorflow", "2.20.0", "cpu", X86, "3.13", None),
]


@pytest.mark.parametrize(
    ("framework", "version", "name", "platform", "python", "expected"),
    FREE_THREADED,
    ids=[f"{f}-{v}-{n}-{p}-{py}t" for f, v, n, p, py, _ in FREE_THREADED],
)
def test_free_threaded_wheels_are_recorded_as_their_source_lists_them(
    framework: str, version: str, name: str, platform: str, python: str, expected: str | None
) -> None:
    release = CATALOG.release(Framework(framework), Version(version))
    assert release is not None
    variant = release.on_platform(platform).variant(name)
    assert variant is not None
    assert platform in variant.platforms or variant.is_cpu
    ranged = variant.free_threaded
    has = ranged is not None and ranged.contains(Version(python)) and release.python.contains(Version(python))
    if expected is None:
        assert not has
        return
    assert has, variant.free_threaded
    if expected == "confirmed":
        assert variant.free_threaded_unconfirmed is None
    else:
        reason = variant.free_threaded_unconfirmed
        assert reason is not None and "validation matrix" in reason, reason


def test_every_free_threaded_fact_has_its_source_and_no_abi3_stands_for_one() -> None:
    for release in CATALOG.releases:
        for variant in release.variants:
            if variant.free_threaded is None:
                assert variant.free_threaded_unconfirmed is None
                continue
            sourced = "free-threaded wheels:" in variant.source.text or variant.free_threaded_unconfirmed
            assert sourced, (release.version, variant.name)
            assert not any(spec.version < "3.13" for spec in variant.free_threaded if ">" in spec.operator)


def _overlay(tmp_path: Path, variant_lines: str) -> Path:
    release = TORCH.replace('name = "cu124"\n', f'name = "cu124"\n{variant_lines}', 1)
    return write_catalog(tmp_path, drivers=DRIVERS, torch=release)


@pytest.mark.parametrize(
    ("lines", "words"),
    [
        ('free_threaded_unconfirmed = "tested only"\n', "free_threaded_unconfirmed: only with free_threaded"),
        ('free_threaded = ">=3.13"\nfree_threaded_unconfirmed = ""\n', "free_threaded_unconfirmed"),
        ('free_threaded = "3.13t"\n', "free_threaded"),
    ],
)
def test_a_malformed_free_threaded_entry_is_a_catalog_error(tmp_path: Path, lines: str, words: str) -> None:
    with pytest.raises(CatalogError, match=words):
        load_catalog(_overlay(tmp_path, lines))


def test_a_free_threaded_entry_loads_with_its_reason(tmp_path: Path) -> None:
    lines = 'free_threaded = ">=3.13"\nfree_threaded_unconfirmed = "tested, not read"\n'
    directory = _overlay(tmp_path, lines)
    (release,) = [r for r in load_catalog(directory).releases if r.framework is Framework.TORCH]
    variant = release.variant("cu124")
    assert variant is not None and variant.free_threaded is not None
    assert variant.free_threaded.contains("3.13") and variant.free_threaded_unconfirmed == "tested, not read"


# The CUDA packages' free-threaded wheels: (package, release, build, Python, "confirmed" | None),
# each read from the package index's file list (the cpXY-cpXYt file, or a py3-none file any
# Python installs) on 2026-11-29.
PACKAGE_FREE_THREADED = [
    # cupy_cuda12x-14.2.0-cp314-cp314t-manylinux2014_x86_64.whl; no cp313t file (cupy/cupy#9973,
    # weiji14/cog3pio#96: 14.1.0 has 3.14t wheels only)
    ("cupy", "14.2.0", "cuda12", "3.14", "confirmed"),
    ("cupy", "14.2.0", "cuda13", "3.14", "confirmed"),
    ("cupy", "14.2.0", "cuda12", "3.13", None),
    ("cupy", "14.0.1", "cuda12", "3.14", None),
    ("cupy", "13.6.0", "cuda12", "3.14", None),
    # onnxruntime_gpu-1.31.1-cp313-cp313t-... and -cp314-cp314t-...
    ("onnxruntime-gpu", "1.31.1", "cuda13", "3.13", "confirmed"),
    ("onnxruntime-gpu", "1.31.1", "cuda13", "3.14", "confirmed"),
    ("onnxruntime-gpu", "1.26.0", "cuda12", "3.14", "confirmed"),
    # the onnxruntime-cuda-12 feed's wheels were not read
    ("onnxruntime-gpu", "1.29.0", "cuda12", "3.14", None),
    # bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl: no ABI tag, any Python
    ("bitsandbytes", "0.50.2", "cuda128", "3.14", "confirmed"),
    ("bitsandbytes", "0.48.2", "cuda126", "3.13", "confirmed"),
    # xformers-0.0.35-py39-none-manylinux_2_28_x86_64.whl (the cu128 build, no local tag); its
    # PyTorch index builds were not read; 0.0.34 and before are cp39-abi3
    ("xformers", "0.0.35", "cu128", "3.14", "confirmed"),
    ("xformers", "0.0.35", "cu126", "3.14", None),
    ("xformers", "0.0.34", "cu128", "3.14", None),
    # cp38-abi3, cp311-abi3: the free-threaded ABI loads no abi3 wheel
    ("vllm", "0.33.0", "cu130", "3.14", None),
    ("cudf", "26.10.2", "cuda12", "3.14", None),
]


@pytest.mark.parametrize(
    ("package", "version", "name", "python", "expected"),
    PACKAGE_FREE_THREADED,
    ids=[f"{p}-{v}-{n}-{py}t" for p, v, n, py, _ in PACKAGE_FREE_THREADED],
)
def test_cuda_packages_free_threaded_wheels_are_recorded_as_the_index_lists_them(
    package: str, version: str, name: str, python: str, expected: str | None
) -> None:
    build = _package_build(package, version, name)
    ranged = build.free_threaded
    has = ranged is not None and ranged.contains(Version(python))
    assert has == (expected is not None), ranged
    if expected is not None:
        assert build.free_threaded_unconfirmed is None


def _package_build(package: str, version: str, name: str) -> PackageBuild:
    (found,) = [p for p in shipped_packages() if p.name == package]
    release = found.release(Version(version))
    assert release is not None
    build = release.build(name)
    assert build is not None
    return build


def test_every_package_free_threaded_fact_has_its_source_and_starts_at_3_13() -> None:
    for package in shipped_packages():
        for release in package.releases:
            for build in release.builds:
                if build.free_threaded is None:
                    assert build.free_threaded_unconfirmed is None
                    continue
                assert "free-threaded wheels:" in build.source.text, (
                    package.name,
                    release.version,
                    build.name,
                )
                lower = [s for s in build.free_threaded if ">" in s.operator]
                assert lower and all(Version(s.version) >= Version("3.13") for s in lower)


def _package_overlay(tmp_path: Path, **keys: str) -> Path:
    build = build_entry("cu128", cuda="12.8", archs=["sm_80"], **keys)  # type: ignore[arg-type]
    release = release_entry("1.0", build, python=">=3.9")
    return write_packages(tmp_path / "catalog", packages_file(package_entry("xformers", release)))


@pytest.mark.parametrize(
    ("keys", "words"),
    [
        ({"free_threaded_unconfirmed": "tested only"}, "free_threaded_unconfirmed: only with free_threaded"),
        ({"free_threaded": ">=3.13", "free_threaded_unconfirmed": ""}, "free_threaded_unconfirmed"),
        ({"free_threaded": "3.13t"}, "free_threaded"),
    ],
)
def test_a_malformed_free_threaded_package_build_is_an_overlay_error_naming_the_key(
    tmp_path: Path, keys: dict[str, str], words: str
) -> None:
    folder = _package_overlay(tmp_path, **keys)
    with pytest.raises(CatalogOverlayError, match=words) as caught:
        with_overlays(shipped_catalog([Framework.TORCH]), [load_overlay(folder, "test")])
    assert "build[0].free_threaded" in str(caught.value) and "\n" not in str(caught.value)


def test_a_package_build_loads_its_free_threaded_pythons_and_reason(tmp_path: Path) -> None:
    folder = _package_overlay(tmp_path, free_threaded=">=3.13", free_threaded_unconfirmed="tested, not read")
    catalog = with_overlays(shipped_catalog([Framework.TORCH]), [load_overlay(folder, "test")])
    package = catalog.package("xformers")
    assert package is not None
    build = next(b for r in package.releases if r.version == Version("1.0") for b in r.builds)
    assert build.free_threaded is not None and build.free_threaded.contains("3.14")
    assert build.free_threaded_unconfirmed == "tested, not read"
