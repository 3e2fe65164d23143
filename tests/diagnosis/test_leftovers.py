"""Leftovers holding a GPU, with real processes: NVML is faked at its boundary (a stand-in
reporting the pids of real processes this test starts, detached so they are no child of this
session), one of them of another user (started as nobody: the tests run as root); which are
named, which are ended, and how."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from colabenv.diagnosis.leftovers import Leftover, Session, end_leftover, find_leftovers, this_session
from colabenv.diagnosis.run import DoctorReport, doctor, find_gpu_leftovers
from colabenv.host.gpu_holders import GpuHolders, GpuProcess
from colabenv.host.proctree import ProcessFacts, process_facts

GIB = 1024**3
NOBODY = 65534
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="starting a process of another user needs root")

LAUNCH = '"$@" </dev/null >/dev/null 2>&1 & echo $!'
"""sh starts the command in the background, says its pid and exits: the command is no child of
the test (nobody can run sh, not the venv's Python under root's home)."""
STUBBORN = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(120)\n"


class FakeNvml:
    """NVML as pynvml answers: one GPU, held by ``pids`` (each 2 GiB)."""

    def __init__(self, pids: Sequence[int]) -> None:
        self.pids = list(pids)

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any:
        return index

    def nvmlDeviceGetName(self, handle: Any) -> str:
        return "NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any:
        return SimpleNamespace(total=80 * GIB, free=70 * GIB, used=10 * GIB)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> Sequence[Any]:
        return [SimpleNamespace(pid=pid, usedGpuMemory=2 * GIB) for pid in self.pids]


def state(pid: int) -> str | None:
    """The process's state letter, None once it is gone (a zombie is ``Z``: it has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2]


def alive(pid: int) -> bool:
    return state(pid) not in (None, "Z")


def orphan(argv: Sequence[str], *, user: int | None = None) -> int:
    """A process started through a launcher that exits at once: no child of this test."""
    done = subprocess.run(
        ["/bin/sh", "-c", LAUNCH, "sh", *argv],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
        user=user,
        group=user,
        cwd="/",
    )
    pid = int(done.stdout.strip())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (
        process_facts(pid) is None or process_facts(pid).parent == os.getpid()
    ):  # type: ignore[union-attr]
        time.sleep(0.02)
    return pid


@pytest.fixture
def started() -> Iterator[list[int]]:
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def leftover_doctor(pids: Sequence[int], *, kill: bool = False, grace: float = 1.0) -> DoctorReport:
    fake = FakeNvml(pids)
    return doctor(
        finders=(find_gpu_leftovers,),
        load_nvml=lambda: fake,
        nvml_needs_device=False,
        kill_leftovers=kill,
        grace=grace,
    )


@root_only
def test_leftovers_are_named_with_command_age_and_memory(started: list[int]) -> None:
    mine = orphan(["sleep", "97"])
    theirs = orphan(["sleep", "98"], user=NOBODY)
    started += [mine, theirs]
    report = leftover_doctor([mine, theirs, os.getpid(), os.getppid()])
    assert [f.pid for f in report.findings] == [mine, theirs]
    first = report.findings[0]
    assert first.kind == "gpu-leftover"
    assert "sleep 97" in first.summary and "2.0 GiB of GPU0 NVIDIA H100" in first.summary
    assert " ago" in first.summary and first.time is not None
    assert any("user id 0" in e.text for e in first.evidence)
    assert any(f"user id {NOBODY}" in e.text for e in report.findings[1].evidence)
    assert "--kill-leftovers" in first.remedy
    assert alive(mine) and alive(theirs), "doctor changes nothing without --kill-leftovers"


@root_only
def test_kill_leftovers_ends_this_users_only(started: list[int], tmp_path: Path) -> None:
    mine = orphan(["sleep", "96"])
    stubborn_file = tmp_path / "stubborn.py"
    stubborn_file.write_text(STUBBORN)
    stubborn = orphan([sys.executable, str(stubborn_file)])
    theirs = orphan(["sleep", "95"], user=NOBODY)
    started += [mine, stubborn, theirs]
    time.sleep(0.5)  # the stubborn one has set its handler
    said: list[str] = []
    fake = FakeNvml([mine, stubborn, theirs, os.getpid()])
    report = doctor(
        finders=(find_gpu_leftovers,),
        load_nvml=lambda: fake,
        nvml_needs_device=False,
        kill_leftovers=True,
        grace=1.0,
        say=said.append,
    )
    last = {f.pid: f.evidence[-1].text for f in report.findings}
    assert last[mine] == f"pid {mine} ended by SIGTERM"
    assert last[stubborn] == f"pid {stubborn} ended by SIGKILL after 1 s"
    assert last[theirs] == f"pid {theirs} not ended: it is user id {NOBODY}'s, not this user's (0)"
    assert not alive(mine) and not alive(stubborn)
    assert alive(theirs)
    assert os.getpid() not in last
    assert len(said) == 3 and all(line.startswith("ending pid ") for line in said), "named before"


