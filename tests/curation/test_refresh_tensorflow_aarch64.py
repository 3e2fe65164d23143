"""``colabenv catalog refresh tensorflow`` reads whether each release's plain ``tensorflow`` wheel
has manylinux aarch64 files on the index (tests/support/refresh_standins.py on 127.0.0.1): a new
release with some gets ``platform_defaults = { linux_aarch64 = "cpu" }`` (its plain aarch64 wheel
is the CPU build), one without gets none, a release the file has is compared both ways, and no
``and-cuda`` build is ever written for linux_aarch64."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from colabenv.catalog.load import load_overlay
from colabenv.models import Framework
from tests.support.fixtures import Runner
from tests.support.refresh_standins import build_tensorflow, build_tensorflow_aarch64, tensorflow_base
from tests.support.refreshing import refresh_standins


@pytest.fixture(scope="module")
def standins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("refresh-tensorflow-aarch64")
    build_tensorflow(root)
    build_tensorflow_aarch64(root)
    return root


def _refresh(runner: Runner, standins: Path, tmp_path: Path, base: str | None) -> tuple[Path, str, str, int]:
    """``catalog refresh tensorflow --releases '*'`` over a folder holding ``base`` (None: no
    file), written to another; the written file, stdout, stderr (the index as DEFAULT), exit."""
    start, out = tmp_path / "start", tmp_path / "out"
    start.mkdir()
    if base is not None:
        (start / "tensorflow.toml").write_text(base, encoding="utf-8")
    code, stdout, stderr = refresh_standins(
        runner, "tensorflow", standins, out, "--releases", "*", catalog=start
    )
    return out / "tensorflow.toml", stdout, stderr, code


def _defaults(path: Path) -> dict[str, Sequence[tuple[str, str]]]:
    return {
        str(r.version): r.platform_defaults
        for r in load_overlay(path.parent, "t", [Framework.TENSORFLOW]).releases
    }


def test_a_new_release_with_aarch64_files_gets_its_cpu_build_for_linux_aarch64(
    runner: Runner, standins: Path, tmp_path: Path
) -> None:
    path, stdout, stderr, code = _refresh(runner, standins, tmp_path, None)
    assert code == 0, stderr
    assert "2 release(s) added (9.0.0, 9.1.0)" in stdout
    assert _defaults(path) == {"9.0.0": (), "9.1.0": (("linux_aarch64", "cpu"),)}
    releases = {str(r.version): r for r in load_overlay(path.parent, "t", [Framework.TENSORFLOW]).releases}
    arm = releases["9.1.0"].on_platform("linux_aarch64")
    assert arm.default_variant == "cpu"
    assert all(v.platforms == ("linux_x86_64",) for v in releases["9.1.0"].variants), (
        "no build is written for linux_aarch64 but the CPU one, which serves every platform"
    )
    assert "tensorflow-9.1.0-cp312-cp312-manylinux_2_17_aarch64.whl" in releases["9.1.0"].source.text
    assert "linux_aarch64" not in releases["9.0.0"].source.text
    notes = [line for line in stderr.splitlines() if "linux_aarch64" in line]
    assert len(notes) == 1, notes
    assert notes[0].startswith(
        "colabenv: note: tensorflow: the plain wheel's linux_aarch64 files on the index DEFAULT/simple/: "
        "9.1.0: platform_defaults.linux_aarch64 = cpu (its CPU build); none for 9.0.0: no linux_aarch64 build"
    )
    assert "manylinux_2_17_aarch64 files for cp311 to cp313" in releases["9.1.0"].source.text
    assert "no and-cuda build is written for linux_aarch64" in notes[0]


def test_a_known_releases_platform_defaults_are_held_to_the_files(
    runner: Runner, standins: Path, tmp_path: Path
) -> None:
    path, _stdout, stderr, code = _refresh(runner, standins, tmp_path, tensorflow_base(["9.0.0"]))
    assert code == 1, stderr
    assert (
        "colabenv: contradiction: tensorflow 9.0.0: platform_defaults.linux_aarch64: the catalog has "
        "cpu, the index has no plain linux_aarch64 wheel of it (the catalog's entry is kept)" in stderr
    )
    assert (
        "colabenv: contradiction: tensorflow 9.1.0: platform_defaults.linux_aarch64: the catalog has "
        "none, the index's plain linux_aarch64 wheel is cpu (the catalog's entry is kept)" in stderr
    )
    assert _defaults(path) == {"9.0.0": (("linux_aarch64", "cpu"),), "9.1.0": ()}, "reported, not written"
    assert stderr.count("contradiction:") == 2, stderr


def test_a_known_release_that_matches_the_files_is_not_reported(
    runner: Runner, standins: Path, tmp_path: Path
) -> None:
    _path, stdout, stderr, code = _refresh(runner, standins, tmp_path, tensorflow_base(["9.1.0"]))
    assert code == 0, stderr
    assert "contradiction" not in stderr and "nothing to add" in stderr + stdout
