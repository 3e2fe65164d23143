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


def compressed_bundle(targets: Sequence[str], *, method: int = 0, version: int = 2) -> bytes:
    """A ``CCOB`` bundle (clang's ``--offload-compress``): version, method (0 zlib, 1 zstd), the
    sizes and a hash, then the compressed plain bundle."""
    plain = offload_bundle(targets)
    data = zlib.compress(plain) if method == 0 else b"\x28\xb5\x2f\xfd" + b"\0" * 16
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


def test_a_bundle_that_cannot_be_unpacked_is_counted_not_guessed() -> None:
    import io

    data = hip_library(compressed_bundle(["gfx942"], method=1), offload_bundle(["gfx90a"]))
    found = elf_gfx(io.BytesIO(data), len(data))
    assert found is not None
    try:
        import compression.zstd  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
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
