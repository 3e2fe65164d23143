"""Stand-in indexes for ``colabenv catalog refresh``: framework wheels whose METADATA, tags, local
versions, ``version.py`` / ``build_info.py`` and GPU code (ELF ``.nv_fatbin`` sections) say what
the real ones say, for releases numbered far beyond any real one (torch 9.x, jax 9.x,
tensorflow 9.x) so that they never clash with the shipped catalog.

``build_refresh_indexes(root)`` writes ``root/default`` (PyPI's layout: one flat index) and
``root/pytorch`` (one folder per variant; its ``/simple/`` page lists every variant's wheel, as
the PyTorch index's ``whl/torch/`` page does), and returns the catalog folder refresh starts
from (``root/base``): torch 9.0.0 and 9.1.0, jax 9.0.0 and tensorflow 9.0.0 as a catalog has
them, one pin of torch 9.1.0 cu130 deliberately unlike its wheel's (the contradiction).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

from tests.curation.test_archs import elf_with, gpu_library
from tests.support.catalogs import PYTORCH_INDEX, framework_file, release_entry, torch_variant
from tests.support.wheels import build_wheel

LINUX = 'platform_system == "Linux"'
TURING = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
OLD_CU13 = ["sm_75", "sm_80", "sm_90"]
CLASSIC = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
JAX12 = ["sm_50", "sm_60", "sm_70", "sm_80", "sm_90", "sm_100", "sm_120", "compute_120"]
TF = ["sm_60", "sm_70", "sm_80", "sm_89", "sm_90", "compute_90"]
TORCH_92_PINS = (
    "cuda-toolkit[cublas,cudart]==13.2.1",
    "nvidia-cudnn-cu13==9.26.0.51",
    "nvidia-nccl-cu13==2.30.7",
)
TORCH_91_CU130_PINS = ("nvidia-cudnn-cu13==9.24.0.43", "nvidia-nccl-cu13==2.29.7")
JAX_PLUGIN_PINS = (
    "nvidia-cudnn-cu12>=9.10.2.21,<10.0",
    "nvidia-cuda-runtime-cu12>=12.1.105",
    "nvidia-nccl-cu12>=2.18.1",
)
TF_PINS = ("nvidia-cudnn-cu12>=9.3.0.75,<10.0", "nvidia-cuda-runtime-cu12>=12.5.82,<13.0")


def _tags(*pythons: str) -> list[str]:
    return [f"cp{p}-cp{p}-manylinux_2_28_x86_64" for p in pythons]


def _torch(
    dest: Path,
    version: str,
    cuda: str | None,
    archs: Sequence[str],
    pins: Sequence[str],
    pythons: Sequence[str] = ("312", "313"),
    built: str = "",
    requires_python: str = ">=3.12",
) -> None:
    """torch ``version`` (``built``: what its torch/version.py says, the PyPI wheel's local
    tag included)."""
    files: dict[str, str | bytes] = {
        "torch/__init__.py": "",
        "torch/version.py": f"__version__ = '{built or version}'\ndebug = False\n"
        f"cuda: Optional[str] = {cuda!r}\n",
    }
    if archs:
        files["torch/lib/libtorch_cuda.so"] = gpu_library(archs)
        files["torch/lib/libtorch_cpu.so"] = elf_with({".text": b"\x90" * 32})
    for tag in _tags(*pythons):
        build_wheel(
            dest,
            "torch",
            version,
            files=files,
            tag=tag,
            requires_python=requires_python,
            requires=("filelock", "triton==9.9.9 ; " + LINUX, *(f"{pin} ; {LINUX}" for pin in pins)),
        )


def _companion(
    dest: Path, name: str, version: str, torch: str | None, built: str, requires_python: str = ">=3.10"
) -> None:
    files = {f"{name}/__init__.py": "", f"{name}/version.py": f"__version__ = '{built}'\n"}
    requires = (f"torch ({torch})",) if torch else ()
    build_wheel(
        dest,
        name,
        version,
        files=files,
        tag="py3-none-manylinux_2_28_x86_64",
        requires=("numpy", *requires),
        requires_python=requires_python,
    )


def build_torch(root: Path) -> None:
    default, pytorch = root / "default", root / "pytorch"
    # 9.2.0's wheels leave out one patch release (as torchvision's leave out 3.14.1), and so do
    # those of torchvision 0.99.1, its companion, another
    _torch(
        default,
        "9.2.0",
        "13.2",
        TURING,
        TORCH_92_PINS,
        built="9.2.0+cu132",
        requires_python=">=3.12,!=3.12.4",
    )
    _torch(default, "9.1.0", "13.0", OLD_CU13, TORCH_91_CU130_PINS, built="9.1.0+cu130")
    _torch(default, "9.0.0", "13.0", OLD_CU13, TORCH_91_CU130_PINS, built="9.0.0+cu130")
    _torch(pytorch / "cu132", "9.2.0+cu132", "13.2", TURING, TORCH_92_PINS)
    _torch(
        pytorch / "cu130",
        "9.2.0+cu130",
        "13.0",
        OLD_CU13,
        ("cuda-toolkit[cublas,cudart]==13.0.2", "nvidia-cudnn-cu13==9.26.0.51"),
    )
    _torch(pytorch / "cu139", "9.2.0+cu139", "13.9", TURING, ("nvidia-cudnn-cu13==9.26.0.51",))
    _torch(pytorch / "cpu", "9.2.0+cpu", None, (), ())
    _torch(pytorch / "cu130", "9.1.0+cu130", "13.0", OLD_CU13, TORCH_91_CU130_PINS)
    _torch(
        pytorch / "cu126",
        "9.1.0+cu126",
        "12.6",
        CLASSIC,
        ("nvidia-cudnn-cu12==9.10.2.21", "nvidia-nccl-cu12==2.27.3"),
    )
    _torch(pytorch / "cpu", "9.1.0+cpu", None, (), ())
    # torchvision 0.99.1 admits torch>=9.1.0 and is the +cu132 build: torch 9.2.0's; 0.99.0,
    # admitting the same, is a +cu130 build; 0.98.0 pins torch==9.1.0
    _companion(default, "torchvision", "0.99.1", ">=9.1.0", "0.99.1+cu132", requires_python=">=3.10,!=3.13.1")
    _companion(default, "torchvision", "0.99.0", ">=9.1.0", "0.99.0+cu130")
    _companion(default, "torchvision", "0.98.0", "==9.1.0", "0.98.0+cu130")
    _companion(default, "torchaudio", "9.0.0", None, "9.0.0")


def build_jax(root: Path) -> None:
    default = root / "default"
    for version, cuda13 in (("9.0.0", False), ("9.1.0", True)):
        extras = {
            "cuda": [
                f"jaxlib<={version},>={version}",
                f"jax-cuda12-plugin[with-cuda]<={version},>={version}",
            ],
            "cuda12": [
                f"jaxlib<={version},>={version}",
                f"jax-cuda12-plugin[with-cuda]<={version},>={version}",
            ],
            "cuda12-local": [f"jaxlib<={version},>={version}", f"jax-cuda12-plugin<={version},>={version}"],
            "tpu": [f"jaxlib=={version}", "libtpu==0.0.50.*"],
        }
        if cuda13:
            extras["cuda13"] = [
                f"jaxlib<={version},>={version}",
                f"jax-cuda13-plugin[with-cuda]<={version},>={version}",
            ]
        build_wheel(
            default,
            "jax",
            version,
            requires=(f"jaxlib<={version},>=9.0.0", "numpy"),
            extras=extras,
            requires_python=">=3.12",
        )
        for tag in _tags("312", "313", "314"):
            build_wheel(default, "jaxlib", version, tag=tag, requires_python=">=3.12")
        majors = (12, 13) if cuda13 else (12,)
        for major in majors:
            pins = (
                JAX_PLUGIN_PINS
                if major == 12
                else ("nvidia-cudnn-cu13>=9.12.0.46,<10.0", "nvidia-cuda-runtime>=13.0.48", "nvidia-nvvm")
            )
            archs = JAX12 if major == 12 else TURING
            plugin = f"jax-cuda{major}-plugin"
            module = plugin.replace("-", "_")
            for tag in _tags("312", "313", "314"):
                build_wheel(
                    default,
                    plugin,
                    version,
                    tag=tag,
                    requires_python=">=3.12",
                    requires=(f"jax-cuda{major}-pjrt=={version}",),
                    extras={"with-cuda": [f'{p} ; sys_platform == "linux"' for p in pins]},
                    files={f"{module}/__init__.py": "", f"{module}/_linalg.so": gpu_library(archs)},
                )
            pjrt = f"jax-cuda{major}-pjrt"
            build_wheel(
                default,
                pjrt,
                version,
                tag="py3-none-manylinux_2_27_x86_64",
                files={f"jax_plugins/xla_cuda{major}/xla_cuda_plugin.so": gpu_library(archs)},
            )


def build_jax_patch(root: Path) -> None:
    """jax 9.1.1, which lags: it pins jaxlib 9.1.0 and admits the 9.1.0 plugin (as jax 0.4.35
    did with jaxlib 0.4.34), and names one NVIDIA wheel in its own extra (as 0.4.26 did)."""
    extras = {
        "cuda12": [
            "jaxlib==9.1.0",
            "jax-cuda12-plugin[with_cuda]<=9.1.1,>=9.1.0",
            "nvidia-cuda-nvcc-cu12>=12.6.85",
        ]
    }
    build_wheel(
        root / "default",
        "jax",
        "9.1.1",
        requires=("jaxlib<=9.1.1,>=9.0.0", "numpy"),
        extras=extras,
        requires_python=">=3.12",
    )


def build_tensorflow(root: Path) -> None:
    default = root / "default"
    info = (
        "import collections\n\nbuild_info = collections.OrderedDict([('cpu_compiler', "
        "'clang'), ('cuda_compute_capabilities', ['sm_60', 'sm_70', 'sm_80', 'sm_89', "
        "'compute_90']), ('cuda_version', '12.5.1'), ('cudnn_version', '9'), "
        "('is_cuda_build', True)])\n"
    )
    for version in ("9.0.0", "9.1.0"):
        for tag in _tags("311", "312", "313"):
            build_wheel(
                default,
                "tensorflow",
                version,
                tag=tag,
                requires_python=">=3.10",
                requires=("numpy",),
                extras={"and-cuda": [f"{p} ; {LINUX}" for p in TF_PINS] + ["tensorrt==10.0 ; " + LINUX]},
                files={
                    "tensorflow/__init__.py": "",
                    "tensorflow/python/platform/build_info.py": info,
                    "tensorflow/libtensorflow_cc.so.2": gpu_library(TF),
                    "tensorflow/libtensorflow_framework.so.2": gpu_library(TF),
                },
            )


def _hand_written_builds(version: str, cu130_pins: Sequence[str]) -> tuple[str, str]:
    """A base torch release's builds on the PyTorch index, as a hand-written catalog has them:
    cu130 (arch list ``old_cu13``, ``cu130_pins``) and cpu."""
    return (
        torch_variant(
            "cu130",
            index=PYTORCH_INDEX,
            archs="old_cu13",
            pins=cu130_pins,
            source=f"hand-written: {version} cu130",
        ),
        torch_variant("cpu", index=PYTORCH_INDEX, source=f"hand-written: {version} cpu"),
    )


_TORCHAUDIO = {"version": "9.0.0", "follows_variant": False}
BASE_TORCH = (
    "# The catalog as refresh finds it: these lines and comments must come through unchanged.\n"
    + framework_file("torch", archs={"turing": TURING, "old_cu13": OLD_CU13})
    + release_entry(
        "9.0.0",
        *_hand_written_builds("9.0.0", TORCH_91_CU130_PINS),
        python=">=3.12,<3.14",
        default_variant="cu130",
        companions={"torchaudio": _TORCHAUDIO},
        source="hand-written: 9.0.0",
    )
    + "\n# 9.1.0: its cu130 pins below say 9.20.0.48; the wheel says 9.24.0.43"
    + release_entry(
        "9.1.0",
        *_hand_written_builds("9.1.0", ("nvidia-cudnn-cu13==9.20.0.48", "nvidia-nccl-cu13==2.29.7")),
        python=">=3.12,<3.14",
        default_variant="cu130",
        companions={"torchvision": "0.98.0", "torchaudio": _TORCHAUDIO},
        source="hand-written: 9.1.0",
    )
)
"""torch 9.0.0 and 9.1.0, each with a cu130 and a cpu build, as a hand-written catalog has them."""

BASE_JAX = """\
schema = 1
framework = "jax"
companions_follow_variant = false

