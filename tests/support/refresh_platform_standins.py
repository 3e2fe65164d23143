"""Stand-in indexes for what ``catalog refresh torch`` reads beyond x86-64 CUDA/CPU: the PyTorch
index's ``+rocmX.Y`` wheels (their libraries' HIP offload bundles naming their gfx targets), its
``manylinux_2_28_aarch64`` wheels of a ``+cuXYZ`` build, and free-threaded ``cp313t``/``cp314t``
wheels. Built on :mod:`tests.support.refresh_standins` (torch 9.x, far beyond any real release):
``build_platform_indexes(root)`` writes ``root/default``, ``root/pytorch`` and ``root/base``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tests.curation.test_archs import elf_with, gpu_library
from tests.curation.test_offload_bundles import hip_library, offload_bundle
from tests.support.fixtures import Runner
from tests.support.refresh_standins import BASE_TORCH, LINUX, TORCH_92_PINS, build_torch, notes_page
from tests.support.refreshing import refresh_standins
from tests.support.wheels import build_wheel

ROCM71_GFX = ("gfx90a", "gfx942:sramecc+:xnack-", "gfx950", "gfx1100", "gfx1201")
ROCM70_GFX = ("gfx90a", "gfx942", "gfx1100")
AARCH64_CU132 = ["sm_80", "sm_90", "sm_100", "sm_110", "sm_120"]
TURING = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]

BASE_ROCM = """
[[release.variant]]
name = "rocm7.0"
index_url = "https://download.pytorch.org/whl/rocm7.0"
local_tag = "rocm7.0"
rocm = "7.0"
gfx = ["gfx90a", "gfx942", "gfx1030", "gfx1100"]
source = "hand-written: 9.1.0 rocm7.0"
"""
"""torch 9.1.0's ROCm 7.0 build, as the base catalog has it (appended to BASE_TORCH's 9.1.0): it
lists gfx1030, which the wheel's bundles do not name (a contradiction)."""


def _rocm_torch(
    dest: Path, version: str, gfx: Sequence[str] | None, pythons: Sequence[str] = ("312", "313")
) -> None:
    """torch ``version`` (``9.2.0+rocm7.1``): ``libtorch_hip.so`` with a bundle for each of
    ``gfx`` (None: a library without bundles), and a bundled ROCm library with fewer targets
    (hipBLASLt's), which is not torch's own and is not read."""
    hip = hip_library(offload_bundle(gfx)) if gfx is not None else elf_with({".text": b"\x90" * 32})
    files: dict[str, str | bytes] = {
        "torch/__init__.py": "",
        "torch/version.py": f"__version__ = '{version}'\nhip: Optional[str] = '7'\ncuda = None\n",
        "torch/lib/libtorch_hip.so": hip,
        "torch/lib/libhipblaslt.so": hip_library(offload_bundle(["gfx942"])),
    }
    for python in pythons:
        build_wheel(
            dest,
            "torch",
            version,
            files=files,
            tag=f"cp{python}-cp{python}-manylinux_2_28_x86_64",
            requires_python=">=3.12",
            requires=("filelock", f"pytorch-triton-rocm==9.9.9 ; {LINUX}"),
        )


def build_rocm(root: Path) -> None:
    """torch 9.2.0's ROCm builds on the PyTorch index: rocm7.1 (cp312 only, its bundles read),
    rocm7.0 (no bundle to read: its gfx list is carried from 9.1.0's, marked unconfirmed),
    rocm6.9 (no bundle, no earlier build: left out); and 9.1.0's rocm7.0."""
    pytorch = root / "pytorch"
    _rocm_torch(pytorch / "rocm7.1", "9.2.0+rocm7.1", ROCM71_GFX, pythons=("312",))
    _rocm_torch(pytorch / "rocm7.0", "9.2.0+rocm7.0", None)
    _rocm_torch(pytorch / "rocm6.9", "9.2.0+rocm6.9", None)
    _rocm_torch(pytorch / "rocm7.0", "9.1.0+rocm7.0", ROCM70_GFX)


