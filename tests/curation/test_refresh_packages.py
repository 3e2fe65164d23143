"""``colabenv catalog refresh packages`` against a stand-in index on 127.0.0.1 (tests/support/
refresh_package_standins.py): new releases of the CUDA packages read from their wheels' METADATA
and GPU code, written in cuda_packages.toml's layout under the file's own text, which stays;
what cannot be derived is a note; a contradiction is reported, not written. Packages whose
builds live on find-links pages (data.pyg.org's) are read from those pages, served on
127.0.0.1 as a mirror."""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv._util.reader import Reader
from colabenv.catalog.load import parse_document
from colabenv.catalog.packages import cuda_packages
from colabenv.curation.refresh.package_builds import build_name_after, nearest_build
from colabenv.curation.refresh.writer import package_build_block, packages_merged_text
from colabenv.errors import CatalogOverlayError
from colabenv.models import Arch, CudaPackage, PackageBuild, Source
from tests.support.fixtures import Runner
from tests.support.index import LocalIndex
from tests.support.package_entries import (
    build_entry,
    package_entry,
    packages_file,
    release_entry,
    write_packages,
)
from tests.support.refresh_package_standins import (
    BASE,
    BNB_LIBRARIES,
    CUML_ARCHS,
    LINKS_BASE,
    NEWER_SCATTER_ARCHS,
    NVCOMP,
    ORT_ARCHS,
    ORT_FEED,
    PYG_ARCHS,
    RAPIDS_ARCHS,
    SCATTER_ARCHS,
    VLLM_INDEX,
    XFORMERS_PINS,
    build_find_links_pages,
    build_nvcc_index,
    build_other_indexes,
    build_package_indexes,
    build_rapids,
    other_indexes_base,
)


@pytest.fixture(scope="module")
def standins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("refresh-packages")
    build_package_indexes(root)
    build_find_links_pages(root)
    build_other_indexes(root)
    build_rapids(root)
    build_nvcc_index(root)
    return root


@pytest.fixture
def index(standins: Path) -> Iterator[LocalIndex]:
    with LocalIndex(standins / "default") as served:
        yield served


@pytest.fixture
def pytorch(standins: Path) -> Iterator[LocalIndex]:
    with LocalIndex(standins / "pytorch") as served:
        yield served


