"""``colabenv catalog refresh jax`` beyond x86-64 CUDA, against stand-in indexes on 127.0.0.1
(tests/support/refresh_jax_platform_standins.py): the CUDA plugins' linux_aarch64 builds, read
from the plugin's and PJRT's aarch64 wheels on the default index; the ROCm plugin's builds,
read from AMD's find-links page (``--rocm-find-links``, else the page the file names), their gfx
lists from the HIP offload bundles of the plugin's and PJRT's libraries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.catalog.load import load_overlay
from colabenv.curation.refresh.aarch64_builds import AARCH64
from colabenv.models import Framework, Release
from tests.support.fixtures import Runner
from tests.support.refresh_jax_platform_standins import (
    AARCH64_ONLY_PIN,
    ARM12,
    BASE_GFX,
    INDEX_ROCM_SUMMARY,
    OTHER_ROCM_PAGE,
    ROCM_PAGE,
    X86_ONLY_PIN,
    build_index_rocm,
    build_jax_platform_indexes,
)
from tests.support.refresh_standins import JAX12, JAX_PLUGIN_PINS
from tests.support.refreshing import Served, refresh_standins


@pytest.fixture(scope="module")
def standins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("refresh-jax-platforms")
    build_jax_platform_indexes(root)
    return root


def _refresh(
    runner: Runner, standins: Path, out: Path, *args: str, garbage_pages: bool = False
) -> tuple[int, str, str]:
    """``catalog refresh jax`` of the base file into ``out``, AMD's pages read from the stand-in
    (``--find-links-mirror``); ``garbage_pages``: AMD's server answers every page with bytes that
    are not a page of links."""
    return refresh_standins(
        runner, "jax", standins, out, *args, amd=True, before=_garbage_pages if garbage_pages else None
    )


def _garbage_pages(served: Served) -> None:
    assert served.amd is not None
    served.amd.answer_with(b'{"files": 7')  # a PEP 691 JSON page cut short


@pytest.fixture(scope="module")
def index_standins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stand-ins, and jax-rocm7-plugin 9.1.0 and its PJRT on the default index itself."""
    root = tmp_path_factory.mktemp("refresh-jax-index-rocm")
    build_jax_platform_indexes(root)
    build_index_rocm(root)
    return root


def _releases(out: Path) -> dict[str, Release]:
    return {str(r.version): r for r in load_overlay(out, "test", [Framework.JAX]).releases}


def test_refresh_jax_lists_a_cuda_build_for_aarch64_where_its_plugin_has_aarch64_wheels(
    runner: Runner, standins: Path, tmp_path: Path
) -> None:
    code, stdout, stderr = _refresh(runner, standins, tmp_path / "out")
    assert code == 1, stderr  # 9.0.0 rocm7's gfx list: below
    new = _releases(tmp_path / "out")["9.1.0"]
    x86 = new.on_platform("linux_x86_64").variant("cuda12")
    arm = new.on_platform(AARCH64).variant("cuda12")
    assert x86 is not None and x86.platforms == ("linux_x86_64",) and [str(a) for a in x86.archs] == JAX12
    assert arm is not None and arm.platforms == (AARCH64,) and arm.unconfirmed is None
    assert [str(a) for a in arm.archs] == ARM12, "read from the aarch64 plugin's and PJRT's GPU code"
    assert arm.cuda == x86.cuda == Version("12.9") and arm.extra == "cuda12"
    assert arm.requires == ("jax-cuda12-plugin==9.1.0", "jax-cuda12-pjrt==9.1.0")
    assert arm.pin_texts == (*JAX_PLUGIN_PINS, AARCH64_ONLY_PIN), "markers read as an aarch64 host reads them"
    assert X86_ONLY_PIN not in arm.pin_texts
    assert "jax_cuda12_plugin-9.1.0-cp312-cp312-manylinux_2_27_aarch64.whl" in arm.source.text
    assert [v.name for v in new.variants if AARCH64 in v.platforms] == ["cuda12"], (
        "jax-cuda13-pjrt alone has an aarch64 wheel: no cuda13 build for aarch64"
    )
    written = (tmp_path / "out" / "jax.toml").read_text(encoding="utf-8")
    assert 'requires = ["jax-cuda12-plugin==9.1.0", "jax-cuda12-pjrt==9.1.0"]' in written
    assert 'platforms = ["linux_aarch64"]' in written
    assert (
        "note: jax 9.0.0 cuda12 (linux_aarch64): the wheel confirms the arch list marked unconfirmed "
        "(unconfirmed can go)" in stderr
    )
    known = _releases(tmp_path / "out")["9.0.0"].on_platform(AARCH64).variant("cuda12")
    assert known is not None and known.unconfirmed is not None, "the file's entry is kept as it was"
    assert "2 release(s) added (9.1.0, 9.1.1)" in stdout


