"""The ring file the recorder writes in the state directory, and :func:`read_ring` for ``doctor``.

Layout (format version 1; docs/formats.md, "The watch ring"): a header of :data:`HEADER_SIZE`
bytes, then ``slots`` fixed-size slots. The header is written once, whole, before the file
takes its name (:func:`colabenv._util.files.write_atomic`), and carries its own CRC-32. Record
``n`` (from 1) goes into slot ``(n - 1) % slots`` with one ``pwrite``: a record header (magic,
``n``, the sample's time, the payload's length, the CRC-32 of the four) and the payload
(:mod:`colabenv.recorder.codec`), the rest of the slot zeros. So the ring is bounded
(``slots * slot_size`` bytes, at most :data:`MAX_DATA_BYTES`) and crash-safe: a record cut by a
crash or a power loss fails its checksum and is skipped, every other record is whole. A reader
sorts the whole records by ``n``: the samples oldest first.

Versioned: the magic and the version come first and stay there; a reader reads every version
up to its own (:data:`READERS`) and refuses a newer one with one line, as it refuses a file
that is not its own (a link, another user's, not a regular file, too big, another magic).
"""

from __future__ import annotations

import dataclasses
import math
import os
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

from colabenv._util.files import FileProblem, open_own, write_atomic
from colabenv.errors import StateError, printable
from colabenv.models.watch import RingContents, RingHeader, Sample
from colabenv.recorder import codec

RING_NAME = "watch.ring"
"""The ring of the recorder running now (or of the last one), in the state directory."""
PREVIOUS_RING_NAME = "watch.prev.ring"
"""The ring of the recorder before it: a start moves the last ring here, so what a recorder that
died recorded stays readable for ``doctor``."""
MAGIC = b"\x89CBWATCH"
"""The first eight bytes of every ring, whatever its version."""
VERSION = 1
HEADER_SIZE = 256
SLOT_SIZE = 1024
"""A record's room: a sample of a host with a GPU is 300-500 bytes compressed; one too large is
cut to fit (:meth:`RingWriter.append`)."""
MAX_SLOTS = 3600
"""The most records a ring holds: an hour at 1 s or more; at a shorter interval the ring keeps
the last ``MAX_SLOTS`` samples (30 minutes at 0.5 s)."""
MAX_DATA_BYTES = MAX_SLOTS * SLOT_SIZE
MAX_FILE_BYTES = 8 * 1024 * 1024
"""The largest file :func:`read_ring` reads: twice what a version 1 ring can be."""
WINDOW_S = 3600.0
"""How much time a ring holds at most (more slots are not made than an hour needs)."""
MIN_SLOTS = 16

_PREFIX = struct.Struct("<8sH")
_HEADER = struct.Struct("<8sHHIIIIIddd")
_RECORD = struct.Struct("<4sQdII")
_CHECKED = struct.Struct("<QdI")
_RECORD_MAGIC = b"\xa7REC"
_CRC = struct.Struct("<I")

MAX_HELD_BYTES = 64 * 1024 * 1024
"""The most :func:`read_ring` holds of decoded samples (as :func:`colabenv.recorder.codec.
held_bytes` counts them): a full ring of a real host holds about a third of it, and one whose
records each inflate to the codec's bound would hold a GiB. Records are decoded newest first;
those past the bound are left out (:data:`LEFT_OUT`)."""

TORN = "torn or corrupt"
NOT_A_SAMPLE = "not a sample"
OUT_OF_PLACE = "out of place"
LEFT_OUT = "left out past the bound on what is held"


def slots_for(interval_s: float, window_s: float = WINDOW_S) -> int:
    """How many slots hold ``window_s`` of samples at ``interval_s``, within the bounds."""
    return max(MIN_SLOTS, min(MAX_SLOTS, math.ceil(window_s / interval_s)))


def _header_bytes(header: RingHeader, slot_size: int, max_hours: float) -> bytes:
    packed = _HEADER.pack(
        MAGIC,
        header.version,
        HEADER_SIZE,
        slot_size,
        header.slots,
        header.recorder_pid,
        header.kernel_pid,
        0,
        header.interval_s,
        header.started,
        max_hours,
    )
    body = packed.ljust(HEADER_SIZE - _CRC.size, b"\0")
    return body + _CRC.pack(zlib.crc32(body))


