"""Read which GPU architectures a wheel's shared objects carry, straight from the binaries.

A CUDA library keeps its GPU code in the ``.nv_fatbin`` section of its ELF file: a run of fat
binary containers, each a 16-byte header (magic ``0xBA55ED50``, version, header size, payload
size) followed by entries, each with its own header: kind (1 PTX, 2 cubin), header size, padded
payload size, and at byte 28 the architecture (``75`` for sm_75). cuobjdump lists the same
entries; this module reads the headers alone and never the payloads, so it needs no CUDA.
Some libraries keep most of their fat binaries elsewhere (cuFFT from 11.2 in ``.ldata``): the
rest of the file is searched for the magic, and a container found there counts only when its
header is the usual one and its entries chain up to its end exactly.

A wheel is read from a file or a URL. Over HTTP it asks for byte ranges when the server allows
them, as PEP 658 clients do for metadata: the zip central directory from the end of the file,
then only the compressed bytes of the shared objects wanted. A server without range support
means one full download. Every read is bounded: in bytes (``max_download``, ``max_member``) and
in time (each request's timeout, and a body must keep up 256 KiB/s). ``requests`` is imported
only here, and only for a URL.

Used by ``colabenv catalog archs`` (a maintainer's check of the facts in
``profiles/catalog/components.toml``); nothing on the render path imports it.
"""

from __future__ import annotations

import fnmatch
import io
import re
import struct
import zipfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, TypeVar

from packaging.version import Version

from colabenv.errors import IndexUnavailableError, InputError, printable
from colabenv.models import Arch, ComputeCapability
from colabenv.models.frozen import model

L = TypeVar("L")
"""What a reader finds in one shared object of a wheel."""

if TYPE_CHECKING:
    import requests

FATBIN_MAGIC = 0xBA55ED50
ENTRY_PTX = 1
ENTRY_CUBIN = 2
_CONTAINER_HEADER = struct.Struct("<IHHQ")
_ENTRY_HEAD = struct.Struct("<HHIQ")
_ENTRY_ARCH_AT = 28
_ENTRY_MIN = 32
FATBIN_SECTION = ".nv_fatbin"

MIB = 1024 * 1024
MAX_MEMBER_BYTES = 4096 * MIB
"""The most one shared object may unpack to: the largest CUDA library (cuDNN's precompiled
engines) is about 550 MiB."""
MAX_DOWNLOAD_BYTES = 4096 * MIB
"""The most read from one URL, in ranges or in a full download."""
HTTP_TIMEOUT_S = 60.0
_FIRST_READ = 256 * 1024
_MAX_READ_AHEAD = 32 * MIB
_COPY_CHUNK = 4 * MIB


class FatbinError(Exception):
    """A shared object whose ELF or fat binary headers do not hold together (no path in it)."""


@model
class LibraryArchs:
    """One shared object of a wheel and the GPU code its ``.nv_fatbin`` section carries."""

    path: str
    archs: tuple[Arch, ...]
    containers: int
    elsewhere: int = 0
    nvcc: tuple[str, ...] = ()
    """The CUDA toolkits whose compiler left its name in the library's GPU code ("Cuda
    compilation tools, release 12.9, V12.9.86": ``12.9.86``), oldest first; none where its fat
    binaries are compressed."""


@model
class WheelArchs:
    """What :func:`read_wheel_archs` found: each shared object with GPU code, and how many
    shared objects had none."""

    source: str
    libraries: tuple[LibraryArchs, ...]
    without_gpu_code: int

    @property
    def common(self) -> tuple[Arch, ...]:
        """The entries every library with GPU code carries: the wheel covers a GPU only when
        each of its libraries does."""
        if not self.libraries:
            return ()
        shared = set(self.libraries[0].archs)
        for library in self.libraries[1:]:
            shared &= set(library.archs)
        return tuple(sorted(shared))

    def to_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "libraries": [
                {
                    "path": lib.path,
                    "archs": [str(a) for a in lib.archs],
                    "containers": lib.containers,
                    "containers_outside_nv_fatbin": lib.elsewhere,
                    "nvcc": list(lib.nvcc),
                }
                for lib in self.libraries
            ],
            "common": [str(a) for a in self.common],
            "without_gpu_code": self.without_gpu_code,
        }