def _aarch64_torch(
    dest: Path, version: str, archs: Sequence[str], pins: Sequence[str], *, version_py: str | None = None
) -> None:
    """torch ``version`` (``9.2.0+cu132``) for linux_aarch64, cp312 and cp313; no arch list: a
    wheel without GPU code. Its ``torch/version.py`` is ``version_py`` (by default one saying
    ``version``); its pins carry an aarch64-only marker, read as the aarch64 host reads it, as
    the real wheels' do."""
    files: dict[str, str | bytes] = {
        "torch/__init__.py": "",
        "torch/version.py": version_py or f"__version__ = '{version}'\n",
    }
    if archs:
        files["torch/lib/libtorch_cuda.so"] = gpu_library(archs)
    for python in ("312", "313"):
        build_wheel(
            dest,
            "torch",
            version,
            files=files,
            tag=f"cp{python}-cp{python}-manylinux_2_28_aarch64",
            requires_python=">=3.12",
            requires=("filelock", *(f'{pin} ; platform_machine == "aarch64"' for pin in pins)),
        )


def build_aarch64(root: Path) -> None:
    """The PyTorch index's aarch64 wheels: 9.2.0+cu132 (GPU code read), 9.2.0+cu130 (none, and no
    earlier aarch64 cu130 build in the catalog: left out), 9.1.0+cu130 (a build 9.1.0 lacks)."""
    pytorch = root / "pytorch"
    _aarch64_torch(pytorch / "cu132", "9.2.0+cu132", AARCH64_CU132, TORCH_92_PINS)
    _aarch64_torch(pytorch / "cu130", "9.2.0+cu130", (), ("nvidia-cudnn-cu13==9.26.0.51",))
    _aarch64_torch(pytorch / "cu130", "9.1.0+cu130", AARCH64_CU132[:2], ("nvidia-nccl-cu13==2.29.7",))


def _free_threaded_torch(dest: Path, version: str, tag: str) -> None:
    """One free-threaded torch wheel (``tag``: ``cp313-cp313t-manylinux_2_28_x86_64``)."""
    build_wheel(
        dest,
        "torch",
        version,
        files={"torch/__init__.py": "", "torch/version.py": f"__version__ = '{version}'\n"},
        tag=tag,
        requires_python=">=3.12",
        requires=("filelock",),
    )


def build_free_threaded(root: Path) -> None:
    """torch 9.2.0's free-threaded wheels: the default build's cp313t on the default index and
    cp314t on the PyTorch index's cu132 page; the aarch64 cu132 build's cp313t; none for the
    other builds."""
    x86, arm = "manylinux_2_28_x86_64", "manylinux_2_28_aarch64"
    _free_threaded_torch(root / "default", "9.2.0", f"cp313-cp313t-{x86}")
    _free_threaded_torch(root / "pytorch" / "cu132", "9.2.0+cu132", f"cp314-cp314t-{x86}")
    _free_threaded_torch(root / "pytorch" / "cu132", "9.2.0+cu132", f"cp313-cp313t-{arm}")


def _plain_aarch64_torch(dest: Path, version: str, built: str, cuda: str | None, pins: Sequence[str]) -> None:
    """torch ``version``'s plain manylinux_2_28_aarch64 wheels on the default index, without GPU
    code: its ``torch/version.py`` says ``built`` and ``cuda``."""
    version_py = f"__version__ = '{built}'\ncuda: Optional[str] = {cuda!r}\n"
    _aarch64_torch(dest, version, (), pins, version_py=version_py)


def build_plain_aarch64(root: Path, *, malformed: bool = False) -> None:
    """The default index's plain aarch64 torch wheels: 9.2.0's is the cu132 build (its
    version.py says ``9.2.0+cu132``), 9.1.0's the CPU build (no CUDA in version.py, no NVIDIA
    pin); ``malformed``: 9.2.0's METADATA has a Requires-Dist that is no requirement, and the
    page lists a wheel file name with a part missing."""
    default = root / "default"
    pins = ("nvidia-cudnn-cu13==9.26.0.51 ; (",) if malformed else TORCH_92_PINS
    _plain_aarch64_torch(default, "9.2.0", "9.2.0+cu132", "13.2", pins)
    _plain_aarch64_torch(default, "9.1.0", "9.1.0", None, ())
    if malformed:
        good = default / "torch-9.1.0-cp312-cp312-manylinux_2_28_aarch64.whl"
        (default / "torch-9.1.0-cp312-manylinux_2_28_aarch64.whl").write_bytes(good.read_bytes())