def _refresh(runner: Runner, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``colabenv catalog refresh packages ARGS --quiet``, as a user runs it."""
    return runner("catalog", "refresh", "packages", *args, "--quiet", timeout=120)


def _packages(path: Path) -> list[CudaPackage]:
    doc: Reader = parse_document(path, path.read_bytes(), CatalogOverlayError)
    return list(cuda_packages(doc, str(path)))


def _loaded(path: Path) -> dict[str, dict[Version, object]]:
    return {str(p.name): {r.version: r for r in p.releases} for p in _packages(path)}


def test_refresh_packages_adds_the_new_releases_and_keeps_the_file(
    runner: Runner, standins: Path, index: LocalIndex, pytorch: LocalIndex, tmp_path: Path
) -> None:
    out = tmp_path / "team"
    out.mkdir()
    done = _refresh(
        runner,
        "--index",
        index.url,
        "--catalog",
        standins / "base",
        "-o",
        out,
        "--pytorch-index",
        pytorch.url,
        "--no-find-links",
    )
    assert done.returncode == 1, done.stderr  # the bitsandbytes contradiction
    assert (
        "3 release(s) added (xformers 0.0.99, cupy 99.0.0, bitsandbytes 99.0.0); 0 build(s) added to "
        "releases the file has (none); 1 contradiction(s) reported" in done.stdout
    )
    assert (
        "contradiction: bitsandbytes 98.0.0 cu12: torch: the catalog has <10,>=9.0, the index says "
        "<10,>=8.0 (the catalog's entry is kept)" in done.stderr
    )
    assert "note: cupy 99.0.0 cu11 left out: no arch list" in done.stderr
    assert "note: torch-scatter: no Linux x86_64 wheel on the index" in done.stderr
    written = (out / "cuda_packages.toml").read_text(encoding="utf-8")
    for line in BASE.splitlines():
        assert line in written.splitlines(), f"the file's own line {line!r} stays"
    assert written.index('version = "0.0.99"') < written.index('version = "0.0.98"'), "newest first"
    packages = _loaded(out / "cuda_packages.toml")
    xformers = packages["xformers"][Version("0.0.99")]
    build = xformers.build("cu128")  # type: ignore[attr-defined]
    assert build is not None and build.unconfirmed is None
    assert build.torch == SpecifierSet("==9.1.0"), "the wheel's Requires-Dist torch pin"
    assert build.requires == XFORMERS_PINS
    assert build.cuda == Version("12.8"), "carried from the build before (no local tag)"
    assert build.local_tag is None and build.index_url is None
    cu126 = xformers.build("cu126")  # type: ignore[attr-defined]
    assert cu126 is not None and cu126.unconfirmed is None, "read from the PyTorch index's page"
    assert (cu126.index_url, cu126.local_tag) == ("https://download.pytorch.org/whl/cu126", "cu126")
    assert cu126.cuda == Version("12.6") and cu126.torch == SpecifierSet("==9.1.0")
    assert xformers.python == SpecifierSet(">=3.12,<3.14"), "Requires-Python and the cpXY tags"  # type: ignore[attr-defined]
    assert 'archs = "xf"' in written, "an arch list equal to a named one is written by name"
    cupy = packages["cupy"][Version("99.0.0")].build("cu12")  # type: ignore[attr-defined]
    assert cupy is not None and cupy.torch is None and str(cupy.distribution) == "cupy-cuda12x"
    assert cupy.archs == tuple(sorted(Arch.parse(a) for a in ("sm_75", "sm_80", "sm_90", "compute_90")))
    assert cupy.cuda == Version("12")
    assert cupy.requires == ("cuda-pathfinder>=1.3.4,==1.*",), "NVIDIA's cuda-* wheels are kept, numpy not"
    release = packages["cupy"][Version("99.0.0")]
    assert release.python == SpecifierSet(">=3.12")  # type: ignore[attr-defined]
    cu13 = release.build("cu13")  # type: ignore[attr-defined]
    assert str(cu13.distribution) == "cupy-cuda13x" and cu13.cuda == Version("13")
    assert (cupy.python, cu13.python) == (SpecifierSet(">=3.12,<3.13"), SpecifierSet(">=3.13,<3.14"))
    assert packages["bitsandbytes"][Version("98.0.0")].build("cu12").torch == SpecifierSet(">=9.0,<10")  # type: ignore[attr-defined]
    bnb = packages["bitsandbytes"][Version("99.0.0")]
    names = [b.name for b in bnb.builds]  # type: ignore[attr-defined]
    assert names == ["cuda118", "cuda128", "cuda130"], "one build per library the wheel carries"
    for build in bnb.builds:  # type: ignore[attr-defined]
        cuda = build.name.removeprefix("cuda")
        assert build.cuda == Version(f"{cuda[:-1]}.{cuda[-1]}")
        assert build.archs == tuple(sorted(Arch.parse(a) for a in BNB_LIBRARIES[cuda])), build.name
        assert build.unconfirmed is None and build.torch == SpecifierSet(">=8.0,<10")
        assert f"libbitsandbytes_cuda{cuda}.so, the wheel's library for CUDA" in build.source.text


def test_refresh_packages_carried_archs_are_unconfirmed_and_the_diff_goes_to_stdout(
    runner: Runner, standins: Path, index: LocalIndex
) -> None:
    done = _refresh(
        runner,
        "--index",
        index.url,
        "--catalog",
        standins / "base",
        "--no-variant-index",
        "--no-find-links",
        "--archs",
        "carry",
        "--releases",
        ">=0.0.99,<1",
    )
    assert done.returncode == 0, done.stderr
    assert "+++ b/cuda_packages.toml" in done.stdout
    assert "+unconfirmed = true" in done.stdout
    assert "the arch list is carried over from cu128 of the release before" in done.stdout
    assert "1 release(s) added (xformers 0.0.99)" in done.stderr


def test_refresh_packages_bad_releases_is_exit_2(runner: Runner, standins: Path, index: LocalIndex) -> None:
    done = runner(
        "catalog",
        "refresh",
        "packages",
        "--index",
        index.url,
        "--catalog",
        standins / "base",
        "--no-variant-index",
        "--releases",
        "not a spec",
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "Traceback" not in done.stderr


@pytest.fixture
def links(standins: Path) -> Iterator[LocalIndex]:
    with LocalIndex(standins / "links") as served:
        yield served


def test_refresh_packages_reads_the_find_links_pages_the_file_names(
    runner: Runner, standins: Path, index: LocalIndex, links: LocalIndex, tmp_path: Path
) -> None:
    out = tmp_path / "team"
    out.mkdir()
    done = _refresh(
        runner,
        "--index",
        index.url,
        "--catalog",
        standins / "links-base",
        "-o",
        out,
        "--no-variant-index",
        "--find-links-mirror",
        f"{links.base_url}/files/",
    )
    assert done.returncode == 1, done.stderr  # pyg-lib 0.8.0's torch
    assert (
        "2 release(s) added (torch-scatter 2.1.3, pyg-lib 0.9.0); 1 build(s) added to releases the "
        "file has (torch-scatter 2.1.2 pt29cu128); 2 contradiction(s)" in done.stdout
    )
    assert (
        "contradiction: pyg-lib 0.8.0 pt213cu130: archs: the catalog has sm_80 sm_90, the wheel's libraries "
        "carry sm_80 sm_86 sm_90 sm_100 sm_120 (kernels the catalog does not list for sm_100" in done.stderr
    )
    assert (
        "note: torch-scatter 2.1.2 pt28cu126: the wheel confirms the arch list marked unconfirmed "
        "(unconfirmed can go)" in done.stderr
    )
    assert (
        "contradiction: pyg-lib 0.8.0 pt213cu130: torch: the catalog has ==2.12.0, its find-links page "
        "says ==2.13.* (the catalog's entry is kept)" in done.stderr
    )
    assert (
        "note: torch-scatter 2.1.3: read from 2 find-links page(s) (https://data.pyg.org/whl/"
        "torch-2.8.0+cu126.html, https://data.pyg.org/whl/torch-2.9.0+cu128.html): those its builds "
        "before name" in done.stderr
    )
    # each page read once, from the mirror, and each wheel's METADATA read from the wheel itself
    # (the page offers no PEP 658 file): nothing asked of the index for these packages' wheels
    pages = [r for r in links.requests if r.endswith(".html")]
    assert len(pages) == len(set(pages))
    named = {
        "/files/data.pyg.org/whl/torch-2.13.0+cu130.html",
        "/files/data.pyg.org/whl/torch-2.8.0+cu126.html",
    }
    assert named < set(pages)
    # the pages of the shipped torch catalog's newer X.Y.0 releases and GPU builds are looked for
    # beside them (most are absent here: not an error), never a patch release's or a CPU one's
    guessed = set(pages) - named
    assert "/files/data.pyg.org/whl/torch-2.9.0+cu128.html" in guessed
    assert "/files/data.pyg.org/whl/torch-2.15.0+cu132.html" in guessed
    assert not [p for p in guessed if "2.9.1" in p or "+cpu" in p or "torch-2.8.0" in p]
    assert "note: torch-scatter: the find-links page" not in done.stderr, "an absent guessed page is no note"
    assert not any(r.endswith(".metadata") for r in links.requests)
    assert (
        "/files/data.pyg.org/whl/torch-2.8.0%2Bcu126/torch_scatter-2.1.3%2Bpt28cu126-cp312-cp312-linux_x86_64.whl"
        in links.requests
    )
    assert not any("torch_sparse" in r or "win_amd64" in r for r in links.requests)
    written = (out / "cuda_packages.toml").read_text(encoding="utf-8")
    for line in LINKS_BASE.splitlines():
        assert line in written.splitlines(), f"the file's own line {line!r} stays"
    packages = _loaded(out / "cuda_packages.toml")
    scatter = packages["torch-scatter"][Version("2.1.3")]
    build = scatter.build("pt28cu126")  # type: ignore[attr-defined]
    assert build is not None and build.unconfirmed is None
    assert build.find_links == "https://data.pyg.org/whl/torch-2.8.0+cu126.html", "the page, not the mirror"
    assert (build.local_tag, build.cuda, build.torch) == (
        "pt28cu126",
        Version("12.6"),
        SpecifierSet("==2.8.*"),
    )
    assert build.index_url is None and build.requires == ()
    assert build.archs == tuple(sorted(Arch.parse(a) for a in SCATTER_ARCHS)), "read from the wheel"
    # its two builds' wheels cover different Pythons: each keeps its own range under the widest
    assert scatter.python == SpecifierSet(">=3.12")  # type: ignore[attr-defined]
    assert build.python == SpecifierSet(">=3.12,<3.14")
    assert "the find-links page https://data.pyg.org/whl/torch-2.8.0+cu126.html" in written
    assert "127.0.0.1" not in written
    newer = scatter.build("pt29cu128")  # type: ignore[attr-defined]
    assert newer is not None and newer.find_links == "https://data.pyg.org/whl/torch-2.9.0+cu128.html"
    assert (newer.cuda, newer.torch) == (Version("12.8"), SpecifierSet("==2.9.*")), "the page's name"
    assert newer.archs == tuple(sorted(Arch.parse(a) for a in NEWER_SCATTER_ARCHS))
    assert newer.python == SpecifierSet(">=3.13,<3.14"), "its own range: the release's is wider"
    # the release the file has gets the build, written inside its own entry, the rest kept
    kept = packages["torch-scatter"][Version("2.1.2")]
    assert [b.name for b in kept.builds] == ["pt28cu126", "pt29cu128"]  # type: ignore[attr-defined]
    added = kept.build("pt29cu128")  # type: ignore[attr-defined]
    assert added.torch == SpecifierSet("==2.9.*") and added.python == SpecifierSet(">=3.13,<3.14")
    assert written.index("torch-2.9.0+cu128.html") < written.index('name = "pyg-lib"')
    pyg = packages["pyg-lib"][Version("0.9.0")]
    pyg_build = pyg.build("pt213cu130")  # type: ignore[attr-defined]
    assert pyg_build.torch == SpecifierSet("==2.13.*") and pyg_build.cuda == Version("13.0")
    assert pyg_build.archs == tuple(sorted(Arch.parse(a) for a in PYG_ARCHS))
    assert pyg.python == SpecifierSet(">=3.10"), "a cp310-abi3 wheel runs on every newer CPython"  # type: ignore[attr-defined]


def test_an_unreadable_find_links_page_is_a_note_and_the_rest_goes_on(
    runner: Runner, standins: Path, index: LocalIndex, tmp_path: Path
) -> None:
    with LocalIndex(tmp_path / "empty") as empty:
        (tmp_path / "empty").mkdir()
        done = _refresh(
            runner,
            "--index",
            index.url,
            "--catalog",
            standins / "links-base",
            "--no-variant-index",
            "--find-links-mirror",
            f"{empty.base_url}/files/",
        )
    assert done.returncode == 0, done.stderr
    assert (
        "note: torch-scatter: the find-links page https://data.pyg.org/whl/torch-2.8.0+cu126.html"
        " was not read" in done.stderr
    )
    assert "note: pyg-lib: no Linux x86_64 wheel on its find-links pages: not refreshed" in done.stderr
    assert "0 release(s) added (none)" in done.stderr


@pytest.mark.parametrize(
    ("page", "tag", "torch", "cuda"),
    [
        # a page serves every patch release of its torch minor (2.11.0 and 2.11.1)
        ("https://data.pyg.org/whl/torch-2.11.0+cu128.html", "pt211cu128", "==2.11.*", "12.8"),
        # a page whose name says nothing: the local tag, pyg's and flash-attn's spellings
        ("https://mirror.example/scatter/links.html", "pt211cu128", "==2.11.*", "12.8"),
        (
            "https://github.com/Dao-AILab/flash-attention/releases/expanded_assets/v2.8.3",
            "cu12torch2.8cxx11abiTRUE",
            "==2.8.*",
            None,
        ),
    ],
)
def test_a_find_links_build_is_read_from_the_page_name_else_its_local_tag(
    page: str, tag: str, torch: str, cuda: str | None
) -> None:
    from colabenv.curation.refresh.find_links import page_cuda, page_torch

    assert page_torch(page, tag, None)[0] == SpecifierSet(torch)
    found = page_cuda(page, tag)[0]
    assert (str(found) if found is not None else None) == cuda


def test_a_new_build_of_a_release_the_file_has_goes_inside_that_release(tmp_path: Path) -> None:
    """The build is written at the end of its release's entry: before the next release, and
    before a comment that heads the next package; the rest of the file is as it was."""
    text = packages_file(
        package_entry(
            "torch-scatter",
            release_entry("2.1.3", build_entry("pt28cu126", cuda="12.6", archs=["sm_60"])),
            release_entry("2.1.2", build_entry("pt28cu126", cuda="12.6", archs=["sm_60"])),
        ),
        "\n# pyg-lib: its own package\n"
        + package_entry("pyg-lib", release_entry("0.8.0", build_entry("x", cuda="13.0", archs=["sm_80"]))),
    )
    path = write_packages(tmp_path, text) / "cuda_packages.toml"
    package = cuda_packages(parse_document(path, path.read_bytes(), CatalogOverlayError), "f")[0]
    named: dict[str, tuple[Arch, ...]] = {}
    old = package.release(Version("2.1.2"))
    assert old is not None
    new = dataclasses.replace(old.builds[0], name="pt29cu128", local_tag="pt29cu128", cuda=Version("12.8"))
    merged = packages_merged_text(text, (), named, [dataclasses.replace(old, builds=(new,))])
    assert merged.replace(package_build_block(new, named), "").replace("\n\n\n", "\n\n") == text
    at = merged.index('name = "pt29cu128"')
    assert merged.index('version = "2.1.2"') < at < merged.index("# pyg-lib: its own package")
    path.write_text(merged, encoding="utf-8")
    reread = cuda_packages(parse_document(path, path.read_bytes(), CatalogOverlayError), "f")
    assert [b.name for b in reread[0].release(Version("2.1.2")).builds] == ["pt28cu126", "pt29cu128"]  # type: ignore[union-attr]
    assert [b.name for b in reread[0].release(Version("2.1.3")).builds] == ["pt28cu126"]  # type: ignore[union-attr]


def test_refresh_packages_reads_the_other_indexes_the_file_names(
    runner: Runner, standins: Path, index: LocalIndex, tmp_path: Path
) -> None:
    """An index named per release (wheels.vllm.ai/VERSION/cu129) is read for each release the
    default index has past the file's newest, and a fixed feed (Microsoft's onnxruntime-cuda-12)
    as it is; each build keeps its own index and the facts of the build before on that index."""
    with LocalIndex(standins / "other") as other:
        base = other_indexes_base(tmp_path)
        out = tmp_path / "team"
        out.mkdir()
        done = _refresh(
            runner,
            "--index",
            index.url,
            "--catalog",
            base,
            "-o",
            out,
            "--no-variant-index",
            "--index-mirror",
            f"{other.base_url}/",
        )
        requested = [r for r in other.requests if not r.startswith("/files/")]
    assert done.returncode == 0, done.stderr
    assert "2 release(s) added (vllm 0.99.0, onnxruntime-gpu 99.0.0)" in done.stdout
    assert sorted(requested) == [
        "/feed.example.org/onnxruntime-cuda-12/pypi/simple/onnxruntime-gpu/",
        "/wheels.example.org/0.98.0/cu129/vllm/",
        "/wheels.example.org/0.99.0/cu129/vllm/",
    ], "each per-release index read for the file's newest release and the new one, nothing else"
    packages = _loaded(out / "cuda_packages.toml")
    vllm = packages["vllm"][Version("0.99.0")]
    cu129 = vllm.build("cu129")  # type: ignore[attr-defined]
    assert cu129.index_url == "https://wheels.example.org/0.99.0/cu129", "the new release's own index"
    assert (cu129.local_tag, cu129.cuda, cu129.torch) == ("cu129", Version("12.9"), SpecifierSet("==9.1.0"))
    assert cu129.unconfirmed is None
    cu130 = vllm.build("cu130")  # type: ignore[attr-defined]
    assert cu130.index_url is None and cu130.cuda == Version("13.0"), "carried from the default build"
    ort = packages["onnxruntime-gpu"][Version("99.0.0")]
    cuda12 = ort.build("cuda12")  # type: ignore[attr-defined]
    assert cuda12.index_url == ORT_FEED and cuda12.cuda == Version("12")
    assert cuda12.archs == tuple(sorted(Arch.parse(a) for a in ORT_ARCHS)), "read from the feed's wheel"
    cuda13 = ort.build("cuda13")  # type: ignore[attr-defined]
    assert cuda13.index_url is None and cuda13.cuda == Version("13")
    assert (cuda12.python, cuda13.python) == (SpecifierSet(">=3.12,<3.13"), SpecifierSet(">=3.13,<3.14"))
    written = (out / "cuda_packages.toml").read_text(encoding="utf-8")
    assert "the index https://wheels.example.org/0.99.0/cu129: vllm-0.99.0+cu129-" in written
    assert other.base_url not in written, "the file names the indexes, not the mirror"


def test_refresh_reads_a_wheels_compiled_code_wheel_and_the_cuda_packages_it_requires(
    runner: Runner, standins: Path, index: LocalIndex, tmp_path: Path
) -> None:
    """cuDF's wheel requires ``libcudf-cu12==99.0.*``, whose NVIDIA wheels are the build's too;
    cuML's has no GPU code and its library wheel's is read; the other CUDA packages a wheel
    requires (cupy-cuda12x, cudf-cu12) are the release's ``packages``, and a release the file
    has whose ``packages`` differ is a contradiction."""
    out = tmp_path / "team"
    out.mkdir()
    done = _refresh(
        runner, "--index", index.url, "--catalog", standins / "rapids-base", "-o", out, "--no-variant-index"
    )
    assert done.returncode == 1, done.stderr
    assert (
        "contradiction: cudf 98.0.0: packages: the catalog has [cupy>=97.0.0], the wheels require "
        "[cupy>=98.0.0]" in done.stderr
    )
    assert "requires: the catalog has" not in done.stderr, "98.0.0's NVIDIA wheel is libcudf's: the same"
    assert "2 release(s) added (cudf 99.0.0, cuml 99.0.0)" in done.stdout
    packages = _loaded(out / "cuda_packages.toml")
    cudf = packages["cudf"][Version("99.0.0")]
    assert cudf.needs == (("cupy", SpecifierSet(">=99.0.0")),)  # type: ignore[attr-defined]
    build = cudf.build("cuda12")  # type: ignore[attr-defined]
    assert build.requires == (NVCOMP, "cuda-toolkit[nvrtc]==12.*"), "libcudf-cu12 99.0.0's, not 100.0.0's"
    assert build.archs == tuple(sorted(Arch.parse(a) for a in RAPIDS_ARCHS)) and build.unconfirmed is None
    assert "libcudf_cu12-99.0.0-py3-none-manylinux_2_28_x86_64.whl, the wheel of its compiled code" in (
        build.source.text
    )
    cuml = packages["cuml"][Version("99.0.0")]
    assert cuml.needs == (("cudf", SpecifierSet("==99.0.*")), ("cupy", SpecifierSet(">=99.0.0")))  # type: ignore[attr-defined]
    cuml_build = cuml.build("cuda12")  # type: ignore[attr-defined]
    assert cuml_build.unconfirmed is None, "read from libcuml-cu12, not carried over"
    assert cuml_build.archs == tuple(sorted(Arch.parse(a) for a in CUML_ARCHS))
    assert cuml_build.requires == ("nvidia-nvjitlink-cu12>=12.9,<13",)
    written = (out / "cuda_packages.toml").read_text(encoding="utf-8")
    assert 'packages = { cudf = "==99.0.*", cupy = ">=99.0.0" }' in written


def _refresh_nvcc(runner: Runner, standins: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Refresh ``nvcc-base`` from the ``nvcc`` stand-in index into ``out``."""
    out.mkdir()
    with LocalIndex(standins / "nvcc") as served:
        return _refresh(
            runner,
            "--index",
            served.url,
            "--catalog",
            standins / "nvcc-base",
            "-o",
            out,
            "--no-variant-index",
            *args,
        )


