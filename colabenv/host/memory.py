"""The host's memory (``/proc/meminfo``) and the memory cgroup a process is in (v1 or v2), read
bounded and parsed strictly, for the recorder's samples and for ``colabenv doctor``.

Each reader returns None where its source cannot be read or does not hold what it should, and
appends why (one line: ``memory: ...``, ``cgroup: ...``) to ``notes`` when it is given, the form
a :class:`~colabenv.models.Sample` keeps in its ``notes``. ``root`` is where ``proc/`` and
``sys/`` are found: ``/`` on a host, a folder of recorded files in tests.

The cgroup is found as the kernel names it in ``/proc/PID/cgroup`` (``N:memory:/path`` under v1,
``0::/path`` under v2; v1's memory controller first, since a hybrid host keeps it there), and its
folder through ``/proc/PID/mountinfo`` (the mount of that hierarchy, its root taken off the
path), else under ``/sys/fs/cgroup``. Its own files only: usage and limit are this cgroup's, and
the OOM-kill counter counts the kills of its processes (v2 ``memory.events``, hierarchical;
v1 ``memory.oom_control``).
"""

from __future__ import annotations

import re
from pathlib import Path

from colabenv._util.files import FileProblem, read_limited
from colabenv.errors import printable
from colabenv.models import CgroupMemory, HostMemory

ROOT = Path("/")
MAX_FILE_BYTES = 64 * 1024
"""The most read of one file: ``/proc/meminfo`` and a cgroup's files are a few KiB."""
MAX_MOUNTINFO_BYTES = 1024 * 1024
"""``/proc/self/mountinfo`` of a host with many mounts (containers, snaps) runs to some KiB."""
MAX_BYTES = 1 << 60
"""1 EiB: a size past it is no memory any machine has."""
V1_NO_LIMIT = 1 << 60
"""A v1 ``memory.limit_in_bytes`` at or past this is no limit: the kernel writes its page
counter's maximum in bytes (9223372036854771712 on 64-bit) for "unlimited"."""
MEMINFO_KEYS = {
    "MemTotal": "total",
    "MemAvailable": "available",
    "SwapTotal": "swap_total",
    "SwapFree": "swap_free",
}
_MEMINFO_LINE = re.compile(r"([A-Za-z0-9_()]+):\s+([0-9]{1,19})(?: kB)?", re.ASCII)
_NUMBER = re.compile(r"[0-9]{1,19}", re.ASCII)
_CGROUP_LINE = re.compile(r"([0-9]{1,9}):([^:\n]*):(/[^\n]*)", re.ASCII)
_KEYED_LINE = re.compile(r"([a-z_]{1,40}) ([0-9]{1,19})", re.ASCII)


class _Unread(Exception):
    """Why a source could not be used, in words (no path in it unless it helps)."""


def host_memory(root: Path = ROOT, *, notes: list[str] | None = None) -> HostMemory | None:
    """``/proc/meminfo``'s total, available and swap, in bytes; None (and a note) where it cannot
    be read or lacks one of them (``MemAvailable`` came with Linux 3.14)."""
    try:
        return _meminfo(_read(root / "proc" / "meminfo", MAX_FILE_BYTES, "/proc/meminfo"))
    except _Unread as problem:
        _note(notes, f"memory: {problem}")
        return None


def cgroup_memory(
    root: Path = ROOT, *, pid: int | None = None, notes: list[str] | None = None
) -> CgroupMemory | None:
    """The memory cgroup of this process (or of ``pid``): its usage, limit and OOM-kill counter;
    None (and a note) where there is none to read."""
    proc = root / "proc" / ("self" if pid is None else str(pid))
    try:
        version, path = _membership(_read(proc / "cgroup", MAX_FILE_BYTES, f"/proc/{proc.name}/cgroup"))
        folder = _folder(root, proc, version, path)
        if version == 2:
            return _v2(folder, path)
        return _v1(folder, path)
    except _Unread as problem:
        _note(notes, f"cgroup: {problem}")
        return None


# ---------------------------------------------------------------------------------------------


def _note(notes: list[str] | None, text: str) -> None:
    if notes is not None:
        notes.append(printable(text)[:300])


def _read(path: Path, limit: int, shown: str | None = None) -> str:
    label = shown or path.name
    try:
        data = read_limited(path, limit)
    except FileProblem as problem:
        raise _Unread(f"{label}: {problem}") from None
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        raise _Unread(f"{label}: not ASCII text") from None


def _size(text: str, what: str) -> int:
    if not _NUMBER.fullmatch(text):
        raise _Unread(f"{what}: {printable(text)[:40]!r} is not a number of bytes")
    value = int(text)
    if value > MAX_BYTES:
        raise _Unread(f"{what}: {value} is past any machine's memory")
    return value


