"""Why a kernel died without a traceback: the recorder's samples, the memory cgroup now and the
kernel log's OOM lines, read into findings (docs/doctor.md, "Silent kernel deaths").

:func:`find_deaths` is pure: it reads nothing (but the shipped ``deaths.toml``, once, when no
facts are given) and names only what the samples and lines show, with their times; nothing
unusual is no finding. The kinds, most likely cause first: ``oom-kill`` (the cgroup's OOM-kill
counter rose, or a kernel line says the OOM killer killed a process), ``shm-full``,
``vram-full``, ``disk-full``, ``session-limit``; within a kind the latest first. An OOM line
that neither the counter, the samples, its cgroup nor the memory cgroup read now tie to this
runtime comes just before ``session-limit``, marked ``elsewhere`` (the report lists it after
every finding of this runtime).

Samples are taken in the order they were recorded (a ring is written in order; the wall clock
they carry may step back), and compared only with the sample before them: a counter that falls
(a new cgroup, a restarted recorder) starts again from its new value.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence

from colabenv._util.bounds import MAX_TIMESTAMP
from colabenv.errors import printable
from colabenv.models import (
    Accelerator,
    CgroupMemory,
    DeathFacts,
    Evidence,
    Finding,
    KernelEvent,
    RuntimeKind,
    Sample,
    SessionLimit,
)
from colabenv.models.deaths import OOM_KINDS

MIB = 1024 * 1024
GIB = 1024 * MIB
SHM_FULL_FREE_FRACTION = 0.10
"""``/dev/shm`` with at most this share free is full for a DataLoader: each worker puts whole
batches there (``num_workers * prefetch_factor`` of them in flight), so the last tenth of a
64 MiB container default holds less than one batch of 224x224 images."""
DISK_FULL_FREE_FRACTION = 0.01
"""A watched filesystem with at most 1% free (what an unprivileged user may still write) is full:
one checkpoint is larger than that on any disk a runtime has."""
VRAM_FULL_FRACTION = 0.95
"""A GPU with this share of its memory used is full: the caching allocators keep what they took,
so a process that needs one more block fails there."""
SESSION_LIMIT_MARGIN_S = 30 * 60.0
"""A session within half an hour of a limit is near it: the limits are "as much as", and a
session is often ended a little before."""
MATCH_SLACK_S = 5.0
"""How far a kernel line's time may lie outside the samples around it and still be theirs: the
log's time is the kernel's clock since boot plus the boot time, the samples' the wall clock."""
SAME_KILL_S = 10.0
"""Lines naming one pid within this many seconds tell of one kill (``oom-kill:`` and ``Killed
process`` come together)."""
RATE_SAMPLES = 5
"""How many samples before a kill the rise of memory is measured over."""
TOP_PROCESSES = 3
"""How many of the largest processes a finding names."""
_KIND_RANK = {"oom-kill": 0, "shm-full": 1, "vram-full": 2, "disk-full": 3, "session-limit": 5}
_UNRELATED_OOM_RANK = 4


def find_deaths(
    samples: Sequence[Sample],
    events: Sequence[KernelEvent],
    *,
    now: float,
    since: float | None,
    cgroup_now: CgroupMemory | None,
    runtime: RuntimeKind | None = None,
    accelerator: Accelerator | None = None,
    facts: DeathFacts | None = None,
) -> tuple[Finding, ...]:
    """The silent-death findings the samples (oldest first, as recorded), the kernel log's OOM
    ``events`` and the memory cgroup ``cgroup_now`` (read at ``now``) show from ``since`` on
    (epoch seconds; None: all of them), most likely cause first; none when nothing is unusual.

    ``runtime`` (and ``accelerator``, else GPUs in the samples) chooses the session limits that
    apply; without a runtime no limit is judged. ``facts`` are ``deaths.toml``'s (the shipped
    file when None).
    """
    if facts is None:
        from colabenv.catalog.deaths import shipped_death_facts

        facts = shipped_death_facts()
    ring = tuple(samples)
    inside = tuple(i for i, s in enumerate(ring) if since is None or s.time >= since)
    ranked: list[tuple[tuple[int, float], Finding]] = []
    ranked += _oom_kills(ring, inside, events, now, since, cgroup_now, facts)
    killed = {f.pid for _, f in ranked if f.pid is not None}
    ranked += _shm_full(ring, inside, facts)
    ranked += _vram_full(ring, inside, killed, facts)
    ranked += _disk_full(ring, inside, facts)
    ranked += _session_limit(ring, inside, runtime, accelerator, facts)
    ranked.sort(key=lambda item: item[0])
    return tuple(finding for _, finding in ranked)


