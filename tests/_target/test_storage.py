"""The io:<path> child (colabenv/_target/storage.py), run as verify runs it: a file path, any Python."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from colabenv._target import storage

CHILD = Path(storage.__file__)


def _measure(
    path: Path, size: int = 64 * 1024 * 1024, deadline: float = 20, python: str = sys.executable
) -> dict[str, Any]:
    done = subprocess.run(
        [python, str(CHILD), str(path), str(size), str(deadline)],
        capture_output=True,
        text=True,
        timeout=deadline + 30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith(storage.PREFIX))
    result: dict[str, Any] = json.loads(line[len(storage.PREFIX) :])
    return result


def test_a_disk_path_reports_both_figures_and_bypasses_the_cache(tmp_path: Path) -> None:
    target = tmp_path / ".colabenv-io-test"
    result = _measure(target)
    assert result["written_bytes"] == result["read_bytes"] == 64 * 1024 * 1024
    assert result["write_mib_s"] > 0 and result["read_mib_s"] > 0
    assert result["read_method"] in ("O_DIRECT", "posix_fadvise(DONTNEED)")
    assert result["partial"] is False
    assert not target.exists()


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm")
def test_a_tmpfs_path_says_it_reads_at_memory_speed() -> None:
    target = Path("/dev/shm") / f".colabenv-io-test-{id(object())}"
    result = _measure(target, size=16 * 1024 * 1024)
    assert result["filesystem"] == "tmpfs"
    assert any("memory" in note for note in result["notes"])
    assert not target.exists()


def test_a_missing_directory_is_an_error_not_a_crash(tmp_path: Path) -> None:
    result = _measure(tmp_path / "missing" / ".colabenv-io")
    assert result["error"] == "does not exist"


@pytest.mark.skipif(not Path("/sys").is_dir(), reason="no /sys")
def test_a_place_that_cannot_be_written_is_an_error() -> None:
    result = _measure(Path("/sys/.colabenv-io-test"))
    assert result["error"].startswith("cannot write:")


def test_an_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    target = tmp_path / "data.bin"
    target.write_bytes(b"precious")
    result = _measure(target)
    assert result["error"].startswith("cannot write:")
    assert result["errno"] == errno.EEXIST, "the parent leaves a name it did not create alone"
    assert target.read_bytes() == b"precious"


def test_the_deadline_bounds_a_large_size(tmp_path: Path) -> None:
    result = _measure(tmp_path / ".io", size=1 << 40, deadline=1.0)
    assert result["partial"] is True
    # the deadline is looked at between 4 MiB writes; the fsync after them comes on top
    assert result["write_s"] < 10
    assert result["written_bytes"] < 1 << 40


@pytest.mark.parametrize("args", [["x"], ["f", "0", "5"], ["f", "10", "inf"], ["f", "a", "1"]])
def test_bad_arguments_exit_2(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, str(CHILD), *args], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 2


OLD_PYTHONS = [p for p in os.environ.get("COLABENV_TEST_OLD_PYTHONS", "").split(os.pathsep) if p]


@pytest.mark.parametrize(
    "python",
    OLD_PYTHONS
    or [
        pytest.param(
            "",
            marks=pytest.mark.skip(reason="COLABENV_TEST_OLD_PYTHONS names no interpreter (.ci/run sets it)"),
        )
    ],
)
def test_the_child_runs_on_old_pythons(tmp_path: Path, python: str) -> None:
    result = _measure(tmp_path / ".io", size=4 * 1024 * 1024, python=python)
    assert result["read_bytes"] == 4 * 1024 * 1024
