"""``colabenv catalog refresh packages`` reads the CUDA packages' ROCm builds, against stand-in
wheels with HIP offload bundles on 127.0.0.1 (tests/support/refresh_package_rocm_standins.py):
a new release's ROCm build written from its ROCm distribution's page (gfx read from the wheel's
bundles), a known build's gfx list held to its wheel, a build whose files the index no longer has
reported gone, a zstd bundle that cannot be unpacked here leaving its build out, and xformers'
ROCm builds on the PyTorch index (compared where read, carried over as they are where not)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.catalog.load import parse_document
from colabenv.catalog.packages import cuda_packages
from colabenv.errors import CatalogOverlayError
from colabenv.models import CudaPackage
from tests.support.fixtures import Runner
from tests.support.ports import free_port
from tests.support.refresh_package_rocm_standins import build_package_rocm_indexes
from tests.support.refreshing import refresh_standins

Run = tuple[Path, str, str, int]


@pytest.fixture(scope="module")
def standins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("refresh-package-rocm")
    build_package_rocm_indexes(root)
    return root


def _refresh(runner: Runner, standins: Path, out: Path, *flags: str, pytorch: bool = True) -> Run:
    code, stdout, stderr = refresh_standins(runner, "packages", standins, out, *flags, pytorch=pytorch)
    return out / "cuda_packages.toml", stdout, stderr, code


@pytest.fixture
def refreshed(runner: Runner, standins: Path, tmp_path: Path) -> Iterator[Run]:
    yield _refresh(runner, standins, tmp_path / "team-catalog")


def _packages(path: Path) -> dict[str, CudaPackage]:
    doc = parse_document(path, path.read_bytes(), CatalogOverlayError)
    return {str(p.name): p for p in cuda_packages(doc, str(path))}


def test_a_new_releases_rocm_build_is_written_with_the_gfx_its_wheel_carries(refreshed: Run) -> None:
    path, stdout, stderr, code = refreshed
    assert code == 1, stderr
    assert "1 release(s) added (cupy 99.0.0)" in stdout
    new = _packages(path)["cupy"].release(Version("99.0.0"))
    assert new is not None
    build = new.build("rocm7.0")
    assert build is not None, [b.name for b in new.builds]
    assert (build.distribution, build.rocm, build.cuda) == ("cupy-rocm-7-0", Version("7.0"), None)
    assert build.gfx == ("gfx90a", "gfx942", "gfx1100"), "read from the bundle, features dropped"
    assert build.unconfirmed is None, "read, not carried"
    assert build.free_threaded == SpecifierSet(">=3.14,<3.15"), "its cp314t file"
    assert (build.archs, build.requires, build.local_tag, build.index_url) == ((), (), None, None)
    assert new.python == SpecifierSet(">=3.12,<3.13") and build.python is None, "one range for all"
    file = "cupy_rocm_7_0-99.0.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    assert build.source.text.startswith("the index http://127.0.0.1:")
    assert f"/simple/: {file} (cp312 to cp312) METADATA Requires-Dist" in build.source.text
    assert "rocm: the distribution's ROCm line (cupy-rocm-7-0)" in build.source.text
    assert f"gfx: the targets every HIP offload bundle names in cupy/cuda/libcub.so of {file}" in (
        build.source.text
    )
    assert 'gfx = ["gfx90a", "gfx942", "gfx1100"]' in path.read_text(encoding="utf-8")
    assert "cupy-rocm-7-0" in new.source.text


def test_a_known_rocm_builds_gfx_list_is_held_to_its_wheel(refreshed: Run) -> None:
    path, _stdout, stderr, _code = refreshed
    assert (
        "colabenv: contradiction: cupy 98.0.0 rocm7.0: gfx: the catalog has gfx90a gfx942 gfx1030, "
        "the wheel's libraries carry gfx90a gfx942 gfx1100 (the catalog's entry is kept)" in stderr
    )
    kept = _packages(path)["cupy"].release(Version("98.0.0"))
    build = kept.build("rocm7.0") if kept is not None else None
    assert build is not None and build.gfx == ("gfx90a", "gfx942", "gfx1030"), "reported, not written"


def test_a_rocm_build_whose_files_the_index_no_longer_has_is_gone(refreshed: Run) -> None:
    path, _stdout, stderr, _code = refreshed
    assert (
        "colabenv: contradiction: cupy 98.0.0: the catalog lists rocm5.0, which the index does not "
        "have (no cupy-rocm-5-0 98.0.0 wheel on the index DEFAULT/simple/) (the catalog's entry is kept)"
        in stderr
    )
    kept = _packages(path)["cupy"].release(Version("98.0.0"))
    assert kept is not None and kept.build("rocm5.0") is not None, "the entry is kept"
    assert "rocm7.0, which" not in stderr, "its file is there"


def _has_stdlib_zstd() -> bool:
    try:
        import compression.zstd  # type: ignore[import-not-found, unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(_has_stdlib_zstd(), reason="this Python unpacks zstd bundles (compression.zstd)")
def test_a_zstd_bundle_not_unpacked_here_leaves_the_build_out(refreshed: Run) -> None:
    path, _stdout, stderr, _code = refreshed
    file = "cupy_rocm_5_0-99.0.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    assert (
        f"colabenv: note: cupy 99.0.0 rocm5.0 left out: no gfx list (1 compressed HIP offload bundle(s) "
        f"in {file} cannot be unpacked here (zstd: read where Python has compression.zstd, 3.14 and "
        "later)): a ROCm build's gfx list is never guessed" in stderr
    )
    new = _packages(path)["cupy"].release(Version("99.0.0"))
    assert new is not None and new.build("rocm5.0") is None, "never guessed"


def test_xformers_rocm_builds_on_the_pytorch_index_are_compared_where_read(refreshed: Run) -> None:
    _path, _stdout, stderr, _code = refreshed
    assert (
        "colabenv: note: xformers 0.0.98 rocm6.4: the wheel confirms the gfx list marked "
        "unconfirmed (unconfirmed can go)" in stderr
    )
    assert "xformers 0.0.98 rocm6.4: torch" not in stderr, "its wheel requires torch==9.0.0 too"
    assert [line for line in stderr.splitlines() if "xformers" in line and "ROCm" in line] == []


def test_without_the_pytorch_index_xformers_rocm_builds_are_carried_over(
    runner: Runner, standins: Path, tmp_path: Path
) -> None:
    path, _stdout, stderr, _code = _refresh(runner, standins, tmp_path / "out", "--no-variant-index")
    assert (
        "colabenv: note: xformers: its ROCm builds on the PyTorch index (rocm6.4) are carried over "
        "as the catalog has them: that index was not read (--no-variant-index)" in stderr
    )
    assert "xformers 0.0.98 rocm6.4" not in stderr
    kept = _packages(path)["xformers"].release(Version("0.0.98"))
    build = kept.build("rocm6.4") if kept is not None else None
    assert build is not None and build.unconfirmed is not None


def test_with_the_pytorch_index_unreachable_xformers_rocm_builds_are_carried_over(
    runner: Runner, standins: Path, tmp_path: Path
) -> None:
    closed = f"http://127.0.0.1:{free_port()}/simple/"
    path, _stdout, stderr, _code = _refresh(
        runner, standins, tmp_path / "out", "--pytorch-index", closed, pytorch=False
    )
    said = [line for line in stderr.splitlines() if line.startswith("colabenv: note: xformers:")]
    assert len(said) == 1 and "the PyTorch index was not read (" in said[0], stderr
    assert said[0].endswith("): its builds there are carried over as the catalog has them")
    assert "xformers: no ROCm build" not in stderr, "its ROCm builds were not looked for"
    assert "xformers 0.0.98 rocm6.4" not in stderr
    assert "cupy 98.0.0 rocm7.0: gfx" in stderr, "the default index is read as before"
    kept = _packages(path)["xformers"].release(Version("0.0.98"))
    build = kept.build("rocm6.4") if kept is not None else None
    assert build is not None and build.unconfirmed is not None