# ---------------------------------------------------------------------------------------------
# oom-kill


class _Kill:
    """The lines about one killed pid, and the counter rise that accounts for them."""

    def __init__(self, event: KernelEvent) -> None:
        self.pid = event.pid
        self.comm = event.comm
        self.lines = [event]
        self.rise: _Rise | None = None

    @property
    def time(self) -> float | None:
        times = [e.time for e in self.lines if e.time is not None]
        return min(times) if times else None

    @property
    def cgroup(self) -> str | None:
        return next((e.cgroup for e in self.lines if e.cgroup is not None), None)

    @property
    def within_cgroup(self) -> bool:
        return any(e.kind == "cgroup-oom" for e in self.lines)


class _Rise:
    """The OOM-kill counter of one cgroup went up between two readings."""

    def __init__(
        self, before: Sample | None, after_time: float, after: CgroupMemory, count: int, was: int
    ) -> None:
        self.before = before
        self.after_time = after_time
        self.after = after
        self.count = count
        self.was = was

    def window(self) -> tuple[float, float]:
        start = self.before.time if self.before is not None else -math.inf
        low, high = (start, self.after_time) if start <= self.after_time else (self.after_time, start)
        return low - MATCH_SLACK_S, high + MATCH_SLACK_S

    def evidence(self) -> Evidence:
        path = printable(self.after.path)
        if self.before is None:
            text = f"cgroup {path}: oom_kill is {self.after.oom_kills}, from before the recording began"
        else:
            text = (
                f"cgroup {path}: oom_kill rose from {self.was} to {self.after.oom_kills} "
                f"between {_clock(self.before.time)} and {_clock(self.after_time)}"
            )
        return Evidence(text, self.after_time)


def _comparable(a: CgroupMemory | None, b: CgroupMemory | None) -> bool:
    return (
        a is not None
        and b is not None
        and a.version == b.version
        and a.path == b.path
        and a.oom_kills is not None
        and b.oom_kills is not None
    )


def _rises(
    ring: tuple[Sample, ...],
    inside: tuple[int, ...],
    now: float,
    since: float | None,
    cgroup_now: CgroupMemory | None,
) -> list[_Rise]:
    found = []
    for index in inside:
        if index == 0:
            continue
        a, b = ring[index - 1].cgroup, ring[index].cgroup
        if _comparable(a, b):
            assert a is not None and b is not None and a.oom_kills is not None and b.oom_kills is not None
            if b.oom_kills > a.oom_kills:
                found.append(
                    _Rise(ring[index - 1], ring[index].time, b, b.oom_kills - a.oom_kills, a.oom_kills)
                )
    last = ring[-1] if ring else None
    if last is not None and cgroup_now is not None and _comparable(last.cgroup, cgroup_now):
        assert last.cgroup is not None and last.cgroup.oom_kills is not None
        assert cgroup_now.oom_kills is not None
        if cgroup_now.oom_kills > last.cgroup.oom_kills:
            was = last.cgroup.oom_kills
            found.append(_Rise(last, now, cgroup_now, cgroup_now.oom_kills - was, was))
    if since is None:
        first = next((s for s in ring if s.cgroup is not None), None)
        start = first.cgroup if first is not None else cgroup_now
        if start is not None and start.oom_kills:
            found.append(_Rise(None, first.time if first is not None else now, start, start.oom_kills, 0))
    return found


