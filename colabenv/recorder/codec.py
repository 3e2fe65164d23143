"""One :class:`~colabenv.models.Sample` as the bytes of a ring record, and back.

A record's payload is compact JSON (arrays in a fixed order, no key names; ASCII only),
compressed with zlib: a sample of a host with a few GPUs is well under a slot. Decoding checks
every value where it is read (types, ranges, lengths): a record that passes its checksum but
holds anything else is not a sample (:class:`NotASample`), never an exception of another kind.

Format version 1, a sample::

    [time, memory, cgroup, processes, shm, filesystems, gpus, load, session_age, notes]
    memory      [total, available, swap_total, swap_free] or null
    cgroup      [version, path, usage, limit|null, oom_kills|null] or null
    processes   [[pid, ppid, name, rss, uid, started|null], ...]
    shm         [path, total, free] or null; filesystems [[path, total, free], ...]
    gpus        [[index, uuid, memory_used, memory_total, utilization|null, [[pid, used|null], ...]], ...]
    load        [1 min, 5 min, 15 min] or null; session_age: seconds or null; notes: [text, ...]
"""

from __future__ import annotations

import dataclasses
import json
import math
import zlib
from collections.abc import Callable
from typing import Any, TypeVar

from colabenv._util.bounds import MAX_TIMESTAMP
from colabenv.models import watch

MAX_DECODED = 256 * 1024
"""The most a record's payload may inflate to: far beyond any sample, short of a bomb."""
_HELD_SAMPLE = 600
_HELD_PROCESS = 500
_HELD_PART = 200
_HELD_TEXT = 60
"""What a decoded sample, process, other part (a filesystem, a GPU, a GPU's holder) and text
hold in memory beyond their characters, about (CPython 3.11; :func:`held_bytes`)."""
MAX_INT = 1 << 62
MAX_TEXT = 4096
MAX_ITEMS = 256
_PID_MAX = 1 << 31
_UID_MAX = 1 << 32
_NAME_MAX = 64


T = TypeVar("T")


def _maker(cls: type[T]) -> Callable[..., T]:
    """A positional constructor of the model ``cls`` for values already checked: what its
    ``__init__`` leaves (each field in the instance's ``__dict__``), without binding arguments
    one by one in Python (:mod:`colabenv.models.frozen`); for the parts a ring holds thousands of."""
    names = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    count = len(names)
    new = object.__new__

    def make(*values: object) -> T:
        if len(values) != count:  # zip's strict=True costs about as much as the rest
            raise TypeError(f"{cls.__name__}: {count} values expected, {len(values)} given")
        made = new(cls)
        made.__dict__.update(zip(names, values, strict=False))  # counted above
        return made

    return make


class NotASample(Exception):
    """A whole record whose payload is not a sample of this format."""


def encode(sample: watch.Sample) -> bytes:
    """The payload of one record."""
    processes = [[p.pid, p.ppid, p.name, p.rss, p.uid, p.started] for p in sample.processes]
    gpus = [
        [
            g.index,
            g.uuid,
            g.memory_used,
            g.memory_total,
            g.utilization,
            [[p.pid, p.used_memory] for p in g.processes],
        ]
        for g in sample.gpus
    ]
    memory = sample.memory
    cgroup = sample.cgroup
    document = [
        sample.time,
        None if memory is None else [memory.total, memory.available, memory.swap_total, memory.swap_free],
        None
        if cgroup is None
        else [cgroup.version, cgroup.path, cgroup.usage, cgroup.limit, cgroup.oom_kills],
        processes,
        None if sample.shm is None else _fs(sample.shm),
        [_fs(f) for f in sample.filesystems],
        gpus,
        None if sample.load is None else list(sample.load),
        sample.session_age,
        list(sample.notes),
    ]
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return zlib.compress(text.encode("ascii"), 6)


def _fs(use: watch.FilesystemUse) -> list[object]:
    return [use.path, use.total, use.free]