def test_a_wheel_without_a_local_tag_takes_the_cuda_its_gpu_code_names(
    runner: Runner, standins: Path, tmp_path: Path
) -> None:
    """vLLM's default wheels carry no local tag: the CUDA of a new release is the nvcc release
    its GPU code names (12.9), not the build before's (13.0), and its build is named for it
    (cu129); a release the file has whose CUDA the wheel contradicts is reported."""
    out = tmp_path / "team"
    done = _refresh_nvcc(runner, standins, out)
    assert done.returncode == 1, done.stderr
    assert (
        "contradiction: vllm 0.98.0 default: cuda: the catalog has 13.0, the wheel 13.1 (the nvcc its GPU "
        "code names (13.1.80))"
    ) in done.stderr
    assert "requires:" not in done.stderr, "the same pins, their clauses in another order"
    assert "1 release(s) added (vllm 0.99.0)" in done.stdout
    release = _loaded(out / "cuda_packages.toml")["vllm"][Version("0.99.0")]
    (build,) = release.builds  # type: ignore[attr-defined]
    assert (build.name, build.cuda) == ("cu129", Version("12.9"))
    assert "cuda: the nvcc its GPU code names (12.9.86)" in build.source.text
    # a release older than any the file has is named as the oldest one's build of its CUDA
    # (not cu130)
    older = tmp_path / "older"
    done = _refresh_nvcc(runner, standins, older, "--releases", "<0.98")
    assert done.returncode == 0, done.stderr
    (build,) = _loaded(older / "cuda_packages.toml")["vllm"][Version("0.97.0")].builds  # type: ignore[attr-defined]
    assert (build.name, build.cuda) == ("default", Version("13.0"))