def _group(events: Sequence[KernelEvent], since: float | None) -> list[_Kill]:
    kills: list[_Kill] = []
    chosen = [
        e
        for e in events
        if e.kind in OOM_KINDS and (since is None or (e.time is not None and e.time >= since))
    ]
    for event in sorted(chosen, key=lambda e: e.time if e.time is not None else -math.inf):
        for kill in kills:
            when = kill.time
            same_time = (when is None and event.time is None) or (
                when is not None and event.time is not None and abs(event.time - when) <= SAME_KILL_S
            )
            if kill.pid == event.pid and same_time:
                kill.lines.append(event)
                break
        else:
            kills.append(_Kill(event))
    return kills


def _belongs(kill: _Kill, path: str) -> bool:
    """The kill's memory cgroup (as the host names it) ends with ``path`` (as this namespace
    names it)."""
    cgroup = kill.cgroup
    return cgroup is not None and (cgroup == path or (cgroup.endswith(path.rstrip("/")) and path != "/"))


def _oom_kills(
    ring: tuple[Sample, ...],
    inside: tuple[int, ...],
    events: Sequence[KernelEvent],
    now: float,
    since: float | None,
    cgroup_now: CgroupMemory | None,
    facts: DeathFacts,
) -> list[tuple[tuple[int, float], Finding]]:
    kills = _group(events, since)
    seen_pids = {p.pid for s in ring for p in s.processes}
    unexplained: list[tuple[_Rise, int]] = []
    for rise in _rises(ring, inside, now, since, cgroup_now):
        low, high = rise.window()
        candidates = [k for k in kills if k.rise is None and k.time is not None and low <= k.time <= high]
        candidates.sort(key=lambda k: (not _belongs(k, rise.after.path), k.pid not in seen_pids))
        for kill in candidates[: rise.count]:
            kill.rise = rise
        left = rise.count - min(rise.count, len(candidates))
        if left:
            unexplained.append((rise, left))
    ranked = []
    remedy = facts.remedy("oom-kill")
    paths = {s.cgroup.path for s in ring if s.cgroup is not None}
    if cgroup_now is not None:
        paths.add(cgroup_now.path)
    for kill in kills:
        related = kill.rise is not None or kill.pid in seen_pids or any(_belongs(kill, p) for p in paths)
        finding = _kill_finding(ring, kill, remedy)
        if not related:
            finding = dataclasses.replace(finding, elsewhere=True)
        rank = _KIND_RANK["oom-kill"] if related else _UNRELATED_OOM_RANK
        ranked.append(((rank, -(finding.time or 0.0)), finding))
    for rise, left in unexplained:
        finding = _rise_finding(ring, rise, left, remedy)
        ranked.append(((_KIND_RANK["oom-kill"], -(finding.time or 0.0)), finding))
    return ranked


def _sample_before(ring: tuple[Sample, ...], when: float | None) -> Sample | None:
    """The last sample recorded at or before ``when`` (the last sample when ``when`` is None)."""
    if when is None:
        return ring[-1] if ring else None
    chosen = None
    for sample in ring:
        if sample.time <= when + MATCH_SLACK_S:
            chosen = sample
    return chosen


def _kill_finding(ring: tuple[Sample, ...], kill: _Kill, remedy: str) -> Finding:
    when = kill.time
    before = kill.rise.before if kill.rise is not None and kill.rise.before is not None else None
    if before is None:
        before = _sample_before(ring, when)
    if (
        before is not None
        and before.cgroup is not None
        and kill.within_cgroup
        and kill.cgroup is not None
        and not _belongs(kill, before.cgroup.path)
    ):
        before = None  # the samples are of another memory cgroup than the one that reached its limit
    name = printable(kill.comm)
    if kill.within_cgroup:
        cgroup = kill.cgroup or (kill.rise.after.path if kill.rise is not None else None)
        why = f"its memory cgroup{' ' + printable(cgroup) if cgroup else ''} reached its limit"
    else:
        why = "the machine ran out of memory"
    at = f" at {_clock(when)}" if when is not None else ""
    summary = f"the kernel's OOM killer killed pid {kill.pid} ({name}){at}: {why}"
    state = _memory_words(ring, before)
    if state:
        summary += f"; memory was {state}"
    evidence = [Evidence(printable(e.line), e.time) for e in kill.lines]
    if kill.rise is not None:
        evidence.append(kill.rise.evidence())
    evidence += _memory_evidence(ring, before, kill.pid)
    return Finding("oom-kill", summary, tuple(evidence), remedy, pid=kill.pid, time=when)


