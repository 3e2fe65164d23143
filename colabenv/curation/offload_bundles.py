"""Read which AMD GPU architectures a wheel's shared objects carry, from their HIP offload bundles:
the AMD counterpart of :mod:`colabenv.curation.archs` (NVIDIA's fat binaries), one reader per vendor.

A HIP library keeps its GPU code in clang offload bundles (in its ``.hip_fatbin`` section): the
magic ``__CLANG_OFFLOAD_BUNDLE__``, the number of entries, then per entry its offset, size and
target triple, ``hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-`` for a GPU's code object
(``host-x86_64-unknown-linux-gnu-`` for the empty host entry). clang's ``--offload-compress``
writes a ``CCOB`` header instead (version, method: 0 zlib, 1 zstd; sizes, a hash) followed by the
compressed bundle: only its first bytes are unpacked, enough for the entry table. A zstd bundle
is read with the decompress callable the caller gives (``zstd``: the first N bytes a zstd frame
unpacks to; colabenv itself imports no zstd library), else where the interpreter has
``compression.zstd`` (Python 3.14), else counted as unread, never guessed. The whole file is
searched for both magics, and a bundle counts only when its entry table holds together (a program
that names the magic as a string is not one).

A target may be one of clang's generic processors (``gfx9-4-generic``, ``gfx11-generic``: one
code object a family of GPUs runs, as the jax ROCm plugins from 0.9 carry): it counts as each
processor LLVM lists for it (:data:`GENERIC_TARGETS`), never as a gfx of its own.

The wheel is read as :mod:`colabenv.curation.archs` reads it, within the same bounds (a local
file, or a URL with range requests: :func:`colabenv.curation.archs.open_wheel`).
"""

from __future__ import annotations

import re
import struct
import zipfile
import zlib
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import IO

from colabenv.models.frozen import model
from colabenv.models.target import GFX_PATTERN

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED_MAGIC = b"CCOB"
_MAX_ENTRIES = 4096
_MAX_TRIPLE = 512
_HEAD_READ = 64 * 1024
"""The most of one bundle read (or unpacked) for its entry table."""
_SCAN_CHUNK = 16 * 1024 * 1024
_COPY_CHUNK = 4 * 1024 * 1024
_TARGET = re.compile(
    rf"^(?:hipv4|hip|openmp)-amdgcn-amd-amdhsa-+({GFX_PATTERN}|gfx[0-9]{{1,2}}(?:-[0-9])?-generic)"
    r"((?::[A-Za-z0-9_]+[+-])*)$"
)
GENERIC_TARGETS: dict[str, tuple[str, ...]] = {
    "gfx9-generic": ("gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"),
    "gfx9-4-generic": ("gfx940", "gfx941", "gfx942", "gfx950"),
    "gfx10-1-generic": ("gfx1010", "gfx1011", "gfx1012", "gfx1013"),
    "gfx10-3-generic": ("gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"),
    "gfx11-generic": ("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"),
    "gfx12-generic": ("gfx1200", "gfx1201"),
}
"""clang's generic processors and the processors each one's code objects run on: LLVM's
AMDGPUUsage, table "AMDGPU Generic Processors" (llvm-project llvmorg-20.1.0,
llvm/docs/AMDGPUUsage.rst). A generic target not listed here names no gfx."""

ZstdDecompress = Callable[[bytes, int], bytes]
"""The first at most N bytes a zstd frame unpacks to, given the frame's start (only a bundle's
first bytes are read: the frame may be cut short, and what follows it is not zstd); raises on
data that is not zstd. A caller's (a research script's ``zstandard`` decompressobj), injected:
colabenv imports no zstd library."""


class BundleError(Exception):
    """Bytes at a magic that are not an offload bundle (why, for no one but a test)."""


def gfx_key(name: str) -> tuple[int, int, int]:
    """The order the catalog lists gfx names in: gfx900, gfx90a, gfx942, gfx1030, gfx1100."""
    match = re.fullmatch(GFX_PATTERN, name)
    if match is None:
        return (999, 0, 0)
    return (int(match.group(1)), int(match.group(2), 16), int(match.group(3), 16))


