"""``host_memory()`` and ``cgroup_memory()``: against this machine's real ``/proc`` and cgroup, and
against recorded cgroup files laid out under a root folder (v1 as this VM has it, v2 as a
systemd host and a container with its own cgroup namespace have it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from colabenv.host.memory import cgroup_memory, host_memory
from colabenv.models import CgroupMemory, HostMemory

# /proc/meminfo of this VM (kernel 6.18), cut to the lines around the four read
MEMINFO = """\
MemTotal:       24684632 kB
MemFree:        20711820 kB
MemAvailable:   23974524 kB
Buffers:          112164 kB
Cached:          2537696 kB
SwapCached:            0 kB
Active(anon):     354100 kB
SwapTotal:             0 kB
SwapFree:              0 kB
HugePages_Total:       0
Hugepagesize:       2048 kB
"""

# this VM: cgroup v1 with the memory controller on its own hierarchy, a v2 hierarchy beside it
V1_CGROUP = """\
9:name=systemd:/
8:pids:/
4:memory:/process_api/d8f3988151ea77e120b5b262c65a2468
1:cpu:/
0::/
"""
V1_MOUNTINFO = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
# memory.oom_control of a v1 cgroup whose process the kernel had just killed (recorded here)
V1_OOM_CONTROL = "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n"
V1_UNLIMITED = "9223372036854771712\n"

# a systemd host under cgroup v2 (the shapes of memory.events with and without sock_throttled
# are what kernels 5.x and 6.x write)
V2_CGROUP = "0::/user.slice/user-1000.slice/session-2.scope\n"
V2_MOUNTINFO = (
    "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n"
)
V2_EVENTS = "low 0\nhigh 0\nmax 5608\noom 0\noom_kill 0\noom_group_kill 0\n"


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="ascii")
    return root


def _v1(root: Path, **overrides: str) -> Path:
    folder = "sys/fs/cgroup/memory/process_api/d8f3988151ea77e120b5b262c65a2468"
    files = {
        "proc/self/cgroup": V1_CGROUP,
        "proc/self/mountinfo": V1_MOUNTINFO,
        f"{folder}/memory.usage_in_bytes": "168828928\n",
        f"{folder}/memory.limit_in_bytes": "67108864\n",
        f"{folder}/memory.oom_control": V1_OOM_CONTROL,
    }
    files.update({f"{folder}/{k.replace('_', '.', 1)}": v for k, v in overrides.items()})
    return _tree(root, files)


def _v2(
    root: Path, cgroup: str = V2_CGROUP, mountinfo: str = V2_MOUNTINFO, folder: str | None = None
) -> Path:
    where = folder if folder is not None else "sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope"
    return _tree(
        root,
        {
            "proc/self/cgroup": cgroup,
            "proc/self/mountinfo": mountinfo,
            f"{where}/memory.current": "418742272\n",
            f"{where}/memory.max": "419430400\n",
            f"{where}/memory.events": V2_EVENTS,
        },
    )


# ---------------------------------------------------------------------------------------------
# the real host


def test_host_memory_reads_this_machine() -> None:
    notes: list[str] = []
    memory = host_memory(notes=notes)
    assert notes == []
    assert memory is not None
    assert 0 < memory.available <= memory.total
    assert memory.swap_free <= memory.swap_total
    assert memory.total % 1024 == 0


def test_cgroup_memory_reads_the_cgroup_this_process_is_in() -> None:
    text = Path("/proc/self/cgroup").read_text(encoding="ascii")
    v1 = [line.split(":", 2)[2] for line in text.splitlines() if "memory" in line.split(":")[1].split(",")]
    notes: list[str] = []
    cgroup = cgroup_memory(notes=notes)
    if cgroup is None:
        pytest.skip(f"no memory cgroup to read here: {notes}")
    if v1:
        assert (cgroup.version, cgroup.path) == (1, v1[0])
    else:
        assert cgroup.version == 2
    assert cgroup.usage > 0
    assert cgroup.oom_kills is None or cgroup.oom_kills >= 0


def test_cgroup_memory_of_another_process(tmp_path: Path) -> None:
    ours = cgroup_memory()
    theirs = cgroup_memory(pid=os.getpid())
    if ours is None:
        pytest.skip("no memory cgroup here")
    assert theirs is not None and theirs.path == ours.path


# ---------------------------------------------------------------------------------------------
# recorded files


def test_host_memory_from_recorded_meminfo(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"proc/meminfo": MEMINFO})
    assert host_memory(root) == HostMemory(24684632 * 1024, 23974524 * 1024, 0, 0)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (MEMINFO.replace("MemAvailable:   23974524 kB\n", ""), "no MemAvailable"),
        (MEMINFO + "MemTotal:       1 kB\n", "MemTotal is given twice"),
        (MEMINFO.replace("23974524", "2397x524"), "is not a 'Key: value kB' line"),
        (MEMINFO.replace("MemTotal:       24684632", "MemTotal:       9999999999999999999"), "past any"),
    ],
)
def test_host_memory_refuses_what_it_cannot_trust(tmp_path: Path, text: str, problem: str) -> None:
    root = _tree(tmp_path, {"proc/meminfo": text})
    notes: list[str] = []
    assert host_memory(root, notes=notes) is None
    assert len(notes) == 1 and notes[0].startswith("memory: /proc/meminfo: ") and problem in notes[0]


def test_host_memory_never_reads_a_fifo_or_a_huge_file(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    os.mkfifo(tmp_path / "proc" / "meminfo")
    notes: list[str] = []
    assert host_memory(tmp_path, notes=notes) is None
    assert "FIFO" in notes[0]
    (tmp_path / "proc" / "meminfo").unlink()
    (tmp_path / "proc" / "meminfo").write_text(MEMINFO * 2000, encoding="ascii")
    assert host_memory(tmp_path, notes=notes) is None
    assert "at most" in notes[1]


def test_cgroup_v1_with_a_limit_and_a_kill(tmp_path: Path) -> None:
    assert cgroup_memory(_v1(tmp_path)) == CgroupMemory(
        1, "/process_api/d8f3988151ea77e120b5b262c65a2468", 168828928, 67108864, 1
    )


def test_cgroup_v1_unlimited_is_no_limit(tmp_path: Path) -> None:
    cgroup = cgroup_memory(_v1(tmp_path, memory_limit_in_bytes=V1_UNLIMITED))
    assert cgroup is not None and cgroup.limit is None


def test_cgroup_v1_of_a_kernel_that_counts_no_kills(tmp_path: Path) -> None:
    """``oom_kill`` came to ``memory.oom_control`` with Linux 4.13: before it, the counter is None."""
    cgroup = cgroup_memory(_v1(tmp_path, memory_oom_control="oom_kill_disable 0\nunder_oom 0\n"))
    assert cgroup is not None and cgroup.oom_kills is None


def test_cgroup_v1_without_mountinfo_looks_in_the_usual_place(tmp_path: Path) -> None:
    root = _v1(tmp_path)
    (root / "proc/self/mountinfo").unlink()
    cgroup = cgroup_memory(root)
    assert cgroup is not None and cgroup.usage == 168828928


def test_cgroup_v2_systemd_session(tmp_path: Path) -> None:
    assert cgroup_memory(_v2(tmp_path)) == CgroupMemory(
        2, "/user.slice/user-1000.slice/session-2.scope", 418742272, 419430400, 0
    )


def test_cgroup_v2_no_limit_and_a_kill(tmp_path: Path) -> None:
    root = _v2(tmp_path)
    folder = root / "sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope"
    (folder / "memory.max").write_text("max\n", encoding="ascii")
    (folder / "memory.events").write_text(V2_EVENTS.replace("oom_kill 0", "oom_kill 3"), encoding="ascii")
    cgroup = cgroup_memory(root)
    assert cgroup is not None and (cgroup.limit, cgroup.oom_kills) == (None, 3)


def test_cgroup_v2_in_a_container_with_its_own_namespace(tmp_path: Path) -> None:
    """Docker with a private cgroup namespace: ``0::/``, the mount's root is ``/``, and the
    container's cgroup is the mount point itself."""
    root = _v2(tmp_path, cgroup="0::/\n", mountinfo=V2_MOUNTINFO, folder="sys/fs/cgroup")
    cgroup = cgroup_memory(root)
    assert cgroup is not None and (cgroup.path, cgroup.limit) == ("/", 419430400)


