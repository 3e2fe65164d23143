"""Recorder rings made for tests and benches with the recorder's own writer
(:class:`colabenv.recorder.ring.RingWriter`): an inflating ring, whose every record compresses
to under a slot and inflates to near the codec's bound (:data:`colabenv.recorder.codec.MAX_DECODED`)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from colabenv.models import RingHeader
from colabenv.models.watch import FilesystemUse, ProcessSample, Sample
from colabenv.recorder.ring import MAX_SLOTS, RingWriter

INFLATING_FILESYSTEMS = 23
"""Filesystems of 4,000-character paths a record of an inflating ring names: with 256 processes
and 256 notes, 247 KiB of JSON that compresses to under 1 KiB."""


def inflating_sample(moment: float) -> Sample:
    """A sample at the limits of every list and text the codec reads, of one character
    repeated: it compresses a thousandfold."""
    processes = tuple(ProcessSample(1000, 1, "n" * 64, 1 << 40, 1000, None) for _ in range(256))
    filesystems = tuple(
        FilesystemUse("/" + "n" * 4000, 1 << 40, 1 << 39) for _ in range(INFLATING_FILESYSTEMS)
    )
    notes = tuple("n" * 500 for _ in range(256))
    return Sample(moment, None, None, processes, None, filesystems, (), None, None, notes)


def write_inflating_ring(path: Path, slots: int = MAX_SLOTS, interval: float = 1.0) -> int:
    """A full ring at ``path`` of ``slots`` inflating records, the last taken now (3.5 MiB at
    the most slots). Returns the number of records."""
    now = time.time()
    began = now - interval * slots
    writer = RingWriter.create(path, RingHeader(1, os.getpid(), os.getpid(), interval, began, slots))
    try:
        for n in range(slots):
            writer.append(inflating_sample(began + interval * (n + 1)))
    finally:
        writer.close()
    return slots