def _rise_finding(ring: tuple[Sample, ...], rise: _Rise, count: int, remedy: str) -> Finding:
    path = printable(rise.after.path)
    if rise.before is None:
        summary = (
            f"the kernel's OOM killer killed {count} process(es) in memory cgroup {path} "
            "before the recording began; no OOM line of the kernel log names them"
        )
        when = None
    else:
        summary = (
            f"the kernel's OOM killer killed {count} process(es) in memory cgroup {path} between "
            f"{_clock(rise.before.time)} and {_clock(rise.after_time)}; no OOM line of the kernel log "
            "names which"
        )
        when = rise.after_time
        state = _memory_words(ring, rise.before)
        if state:
            summary += f"; memory was {state}"
    evidence = [rise.evidence(), *_memory_evidence(ring, rise.before, None)]
    return Finding("oom-kill", summary, tuple(evidence), remedy, time=when)


def _used(sample: Sample) -> tuple[int, int | None, str] | None:
    """(used, the limit, which memory) of a sample: the cgroup's where it has a limit, else the
    host's."""
    if sample.cgroup is not None and sample.cgroup.limit is not None:
        return sample.cgroup.usage, sample.cgroup.limit, f"cgroup {printable(sample.cgroup.path)}"
    if sample.memory is not None and sample.memory.total > 0:
        used = max(0, sample.memory.total - sample.memory.available)
        return used, sample.memory.total, "host"
    return None


def _rate(ring: tuple[Sample, ...], before: Sample) -> tuple[float, float, int] | None:
    """(bytes a second, over seconds, samples) the memory rose by over the samples up to
    ``before``; None where fewer than two comparable samples or no time passed."""
    end = next((i for i in range(len(ring) - 1, -1, -1) if ring[i] is before), None)
    if end is None:
        return None
    last = _used(before)
    if last is None:
        return None
    window = [s for s in ring[max(0, end - RATE_SAMPLES + 1) : end + 1] if _used(s) is not None]
    window = [s for s in window if (u := _used(s)) is not None and u[2] == last[2]]
    if len(window) < 2:
        return None
    first = _used(window[0])
    assert first is not None
    seconds = before.time - window[0].time
    if seconds <= 0:
        return None
    return (last[0] - first[0]) / seconds, seconds, len(window)


def _memory_words(ring: tuple[Sample, ...], before: Sample | None) -> str:
    """``97% full (cgroup /x), rising 12.0 MiB/s`` at the sample before a kill."""
    if before is None:
        return ""
    used = _used(before)
    if used is None or not used[1]:
        return ""
    words = f"{_percent(used[0], used[1])} full ({used[2]}) at {_clock(before.time)}"
    rate = _rate(ring, before)
    if rate is not None and rate[0] > 0:
        words += f", rising {_size(int(rate[0]))}/s"
    return words


def _memory_evidence(ring: tuple[Sample, ...], before: Sample | None, pid: int | None) -> list[Evidence]:
    if before is None:
        return []
    found = []
    if before.memory is not None:
        m = before.memory
        used = max(0, m.total - m.available)
        swap = max(0, m.swap_total - m.swap_free)
        found.append(
            Evidence(
                f"host memory: {_size(used)} of {_size(m.total)} used ({_percent(used, m.total)}), "
                f"swap {_size(swap)} of {_size(m.swap_total)}",
                before.time,
            )
        )
    if before.cgroup is not None:
        c = before.cgroup
        limit = f"{_size(c.limit)} ({_percent(c.usage, c.limit)})" if c.limit else "no limit"
        found.append(
            Evidence(
                f"cgroup {printable(c.path)}: {_size(c.usage)} used of {limit}, oom_kill {c.oom_kills}",
                before.time,
            )
        )
    rate = _rate(ring, before)
    if rate is not None:
        found.append(
            Evidence(
                f"memory rose {_size(int(rate[0]))}/s over the last {rate[1]:.1f} s ({rate[2]} samples)"
                if rate[0] >= 0
                else f"memory fell {_size(int(-rate[0]))}/s over the last {rate[1]:.1f} s "
                f"({rate[2]} samples)",
                before.time,
            )
        )
    victim = next((p for p in before.processes if p.pid == pid), None)
    if victim is not None:
        found.append(
            Evidence(f"pid {victim.pid} ({printable(victim.name)}) held {_size(victim.rss)}", before.time)
        )
    largest = sorted(before.processes, key=lambda p: p.rss, reverse=True)[:TOP_PROCESSES]
    if largest:
        shown = ", ".join(f"{p.pid} {printable(p.name)} {_size(p.rss)}" for p in largest)
        found.append(Evidence(f"largest processes: {shown}", before.time))
    return found


