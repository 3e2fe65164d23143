"""Stand-in indexes for the ROCm builds ``catalog refresh packages`` reads: CuPy's ROCm
distributions (``cupy-rocm-7-0``, ``cupy-rocm-5-0``) on the default index and xformers'
``+rocm6.4`` wheel on the PyTorch index, each wheel a small real one whose library carries a HIP
offload bundle naming its gfx targets (:func:`tests.curation.test_offload_bundles.offload_bundle`,
as the jax ROCm plugin's and torch's ROCm stand-ins do). Releases are numbered far beyond any
real one.

``build_package_rocm_indexes(root)`` writes ``root/default`` and ``root/pytorch`` and returns the
catalog folder refresh starts from (``root/base``):

- cupy 98.0.0 (the file's newest): ``rocm7.0`` listing gfx1030, which its wheel's bundle does
  not name (it names gfx1100: a contradiction), and ``rocm5.0``, whose ``cupy-rocm-5-0`` page
  has no 98.0.0 file (gone);
- cupy 99.0.0 (new): ``cupy-rocm-7-0`` cp312 and cp314t wheels (a ROCm build written, gfx read,
  free-threaded 3.14t) and a ``cupy-rocm-5-0`` wheel whose bundle is zstd-compressed (left out
  where Python has no ``compression.zstd``);
- xformers 0.0.98: ``rocm6.4`` on the PyTorch index, its gfx list unconfirmed in the file, which
  the wheel's bundle confirms.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tests.curation.test_offload_bundles import compressed_bundle, hip_library, offload_bundle
from tests.support.package_entries import (
    build_entry,
    package_entry,
    packages_file,
    release_entry,
    write_packages,
)
from tests.support.refresh_package_standins import XFORMERS_PINS, cupy_build, xformers_release
from tests.support.wheels import build_wheel

X86 = "manylinux_2_28_x86_64"
READ_GFX = ("gfx90a", "gfx942:sramecc+:xnack-", "gfx1100")
"""What the cupy-rocm-7-0 wheels' bundles name (target features as clang writes them)."""


BASE = packages_file(
    package_entry(
        "cupy",
        release_entry(
            "98.0.0",
            cupy_build(),
            build_entry(
                "rocm7.0",
                rocm="7.0",
                gfx=["gfx90a", "gfx942", "gfx1030"],
                source="https://example.org/rocm7.0",
            ),
            build_entry("rocm5.0", rocm="5.0", gfx=["gfx90a"], source="https://example.org/rocm5.0"),
            python=">=3.12,<3.13",
            source="https://example.org/cupy-98",
        ),
    ),
    package_entry(
        "xformers",
        xformers_release(["sm_75", "sm_80", "sm_90"], python=">=3.12,<3.13").replace(
            'source = "https://example.org/xformers-0.0.98"\n',
            'source = "https://example.org/xformers-0.0.98"\n'
            + build_entry(
                "rocm6.4",
                rocm="6.4",
                gfx=["gfx90a", "gfx942"],
                index_url="https://download.pytorch.org/whl/rocm6.4",
                local_tag="rocm6.4",
                unconfirmed_reason="the PyTorch index's rocm6.4 page was not read",
                source="https://example.org/rocm6.4",
            ),
            1,
        ),
    ),
)


def _rocm_wheel(
    dest: Path, name: str, version: str, library: bytes, tags: Sequence[str] = ("cp312-cp312",), **kw: str
) -> None:
    module = name.split("-")[0]
    files: dict[str, str | bytes] = {f"{module}/__init__.py": "", f"{module}/cuda/libcub.so": library}
    requires = tuple(kw.values())
    for tag in tags:
        build_wheel(
            dest, name, version, files=files, tag=f"{tag}-{X86}", requires_python=">=3.12", requires=requires
        )


def build_package_rocm_indexes(root: Path) -> Path:
    """The stand-in indexes under ``root``; returns the catalog folder refresh starts from."""
    default, pytorch = root / "default", root / "pytorch"
    for version in ("98.0.0", "99.0.0"):
        build_wheel(default, "cupy-cuda12x", version, tag=f"cp312-cp312-{X86}", requires_python=">=3.12")
    bundle = hip_library(offload_bundle(READ_GFX))
    _rocm_wheel(default, "cupy-rocm-7-0", "98.0.0", bundle)
    _rocm_wheel(default, "cupy-rocm-7-0", "99.0.0", bundle, ("cp312-cp312", "cp314-cp314t"))
    # cupy-rocm-5-0: 97.0.0 alone of the releases before (98.0.0's build is gone), and 99.0.0
    # with a zstd bundle (clang's --offload-compress)
    _rocm_wheel(default, "cupy-rocm-5-0", "97.0.0", hip_library(offload_bundle(["gfx90a"])))
    _rocm_wheel(default, "cupy-rocm-5-0", "99.0.0", hip_library(compressed_bundle(["gfx90a"], method=1)))
    requires = ("torch==9.0.0", *XFORMERS_PINS)
    for dest, version in ((default, "0.0.98"), (pytorch / "cu126", "0.0.98+cu126")):
        build_wheel(
            dest, "xformers", version, tag=f"cp312-cp312-{X86}", requires_python=">=3.12", requires=requires
        )
    gfx = hip_library(offload_bundle(["gfx942", "gfx90a"]))
    _rocm_wheel(pytorch / "rocm6.4", "xformers", "0.0.98+rocm6.4", gfx, torch="torch==9.0.0")
    return write_packages(root / "base", BASE)
