"""A real full filesystem and a real full ``/dev/shm``-like mount: two small tmpfs mounts, filled
until the kernel says ENOSPC, sampled through ``statvfs`` (as the recorder samples them) before
and after; ``find_deaths`` names ``shm-full`` and ``disk-full`` with their paths, and nothing
while they had room. Skipped with the reason where tmpfs cannot be mounted (not root)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from colabenv.diagnosis.deaths import find_deaths
from colabenv.models import FilesystemUse, Sample
from colabenv.recorder.ring import RING_NAME, read_ring
from tests.support.fixtures import Runner

pytestmark = pytest.mark.slow


def _mount(folder: Path, size: str) -> None:
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()}")


@pytest.fixture
def mounts(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs takes root")
    shm, content = tmp_path / "shm", tmp_path / "content"
    try:
        _mount(shm, "4m")
        _mount(content, "8m")
        yield shm, content
    finally:
        for folder in (shm, content):
            if folder.is_dir() and os.path.ismount(folder):
                subprocess.run(["umount", "-l", str(folder)], timeout=30, check=False)


def _use(path: Path) -> FilesystemUse:
    info = os.statvfs(path)
    return FilesystemUse(str(path), info.f_blocks * info.f_frsize, info.f_bavail * info.f_frsize)


def _sample(shm: Path, content: Path) -> Sample:
    return Sample(time.time(), None, None, (), _use(shm), (_use(content),), (), None, None)


def _fill(folder: Path) -> None:
    chunk = b"\0" * 65536
    with open(folder / "fill", "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(chunk)
        except OSError as error:
            assert error.errno == errno.ENOSPC


def test_full_mounts_are_named(mounts: tuple[Path, Path]) -> None:
    shm, content = mounts
    started = time.time() - 1
    roomy = [_sample(shm, content)]
    assert find_deaths(roomy, [], now=time.time(), since=started, cgroup_now=None) == ()
    _fill(shm)
    half = _sample(shm, content)
    _fill(content)
    full = _sample(shm, content)
    assert full.shm is not None and full.shm.free == 0 and full.filesystems[0].free == 0
    findings = find_deaths([*roomy, half, full], [], now=time.time(), since=started, cgroup_now=None)
    assert [(f.kind, f.path, f.time) for f in findings] == [
        ("shm-full", str(shm), half.time),
        ("disk-full", str(content), full.time),
    ]
    assert "100% full" in findings[0].summary and "bus error" in findings[0].summary
    assert findings[1].evidence[0].text.startswith(f"{content}: 8.0 MiB of 8.0 MiB used (100%)")


def test_the_recorder_and_doctor_name_a_full_disk(
    mounts: tuple[Path, Path], runner: Runner, tmp_path: Path
) -> None:
    """The whole way: a real recorder watching a tmpfs, the tmpfs filled, then ``colabenv doctor``
    reads the recorder's ring and names the full filesystem with its path and the sample's time
    (exit 1); before the fill it names nothing of it."""
    _, content = mounts
    state = Path(os.environ["COLABENV_STATE_DIR"])
    started = runner("watch", "start", "--interval", "0.5", "--path", str(content))
    assert started.returncode == 0, started.stderr
    try:
        ring = state / RING_NAME
        _wait(lambda: ring.exists() and len(read_ring(ring).samples) >= 2)
        before = json.loads(runner("doctor", "--json", "--since", "1m", "--import", "json").stdout)
        assert all(f["kind"] != "disk-full" for f in before["findings"])
        filled = time.time()
        _fill(content)
        _wait(lambda: any(s.time > filled + 0.1 for s in read_ring(ring).samples))
        done = runner("doctor", "--json", "--since", "1m", "--import", "json")
    finally:
        runner("watch", "stop")
    assert done.returncode == 1, done.stderr
    found = [f for f in json.loads(done.stdout)["findings"] if f["kind"] == "disk-full"]
    assert [f["path"] for f in found] == [str(content)]
    assert found[0]["time"] >= filled
    assert not any("no recorder samples" in note for note in json.loads(done.stdout)["notes"])


def _wait(condition: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)