def _meminfo(text: str) -> HostMemory:
    found: dict[str, int] = {}
    for line in text.splitlines():
        match = _MEMINFO_LINE.fullmatch(line.strip())
        if match is None:
            if line.strip():
                raise _Unread(f"/proc/meminfo: {printable(line)[:60]!r} is not a 'Key: value kB' line")
            continue
        key = MEMINFO_KEYS.get(match.group(1))
        if key is None:
            continue
        if key in found:
            raise _Unread(f"/proc/meminfo: {match.group(1)} is given twice")
        found[key] = _size(match.group(2), f"/proc/meminfo: {match.group(1)}") * 1024
        if found[key] > MAX_BYTES:
            raise _Unread(f"/proc/meminfo: {match.group(1)} is past any machine's memory")
    missing = [name for name, key in MEMINFO_KEYS.items() if key not in found]
    if missing:
        raise _Unread(f"/proc/meminfo: no {', '.join(missing)}")
    return HostMemory(found["total"], found["available"], found["swap_total"], found["swap_free"])


def _membership(text: str) -> tuple[int, str]:
    """(1 or 2, the cgroup's path) of the memory controller in a ``/proc/PID/cgroup``."""
    unified: str | None = None
    for line in text.splitlines():
        if not line:
            continue
        match = _CGROUP_LINE.fullmatch(line)
        if match is None:
            raise _Unread(f"/proc/PID/cgroup: {printable(line)[:60]!r} is not 'N:controllers:/path'")
        hierarchy, controllers, path = match.groups()
        if ".." in path.split("/"):
            raise _Unread(f"/proc/PID/cgroup: the path {printable(path)[:60]!r} is outside this namespace")
        if "memory" in controllers.split(","):
            return 1, path
        if hierarchy == "0" and controllers == "":
            unified = path
    if unified is None:
        raise _Unread("/proc/PID/cgroup names no memory cgroup")
    return 2, unified


def _folder(root: Path, proc: Path, version: int, path: str) -> Path:
    """The cgroup's folder: the mount of its hierarchy (``mountinfo``), else the usual place."""
    mount = _mount(proc, version)
    if mount is None:
        base = root / "sys" / "fs" / "cgroup" / ("memory" if version == 1 else "")
        relative = path
    else:
        mount_root, mount_point = mount
        if mount_root == "/":
            relative = path
        elif path == mount_root or path.startswith(mount_root.rstrip("/") + "/"):
            relative = path[len(mount_root.rstrip("/")) :]
        else:
            raise _Unread(f"the cgroup {printable(path)[:60]!r} is not under its mount's root")
        base = root / mount_point.lstrip("/")
    folder = base / relative.strip("/") if relative.strip("/") else base
    return folder


def _mount(proc: Path, version: int) -> tuple[str, str] | None:
    """(the mount's root, its mount point) of the cgroup hierarchy holding memory; None where
    ``mountinfo`` cannot be read or names none."""
    try:
        text = _read(proc / "mountinfo", MAX_MOUNTINFO_BYTES)
    except _Unread:
        return None
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        dash = fields.index("-")
        if dash < 5 or len(fields) < dash + 4:
            continue
        fstype, options = fields[dash + 1], fields[dash + 3].split(",")
        wanted = fstype == "cgroup2" if version == 2 else fstype == "cgroup" and "memory" in options
        if wanted:
            return _unescape(fields[3]), _unescape(fields[4])
    return None


def _unescape(text: str) -> str:
    """A mountinfo field: spaces, tabs, newlines and backslashes are written as ``\\NNN``."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def _keyed(text: str, what: str) -> dict[str, int]:
    """A ``key value`` file (``memory.events``, ``memory.oom_control``)."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _KEYED_LINE.fullmatch(line.strip())
        if match is None:
            raise _Unread(f"{what}: {printable(line)[:60]!r} is not a 'key number' line")
        found[match.group(1)] = _size(match.group(2), f"{what} {match.group(1)}")
    return found


def _one(folder: Path, name: str) -> str:
    return _read(folder / name, MAX_FILE_BYTES).strip()


def _v2(folder: Path, path: str) -> CgroupMemory:
    if not (folder / "memory.current").exists():
        raise _Unread(f"{printable(path)[:60]}: no memory.current (the root cgroup, or no memory controller)")
    usage = _size(_one(folder, "memory.current"), "memory.current")
    text = _one(folder, "memory.max")
    limit = None if text == "max" else _size(text, "memory.max")
    events = _keyed(_one(folder, "memory.events"), "memory.events")
    return CgroupMemory(2, path, usage, limit, events.get("oom_kill"))


def _v1(folder: Path, path: str) -> CgroupMemory:
    usage = _size(_one(folder, "memory.usage_in_bytes"), "memory.usage_in_bytes")
    raw = _one(folder, "memory.limit_in_bytes")
    if not _NUMBER.fullmatch(raw):
        raise _Unread(f"memory.limit_in_bytes: {printable(raw)[:40]!r} is not a number of bytes")
    limit = None if int(raw) >= V1_NO_LIMIT else int(raw)
    control = _keyed(_one(folder, "memory.oom_control"), "memory.oom_control")
    return CgroupMemory(1, path, usage, limit, control.get("oom_kill"))