[[release]]
version = "9.0.0"
python = ">=3.12,<3.15"
default_variant = "cuda12"
companions = { jaxlib = "9.0.0" }
source = "hand-written: jax 9.0.0"

[[release.variant]]
name = "cuda12"
cuda = "12.9"
extra = "cuda12"
archs = ["sm_50", "sm_60", "sm_70", "sm_80", "sm_90", "sm_100", "sm_120", "compute_120"]
pins = [
    "nvidia-cudnn-cu12>=9.10.2.21,<10.0",
    "nvidia-cuda-runtime-cu12>=12.1.105",
    "nvidia-nccl-cu12>=2.18.1",
]
source = "hand-written: jax 9.0.0 cuda12"

[[release.variant]]
name = "cpu"
source = "hand-written: jax 9.0.0 cpu"
"""


def notes_page(*rows: tuple[str, str]) -> str:
    """A page laid out as NVIDIA's CUDA Toolkit Release Notes lay out Table 3."""
    cells = "".join(
        f'<tr class="row-odd"><td><p>{toolkit}</p></td><td><p>{driver}</p></td><td><p>N/A</p></td></tr>\n'
        for toolkit, driver in rows
    )
    return (
        "<html><body><section><p>Table 3 CUDA Toolkit and Corresponding Driver Versions</p>\n"
        '<table class="table-no-stripes docutils align-default"><thead><tr><th><p>CUDA Toolkit</p></th>'
        "<th><p>Toolkit Driver Version</p></th><th></th></tr><tr><th></th><th><p>Linux x86_64 Driver "
        "Version</p></th><th><p>Windows x86_64 Driver Version</p></th></tr></thead><tbody>\n"
        f"{cells}</tbody></table></section></body></html>\n"
    )


