"""``colabenv catalog refresh packages`` against a stand-in index on 127.0.0.1 (tests/support/
refresh_package_standins.py): new releases of the CUDA packages read from their wheels' METADATA
and GPU code, written in cuda_packages.toml's layout under the file's own text, which stays;
what cannot be derived is a note; a contradiction is reported, not written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv._util.reader import Reader
from colabenv.catalog.load import parse_document
from colabenv.catalog.packages import cuda_packages
from colabenv.errors import CatalogOverlayError
from colabenv.models import Arch
from tests.support.fixtures import Runner
from tests.support.index import LocalIndex
from tests.support.refresh_package_standins import BASE, XFORMERS_PINS, build_package_indexes


@pytest.fixture(scope="module")
def standins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("refresh-packages")
    build_package_indexes(root)
    return root


@pytest.fixture
def index(standins: Path) -> Iterator[LocalIndex]:
    with LocalIndex(standins / "default") as served:
        yield served


@pytest.fixture
def pytorch(standins: Path) -> Iterator[LocalIndex]:
    with LocalIndex(standins / "pytorch") as served:
        yield served


def _loaded(path: Path) -> dict[str, dict[Version, object]]:
    doc: Reader = parse_document(path, path.read_bytes(), CatalogOverlayError)
    return {str(p.name): {r.version: r for r in p.releases} for p in cuda_packages(doc, str(path))}


def test_refresh_packages_adds_the_new_releases_and_keeps_the_file(
    runner: Runner, standins: Path, index: LocalIndex, pytorch: LocalIndex, tmp_path: Path
) -> None:
    out = tmp_path / "team"
    out.mkdir()
    done = runner(
        "catalog",
        "refresh",
        "packages",
        "--index",
        index.url,
        "--catalog",
        standins / "base",
        "-o",
        out,
        "--pytorch-index",
        pytorch.url,
        "--quiet",
        timeout=120,
    )
    assert done.returncode == 1, done.stderr  # the bitsandbytes contradiction
    assert "2 release(s) added (xformers 0.0.99, cupy 99.0.0); 1 contradiction(s) reported" in done.stdout
    assert (
        "contradiction: bitsandbytes 98.0.0 cu12: torch: the catalog has <10,>=9.0, the index says "
        "<10,>=8.0 (the catalog's entry is kept)" in done.stderr
    )
    assert "note: cupy 99.0.0 cu11 left out: no arch list" in done.stderr
    assert "note: torch-scatter: no Linux x86_64 wheel on the index" in done.stderr
    written = (out / "cuda_packages.toml").read_text(encoding="utf-8")
    for line in BASE.splitlines():
        assert line in written.splitlines(), f"the file's own line {line!r} stays"
    assert written.index('version = "0.0.99"') < written.index('version = "0.0.98"'), "newest first"
    packages = _loaded(out / "cuda_packages.toml")
    xformers = packages["xformers"][Version("0.0.99")]
    build = xformers.build("cu128")  # type: ignore[attr-defined]
    assert build is not None and build.unconfirmed is None
    assert build.torch == SpecifierSet("==9.1.0"), "the wheel's Requires-Dist torch pin"
    assert build.requires == XFORMERS_PINS
    assert build.cuda == Version("12.8"), "carried from the build before (no local tag)"
    assert build.local_tag is None and build.index_url is None
    cu126 = xformers.build("cu126")  # type: ignore[attr-defined]
    assert cu126 is not None and cu126.unconfirmed is None, "read from the PyTorch index's page"
    assert (cu126.index_url, cu126.local_tag) == ("https://download.pytorch.org/whl/cu126", "cu126")
    assert cu126.cuda == Version("12.6") and cu126.torch == SpecifierSet("==9.1.0")
    assert xformers.python == SpecifierSet(">=3.12,<3.14"), "Requires-Python and the cpXY tags"  # type: ignore[attr-defined]
    assert 'archs = "xf"' in written, "an arch list equal to a named one is written by name"
    cupy = packages["cupy"][Version("99.0.0")].build("cu12")  # type: ignore[attr-defined]
    assert cupy is not None and cupy.torch is None and str(cupy.distribution) == "cupy-cuda12x"
    assert cupy.archs == tuple(sorted(Arch.parse(a) for a in ("sm_75", "sm_80", "sm_90", "compute_90")))
    assert cupy.cuda == Version("12")
    release = packages["cupy"][Version("99.0.0")]
    assert release.python == SpecifierSet(">=3.12")  # type: ignore[attr-defined]
    cu13 = release.build("cu13")  # type: ignore[attr-defined]
    assert str(cu13.distribution) == "cupy-cuda13x" and cu13.cuda == Version("13")
    assert (cupy.python, cu13.python) == (SpecifierSet(">=3.12,<3.13"), SpecifierSet(">=3.13,<3.14"))
    assert packages["bitsandbytes"][Version("98.0.0")].build("cu12").torch == SpecifierSet(">=9.0,<10")  # type: ignore[attr-defined]


def test_refresh_packages_carried_archs_are_unconfirmed_and_the_diff_goes_to_stdout(
    runner: Runner, standins: Path, index: LocalIndex
) -> None:
    done = runner(
        "catalog",
        "refresh",
        "packages",
        "--index",
        index.url,
        "--catalog",
        standins / "base",
        "--no-variant-index",
        "--archs",
        "carry",
        "--releases",
        ">=0.0.99,<1",
        "--quiet",
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "+++ b/cuda_packages.toml" in done.stdout
    assert "+unconfirmed = true" in done.stdout
    assert "the arch list is carried over from cu128 of the release before" in done.stdout
    assert "1 release(s) added (xformers 0.0.99)" in done.stderr


def test_refresh_packages_bad_releases_is_exit_2(runner: Runner, standins: Path, index: LocalIndex) -> None:
    done = runner(
        "catalog",
        "refresh",
        "packages",
        "--index",
        index.url,
        "--catalog",
        standins / "base",
        "--no-variant-index",
        "--releases",
        "not a spec",
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "Traceback" not in done.stderr