class RingWriter:
    """The recorder's side: :meth:`create` a ring, :meth:`append` each sample, :meth:`close`."""

    def __init__(self, fd: int, header: RingHeader, slot_size: int, sequence: int = 0) -> None:
        self.fd = fd
        self.header = header
        self.slot_size = slot_size
        self.sequence = sequence

    @classmethod
    def create(
        cls, path: Path, header: RingHeader, *, max_hours: float = 0.0, slot_size: int = SLOT_SIZE
    ) -> RingWriter:
        """A new ring at ``path``, whole or absent (its slots zeros), replacing one there."""
        size = HEADER_SIZE + header.slots * slot_size
        write_atomic(
            path, _header_bytes(header, slot_size, max_hours) + bytes(size - HEADER_SIZE), mode=0o600
        )
        try:
            fd = open_own(path, write=True)
        except FileProblem as problem:
            raise StateError(f"{printable(path)}: {problem}") from None
        return cls(fd, header, slot_size)

    def append(self, sample: Sample) -> int:
        """Write ``sample`` as the next record; returns its number. A sample too large for a
        slot is cut (the smallest processes, then the GPUs' holders, then the notes) and says so."""
        payload = _fitted(sample, self.slot_size - _RECORD.size)
        self.sequence += 1
        record = _record(self.sequence, sample.time, payload).ljust(self.slot_size, b"\0")
        offset = HEADER_SIZE + ((self.sequence - 1) % self.header.slots) * self.slot_size
        os.pwrite(self.fd, record, offset)
        return self.sequence

    def sync(self) -> None:
        os.fdatasync(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            try:
                os.fdatasync(self.fd)
            finally:
                os.close(self.fd)
                self.fd = -1


def _record(sequence: int, moment: float, payload: bytes) -> bytes:
    checked = _CHECKED.pack(sequence, moment, len(payload)) + payload
    return _RECORD.pack(_RECORD_MAGIC, sequence, moment, len(payload), zlib.crc32(checked)) + payload


def _fitted(sample: Sample, room: int) -> bytes:
    payload = codec.encode(sample)
    cut = sample
    while len(payload) > room:
        if cut.processes:
            cut = dataclasses.replace(cut, processes=cut.processes[:-1])
        elif any(g.processes for g in cut.gpus):
            cut = dataclasses.replace(cut, gpus=tuple(dataclasses.replace(g, processes=()) for g in cut.gpus))
        elif cut.notes:
            cut = dataclasses.replace(cut, notes=())
        elif cut.gpus:
            cut = dataclasses.replace(cut, gpus=cut.gpus[:-1])
        else:
            cut = dataclasses.replace(cut, filesystems=cut.filesystems[:-1])
        payload = codec.encode(dataclasses.replace(cut, notes=(*cut.notes, "cut to fit the ring's slot")))
    return payload


# ---------------------------------------------------------------------------------------------
# Reading


def read_ring(path: Path, since: float | None = None, held: int = MAX_HELD_BYTES) -> RingContents:
    """The ring at ``path``: its header, its whole records oldest first, and what was skipped.
    ``since``: only the samples taken then or later (epoch seconds; the others are not decoded:
    each record carries its sample's time beside its number). ``held``: the most the samples
    kept may hold (:data:`MAX_HELD_BYTES`); the newest are kept, the older ones counted as
    :data:`LEFT_OUT`.

    Raises :class:`StateError` (one line) for what is not a ring of this user's colabenv: a
    symbolic link, another user's file, not a regular file, larger than :data:`MAX_FILE_BYTES`,
    another magic, a header that fails its checksum, a version newer than :data:`VERSION`."""
    try:
        fd = open_own(path, limit=MAX_FILE_BYTES)
    except FileProblem as problem:
        raise StateError(f"{printable(path)}: {problem}") from None
    try:
        data = _read_all(fd, MAX_FILE_BYTES + 1)
    except OSError as error:
        raise StateError(f"{printable(path)}: cannot be read: {error.strerror or error}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise StateError(f"{printable(path)}: larger than {MAX_FILE_BYTES} bytes; not a watch ring")
    if len(data) < _PREFIX.size or data[:8] != MAGIC:
        raise StateError(
            f"{printable(path)}: not a colabenv watch ring (its first bytes are not the ring's magic)"
        )
    _, version = _PREFIX.unpack_from(data)
    reader = READERS.get(version)
    if reader is None:
        newest = max(READERS)
        if version > newest:
            raise StateError(
                f"{printable(path)}: header.version: ring format {version} is newer than this colabenv "
                f"reads (up to {newest}); read it with a newer colabenv"
            )
        raise StateError(f"{printable(path)}: header.version: {version} is no ring format version")
    return reader(path, data, since, held)


def _read_all(fd: int, limit: int) -> bytes:
    chunks = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_v1(path: Path, data: bytes, since: float | None, bound: int) -> RingContents:
    where = printable(path)
    if len(data) < HEADER_SIZE:
        raise StateError(f"{where}: header: cut short ({len(data)} of {HEADER_SIZE} bytes)")
    body = data[: HEADER_SIZE - _CRC.size]
    (crc,) = _CRC.unpack_from(data, HEADER_SIZE - _CRC.size)
    if zlib.crc32(body) != crc:
        raise StateError(f"{where}: header: its checksum does not match (the header is damaged)")
    _, version, header_size, slot_size, slots, recorder, kernel, _, interval, started, _ = (
        _HEADER.unpack_from(data)
    )
    if header_size != HEADER_SIZE or not 64 <= slot_size <= 65536 or not 1 <= slots <= MAX_SLOTS:
        raise StateError(
            f"{where}: header: a layout no version 1 ring has ({slots} slots of {slot_size} bytes)"
        )
    if not (0 < interval <= 86400 and 0 <= started < 1e11):
        raise StateError(f"{where}: header: interval or start time out of range")
    header = RingHeader(version, recorder, kernel, interval, started, slots)
    end = HEADER_SIZE + slots * slot_size
    notes = []
    if len(data) < end:
        notes.append(f"the file is {end - len(data)} bytes shorter than its header says")
    elif len(data) > end:
        notes.append(f"{len(data) - end} bytes after the last slot ignored")
    records: list[tuple[int, float, bytes]] = []
    skipped: dict[str, int] = {}
    for index in range(slots):
        start = HEADER_SIZE + index * slot_size
        slot = data[start : min(start + slot_size, end)]
        if not slot.strip(b"\0"):
            continue
        outcome = _slot(slot, index, slots, since)
        if isinstance(outcome, str):
            skipped[outcome] = skipped.get(outcome, 0) + 1
        elif outcome is not None:
            records.append(outcome)
    found, held = _decoded(records, bound, skipped)
    return RingContents(
        path=str(path),
        header=header,
        samples=tuple(found),
        skipped=tuple(sorted(skipped.items())),
        notes=tuple(notes),
        held=held,
    )


def _decoded(
    records: list[tuple[int, float, bytes]], bound: int, skipped: dict[str, int]
) -> tuple[list[Sample], int]:
    """The samples of ``records`` (number, time, payload) oldest first, decoded newest first
    while what they hold stays within ``bound``; the rest counted in ``skipped``, and what the
    samples kept hold."""
    found: list[Sample] = []
    seen: dict[object, object] = {}
    held = 0
    records.sort(key=lambda record: record[0], reverse=True)
    for at, (_, moment, payload) in enumerate(records):
        if held >= bound:
            skipped[LEFT_OUT] = len(records) - at
            break
        try:
            sample = codec.decode(payload, seen)
        except codec.NotASample:
            sample = None
        if sample is None or sample.time != moment:
            skipped[NOT_A_SAMPLE] = skipped.get(NOT_A_SAMPLE, 0) + 1
            continue
        held += codec.held_bytes(sample)
        found.append(sample)
    found.reverse()
    return found, held


def _slot(slot: bytes, index: int, slots: int, since: float | None) -> tuple[int, float, bytes] | str | None:
    """A whole record's number, time and payload; why it is skipped; None when it is before
    ``since``."""
    if len(slot) < _RECORD.size:
        return TORN
    magic, sequence, moment, length, crc = _RECORD.unpack_from(slot)
    if magic != _RECORD_MAGIC or length > len(slot) - _RECORD.size:
        return TORN
    payload = slot[_RECORD.size : _RECORD.size + length]
    if zlib.crc32(_CHECKED.pack(sequence, moment, length) + payload) != crc:
        return TORN
    if sequence < 1 or (sequence - 1) % slots != index:
        return OUT_OF_PLACE
    if since is not None and moment < since:
        return None
    return sequence, moment, payload


READERS: dict[int, Callable[[Path, bytes, float | None, int], RingContents]] = {1: _read_v1}
"""Each ring format version this colabenv reads, by number: a new version adds its reader here
and keeps the older ones."""


def ring_paths(state: Path) -> tuple[Path, Path]:
    """The rings of the state directory ``state``: the last recorder's, and the one before."""
    return state / RING_NAME, state / PREVIOUS_RING_NAME
