"""The watch ring: bounded, crash-safe, versioned, and refusing what is not its own."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import signal
import struct
import time
import zlib
from pathlib import Path

import pytest

from colabenv.errors import StateError
from colabenv.models import (
    CgroupMemory,
    FilesystemUse,
    GpuProcess,
    GpuSample,
    HostMemory,
    ProcessSample,
    RingHeader,
    Sample,
)
from colabenv.recorder import codec, ring
from colabenv.recorder.ring import HEADER_SIZE, MAX_SLOTS, SLOT_SIZE, RingWriter, read_ring, slots_for

DATA = Path(__file__).resolve().parent.parent / "data" / "watch"
NOBODY = 65534


def sample(time: float, *, processes: int = 12, gpus: int = 1) -> Sample:
    return Sample(
        time=time,
        memory=HostMemory(13 << 30, 9 << 30, 0, 0),
        cgroup=CgroupMemory(2, "/user.slice/kernel", 3 << 30, 12 << 30, 0),
        processes=tuple(
            ProcessSample(1000 + i, 999, f"python3-{i}", (100 - i) << 20, 0, time - 50.0)
            for i in range(processes)
        ),
        shm=FilesystemUse("/dev/shm", 6 << 30, 5 << 30),
        filesystems=(
            FilesystemUse("/content", 100 << 30, 70 << 30),
            FilesystemUse("/tmp", 100 << 30, 70 << 30),
        ),
        gpus=tuple(
            GpuSample(
                i,
                f"GPU-{i:08x}-aaaa-bbbb-cccc-0123456789ab",
                10 << 30,
                16 << 30,
                97,
                (GpuProcess(1000, 9 << 30),),
            )
            for i in range(gpus)
        ),
        load=(1.5, 1.2, 0.9),
        session_age=3600.0 + time,
        notes=("memory: not wired",),
    )


def header(slots: int = 32, interval: float = 2.0) -> RingHeader:
    return RingHeader(1, 4242, 4200, interval, 1_700_000_000.0, slots)


def write(path: Path, count: int, *, slots: int = 32, slot_size: int = SLOT_SIZE) -> RingWriter:
    writer = RingWriter.create(path, header(slots), max_hours=24.0, slot_size=slot_size)
    for n in range(count):
        writer.append(sample(1_700_000_000.0 + n))
    return writer


def times(path: Path) -> list[float]:
    return [s.time - 1_700_000_000.0 for s in read_ring(path).samples]


def test_a_sample_comes_back_as_it_was_written(tmp_path: Path) -> None:
    path = tmp_path / "watch.ring"
    write(path, 3).close()
    contents = read_ring(path)
    assert contents.header == header()
    assert contents.samples == tuple(sample(1_700_000_000.0 + n) for n in range(3))
    assert contents.skipped == ()
    assert contents.notes == ()


def test_the_ring_keeps_the_newest_samples_oldest_first(tmp_path: Path) -> None:
    path = tmp_path / "watch.ring"
    write(path, 75).close()
    assert times(path) == [float(n) for n in range(75 - 32, 75)]


def test_since_leaves_the_older_samples_undecoded(tmp_path: Path) -> None:
    path = tmp_path / "watch.ring"
    write(path, 20).close()
    with open(path, "r+b") as handle:  # record 3: a whole record, but no sample; before since
        handle.seek(HEADER_SIZE + 2 * SLOT_SIZE + 60)
        handle.write(b"junk")
    assert len(read_ring(path).samples) == 19
    recent = read_ring(path, since=1_700_000_015.0)
    assert [s.time - 1_700_000_000.0 for s in recent.samples] == [15.0, 16.0, 17.0, 18.0, 19.0]
    assert recent.skipped == (("torn or corrupt", 1),), "a torn record is counted whatever its time"


def test_the_bound_holds_at_half_a_second_for_many_samples(tmp_path: Path) -> None:
    """A day at 0.5 s, written fast with the clock injected: the file never grows, and it holds
    the last MAX_SLOTS samples, a few MiB."""
    path = tmp_path / "watch.ring"
    slots = slots_for(0.5)
    assert slots == MAX_SLOTS
    writer = RingWriter.create(path, header(slots, 0.5))
    size = path.stat().st_size
    assert size == HEADER_SIZE + MAX_SLOTS * SLOT_SIZE <= 4 * 1024 * 1024
    one = sample(1_700_000_000.0)
    for n in range(MAX_SLOTS + 507):
        writer.append(dataclasses.replace(one, time=1_700_000_000.0 + n * 0.5))
    writer.close()
    assert path.stat().st_size == size
    found = times(path)
    assert len(found) == MAX_SLOTS
    assert found[0] == 507 * 0.5 and found[-1] == (MAX_SLOTS + 506) * 0.5
    assert slots_for(2.0) == 1800 and slots_for(1.0) == 3600, "an hour at 1 s and more"


def test_a_sample_too_big_for_its_slot_is_cut_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "watch.ring"
    writer = RingWriter.create(path, header(), slot_size=512)
    base = sample(1_700_000_000.0, gpus=8)
    noisy = tuple(ProcessSample(100 + i, 1, os.urandom(16).hex(), i << 20, 0) for i in range(40))
    big = dataclasses.replace(base, processes=noisy)
    writer.append(big)
    writer.close()
    (found,) = read_ring(path).samples
    assert found.notes[-1] == "cut to fit the ring's slot"
    assert len(found.processes) < 40
    assert found.time == big.time and found.memory == big.memory


def test_a_truncated_ring_keeps_every_whole_record(tmp_path: Path) -> None:
    path = tmp_path / "watch.ring"
    write(path, 20).close()
    cut = HEADER_SIZE + 10 * SLOT_SIZE + 17  # in the header of record 11
    os.truncate(path, cut)
    contents = read_ring(path)
    assert times(path) == [float(n) for n in range(10)]
    assert contents.skipped == (("torn or corrupt", 1),)
    assert "shorter than its header says" in contents.notes[0]


def test_a_record_cut_in_its_payload_is_skipped_alone(tmp_path: Path) -> None:
    path = tmp_path / "watch.ring"
    write(path, 5).close()
    with open(path, "r+b") as handle:  # a power loss: record 3's payload half written
        handle.seek(HEADER_SIZE + 2 * SLOT_SIZE + 60)
        handle.write(bytes(SLOT_SIZE - 60))
    contents = read_ring(path)
    assert times(path) == [0.0, 1.0, 3.0, 4.0]
    assert contents.skipped == (("torn or corrupt", 1),)


@pytest.mark.parametrize("seed", range(5))
def test_corrupt_bytes_lose_only_the_records_they_hit(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "watch.ring"
    write(path, 32).close()
    data = bytearray(path.read_bytes())
    rng = random.Random(seed)
    hit = sorted(rng.sample(range(32), 3))
    for slot in hit:
        offset = HEADER_SIZE + slot * SLOT_SIZE + rng.randrange(0, 200)
        data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    contents = read_ring(path)
    assert times(path) == [float(n) for n in range(32) if n not in hit]
    assert contents.skipped == (("torn or corrupt", 3),)


def test_junk_after_the_last_slot_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "watch.ring"
    write(path, 4).close()
    with open(path, "ab") as handle:
        handle.write(os.urandom(5000))
    contents = read_ring(path)
    assert times(path) == [0.0, 1.0, 2.0, 3.0]
    assert contents.notes == ("5000 bytes after the last slot ignored",)


def test_a_whole_record_that_is_no_sample_or_out_of_place_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "watch.ring"
    write(path, 3).close()

    def record(sequence: int, payload: bytes, moment: float = 1_700_000_009.0) -> bytes:
        checked = struct.pack("<QdI", sequence, moment, len(payload)) + payload
        return (
            struct.pack("<4sQdII", b"\xa7REC", sequence, moment, len(payload), zlib.crc32(checked)) + payload
        )

    with open(path, "r+b") as handle:
        handle.seek(HEADER_SIZE + 3 * SLOT_SIZE)
        handle.write(record(4, zlib.compress(b'{"not": "a sample"}')))
        handle.seek(HEADER_SIZE + 4 * SLOT_SIZE)
        handle.write(record(9, codec.encode(sample(9.0))))
        handle.seek(HEADER_SIZE + 5 * SLOT_SIZE)
        handle.write(record(6, zlib.compress(b"[" * 100000)))
        handle.seek(HEADER_SIZE + 6 * SLOT_SIZE)  # a whole record whose time is not its sample's
        handle.write(record(7, codec.encode(sample(1_700_000_007.0)), moment=1_700_000_006.0))
    contents = read_ring(path)
    assert times(path) == [0.0, 1.0, 2.0]
    assert contents.skipped == (("not a sample", 3), ("out of place", 1))


@pytest.mark.parametrize(
    "document",
    [
        [1.0, None, None, [[0, 1, "x", 1, 0, None]], None, [], [], None, None, []],  # pid 0
        [1.0, None, None, [], None, [], [], None, None, ["x" * 501]],
        [float("nan"), None, None, [], None, [], [], None, None, []],
        [1.0, [1, 2, 3], None, [], None, [], [], None, None, []],
        [1.0, None, [3, "/", 1, None, None], [], None, [], [], None, None, []],
        [1.0, None, None, [], None, [], [[0, "u", 1, 2, 101, []]], None, None, []],
        [True, None, None, [], None, [], [], None, None, []],
    ],
)
def test_decoding_checks_every_value(document: list[object]) -> None:
    payload = zlib.compress(repr(document).replace("None", "null").replace("'", '"').encode())
    with pytest.raises(codec.NotASample):
        codec.decode(payload)


def test_a_ring_of_format_1_is_read_as_it_always_was() -> None:
    """tests/data/watch/ring-v1.bin was written by the first colabenv that wrote rings: every
    later version must read it the same (format 1 stays readable)."""
    contents = read_ring(DATA / "ring-v1.bin")
    assert contents.header == RingHeader(1, 4242, 4200, 2.0, 1_700_000_000.0, 16)
    assert contents.samples == tuple(sample(1_700_000_000.0 + n, processes=3) for n in range(20 - 16, 20))
    assert contents.skipped == ()


def _refused(path: Path) -> str:
    with pytest.raises(StateError) as caught:
        read_ring(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


def test_a_ring_from_a_future_version_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "watch.ring"
    write(path, 2).close()
    data = bytearray(path.read_bytes())
    data[8:10] = struct.pack("<H", 2)
    path.write_bytes(bytes(data))
    assert "header.version: ring format 2 is newer than this colabenv reads (up to 1)" in _refused(path)


def test_a_damaged_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "watch.ring"
    write(path, 2).close()
    data = bytearray(path.read_bytes())
    data[40] ^= 1
    path.write_bytes(bytes(data))
    assert "header: its checksum does not match" in _refused(path)


def test_another_magic_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "watch.ring"
    path.write_bytes(b"PK\x03\x04" + bytes(600))
    assert "not a colabenv watch ring" in _refused(path)


def test_a_symbolic_link_is_refused_even_to_a_good_ring(tmp_path: Path) -> None:
    real = tmp_path / "real.ring"
    write(real, 2).close()
    link = tmp_path / "watch.ring"
    link.symlink_to(real)
    assert "is a symbolic link" in _refused(link)


def test_a_file_of_another_user_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file to another user")
    path = tmp_path / "watch.ring"
    write(path, 2).close()
    os.chown(path, NOBODY, NOBODY)
    assert f"is owned by user {NOBODY}, not by this user" in _refused(path)


def test_what_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.ring"
    os.mkfifo(fifo)
    assert "a FIFO, not a regular file" in _refused(fifo)
    folder = tmp_path / "folder.ring"
    folder.mkdir()
    assert "not a regular file" in _refused(folder)


def test_a_file_too_big_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "watch.ring"
    write(path, 2).close()
    os.truncate(path, ring.MAX_FILE_BYTES + 1)
    assert "at most 8 MiB is read" in _refused(path)


def test_sigkill_at_random_moments_loses_at_most_the_record_being_written(tmp_path: Path) -> None:
    """A writer process killed a hundred times at random moments: each time the ring reads
    without error, and its records are every one from the first kept to the last written, but
    at most the one being written."""
    rng = random.Random(24)
    for attempt in range(100):
        path = tmp_path / f"ring-{attempt}"
        writer = RingWriter.create(path, header(64))
        one = sample(1_700_000_000.0)
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the writer: records numbered by their time, as fast as it can
            os.close(read_fd)
            try:
                for n in range(1, 1 << 30):
                    writer.append(dataclasses.replace(one, time=1_700_000_000.0 + n))
                    if n == 1:
                        os.write(write_fd, b"1")
            finally:
                os._exit(0)
        os.close(write_fd)
        os.read(read_fd, 1)
        os.close(read_fd)
        time.sleep(rng.uniform(0, 0.005))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(writer.fd)
        contents = read_ring(path)
        found = [int(s.time) - 1_700_000_000 for s in contents.samples]
        assert found, "the first record was written before the kill"
        assert found == list(range(found[0], found[-1] + 1))
        assert len(found) >= min(found[-1], 64) - 1
        assert sum(count for _, count in contents.skipped) <= 1
        path.unlink()


def test_a_part_decoded_once_is_never_lent_to_one_of_other_types() -> None:
    """The memo of one ring's read keys a part by its values and their types: ``true`` equals
    ``1`` and ``1.0`` equals ``1`` in Python, but memory figures holding ``true`` are not a
    sample, even after the same figures with whole numbers were read; nor is a process whose
    uid is ``true`` or whose pid is ``1.0`` (the quick check of a process takes neither)."""
    seen: dict[object, object] = {}

    def payload(process: str, memory: str = "null") -> bytes:
        return zlib.compress(f"[1.0,{memory},null,[{process}],null,[],[],null,null,[]]".encode())

    good = codec.decode(payload('[7,1,"python",4096,1,null]', "[4,3,2,1]"), seen)
    assert good.processes[0].uid == 1 and type(good.processes[0].uid) is int
    for process in ('[7,1,"python",4096,true,null]', '[7.0,1,"python",4096,1,null]'):
        with pytest.raises(codec.NotASample):
            codec.decode(payload(process), seen)
    with pytest.raises(codec.NotASample):
        codec.decode(payload('[7,1,"python",4096,1,null]', "[4,3,2,true]"), seen)
    with pytest.raises(codec.NotASample):  # a list inside a part is read, never a key of the memo
        codec.decode(payload('[7,1,"python",4096,[1],null]'), seen)
    again = codec.decode(payload('[7,1,"python",4096,1,null]', "[4,3,2,1]"), seen)
    assert again.memory is good.memory and again.processes == good.processes


@pytest.mark.parametrize(
    "text",
    [
        '[7,1,"python",4096,0,1700000000.5]',
        '[7,1,"python",4096,0,null]',
        '[7,1,"python",4096,0,1700000000]',  # a whole start time: a float, as the careful check makes it
        '[2147483648,0,"",0,4294967296,0.0]',  # every bound itself
        '[0,1,"python",4096,0,null]',
        '[2147483649,1,"python",4096,0,null]',
        '[7,-1,"python",4096,0,null]',
        '[true,1,"python",4096,0,null]',
        '[7,1,"python",4096,0,true]',
        '[7,1,"' + "x" * 65 + '",4096,0,null]',
        "[7,1,5,4096,0,null]",
        '[7,1,"python",-1,0,null]',
        '[7,1,"python",4611686018427387905,0,null]',
        '[7,1,"python",4096,4294967297,null]',
        '[7,1,"python",4096,0,-0.5]',
        '[7,1,"python",4096,0,Infinity]',
        '[7,1,"python",4096,0,NaN]',
        '[7,1,"python",4096,0,1e300]',
        '[7,1,"python",4096,0]',
        '[7,1,"python",4096,0,null,1]',
        '{"pid": 7}',
    ],
)
def test_the_quick_check_of_a_process_agrees_with_the_careful_one(text: str) -> None:
    value = json.loads(text)
    try:
        careful: object = codec._checked_process(value)
    except codec.NotASample as exc:
        careful = exc
    if isinstance(careful, codec.NotASample):
        with pytest.raises(codec.NotASample):
            codec._process(value)
        return
    quick = codec._process(value)
    assert quick == careful
    assert (vars(quick), hash(quick), repr(quick)) == (vars(careful), hash(careful), repr(careful))
    with pytest.raises(dataclasses.FrozenInstanceError):
        quick.rss = 0  # type: ignore[misc]
    assert [type(getattr(quick, f.name)) for f in dataclasses.fields(quick)] == [
        type(getattr(careful, f.name)) for f in dataclasses.fields(careful)
    ]
