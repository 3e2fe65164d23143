"""Stand-in wheels of CUDA packages for ``colabenv catalog refresh packages``: xformers, CuPy and
bitsandbytes releases numbered far beyond any real one, whose METADATA (Requires-Dist torch, the
NVIDIA wheels, Requires-Python), local versions and GPU code (ELF ``.nv_fatbin`` sections) say
what the real ones say, and the ``cuda_packages.toml`` refresh starts from.

``build_package_indexes(root)`` writes ``root/default`` (one flat index) and ``root/pytorch``
(xformers' ``+cu126`` builds, as the PyTorch index has them) and returns the catalog folder
(``root/base``): xformers 0.0.98 and cupy 98.0.0 as a catalog has them, and bitsandbytes
98.0.0 with a torch range unlike its wheel's (the contradiction), and
torch-scatter, which has no wheel on the index.

``build_find_links_pages(root)`` writes ``root/links``: two data.pyg.org find-links pages with
torch-scatter and pyg-lib wheels (a new release each), a third, for torch 2.9.0 cu128, that no
build names, and returns the catalog folder ``root/links-base``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tests.curation.test_archs import elf_with, fatbin_of, gpu_library
from tests.support.package_entries import (
    build_entry,
    package_entry,
    packages_file,
    release_entry,
    write_packages,
)
from tests.support.wheels import build_wheel

TAG = "cp312-cp312-manylinux_2_28_x86_64"
TAG13 = "cp313-cp313-manylinux_2_28_x86_64"
XFORMERS_ARCHS = ["sm_75", "sm_80", "compute_80", "sm_90"]
CUPY_ARCHS = ["sm_75", "sm_80", "sm_90", "compute_90"]
XFORMERS_PINS = ("nvidia-cudnn-cu12==9.10.2.21",)


def xformers_release(archs: str | Sequence[str], *, python: str) -> str:
    """xformers 0.0.98 as a catalog has it: a cu128 build on the default index and a cu126 build
    on the PyTorch index, each with ``archs`` (a list, or the name of an ``[archs]`` list) and
    the cuDNN pin of :data:`XFORMERS_PINS`; for torch 9.0.0 and Pythons ``python``."""
    return release_entry(
        "0.0.98",
        build_entry(
            "cu128",
            cuda="12.8",
            archs=archs,
            requires=XFORMERS_PINS,
            source="https://example.org/xformers-0.0.98/cu128",
        ),
        build_entry(
            "cu126",
            cuda="12.6",
            index_url="https://download.pytorch.org/whl/cu126",
            local_tag="cu126",
            archs=archs,
            requires=XFORMERS_PINS,
            source="https://example.org/xformers-0.0.98/cu126",
        ),
        torch="==9.0.0",
        python=python,
        source="https://example.org/xformers-0.0.98",
    )


def scatter_release(
    archs: Sequence[str], *, python: str = ">=3.9", unconfirmed_reason: str | None = None
) -> str:
    """torch-scatter 2.1.2 as a catalog has it: its one build for torch 2.8 with CUDA 12.6
    (``pt28cu126``), from its data.pyg.org find-links page, with ``archs``."""
    return release_entry(
        "2.1.2",
        build_entry(
            "pt28cu126",
            cuda="12.6",
            torch="==2.8.*",
            find_links="https://data.pyg.org/whl/torch-2.8.0+cu126.html",
            local_tag="pt28cu126",
            archs=archs,
            unconfirmed_reason=unconfirmed_reason,
            source="https://example.org/scatter/pt28cu126",
        ),
        python=python,
        source="https://example.org/scatter",
    )


def cupy_build(*, source: str = "https://example.org/cupy-98/cu12", **fields: str | Sequence[str]) -> str:
    """cupy 98.0.0's ``cu12`` build as a catalog has it (CUDA 12, sm_75 to sm_90), with the
    other keys of ``fields`` (:func:`~tests.support.package_entries.build_entry`'s)."""
    return build_entry("cu12", cuda="12", archs=["sm_75", "sm_80", "sm_90"], source=source, **fields)


BASE = packages_file(
    # xformers' Python range: what its wheels' Python tags serve
    package_entry("xformers", xformers_release("xf", python=">=3.12,<3.14")),
    package_entry(
        "cupy",
        release_entry(
            "98.0.0",
            cupy_build(),
            python=">=3.10",
            source="https://example.org/cupy-98",
        ),
    ),
    package_entry(
        "bitsandbytes",
        release_entry(
            "98.0.0",
            build_entry(
                "cu12", cuda="12", archs=["sm_75", "sm_80"], source="https://example.org/bnb-98/cu12"
            ),
            torch=">=9.0,<10",
            python=">=3.12,<3.13",
            source="https://example.org/bnb-98",
        ),
    ),
    package_entry("torch-scatter", scatter_release(["sm_60"])),
    archs={"xf": XFORMERS_ARCHS},
    comment="a team's CUDA packages",
)

SCATTER_ARCHS = ["sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
NEWER_SCATTER_ARCHS = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
PYG_ARCHS = ["sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]

LINKS_BASE = packages_file(
    package_entry(
        "torch-scatter",
        # the Python range is what its wheels' Python tags serve
        scatter_release(SCATTER_ARCHS, python=">=3.12,<3.14", unconfirmed_reason="the wheel was not read"),
    ),
    package_entry(
        "pyg-lib",
        release_entry(
            "0.8.0",
            build_entry(
                "pt213cu130",
                cuda="13.0",
                torch="==2.12.0",
                find_links="https://data.pyg.org/whl/torch-2.13.0+cu130.html",
                local_tag="pt213cu130",
                archs=["sm_80", "sm_90"],
                source="https://example.org/pyg-lib/pt213cu130",
            ),
            python=">=3.10",
            source="https://example.org/pyg-lib",
        ),
    ),
    comment="a team's CUDA packages whose builds live on find-links pages",
)
"""torch-scatter 2.1.2 and pyg-lib 0.8.0 as a catalog has them, their pages on data.pyg.org:
torch-scatter's arch list is unconfirmed (its wheel confirms it), and pyg-lib's build names
torch 2.12.0 where its page is torch 2.13.0's and lacks the Blackwell kernels its wheel has (the
contradictions)."""
LINUX = "linux_x86_64"


def build_package_indexes(root: Path) -> Path:
    """The stand-in index under ``root``; returns the catalog folder refresh starts from."""
    default = root / "default"
    gpu = {"xformers/_C.so": gpu_library(XFORMERS_ARCHS)}
    for version, torch in (("0.0.98", "torch==9.0.0"), ("0.0.99", "torch==9.1.0")):
        for tag in (TAG, TAG13):
            build_wheel(
                default,
                "xformers",
                version,
                files=gpu,
                tag=tag,
                requires_python=">=3.9",
                requires=("numpy", torch, *XFORMERS_PINS),
            )
            build_wheel(
                root / "pytorch" / "cu126",
                "xformers",
                f"{version}+cu126",
                files=gpu,
                tag=tag,
                requires_python=">=3.9",
                requires=(torch, *XFORMERS_PINS),
            )
    build_wheel(
        default,
        "cupy-cuda12x",
        "99.0.0",
        files={"cupy/_core/core.so": gpu_library(CUPY_ARCHS)},
        tag=TAG,
        requires_python=">=3.11",
        # NVIDIA's library finder, a cuda-* wheel as CuPy 14.2's METADATA requires it
        requires=("numpy>=1.22", "cuda-pathfinder==1.*,>=1.3.4"),
    )
    # a CUDA 13 line for Python 3.13 alone: each build keeps its own Python range
    build_wheel(
        default,
        "cupy-cuda13x",
        "99.0.0",
        files={"cupy/_core/core.so": gpu_library(CUPY_ARCHS)},
        tag=TAG13,
        requires_python=">=3.11",
    )
    # no GPU code to read and no build before to carry an arch list from: left out, with a note
    build_wheel(default, "cupy-cuda11x", "99.0.0", tag=TAG, requires_python=">=3.11")
    build_wheel(
        default,
        "bitsandbytes",
        "98.0.0",
        files={"bitsandbytes/libbitsandbytes_cuda128.so": gpu_library(["sm_75", "sm_80"])},
        tag=TAG,
        requires_python=">=3.9",
        requires=("torch>=8.0,<10",),
    )
    # one wheel carrying a library per CUDA, each with its own kernels, as bitsandbytes' does
    build_wheel(
        default,
        "bitsandbytes",
        "99.0.0",
        files={
            f"bitsandbytes/libbitsandbytes_cuda{cuda}.so": gpu_library(archs)
            for cuda, archs in BNB_LIBRARIES.items()
        },
        tag=TAG,
        requires_python=">=3.9",
        requires=("torch>=8.0,<10",),
    )
    return write_packages(root / "base", BASE)


BNB_LIBRARIES = {
    "118": ["sm_60", "sm_70", "sm_75", "compute_75"],
    "128": ["sm_70", "sm_75", "sm_120", "compute_120"],
    "130": ["sm_75", "sm_120", "compute_120"],
}
"""bitsandbytes 99.0.0's libraries, by the CUDA in their names, and the GPU code each carries."""
RAPIDS_ARCHS = ["sm_75", "sm_80", "sm_90", "sm_120", "compute_120"]
CUML_ARCHS = ["sm_80", "sm_90", "sm_120"]
NVCOMP = "nvidia-libnvcomp-cu12==5.3.0.16"

RAPIDS_BASE = packages_file(
    package_entry(
        "cudf",
        release_entry(
            "98.0.0",
            build_entry("cuda12", cuda="12.9", archs=RAPIDS_ARCHS, requires=[NVCOMP]),
            python=">=3.11",
            packages={"cupy": ">=97.0.0"},
        ),
    ),
    package_entry(
        "cuml",
        release_entry(
            "98.0.0",
            build_entry("cuda12", cuda="12.9", archs=["sm_80"]),
            python=">=3.11",
            packages={"cudf": "==98.0.*"},
        ),
    ),
    comment="a team's RAPIDS",
)
"""cuDF and cuML as a catalog has them: cudf 98.0.0 names a cupy range its wheels do not (the
contradiction); its NVIDIA wheel is its compiled code's (``libcudf-cu12``), as the index says."""


def build_rapids(root: Path) -> Path:
    """RAPIDS as the index has it, in ``root/default``: ``cudf-cu12`` and ``cuml-cu12`` each
    require their compiled code's own wheel exactly (``libcudf-cu12==99.0.*``), which requires
    the NVIDIA wheels; cuml-cu12 has no GPU code itself (its library wheel has); a newer
    libcudf-cu12 that no cudf release allows. Returns the catalog folder ``root/rapids-base``."""
    default = root / "default"
    abi3 = "cp311-abi3-manylinux_2_28_x86_64"
    for version in ("98.0.0", "99.0.0"):
        build_wheel(
            default,
            "cudf-cu12",
            version,
            files={"pylibcudf/column.so": gpu_library(RAPIDS_ARCHS)},
            tag=abi3,
            requires_python=">=3.11",
            requires=(f"libcudf-cu12=={version[:-2]}.*", f"cupy-cuda12x>={version}", "pandas"),
        )
    for version, extra in (("98.0.0", ()), ("99.0.0", ("cuda-toolkit[nvrtc]==12.*",)), ("100.0.0", ())):
        build_wheel(
            default,
            "libcudf-cu12",
            version,
            files={"libcudf/lib64/libcudf.so": gpu_library(RAPIDS_ARCHS)},
            tag="py3-none-manylinux_2_28_x86_64",
            requires=(NVCOMP, *extra),
        )
    build_wheel(
        default,
        "cuml-cu12",
        "99.0.0",
        files={"cuml/__init__.py": ""},
        tag=abi3,
        requires_python=">=3.11",
        requires=("libcuml-cu12==99.0.*", "cudf-cu12==99.0.*", "cupy-cuda12x>=99.0.0"),
    )
    build_wheel(
        default,
        "libcuml-cu12",
        "99.0.0",
        files={"libcuml/lib64/libcuml++.so": gpu_library(CUML_ARCHS)},
        tag="py3-none-manylinux_2_28_x86_64",
        requires=("nvidia-nvjitlink-cu12>=12.9,<13",),
    )
    return write_packages(root / "rapids-base", RAPIDS_BASE)


VLLM_ARCHS = ["sm_80", "sm_90", "sm_100", "sm_120"]
ORT_ARCHS = ["sm_75", "sm_80", "sm_90"]
VLLM_INDEX = "https://wheels.example.org/{version}/cu129"
ORT_FEED = "https://feed.example.org/onnxruntime-cuda-12/pypi/simple/"


def build_other_indexes(root: Path) -> None:
    """vLLM and onnxruntime-gpu beyond the default index: ``root/default`` gets vllm 0.98.0 and
    0.99.0 (exact torch pins, no local tag) and onnxruntime-gpu 98.0.0 and 99.0.0 (no torch);
    ``root/other`` (served as the mirror of two hosts, ``--index-mirror``) holds one vLLM index
    per release and CUDA, as wheels.vllm.ai does (:data:`VLLM_INDEX` for 0.99.0:
    ``vllm-0.99.0+cu129``), and a fixed feed of onnxruntime-gpu's CUDA 12 builds
    (:data:`ORT_FEED`), as Microsoft's is; :func:`other_indexes_base` writes a catalog naming
    them."""
    default, other = root / "default", root / "other"
    for version, torch in (("0.98.0", "torch==9.0.0"), ("0.99.0", "torch==9.1.0")):
        gpu = {"vllm/_C.abi3.so": gpu_library(VLLM_ARCHS)}
        build_wheel(
            default, "vllm", version, files=gpu, tag=TAG, requires_python=">=3.10,<3.14", requires=(torch,)
        )
        build_wheel(
            other / _mirrored(VLLM_INDEX.format(version=version)),
            "vllm",
            f"{version}+cu129",
            files=gpu,
            tag=TAG,
            requires_python=">=3.10,<3.14",
            requires=(torch,),
        )
    for version in ("98.0.0", "99.0.0"):
        gpu = {"onnxruntime/capi/libonnxruntime_providers_cuda.so": gpu_library(ORT_ARCHS)}
        build_wheel(default, "onnxruntime-gpu", version, files=gpu, tag=TAG13, requires_python=">=3.11")
        build_wheel(
            other / _mirrored(ORT_FEED),
            "onnxruntime-gpu",
            version,
            files=gpu,
            tag=TAG,
            requires_python=">=3.11",
        )


def _mirrored(url: str) -> str:
    """Where a mirror holds ``https://HOST/PATH``: ``HOST/PATH``."""
    return url.removeprefix("https://").rstrip("/")


def other_indexes_base(root: Path) -> Path:
    """A catalog folder with vllm 0.98.0 (its default build ``cu130`` and its ``cu129`` build on
    its own per-release index) and onnxruntime-gpu 98.0.0 (``cuda13`` on the default index,
    ``cuda12`` on the fixed feed): what :func:`build_other_indexes` serves beyond."""
    text = packages_file(
        package_entry(
            "vllm",
            release_entry(
                "0.98.0",
                build_entry("cu130", cuda="13.0", torch="==9.0.0", archs=VLLM_ARCHS),
                build_entry(
                    "cu129",
                    cuda="12.9",
                    torch="==9.0.0",
                    index_url=VLLM_INDEX.format(version="0.98.0"),
                    local_tag="cu129",
                    archs=VLLM_ARCHS,
                ),
                python=">=3.10,<3.14",
            ),
        ),
        package_entry(
            "onnxruntime-gpu",
            release_entry(
                "98.0.0",
                build_entry("cuda13", cuda="13", archs=ORT_ARCHS),
                build_entry("cuda12", cuda="12", index_url=ORT_FEED, archs=ORT_ARCHS),
                python=">=3.11",
            ),
        ),
        comment="a team's CUDA packages on indexes of their own",
    )
    return write_packages(root / "other-base", text)


def _page(folder: Path, name: str, wheels: list[Path], others: tuple[str, ...] = ()) -> None:
    """A data.pyg.org find-links page: a flat list of links, relative and with ``+`` written
    ``%2B``, as that site writes them (``torch-2.8.0%2Bcu126/torch_scatter-2.1.2%2Bpt28cu126-...``)."""
    links = [f"{w.parent.name}/{w.name}".replace("+", "%2B") for w in wheels] + list(others)
    body = "".join(
        f'<a href="{href}">{href.rsplit("/", 1)[-1].replace("%2B", "+")}</a><br>\n' for href in links
    )
    (folder / name).write_text(f"<html>\n<body>\n{body}</body>\n</html>\n", encoding="utf-8")


def _page_wheels(
    folder: Path,
    name: str,
    local: str,
    versions: Sequence[str],
    tags: Sequence[str],
    *,
    library: str,
    archs: Sequence[str],
    requires_python: str,
) -> list[Path]:
    """The wheels of ``name`` a data.pyg.org page lists, one a version (``+local``) and tag, in
    that order, each holding ``library`` with GPU code for ``archs``."""
    return [
        build_wheel(
            folder,
            name,
            f"{version}+{local}",
            files={library: gpu_library(archs)},
            tag=tag,
            requires_python=requires_python,
        )
        for version in versions
        for tag in tags
    ]


def build_find_links_pages(root: Path) -> Path:
    """``root/links/data.pyg.org/whl``: the pages ``LINKS_BASE`` names and their wheels, served
    under a mirror URL ``.../files/`` (``--find-links-mirror``); returns the catalog folder."""
    whl = root / "links" / "data.pyg.org" / "whl"
    scatter = whl / "torch-2.8.0+cu126"
    scatter_library = "torch_scatter/_scatter_cuda.so"
    wheels = _page_wheels(
        scatter,
        "torch-scatter",
        "pt28cu126",
        ("2.1.2", "2.1.3"),
        (f"cp312-cp312-{LINUX}", f"cp313-cp313-{LINUX}"),
        library=scatter_library,
        archs=SCATTER_ARCHS,
        requires_python=">=3.9",
    )
    # another package of the same page, and a Windows wheel: not torch-scatter's Linux builds
    wheels.append(build_wheel(scatter, "torch-sparse", "0.6.19+pt28cu126", tag=f"cp312-cp312-{LINUX}"))
    wheels.append(build_wheel(scatter, "torch-scatter", "2.1.4+pt28cu126", tag="cp312-cp312-win_amd64"))
    _page(whl, "torch-2.8.0+cu126.html", wheels, others=("torch-2.8.0%2Bcu126/README.txt",))
    # a page no build of LINKS_BASE names, for torch 2.9.0 cu128 (a release and build the
    # shipped torch catalog has): torch-scatter 2.1.2, which the file has, and 2.1.3, built again
    newer = _page_wheels(
        whl / "torch-2.9.0+cu128",
        "torch-scatter",
        "pt29cu128",
        ("2.1.2", "2.1.3"),
        (f"cp313-cp313-{LINUX}",),
        library=scatter_library,
        archs=NEWER_SCATTER_ARCHS,
        requires_python=">=3.9",
    )
    _page(whl, "torch-2.9.0+cu128.html", newer)
    pyg = _page_wheels(
        whl / "torch-2.13.0+cu130",
        "pyg-lib",
        "pt213cu130",
        ("0.8.0", "0.9.0"),
        (f"cp310-abi3-{LINUX}",),
        library="libpyg.so",
        archs=PYG_ARCHS,
        requires_python=">=3.10",
    )
    _page(whl, "torch-2.13.0+cu130.html", pyg)
    return write_packages(root / "links-base", LINKS_BASE)


def nvcc_library(archs: list[str], release: str) -> bytes:
    """A library whose GPU code names the nvcc that built it (``12.9.86``), as an uncompressed
    fat binary does."""
    name = f"Cuda compilation tools, release {release.rsplit('.', 1)[0]}, V{release}".encode()
    return elf_with({".nv_fatbin": fatbin_of(archs), ".comment": name + b"\0"})


NVCC_BASE = packages_file(
    package_entry(
        "vllm",
        release_entry(
            "0.98.0",
            build_entry(
                "default",  # a name with no CUDA in it
                cuda="13.0",
                torch="==9.0.0",
                archs=VLLM_ARCHS,
                requires=["nvidia-cudnn-frontend<1.19,>=1.13"],  # the wheel's, its clauses reordered
            ),
            python=">=3.10,<3.14",
        ),
    ),
    comment="a team's vLLM",
)
"""vLLM 0.98.0 as a catalog has it: a CUDA 13.0 build, where its wheel's GPU code names 13.1."""


def build_nvcc_index(root: Path) -> Path:
    """``root/nvcc``: vLLM 0.97.0 (its GPU code built by nvcc 13.0, older than any release the
    file has), 0.98.0 (by nvcc 13.1) and 0.99.0 (by nvcc 12.9, no local tag: a CUDA 12.9
    build); returns the catalog folder ``root/nvcc-base``."""
    for version, release in (("0.97.0", "13.0.88"), ("0.98.0", "13.1.80"), ("0.99.0", "12.9.86")):
        build_wheel(
            root / "nvcc",
            "vllm",
            version,
            files={"vllm/_C.abi3.so": nvcc_library(VLLM_ARCHS, release)},
            tag=TAG,
            requires_python=">=3.10,<3.14",
            requires=("torch==9.0.0", "nvidia-cudnn-frontend>=1.13,<1.19"),
        )
    return write_packages(root / "nvcc-base", NVCC_BASE)
