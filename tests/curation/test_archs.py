"""The arch reader (colabenv.curation.archs, ``colabenv catalog archs``) on ELF files the tests build:
a minimal ELF64 with a ``.nv_fatbin`` section of fat binary containers, zipped into a wheel,
read from disk and served from 127.0.0.1 with and without HTTP range support."""

from __future__ import annotations

import http.server
import io
import json
import os
import re
import struct
import threading
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from colabenv.curation import archs
from colabenv.curation.archs import FatbinError, elf_archs, fatbin_archs, read_wheel_archs
from colabenv.errors import IndexUnavailableError, InputError
from colabenv.models import Arch
from tests.support.fixtures import Runner

PTX, CUBIN = 1, 2

# ---------------------------------------------------------------------------------------------
# Builders: fat binaries, ELF files, wheels


def _align8(n: int) -> int:
    return (n + 7) & ~7


def fat_entry(kind: int, arch: int, payload: bytes = b"code", header_size: int = 64) -> bytes:
    """One entry: the header cuobjdump reads (kind, header size, padded payload size, arch at
    byte 28), then the payload padded to 8 bytes."""
    padded = _align8(len(payload))
    head = struct.pack("<HHIQII", kind, 0x0101, header_size, padded, len(payload), 0)
    head += struct.pack("<HHI", 0, 0, arch)
    head = head.ljust(header_size, b"\0")
    return head + payload.ljust(padded, b"\0")


def fat_container(entries: Sequence[bytes]) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def fatbin_of(archs: Sequence[str], containers: int = 1) -> bytes:
    """``containers`` copies of one container holding an entry per ``sm_XY`` / ``compute_XY``,
    with zero padding between them as the linker leaves it."""
    entries = []
    for text in archs:
        arch = Arch.parse(text)
        code = arch.capability.major * 10 + arch.capability.minor
        header = 112 if code >= 100 and not arch.ptx else 80 if code >= 120 else 64
        entries.append(fat_entry(PTX if arch.ptx else CUBIN, code, b"x" * (code % 13), header_size=header))
    one = fat_container(entries)
    return b"".join(one + b"\0" * 16 for _ in range(containers))


def elf_with(sections: dict[str, bytes]) -> bytes:
    """A minimal ELF64 little-endian shared object holding the named PROGBITS sections."""
    names = b"\0" + b"".join(n.encode() + b"\0" for n in [*sections, ".shstrtab"])
    body = b""
    headers = [bytes(64)]
    offset = 64
    for name, data in sections.items():
        headers.append(
            struct.pack(
                "<IIQQQQIIQQ", names.index(name.encode() + b"\0"), 1, 0, 0, offset, len(data), 0, 0, 8, 0
            )
        )
        body += data
        offset += len(data)
    headers.append(
        struct.pack("<IIQQQQIIQQ", names.index(b".shstrtab\0"), 3, 0, 0, offset, len(names), 0, 0, 1, 0)
    )
    body += names
    shoff = 64 + len(body)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    header = struct.pack(
        "<16sHHIQQQIHHHHHH", ident, 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(headers), len(headers) - 1
    )
    return header + body + b"".join(headers)


def gpu_library(archs: Sequence[str], containers: int = 2) -> bytes:
    return elf_with({".text": b"\x90" * 32, ".nv_fatbin": fatbin_of(archs, containers)})


