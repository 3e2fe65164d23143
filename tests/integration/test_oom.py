"""A real OOM kill, seen by the real recorder and explained by the real doctor: a memory cgroup
of 64 MiB (swap shut off for it); a launcher placed in it starts ``colabenv watch start``
(the recorder, detached, stays in the launcher's cgroup: its samples carry that cgroup's
counters) and then becomes the "kernel", a process that allocates past the limit. The kernel
kills it; ``colabenv doctor --json --since`` on the test's state directory names ``oom-kill``
with its pid, the cgroup's usage near the limit from the ring's samples and the kernel log's line.

The allocator is offered to the OOM killer (``oom_score_adj`` 1000): the recorder cannot be
kept from it by lowering its own (that takes CAP_SYS_RESOURCE, which root in a container may
lack), and the kernel chooses the allocator over it. Where no memory cgroup can be made (not
root, no memory controller) the test is skipped with the reason.
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

from colabenv.recorder.control import status, stop_recorder
from colabenv.recorder.ring import RING_NAME, read_ring

pytestmark = pytest.mark.slow

LIMIT = 64 * 1024 * 1024
V2_ROOT = Path("/sys/fs/cgroup")
V1_ROOT = Path("/sys/fs/cgroup/memory")

ALLOCATOR = r"""
import time
from pathlib import Path
Path("/proc/self/oom_score_adj").write_text("1000")
time.sleep(1.2)  # a few samples of the recorder before the memory rises
held = []
while True:  # 20 MiB/s: the last sample before the kill (every 0.5 s) is at most 10 MiB short
    held.append(bytearray(b"\x01") * (1 << 20))
    time.sleep(0.05)
"""

# the launcher: put this shell into the cgroup, start the recorder from it (the recorder
# inherits the cgroup), then become the kernel that allocates; its pid is the kernel's
LAUNCHER = 'echo $$ > "$1/cgroup.procs" && "$2" -m colabenv watch start --interval 0.5 && exec "$2" -c "$3"'


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


def _in_cgroup(folder: Path, pid: int) -> bool:
    return str(pid) in (folder / "cgroup.procs").read_text(encoding="ascii").split()


def test_a_real_oom_kill_is_named_by_doctor_from_the_recorders_ring(
    memory_cgroup: tuple[int, Path],
) -> None:
    version, folder = memory_cgroup
    state = Path(os.environ["COLABENV_STATE_DIR"])
    kernel = subprocess.Popen(
        ["sh", "-c", LAUNCHER, "sh", str(folder), sys.executable, ALLOCATOR],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        code = kernel.wait(timeout=90)
        out, err = kernel.communicate()
        assert code == -signal.SIGKILL, (code, out, err)
        recorder = status(state)
        assert recorder.running and recorder.pid is not None, (out, err)
        assert out == f"colabenv watch: recorder started: pid {recorder.pid}\n"
        assert recorder.kernel_pid == kernel.pid
        assert _in_cgroup(folder, recorder.pid), "the recorder is not in the test's cgroup"
        time.sleep(1.2)  # a few samples after the kill
        doctor = subprocess.run(
            [sys.executable, "-m", "colabenv", "doctor", "--json", "--since", "5m"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        stop_recorder(state, timeout=5)
    assert doctor.returncode == 1, doctor.stderr
    report = json.loads(doctor.stdout)

    ring = read_ring(state / RING_NAME)
    samples = ring.samples
    assert len(samples) >= 4
    assert all(s.cgroup is not None and s.cgroup.version == version for s in samples), samples[0].notes
    assert all(s.cgroup is not None and s.cgroup.path == f"/{folder.name}" for s in samples)
    assert samples[0].cgroup is not None and samples[0].cgroup.limit == LIMIT
    assert samples[0].cgroup.oom_kills == 0
    assert samples[-1].cgroup is not None and samples[-1].cgroup.oom_kills == 1
    assert any(p.pid == kernel.pid for s in samples for p in s.processes)

    # other OOM kills of the machine in the window are named too (each its own finding):
    # the one of this cgroup is the one with the oom_kill rise of its counter
    name = f"/{folder.name}"
    ours = [
        f
        for f in report["findings"]
        if f["kind"] == "oom-kill"
        and any(e["text"].startswith(f"cgroup {name}: oom_kill rose from 0 to 1") for e in f["evidence"])
    ]
    assert len(ours) == 1, report
    texts = [e["text"] for e in ours[0]["evidence"]]
    # the ring's sample before the kill: the cgroup's usage near its limit
    near = [t for t in texts if t.startswith(f"cgroup {name}: ") and " used of 64.0 MiB (" in t]
    assert near, texts
    percent = int(near[0].split(" used of 64.0 MiB (", 1)[1].split("%", 1)[0])
    assert percent >= 75, near
    assert any(t.startswith("memory rose ") for t in texts), texts
    if "pid" not in ours[0]:
        assert any("kernel log not read" in n for n in report["notes"]), report
        pytest.skip("the kernel log cannot be read here, so no pid: " + str(report["notes"]))
    assert ours[0]["pid"] == kernel.pid, report
    assert f"killed pid {kernel.pid} (python)" in ours[0]["summary"]
    assert f"its memory cgroup {name} reached its limit" in ours[0]["summary"]
    assert any(f"Killed process {kernel.pid} (python" in t for t in texts), texts
    assert any(t.startswith(f"pid {kernel.pid} (python) held ") for t in texts), texts
