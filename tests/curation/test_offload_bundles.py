"""The AMD side of the arch reader (colabenv.curation.offload_bundles): the HIP offload bundles of
a shared object (clang's ``__CLANG_OFFLOAD_BUNDLE__`` layout, plain or ``CCOB``-compressed), in
ELF files and wheels the tests build, read from disk and from 127.0.0.1."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

import pytest

from colabenv.curation.offload_bundles import bundle_targets, elf_gfx, read_wheel_gfx
from tests.curation.test_archs import elf_with, make_wheel
from tests.support.index import LocalIndex
from tests.support.zstd_frames import raw_frame, raw_frame_decode

HOST = "host-x86_64-unknown-linux-gnu-"


def offload_bundle(targets: Sequence[str], *, code: bytes = b"\x7fELF-code-object") -> bytes:
    """One uncompressed bundle as clang-offload-bundler writes it: the magic, the entry count,
    each entry's offset, size, triple size and triple, then the code objects (the host's empty)."""
    triples = [HOST, *(f"hipv4-amdgcn-amd-amdhsa--{t}" for t in targets)]
    header_size = 24 + 8 + sum(24 + len(t) for t in triples)
    entries, blobs, offset = b"", b"", header_size
    for triple in triples:
        blob = b"" if triple == HOST else code
        entries += struct.pack("<QQQ", offset, len(blob), len(triple)) + triple.encode()
        blobs += blob
        offset += len(blob)
    return b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(triples)) + entries + blobs


def compressed_bundle(
    targets: Sequence[str], *, method: int = 0, version: int = 2, payload: bytes | None = None
) -> bytes:
    """A ``CCOB`` bundle (clang's ``--offload-compress``): version, method (0 zlib, 1 zstd), the
    sizes and a hash, then the compressed plain bundle (zstd: a real frame of Raw blocks, the
    bundle's magic split across two of them, so that only unpacking finds it), or ``payload``."""
    plain = offload_bundle(targets)
    data = zlib.compress(plain) if method == 0 else raw_frame(plain, first_block=10)
    data = data if payload is None else payload
    if version == 1:
        head = struct.pack("<4sHHIQ", b"CCOB", 1, method, len(plain), 0x1234)
    elif version == 2:
        head = struct.pack("<4sHHIIQ", b"CCOB", 2, method, 24 + len(data), len(plain), 0x1234)
    else:
        head = struct.pack("<4sHHQQQ", b"CCOB", 3, method, 32 + len(data), len(plain), 0x1234)
    return head + data


def hip_library(*bundles: bytes, section: str = ".hip_fatbin") -> bytes:
    """An ELF shared object whose ``section`` holds ``bundles``, each 4096-aligned as the
    linker leaves them."""
    body = b"".join(b.ljust((len(b) + 4095) // 4096 * 4096, b"\0") for b in bundles)
    return elf_with(
        {".text": b"\x90" * 32, ".rodata": b"__CLANG_OFFLOAD_BUNDLE__ is a string", section: body}
    )


def _gfx(data: bytes) -> tuple[str, ...]:
    import io

    found = elf_gfx(io.BytesIO(data), len(data))
    assert found is not None
    return found.gfx


def test_a_bundle_names_its_targets_features_dropped() -> None:
    bundle = offload_bundle(["gfx942:sramecc+:xnack-", "gfx90a:xnack+", "gfx1100"])
    assert bundle_targets(bundle) == ("gfx90a", "gfx942", "gfx1100"), "in the catalog's order"


def test_a_library_carries_the_targets_of_every_bundle_in_it() -> None:
    data = hip_library(offload_bundle(["gfx942", "gfx90a"]), offload_bundle(["gfx942", "gfx1201"]))
    assert _gfx(data) == ("gfx90a", "gfx942", "gfx1201")


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_zlib_compressed_bundle_is_read(version: int) -> None:
    data = hip_library(compressed_bundle(["gfx942:sramecc+:xnack-", "gfx950"], version=version))
    assert _gfx(data) == ("gfx942", "gfx950")


def _no_stdlib_zstd() -> bool:
    try:
        import compression.zstd  # type: ignore[import-not-found, unused-ignore]  # noqa: F401
    except ImportError:
        return True
    return False


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_zstd_bundle_is_read_with_the_decompressor_the_caller_gives(version: int) -> None:
    """CCOB method 1 (clang's ``--offload-compress`` with zstd, as the jax ROCm plugins ship it):
    unpacked by the callable the caller injects, its entry table read, generic targets included."""
    import io

    data = hip_library(
        compressed_bundle(["gfx908:xnack-", "gfx90a:xnack+", "gfx12-generic"], method=1, version=version)
    )
    calls: list[int] = []

    def decompress(frame: bytes, limit: int) -> bytes:
        calls.append(limit)
        return raw_frame_decode(frame, limit)

    found = elf_gfx(io.BytesIO(data), len(data), zstd=decompress)
    assert found is not None and calls, "the injected decompressor unpacked it"
    assert (found.bundles, found.unread) == (1, 0)
    assert found.gfx == ("gfx908", "gfx90a", "gfx1200", "gfx1201")


def test_a_zstd_bundle_the_decompressor_rejects_is_no_bundle() -> None:
    import io

    bad = compressed_bundle(["gfx942"], method=1, version=3)
    block = 32 + 13  # the CCOB header, the frame's magic, descriptor and content size
    bad = bad[:block] + bytes([bad[block] | 4]) + bad[block + 1 :]  # a Compressed block: not decoded here
    data = hip_library(bad, offload_bundle(["gfx90a"]))
    found = elf_gfx(io.BytesIO(data), len(data), zstd=raw_frame_decode)
    assert found is not None and (found.gfx, found.bundles, found.unread) == (("gfx90a",), 1, 0)


def test_a_wheel_of_zstd_bundles_is_read_with_the_injected_decompressor(tmp_path: Path) -> None:
    wheel = make_wheel(
        tmp_path / "jax_rocm7_plugin-9.2.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        {
            "jax_rocm7_plugin/_linalg.so": hip_library(
                compressed_bundle(["gfx942", "gfx1100"], method=1, version=3)
            ),
            "jax_rocm7_plugin/_prng.so": hip_library(compressed_bundle(["gfx942"], method=1, version=3)),
        },
    )
    read = read_wheel_gfx(str(wheel), zstd=raw_frame_decode)
    assert (read.common, read.unread) == (("gfx942",), 0)
    if _no_stdlib_zstd():
        unread = read_wheel_gfx(str(wheel))
        assert (unread.common, unread.unread) == ((), 2), "without a decompressor: unread, not guessed"


def test_generic_targets_count_as_the_processors_llvm_lists_for_them() -> None:
    """clang's generic targets (``gfx9-4-generic``: one code object for a family), as the jax ROCm
    plugins from 0.9 carry them: each stands for the processors LLVM's AMDGPUUsage table lists."""
    bundle = offload_bundle(
        [
            "gfx908:xnack-",
            "gfx9-4-generic:sramecc+:xnack-",
            "gfx10-3-generic",
            "gfx11-generic",
            "gfx12-generic",
        ]
    )
    assert bundle_targets(bundle) == (
        "gfx908",
        "gfx940",
        "gfx941",
        "gfx942",
        "gfx950",
        *(f"gfx103{n}" for n in range(7)),
        "gfx1100",
        "gfx1101",
        "gfx1102",
        "gfx1103",
        "gfx1150",
        "gfx1151",
        "gfx1152",
        "gfx1153",
        "gfx1200",
        "gfx1201",
    )
    assert bundle_targets(offload_bundle(["gfx13-generic", "gfx90a"])) == ("gfx90a",), (
        "an unknown family: none"
    )


def test_a_bundle_that_cannot_be_unpacked_is_counted_not_guessed() -> None:
    import io

    opaque = raw_frame(b"")[:4] + b"\x60" * 16  # zstd's magic, then bytes no Raw block holds
    data = hip_library(compressed_bundle(["gfx942"], method=1, payload=opaque), offload_bundle(["gfx90a"]))
    found = elf_gfx(io.BytesIO(data), len(data))
    assert found is not None
    if _no_stdlib_zstd():
        assert found.unread == 1, "a zstd bundle without a zstd decoder is said to be unread"
        assert found.gfx == ("gfx90a",)


def test_the_magic_as_a_string_and_cuda_code_are_no_bundles() -> None:
    import io

    from tests.curation.test_archs import gpu_library

    for data in (
        elf_with({".rodata": b"__CLANG_OFFLOAD_BUNDLE__\x05\0\0\0\0\0\0\0junk"}),
        gpu_library(["sm_90"]),
    ):
        assert elf_gfx(io.BytesIO(data), len(data)) is None


def test_a_wheel_carries_what_every_library_with_bundles_carries(tmp_path: Path) -> None:
    wheel = make_wheel(
        tmp_path / "torch-9.2.0+rocm7.1-cp312-cp312-manylinux_2_28_x86_64.whl",
        {
            "torch/lib/libtorch_hip.so": hip_library(offload_bundle(["gfx942", "gfx90a", "gfx1100"])),
            "torch/lib/libc10_hip.so": hip_library(offload_bundle(["gfx942", "gfx90a"])),
            "torch/lib/libhipblaslt.so": hip_library(offload_bundle(["gfx942"])),
            "torch/lib/libtorch_cpu.so": elf_with({".text": b"\x90" * 32}),
        },
    )
    every = read_wheel_gfx(str(wheel))
    assert every.common == ("gfx942",)
    assert every.without_bundles == 1
    torch_own = read_wheel_gfx(str(wheel), ("libtorch*", "libc10*"))
    assert torch_own.common == ("gfx90a", "gfx942")
    assert [lib.path for lib in torch_own.libraries] == [
        "torch/lib/libtorch_hip.so",
        "torch/lib/libc10_hip.so",
    ]
    with LocalIndex(tmp_path) as index:
        served = read_wheel_gfx(f"{index.base_url}/files/{wheel.name}", ("libtorch*",))
    assert served.common == ("gfx90a", "gfx942", "gfx1100")
