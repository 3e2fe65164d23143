"""Stand-in wheels for what ``catalog refresh packages`` reads beyond x86-64 CUDA wheels: CuPy and
xformers releases numbered far beyond any real one with free-threaded ``cp313t``/``cp314t``
files, ``manylinux_2_28_aarch64`` files, a ``+rocm6.4`` xformers build on the PyTorch index, and
a wheel file name with a part missing. Built from wheels alone (the GPU code is not read: the
tests refresh with ``--archs carry``).

``build_package_platform_indexes(root)`` writes ``root/default`` and ``root/pytorch`` and
returns the catalog folder refresh starts from (``root/base``): cupy 98.0.0, whose free-threaded
wheel is known from upstream's tests alone (the file now confirms it) and whose build is listed
for linux_aarch64 though the index has no aarch64 file of it (a contradiction), and xformers
0.0.98, whose build lists no free-threaded Python though its files serve 3.14t, nor linux_aarch64
though an aarch64 file of it is there (contradictions).
"""

from __future__ import annotations

from pathlib import Path

from tests.support.package_entries import (
    package_entry,
    packages_file,
    release_entry,
    write_packages,
)
from tests.support.refresh_package_standins import XFORMERS_PINS, cupy_build, xformers_release
from tests.support.wheels import build_wheel

X86 = "manylinux_2_28_x86_64"
ARM = "manylinux_2_28_aarch64"
ARCHS = ["sm_75", "sm_80", "sm_90"]

BASE = packages_file(
    package_entry(
        "cupy",
        release_entry(
            "98.0.0",
            cupy_build(
                free_threaded=">=3.13,<3.14",
                free_threaded_unconfirmed="upstream's CI runs its tests on 3.13t",
            ),
            cupy_build(platforms=["linux_aarch64"], source="https://example.org/cupy-98/cu12-aarch64"),
            python=">=3.12,<3.13",
            source="https://example.org/cupy-98",
        ),
    ),
    package_entry("xformers", xformers_release(ARCHS, python=">=3.12,<3.13")),
)


def _wheels(
    dest: Path, name: str, version: str, tags: tuple[str, ...], requires: tuple[str, ...] = ()
) -> None:
    for tag in tags:
        build_wheel(dest, name, version, tag=tag, requires_python=">=3.12", requires=requires)


def build_package_platform_indexes(root: Path) -> Path:
    """The stand-in indexes under ``root``; returns the catalog folder refresh starts from."""
    default, pytorch = root / "default", root / "pytorch"
    # cupy 98.0.0: cp312 and the cp313t file the catalog knows from upstream's tests alone
    _wheels(default, "cupy-cuda12x", "98.0.0", (f"cp312-cp312-{X86}", f"cp313-cp313t-{X86}"))
    # cupy 99.0.0: cp313t and cp314t files (written), and an aarch64 file (its build written again
    # for linux_aarch64, unconfirmed)
    _wheels(
        default,
        "cupy-cuda12x",
        "99.0.0",
        (f"cp312-cp312-{X86}", f"cp313-cp313t-{X86}", f"cp314-cp314t-{X86}", f"cp312-cp312-{ARM}"),
    )
    good = default / f"cupy_cuda12x-99.0.0-cp312-cp312-{ARM}.whl"
    (default / f"cupy_cuda12x-99.0.0-cp312-{ARM}.whl").write_bytes(good.read_bytes())
    # xformers 0.0.98: a cp314t and an aarch64 file the catalog's build does not list; a ROCm
    # build on the PyTorch index beside its CUDA one
    requires = ("torch==9.0.0", *XFORMERS_PINS)
    _wheels(
        default,
        "xformers",
        "0.0.98",
        (f"cp312-cp312-{X86}", f"cp314-cp314t-{X86}", f"cp312-cp312-{ARM}"),
        requires,
    )
    _wheels(pytorch / "cu126", "xformers", "0.0.98+cu126", (f"cp312-cp312-{X86}",), requires)
    _wheels(pytorch / "rocm6.4", "xformers", "0.0.98+rocm6.4", (f"cp312-cp312-{X86}",), ("torch==9.0.0",))
    return write_packages(root / "base", BASE)
