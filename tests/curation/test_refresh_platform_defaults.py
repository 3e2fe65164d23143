"""``colabenv catalog refresh torch`` proposes ``platform_defaults`` for linux_aarch64: which build
the default index's plain aarch64 wheel of each release is (tests/support/
refresh_platform_standins.py on 127.0.0.1): written for a new release, a difference from a
known release's entry reported; a malformed METADATA or wheel file name there is one note line
with its URL, never a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from colabenv.catalog.load import load_overlay
from colabenv.models import Framework
from tests.support.fixtures import Runner
from tests.support.refresh_platform_standins import build_plain_aarch64, build_platform_indexes, refresh_torch


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("refresh-plain-aarch64")
    build_platform_indexes(root)
    build_plain_aarch64(root)
    return root


@pytest.fixture
def refreshed(runner: Runner, plain: Path, tmp_path: Path) -> Iterator[tuple[Path, str, str, int]]:
    stdout, stderr, code = refresh_torch(runner, plain, tmp_path / "team-catalog")
    yield tmp_path / "team-catalog" / "torch.toml", stdout, stderr, code


def test_a_new_releases_plain_aarch64_wheel_gives_its_platform_default(
    refreshed: tuple[Path, str, str, int],
) -> None:
    path, _stdout, stderr, code = refreshed
    assert code == 1, stderr
    written = path.read_text(encoding="utf-8")
    releases = {str(r.version): r for r in load_overlay(path.parent, "test", [Framework.TORCH]).releases}
    new = releases["9.2.0"]
    assert dict(new.platform_defaults) == {"linux_aarch64": "cu132"}, "its version.py says 9.2.0+cu132"
    assert new.on_platform("linux_aarch64").default_variant == "cu132"
    assert 'platform_defaults = { linux_aarch64 = "cu132" }' in written
    assert "linux_aarch64 plain wheel (cu132): torch-9.2.0-cp312-cp312-manylinux_2_28_aarch64.whl" in (
        new.source.text
    )
    assert "torch/version.py 9.2.0+cu132" in new.source.text


def test_a_known_release_whose_plain_aarch64_wheel_is_another_build_is_reported(
    refreshed: tuple[Path, str, str, int],
) -> None:
    path, _stdout, stderr, _code = refreshed
    assert (
        "colabenv: contradiction: torch 9.1.0: platform_defaults.linux_aarch64: the catalog has none, "
        "the index's plain linux_aarch64 wheel is cpu (the catalog's entry is kept)" in stderr
    ), "no CUDA in its version.py nor an NVIDIA pin: the CPU build"
    known = {str(r.version): r for r in load_overlay(path.parent, "test", [Framework.TORCH]).releases}
    assert known["9.1.0"].platform_defaults == (), "reported, not written"


def test_a_malformed_plain_aarch64_wheel_is_one_line_with_its_url(
    runner: Runner, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    root = tmp_path_factory.mktemp("refresh-plain-aarch64-malformed")
    build_platform_indexes(root)
    build_plain_aarch64(root, malformed=True)
    stdout, stderr, code = refresh_torch(runner, root, tmp_path / "team-catalog")
    assert code == 1, stderr
    assert "Traceback" not in stderr
    url = "DEFAULT/files/torch-9.2.0-cp312-cp312-manylinux_2_28_aarch64.whl"
    said = [line for line in stderr.splitlines() if url in line]
    assert len(said) == 1 and said[0].startswith("colabenv: note: torch 9.2.0: the plain linux_aarch64 wheel")
    assert "is not a requirement" in said[0] and said[0].endswith("platform_defaults not proposed")
    bad = "DEFAULT/files/torch-9.1.0-cp312-manylinux_2_28_aarch64.whl"
    assert [line for line in stderr.splitlines() if bad in line] == [
        f"colabenv: note: {bad}: not a wheel file name that can be read (Invalid wheel filename "
        "(wrong number of parts): 'torch-9.1.0-cp312-manylinux_2_28_aarch64'); left aside"
    ]
    written = (tmp_path / "team-catalog" / "torch.toml").read_text(encoding="utf-8")
    assert "9.2.0" in written and "platform_defaults" not in written.split('version = "9.2.0"')[1]
    assert "wrote" in stdout
