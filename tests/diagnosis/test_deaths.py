"""``find_deaths()`` over sample sequences built here: each kind, each non-finding, the ``since``
window, and the edges (a counter that falls, parts missing, a clock that steps back); and the
shipped ``deaths.toml``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from colabenv.catalog.deaths import load_death_facts, shipped_death_facts
from colabenv.diagnosis.deaths import find_deaths
from colabenv.errors import CatalogError
from colabenv.models import (
    Accelerator,
    CgroupMemory,
    FilesystemUse,
    Finding,
    GpuProcess,
    GpuSample,
    HostMemory,
    KernelEvent,
    ProcessSample,
    RuntimeKind,
    Sample,
)

MIB = 1 << 20
GIB = 1 << 30
T0 = 1_795_000_000.0
CG = "/colab/session"
KILLED = "Memory cgroup out of memory: Killed process 4359 (python3) total-vm:78064kB, anon-rss:65152kB"
SUMMARY = f"oom-kill:constraint=CONSTRAINT_MEMCG,task_memcg={CG},task=python3,pid=4359,uid=0"


def sample(
    t: float,
    *,
    used: int = 2 * GIB,
    kills: int | None = 0,
    path: str = CG,
    cgroup: bool = True,
    limit: int | None = 4 * GIB,
    shm_free: int = 60 * MIB,
    disk_free: int = 50 * GIB,
    gpus: tuple[GpuSample, ...] = (),
    processes: tuple[ProcessSample, ...] | None = None,
    age: float | None = 3600.0,
) -> Sample:
    if processes is None:
        processes = (
            ProcessSample(4359, 100, "python3", used - 200 * MIB, 0),
            ProcessSample(4400, 4359, "pt_data_worker", 150 * MIB, 0),
            ProcessSample(100, 1, "jupyter-server", 50 * MIB, 0),
            ProcessSample(7, 1, "sshd", 5 * MIB, 0),
        )
    return Sample(
        time=t,
        memory=HostMemory(12 * GIB, 12 * GIB - used, 0, 0),
        cgroup=CgroupMemory(1, path, used, limit, kills) if cgroup else None,
        processes=processes,
        shm=FilesystemUse("/dev/shm", 64 * MIB, shm_free),
        filesystems=(
            FilesystemUse("/content", 100 * GIB, disk_free),
            FilesystemUse("/tmp", 100 * GIB, disk_free),
        ),
        gpus=gpus,
        load=(1.0, 1.0, 1.0),
        session_age=age,
    )


def quiet(n: int = 5, start: float = T0) -> list[Sample]:
    return [sample(start + 2 * i, age=3600.0 + 2 * i) for i in range(n)]


def kill_lines(t: float, pid: int = 4359) -> list[KernelEvent]:
    return [
        KernelEvent(t, pid, "python3", "oom-kill", SUMMARY.replace("4359", str(pid)), CG),
        KernelEvent(t + 0.00002, pid, "python3", "cgroup-oom", KILLED.replace("4359", str(pid))),
    ]


def deaths(samples: list[Sample], events: list[KernelEvent] = (), **kw: object) -> tuple[Finding, ...]:  # type: ignore[assignment]
    options: dict[str, object] = {
        "now": (samples[-1].time if samples else T0) + 1,
        "since": None,
        "cgroup_now": None,
    }
    options.update(kw)
    return find_deaths(samples, list(events), **options)  # type: ignore[arg-type]


def climbing() -> list[Sample]:
    """Memory climbing 256 MiB every 2 s to the 4 GiB limit, then the counter at 1."""
    rising = [sample(T0 + 2 * i, used=3 * GIB + 256 * MIB * i) for i in range(4)]
    return [*rising, sample(T0 + 8, used=1 * GIB, kills=1, processes=())]


# ---------------------------------------------------------------------------------------------
# nothing unusual


def test_nothing_unusual_is_no_finding() -> None:
    assert deaths(quiet()) == ()
    assert deaths([]) == ()
    assert deaths(quiet(), runtime=RuntimeKind.COLAB, cgroup_now=CgroupMemory(1, CG, GIB, 4 * GIB, 0)) == ()


def test_missing_parts_are_no_finding() -> None:
    samples = [
        sample(T0, cgroup=False),
        sample(T0 + 2, kills=None),
        sample(T0 + 4, kills=None),
        Sample(T0 + 6, None, None, (), None, (), (), None, None, ("memory: not wired",)),
        sample(T0 + 8, age=None),
    ]
    assert deaths(samples, runtime=RuntimeKind.COLAB) == ()


# ---------------------------------------------------------------------------------------------
# oom-kill


def test_a_counter_rise_with_its_kernel_lines() -> None:
    findings = deaths(climbing(), kill_lines(T0 + 7.0))
    assert [f.kind for f in findings] == ["oom-kill"]
    found = findings[0]
    assert (found.pid, found.time) == (4359, T0 + 7.0)
    assert "killed pid 4359 (python3)" in found.summary
    assert f"its memory cgroup {CG} reached its limit" in found.summary
    assert "94% full (cgroup /colab/session)" in found.summary  # 3.75 of 4 GiB at T0 + 6
    assert "rising 128.0 MiB/s" in found.summary
    texts = [e.text for e in found.evidence]
    assert texts[:2] == [SUMMARY, KILLED]
    assert f"cgroup {CG}: oom_kill rose from 0 to 1 between" in texts[2]
    assert any(t.startswith("memory rose 128.0 MiB/s over the last 6.0 s (4 samples)") for t in texts)
    assert any(t.startswith("pid 4359 (python3) held 3.6 GiB") for t in texts)
    assert any(
        t.startswith("largest processes: 4359 python3 3.6 GiB, 4400 pt_data_worker 150.0 MiB") for t in texts
    )
    assert "batch size" in found.remedy
    json.dumps(found.to_json())


def test_a_counter_rise_the_log_does_not_explain() -> None:
    (found,) = deaths(climbing())
    assert found.kind == "oom-kill" and found.pid is None and found.time == T0 + 8
    assert "killed 1 process(es) in memory cgroup /colab/session between" in found.summary
    assert "no OOM line of the kernel log names which" in found.summary


def test_a_kill_after_the_last_sample_seen_in_the_cgroup_now() -> None:
    samples = quiet()
    now = samples[-1].time + 30
    (found,) = deaths(samples, now=now, cgroup_now=CgroupMemory(1, CG, GIB, 4 * GIB, 2))
    assert found.kind == "oom-kill" and found.time == now
    assert "killed 2 process(es)" in found.summary
    with_lines = deaths(
        samples, kill_lines(now - 10), now=now, cgroup_now=CgroupMemory(1, CG, GIB, 4 * GIB, 1)
    )
    assert [(f.kind, f.pid) for f in with_lines] == [("oom-kill", 4359)]


def test_a_kernel_line_alone_for_a_process_of_this_runtime() -> None:
    (found,) = deaths(
        quiet(), [KernelEvent(T0 + 5, 4400, "pt_data_worker", "oom", "Out of memory: Killed process 4400")]
    )
    assert (found.kind, found.pid) == ("oom-kill", 4400)
    assert "the machine ran out of memory" in found.summary
    assert any(e.text.startswith("pid 4400 (pt_data_worker) held 150.0 MiB") for e in found.evidence)


def test_an_unrelated_kill_comes_after_the_other_findings() -> None:
    samples = [sample(T0 + 2 * i, shm_free=MIB) for i in range(3)]
    stranger = KernelEvent(T0 + 3, 999, "other", "oom", "Out of memory: Killed process 999 (other)")
    ours = KernelEvent(T0 + 1, 4359, "python3", "oom", "Out of memory: Killed process 4359 (python3)")
    assert [(f.kind, f.pid) for f in deaths(samples, [stranger, ours])] == [
        ("oom-kill", 4359),
        ("shm-full", None),
        ("oom-kill", 999),
    ]


def test_lines_about_one_pid_are_one_finding_and_a_reused_pid_is_another() -> None:
    lines = [*kill_lines(T0 + 1), *kill_lines(T0 + 500)]
    findings = deaths(quiet(), lines)
    assert [(f.pid, f.time) for f in findings] == [(4359, T0 + 500), (4359, T0 + 1)]
    assert all(len([e for e in f.evidence if "4359" in e.text and "Killed" in e.text]) == 1 for f in findings)


def test_a_counter_that_falls_starts_again() -> None:
    samples = [sample(T0, kills=4), sample(T0 + 2, kills=0), sample(T0 + 4, kills=0)]
    assert deaths(samples, since=T0 - 1) == ()
    (found,) = deaths([*samples, sample(T0 + 6, kills=1)], since=T0 - 1)
    assert "oom_kill rose from 0 to 1" in found.evidence[0].text


def test_another_cgroup_is_not_compared() -> None:
    samples = [sample(T0, kills=0), sample(T0 + 2, kills=3, path="/other")]
    assert deaths(samples, since=T0 - 1) == ()
    assert deaths(samples, since=T0 - 1, cgroup_now=CgroupMemory(2, "/other", 1, None, 9)) == ()


def test_the_since_window() -> None:
    samples = climbing()
    lines = kill_lines(T0 + 7)
    assert deaths(samples, lines, since=T0 + 9) == ()
    assert [f.pid for f in deaths(samples, lines, since=T0 + 5)] == [4359]


def test_kills_before_the_recording() -> None:
    samples = [sample(T0 + 2 * i, kills=2) for i in range(3)]
    (found,) = deaths(samples)
    assert "killed 2 process(es) in memory cgroup /colab/session before the recording began" in found.summary
    assert found.time is None
    assert deaths(samples, since=T0 - 100) == ()
    (only_now,) = deaths([], cgroup_now=CgroupMemory(2, "/", GIB, None, 1), now=T0)
    assert "before the recording began" in only_now.summary
    named, rest = deaths(samples, kill_lines(T0 - 50))
    assert named.pid == 4359 and any("from before the recording began" in e.text for e in named.evidence)
    assert rest.pid is None and "killed 1 process(es)" in rest.summary


def test_a_clock_that_steps_back() -> None:
    samples = [sample(T0, used=3 * GIB), sample(T0 + 2, used=3 * GIB + GIB // 2), sample(T0 - 60, kills=1)]
    (found,) = deaths(samples, kill_lines(T0 - 59))
    assert found.pid == 4359
    (alone,) = deaths(samples)
    assert alone.pid is None and alone.time == T0 - 60


# ---------------------------------------------------------------------------------------------
# shm-full, disk-full


def test_shm_full() -> None:
    samples = [
        sample(T0),
        sample(T0 + 2, shm_free=4 * MIB),
        sample(T0 + 4, shm_free=0),
        sample(T0 + 6, shm_free=MIB),
    ]
    (found,) = deaths(samples)
    assert (found.kind, found.path, found.time) == ("shm-full", "/dev/shm", T0 + 2)
    assert "/dev/shm was 94% full" in found.summary and "bus error" in found.summary
    assert [e.time for e in found.evidence] == [T0 + 2, T0 + 4, T0 + 6]
    assert "DataLoader workers" in found.remedy
    assert deaths([sample(T0, shm_free=32 * MIB)]) == ()
    assert deaths(samples, since=T0 + 7) == ()


def test_disk_full() -> None:
    samples = [sample(T0), sample(T0 + 2, disk_free=500 * MIB), sample(T0 + 4, disk_free=0)]
    findings = deaths(samples)
    assert [(f.kind, f.path, f.time) for f in findings] == [
        ("disk-full", "/content", T0 + 2),
        ("disk-full", "/tmp", T0 + 2),
    ]
    assert "the filesystem of /content was 100% full" in findings[0].summary
    assert deaths([sample(T0, disk_free=5 * GIB)]) == ()


# ---------------------------------------------------------------------------------------------
# vram-full


def gpu(used: int, *pids: int) -> tuple[GpuSample, ...]:
    holders = tuple(GpuProcess(p, 14 * GIB) for p in pids)
    return (GpuSample(0, "GPU-1d2c", used, 16 * GIB, 99, holders),)


def test_a_gpu_process_vanishes_while_its_memory_is_full() -> None:
    samples = [
        sample(T0, gpus=gpu(15 * GIB + GIB // 2, 4359)),
        sample(T0 + 2, gpus=gpu(GIB // 2), processes=()),
    ]
    (found,) = deaths(samples)
    assert (found.kind, found.pid, found.time) == ("vram-full", 4359, T0 + 2)
    assert "pid 4359 disappeared from GPU 0" in found.summary and "97% full" in found.summary
    assert "expandable_segments:True" in found.remedy


@pytest.mark.parametrize(
    "after",
    [
        sample(T0 + 2, gpus=gpu(GIB // 2)),  # still alive: it let go of the GPU
        sample(T0 + 2, processes=()),  # the GPU was not sampled after
        sample(T0 + 2, gpus=gpu(15 * GIB, 4359), processes=()),  # still on it
    ],
)
def test_no_vram_finding(after: Sample) -> None:
    assert deaths([sample(T0, gpus=gpu(15 * GIB + GIB // 2, 4359)), after]) == ()


def test_no_vram_finding_when_the_gpu_had_room() -> None:
    assert deaths([sample(T0, gpus=gpu(8 * GIB, 4359)), sample(T0 + 2, gpus=gpu(0), processes=())]) == ()


def test_an_oom_kill_of_the_gpu_process_is_said_once() -> None:
    samples = [sample(T0, gpus=gpu(15 * GIB + GIB // 2, 4359)), sample(T0 + 2, gpus=gpu(0), processes=())]
    assert [f.kind for f in deaths(samples, kill_lines(T0 + 1))] == ["oom-kill"]


# ---------------------------------------------------------------------------------------------
# session-limit


def aged(hours: float, **kw: object) -> list[Sample]:
    return [sample(T0 + 2 * i, age=hours * 3600 + 2 * i, **kw) for i in range(3)]  # type: ignore[arg-type]


def test_colab_near_its_free_limit() -> None:
    (found,) = deaths(aged(11.8), runtime=RuntimeKind.COLAB)
    assert found.kind == "session-limit" and found.time == T0 + 4
    assert "near Colab's 12 h limit for the free plan" in found.summary
    assert (
        "the runtime is Colab" in found.evidence[1].text and "research.google.com" in found.evidence[1].text
    )
    assert "resumable segments" in found.remedy


def test_colab_past_the_free_limit_is_on_a_paid_plan() -> None:
    assert deaths(aged(18.0), runtime=RuntimeKind.COLAB) == ()
    (found,) = deaths(aged(23.8), runtime=RuntimeKind.COLAB)
    assert "24 h limit for paid plans" in found.summary


def test_kaggle_limits_by_accelerator() -> None:
    (tpu,) = deaths(aged(8.9), runtime=RuntimeKind.KAGGLE, accelerator=Accelerator.TPU)
    assert "Kaggle's 9 h limit for TPU sessions" in tpu.summary
    assert deaths(aged(8.9, gpus=gpu(GIB)), runtime=RuntimeKind.KAGGLE) == ()
    (gpu_session,) = deaths(aged(11.9, gpus=gpu(GIB)), runtime=RuntimeKind.KAGGLE)
    assert "12 h limit for CPU and GPU sessions" in gpu_session.summary
    (unknown,) = deaths(aged(8.9), runtime=RuntimeKind.KAGGLE)
    assert "TPU sessions" in unknown.summary and "the accelerator not told" in unknown.evidence[1].text


def test_no_session_limit_without_a_runtime() -> None:
    assert deaths(aged(11.9)) == ()
    assert deaths(aged(11.9), runtime=RuntimeKind.GENERIC) == ()


# ---------------------------------------------------------------------------------------------
# the order, and the facts


def test_most_likely_cause_first() -> None:
    samples = [
        sample(T0, gpus=gpu(15 * GIB + GIB // 2, 5000), age=11.9 * 3600),
        sample(T0 + 2, kills=1, shm_free=0, disk_free=0, gpus=gpu(GIB), age=11.9 * 3600 + 2),
    ]
    kinds = [f.kind for f in deaths(samples, kill_lines(T0 + 1), runtime=RuntimeKind.COLAB)]
    assert kinds == ["oom-kill", "shm-full", "vram-full", "disk-full", "disk-full", "session-limit"]


def test_the_shipped_facts_give_every_kind_a_remedy_with_sources() -> None:
    facts = shipped_death_facts()
    for kind in ("oom-kill", "shm-full", "disk-full", "vram-full", "session-limit"):
        assert facts.remedy(kind)
    assert all(r.source.text for r in facts.remedies) and all(limit.source.text for limit in facts.limits)
    assert sorted((limit.runtime.value, limit.hours) for limit in facts.limits) == [
        ("colab", 12.0),
        ("colab", 24.0),
        ("kaggle", 9.0),
        ("kaggle", 12.0),
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            'schema = 1\n[[session_limit]]\nruntime = "lambda"\nhours = 1\nplan = "x"\nsource = "s"\n',
            "'lambda' is not",
        ),
        (
            'schema = 1\n[[session_limit]]\nruntime = "colab"\nhours = 0\nplan = "x"\nsource = "s"\n',
            "more than 0",
        ),
        ("schema = 1\n[[session_limit]]\n[[remedy]]\n", "missing"),
    ],
)
def test_a_bad_facts_file_is_refused(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(CatalogError, match=problem):
        load_death_facts(tmp_path / "deaths.toml", text.encode())


def test_a_kind_without_a_remedy_is_refused(tmp_path: Path) -> None:
    shipped = (Path(__file__).parents[2] / "profiles" / "catalog" / "deaths.toml").read_text(encoding="utf-8")
    cut = shipped.split('[[remedy]]\nkind = "session-limit"')[0]
    with pytest.raises(CatalogError, match="no remedy for session-limit"):
        load_death_facts(tmp_path / "deaths.toml", cut.encode())


def test_custom_facts_are_used() -> None:
    facts = shipped_death_facts()
    mine = type(facts)(facts.limits, tuple(r for r in facts.remedies if r.kind != "shm-full"))
    (found,) = deaths([sample(T0, shm_free=0)], facts=mine)
    assert found.remedy == ""


def test_a_kill_in_this_cgroup_as_the_host_names_it_is_related() -> None:
    """The log names the host's path of the cgroup (``/docker/abc/colab/session``), the samples
    the path this namespace sees (``/colab/session``): the kill is this runtime's."""
    samples = [sample(T0 + 2 * i, shm_free=MIB, processes=()) for i in range(3)]
    line = f"oom-kill:constraint=CONSTRAINT_MEMCG,task_memcg=/docker/abc{CG},task=x,pid=555,uid=0"
    elsewhere = line.replace(f"/docker/abc{CG}", "/docker/abc/other").replace("555", "556")
    events = [
        KernelEvent(T0 + 1, 555, "x", "oom-kill", line, f"/docker/abc{CG}"),
        KernelEvent(T0 + 1, 556, "x", "oom-kill", elsewhere, "/docker/abc/other"),
    ]
    assert [(f.kind, f.pid) for f in deaths(samples, events)] == [
        ("oom-kill", 555),
        ("shm-full", None),
        ("oom-kill", 556),
    ]