CUDA_NOTES_ROWS = (
    ("CUDA 13.4 Developer Preview", "N/A"),
    ("CUDA 13.3 Update 1", "&gt;=610.43.02"),
    ("CUDA 13.3 GA", "&gt;=610.43.02"),
    ("CUDA 13.2 Update 1", "&gt;=595.58.03"),
    ("CUDA 13.0 Update 2", "&gt;=580.95.05"),
)
"""The rows of the 13.3 release notes' Table 3 (as public copies of it give them)."""
CUDA_NOTES = "nvidia/cuda-toolkit-release-notes.html"
"""Where the stand-in release notes are, under the PyTorch stand-in index's /files/."""
CUDA_NOTES_139 = "nvidia/cuda-13.9-release-notes.html"
"""The same with two rows of a CUDA 13.9 (a stand-in line, as torch 9.2.0 is a stand-in)."""


def build_refresh_indexes(root: Path) -> Path:
    """The stand-in indexes under ``root``; returns the catalog folder refresh starts from."""
    build_torch(root)
    build_jax(root)
    build_jax_patch(root)
    build_tensorflow(root)
    notes = root / "pytorch" / "nvidia"
    notes.mkdir(parents=True, exist_ok=True)
    (root / "pytorch" / CUDA_NOTES).write_text(notes_page(*CUDA_NOTES_ROWS), encoding="utf-8")
    (root / "pytorch" / CUDA_NOTES_139).write_text(
        notes_page(
            ("CUDA 13.9 Update 1", "&gt;=699.20.03"), ("CUDA 13.9 GA", "&gt;=699.10.01"), *CUDA_NOTES_ROWS
        ),
        encoding="utf-8",
    )
    base = root / "base"
    base.mkdir(parents=True, exist_ok=True)
    (base / "torch.toml").write_text(BASE_TORCH, encoding="utf-8")
    (base / "jax.toml").write_text(BASE_JAX, encoding="utf-8")
    (base / "tensorflow.toml").write_text(
        textwrap.dedent("""\
        schema = 1
        framework = "tensorflow"
        """),
        encoding="utf-8",
    )
    return base


