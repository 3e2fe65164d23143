"""``colabenv catalog refresh jax`` reads jax's free-threaded wheels from the index's file lists
(jaxlib's and each plugin's ``cp3XYt`` files, tests/support/refresh_jax_ft_standins.py on
127.0.0.1): a build it writes gets the Pythons all it installs has such files for, on its
platform, and a build the file has is held to them as torch's are. And a ROCm build the file
reads from the index itself (no ``find_links``) whose plugin the index no longer lists is
reported gone, as a CUDA build is."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from colabenv.catalog.load import load_overlay
from colabenv.curation.refresh.aarch64_builds import AARCH64
from colabenv.models import Framework, Release
from tests.support.fixtures import Runner
from tests.support.refresh_jax_ft_standins import build_jax_ft_indexes
from tests.support.refreshing import refresh_standins


@pytest.fixture(scope="module")
def standins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("refresh-jax-free-threaded")
    build_jax_ft_indexes(root)
    return root


@pytest.fixture
def refreshed(runner: Runner, standins: Path, tmp_path: Path) -> tuple[Path, str, str]:
    out = tmp_path / "out"
    code, stdout, stderr = refresh_standins(runner, "jax", standins, out, amd=True)
    assert code == 1, stderr  # the contradictions below, and 9.0.0 rocm7's gfx list
    return out, stdout, stderr


def _releases(out: Path) -> dict[str, Release]:
    return {str(r.version): r for r in load_overlay(out, "test", [Framework.JAX]).releases}


def _ranges(release: Release) -> dict[str, str | None]:
    shown = {}
    for variant in release.variants:
        name = f"{variant.name} ({AARCH64})" if AARCH64 in variant.platforms else variant.name
        shown[name] = None if variant.free_threaded is None else str(SpecifierSet(str(variant.free_threaded)))
    return shown


def test_a_new_jax_build_gets_the_free_threaded_pythons_of_what_it_installs(
    refreshed: tuple[Path, str, str],
) -> None:
    out, stdout, _stderr = refreshed
    new = _releases(out)["9.1.0"]
    assert _ranges(new) == {
        "cuda12": "<3.14,>=3.13",  # jaxlib cp313t, cp314t; the plugin cp313t
        "cuda13": "<3.15,>=3.13",
        f"cuda12 ({AARCH64})": "<3.15,>=3.14",  # the aarch64 files: jaxlib's and the plugin's cp314t
        "rocm7": "<3.14,>=3.13",  # the plugin's cp313t on AMD's page
        "cpu": "<3.15,>=3.14",  # jaxlib has cp313t for x86-64 alone
    }
    assert all(v.free_threaded_unconfirmed is None for v in new.variants), "seen: confirmed"
    cuda12 = new.variant("cuda12")
    assert cuda12 is not None
    assert cuda12.source.text.endswith(
        "; free-threaded wheels: the cp3XYt files of jaxlib 9.1.0 (linux_x86_64) and jax-cuda12-plugin 9.1.0 "
        "(linux_x86_64)"
    )
    patch = _ranges(_releases(out)["9.1.1"])
    assert patch["cuda12"] == "<3.14,>=3.13", "9.1.1 pins jaxlib 9.1.0 and admits the 9.1.0 plugin"
    written = (out / "jax.toml").read_text(encoding="utf-8")
    assert 'free_threaded = ">=3.13,<3.15"' in written
    assert (
        "free-threaded wheels seen for 9 build(s) (9.1.0 cuda12 3.13t; 9.1.0 cuda13 3.13t, 3.14t;" in stdout
    )


def test_a_known_jax_builds_free_threaded_is_held_to_the_files(refreshed: tuple[Path, str, str]) -> None:
    out, _stdout, stderr = refreshed
    said = [line for line in stderr.splitlines() if "free_threaded" in line]
    assert said == [
        "colabenv: note: jax 9.0.0 cuda12: its cp3XYt files confirm free_threaded "
        "(free_threaded_unconfirmed can go)",
        "colabenv: contradiction: jax 9.0.0 cuda12 (linux_aarch64): free_threaded: the catalog has "
        ">=3.13,<3.14, the index has no cp3XYt file of it (the catalog's entry is kept)",
        "colabenv: contradiction: jax 9.0.0 cpu: free_threaded: the catalog has >=3.14, the index has "
        "cp3XYt files for >=3.13,<3.14 (the catalog's entry is kept)",
    ], said
    kept = _releases(out)["9.0.0"].variant("cpu")
    assert kept is not None and str(kept.free_threaded) == ">=3.14", "reported, not written"


def test_a_rocm_build_the_index_no_longer_lists_is_gone(
    runner: Runner, standins: Path, tmp_path: Path
) -> None:
    """9.0.0's rocm7 and rocm6 are read from the index itself: rocm7's plugin is not there (its
    PJRT alone is), rocm6's is (the PJRT it pins is not, so no build is derived, but it is not
    gone)."""
    code, _stdout, stderr = refresh_standins(
        runner, "jax", standins, tmp_path / "out", "--no-find-links", catalog=standins / "gone", amd=True
    )
    assert code == 1, stderr
    gone = [line for line in stderr.splitlines() if "the catalog lists" in line]
    assert gone == [
        "colabenv: contradiction: jax 9.0.0: the catalog lists rocm7, which the index does not have "
        "(the catalog's entry is kept)"
    ], stderr
    assert (
        "jax 9.0.0 rocm6 left out: jax_rocm6_plugin-9.0.0-cp312-cp312-manylinux_2_28_x86_64.whl pins"
        in stderr
    )
    kept = _releases(tmp_path / "out")["9.0.0"]
    assert kept.variant("rocm7") is not None and kept.variant("rocm6") is not None, "reported, not removed"