def make_wheel(path: Path, members: dict[str, bytes], filler: int = 0) -> Path:
    """The libraries first, then ``filler`` incompressible bytes, so that reading a library
    from a URL needs a range request of its own beyond the end of the file."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        if filler:
            archive.writestr("nvidia/fake/include/blob.bin", os.urandom(filler))
        archive.writestr(
            "nvidia_fake_cu12-1.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: nvidia-fake-cu12\nVersion: 1.0\n",
        )
    return path


def _archs(texts: Sequence[str]) -> tuple[Arch, ...]:
    return tuple(sorted(Arch.parse(t) for t in texts))


# ---------------------------------------------------------------------------------------------
# Fat binaries and ELF sections


def test_fatbin_containers_list_their_cubins_and_ptx() -> None:
    data = fatbin_of(["sm_50", "sm_60", "sm_61", "sm_70", "sm_100", "sm_120", "compute_120"], 3)
    archs, containers = fatbin_archs(io.BytesIO(data), 0, len(data))
    assert containers == 3
    assert tuple(sorted(archs)) == _archs(
        ["sm_50", "sm_60", "sm_61", "sm_70", "sm_100", "sm_120", "compute_120"]
    )
    assert Arch.parse("compute_120") in archs and Arch.parse("sm_120") in archs


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(
                st.sampled_from([PTX, CUBIN]),
                st.sampled_from([35, 50, 52, 60, 61, 70, 75, 80, 86, 89, 90, 100, 103, 120, 121]),
            ),
            min_size=0,
            max_size=6,
        ),
        min_size=1,
        max_size=4,
    ),
    st.integers(0, 3),
)
def test_any_run_of_containers_reads_back(containers: list[list[tuple[int, int]]], padding: int) -> None:
    data = b"".join(
        fat_container([fat_entry(k, a, b"p" * a) for k, a in entries]) + bytes(8 * padding)
        for entries in containers
    )
    archs, count = fatbin_archs(io.BytesIO(b"junk" + data), 4, len(data))
    assert count == len(containers)
    expected = {
        Arch.parse(f"{'compute' if k == PTX else 'sm'}_{a}") for entries in containers for k, a in entries
    }
    assert set(archs) == expected


def test_other_entry_kinds_are_skipped() -> None:
    data = fat_container([fat_entry(CUBIN, 80), fat_entry(8, 90), fat_entry(PTX, 90)])
    archs, _ = fatbin_archs(io.BytesIO(data), 0, len(data))
    assert set(archs) == {Arch.parse("sm_80"), Arch.parse("compute_90")}


@pytest.mark.parametrize(
    ("data", "words"),
    [
        pytest.param(b"\x01\x02\x03\x04" + bytes(12), "no fat binary header", id="bad-magic"),
        pytest.param(
            fat_container([fat_entry(CUBIN, 80)])[:-8], "runs past its section", id="container-past-section"
        ),
        pytest.param(
            struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 40)
            + struct.pack("<HHIQ", 2, 0x101, 64, 1 << 40)
            + bytes(24),
            "runs past its container",
            id="entry-past-container",
        ),
        pytest.param(
            struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 32) + struct.pack("<HHIQ", 2, 0x101, 0, 0) + bytes(16),
            "runs past its container",
            id="entry-header-too-small",
        ),
        pytest.param(fat_container([fat_entry(CUBIN, 7)]), "architecture 7", id="bad-arch"),
    ],
)
def test_broken_fat_binaries_are_refused(data: bytes, words: str) -> None:
    with pytest.raises(FatbinError, match=words):
        fatbin_archs(io.BytesIO(data), 0, len(data))


def test_elf_reader_finds_the_section_and_ignores_other_code() -> None:
    library = gpu_library(["sm_75", "sm_80", "compute_90"])
    found = elf_archs(io.BytesIO(library), len(library))
    assert found is not None
    assert tuple(sorted(found.archs)) == _archs(["sm_75", "sm_80", "compute_90"])
    assert (found.in_sections, found.elsewhere) == (2, 0)
    plain = elf_with({".text": b"\x90" * 64})
    assert elf_archs(io.BytesIO(plain), len(plain)) is None


def test_containers_kept_in_data_sections_are_found_too() -> None:
    """cuFFT 11.2 and later keep their kernels' fat binaries in .ldata, not .nv_fatbin."""
    bogus = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 1 << 50)
    not_usual = struct.pack("<IHHQ", 0xBA55ED50, 7, 99, 8) + bytes(8)
    ldata = (
        b"\x07" * 13
        + fatbin_of(["sm_52", "compute_50"], 3)
        + bogus
        + not_usual
        + fat_container([fat_entry(CUBIN, 90)])
    )
    library = elf_with({".nv_fatbin": fatbin_of(["sm_52"]), ".ldata": ldata})
    found = elf_archs(io.BytesIO(library), len(library))
    assert found is not None
    assert tuple(sorted(found.archs)) == _archs(["compute_50", "sm_52", "sm_90"])
    assert (found.in_sections, found.elsewhere) == (1, 4)
    only_data = elf_with({".ldata": fat_container([fat_entry(PTX, 70)])})
    found = elf_archs(io.BytesIO(only_data), len(only_data))
    assert found is not None and found.archs == {Arch.parse("compute_70")}