def test_refresh_jax_lists_the_rocm_builds_its_find_links_page_has(
    runner: Runner, standins: Path, tmp_path: Path
) -> None:
    code, _stdout, stderr = _refresh(runner, standins, tmp_path / "out")
    assert code == 1, stderr
    releases = _releases(tmp_path / "out")
    rocm7 = releases["9.1.0"].variant("rocm7")
    assert rocm7 is not None and rocm7.unconfirmed is None
    assert rocm7.rocm == Version("7.9") and rocm7.cuda is None and not rocm7.archs
    assert rocm7.gfx == ("gfx90a", "gfx942", "gfx950", "gfx1201"), "the bundles' targets, features dropped"
    assert rocm7.requires == ("jax-rocm7-plugin==9.1.0", "jax-rocm7-pjrt==9.1.0")
    assert rocm7.find_links == ROCM_PAGE, "the page itself, not the mirror it was read from"
    assert rocm7.python == SpecifierSet(">=3.12,<3.14"), "the plugin's cp312 and cp313 wheels"
    assert rocm7.extra is None and rocm7.index_url is None
    assert "rocm: the page's path (rocm-rel-7.9)" in rocm7.source.text
    assert "jax_rocm7_pjrt-9.1.0-py3-none-manylinux_2_28_x86_64.whl" in rocm7.source.text
    patch = releases["9.1.1"].variant("rocm7")
    assert patch is not None and patch.requires == rocm7.requires, "9.1.1 pins jaxlib 9.1.0"
    written = (tmp_path / "out" / "jax.toml").read_text(encoding="utf-8")
    assert f'find_links = "{ROCM_PAGE}"' in written
    assert 'gfx = ["gfx90a", "gfx942", "gfx950", "gfx1201"]' in written
    assert (
        "contradiction: jax 9.0.0 rocm7: gfx: the catalog has gfx90a gfx942 gfx1100, the plugin's and "
        "PJRT's libraries carry gfx90a gfx942" in stderr
    )
    bad = [line for line in stderr.splitlines() if "jax_rocm7_plugin-9.1.0-cp312-manylinux" in line]
    assert len(bad) == 1 and "not a wheel file name" in bad[0], "a malformed file name: one line"
    profile = tmp_path / "p.toml"
    profile.write_text('name = "p"\n[frameworks]\njax = ">=9.1"\n[catalog]\ncheck_index = false\n')
    env = {"COLABENV_CATALOG": str(tmp_path / "out")}
    amd = runner(
        "resolve", profile, "--rocm", "7.9", "--gfx", "gfx950", "--python", "3.12", "--json", env=env
    )
    assert amd.returncode == 0, amd.stderr
    jax = json.loads(amd.stdout)["frameworks"]["jax"]
    assert (jax["version"], jax["variant"], jax["find_links"]) == ("9.1.1", "rocm7", ROCM_PAGE)
    assert "jax-rocm7-plugin==9.1.0" in jax["requirements"]


