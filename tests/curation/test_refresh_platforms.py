"""``colabenv catalog refresh torch`` beyond x86-64 CUDA/CPU, against stand-in indexes on 127.0.0.1
(tests/support/refresh_platform_standins.py): the PyTorch index's ROCm builds with their gfx lists
read from the HIP offload bundles of torch's own libraries; its linux_aarch64 builds; the
free-threaded Pythons each build has wheels for."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.catalog.load import load_overlay
from colabenv.models import Framework
from tests.support.fixtures import Runner
from tests.support.refresh_platform_standins import (
    AARCH64_CU132,
    TORCH_92_PINS,
    TURING,
    build_platform_indexes,
    refresh_torch,
)


@pytest.fixture(scope="module")
def standins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("refresh-platforms")
    build_platform_indexes(root)
    return root


@pytest.fixture
def refreshed(runner: Runner, standins: Path, tmp_path: Path) -> Iterator[tuple[Path, str, str]]:
    out = tmp_path / "team-catalog"
    stdout, stderr, code = refresh_torch(runner, standins, out)
    assert code in (0, 1), stderr
    yield out / "torch.toml", stdout, stderr


def test_refresh_proposes_a_releases_rocm_builds_with_the_gfx_its_libraries_carry(
    refreshed: tuple[Path, str, str],
) -> None:
    path, _stdout, stderr = refreshed
    written = path.read_text(encoding="utf-8")
    new = {str(r.version): r for r in load_overlay(path.parent, "test", [Framework.TORCH]).releases}["9.2.0"]
    rocm71 = new.variant("rocm7.1")
    assert rocm71 is not None and rocm71.unconfirmed is None
    assert rocm71.rocm == Version("7.1") and rocm71.cuda is None and not rocm71.archs
    assert rocm71.gfx == ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"), (
        "torch's own libraries' targets, features dropped; hipBLASLt's narrower list is not torch's"
    )
    assert rocm71.index_url == "https://download.pytorch.org/whl/rocm7.1"
    assert rocm71.local_tag == "rocm7.1"
    assert rocm71.python == SpecifierSet(">=3.12,<3.13"), "its wheels are cp312 only"
    assert "/torch/" in rocm71.source.text and "torch-9.2.0+rocm7.1-cp312" in rocm71.source.text
    assert "libtorch_hip.so" in rocm71.source.text
    assert 'gfx = ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"]' in written

    rocm70 = new.variant("rocm7.0")
    assert rocm70 is not None and rocm70.gfx == ("gfx90a", "gfx942", "gfx1030", "gfx1100"), "the catalog's"
    assert rocm70.unconfirmed is not None and "carried over from 9.1.0 rocm7.0" in rocm70.unconfirmed
    assert "no HIP offload bundle" in rocm70.unconfirmed
    assert new.variant("rocm6.9") is None
    assert "torch 9.2.0 rocm6.9 left out: no gfx list" in stderr
    assert (
        "contradiction: torch 9.1.0 rocm7.0: gfx: the catalog has gfx90a gfx942 gfx1030 gfx1100, "
        "torch's libraries in the wheel carry gfx90a gfx942 gfx1100" in stderr
    )
    assert [v.name for v in new.variants][:3] == ["cu132", "cu130", "cpu"], "CUDA/CPU builds as before"


def test_refresh_proposes_the_aarch64_builds_a_cuda_page_has(refreshed: tuple[Path, str, str]) -> None:
    path, stdout, stderr = refreshed
    written = path.read_text(encoding="utf-8")
    releases = {str(r.version): r for r in load_overlay(path.parent, "test", [Framework.TORCH]).releases}
    new = releases["9.2.0"]
    x86 = new.on_platform("linux_x86_64").variant("cu132")
    arm = new.on_platform("linux_aarch64").variant("cu132")
    assert x86 is not None and x86.platforms == ("linux_x86_64",) and [str(a) for a in x86.archs] == TURING
    assert arm is not None and arm.platforms == ("linux_aarch64",) and arm.unconfirmed is None
    assert [str(a) for a in arm.archs] == AARCH64_CU132, "read from the aarch64 wheel's GPU code"
    assert arm.cuda == Version("13.2") and arm.index_url == "https://download.pytorch.org/whl/cu132"
    assert arm.pin_texts == TORCH_92_PINS, "the aarch64 wheel's pins, its markers read as aarch64's"
    assert "manylinux_2_28_aarch64" in arm.source.text
    assert 'platforms = ["linux_aarch64"]' in written
    assert new.on_platform("linux_aarch64").variant("cu130") is not None, "x86's: none of its own"
    assert [v.name for v in new.variants if "linux_aarch64" in v.platforms] == ["cu132"]
    assert "torch 9.2.0 cu130 (linux_aarch64) left out: no arch list" in stderr
    known = releases["9.1.0"].on_platform("linux_aarch64").variant("cu130")
    assert known is not None and known.platforms == ("linux_aarch64",)
    assert "9.1.0 cu130 (linux_aarch64)" in stdout, "a build added to a known release, said so"
    assert "9.1.0 cu130: archs" not in stderr, "the aarch64 build is not compared with the x86 one"


def test_refresh_lists_the_free_threaded_pythons_a_builds_files_serve(
    refreshed: tuple[Path, str, str],
) -> None:
    path, stdout, _stderr = refreshed
    written = path.read_text(encoding="utf-8")
    new = {str(r.version): r for r in load_overlay(path.parent, "test", [Framework.TORCH]).releases}["9.2.0"]
    cu132 = new.variant("cu132")
    assert cu132 is not None and cu132.free_threaded == SpecifierSet(">=3.13,<3.15"), (
        "cp313t on the default index, cp314t on the PyTorch index"
    )
    assert cu132.free_threaded_unconfirmed is None, "the files were seen"
    arm = new.on_platform("linux_aarch64").variant("cu132")
    assert arm is not None and arm.free_threaded == SpecifierSet(">=3.13,<3.14")
    for name in ("cu130", "cpu", "rocm7.1"):
        other = new.variant(name)
        assert other is not None and other.free_threaded is None, name
    assert new.python == SpecifierSet(">=3.12,<3.14,!=3.12.4"), "a cpXYt wheel widens no range"
    assert 'free_threaded = ">=3.13,<3.15"' in written
    assert (
        "free-threaded wheels seen for 2 build(s) (9.2.0 cu132 3.13t, 3.14t; "
        "9.2.0 cu132 (linux_aarch64) 3.13t)" in stdout
    )