# ---------------------------------------------------------------------------------------------
# shm-full, disk-full, vram-full, session-limit


def _shm_full(
    ring: tuple[Sample, ...], inside: tuple[int, ...], facts: DeathFacts
) -> list[tuple[tuple[int, float], Finding]]:
    full = [
        ring[i]
        for i in inside
        if (shm := ring[i].shm) is not None
        and shm.total > 0
        and shm.free <= SHM_FULL_FREE_FRACTION * shm.total
    ]
    if not full:
        return []
    first = full[0]
    assert first.shm is not None
    fullest = min(full, key=lambda s: s.shm.free / s.shm.total if s.shm is not None else 1.0)
    assert fullest.shm is not None
    used = first.shm.total - first.shm.free
    summary = (
        f"{printable(first.shm.path)} was {_percent(used, first.shm.total)} full at {_clock(first.time)} "
        f"({_size(first.shm.free)} free): DataLoader workers that pass batches through it die "
        'with "bus error"'
    )
    evidence = [_fs_evidence(first)]
    if fullest is not first:
        evidence.append(_fs_evidence(fullest))
    if len(full) > 2:
        evidence.append(Evidence(f"full in {len(full)} samples", full[-1].time))
    finding = Finding(
        "shm-full", summary, tuple(evidence), facts.remedy("shm-full"), path=first.shm.path, time=first.time
    )
    return [((_KIND_RANK["shm-full"], -first.time), finding)]


def _fs_evidence(sample: Sample, path: str | None = None) -> Evidence:
    use = sample.shm if path is None else next(f for f in sample.filesystems if f.path == path)
    assert use is not None
    used = use.total - use.free
    return Evidence(
        f"{printable(use.path)}: {_size(used)} of {_size(use.total)} used ({_percent(used, use.total)}), "
        f"{_size(use.free)} free",
        sample.time,
    )


def _disk_full(
    ring: tuple[Sample, ...], inside: tuple[int, ...], facts: DeathFacts
) -> list[tuple[tuple[int, float], Finding]]:
    ranked = []
    full: dict[str, list[Sample]] = {}
    for i in inside:
        for use in ring[i].filesystems:
            if use.total > 0 and use.free <= DISK_FULL_FREE_FRACTION * use.total:
                full.setdefault(use.path, []).append(ring[i])
    for path, samples in full.items():
        first = samples[0]
        use = next(f for f in first.filesystems if f.path == path)
        summary = (
            f"the filesystem of {printable(path)} was {_percent(use.total - use.free, use.total)} full "
            f"at {_clock(first.time)} ({_size(use.free)} free): writes there (checkpoints, caches) fail"
        )
        evidence = [_fs_evidence(first, path)]
        if len(samples) > 1:
            evidence.append(_fs_evidence(samples[-1], path))
        finding = Finding(
            "disk-full", summary, tuple(evidence), facts.remedy("disk-full"), path=path, time=first.time
        )
        ranked.append(((_KIND_RANK["disk-full"], -first.time), finding))
    return ranked