def test_a_kill_in_another_memory_cgroup_is_not_described_by_these_samples() -> None:
    """Another container's OOM kill in the window: its memory cgroup, not the one the samples
    show, reached its limit, so the samples' cgroup figures are not its evidence."""
    other = "/elsewhere"
    summary = f"oom-kill:constraint=CONSTRAINT_MEMCG,task_memcg={other},task=python,pid=999,uid=0"
    lines = [
        KernelEvent(T0 + 5, 999, "python", "oom-kill", summary, cgroup=other),
        KernelEvent(
            T0 + 5, 999, "python", "cgroup-oom", "Memory cgroup out of memory: Killed process 999 (python)"
        ),
    ]
    (found,) = deaths(quiet(), lines)
    assert (found.kind, found.pid) == ("oom-kill", 999)
    assert f"its memory cgroup {other} reached its limit" in found.summary
    assert "full (cgroup" not in found.summary, found.summary
    assert not any(e.text.startswith(f"cgroup {CG}:") for e in found.evidence), found.evidence


def test_without_a_ring_the_cgroup_read_now_ties_a_kill_to_this_runtime() -> None:
    """No recorder ran: the memory cgroup read now still says which kills are this runtime's;
    another cgroup's kill, though later, comes after it, marked as elsewhere (issue 34)."""
    other = "/system.slice/other"
    stranger = KernelEvent(
        T0 + 9, 999, "other", "oom-kill", SUMMARY.replace(CG, other).replace("4359", "999"), other
    )
    events = [*kill_lines(T0 + 1), stranger]
    now = CgroupMemory(2, CG, GIB, 4 * GIB, 1)
    found = deaths([], events, now=T0 + 10, cgroup_now=now)
    assert [(f.pid, f.elsewhere) for f in found] == [(4359, False), (999, True)]
    assert found[1].to_json()["elsewhere"] is True and "elsewhere" not in found[0].to_json()
    alone = deaths([], events, now=T0 + 10)
    assert all(f.elsewhere for f in alone), "without the cgroup nothing ties either kill here"


def test_doctor_lists_this_runtimes_findings_before_anything_elsewhere() -> None:
    """Across finders: an OOM kill of another cgroup, from the kernel log, came above the import
    failure of the notebook's own interpreter (issue 34)."""
    from colabenv.cli.doctor import report_text
    from colabenv.diagnosis.run import Found, doctor

    stranger = Finding(
        "oom-kill", "the kernel's OOM killer killed pid 999 (other)", (), "", pid=999, elsewhere=True
    )
    ours = Finding("import-failure", "import torch fails", (), "reinstall torch", module="torch")
    report = doctor(
        imports=("json",),
        finders=(lambda context: Found((stranger,)), lambda context: Found((ours,))),
    )
    assert report.findings == (ours, stranger)
    text = report_text(report)
    assert text.index("import torch fails") < text.index("elsewhere on this host") < text.index("pid 999")