def test_this_session_holds_its_ancestors_and_children(started: list[int]) -> None:
    child = subprocess.Popen(["sleep", "30"])
    started.append(child.pid)
    try:
        session = this_session()
        assert {os.getpid(), os.getppid(), child.pid} <= session.protected
        assert session.kernel == os.getpid() and session.who == "interpreter"
    finally:
        child.kill()
        child.wait()


def test_a_process_that_is_no_longer_the_one_named_is_left_alone(started: list[int]) -> None:
    pid = orphan(["sleep", "94"])
    started.append(pid)
    facts = process_facts(pid)
    assert facts is not None
    stale = ProcessFacts(pid, facts.parent, facts.uid, facts.start_ticks - 1)
    left = Leftover(pid, ((0, GIB),), "sleep 94", None, stale, None)
    done = end_leftover(left, Session(os.getpid(), "interpreter", frozenset()), grace=0.5)
    assert done.text == f"pid {pid} not ended: it is no longer the process named"
    assert alive(pid)


def test_the_session_is_never_a_leftover_nor_ended() -> None:
    me = os.getpid()
    holders = GpuHolders(
        ((0, "GPU", 80 * GIB),), (GpuProcess(0, me, GIB, "pytest"), GpuProcess(0, 4242, GIB, "x"))
    )
    session = Session(me, "kernel", frozenset({me}))
    found = find_leftovers(holders, session, facts=lambda pid: None, started=lambda pid: None)
    assert [left.pid for left in found] == [4242]
    own = Leftover(me, ((0, GIB),), "pytest", None, process_facts(me), None)
    assert "this session's" in end_leftover(own, session).text
    assert alive(me)


def test_no_nvidia_device_is_a_note_not_a_finding() -> None:
    report = doctor(finders=(find_gpu_leftovers,), load_nvml=lambda: FakeNvml([4242]), nvml_needs_device=True)
    if Path("/dev/nvidiactl").exists() or Path("/dev/nvidia0").exists():
        pytest.skip("this machine has an NVIDIA device")
    assert report.findings == () and report.notes == ("GPU leftovers: no NVIDIA device here",)


def test_nvml_that_fails_is_a_note() -> None:
    def broken() -> Any:
        raise OSError("libnvidia-ml.so.1: cannot open shared object file")

    report = doctor(finders=(find_gpu_leftovers,), load_nvml=broken, nvml_needs_device=False)
    assert report.findings == ()
    assert report.notes[0].startswith("GPU leftovers: not looked for (NVML: OSError")


def _fake_process(proc: Path, pid: int, parent: int, cmdline: str, uid: int = 0) -> None:
    folder = proc / str(pid)
    folder.mkdir(parents=True)
    rest = " ".join(["S", str(parent), *["0"] * 17, str(1000 + pid), *["0"] * 10])
    (folder / "stat").write_text(f"{pid} (x) {rest}\n")
    (folder / "status").write_text(f"Name:\tx\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
    (folder / "cmdline").write_bytes(cmdline.replace(" ", "\0").encode() + b"\0")


def test_under_a_kernel_its_children_are_the_session_and_an_old_one_is_not(tmp_path: Path) -> None:
    """A notebook: the IPython kernel (100) runs `!colabenv doctor` (300) through a shell (200)
    and has a DataLoader worker (400); an earlier kernel's worker (500) was left to init."""
    proc = tmp_path / "proc"
    _fake_process(proc, 1, 0, "/sbin/init")
    _fake_process(proc, 50, 1, "jupyter-server")
    _fake_process(proc, 100, 50, "python3 -m ipykernel_launcher -f kernel.json")
    _fake_process(proc, 200, 100, "/bin/sh -c colabenv doctor")
    _fake_process(proc, 300, 200, "python3 colabenv doctor")
    _fake_process(proc, 400, 100, "python3 -c worker")
    _fake_process(proc, 500, 1, "python3 -c worker", uid=NOBODY)
    session = this_session(proc, me=300)
    assert (session.kernel, session.who) == (100, "kernel")
    assert session.protected == frozenset({1, 50, 100, 200, 300, 400})
    holders = GpuHolders(
        ((0, "GPU", 80 * GIB),),
        tuple(GpuProcess(0, pid, GIB, "python3") for pid in (100, 400, 500)),
    )
    (left,) = find_leftovers(
        holders, session, facts=lambda pid: process_facts(pid, proc), started=lambda pid: None
    )
    assert left.pid == 500 and left.facts is not None and left.facts.uid == NOBODY