@settings(max_examples=30, deadline=None)
@given(st.binary(max_size=600), st.integers(0, 40))
def test_scanning_noise_finds_only_real_containers(noise: bytes, cut: int) -> None:
    container = fat_container([fat_entry(CUBIN, 61), fat_entry(PTX, 61)])
    magic = struct.pack("<I", 0xBA55ED50)
    data = noise[:cut] + magic + noise[cut:] + container + magic
    found = elf_archs(io.BytesIO(elf_with({".ldata": data})), len(elf_with({".ldata": data})))
    assert found is not None
    assert found.archs >= {Arch.parse("sm_61"), Arch.parse("compute_61")}
    assert found.elsewhere >= 1


@pytest.mark.parametrize(
    ("data", "words"),
    [
        pytest.param(b"MZ" + bytes(100), "not an ELF file", id="not-elf"),
        pytest.param(b"\x7fELF\x01\x01" + bytes(100), "not a 64-bit little-endian", id="elf32"),
        pytest.param(gpu_library(["sm_80"])[:-40], "do not fit the file", id="truncated"),
    ],
)
def test_broken_elf_files_are_refused(data: bytes, words: str) -> None:
    with pytest.raises(FatbinError, match=words):
        elf_archs(io.BytesIO(data), len(data))


# ---------------------------------------------------------------------------------------------
# Wheels on disk

MEMBERS = {
    "nvidia/fake/lib/libfake_ops.so.9": gpu_library(["sm_50", "sm_60", "sm_70", "sm_80", "compute_120"]),
    "nvidia/fake/lib/libfake_cnn.so.9": gpu_library(["sm_60", "sm_75", "sm_80", "compute_120"]),
    "nvidia/fake/lib/libfake.so.9": elf_with({".text": b"\x90" * 16}),
    "nvidia/fake/lib/libnot_elf.so": b"INPUT(-lfake)\n",
    "nvidia/fake/__init__.py": b"",
}


def test_a_wheel_file_lists_each_library_and_what_they_share(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "nvidia_fake_cu12-1.0-py3-none-manylinux_2_27_x86_64.whl", MEMBERS)
    found = read_wheel_archs(str(wheel))
    assert found.source == wheel.name
    by_name = {lib.path.rsplit("/", 1)[-1]: lib for lib in found.libraries}
    assert set(by_name) == {"libfake_ops.so.9", "libfake_cnn.so.9"}
    assert by_name["libfake_ops.so.9"].archs == _archs(["sm_50", "sm_60", "sm_70", "sm_80", "compute_120"])
    assert by_name["libfake_ops.so.9"].containers == 2
    assert found.common == _archs(["sm_60", "sm_80", "compute_120"])
    assert found.without_gpu_code == 2
    only = read_wheel_archs(str(wheel), ["libfake_cnn*"])
    assert [lib.path for lib in only.libraries] == ["nvidia/fake/lib/libfake_cnn.so.9"]
    assert only.without_gpu_code == 0


NVCC_NAME = b"Cuda compilation tools, release 12.9, V12.9.86"