def build_platform_indexes(root: Path) -> Path:
    """The stand-in indexes under ``root``; returns the catalog folder refresh starts from."""
    build_torch(root)
    build_rocm(root)
    build_aarch64(root)
    build_free_threaded(root)
    (root / "pytorch" / "nvidia").mkdir(parents=True, exist_ok=True)
    (root / "pytorch" / "nvidia" / "notes.html").write_text(notes_page(), encoding="utf-8")
    base = root / "base"
    base.mkdir(parents=True, exist_ok=True)
    (base / "torch.toml").write_text(BASE_TORCH + BASE_ROCM, encoding="utf-8")
    return base


__all__ = [
    "AARCH64_CU132",
    "TORCH_92_PINS",
    "TURING",
    "build_plain_aarch64",
    "build_platform_indexes",
    "gpu_library",
]


def refresh_torch(runner: Runner, standins: Path, out: Path) -> tuple[str, str, int]:
    """``catalog refresh torch`` of the stand-in indexes under ``standins`` (``default``,
    ``pytorch``, its CUDA notes page) over the catalog in ``standins/base``, written to ``out``
    (made here): its stdout, its stderr with the indexes' addresses as ``DEFAULT`` and
    ``PYTORCH`` (:func:`tests.support.refreshing.refresh_standins`), its exit."""
    code, stdout, stderr = refresh_standins(
        runner, "torch", standins, out, pytorch=True, cuda_notes="nvidia/notes.html"
    )
    return stdout, stderr, code


KNOWN_FREE_THREADED = """
[[release.variant]]
name = "cu126"
cuda = "12.6"
index_url = "https://download.pytorch.org/whl/cu126"
local_tag = "cu126"
archs = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
pins = ["nvidia-cudnn-cu12==9.10.2.21", "nvidia-nccl-cu12==2.27.3"]
free_threaded = ">=3.13,<3.15"
source = "hand-written: 9.1.0 cu126"

[[release.variant]]
name = "cu130"
cuda = "13.0"
index_url = "https://download.pytorch.org/whl/cu130"
local_tag = "cu130"
platforms = ["linux_aarch64"]
archs = ["sm_80", "sm_90"]
pins = ["nvidia-nccl-cu13==2.29.7"]
free_threaded = ">=3.13,<3.14"
source = "hand-written: 9.1.0 cu130 for linux_aarch64"
"""
"""torch 9.1.0's cu126 build and its linux_aarch64 cu130 build, as :func:`build_known_free_threaded`'s
base catalog has them, each with its ``free_threaded``."""


def build_known_free_threaded(root: Path) -> None:
    """After :func:`build_platform_indexes`: torch 9.1.0's free-threaded wheels on the PyTorch
    index (cu130 cp314t; cu126 cp313t and cp314t; cpu cp313t; none for the aarch64 cu130
    build), and ``root/base/torch.toml`` saying of 9.1.0's builds: cu130 ``>=3.13`` (the files
    serve 3.14t alone: a contradiction), cu126 ``>=3.13,<3.15`` (as the files), cpu
    ``==3.13.*`` known from upstream's tests alone (the files confirm it: a note), and the
    aarch64 cu130 ``>=3.13,<3.14``, confirmed (no cp3XYt file of it: a contradiction)."""
    x86, pytorch = "manylinux_2_28_x86_64", root / "pytorch"
    _free_threaded_torch(pytorch / "cu130", "9.1.0+cu130", f"cp314-cp314t-{x86}")
    _free_threaded_torch(pytorch / "cu126", "9.1.0+cu126", f"cp313-cp313t-{x86}")
    _free_threaded_torch(pytorch / "cu126", "9.1.0+cu126", f"cp314-cp314t-{x86}")
    _free_threaded_torch(pytorch / "cpu", "9.1.0+cpu", f"cp313-cp313t-{x86}")
    cu130 = 'source = "hand-written: 9.1.0 cu130"'
    cpu = 'source = "hand-written: 9.1.0 cpu"'
    text = BASE_TORCH.replace(cu130, f'free_threaded = ">=3.13"\n{cu130}').replace(
        cpu,
        'free_threaded = "==3.13.*"\nfree_threaded_unconfirmed = "upstream\'s validation matrix '
        f'tests 3.13t"\n{cpu}',
    )
    (root / "base" / "torch.toml").write_text(text + KNOWN_FREE_THREADED, encoding="utf-8")
