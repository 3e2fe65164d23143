"""The catalog's free-threaded wheels (issue 36): which builds have ``cp313t``/``cp314t`` wheels,
each fact from a source that lists the files or, marked unconfirmed, from a release's
validation matrix (what upstream tested), and the loader's checks of the two keys."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from colabenv.catalog.load import load_catalog
from colabenv.errors import CatalogError
from colabenv.models import Framework
from tests.support.catalogs import DRIVERS, TORCH, write_catalog

CATALOG = load_catalog()
X86, ARM = "linux_x86_64", "linux_aarch64"

# (framework, release, variant, platform, Python, "confirmed" | "unconfirmed" | None)
FREE_THREADED = [
    # no source lists a free-threaded torch file before 2.7
    ("torch", "2.6.0", "cu126", X86, "3.13", None),
    # the cu128 index page of 2.7.0 (astral-sh/uv#13195) lists cp313t for both platforms
    ("torch", "2.7.0", "cu128", X86, "3.13", "confirmed"),
    # the PyPI files of 2.7.1 (astral-sh/uv#14237's lock): cp313t
    ("torch", "2.7.1", "cu126", X86, "3.13", "confirmed"),
    # test-infra's release/2.8 matrix tests 3.13t: tested, files not read
    ("torch", "2.8.0", "cu128", X86, "3.13", "unconfirmed"),
    ("torch", "2.8.0", "cu128", X86, "3.14", None),
    # nixpkgs' torch binary-hashes.nix: 2.9.1+cu126 cp313t and cp314t files with their hashes
    ("torch", "2.9.1", "cu126", X86, "3.13", "confirmed"),
    ("torch", "2.9.1", "cu126", X86, "3.14", "confirmed"),
    ("torch", "2.9.1", "cu128", X86, "3.14", "unconfirmed"),
    ("torch", "2.9.1", "cu130", ARM, "3.14", "unconfirmed"),
    ("torch", "2.11.0", "cpu", X86, "3.13", "unconfirmed"),
    # 3.13t dropped from the matrix of release/2.12 on
    ("torch", "2.12.0", "cu130", X86, "3.13", None),
    ("torch", "2.12.0", "cu130", X86, "3.14", "unconfirmed"),
    ("torch", "2.14.1", "cu130", ARM, "3.14", "unconfirmed"),
    # the PyPI files of 2.15.0: cp314t and cp315t
    ("torch", "2.15.0", "cu132", X86, "3.14", "confirmed"),
    ("torch", "2.15.0", "cu132", X86, "3.15", "confirmed"),
    # jaxlib 0.12.0's PyPI files: cp314t, cp315t; the CUDA plugins' t wheels are not known
    ("jax", "0.12.0", "cpu", X86, "3.14", "confirmed"),
    ("jax", "0.12.0", "cuda12", X86, "3.14", None),
    ("jax", "0.11.2", "cpu", X86, "3.14", None),
    ("tensorflow", "2.20.0", "cpu", X86, "3.13", None),
]


@pytest.mark.parametrize(
    ("framework", "version", "name", "platform", "python", "expected"),
    FREE_THREADED,
    ids=[f"{f}-{v}-{n}-{p}-{py}t" for f, v, n, p, py, _ in FREE_THREADED],
)
def test_free_threaded_wheels_are_recorded_as_their_source_lists_them(
    framework: str, version: str, name: str, platform: str, python: str, expected: str | None
) -> None:
    release = CATALOG.release(Framework(framework), Version(version))
    assert release is not None
    variant = release.on_platform(platform).variant(name)
    assert variant is not None
    assert platform in variant.platforms or variant.is_cpu
    ranged = variant.free_threaded
    has = ranged is not None and ranged.contains(Version(python)) and release.python.contains(Version(python))
    if expected is None:
        assert not has
        return
    assert has, variant.free_threaded
    if expected == "confirmed":
        assert variant.free_threaded_unconfirmed is None
    else:
        reason = variant.free_threaded_unconfirmed
        assert reason is not None and "validation matrix" in reason, reason


def test_every_free_threaded_fact_has_its_source_and_no_abi3_stands_for_one() -> None:
    for release in CATALOG.releases:
        for variant in release.variants:
            if variant.free_threaded is None:
                assert variant.free_threaded_unconfirmed is None
                continue
            sourced = "free-threaded wheels:" in variant.source.text or variant.free_threaded_unconfirmed
            assert sourced, (release.version, variant.name)
            assert not any(spec.version < "3.13" for spec in variant.free_threaded if ">" in spec.operator)


def _overlay(tmp_path: Path, variant_lines: str) -> Path:
    release = TORCH.replace('name = "cu124"\n', f'name = "cu124"\n{variant_lines}', 1)
    return write_catalog(tmp_path, drivers=DRIVERS, torch=release)


@pytest.mark.parametrize(
    ("lines", "words"),
    [
        ('free_threaded_unconfirmed = "tested only"\n', "free_threaded_unconfirmed: only with free_threaded"),
        ('free_threaded = ">=3.13"\nfree_threaded_unconfirmed = ""\n', "free_threaded_unconfirmed"),
        ('free_threaded = "3.13t"\n', "free_threaded"),
    ],
)
def test_a_malformed_free_threaded_entry_is_a_catalog_error(tmp_path: Path, lines: str, words: str) -> None:
    with pytest.raises(CatalogError, match=words):
        load_catalog(_overlay(tmp_path, lines))


def test_a_free_threaded_entry_loads_with_its_reason(tmp_path: Path) -> None:
    lines = 'free_threaded = ">=3.13"\nfree_threaded_unconfirmed = "tested, not read"\n'
    directory = _overlay(tmp_path, lines)
    (release,) = [r for r in load_catalog(directory).releases if r.framework is Framework.TORCH]
    variant = release.variant("cu124")
    assert variant is not None and variant.free_threaded is not None
    assert variant.free_threaded.contains("3.13") and variant.free_threaded_unconfirmed == "tested, not read"