@pytest.mark.parametrize("offset", [0, 20, 40, 63, 64, 100])
def test_the_nvcc_a_library_names_is_read_across_chunk_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offset: int
) -> None:
    """nvcc leaves its toolkit's name in the GPU code it builds where the fat binary is not
    compressed; read in 64-byte chunks, a name that straddles two is still found, once."""
    monkeypatch.setattr(archs, "_COPY_CHUNK", 64)
    comment = b"x" * offset + NVCC_NAME + b"\0" + NVCC_NAME + b"\0"
    # a release and a version that disagree are no toolkit's name
    noise = b"Cuda compilation tools, release 12.9, V13.0.48\0"
    library = elf_with({".nv_fatbin": fatbin_of(["sm_80"]), ".comment": comment, ".rodata": noise})
    wheel = make_wheel(tmp_path / "x-1.0-py3-none-any.whl", {"x/libx.so": library})
    (found,) = read_wheel_archs(str(wheel)).libraries
    assert found.nvcc == ("12.9.86",)
    assert (
        read_wheel_archs(str(make_wheel(tmp_path / "y-1.0-py3-none-any.whl", MEMBERS))).libraries[0].nvcc
        == ()
    )


def test_a_broken_library_in_a_wheel_names_the_wheel_and_member(tmp_path: Path) -> None:
    broken = elf_with({".nv_fatbin": b"\x01\x02\x03\x04" + bytes(28)})
    wheel = make_wheel(tmp_path / "w.whl", {"nvidia/x/lib/libbad.so.1": broken})
    with pytest.raises(InputError, match=r"w\.whl: nvidia/x/lib/libbad\.so\.1: no fat binary"):
        read_wheel_archs(str(wheel))


def test_a_library_larger_than_the_bound_is_refused(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "w.whl", MEMBERS)
    with pytest.raises(InputError, match="at most 100 are read"):
        read_wheel_archs(str(wheel), max_member=100)


@pytest.mark.parametrize("content", [b"", b"not a zip at all", bytes(4096)])
def test_a_file_that_is_no_wheel_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "x.whl"
    path.write_bytes(content)
    with pytest.raises(InputError, match=r"x\.whl: not a wheel"):
        read_wheel_archs(str(path))


def test_a_missing_file_or_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        read_wheel_archs(str(tmp_path / "missing.whl"))
    with pytest.raises(InputError):
        read_wheel_archs(str(tmp_path))


# ---------------------------------------------------------------------------------------------
# Wheels over HTTP, with and without range support


@dataclass
class _Served:
    """What the test server was asked and sent."""

    ranges: bool
    requests: list[str] = field(default_factory=list)
    sent: int = 0
    files: dict[str, bytes] = field(default_factory=dict)


class _Handler(http.server.BaseHTTPRequestHandler):
    served: _Served

    def do_GET(self) -> None:
        served = self.served
        data = served.files.get(self.path)
        header = self.headers.get("Range") or ""
        served.requests.append(header or "full")
        if data is None:
            self.send_error(404)
            return
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", header)
        if served.ranges and match:
            first, last = match.groups()
            if first == "":
                start, end = max(0, len(data) - int(last)), len(data) - 1
            else:
                start, end = int(first), min(int(last or len(data) - 1), len(data) - 1)
            body = data[start : end + 1]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        else:
            body = data
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        served.sent += len(body)  # before the write: the client may finish reading (and the test
        self.wfile.write(body)  # look) before this thread returns from it

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture(params=[True, False], ids=["ranges", "no-ranges"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, _Served, int]]:
    """A wheel with 3 MiB of incompressible filler beside its libraries, at a local URL."""
    wheel = make_wheel(tmp_path / "nvidia_fake_cu12-1.0-py3-none-any.whl", MEMBERS, filler=3 * 1024 * 1024)
    state = _Served(ranges=request.param, files={"/files/" + wheel.name: wheel.read_bytes()})
    handler = type("Handler", (_Handler,), {"served": state})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/files/{wheel.name}", state, wheel.stat().st_size
    finally:
        server.shutdown()
        server.server_close()


