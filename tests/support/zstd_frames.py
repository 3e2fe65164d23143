"""zstd frames without a zstd library: a frame of Raw blocks (RFC 8878 section 3.1.1.2: a block
of type 0 carries its bytes as they are), written and read back here so that the code that unpacks
a zstd-compressed HIP offload bundle (``CCOB`` method 1) is tested on a real zstd frame."""

from __future__ import annotations

import struct

MAGIC = 0xFD2FB528
"""RFC 8878 3.1.1: every zstd frame starts with it, little-endian."""
MAX_BLOCK = 128 * 1024
"""RFC 8878 3.1.1.2.3: Block_Maximum_Size, at most 128 KiB."""
_RAW = 0


def raw_frame(data: bytes, *, first_block: int = MAX_BLOCK) -> bytes:
    """``data`` as one zstd frame of Raw blocks: the magic; a frame header descriptor with
    Single_Segment_Flag set and an 8-byte Frame_Content_Size (flag 3), so no window descriptor;
    the content size; then blocks of at most MAX_BLOCK bytes (the first ``first_block``), each a
    3-byte little-endian header (Last_Block bit, Block_Type 0, Block_Size) and the bytes
    themselves; no checksum. A small first block splits what ``data`` starts with (a bundle's
    magic) across two blocks, so the frame does not hold it as one run of bytes."""
    descriptor = (3 << 6) | (1 << 5)
    out = struct.pack("<IBQ", MAGIC, descriptor, len(data))
    first = min(first_block, MAX_BLOCK)
    rest = data[first:]
    pieces = [data[:first], *(rest[at : at + MAX_BLOCK] for at in range(0, len(rest), MAX_BLOCK))]
    for number, piece in enumerate(pieces):
        last = number == len(pieces) - 1
        header = int(last) | (_RAW << 1) | (len(piece) << 3)
        out += header.to_bytes(3, "little") + piece
    return out


def raw_frame_decode(frame: bytes, limit: int) -> bytes:
    """The first ``limit`` bytes of a zstd frame of Raw blocks (what :func:`raw_frame` writes,
    with any frame header): the decompress callable a caller of
    :mod:`colabenv.curation.offload_bundles` may inject. ValueError on anything else (a
    compressed block, a bad magic), as a zstd library raises on data it cannot decode; a frame cut
    short gives what its blocks hold so far, as a streaming decoder does."""
    (magic, descriptor) = struct.unpack_from("<IB", frame, 0)
    if magic != MAGIC:
        raise ValueError("not a zstd frame")
    size_flag, single, dict_flag = descriptor >> 6, (descriptor >> 5) & 1, descriptor & 3
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag]
    pos += {0: 1 if single else 0, 1: 2, 2: 4, 3: 8}[size_flag]
    out = bytearray()
    while len(out) < limit:
        header = int.from_bytes(frame[pos : pos + 3], "little")
        kind, size = (header >> 1) & 3, header >> 3
        if kind != _RAW:
            raise ValueError(f"block type {kind}: only Raw blocks are decoded here")
        out += frame[pos + 3 : pos + 3 + size]
        if pos + 3 + size >= len(frame):
            break
        pos += 3 + size
        if header & 1:
            break
    return bytes(out[:limit])