def test_refresh_jax_reads_the_rocm_plugin_from_the_index_it_reads_jax_from(
    runner: Runner, index_standins: Path, tmp_path: Path
) -> None:
    """No find-links page read: jax-rocm7-plugin 9.1.0 and the PJRT it pins on the default index
    give 9.1.0 (and 9.1.1, which pins jaxlib 9.1.0) a rocm7 build with no find_links; 9.0.0,
    whose plugin the index lacks (its PJRT alone is there), gets none."""
    code, _stdout, stderr = _refresh(runner, index_standins, tmp_path / "out", "--no-find-links")
    assert code == 0, stderr
    releases = _releases(tmp_path / "out")
    rocm7 = releases["9.1.0"].variant("rocm7")
    assert rocm7 is not None and rocm7.unconfirmed is None
    assert rocm7.find_links is None and rocm7.index_url is None and rocm7.extra is None
    assert rocm7.requires == ("jax-rocm7-plugin==9.1.0", "jax-rocm7-pjrt==9.1.0")
    assert rocm7.rocm == Version("7.12"), "the plugin's METADATA Summary"
    assert rocm7.gfx == ("gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950", "gfx1200", "gfx1201")
    assert rocm7.python == SpecifierSet(">=3.12,<3.14"), "the plugin's cp312 and cp313 wheels"
    assert "jax_rocm7_plugin-9.1.0-cp312-cp312-manylinux_2_28_x86_64.whl" in rocm7.source.text
    assert "jax_rocm7_pjrt-9.1.0-py3-none-manylinux_2_28_x86_64.whl" in rocm7.source.text
    assert "find-links" not in rocm7.source.text
    assert f"'{INDEX_ROCM_SUMMARY}'" in rocm7.source.text
    patch = releases["9.1.1"].variant("rocm7")
    assert patch is not None and patch.requires == rocm7.requires and patch.find_links is None
    kept = releases["9.0.0"].variant("rocm7")
    assert kept is not None and kept.find_links == ROCM_PAGE, "the file's own, not one the index gave"
    assert kept.source.text == "hand-written: jax 9.0.0 rocm7"
    assert "jax 9.0.0 rocm7" not in stderr, "no plugin: no build, and the file's is not gone"
    written = (tmp_path / "out" / "jax.toml").read_text(encoding="utf-8")
    block = written[written.index('version = "9.1.0"') :]
    block = block[
        block.index('name = "rocm7"') : block.index("[[release.variant]]", block.index('name = "rocm7"'))
    ]
    assert (
        "find_links" not in block
        and 'requires = ["jax-rocm7-plugin==9.1.0", "jax-rocm7-pjrt==9.1.0"]' in block
    )


def test_refresh_jax_reads_the_rocm_page_first_and_the_index_where_the_page_lacks_a_release(
    runner: Runner, index_standins: Path, tmp_path: Path
) -> None:
    code, _stdout, stderr = _refresh(runner, index_standins, tmp_path / "page")
    assert code == 1, stderr  # 9.0.0 rocm7's gfx list, as in the page-only case
    from_page = _releases(tmp_path / "page")["9.1.0"].variant("rocm7")
    assert from_page is not None and from_page.find_links == ROCM_PAGE and from_page.rocm == Version("7.9")
    code, _stdout, stderr = _refresh(
        runner, index_standins, tmp_path / "other", "--rocm-find-links", OTHER_ROCM_PAGE
    )
    assert code == 1, stderr
    releases = _releases(tmp_path / "other")
    from_index = releases["9.1.0"].variant("rocm7")
    assert from_index is not None and from_index.find_links is None, "the page has no 9.1.0 plugin"
    assert from_index.rocm == Version("7.12")
    kept = releases["9.0.0"].variant("rocm7")
    assert kept is not None and kept.find_links == ROCM_PAGE, "the file's, kept (the other page's differs)"
    assert "the build was read from https://repo.radeon.com/rocm/manylinux/rocm-rel-7.10/" in stderr


def test_refresh_jax_archs_carry_carries_the_aarch64_arch_list_and_the_gfx_list(
    runner: Runner, standins: Path, tmp_path: Path
) -> None:
    code, _stdout, stderr = _refresh(runner, standins, tmp_path / "out", "--archs", "carry")
    assert code == 0, stderr
    new = _releases(tmp_path / "out")["9.1.0"]
    arm = new.on_platform(AARCH64).variant("cuda12")
    assert arm is not None and AARCH64 in arm.platforms and [str(a) for a in arm.archs] == JAX12
    assert arm.unconfirmed == (
        "archs carried over from 9.0.0 cuda12 (linux_aarch64): the wheels were not read (--archs carry)"
    )
    rocm7 = new.variant("rocm7")
    assert rocm7 is not None and list(rocm7.gfx) == BASE_GFX
    assert rocm7.unconfirmed == "gfx carried over from 9.0.0 rocm7: the wheels were not read (--archs carry)"