def build_tensorflow_aarch64(root: Path) -> None:
    """After :func:`build_tensorflow`: tensorflow 9.1.0's plain manylinux_2_17_aarch64 wheels on
    the default index (cp311 to cp313, a CPU build: no GPU code), none for 9.0.0."""
    for python in ("311", "312", "313"):
        build_wheel(
            root / "default",
            "tensorflow",
            "9.1.0",
            tag=f"cp{python}-cp{python}-manylinux_2_17_aarch64",
            requires_python=">=3.10",
            requires=("numpy",),
            files={"tensorflow/__init__.py": ""},
        )


def tensorflow_base(aarch64: Sequence[str]) -> str:
    """A tensorflow.toml with 9.0.0 and 9.1.0 as refresh derives them from
    :func:`build_tensorflow`'s wheels, the releases named in ``aarch64`` saying their plain
    linux_aarch64 wheel is the CPU build (``platform_defaults``)."""
    archs = ", ".join(f'"{a}"' for a in TF)
    pins = ", ".join(f'"{p}"' for p in TF_PINS)
    releases = [
        f'[[release]]\nversion = "{version}"\npython = ">=3.11,<3.14"\ndefault_variant = "and-cuda"\n'
        + ('platform_defaults = { linux_aarch64 = "cpu" }\n' if version in aarch64 else "")
        + f'source = "hand-written: tensorflow {version}"\n\n'
        f'[[release.variant]]\nname = "and-cuda"\ncuda = "12.5"\nextra = "and-cuda"\narchs = [{archs}]\n'
        f'pins = [{pins}]\nsource = "hand-written: tensorflow {version} and-cuda"\n\n'
        f'[[release.variant]]\nname = "cpu"\nsource = "hand-written: tensorflow {version} cpu"\n'
        for version in ("9.0.0", "9.1.0")
    ]
    return 'schema = 1\nframework = "tensorflow"\n\n' + "\n".join(releases)