# ---------------------------------------------------------------------------------------------
# Fat binaries and ELF sections, from a seekable binary file


def _read_at(stream: IO[bytes], offset: int, size: int) -> bytes:
    stream.seek(offset)
    data = stream.read(size)
    if len(data) != size:
        raise FatbinError(f"ends before byte {offset + size}")
    return data


def _arch(code: int, ptx: bool) -> Arch:
    if not 10 <= code <= 999:
        raise FatbinError(f"a fat binary entry names architecture {code}")
    return Arch(ComputeCapability(code // 10, code % 10), ptx)


def _container(stream: IO[bytes], pos: int, limit: int) -> tuple[frozenset[Arch], int]:
    """The architectures of the container whose header is at ``pos``, and where it ends; a
    container that does not fit before ``limit`` or whose entries do not chain up to its end
    raises FatbinError."""
    magic, _version, header_size, payload = _CONTAINER_HEADER.unpack(
        _read_at(stream, pos, _CONTAINER_HEADER.size)
    )
    if magic != FATBIN_MAGIC:
        raise FatbinError(f"no fat binary header at byte {pos} (magic {magic:#010x})")
    container_end = pos + header_size + payload
    if header_size < _CONTAINER_HEADER.size or container_end > limit:
        raise FatbinError(f"the fat binary at byte {pos} runs past its section")
    found: set[Arch] = set()
    entry = pos + header_size
    while entry + _ENTRY_MIN <= container_end:
        kind, _v, entry_header, padded = _ENTRY_HEAD.unpack(_read_at(stream, entry, _ENTRY_HEAD.size))
        (code,) = struct.unpack("<I", _read_at(stream, entry + _ENTRY_ARCH_AT, 4))
        if entry_header < _ENTRY_MIN or entry + entry_header + padded > container_end:
            raise FatbinError(f"the fat binary entry at byte {entry} runs past its container")
        if kind in (ENTRY_PTX, ENTRY_CUBIN):
            found.add(_arch(code, kind == ENTRY_PTX))
        entry += entry_header + padded
    return frozenset(found), container_end


def fatbin_archs(stream: IO[bytes], offset: int, size: int) -> tuple[frozenset[Arch], int]:
    """The architectures of the fat binary containers filling ``stream[offset:offset+size]``
    (a ``.nv_fatbin`` section) and how many containers there are. Zero bytes between
    containers are alignment padding; anything else that is not a container is an error."""
    end = offset + size
    pos = offset
    found: set[Arch] = set()
    containers = 0
    while pos + _CONTAINER_HEADER.size <= end:
        (magic,) = struct.unpack("<I", _read_at(stream, pos, 4))
        if magic == 0:
            pos = _skip_zeros(stream, pos, end)
            continue
        archs, pos = _container(stream, pos, end)
        found |= archs
        containers += 1
    return frozenset(found), containers


def _skip_zeros(stream: IO[bytes], pos: int, end: int) -> int:
    """The first 8-byte step at or after ``pos`` that is not zero padding (or ``end``)."""
    while pos < end:
        chunk = _read_at(stream, pos, min(64 * 1024, end - pos))
        stripped = len(chunk) - len(chunk.lstrip(b"\0"))
        if stripped < len(chunk):
            return pos + stripped - stripped % 8
        pos += len(chunk)
    return end


_MAGIC_BYTES = struct.pack("<I", FATBIN_MAGIC)
_SCAN_CHUNK = 16 * MIB


def scan_fatbins(stream: IO[bytes], start: int, end: int) -> tuple[frozenset[Arch], int]:
    """Fat binary containers anywhere in ``stream[start:end]``, found by their magic and kept
    only when their header is the usual one (version 1, 16 bytes) and their entries chain up
    to their end exactly: some libraries (cuFFT from 11.2) keep most of their GPU code in data
    sections such as ``.ldata`` instead of ``.nv_fatbin``."""
    found: set[Arch] = set()
    containers = 0
    pos = start
    while pos + _CONTAINER_HEADER.size <= end:
        chunk = _read_at(stream, pos, min(_SCAN_CHUNK, end - pos))
        at = chunk.find(_MAGIC_BYTES)
        next_pos = pos + max(len(chunk) - len(_MAGIC_BYTES) + 1, 1)
        while at >= 0:
            here = pos + at
            header = chunk[at : at + _CONTAINER_HEADER.size]
            usual = len(header) < _CONTAINER_HEADER.size or header[4:8] == b"\x01\x00\x10\x00"
            parsed = None
            if usual and here + _CONTAINER_HEADER.size <= end:
                try:
                    parsed = _container(stream, here, end)
                except FatbinError:
                    parsed = None
            if parsed is not None:
                archs, container_end = parsed
                found |= archs
                containers += 1
                if container_end >= pos + len(chunk):
                    next_pos = container_end
                    break
                at = chunk.find(_MAGIC_BYTES, container_end - pos)
            else:
                at = chunk.find(_MAGIC_BYTES, at + 1)
        if next_pos <= pos:
            next_pos = pos + 1
        pos = next_pos
    return frozenset(found), containers


_ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION = struct.Struct("<IIQQQQIIQQ")
_SHN_XINDEX = 0xFFFF
_SHT_NOBITS = 8
_MAX_SECTIONS = 1 << 16


def _sections(stream: IO[bytes], file_size: int) -> Iterator[tuple[bytes, int, int, int]]:
    """(name, type, offset, size) of each section of the ELF64 little-endian file."""
    header = _read_at(stream, 0, _ELF_HEADER.size)
    ident, *_rest = _ELF_HEADER.unpack(header)
    if ident[:4] != b"\x7fELF":
        raise FatbinError("not an ELF file")
    if ident[4] != 2 or ident[5] != 1:
        raise FatbinError("not a 64-bit little-endian ELF file")
    fields = _ELF_HEADER.unpack(header)
    shoff, shentsize, shnum, shstrndx = fields[6], fields[11], fields[12], fields[13]
    if shoff == 0:
        return
    if shentsize != _SECTION.size:
        raise FatbinError(f"section headers of {shentsize} bytes")
    first = _SECTION.unpack(_read_at(stream, shoff, _SECTION.size))
    if shnum == 0:
        shnum = first[5]
    if shstrndx == _SHN_XINDEX:
        shstrndx = first[6]
    if not 0 < shnum <= _MAX_SECTIONS or shoff + shnum * _SECTION.size > file_size:
        raise FatbinError(f"{shnum} section headers at byte {shoff} do not fit the file")
    table = _read_at(stream, shoff, shnum * _SECTION.size)
    headers = [_SECTION.unpack_from(table, i * _SECTION.size) for i in range(shnum)]
    if shstrndx >= shnum:
        raise FatbinError("no section name table")
    names_at, names_size = headers[shstrndx][4], headers[shstrndx][5]
    if names_at + names_size > file_size:
        raise FatbinError("the section name table runs past the end of the file")
    names = _read_at(stream, names_at, names_size)
    for item in headers:
        name_at, kind, offset, size = item[0], item[1], item[4], item[5]
        name = names[name_at : names.find(b"\0", name_at)] if name_at < len(names) else b""
        yield name, kind, offset, size


@model
class ElfGpuCode:
    """The GPU code of one ELF file: the architectures of every fat binary container in it,
    how many sit in ``.nv_fatbin`` sections and how many elsewhere."""

    archs: frozenset[Arch]
    in_sections: int
    elsewhere: int


def elf_archs(stream: IO[bytes], file_size: int) -> ElfGpuCode | None:
    """The GPU code in an ELF file: its ``.nv_fatbin`` sections, read strictly, and fat binary
    containers elsewhere in the file (:func:`scan_fatbins`); None when there is neither."""
    found: set[Arch] = set()
    in_sections = 0
    covered: list[tuple[int, int]] = []
    for name, kind, offset, size in list(_sections(stream, file_size)):
        if name != FATBIN_SECTION.encode() or kind == _SHT_NOBITS:
            continue
        if offset + size > file_size:
            raise FatbinError(f"section {FATBIN_SECTION} runs past the end of the file")
        archs, count = fatbin_archs(stream, offset, size)
        found |= archs
        in_sections += count
        covered.append((offset, offset + size))
    elsewhere = 0
    pos = 0
    for begin, finish in [*sorted(covered), (file_size, file_size)]:
        if begin > pos:
            archs, count = scan_fatbins(stream, pos, begin)
            found |= archs
            elsewhere += count
        pos = max(pos, finish)
    if not in_sections and not elsewhere:
        return None
    return ElfGpuCode(frozenset(found), in_sections, elsewhere)


# ---------------------------------------------------------------------------------------------
# Wheels: members of a zip file, local or over HTTP


def is_shared_object(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return base.endswith(".so") or ".so." in base


def _wanted(info: zipfile.ZipInfo, patterns: Sequence[str]) -> bool:
    if info.is_dir() or not is_shared_object(info.filename):
        return False
    base = info.filename.rsplit("/", 1)[-1]
    return not patterns or any(fnmatch.fnmatchcase(base, p) for p in patterns)


def _library(archive: zipfile.ZipFile, info: zipfile.ZipInfo, max_member: int) -> LibraryArchs | None:
    import tempfile

    if info.file_size > max_member:
        raise FatbinError(f"unpacks to {info.file_size} bytes; at most {max_member} are read")
    with archive.open(info) as member, tempfile.SpooledTemporaryFile(64 * MIB) as unpacked:
        magic = member.read(4)
        if magic != b"\x7fELF":
            return None
        unpacked.write(magic)
        written = len(magic)
        nvcc: set[str] = set()
        tail = b""
        while chunk := member.read(_COPY_CHUNK):
            written += len(chunk)
            if written > max_member:
                raise FatbinError(f"unpacks to more than {max_member} bytes")
            unpacked.write(chunk)
            nvcc.update(_nvcc_releases(tail + chunk, final=False))
            tail = (tail + chunk)[-_NVCC_SPAN:]
        nvcc.update(_nvcc_releases(tail, final=True))
        found = elf_archs(unpacked, written)
    if found is None:
        return None
    return LibraryArchs(
        info.filename,
        tuple(sorted(found.archs)),
        found.in_sections,
        found.elsewhere,
        tuple(sorted(nvcc, key=Version)),
    )


_NVCC = re.compile(rb"Cuda compilation tools, release (\d{1,3})\.(\d{1,3}), V(\d{1,3}\.\d{1,3}\.\d{1,5})")
"""What nvcc writes into the GPU code it builds (left readable where the fat binary is not
compressed): the toolkit's release and full version."""
_NVCC_SPAN = 80
"""Bytes kept from the end of one chunk to find a name that straddles two (longer than one)."""


def _nvcc_releases(data: bytes, *, final: bool) -> set[str]:
    """The full toolkit versions (``12.9.86``) nvcc names in ``data``, where release and
    version agree; unless ``final``, a name that reaches the end of ``data`` may go on in the
    next chunk and is left for it."""
    found = set()
    for match in _NVCC.finditer(data):
        major, minor, full = match.groups()
        if (final or match.end() < len(data)) and full.split(b".")[:2] == [major, minor]:
            found.add(full.decode())
    return found


def _read_archive(stream: IO[bytes], source: str, patterns: Sequence[str], max_member: int) -> WheelArchs:
    errors = (FatbinError, NotImplementedError)
    libraries, without = wheel_libraries(stream, source, patterns, max_member, _library, errors)
    return WheelArchs(source, libraries, without)


def wheel_libraries(
    stream: IO[bytes],
    source: str,
    patterns: Sequence[str],
    max_member: int,
    read: Callable[[zipfile.ZipFile, zipfile.ZipInfo, int], L | None],
    errors: tuple[type[Exception], ...] = (),
) -> tuple[tuple[L, ...], int]:
    """What ``read`` finds in each shared object of the wheel in ``stream`` (those whose file
    name matches one of ``patterns``, or all), and how many it found nothing in. The wheel's
    bad zip data, and ``errors`` raised by ``read``, are an InputError naming the member. The
    one walk of a wheel's libraries, for NVIDIA's fat binaries and AMD's offload bundles alike."""
    try:
        archive = zipfile.ZipFile(stream)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise InputError(f"{printable(source)}: not a wheel (zip file): {exc}") from None
    found: list[L] = []
    without = 0
    caught: tuple[type[Exception], ...] = (
        *errors,
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        EOFError,
        RuntimeError,
    )
    with archive:
        for info in archive.infolist():
            if not _wanted(info, patterns):
                continue
            try:
                library = read(archive, info, max_member)
            except caught as exc:
                raise InputError(f"{printable(source)}: {printable(info.filename)}: {exc}") from None
            if library is None:
                without += 1
            else:
                found.append(library)
    return tuple(found), without


def read_wheel_archs(
    source: str,
    members: Sequence[str] = (),
    *,
    max_member: int = MAX_MEMBER_BYTES,
    max_download: int = MAX_DOWNLOAD_BYTES,
    timeout: float = HTTP_TIMEOUT_S,
) -> WheelArchs:
    """The GPU architectures in each shared object of the wheel at ``source`` (a path or an
    http(s) URL). ``members``: shell patterns on file names (``libcudnn_ops*``) to read only
    those shared objects. Bad input raises InputError; an unreachable URL IndexUnavailableError."""
    if source.startswith(("http://", "https://")):
        with _open_url(source, max_download, timeout) as stream:
            return _read_archive(stream, _shown_url(source), members, max_member)
    path = Path(source)
    with open_regular_file(path) as stream:
        return _read_archive(stream, path.name, members, max_member)


def open_regular_file(path: Path) -> IO[bytes]:
    """A regular file opened for reading; a FIFO or a device is refused without blocking."""
    import os
    import stat

    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InputError(f"{printable(path)}: cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError(f"{printable(path)}: not a regular file")
    return os.fdopen(fd, "rb")


def _shown_url(url: str) -> str:
    """The URL without credentials or query, as messages and output show it."""
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


class _RangeFile(io.RawIOBase):
    """A read-only, seekable file over HTTP range requests, reading ahead more the longer reads
    run on in order (a member's compressed bytes), and counting every byte against a bound."""

    def __init__(
        self, session: requests.Session, url: str, size: int, tail: bytes, max_download: int, timeout: float
    ) -> None:
        super().__init__()
        self._session = session
        self._url = url
        self._size = size
        self._pos = 0
        self._block_at = size - len(tail)
        self._block = tail
        self._ahead = _FIRST_READ
        self._fetched = len(tail)
        self._max = max_download
        self._timeout = timeout

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        wanted = min(len(buffer), self._size - self._pos)
        if wanted <= 0:
            return 0
        start = self._pos - self._block_at
        if not 0 <= start < len(self._block):
            sequential = self._pos == self._block_at + len(self._block)
            self._ahead = min(self._ahead * 2, _MAX_READ_AHEAD) if sequential else _FIRST_READ
            self._fill(self._pos, max(wanted, self._ahead))
            start = 0
        data = self._block[start : start + wanted]
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def _fill(self, offset: int, length: int) -> None:
        end = min(offset + length, self._size) - 1
        self._fetched += end - offset + 1
        if self._fetched > self._max:
            raise IndexUnavailableError(f"{_shown_url(self._url)}: more than {self._max} bytes would be read")
        response = _get(self._session, self._url, self._timeout, f"bytes={offset}-{end}")
        with response:
            if response.status_code != 206:
                raise IndexUnavailableError(
                    f"{_shown_url(self._url)}: HTTP {response.status_code} to a range request"
                )
            self._block = _body(response, end - offset + 1, self._url, self._timeout)
        self._block_at = offset
        if len(self._block) != end - offset + 1:
            raise IndexUnavailableError(f"{_shown_url(self._url)}: a short range answer")


def _get(session: requests.Session, url: str, timeout: float, byte_range: str) -> requests.Response:
    import requests

    try:
        response = session.get(
            url, headers={"Range": byte_range, "Accept-Encoding": "identity"}, timeout=timeout, stream=True
        )
    except requests.RequestException as exc:
        raise IndexUnavailableError(f"{_shown_url(url)}: {type(exc).__name__}") from None
    if response.status_code not in (200, 206):
        response.close()
        raise IndexUnavailableError(f"{_shown_url(url)}: HTTP {response.status_code}")
    return response


MIN_RATE = 256 * 1024
"""Bytes a second a body must average, after ``timeout`` seconds of grace: a server that sends
a byte a second is given up on, not waited for."""
_READ = 1024 * 1024


def _stream(response: requests.Response, limit: int, url: str, timeout: float) -> Iterator[bytes]:
    """The body of ``response`` as it arrives, at most ``limit`` bytes, within ``timeout`` plus
    the time the expected length takes at :data:`MIN_RATE`."""
    import time

    import urllib3

    declared = response.headers.get("Content-Length", "")
    expected = min(int(declared), limit) if declared.isdigit() else limit
    deadline = time.monotonic() + timeout + expected / MIN_RATE
    raw = response.raw
    read = getattr(raw, "read1", None) or raw.read
    total = 0
    while True:
        try:
            chunk = read(_READ)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise IndexUnavailableError(f"{_shown_url(url)}: {type(exc).__name__}") from None
        if not chunk:
            return
        total += len(chunk)
        if total > limit:
            raise IndexUnavailableError(f"{_shown_url(url)}: more than {limit} bytes sent")
        if time.monotonic() > deadline:
            raise IndexUnavailableError(
                f"{_shown_url(url)}: too slow ({total} bytes in {timeout + expected / MIN_RATE:.0f} s)"
            )
        yield chunk


def _body(response: requests.Response, limit: int, url: str, timeout: float) -> bytes:
    return b"".join(_stream(response, limit, url, timeout))


def _total_size(content_range: str | None) -> int | None:
    """``bytes 0-99/1234`` -> 1234."""
    if not content_range or "/" not in content_range:
        return None
    total = content_range.rsplit("/", 1)[1].strip()
    return int(total) if total.isdigit() else None


class _OpenedUrl:
    """A context manager giving a seekable stream over the wheel at a URL."""

    def __init__(self, url: str, max_download: int, timeout: float) -> None:
        self.url = url
        self.max_download = max_download
        self.timeout = timeout
        self._closers: list[IO[bytes] | requests.Session] = []

    def __enter__(self) -> IO[bytes]:
        import requests

        session = requests.Session()
        self._closers.append(session)
        first = min(_FIRST_READ, self.max_download)
        response = _get(session, self.url, self.timeout, f"bytes=-{first}")
        with response:
            size = _total_size(response.headers.get("Content-Range"))
            if response.status_code == 206 and size is not None:
                tail = _body(response, first, self.url, self.timeout)
                ranged = _RangeFile(session, self.url, size, tail, self.max_download, self.timeout)
                stream: IO[bytes] = io.BufferedReader(ranged, buffer_size=64 * 1024)
            else:
                stream = self._download(response)
        self._closers.append(stream)
        return stream

    def _download(self, response: requests.Response) -> IO[bytes]:
        """The whole body into a temporary file: the server does not answer ranges."""
        import tempfile

        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > self.max_download:
            raise IndexUnavailableError(
                f"{_shown_url(self.url)}: {declared} bytes; at most {self.max_download} are read"
            )
        spool: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in __exit__)
        try:
            for chunk in _stream(response, self.max_download, self.url, self.timeout):
                spool.write(chunk)
        except BaseException:
            spool.close()
            raise
        spool.seek(0)
        return spool

    def __exit__(self, *exc: object) -> None:
        for item in reversed(self._closers):
            item.close()


def _open_url(url: str, max_download: int, timeout: float) -> _OpenedUrl:
    return _OpenedUrl(url, max_download, timeout)


def open_wheel(
    url: str, *, max_download: int = MAX_DOWNLOAD_BYTES, timeout: float = HTTP_TIMEOUT_S
) -> _OpenedUrl:
    """A context manager giving a seekable stream over the wheel at ``url``, read with range
    requests where the server allows them (else downloaded once), within the same bounds as
    :func:`read_wheel_archs`: what ``catalog refresh`` reads a wheel's METADATA with when the
    index offers no PEP 658 metadata file."""
    return _open_url(url, max_download, timeout)
