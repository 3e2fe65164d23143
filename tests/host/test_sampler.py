"""What the recorder reads of the host: real processes and filesystems, NVML faked at its
boundary (this machine has no GPU)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from colabenv.host.sampler import Sampler, process_identity, watched_paths
from colabenv.models import CgroupMemory, GpuProcess, HostMemory
from tests.support.paths import DATA


class NvmlError(Exception):
    pass


class FakeNvml:
    """Two GPUs: the first with a compute and a graphics holder (one pid in both), the second
    without utilisation support."""

    def __init__(self, fail: str | None = None) -> None:
        self.fail = fail
        self.shut = False

    def nvmlInit(self) -> None:
        if self.fail:
            raise NvmlError(self.fail)

    def nvmlShutdown(self) -> None:
        self.shut = True

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetUUID(self, handle: int) -> bytes:
        return f"GPU-{handle}".encode()

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> Any:
        return SimpleNamespace(used=(handle + 1) << 30, total=16 << 30)

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> Any:
        if handle == 1:
            raise NvmlError("Not Supported")
        return SimpleNamespace(gpu=87, memory=40)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list[Any]:
        return [SimpleNamespace(pid=500, usedGpuMemory=3 << 30)] if handle == 0 else []

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: int) -> list[Any]:
        return [SimpleNamespace(pid=500, usedGpuMemory=None), SimpleNamespace(pid=7, usedGpuMemory=None)]


@pytest.fixture
def family() -> Any:
    """A real kernel stand-in with two children (DataLoader workers, say)."""
    proc = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        if len(children) == 2:
            break
        time.sleep(0.01)
    yield proc.pid, [int(c) for c in children]
    for child in children:
        os.kill(int(child), 9)
    proc.kill()
    proc.wait()


def test_a_sample_keeps_the_kernel_and_its_children_among_the_largest(family: Any, tmp_path: Path) -> None:
    kernel, children = family
    sampler = Sampler(kernel_pid=kernel, paths=(str(tmp_path),), load_nvml=None, top=2)
    run = sampler.start()
    sample = run.sample()
    run.close()
    pids = {p.pid: p for p in sample.processes}
    assert {kernel, *children} <= set(pids)
    assert len(sample.processes) >= 5  # the two largest, and the family of three
    assert all(pids[c].ppid == kernel for c in children)
    assert pids[kernel].uid == os.getuid() and pids[kernel].name == "sh"
    started = pids[kernel].started
    assert started is not None and abs(started - time.time()) < 30
    rss = [p.rss for p in sample.processes]
    assert rss == sorted(rss, reverse=True)
    assert sample.session_age is not None and sample.session_age > 0
    assert sample.load is not None and len(sample.load) == 3


def test_filesystems_and_shm_are_read_and_a_missing_path_is_said(tmp_path: Path) -> None:
    missing = str(tmp_path / "gone")
    sample = Sampler(kernel_pid=os.getpid(), paths=(str(tmp_path), missing), load_nvml=None).start().sample()
    (found,) = sample.filesystems
    info = os.statvfs(tmp_path)
    assert found.path == str(tmp_path) and found.total == info.f_blocks * info.f_frsize
    assert sample.shm is not None and sample.shm.path == "/dev/shm"
    assert f"paths not readable: {missing}" in sample.notes
    assert "gpu: NVML not used" in sample.notes


def test_memory_readers_are_injected_and_read_this_host_by_default() -> None:
    plain = Sampler(kernel_pid=os.getpid(), paths=(), load_nvml=None).start().sample()
    assert plain.memory is not None and plain.memory.total > 0
    assert plain.memory.available <= plain.memory.total
    assert plain.cgroup is not None or any(note.startswith("cgroup") for note in plain.notes)
    memory = HostMemory(8 << 30, 4 << 30, 0, 0)
    cgroup = CgroupMemory(2, "/kernel", 1 << 30, 2 << 30, 1)
    wired = Sampler(
        kernel_pid=os.getpid(),
        paths=(),
        load_nvml=None,
        host_memory=lambda notes: memory,
        cgroup_memory=lambda notes: cgroup,
    )
    sample = wired.start().sample()
    assert sample.memory == memory and sample.cgroup == cgroup

    def broken(notes: list[str]) -> HostMemory | None:
        raise RuntimeError("boom")

    sample = Sampler(kernel_pid=os.getpid(), paths=(), load_nvml=None, host_memory=broken).start().sample()
    assert sample.memory is None and "memory: not read: RuntimeError: boom" in sample.notes


def test_each_gpu_its_memory_utilisation_and_holders_through_nvml() -> None:
    nvml = FakeNvml()
    run = Sampler(kernel_pid=os.getpid(), paths=(), load_nvml=lambda: nvml).start()
    sample = run.sample()
    run.close()
    first, second = sample.gpus
    assert (first.index, first.uuid, first.memory_used, first.memory_total) == (0, "GPU-0", 1 << 30, 16 << 30)
    assert first.utilization == 87 and second.utilization is None
    assert first.processes == (GpuProcess(7, None), GpuProcess(500, 3 << 30))
    assert second.processes == (GpuProcess(7, None), GpuProcess(500, None))
    assert nvml.shut
    assert not [n for n in sample.notes if n.startswith("gpu")]


def test_no_nvml_is_a_note_every_sample() -> None:
    run = Sampler(kernel_pid=os.getpid(), paths=(), load_nvml=lambda: FakeNvml("Driver Not Loaded")).start()
    for _ in range(2):
        sample = run.sample()
        assert sample.gpus == ()
        assert "gpu: NVML not available: NvmlError: Driver Not Loaded" in sample.notes


def test_a_process_is_known_again_by_its_start_and_command() -> None:
    me = process_identity(os.getpid())
    assert me is not None and me == process_identity(os.getpid())
    assert sys.executable.rsplit("/", 1)[-1].split(".")[0] in me[1] or "python" in me[1]
    proc = subprocess.Popen(["sleep", "5"])
    deadline = time.monotonic() + 5
    other = process_identity(proc.pid)
    while (other is None or other[1] != "sleep 5") and time.monotonic() < deadline:
        time.sleep(0.01)  # until its exec is done
        other = process_identity(proc.pid)
    proc.kill()
    proc.wait()
    assert other is not None and other[1] == "sleep 5" and other[0] >= me[0]
    assert process_identity(proc.pid) is None


def test_watched_paths_default_to_the_working_directory_then_tmp_and_state(tmp_path: Path) -> None:
    state = tmp_path / "state"
    expected_first = "/content" if os.path.isdir("/content") else str(tmp_path)
    assert watched_paths((), state, tmp_path) == (expected_first, "/tmp", str(state))
    assert watched_paths(("/tmp", "/srv"), state, tmp_path) == ("/tmp", "/srv", str(state))
    first = ("/content",) if os.path.isdir("/content") else ()
    assert watched_paths((), state, None) == (*first, "/tmp", str(state)), "a deleted working directory"


class HangingNvml(FakeNvml):
    """A driver that stops answering: the memory read blocks until released."""

    def __init__(self) -> None:
        super().__init__()
        import threading

        self.release = threading.Event()

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> Any:
        self.release.wait(10)
        return super().nvmlDeviceGetMemoryInfo(handle)


def test_a_hanging_nvml_costs_the_gpu_part_not_the_sample() -> None:
    nvml = HangingNvml()
    run = Sampler(kernel_pid=os.getpid(), paths=(), load_nvml=lambda: nvml, nvml_timeout=0.2).start()
    began = time.monotonic()
    first = run.sample()
    assert time.monotonic() - began < 2
    assert first.gpus == () and "gpu: NVML did not answer within 0.2 s" in first.notes
    second = run.sample()
    assert second.gpus == () and any(n.startswith("gpu: NVML has not answered for") for n in second.notes)
    assert first.processes, "the rest of the sample is there"
    nvml.release.set()
    time.sleep(0.2)
    third = run.sample()
    assert len(third.gpus) == 2 and not [n for n in third.notes if n.startswith("gpu")]
    run.close()


VEGA64 = DATA / "hosts" / "amd" / "vega64-procfs"


def test_amd_gpus_memory_is_sampled_from_sysfs_where_nvml_lists_none(tmp_path: Path) -> None:
    """An AMD host: NVML has no GPU, so each DRM card that states its VRAM use is a GPU of the
    sample (named by its card and, where the KFD topology has it, its node); a card without
    the files (an integrated or another vendor's) is left out, a malformed one said in a note.
    card0 is the recorded Vega 64's (tests/data/hosts/amd/vega64-procfs/SOURCE.md), copied as
    recorded; card1's ``x``/``1`` are malformed values written here, not recordings; a single
    sample needs no 'used' that changes."""
    drm = tmp_path / "sys" / "class" / "drm"
    shutil.copytree(VEGA64 / "sys/class/drm/card0", drm / "card0")
    (drm / "card1" / "device").mkdir(parents=True)
    (drm / "card1" / "device" / "mem_info_vram_used").write_text("x\n")
    (drm / "card1" / "device" / "mem_info_vram_total").write_text("1\n")
    (drm / "card2" / "device").mkdir(parents=True)
    sampler = Sampler(kernel_pid=os.getpid(), paths=(), load_nvml=None, amd_root=tmp_path)
    sample = sampler.start().sample()
    assert [(g.uuid, g.memory_used, g.memory_total, g.utilization) for g in sample.gpus] == [
        ("card0", 1490378752, 8573157376, None)
    ]
    assert any("card1: mem_info_vram_used/mem_info_vram_total unreadable" in n for n in sample.notes)
    nothing = Sampler(kernel_pid=os.getpid(), paths=(), load_nvml=None, amd_root=None).start().sample()
    assert nothing.gpus == ()