def test_a_url_is_read_with_ranges_when_the_server_allows_them(
    served: tuple[str, _Served, int],
) -> None:
    url, state, size = served
    found = read_wheel_archs(url)
    assert found.common == _archs(["sm_60", "sm_80", "compute_120"])
    assert found.source == url
    if state.ranges:
        assert state.requests[0].startswith("bytes=-"), "the central directory first, from the end"
        assert all(r.startswith("bytes=") for r in state.requests)
        assert state.sent < size // 4, "the filler member is never read"
    else:
        assert len(state.requests) == 1 and state.requests[0].startswith("bytes=-")
        assert state.sent == size


def test_a_url_over_the_bound_is_refused(served: tuple[str, _Served, int]) -> None:
    url, state, size = served
    with pytest.raises(IndexUnavailableError, match="bytes"):
        read_wheel_archs(url, max_download=50_000 if state.ranges else size - 1)


def test_an_unreachable_or_missing_url_is_an_index_problem(
    served: tuple[str, _Served, int],
) -> None:
    url, _state, _size = served
    with pytest.raises(IndexUnavailableError, match="HTTP 404"):
        read_wheel_archs(url + ".missing")
    with pytest.raises(IndexUnavailableError, match="ConnectionError"):
        read_wheel_archs("http://127.0.0.1:9/nothing.whl", timeout=5)


def test_credentials_in_a_url_are_never_shown() -> None:
    with pytest.raises(IndexUnavailableError) as caught:
        read_wheel_archs("http://user:secret@127.0.0.1:9/x.whl?token=abc", timeout=5)
    assert "secret" not in str(caught.value) and "token" not in str(caught.value)


# ---------------------------------------------------------------------------------------------
# The command


def test_catalog_archs_command_prints_libraries_and_json(runner: Runner, tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "nvidia_fake_cu12-1.0-py3-none-any.whl", MEMBERS)
    done = runner("catalog", "archs", str(wheel))
    assert done.returncode == 0, done.stderr
    assert (
        "libfake_ops.so.9: sm_50 sm_60 sm_70 sm_80 compute_120 (2 fat binaries in .nv_fatbin)" in done.stdout
    )
    assert "in every library: sm_60 sm_80 compute_120" in done.stdout
    built = make_wheel(
        tmp_path / "x-1.0-py3-none-any.whl",
        {"x/libx.so": elf_with({".nv_fatbin": fatbin_of(["sm_80"]), ".comment": NVCC_NAME})},
    )
    done = runner("catalog", "archs", str(built))
    assert "x/libx.so: sm_80 (1 fat binaries in .nv_fatbin; built by nvcc 12.9.86)" in done.stdout
    assert json.loads(runner("catalog", "archs", str(built), "--json").stdout)["libraries"][0]["nvcc"] == [
        "12.9.86"
    ]
    done = runner("catalog", "archs", str(wheel), "--member", "libfake_ops*", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["common"] == ["sm_50", "sm_60", "sm_70", "sm_80", "compute_120"]
    assert [lib["path"] for lib in report["libraries"]] == ["nvidia/fake/lib/libfake_ops.so.9"]


def test_catalog_archs_command_errors(runner: Runner, tmp_path: Path) -> None:
    done = runner("catalog", "archs", str(tmp_path / "missing.whl"))
    assert (done.returncode, done.stdout) == (2, "")
    assert "missing.whl: cannot read" in done.stderr
    assert "Traceback" not in done.stderr
    done = runner("catalog", "archs", "http://127.0.0.1:9/x.whl", "--timeout", "5")
    assert (done.returncode, done.stdout) == (4, "")
    done = runner("catalog", "archs", str(tmp_path), "--max-mib", "0")
    assert done.returncode == 2
