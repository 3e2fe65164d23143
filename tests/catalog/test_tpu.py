"""``profiles/catalog/tpu.toml``: every entry checked, a table of the facts it records, and the
loader's refusals."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv._util.resources import catalog_dir
from colabenv.catalog.load import load_catalog, load_tpu, shipped_catalog, shipped_tpu
from colabenv.errors import CatalogError
from colabenv.models import Framework, TpuBuild

FACTS = shipped_tpu()
BUILDS = [pytest.param(b, id=f"{b.framework}-{b.release}") for b in FACTS.builds]
CATALOG = shipped_catalog()


def test_the_shipped_catalog_carries_the_tpu_facts_and_detection_does_not() -> None:
    assert CATALOG.tpu == FACTS == load_tpu()
    assert shipped_catalog(()).tpu.builds == ()
    assert [g.name for g in FACTS.generations] == ["v2", "v3", "v4", "v5e", "v5p", "v6e", "tpu7x"]


@pytest.mark.parametrize("build", BUILDS)
def test_every_build_names_a_catalog_release_and_a_source(build: TpuBuild) -> None:
    release = CATALOG.release(build.framework, build.release)
    assert release is not None
    assert build.source.text
    if build.base_variant is not None:
        assert release.variant(build.base_variant) is not None
    if build.python is not None:
        assert any(
            build.python.contains(f"3.{minor}") and release.python.contains(f"3.{minor}")
            for minor in range(8, 16)
        )
    for text in build.requires:
        assert Requirement(text).name.startswith(("libtpu", "torch-xla"))


@pytest.mark.parametrize("build", BUILDS)
def test_a_find_links_page_goes_with_libtpu_nightly_only(build: TpuBuild) -> None:
    nightly = any(Requirement(t).name == "libtpu-nightly" for t in build.requires)
    assert nightly == (build.find_links is not None)


def _build(framework: Framework, version: str) -> TpuBuild:
    build = FACTS.build(framework, Version(version))
    assert build is not None, f"{framework} {version}"
    return build


@pytest.mark.parametrize(
    ("framework", "version", "requires", "find_links"),
    [
        # jax: the tpu extra's libtpu, from a find-links page up to 0.5.0, from PyPI after
        (Framework.JAX, "0.4.26", ["libtpu-nightly==0.1.dev20240403"], True),
        (Framework.JAX, "0.5.0", ["libtpu-nightly==0.1.dev20241010+nightly.cleanup", "libtpu==0.0.8"], True),
        (Framework.JAX, "0.5.2", ["libtpu==0.0.10.*"], False),
        (Framework.JAX, "0.6.2", ["libtpu==0.0.17.*"], False),
        (Framework.JAX, "0.7.2", ["libtpu==0.0.23"], False),
        (Framework.JAX, "0.8.3", ["libtpu==0.0.32.*"], False),
        (Framework.JAX, "0.11.2", ["libtpu==0.0.48.*"], False),
        (Framework.JAX, "0.12.0", ["libtpu==0.0.50.*"], False),
        (Framework.JAX, "0.12.0.1", ["libtpu==0.0.50.*"], False),
        # torch: torch_xla of the same minor
        (Framework.TORCH, "2.1.2", ["torch-xla[tpu]==2.1.0", "libtpu-nightly==0.1.dev20230825"], True),
        (
            Framework.TORCH,
            "2.6.0",
            ["torch-xla[tpu]==2.6.1", "libtpu==0.0.7.1", "libtpu-nightly==0.1.dev20241010+nightly.cleanup"],
            True,
        ),
        (Framework.TORCH, "2.7.1", ["torch-xla[tpu]==2.7.0", "libtpu==0.0.11.1"], False),
        (Framework.TORCH, "2.8.0", ["torch-xla[tpu]==2.8.1", "libtpu==0.0.17"], False),
        (Framework.TORCH, "2.9.0", ["torch-xla[tpu]==2.9.0", "libtpu==0.0.21"], False),
    ],
)
def test_libtpu_pairing(framework: Framework, version: str, requires: list[str], find_links: bool) -> None:
    build = _build(framework, version)
    assert list(build.requires) == requires
    assert (build.find_links is not None) == find_links


@pytest.mark.parametrize(
    ("framework", "version", "generation", "runs"),
    [
        (Framework.JAX, "0.4.31", "v5e", True),
        (Framework.JAX, "0.4.31", "v6e", False),  # v6e's PCI id came with jax 0.4.32
        (Framework.JAX, "0.4.35", "v6e", True),
        (Framework.JAX, "0.6.2", "tpu7x", False),  # TPU7x came with jax 0.7.0
        (Framework.JAX, "0.7.0", "tpu7x", True),
        (Framework.JAX, "0.11.2", "v2", True),
        (Framework.JAX, "0.12.0.1", "tpu7x", True),
        (Framework.JAX, "0.12.0.1", "v6e", True),
        (Framework.TORCH, "2.1.0", "v5p", False),
        (Framework.TORCH, "2.2.0", "v5p", True),
        (Framework.TORCH, "2.4.1", "v6e", False),
        (Framework.TORCH, "2.5.0", "v6e", True),
        (Framework.TORCH, "2.8.0", "tpu7x", False),
        (Framework.TORCH, "2.9.0", "tpu7x", True),
    ],
)
def test_generations(framework: Framework, version: str, generation: str, runs: bool) -> None:
    assert (generation in _build(framework, version).generations) == runs


@pytest.mark.parametrize(
    ("version", "python"),
    [
        ("2.1.0", ">=3.8,<3.12"),
        ("2.4.0", ">=3.9,<3.12"),
        ("2.8.0", ">=3.10,<3.14"),
        ("2.9.0", ">=3.10,<3.13"),
    ],
)
def test_torch_xla_python_ranges(version: str, python: str) -> None:
    assert _build(Framework.TORCH, version).python == SpecifierSet(python)


def test_the_newest_jax_release_has_a_tpu_build() -> None:
    # jax's tpu extra is in every release the catalog lists from 0.4.26 on: a newer jax.toml
    # release without a build here means tpu.toml was not brought along with it
    newest = max(r.version for r in CATALOG.releases_of(Framework.JAX))
    assert FACTS.build(Framework.JAX, newest) is not None, f"jax {newest} has no TPU build"


def test_torch_has_no_tpu_build_after_torch_xla_2_9() -> None:
    for version in ("2.9.1", "2.10.0", "2.14.1"):
        assert FACTS.build(Framework.TORCH, Version(version)) is None
    assert "2.1.0 to 2.9.0" in FACTS.missing(Framework.TORCH)


def test_tensorflow_has_no_tpu_build_and_says_why() -> None:
    assert not any(b.framework is Framework.TENSORFLOW for b in FACTS.builds)
    reason = FACTS.missing(Framework.TENSORFLOW)
    assert "tensorflow-tpu" in reason and 'variant = "cpu"' in reason


@pytest.mark.parametrize(
    ("pci", "names"),
    [("0x0027", ["v2", "v3"]), ("0x0063", ["v5e"]), ("0x006f", ["v6e"]), ("0x0042", [])],
)
def test_pci_ids(pci: str, names: list[str]) -> None:
    assert [g.name for g in FACTS.generations if pci in g.pci_device_ids] == names


# ---------------------------------------------------------------------------------------------
# The loader refuses a broken tpu.toml, naming the key


def _catalog_with(tmp_path: Path, old: str, new: str) -> Path:
    folder = tmp_path / "catalog"
    shutil.copytree(catalog_dir(), folder)
    path = folder / "tpu.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return folder


@pytest.mark.parametrize(
    ("old", "new", "key", "problem"),
    [
        (
            'generations = "jax_0_4_26"',
            'generations = "nope"',
            "build[0].generations",
            "no list named 'nope'",
        ),
        ('release = "0.4.26"', 'release = "0.4.27"', "build jax 0.4.27", "no release 0.4.27"),
        (
            'requires = ["libtpu-nightly==0.1.dev20240403"]',
            'requires = ["libtpu @ https://x"]',
            "build[0].requires",
            "is not a requirement",
        ),
        (
            'requires = ["libtpu-nightly==0.1.dev20240403"]',
            "requires = []",
            "build[0].requires",
            "expected the requirements",
        ),
        (
            'find_links = "https://storage.googleapis.com/jax-releases/libtpu_releases.html"',
            'find_links = "http://example.org/"',
            "build[0].find_links",
            "scheme 'http' not allowed (use https)",
        ),
        (
            # the rule every catalog URL keeps, not only its scheme
            'find_links = "https://storage.googleapis.com/jax-releases/libtpu_releases.html"',
            'find_links = "https://user:secret@example.org/libtpu.html"',
            "build[0].find_links",
            "${VAR} references",
        ),
        (
            'pci_device_ids = ["0x0063"]',
            'pci_device_ids = ["63"]',
            "generation[3].pci_device_ids",
            "PCI device ids",
        ),
        ('type_prefixes = ["v6e"]', 'type_prefixes = ["v6e", "v5litepod"]', "generation", "listed twice"),
        (
            "tensorcores_per_chip = 1",
            "tensorcores_per_chip = 0",
            "tensorcores_per_chip",
            "whole number from 1 to 8",
        ),
        ('variant = "cpu"', 'variant = "cu999"', "build torch 2.1.0", "no variant 'cu999'"),
        ('framework = "tensorflow"', 'framework = "jax"', "unsupported[0].framework", "has TPU builds"),
        ("schema = 1", "schema = 2", "schema", "expected schema = 1"),
    ],
)
def test_broken_tpu_toml(tmp_path: Path, old: str, new: str, key: str, problem: str) -> None:
    folder = _catalog_with(tmp_path, old, new)
    with pytest.raises(CatalogError) as raised:
        load_catalog(folder)
    message = str(raised.value)
    assert "tpu.toml" in message and key in message and problem in message


def test_a_catalog_folder_without_tpu_toml_has_no_tpu_builds(tmp_path: Path) -> None:
    folder = tmp_path / "catalog"
    shutil.copytree(catalog_dir(), folder)
    (folder / "tpu.toml").unlink()
    assert load_catalog(folder).tpu.builds == ()