def _entries(data: bytes) -> tuple[str, ...]:
    """The target triples of the plain bundle at the start of ``data``; BundleError where its
    entry table does not hold together."""
    if not data.startswith(BUNDLE_MAGIC) or len(data) < len(BUNDLE_MAGIC) + 8:
        raise BundleError("no bundle header")
    (count,) = struct.unpack_from("<Q", data, len(BUNDLE_MAGIC))
    if not 0 < count <= _MAX_ENTRIES:
        raise BundleError(f"{count} entries")
    pos = len(BUNDLE_MAGIC) + 8
    triples = []
    for _ in range(count):
        if pos + 24 > len(data):
            raise BundleError("the entry table runs past what was read")
        _offset, _size, length = struct.unpack_from("<QQQ", data, pos)
        triple = data[pos + 24 : pos + 24 + length]
        if not 0 < length <= _MAX_TRIPLE or len(triple) != length or not triple.isascii():
            raise BundleError("an entry's triple is not text")
        triples.append(triple.decode())
        pos += 24 + length
    return tuple(triples)


def bundle_targets(data: bytes) -> tuple[str, ...]:
    """The AMD GPUs (``gfx942``; target features such as ``:xnack-`` dropped) the plain bundle
    at the start of ``data`` has code objects for, in the catalog's order."""
    found: set[str] = set()
    for triple in _entries(data):
        match = _TARGET.match(triple)
        if match is not None:
            name = match.group(1)
            found.update(GENERIC_TARGETS.get(name, ()) if name.endswith("-generic") else (name,))
    return tuple(sorted(found, key=gfx_key))


def _unpacked_head(data: bytes, zstd: ZstdDecompress | None = None) -> bytes | None:
    """The first bytes of the plain bundle a ``CCOB`` bundle holds (zstd: with ``zstd`` where
    given); None where its method cannot be unpacked here (zstd with neither ``zstd`` nor
    ``compression.zstd``); BundleError where it is no bundle."""
    if len(data) < 24:
        raise BundleError("a short CCOB header")
    version, method = struct.unpack_from("<HH", data, 4)
    header = {1: 20, 2: 24, 3: 32}.get(version)
    if header is None or method not in (0, 1):
        raise BundleError(f"CCOB version {version}, method {method}")
    payload = data[header:]
    try:
        if method == 0:
            return zlib.decompressobj().decompress(payload, _HEAD_READ)
        if zstd is not None:
            return zstd(payload, _HEAD_READ)[:_HEAD_READ]
        try:
            from compression import zstd as stdlib_zstd  # type: ignore[import-not-found, unused-ignore]
        except ImportError:
            return None
        head: bytes = stdlib_zstd.ZstdDecompressor().decompress(payload, _HEAD_READ)
        return head
    except Exception as exc:  # zlib.error, zstd.ZstdError, a caller's: not the data a bundle holds
        raise BundleError(f"does not unpack: {type(exc).__name__}") from None


@model
class ElfGfx:
    """The AMD GPU code of one ELF file: the gfx every bundle in it names, how many bundles
    were read, and how many are compressed in a way that could not be unpacked here."""

    gfx: tuple[str, ...]
    bundles: int
    unread: int = 0


def _read_at(stream: IO[bytes], offset: int, size: int) -> bytes:
    stream.seek(offset)
    return stream.read(size)


def elf_gfx(stream: IO[bytes], file_size: int, *, zstd: ZstdDecompress | None = None) -> ElfGfx | None:
    """The HIP offload bundles anywhere in an ELF file of ``file_size`` bytes (zstd ones unpacked
    with ``zstd`` where given); None when it has none (a CPU library, a CUDA one)."""
    found: set[str] = set()
    bundles = unread = 0
    pos = 0
    overlap = len(BUNDLE_MAGIC) - 1
    while pos < file_size:
        chunk = _read_at(stream, pos, min(_SCAN_CHUNK, file_size - pos))
        hits = sorted(
            {pos + m.start() for magic in (BUNDLE_MAGIC, COMPRESSED_MAGIC) for m in re.finditer(magic, chunk)}
        )
        for at in hits:
            head = _read_at(stream, at, min(_HEAD_READ, file_size - at))
            try:
                if head.startswith(COMPRESSED_MAGIC):
                    plain = _unpacked_head(head, zstd)
                    if plain is None:
                        unread += 1
                        continue
                    head = plain
                found.update(bundle_targets(head))
                bundles += 1
            except (BundleError, struct.error):
                continue
        if pos + len(chunk) >= file_size:
            break
        pos += max(len(chunk) - overlap, 1)
    if not bundles and not unread:
        return None
    return ElfGfx(tuple(sorted(found, key=gfx_key)), bundles, unread)


