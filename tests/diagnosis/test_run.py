"""``doctor()``'s silent-death finder over a real ring in a state directory: the runtime that
chooses the session limits is told from the variables alone, never from a probe of the host."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from colabenv.diagnosis.run import doctor, find_silent_deaths
from colabenv.host import detect
from colabenv.host.probe import HostProbe
from colabenv.models import CgroupMemory, FilesystemUse, HostMemory, ProcessSample, RingHeader, Sample
from colabenv.recorder.ring import RingWriter, ring_paths
from colabenv.script.state import COLAB_VARIABLES

GIB = 1 << 30
RUNTIME_VARIABLES = (*COLAB_VARIABLES, "KAGGLE_KERNEL_RUN_TYPE", "KAGGLE_URL_BASE")


def write_ring(state: Path, hours: float) -> None:
    """Three samples of a session ``hours`` old, the last a second ago."""
    now = time.time()
    writer = RingWriter.create(ring_paths(state)[0], RingHeader(1, os.getpid(), os.getpid(), 2.0, now, 16))
    try:
        for i in range(3):
            at = now - 5 + 2 * i
            writer.append(
                Sample(
                    time=at,
                    memory=HostMemory(12 * GIB, 10 * GIB, 0, 0),
                    cgroup=CgroupMemory(1, "/session", 2 * GIB, 4 * GIB, 0),
                    processes=(ProcessSample(4359, 100, "python3", GIB, 0),),
                    shm=FilesystemUse("/dev/shm", 64 << 20, 60 << 20),
                    filesystems=(FilesystemUse("/content", 100 * GIB, 50 * GIB),),
                    gpus=(),
                    load=(1.0, 1.0, 1.0),
                    session_age=hours * 3600 + 2 * i,
                )
            )
    finally:
        writer.close()


@pytest.fixture
def no_host_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe of the whole host raises: a doctor that builds one fails the test."""

    def probe(*args: object, **kwargs: object) -> HostProbe:
        raise AssertionError("doctor probed the whole host to learn the runtime kind")

    monkeypatch.setattr(detect, "live_probe", probe)


def session_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **variables: str) -> list[str]:
    for name in RUNTIME_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("COLABENV_STATE_DIR", str(tmp_path))
    write_ring(tmp_path, 11.8)
    report = doctor(since="10m", finders=(find_silent_deaths,))
    return [f.summary for f in report.findings if f.kind == "session-limit"]


@pytest.mark.usefixtures("no_host_probe")
def test_a_colab_session_near_its_limit_is_told_without_probing_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (summary,) = session_limits(tmp_path, monkeypatch, COLAB_RELEASE_TAG="release-colab_20251120-060109")
    assert "near Colab's 12 h limit for the free plan" in summary


@pytest.mark.usefixtures("no_host_probe")
def test_a_kaggle_session_is_told_by_its_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (summary,) = session_limits(tmp_path, monkeypatch, KAGGLE_KERNEL_RUN_TYPE="Interactive")
    assert "Kaggle's" in summary


@pytest.mark.skipif(os.path.exists("/kaggle/input"), reason="this host has Kaggle's input folder")
@pytest.mark.usefixtures("no_host_probe")
def test_no_session_limit_on_a_host_of_no_known_runtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert session_limits(tmp_path, monkeypatch) == []
