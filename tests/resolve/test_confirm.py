"""The resolver handed what the indexes serve (``IndexFacts``): the catalog proposes, the index
disposes. Pure: the facts are made here, as the application layer makes them from pages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from colabenv.catalog.load import shipped_catalog
from colabenv.errors import ResolutionError
from colabenv.models.availability import IndexFacts, IndexPage, IndexRequires, find_links_key
from colabenv.profile.load import load_profile
from colabenv.resolve.resolver import resolve
from tests.support.targets import nvidia_target

CU130 = "https://download.pytorch.org/whl/cu130"
CU132 = "https://download.pytorch.org/whl/cu132"
TAGS = "cp312 on linux_x86_64"


def _h100_580():  # type: ignore[no-untyped-def]
    return nvidia_target("580.65.06", "13.0", ("9.0",), "3.12")


def _profile(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "p.toml"
    path.write_text(f'name = "p"\n{body}')
    return path


def _facts(*pages: IndexPage, notes: tuple[str, ...] = ()) -> IndexFacts:
    return IndexFacts(TAGS, pages, notes)


def _page(index: str | None, project: str, *versions: str) -> IndexPage:
    return IndexPage(index, project, frozenset(versions), frozenset(versions))  # type: ignore[arg-type]


def test_an_unconfirmed_build_the_index_serves_is_taken_and_says_so(tmp_path: Path) -> None:
    profile = load_profile(_profile(tmp_path, '[frameworks]\ntorch = "*"\n'))
    before = resolve(profile, _h100_580(), shipped_catalog())
    assert before.choices[0].variant == "cu132"  # cu130 is unconfirmed in the catalog
    facts = _facts(_page(CU130, "torch", "2.15.0+cu130"), _page(CU132, "torch", "2.15.0+cu132"))
    resolution = resolve(profile, _h100_580(), shipped_catalog(), facts=facts)
    choice = resolution.choices[0]
    assert (str(choice.release), choice.variant) == ("2.15.0", "cu130")
    assert "torch==2.15.0+cu130" in choice.requirements
    assert "confirmed by the index just now" in choice.reason
    assert not any("is unconfirmed" in w for w in resolution.warnings), resolution.warnings


def test_a_build_whose_file_the_index_lacks_is_passed_over_naming_the_file(tmp_path: Path) -> None:
    profile = load_profile(_profile(tmp_path, '[frameworks]\ntorch = "*"\n'))
    facts = _facts(_page(CU132, "torch", "2.14.1+cu132"), _page(CU130, "torch", "2.14.1+cu130"))
    resolution = resolve(profile, _h100_580(), shipped_catalog(), facts=facts)
    choice = resolution.choices[0]
    assert str(choice.release) == "2.14.1", choice
    assert (
        f"passed over torch 2.15.0 cu132 (and 1 more): the index {CU132} has no file "
        f"torch-2.15.0+cu132-*.whl for {TAGS}" in choice.reason
    ), choice.reason


def test_nothing_left_on_the_index_is_exit_3_naming_the_file(tmp_path: Path) -> None:
    profile = load_profile(
        _profile(tmp_path, '[frameworks]\ntorch = { version = "==2.15.0", variant = "cu132" }\n')
    )
    facts = _facts(_page(CU132, "torch", "2.14.1+cu132"))
    with pytest.raises(ResolutionError) as caught:
        resolve(profile, _h100_580(), shipped_catalog(), facts=facts)
    assert caught.value.exit_code == 3
    assert "no file torch-2.15.0+cu132-*.whl" in str(caught.value)


def test_a_project_the_index_does_not_have_passes_every_build_of_it_over(tmp_path: Path) -> None:
    profile = load_profile(
        _profile(tmp_path, '[frameworks]\ntorch = { version = "==2.15.0", variant = "cu132" }\n')
    )
    facts = _facts(IndexPage(CU132, "torch", found=False))  # type: ignore[arg-type]
    with pytest.raises(ResolutionError, match=re.escape("has no file torch-2.15.0")):
        resolve(profile, _h100_580(), shipped_catalog(), facts=facts)


def test_a_companion_the_index_lacks_passes_the_build_over(tmp_path: Path) -> None:
    profile = load_profile(_profile(tmp_path, '[frameworks]\ntorch = { version = "*", torchvision = "*" }\n'))
    facts = _facts(_page(CU132, "torch", "2.15.0+cu132"), _page(CU132, "torchvision"))
    resolution = resolve(profile, _h100_580(), shipped_catalog(), facts=facts)
    assert str(resolution.choices[0].release) != "2.15.0"
    assert "torchvision-0.29.2+cu132-*.whl" in resolution.choices[0].reason


def test_a_plain_pin_the_index_lacks_is_exit_3_and_notes_are_warnings(tmp_path: Path) -> None:
    profile = load_profile(_profile(tmp_path, '[packages]\nrequirements = ["einops==0.8.1"]\n'))
    with pytest.raises(
        ResolutionError, match=re.escape("einops==0.8.1: the default index has no file einops-0.8.1")
    ):
        resolve(profile, _h100_580(), shipped_catalog(), facts=_facts(_page(None, "einops", "0.8.0")))
    noted = _facts(_page(None, "einops", "0.8.1"), notes=("index x: unreachable (connection refused)",))
    resolution = resolve(profile, _h100_580(), shipped_catalog(), facts=noted)
    assert "not checked against the index: index x: unreachable (connection refused)" in resolution.warnings


def test_no_facts_is_the_catalog_alone(tmp_path: Path) -> None:
    profile = load_profile(_profile(tmp_path, '[frameworks]\ntorch = "*"\n'))
    plain = resolve(profile, _h100_580(), shipped_catalog())
    assert resolve(profile, _h100_580(), shipped_catalog(), facts=IndexFacts()) == plain


def test_what_a_companions_metadata_requires_of_the_framework(tmp_path: Path) -> None:
    """A requirement admitting the chosen torch by its public version or with its local label
    agrees; one on another project says nothing of torch; one admitting neither passes the
    build over, naming the requirement."""
    profile = load_profile(
        _profile(tmp_path, '[frameworks]\ntorch = { version = "==2.15.0", torchvision = "*" }\n')
    )

    def facts(*requires: str) -> IndexFacts:
        pages = (_page(CU132, "torch", "2.15.0+cu132"), _page(CU132, "torchvision", "0.29.2+cu132"))
        read = IndexRequires(CU132, "torchvision", "0.29.2+cu132", requires)  # type: ignore[arg-type]
        return IndexFacts(TAGS, pages, (), (read,))

    for agrees in ("torch==2.15.0", "torch>=2.15,<2.16", "torch==2.15.0+cu132", "numpy<2", "Torch~=2.15.0"):
        choice = resolve(profile, _h100_580(), shipped_catalog(), facts=facts(agrees)).choices[0]
        assert (str(choice.release), choice.variant) == ("2.15.0", "cu132"), agrees
    with pytest.raises(ResolutionError) as caught:
        resolve(profile, _h100_580(), shipped_catalog(), facts=facts("numpy", "torch==2.15.0+cu130"))
    assert caught.value.exit_code == 3
    assert (
        "the index's torchvision 0.29.2 requires torch==2.15.0+cu130; the catalog pairs it with torch 2.15.0"
        in str(caught.value)
    )


def test_a_build_is_confirmed_by_every_file_it_pins_not_by_its_first_alone() -> None:
    """A page not read (None) or a file not served leaves a build unconfirmed, even where the
    framework's own file is served (jax's is pure Python on every platform)."""
    from colabenv.resolve.confirm import confirmed

    both = ["jax==0.8.0", "jax-cuda13-plugin==0.8.0"]
    jax_only = _facts(_page(None, "jax", "0.8.0"))
    assert confirmed(jax_only, None, both[:1])
    assert not confirmed(jax_only, None, both)  # the plugin's page was not read
    assert not confirmed(_facts(_page(None, "jax", "0.8.0"), _page(None, "jax-cuda13-plugin")), None, both)
    assert confirmed(
        _facts(_page(None, "jax", "0.8.0"), _page(None, "jax-cuda13-plugin", "0.8.0")), None, both
    )
    page = "https://example.org/wheels/"
    on_page = _facts(_page(None, "jax", "0.8.0"), _page(find_links_key(page), "jax-cuda13-plugin", "0.8.0"))
    assert not confirmed(on_page, None, both)
    assert confirmed(on_page, None, both, page)
