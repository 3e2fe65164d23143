"""The kernel log's OOM lines: parsed from records and ``dmesg`` output recorded on this VM when a
process was killed in a 64 MiB memory cgroup (tests/data/kernel_log/), read from the real
``/dev/kmsg``, and an unreadable log said, never raised."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from colabenv.host import kernel_log
from colabenv.host.kernel_log import boot_time, parse_dmesg, parse_kmsg, parse_line, read_kernel_log
from colabenv.models import KernelEvent
from tests.support.paths import DATA

RECORDED = DATA / "kernel_log"
BOOTED = 1_790_000_000.0
SUMMARY = (
    "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,"
    "oom_memcg=/colabenv-record,task_memcg=/colabenv-record,task=python3,pid=4359,uid=0"
)
KILLED = (
    "Memory cgroup out of memory: Killed process 4359 (python3) total-vm:78064kB, anon-rss:65152kB, "
    "file-rss:6680kB, shmem-rss:0kB, UID:0 pgtables:192kB oom_score_adj:0"
)
EXPECTED = (
    KernelEvent(BOOTED + 10240.197471, 4359, "python3", "oom-kill", SUMMARY, "/colabenv-record"),
    KernelEvent(BOOTED + 10240.197495, 4359, "python3", "cgroup-oom", KILLED),
)


def _same(found: tuple[KernelEvent, ...]) -> None:
    assert [(e.pid, e.comm, e.kind, e.line, e.cgroup) for e in found] == [
        (e.pid, e.comm, e.kind, e.line, e.cgroup) for e in EXPECTED
    ]
    for event, expected in zip(found, EXPECTED, strict=True):
        assert event.time == pytest.approx(expected.time, abs=1e-6)


def test_recorded_kmsg_records() -> None:
    _same(parse_kmsg((RECORDED / "kmsg-memcg-oom.txt").read_text(encoding="utf-8"), BOOTED))


def test_recorded_dmesg_output() -> None:
    _same(parse_dmesg((RECORDED / "dmesg-memcg-oom.txt").read_text(encoding="utf-8"), BOOTED))


def test_a_file_of_records_stands_for_dev_kmsg() -> None:
    log = read_kernel_log(kmsg=RECORDED / "kmsg-memcg-oom.txt", booted=BOOTED)
    assert log.source == str(RECORDED / "kmsg-memcg-oom.txt") and log.reason is None
    _same(log.events)


def test_the_machines_oom_killer() -> None:
    """The line ``mm/oom_kill.c`` prints for the whole machine differs from the recorded one in its
    prefix alone (``__oom_kill_process(victim, "Out of memory")``)."""
    line = KILLED.replace("Memory cgroup out of memory", "Out of memory")
    assert parse_line(line, 5.0) == KernelEvent(5.0, 4359, "python3", "oom", line)


def test_a_name_with_spaces_and_parentheses() -> None:
    event = parse_line("Out of memory: Killed process 77 (pt (main) 1) total-vm:1kB", None)
    assert event is not None and (event.pid, event.comm, event.time) == (77, "pt (main) 1", None)
    summary = parse_line("oom-kill:constraint=CONSTRAINT_NONE,task_memcg=/a,b,task=x, y,pid=9,uid=1000", 1.0)
    assert summary is not None and (summary.comm, summary.pid, summary.cgroup) == ("x, y", 9, "/a,b")


@pytest.mark.parametrize(
    "message",
    [
        "python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
        "oom_reaper: reaped process 4359 (python3), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
        "Out of memory: Killed process 0 (swapper) total-vm:0kB",
        "Out of memory: Killed process 99999999 (x) total-vm:0kB",
        "Out of memory: Killed process 12 total-vm:0kB",
        "Tasks state (memory values in pages):",
    ],
)
def test_other_lines_are_no_event(message: str) -> None:
    assert parse_line(message, 1.0) is None


def test_continuation_lines_and_junk_are_skipped() -> None:
    text = f"3,418,10,-;{KILLED}\n SUBSYSTEM=memory\n DEVICE=+x\nnot a record\n\n6,419,20,-;{SUMMARY}\n"
    assert [e.kind for e in parse_kmsg(text, 0.0)] == ["cgroup-oom", "oom-kill"]
    assert parse_kmsg(text, 0.0)[0].time == pytest.approx(10e-6)


def test_dmesg_lines_without_a_time_keep_none() -> None:
    assert parse_dmesg(KILLED + "\n", 0.0)[0].time is None


def test_boot_time_is_uptime_ago() -> None:
    uptime = float(Path("/proc/uptime").read_text(encoding="ascii").split()[0])
    assert boot_time() == pytest.approx(time.time() - uptime, abs=5.0)


def test_the_real_dev_kmsg() -> None:
    if not os.access("/dev/kmsg", os.R_OK):
        pytest.skip("/dev/kmsg cannot be read here")
    log = read_kernel_log(dmesg=False)
    assert (log.source, log.reason) == ("/dev/kmsg", None)
    assert all(e.time is not None and e.time <= time.time() + 5 for e in log.events)


# ---------------------------------------------------------------------------------------------
# an unreadable log is said, not raised


def _stand_in(folder: Path, body: str) -> None:
    folder.mkdir(exist_ok=True)
    program = folder / "dmesg"
    program.write_text(f"#!/bin/sh\n{body}\n", encoding="ascii")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)


def test_no_kmsg_and_no_dmesg_asked(tmp_path: Path) -> None:
    log = read_kernel_log(kmsg=tmp_path / "kmsg", dmesg=False)
    assert log.events == () and log.source is None
    assert log.reason == f"{tmp_path / 'kmsg'}: no such file"


def test_a_refused_dmesg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _stand_in(
        tmp_path / "bin", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1"
    )
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    log = read_kernel_log(kmsg=tmp_path / "kmsg")
    assert log.events == () and log.source is None
    assert log.reason == (
        f"{tmp_path / 'kmsg'}: no such file; dmesg: exited 1: dmesg: read kernel buffer failed: "
        "Operation not permitted"
    )


def test_dmesg_stands_in_for_kmsg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _stand_in(tmp_path / "bin", f"cat {RECORDED / 'dmesg-memcg-oom.txt'}")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    log = read_kernel_log(kmsg=tmp_path, booted=BOOTED)
    assert log.source == "dmesg"
    _same(log.events)


def test_a_hanging_dmesg_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _stand_in(tmp_path / "bin", "exec sleep 30")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setattr(kernel_log, "DMESG_TIMEOUT_S", 0.5)
    started = time.monotonic()
    log = read_kernel_log(kmsg=tmp_path / "kmsg")
    assert time.monotonic() - started < 10
    assert log.reason is not None and log.reason.endswith("dmesg: did not finish within 0.5s")


def test_no_dmesg_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    log = read_kernel_log(kmsg=tmp_path / "kmsg")
    assert log.reason is not None and "dmesg: " in log.reason and "not found" in log.reason


def test_a_fifo_is_not_the_log(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "kmsg")
    log = read_kernel_log(kmsg=tmp_path / "kmsg", dmesg=False)
    assert log.reason is not None and "neither the kernel's log device nor a file" in log.reason