def test_refresh_jax_reads_the_rocm_page_named_and_says_where_it_differs(
    runner: Runner, standins: Path, tmp_path: Path
) -> None:
    code, _stdout, stderr = _refresh(runner, standins, tmp_path / "out", "--rocm-find-links", OTHER_ROCM_PAGE)
    assert code == 1, stderr
    assert (
        f"contradiction: jax 9.0.0 rocm7: find_links: the catalog has {ROCM_PAGE}, the build was read "
        f"from {OTHER_ROCM_PAGE}" in stderr
    )
    assert "contradiction: jax 9.0.0 rocm7: rocm: the catalog has 7.9, the files read say 7.10" in stderr
    assert "gfx:" not in stderr, "the same gfx list on that page"
    assert _releases(tmp_path / "out")["9.1.0"].variant("rocm7") is None, "the page has no 9.1.0 plugin"


@pytest.mark.parametrize(
    ("args", "garbage", "said"),
    [
        ((), True, "jax: the ROCm find-links page https://repo.radeon.com/rocm/manylinux/rocm-rel-7.9/ "),
        (
            ("--rocm-find-links", "https://repo.radeon.com/rocm/manylinux/rocm-rel-8.0/"),
            False,
            "jax: the ROCm find-links page https://repo.radeon.com/rocm/manylinux/rocm-rel-8.0/ was not "
            "read (",
        ),
        (("--no-find-links",), False, None),
    ],
    ids=["not-a-page", "absent", "not-asked"],
)
def test_refresh_jax_without_its_rocm_page_proposes_no_rocm_build_and_reports_none_gone(
    runner: Runner, standins: Path, tmp_path: Path, args: tuple[str, ...], garbage: bool, said: str | None
) -> None:
    code, _stdout, stderr = _refresh(runner, standins, tmp_path / "out", *args, garbage_pages=garbage)
    assert code == 0, stderr
    if said is not None:
        lines = [line for line in stderr.splitlines() if said in line]
        assert len(lines) == 1 and "was not read" in lines[0], stderr
        assert not garbage or "not a page of links" in lines[0], lines[0]
    else:
        assert "find-links page" not in stderr
    assert "the catalog lists" not in stderr, "a page not read is no build gone"
    assert _releases(tmp_path / "out")["9.1.0"].variant("rocm7") is None
    assert _releases(tmp_path / "out")["9.0.0"].variant("rocm7") is not None


@pytest.mark.parametrize(
    ("framework", "url", "words"),
    [
        ("jax", "ftp://repo.radeon.com/rocm/", "--rocm-find-links: expected an http(s) URL"),
        ("torch", "https://repo.radeon.com/rocm/manylinux/rocm-rel-7.1/", "--rocm-find-links is for"),
    ],
)
def test_refresh_rocm_find_links_that_cannot_be_taken_is_exit_2(
    runner: Runner, tmp_path: Path, framework: str, url: str, words: str
) -> None:
    done = runner("catalog", "refresh", framework, "--rocm-find-links", url, "-o", tmp_path)
    assert done.returncode == 2, done.stderr
    assert words in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""


def test_the_writer_writes_back_every_shipped_jax_build_as_the_file_has_it(tmp_path: Path) -> None:
    """Each release of the shipped jax.toml written by refresh's writer loads back the same:
    its aarch64 builds' ``platforms`` and ``requires``, its ROCm build's ``find_links``."""
    from colabenv._util.resources import catalog_dir
    from colabenv.catalog.load import framework_releases, parse_document
    from colabenv.curation.refresh.writer import header, release_block
    from colabenv.errors import CatalogOverlayError

    path = catalog_dir() / "jax.toml"
    doc = parse_document(path, path.read_bytes(), CatalogOverlayError)
    shipped = framework_releases(doc, Framework.JAX)
    text = header(Framework.JAX) + "".join("\n" + release_block(r, False, {}) for r in shipped)
    again = framework_releases(parse_document(path, text.encode(), CatalogOverlayError), Framework.JAX)

    def facts(releases: list[Release]) -> list[tuple[object, ...]]:
        return [
            (r.version, v.name, v.platforms, v.requires, v.find_links, v.rocm, v.gfx, v.archs, v.pin_texts)
            for r in releases
            for v in r.variants
        ]

    assert facts(again) == facts(shipped)
    assert any(v.requires and v.find_links for r in again for v in r.variants), "the ROCm build"
    assert any(v.requires and AARCH64 in v.platforms for r in again for v in r.variants)