def test_cgroup_v2_in_a_container_mounted_at_its_own_cgroup(tmp_path: Path) -> None:
    """Without a cgroup namespace the container sees the host's path, and its mount's root is
    that path: the folder is the mount point."""
    mountinfo = "700 690 0:30 /system.slice/docker-abc.scope /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n"
    root = _v2(tmp_path, "0::/system.slice/docker-abc.scope\n", mountinfo, folder="sys/fs/cgroup")
    cgroup = cgroup_memory(root)
    assert cgroup is not None and cgroup.usage == 418742272


@pytest.mark.parametrize(
    ("cgroup", "mountinfo", "problem"),
    [
        ("0::/\n", V2_MOUNTINFO, "no memory.current"),
        ("garbage\n", V2_MOUNTINFO, "is not 'N:controllers:/path'"),
        ("0::/../outside\n", V2_MOUNTINFO, "outside this namespace"),
        ("3:cpu:/\n", V2_MOUNTINFO, "names no memory cgroup"),
        (
            "0::/elsewhere\n",
            "700 690 0:30 /system.slice/docker-abc.scope /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n",
            "not under its mount's root",
        ),
    ],
)
def test_cgroup_none_with_the_reason(tmp_path: Path, cgroup: str, mountinfo: str, problem: str) -> None:
    root = _v2(tmp_path)
    (root / "proc/self/cgroup").write_text(cgroup, encoding="ascii")
    (root / "proc/self/mountinfo").write_text(mountinfo, encoding="ascii")
    notes: list[str] = []
    assert cgroup_memory(root, notes=notes) is None
    assert len(notes) == 1 and notes[0].startswith("cgroup: ") and problem in notes[0], notes


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("memory.current", "-1\n", "is not a number of bytes"),
        ("memory.current", "12e9\n", "is not a number of bytes"),
        ("memory.max", "lots\n", "is not a number of bytes"),
        ("memory.events", "oom_kill one\n", "is not a 'key number' line"),
        ("memory.current", "99999999999999999999\n", "is not a number of bytes"),
    ],
)
def test_cgroup_v2_parses_strictly(tmp_path: Path, name: str, text: str, problem: str) -> None:
    root = _v2(tmp_path)
    (root / "sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope" / name).write_text(
        text, encoding="ascii"
    )
    notes: list[str] = []
    assert cgroup_memory(root, notes=notes) is None
    assert problem in notes[0]


def test_cgroup_v2_file_through_a_link_to_a_device_is_refused(tmp_path: Path) -> None:
    root = _v2(tmp_path)
    current = root / "sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope/memory.current"
    current.unlink()
    current.symlink_to("/dev/zero")
    notes: list[str] = []
    assert cgroup_memory(root, notes=notes) is None
    assert "character device" in notes[0]
