"""``colabenv catalog refresh packages`` beyond x86-64 CUDA wheels, against stand-in wheels on
127.0.0.1 (tests/support/refresh_package_platform_standins.py): the free-threaded Pythons a
build's ``cp3XYt`` files serve (written for a new release, compared for a known one), the
releases with ``manylinux_*_aarch64`` files (a new build written again for linux_aarch64, a
known build's platforms held to them), the ROCm builds on the pages read (one line per package,
or the build read), and a malformed wheel file name (one line with its URL)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.catalog.load import parse_document
from colabenv.catalog.packages import cuda_packages
from colabenv.errors import CatalogOverlayError
from colabenv.models import CudaPackage
from tests.support.fixtures import Runner
from tests.support.refresh_package_platform_standins import build_package_platform_indexes
from tests.support.refreshing import refresh_standins


@pytest.fixture(scope="module")
def standins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("refresh-package-platforms")
    build_package_platform_indexes(root)
    return root


@pytest.fixture
def refreshed(runner: Runner, standins: Path, tmp_path: Path) -> tuple[Path, str, str, int]:
    out = tmp_path / "team-catalog"
    code, stdout, stderr = refresh_standins(
        runner, "packages", standins, out, "--archs", "carry", pytorch=True
    )
    return out / "cuda_packages.toml", stdout, stderr, code


def _packages(path: Path) -> dict[str, CudaPackage]:
    doc = parse_document(path, path.read_bytes(), CatalogOverlayError)
    return {str(p.name): p for p in cuda_packages(doc, str(path))}


def test_a_new_builds_free_threaded_files_are_written(refreshed: tuple[Path, str, str, int]) -> None:
    path, stdout, stderr, code = refreshed
    assert code == 1, stderr
    new = _packages(path)["cupy"].release(Version("99.0.0"))
    assert new is not None
    build = new.build("cu12")
    assert build is not None and build.free_threaded == SpecifierSet(">=3.13,<3.15")
    assert build.free_threaded_unconfirmed is None, "the files were seen"
    assert new.python == SpecifierSet(">=3.12,<3.13"), "a cp3XYt file widens no Python range"
    assert 'free_threaded = ">=3.13,<3.15"' in path.read_text(encoding="utf-8")
    said = "; free-threaded wheels seen for 1 build(s) (cupy 99.0.0 cu12 3.13t, 3.14t)"
    assert stdout.rstrip().endswith(said)


def test_a_known_builds_free_threaded_key_is_held_to_its_files(refreshed: tuple[Path, str, str, int]) -> None:
    path, _stdout, stderr, _code = refreshed
    assert (
        "colabenv: contradiction: xformers 0.0.98 cu128: free_threaded: the catalog has none, the "
        "index has cp3XYt files for >=3.14,<3.15 (the catalog's entry is kept)" in stderr
    )
    assert (
        "colabenv: note: cupy 98.0.0 cu12: its cp3XYt files confirm free_threaded "
        "(free_threaded_unconfirmed can go)" in stderr
    )
    assert "xformers 0.0.98 cu126: free_threaded" not in stderr, "no t file, none in the catalog"
    kept = _packages(path)["xformers"].release(Version("0.0.98"))
    build = kept.build("cu128") if kept is not None else None
    assert build is not None and build.free_threaded is None, "reported, not written"


def test_a_new_build_with_aarch64_files_is_written_for_linux_aarch64_too(
    refreshed: tuple[Path, str, str, int],
) -> None:
    path, stdout, stderr, _code = refreshed
    reason = (
        "its arch list and requirements are the linux_x86_64 wheel's (the linux_aarch64 wheel was not read)"
    )
    file = "cupy_cuda12x-99.0.0-cp312-cp312-manylinux_2_28_aarch64.whl"
    assert (
        "colabenv: note: cupy 99.0.0 cu12: 1 linux_aarch64 file(s) on the index DEFAULT/simple/ "
        f"(manylinux_2_28_aarch64; {file}): written for linux_aarch64 too "
        f'(platforms = ["linux_aarch64"]), unconfirmed: {reason}' in stderr
    )
    new = _packages(path)["cupy"].release(Version("99.0.0"))
    assert new is not None
    x86, arm = new.build("cu12"), new.build("cu12", "linux_aarch64")
    assert x86 is not None and x86.platforms == ("linux_x86_64",)
    carried = "the arch list is carried over from cu12 of the release before"  # --archs carry
    assert x86.unconfirmed is not None and x86.unconfirmed.endswith(carried), "the x86-64 cu12, not its twin"
    assert arm is not None and arm.platforms == ("linux_aarch64",)
    assert arm.unconfirmed == f"{x86.unconfirmed}; {reason} ({file})"
    assert (arm.archs, arm.requires, arm.cuda) == (x86.archs, x86.requires, x86.cuda)
    assert arm.free_threaded is None, "the aarch64 cp3XYt files were not read"
    assert 'platforms = ["linux_aarch64"]' in path.read_text(encoding="utf-8")
    assert "cupy 99.0.0 cu12 (linux_aarch64)" not in stdout, "a new release, not a build added to one"
    assert "cupy 98.0.0 cu12: 1 linux_aarch64" not in stderr


def test_a_known_builds_platforms_are_held_to_the_aarch64_files(
    refreshed: tuple[Path, str, str, int],
) -> None:
    path, _stdout, stderr, code = refreshed
    assert code == 1, stderr
    assert (
        "colabenv: contradiction: xformers 0.0.98 cu128: platforms: the catalog lists it for "
        "linux_x86_64 only, 1 linux_aarch64 file(s) on the index DEFAULT/simple/ "
        "(manylinux_2_28_aarch64; xformers-0.0.98-cp312-cp312-manylinux_2_28_aarch64.whl) "
        "(the catalog's entry is kept)" in stderr
    )
    assert (
        "colabenv: contradiction: cupy 98.0.0 cu12: platforms: the catalog lists it for "
        "linux_aarch64, the index DEFAULT/simple/ has no linux_aarch64 file (the catalog's entry is kept)"
        in stderr
    )
    assert "xformers 0.0.98 cu126: platforms" not in stderr, "neither an aarch64 file nor build"
    kept = _packages(path)["xformers"].release(Version("0.0.98"))
    assert kept is not None and all(b.platforms == ("linux_x86_64",) for b in kept.builds), "not written"


def test_rocm_builds_are_said_one_line_per_package(refreshed: tuple[Path, str, str, int]) -> None:
    _path, _stdout, stderr, _code = refreshed
    lines = stderr.splitlines()
    assert [line for line in lines if "ROCm" in line] == [
        "colabenv: note: cupy: no ROCm build of the releases read (98.0.0, 99.0.0): no +rocmX.Y "
        "wheel of cupy-cuda11x, cupy-cuda12x, cupy-cuda13x on the indexes and pages read",
        # read as a ROCm build now (tests/curation/test_refresh_package_rocm.py): with --archs
        # carry and no ROCm build before, it has no gfx list
        "colabenv: note: xformers 0.0.98 rocm6.4 left out: no gfx list (the wheels were not read "
        "(--archs carry); no ROCm build before to carry it from)",
    ]


def test_a_malformed_wheel_file_name_is_one_line_with_its_url(refreshed: tuple[Path, str, str, int]) -> None:
    _path, _stdout, stderr, _code = refreshed
    assert "Traceback" not in stderr
    bad = "DEFAULT/files/cupy_cuda12x-99.0.0-cp312-manylinux_2_28_aarch64.whl"
    assert [line for line in stderr.splitlines() if bad in line] == [
        f"colabenv: note: {bad}: not a wheel file name that can be read (Invalid wheel filename "
        "(wrong number of parts): 'cupy_cuda12x-99.0.0-cp312-manylinux_2_28_aarch64'); left aside"
    ]
