"""``colabenv catalog refresh torch`` holds the ``free_threaded`` of the builds the file already
has to the cpXYt files it reads (tests/support/refresh_platform_standins.py on 127.0.0.1), as
``catalog refresh packages`` does for the CUDA packages' builds: a range the files do not serve
is a contradiction (the file's is kept), a confirmed range with no file read is one too, and an
unconfirmed range the files serve is a note; a range the files serve is not reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fixtures import Runner
from tests.support.refresh_platform_standins import (
    build_known_free_threaded,
    build_platform_indexes,
    refresh_torch,
)


@pytest.fixture(scope="module")
def standins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("refresh-known-free-threaded")
    build_platform_indexes(root)
    build_known_free_threaded(root)
    return root


@pytest.fixture
def refreshed(runner: Runner, standins: Path, tmp_path: Path) -> tuple[str, str, int]:
    out = tmp_path / "team-catalog"
    _stdout, stderr, code = refresh_torch(runner, standins, out)
    return (out / "torch.toml").read_text(encoding="utf-8"), stderr, code


def test_a_known_builds_range_the_files_do_not_serve_is_a_contradiction(
    refreshed: tuple[str, str, int],
) -> None:
    written, stderr, code = refreshed
    assert code == 1, stderr
    assert (
        "colabenv: contradiction: torch 9.1.0 cu130: free_threaded: the catalog has >=3.13, the index "
        "has cp3XYt files for >=3.14,<3.15 (the catalog's entry is kept)" in stderr
    )
    assert 'free_threaded = ">=3.13"\n' in written, "reported, not written"
    assert (
        "colabenv: contradiction: torch 9.1.0 cu130 (linux_aarch64): free_threaded: the catalog has "
        ">=3.13,<3.14, the index has no cp3XYt file of it (the catalog's entry is kept)" in stderr
    ), "a confirmed range with no file read"


def test_a_range_the_files_serve_is_not_reported_and_an_unconfirmed_one_is_confirmed(
    refreshed: tuple[str, str, int],
) -> None:
    _written, stderr, _code = refreshed
    said = [line for line in stderr.splitlines() if "free_threaded" in line or "cp3XYt" in line]
    assert not [line for line in said if "9.1.0 cu126" in line], "cp313t and cp314t: as the file says"
    assert not [line for line in said if "9.1.0 rocm7.0" in line], "no files, none in the file"
    assert (
        "colabenv: note: torch 9.1.0 cpu: its cp3XYt files confirm free_threaded "
        "(free_threaded_unconfirmed can go)" in stderr
    ), '"==3.13.*" is the cp313t file\'s ">=3.13,<3.14"'
    assert len(said) == 3, said
