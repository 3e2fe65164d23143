"""``catalog refresh`` against an index listing 2,000 releases newer than the catalog (a local
index on 127.0.0.1, tests/support/hostile_index.py ``releases``): it reads the metadata of the
newest few only, in seconds, and says in one note how many it left out and which; ``--releases
N`` widens the bound, itself bounded; a bad N is exit 2 in one line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from colabenv.curation.refresh.selection import DEFAULT_RELEASES, MAX_RELEASES
from tests.support.fixtures import Runner
from tests.support.hostile_index import MANY_RELEASES, HostileIndex
from tests.support.refresh_standins import BASE_JAX

BOUND_S = 20.0
"""Far above the second or two a bounded refresh takes here; far below the minute that 2,000
metadata reads take (the index answers each after 25 ms, as a remote one would)."""


def _catalog(tmp_path: Path) -> Path:
    folder = tmp_path / "catalog"
    folder.mkdir(parents=True)
    (folder / "jax.toml").write_text(BASE_JAX, encoding="utf-8")
    return folder


def _refresh(runner: Runner, tmp_path: Path, index: HostileIndex, *args: str) -> tuple[int, str, str, float]:
    started = time.monotonic()
    done = runner(
        "catalog",
        "refresh",
        "jax",
        "--index",
        index.url,
        "--catalog",
        _catalog(tmp_path),
        "--quiet",
        *args,
        timeout=300,
    )
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


def _left_out_notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "left out" in line and "newest" in line]


def test_refresh_reads_the_newest_releases_only_and_says_what_it_left_out(
    runner: Runner, tmp_path: Path
) -> None:
    with HostileIndex("releases") as index:
        code, _, stderr, took = _refresh(runner, tmp_path, index)
    assert code == 0, stderr
    assert took < BOUND_S, f"{took:.1f} s"
    assert len(index.metadata_requests) == DEFAULT_RELEASES, len(index.metadata_requests)
    assert all(f"-10.{n}.0-" in " ".join(index.metadata_requests) for n in (1980, 1999))
    (note,) = _left_out_notes(stderr)
    skipped = MANY_RELEASES - DEFAULT_RELEASES
    assert (
        f"{skipped} of the {MANY_RELEASES} release(s)" in note and "10.0.0" in note and "10.1979.0" in note
    ), note
    assert "--releases" in note, note


def test_releases_n_widens_the_bound(runner: Runner, tmp_path: Path) -> None:
    with HostileIndex("releases") as index:
        code, _, stderr, took = _refresh(runner, tmp_path, index, "--releases", "50")
    assert code == 0, stderr
    assert took < BOUND_S, f"{took:.1f} s"
    assert len(index.metadata_requests) == 50
    (note,) = _left_out_notes(stderr)
    assert f"{MANY_RELEASES - 50} of the {MANY_RELEASES} release(s)" in note and "10.1949.0" in note, note


def test_a_specifier_chooses_the_releases_within_the_bound(runner: Runner, tmp_path: Path) -> None:
    with HostileIndex("releases") as index:
        code, _, stderr, _ = _refresh(runner, tmp_path, index, "--releases", ">=10.1990")
    assert code == 0, stderr
    assert len(index.metadata_requests) == 10
    assert not _left_out_notes(stderr)
    with HostileIndex("releases") as index:
        code, _, stderr, _ = _refresh(runner, tmp_path / "star", index, "--releases", "*")
    assert code == 0, stderr
    assert len(index.metadata_requests) == MAX_RELEASES
    (note,) = _left_out_notes(stderr)
    assert f"{MANY_RELEASES - MAX_RELEASES} of the {MANY_RELEASES} release(s) that --releases names" in note


@pytest.mark.parametrize("value", ["0", "-3", str(MAX_RELEASES + 1), "ten", "1e3"])
def test_a_bad_count_is_exit_2_in_one_line(runner: Runner, value: str) -> None:
    done = runner("catalog", "refresh", "jax", "--index", "http://127.0.0.1:9/simple/", "--releases", value)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("colabenv: --releases"), done.stderr
