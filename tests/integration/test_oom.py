"""A real OOM kill: a memory cgroup of 64 MiB (swap shut off for it), a sampler and a process that
allocates past the limit in it; the kernel kills the process, and ``find_deaths`` on the real
samples and the real kernel log names ``oom-kill`` with its pid.

The sampler is a small loop of this test (the recorder, ``colabenv watch``, is wired to the same
readers at merge): ``host_memory()`` and ``cgroup_memory()`` of the cgroup it runs in, and the
processes in it, one JSON line every 0.1 s. The allocator is offered to the OOM killer
(``oom_score_adj`` 1000), the sampler kept from it where it may be (-1000 takes
CAP_SYS_RESOURCE). Where no memory cgroup can be made (not root, no
memory controller) the test is skipped with the reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from colabenv.diagnosis.deaths import find_deaths
from colabenv.host.kernel_log import read_kernel_log
from colabenv.models import CgroupMemory, HostMemory, ProcessSample, Sample

pytestmark = pytest.mark.slow

LIMIT = 64 * 1024 * 1024
V2_ROOT = Path("/sys/fs/cgroup")
V1_ROOT = Path("/sys/fs/cgroup/memory")

SAMPLER = r"""
import json, os, signal, sys, time
from pathlib import Path
from colabenv.host.memory import cgroup_memory, host_memory

try:
    Path("/proc/self/oom_score_adj").write_text("-1000")
except OSError:
    pass  # lowering it takes CAP_SYS_RESOURCE; the allocator's 1000 makes it the one chosen anyway
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
out, folder = open(sys.argv[1], "a"), Path(sys.argv[2])

def process(pid):
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.split()
    rss = int(fields.get("VmRSS", ["0"])[0]) * 1024
    name = fields["Name"][0] if fields["Name"] else ""
    return [int(pid), int(fields["PPid"][0]), name, rss, int(fields["Uid"][0])]

while True:
    notes = []
    memory, cgroup = host_memory(notes=notes), cgroup_memory(notes=notes)
    processes = []
    for pid in (folder / "cgroup.procs").read_text().split():
        try:
            processes.append(process(pid))
        except (OSError, KeyError, IndexError, ValueError):
            pass
    record = {
        "time": time.time(),
        "memory": memory and [memory.total, memory.available, memory.swap_total, memory.swap_free],
        "cgroup": cgroup and [cgroup.version, cgroup.path, cgroup.usage, cgroup.limit, cgroup.oom_kills],
        "processes": processes,
        "notes": notes,
    }
    out.write(json.dumps(record) + "\n")
    out.flush()
    time.sleep(0.1)
"""

ALLOCATOR = r"""
import time
from pathlib import Path
Path("/proc/self/oom_score_adj").write_text("1000")
held = []
while True:
    held.append(bytearray(b"\x01") * (2 << 20))
    time.sleep(0.05)
"""

# write this shell's pid into the cgroup, then become the program: what runs is in the cgroup
# from its first instruction
IN_CGROUP = 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"'


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="ascii")


@pytest.fixture
def memory_cgroup() -> Iterator[tuple[int, Path]]:
    """(version, folder) of a new memory cgroup limited to :data:`LIMIT`, swap off; removed after."""
    if os.geteuid() != 0:
        pytest.skip("a memory cgroup can be made by root only")
    name = f"colabenv-oom-test-{os.getpid()}"
    controllers = V2_ROOT / "cgroup.controllers"
    try:
        if controllers.is_file() and "memory" in controllers.read_text(encoding="ascii").split():
            version, folder = 2, V2_ROOT / name
            if "memory" not in (V2_ROOT / "cgroup.subtree_control").read_text(encoding="ascii").split():
                _write(V2_ROOT / "cgroup.subtree_control", "+memory")
            folder.mkdir()
            _write(folder / "memory.max", str(LIMIT))
            if (folder / "memory.swap.max").exists():
                _write(folder / "memory.swap.max", "0")
        elif (V1_ROOT / "memory.limit_in_bytes").is_file():
            version, folder = 1, V1_ROOT / name
            folder.mkdir()
            _write(folder / "memory.limit_in_bytes", str(LIMIT))
            if (folder / "memory.memsw.limit_in_bytes").exists():
                _write(folder / "memory.memsw.limit_in_bytes", str(LIMIT))
        else:
            pytest.skip(
                "no memory controller: neither cgroup v2 with memory at /sys/fs/cgroup nor v1 at "
                "/sys/fs/cgroup/memory"
            )
    except OSError as error:
        pytest.skip(f"cannot make a memory cgroup: {error}")
    try:
        yield version, folder
    finally:
        _empty(folder)


def _empty(folder: Path) -> None:
    for _ in range(50):
        try:
            pids = [int(p) for p in (folder / "cgroup.procs").read_text(encoding="ascii").split()]
        except OSError:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            folder.rmdir()
            return
        except OSError:
            time.sleep(0.1)


def _start(folder: Path, *argv: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["sh", "-c", IN_CGROUP, "sh", str(folder), *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def _samples(path: Path) -> list[Sample]:
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        memory = HostMemory(*record["memory"]) if record["memory"] else None
        cgroup = CgroupMemory(*record["cgroup"]) if record["cgroup"] else None
        processes = tuple(ProcessSample(*p) for p in record["processes"])
        found.append(
            Sample(
                record["time"], memory, cgroup, processes, None, (), (), None, None, tuple(record["notes"])
            )
        )
    return found


def test_a_real_oom_kill_is_named_with_its_pid(memory_cgroup: tuple[int, Path], tmp_path: Path) -> None:
    version, folder = memory_cgroup
    started = time.time() - 1
    out = tmp_path / "samples.jsonl"
    sampler = _start(folder, sys.executable, "-c", SAMPLER, str(out), str(folder))
    try:
        deadline = time.monotonic() + 30
        while not (out.exists() and out.read_text(encoding="utf-8").count("\n") >= 3):
            assert sampler.poll() is None, sampler.stderr.read() if sampler.stderr else ""
            assert time.monotonic() < deadline, "the sampler wrote no sample"
            time.sleep(0.05)
        allocator = _start(folder, sys.executable, "-c", ALLOCATOR)
        assert allocator.wait(timeout=60) == -signal.SIGKILL
        time.sleep(0.6)  # a few samples after the kill
    finally:
        sampler.terminate()
        sampler.wait(timeout=10)
    samples = _samples(out)
    assert all(s.cgroup is not None and s.cgroup.version == version for s in samples), samples[0].notes
    assert samples[0].cgroup is not None and samples[0].cgroup.limit == LIMIT
    assert samples[-1].cgroup is not None and samples[-1].cgroup.oom_kills == 1
    assert any(p.pid == allocator.pid for s in samples for p in s.processes)

    log = read_kernel_log()
    findings = find_deaths(samples, log.events, now=time.time(), since=started, cgroup_now=None)
    assert findings, "no finding"
    first = findings[0]
    assert first.kind == "oom-kill"
    rose = [e.text for e in first.evidence if "oom_kill rose from 0 to 1" in e.text]
    assert rose and rose[0].startswith(f"cgroup /{folder.name}:")
    if not log.events:
        assert first.pid is None
        pytest.skip(f"the kernel log cannot be read here, so no pid: {log.reason}")
    assert first.pid == allocator.pid, (findings, log)
    assert "reached its limit" in first.summary
    assert any(f"Killed process {allocator.pid} (python" in e.text for e in first.evidence)
    assert [f.kind for f in findings].count("oom-kill") == 1