@model
class LibraryGfx:
    """One shared object of a wheel and the AMD GPUs its offload bundles carry code for."""

    path: str
    gfx: tuple[str, ...]
    bundles: int
    unread: int


@model
class WheelGfx:
    """What :func:`read_wheel_gfx` found: each shared object with offload bundles, and how many
    shared objects had none."""

    source: str
    libraries: tuple[LibraryGfx, ...]
    without_bundles: int

    @property
    def common(self) -> tuple[str, ...]:
        """The gfx every library with bundles carries: the wheel runs on a GPU only when each
        of its libraries does."""
        if not self.libraries:
            return ()
        shared = set(self.libraries[0].gfx)
        for library in self.libraries[1:]:
            shared &= set(library.gfx)
        return tuple(sorted(shared, key=gfx_key))

    @property
    def unread(self) -> int:
        """The compressed bundles that could not be unpacked here (zstd before Python 3.14)."""
        return sum(library.unread for library in self.libraries)


def _library(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, max_member: int, zstd: ZstdDecompress | None = None
) -> LibraryGfx | None:
    import tempfile

    if info.file_size > max_member:
        raise BundleError(f"unpacks to {info.file_size} bytes; at most {max_member} are read")
    with archive.open(info) as member, tempfile.SpooledTemporaryFile(64 * 1024 * 1024) as unpacked:
        magic = member.read(4)
        if magic != b"\x7fELF":
            return None
        unpacked.write(magic)
        written = len(magic)
        while chunk := member.read(_COPY_CHUNK):
            written += len(chunk)
            if written > max_member:
                raise BundleError(f"unpacks to more than {max_member} bytes")
            unpacked.write(chunk)
        found = elf_gfx(unpacked, written, zstd=zstd)
    if found is None:
        return None
    return LibraryGfx(info.filename, found.gfx, found.bundles, found.unread)


def _read_archive(
    stream: IO[bytes], source: str, patterns: Sequence[str], max_member: int, zstd: ZstdDecompress | None
) -> WheelGfx:
    from colabenv.curation.archs import wheel_libraries

    read = partial(_library, zstd=zstd)
    libraries, without = wheel_libraries(stream, source, patterns, max_member, read, (BundleError,))
    return WheelGfx(source, libraries, without)


def read_wheel_gfx(
    source: str,
    members: Sequence[str] = (),
    *,
    max_member: int | None = None,
    max_download: int | None = None,
    timeout: float | None = None,
    zstd: ZstdDecompress | None = None,
) -> WheelGfx:
    """The AMD GPUs each shared object of the wheel at ``source`` (a path or an http(s) URL)
    has code for; ``members``: shell patterns on file names (``libtorch*``) to read only those;
    ``zstd``: the decompressor for zstd bundles (see the module's text). Bad input raises
    InputError; an unreachable URL IndexUnavailableError."""
    from colabenv.curation import archs

    member_bound = archs.MAX_MEMBER_BYTES if max_member is None else max_member
    if source.startswith(("http://", "https://")):
        with archs.open_wheel(
            source,
            max_download=archs.MAX_DOWNLOAD_BYTES if max_download is None else max_download,
            timeout=archs.HTTP_TIMEOUT_S if timeout is None else timeout,
        ) as stream:
            return _read_archive(stream, source.split("?", 1)[0], members, member_bound, zstd)
    path = Path(source)
    with archs.open_regular_file(path) as stream:
        return _read_archive(stream, path.name, members, member_bound, zstd)
