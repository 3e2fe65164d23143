"""``catalog refresh packages`` holds the Python ranges of the releases the file already has to
the Python tags of their wheels (issue 34): Requires-Python alone is not enough. A range that
admits a Python no wheel serves (``>=3.9`` over cp310 to cp313 wheels) is written narrowed,
the release's or, where its builds' wheels differ, each build's; a stable-ABI wheel
(``cp310-abi3``) serves every Python from its tag on; a Python the wheels serve that the file
leaves out is a contradiction, and the file's range is kept. Against wheels on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from colabenv._util.reader import Reader
from colabenv.catalog.load import parse_document
from colabenv.catalog.packages import cuda_packages
from colabenv.curation.refresh.package_pythons import narrowed, only_in
from colabenv.curation.refresh.sources import Wheel, python_range
from colabenv.errors import CatalogOverlayError
from colabenv.index.client import IndexFile
from colabenv.models import PackageRelease
from tests.curation.test_archs import gpu_library
from tests.support.fixtures import Runner
from tests.support.index import LocalIndex
from tests.support.package_entries import (
    build_entry,
    package_entry,
    packages_file,
    release_entry,
    write_packages,
)
from tests.support.wheels import build_wheel

ARCHS = ["sm_75", "sm_80", "sm_90", "compute_90"]
LINUX = "manylinux_2_28_x86_64"
BASE = packages_file(
    package_entry(
        "cupy",
        release_entry(  # abi3 from cp310, the file >=3.11: the wheels serve 3.10 too (kept)
            "62.0.0",
            build_entry("cuda12", cuda="12", archs=ARCHS, source="https://example.org/cupy-62/cuda12"),
            python=">=3.11",
            source="https://example.org/cupy-62",
        ),
        release_entry(  # abi3 from cp310, the file >=3.9: no wheel for 3.9
            "61.0.0",
            build_entry("cuda12", cuda="12", archs=ARCHS, source="https://example.org/cupy-61/cuda12"),
            source="https://example.org/cupy-61",
        ),
        release_entry(  # cp310 to cp313 for CUDA 12, to cp314 for CUDA 13: each build its own
            "60.0.0",
            build_entry("cuda12", cuda="12", archs=ARCHS, source="https://example.org/cupy-60/cuda12"),
            build_entry("cuda13", cuda="13", archs=ARCHS, source="https://example.org/cupy-60/cuda13"),
            source="https://example.org/cupy-60",
        ),
        release_entry(  # cp310 to cp313, the file >=3.9: the release's range
            "59.0.0",
            build_entry("cuda12", cuda="12", archs=ARCHS, source="https://example.org/cupy-59/cuda12"),
            source="https://example.org/cupy-59",
        ),
    ),
    comment="a team's CUDA packages",
)


def _wheels(root: Path) -> None:
    gpu = {"cupy/_core/core.so": gpu_library(ARCHS)}
    for version, major, tags in (
        ("59.0.0", 12, [f"cp3{m}-cp3{m}-{LINUX}" for m in range(10, 14)]),
        ("60.0.0", 12, [f"cp3{m}-cp3{m}-{LINUX}" for m in range(10, 14)]),
        ("60.0.0", 13, [f"cp3{m}-cp3{m}-{LINUX}" for m in range(10, 15)]),
        ("61.0.0", 12, [f"cp310-abi3-{LINUX}"]),
        ("62.0.0", 12, [f"cp310-abi3-{LINUX}"]),
    ):
        for tag in tags:
            build_wheel(root, f"cupy-cuda{major}x", version, files=gpu, tag=tag, requires_python=">=3.9")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalIndex, Path]]:
    root = tmp_path_factory.mktemp("package-pythons")
    _wheels(root / "index")
    base = write_packages(root / "base", BASE)
    with LocalIndex(root / "index") as index:
        yield index, base


def _releases(path: Path) -> dict[Version, PackageRelease]:
    doc: Reader = parse_document(path, path.read_bytes(), CatalogOverlayError)
    (cupy,) = cuda_packages(doc, str(path))
    return {r.version: r for r in cupy.releases}


def test_ranges_the_wheels_narrow_are_written_and_a_wider_one_is_a_contradiction(
    runner: Runner, served: tuple[LocalIndex, Path], tmp_path: Path
) -> None:
    index, base = served
    done = runner(
        *("catalog", "refresh", "packages", "--index", index.url, "--catalog", base, "-o", tmp_path),
        *("--no-variant-index", "--no-find-links", "--releases", ">=59", "--quiet"),
        timeout=120,
    )
    assert done.returncode == 1, done.stderr  # the contradiction of 62.0.0
    assert (
        "4 Python range(s) narrowed to the wheels' tags (cupy 61.0.0, cupy 60.0.0 cuda12, "
        "cupy 60.0.0 cuda13, cupy 59.0.0); 1 contradiction(s) reported" in done.stdout
    )
    assert (
        "contradiction: cupy 62.0.0 cuda12: python: the catalog has >=3.11, the wheels' Python tags "
        "say >=3.10 (the catalog's entry is kept)" in done.stderr
    )
    assert (
        "note: cupy 59.0.0: python: the catalog had >=3.9, the wheels' Python tags say >=3.10,<3.14: "
        "written >=3.10,<3.14" in done.stderr
    )
    releases = _releases(tmp_path / "cuda_packages.toml")
    assert releases[Version("59.0.0")].python == SpecifierSet(">=3.10,<3.14")
    assert "python >=3.10,<3.14: the Python tags of its wheels" in releases[Version("59.0.0")].source.text
    sixty = releases[Version("60.0.0")]
    assert sixty.python == SpecifierSet(">=3.9"), "its builds' wheels differ: each build says its own"
    assert [b.python for b in sixty.builds] == [SpecifierSet(">=3.10,<3.14"), SpecifierSet(">=3.10,<3.15")]
    assert releases[Version("61.0.0")].python == SpecifierSet(">=3.10"), "abi3: every Python from cp310"
    assert releases[Version("62.0.0")].python == SpecifierSet(">=3.11")


def test_narrowed_writes_what_both_admit_without_a_clause_the_others_imply() -> None:
    assert str(narrowed(SpecifierSet(">=3.9"), SpecifierSet(">=3.10,<3.14"))) == "<3.14,>=3.10"
    assert (
        str(narrowed(SpecifierSet(">=3.11,!=3.12.1"), SpecifierSet(">=3.10,<3.14")))
        == "!=3.12.1,<3.14,>=3.11"
    )
    assert only_in(SpecifierSet(">=3.10"), SpecifierSet(">=3.10,<3.14"))[0] == Version("3.14")
    assert only_in(SpecifierSet(">=3.10,<3.14"), SpecifierSet(">=3.10")) == []


def _wheel(filename: str) -> Wheel:
    _, version, _, tags = parse_wheel_filename(filename)
    return Wheel(
        "https://i.example/simple", IndexFile(filename, f"https://i.example/{filename}", None), version, tags
    )


def test_an_abi3_wheel_serves_each_python_from_its_tag_that_requires_python_admits() -> None:
    vllm = [_wheel(f"vllm-0.33.0-cp38-abi3-{LINUX}.whl")]
    assert python_range(vllm, ">=3.11,<3.15") == SpecifierSet(">=3.11,<3.15"), "vLLM's own bounds"
    assert python_range(vllm, None) == SpecifierSet(">=3.8")
    assert python_range(vllm, ">=3.9,!=3.12.1") == SpecifierSet(">=3.9,!=3.12.1")
    tagged = [_wheel(f"cupy_cuda12x-14.2.0-cp3{m}-cp3{m}-{LINUX}.whl") for m in range(10, 15)]
    assert python_range(tagged, ">=3.9") == SpecifierSet(">=3.10,<3.15")