def decode(payload: bytes, seen: dict[object, Any] | None = None) -> watch.Sample:
    """The sample a record's payload holds; :class:`NotASample` for anything else.

    ``seen``: the small parts already decoded while reading one ring (a filesystem, the memory
    figures, the cgroup), by their exact values and types: some repeat from one sample to the
    next, and a value decoded and checked once is the same immutable model again. Processes are
    not looked up: their RSS and start times (read against the uptime) change from one sample to
    the next, so a ring of a live host would pay the look-up and seldom find one
    (:func:`_process` is quick instead)."""
    try:
        inflate = zlib.decompressobj()
        raw = inflate.decompress(payload, MAX_DECODED)
        if inflate.unconsumed_tail or not inflate.eof:
            raise NotASample("the payload does not inflate whole within its bound")
        document = json.loads(raw.decode("ascii"))
    except (zlib.error, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise NotASample(type(exc).__name__) from None
    moment, memory, cgroup, processes, shm, filesystems, gpus, load, age, notes = _list(document, 10, 10)
    memo = {} if seen is None else seen
    return _make_sample(
        _time(moment),
        None if memory is None else _once(memo, memory, _memory),
        None if cgroup is None else _once(memo, cgroup, _cgroup),
        tuple([_process(p) for p in _list(processes)]),
        None if shm is None else _once(memo, shm, _filesystem),
        tuple([_once(memo, f, _filesystem) for f in _list(filesystems)]),
        tuple([_gpu(g) for g in _list(gpus)]),
        None if load is None else _load(load),
        None if age is None else _seconds(age),
        tuple([_text(n, 500) for n in _list(notes)]),
    )


def held_bytes(sample: watch.Sample) -> int:
    """About what ``sample`` holds in memory once decoded (a little more, never much less): what
    a reader of many records counts against its bound, since a record of under a KiB may
    inflate to :data:`MAX_DECODED` of JSON and hold more than that as objects."""
    held = _HELD_SAMPLE + sum(_HELD_PROCESS + len(p.name) for p in sample.processes)
    parts = [*sample.filesystems, *([] if sample.shm is None else [sample.shm])]
    held += sum(_HELD_PART + len(f.path) for f in parts)
    held += sum(_HELD_PART * (1 + len(g.processes)) + len(g.uuid) for g in sample.gpus)
    held += sum(_HELD_TEXT + len(n) for n in sample.notes)
    if sample.cgroup is not None:
        held += _HELD_PART + len(sample.cgroup.path)
    return held


def _once(memo: dict[object, Any], value: object, read: Callable[[object], T]) -> T:
    """``read(value)``, or what it gave before for a list of the same scalars of the same types
    (JSON's scalars are hashable, its arrays and objects are not: those are read each time)."""
    if type(value) is not list:
        return read(value)
    key = (read, tuple(value), tuple(map(type, value)))
    try:
        return memo[key]  # type: ignore[no-any-return]
    except KeyError:
        found = memo[key] = read(value)
        return found
    except TypeError:
        return read(value)


_make_sample = _maker(watch.Sample)
_new = object.__new__
_set = object.__setattr__


def _make_process(
    pid: int, ppid: int, name: str, rss: int, uid: int, started: float | None
) -> watch.ProcessSample:
    """:func:`_maker`'s result for :class:`ProcessSample`, written out: a ring holds ten
    processes a sample, and a dict display is about 0.9 us a process quicker than binding
    ``*values`` (18 ms of a full ring; ``tests/recorder/test_ring.py`` holds it to the model)."""
    made = _new(watch.ProcessSample)
    _set(
        made, "__dict__", {"pid": pid, "ppid": ppid, "name": name, "rss": rss, "uid": uid, "started": started}
    )
    return made


def _list(value: object, low: int = 0, high: int = MAX_ITEMS) -> list[Any]:
    if not isinstance(value, list) or not low <= len(value) <= high:
        raise NotASample(f"expected an array of {low} to {high} items")
    return value


def _int(value: object, low: int = 0, high: int = MAX_INT) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise NotASample(f"expected a whole number from {low} to {high}")
    return value


def _opt_int(value: object, high: int = MAX_INT) -> int | None:
    return None if value is None else _int(value, 0, high)


def _number(value: object, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NotASample("expected a number")
    number = float(value)
    if not math.isfinite(number) or not 0 <= number <= high:
        raise NotASample(f"expected a number from 0 to {high:g}")
    return number


def _time(value: object) -> float:
    return _number(value, MAX_TIMESTAMP)


def _seconds(value: object) -> float:
    return _number(value, MAX_TIMESTAMP)


def _text(value: object, limit: int = MAX_TEXT) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise NotASample(f"expected a text of at most {limit} characters")
    return value


def _memory(value: object) -> watch.HostMemory:
    total, available, swap_total, swap_free = (_int(v) for v in _list(value, 4, 4))
    return watch.HostMemory(total, available, swap_total, swap_free)


def _cgroup(value: object) -> watch.CgroupMemory:
    version, path, usage, limit, kills = _list(value, 5, 5)
    return watch.CgroupMemory(_int(version, 1, 2), _text(path), _int(usage), _opt_int(limit), _opt_int(kills))


def _process(value: object) -> watch.ProcessSample:
    """A ring holds thousands of processes: the usual one, six values of their types in range,
    is checked in one expression (``type(v) is int`` leaves out ``true``; a float out of range,
    infinite or NaN fails its comparison) and made without the generic ``__init__``; anything
    else goes through :func:`_checked_process`, which says what is wrong."""
    if type(value) is list and len(value) == 6:
        pid, ppid, name, rss, uid, started = value
        if (
            type(pid) is int
            and 1 <= pid <= _PID_MAX
            and type(ppid) is int
            and 0 <= ppid <= _PID_MAX
            and type(name) is str
            and len(name) <= _NAME_MAX
            and type(rss) is int
            and 0 <= rss <= MAX_INT
            and type(uid) is int
            and 0 <= uid <= _UID_MAX
            and (started is None or (type(started) is float and 0 <= started <= MAX_TIMESTAMP))
        ):
            return _make_process(pid, ppid, name, rss, uid, started)
    return _checked_process(value)


def _checked_process(value: object) -> watch.ProcessSample:
    pid, ppid, name, rss, uid, started = _list(value, 6, 6)
    return watch.ProcessSample(
        _int(pid, 1, _PID_MAX),
        _int(ppid, 0, _PID_MAX),
        _text(name, _NAME_MAX),
        _int(rss),
        _int(uid, 0, _UID_MAX),
        None if started is None else _time(started),
    )


def _filesystem(value: object) -> watch.FilesystemUse:
    path, total, free = _list(value, 3, 3)
    return watch.FilesystemUse(_text(path), _int(total), _int(free))


def _gpu(value: object) -> watch.GpuSample:
    index, uuid, used, total, utilization, holders = _list(value, 6, 6)
    processes = []
    for item in _list(holders):
        pid, memory = _list(item, 2, 2)
        processes.append(watch.GpuProcess(_int(pid, 0, 1 << 31), _opt_int(memory)))
    return watch.GpuSample(
        _int(index, 0, 1024),
        _text(uuid, 128),
        _int(used),
        _int(total),
        _opt_int(utilization, 100),
        tuple(processes),
    )


def _load(value: object) -> tuple[float, float, float]:
    one, five, fifteen = (_number(v, 1e9) for v in _list(value, 3, 3))
    return one, five, fifteen