def _vram_full(
    ring: tuple[Sample, ...], inside: tuple[int, ...], killed: set[int], facts: DeathFacts
) -> list[tuple[tuple[int, float], Finding]]:
    ranked = []
    reported: set[int] = set()
    for index in inside:
        if index == 0:
            continue
        before, after = ring[index - 1], ring[index]
        for gpu in before.gpus:
            if gpu.memory_total <= 0 or gpu.memory_used < VRAM_FULL_FRACTION * gpu.memory_total:
                continue
            alive = {p.pid for p in after.processes}
            now = next((g for g in after.gpus if g.uuid == gpu.uuid), None)
            if now is None:
                continue  # not sampled after: nothing is known
            still = {p.pid for p in now.processes}
            for holder in gpu.processes:
                gone = holder.pid not in still and holder.pid not in alive
                if not gone or holder.pid in killed or holder.pid in reported:
                    continue
                reported.add(holder.pid)
                held = f", holding {_size(holder.used_memory)}" if holder.used_memory is not None else ""
                summary = (
                    f"pid {holder.pid} disappeared from GPU {gpu.index} between {_clock(before.time)} and "
                    f"{_clock(after.time)} while its memory was "
                    f"{_percent(gpu.memory_used, gpu.memory_total)} full"
                )
                evidence = (
                    Evidence(
                        f"GPU {gpu.index} ({printable(gpu.uuid)}): {_size(gpu.memory_used)} of "
                        f"{_size(gpu.memory_total)} used; pid {holder.pid} on it{held}",
                        before.time,
                    ),
                    Evidence(
                        f"GPU {gpu.index}: pid {holder.pid} no longer on it, {_size(now.memory_used)} used",
                        after.time,
                    ),
                )
                finding = Finding(
                    "vram-full", summary, evidence, facts.remedy("vram-full"), pid=holder.pid, time=after.time
                )
                ranked.append(((_KIND_RANK["vram-full"], -after.time), finding))
    return ranked


def _session_limit(
    ring: tuple[Sample, ...],
    inside: tuple[int, ...],
    runtime: RuntimeKind | None,
    accelerator: Accelerator | None,
    facts: DeathFacts,
) -> list[tuple[tuple[int, float], Finding]]:
    if runtime is None or runtime is RuntimeKind.GENERIC:
        return []
    aged = [ring[i] for i in inside if ring[i].session_age is not None]
    if not aged:
        return []
    last = aged[-1]
    assert last.session_age is not None
    age = last.session_age
    if accelerator is None and any(s.gpus for s in ring):
        accelerator = Accelerator.NVIDIA
    limits = [
        limit
        for limit in facts.limits
        if limit.runtime is runtime
        and (not limit.accelerators or accelerator is None or accelerator in limit.accelerators)
    ]
    near = [limit for limit in limits if abs(age - limit.hours * 3600) <= SESSION_LIMIT_MARGIN_S]
    if not near:
        return []
    limit = min(near, key=lambda item: abs(age - item.hours * 3600))
    summary = (
        f"the session was {age / 3600:.1f} h old at {_clock(last.time)}, near {_runtime_name(runtime)}'s "
        f"{limit.hours:g} h limit for {limit.plan}"
    )
    evidence = (
        Evidence(f"session age {age / 3600:.2f} h ({age:.0f} s) in the last sample", last.time),
        Evidence(_limit_words(limit, runtime, accelerator), None),
    )
    finding = Finding("session-limit", summary, evidence, facts.remedy("session-limit"), time=last.time)
    return [((_KIND_RANK["session-limit"], -last.time), finding)]


def _runtime_name(runtime: RuntimeKind) -> str:
    return {RuntimeKind.COLAB: "Colab", RuntimeKind.KAGGLE: "Kaggle"}.get(runtime, str(runtime))


def _limit_words(limit: SessionLimit, runtime: RuntimeKind, accelerator: Accelerator | None) -> str:
    told = f"the runtime is {_runtime_name(runtime)}"
    told += f", the accelerator {accelerator}" if accelerator is not None else ", the accelerator not told"
    return f"{told}; limit {limit.hours:g} h for {limit.plan} ({limit.source.text})"


# ---------------------------------------------------------------------------------------------
# words


def _clock(when: float | None) -> str:
    if when is None or not math.isfinite(when) or not 0 <= when <= MAX_TIMESTAMP:
        return "an unknown time"
    return time.strftime("%H:%M:%S UTC", time.gmtime(when))


def _size(count: int) -> str:
    if abs(count) >= GIB:
        return f"{count / GIB:.1f} GiB"
    return f"{count / MIB:.1f} MiB"


def _percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.0f}%" if whole > 0 else "?%"