def _build(name: str, cuda: str) -> PackageBuild:
    return PackageBuild(
        name,
        canonicalize_name("vllm"),
        Version(cuda),
        None,
        None,
        None,
        None,
        (),
        (),
        None,
        Source("https://x"),
    )


@pytest.mark.parametrize(
    ("before", "cuda", "name"),
    [
        (None, "12.9", "cu129"),
        (("cu130", "13.0"), "13.0", "cu130"),
        (("cu130", "13.0"), "12.9", "cu129"),
        (("cuda13", "13.3"), "13.1", "cuda13"),  # named for its major line: stays so
        (("cuda12", "12"), "12.9", "cuda12"),
        (("default", "12.8"), "12.9", "cu129"),
    ],
)
def test_a_build_without_a_local_tag_is_named_after_the_build_before(
    before: tuple[str, str] | None, cuda: str, name: str
) -> None:
    previous = _build(*before) if before is not None else None
    assert build_name_after(previous, Version(cuda)) == name


def test_a_release_older_than_any_is_named_like_the_oldest_on_an_index_named_per_release(
    tmp_path: Path,
) -> None:
    """vLLM's cu129 builds live on an index named per release (wheels.vllm.ai/VERSION/cu129):
    an older release's build on its own such index is like the oldest release's."""
    base = other_indexes_base(tmp_path) / "cuda_packages.toml"
    (package,) = [p for p in _packages(base) if p.name == "vllm"]
    index = VLLM_INDEX.format(version="0.97.0")
    build = nearest_build(package, Version("0.97.0"), "vllm", "cu129", index)
    assert build is not None and build.name == "cu129"
    assert (
        nearest_build(package, Version("0.97.0"), "vllm", "cu129", "https://elsewhere.example.org/") is None
    )


def test_a_written_build_keeps_its_free_threaded_pythons_and_reason(tmp_path: Path) -> None:
    """A build the writer writes reads back with its ``free_threaded`` keys (issue 36)."""
    build = dataclasses.replace(
        _build("cu130", "13.0"),
        archs=(Arch.parse("sm_80"),),
        free_threaded=SpecifierSet(">=3.13,<3.15"),
        free_threaded_unconfirmed="a validation matrix",
    )
    text = packages_file(package_entry("vllm", release_entry("1.0"))) + package_build_block(build, {})
    path = write_packages(tmp_path, text) / "cuda_packages.toml"
    (package,) = cuda_packages(parse_document(path, path.read_bytes(), CatalogOverlayError), "f")
    (read,) = package.releases[0].builds
    assert read.free_threaded == build.free_threaded
    assert read.free_threaded_unconfirmed == "a validation matrix"
