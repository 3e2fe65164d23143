"""The CUDA packages on a free-threaded Python (issue 36): a build is eligible only where the
catalog names its free-threaded wheels (``free_threaded``, the frameworks' rule), one known
from what upstream tested alone is unconfirmed there, and any other is exit 3 naming it, never
swapped for another."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from colabenv.catalog.load import catalog_for
from colabenv.errors import ResolutionError
from colabenv.models import Resolution
from colabenv.profile.load import load_profile
from colabenv.resolve.resolver import resolve
from tests.support.package_entries import (
    build_entry,
    package_entry,
    packages_file,
    release_entry,
    write_packages,
)
from tests.support.targets import nvidia_target

T4 = ("550.54.15", "12.4", ("7.5",))


def _resolve(
    tmp_path: Path, frameworks: str, python: str, *, overlay: str = "", allow_unconfirmed: bool = False
) -> Resolution:
    """``frameworks`` resolved for a T4 with Python ``python`` (``3.14t``: free-threaded)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    environ: dict[str, str] = {}
    if overlay:
        environ["COLABENV_CATALOG"] = str(write_packages(tmp_path / "catalog", packages_file(overlay)))
    path = tmp_path / "team.toml"
    path.write_text(f'name = "team"\n[frameworks]\n{textwrap.dedent(frameworks)}')
    profile = load_profile(path)
    target = nvidia_target(*T4, python.rstrip("t"))
    target = dataclasses.replace(target, free_threaded=python.endswith("t"))
    return resolve(
        profile, target, catalog_for(profile, environ, target=target), allow_unconfirmed=allow_unconfirmed
    )


def _refusal(tmp_path: Path, frameworks: str, python: str, **kw: object) -> str:
    with pytest.raises(ResolutionError) as caught:
        _resolve(tmp_path, frameworks, python, **kw)  # type: ignore[arg-type]
    assert caught.value.exit_code == 3
    return str(caught.value)


def _picked(resolution: Resolution) -> tuple[str, str, str]:
    (choice,) = resolution.cuda_packages
    return str(choice.release), choice.variant, choice.requirements[0]


def test_cupy_on_3_14t_is_the_release_whose_cp314t_wheels_the_index_lists(tmp_path: Path) -> None:
    assert _picked(_resolve(tmp_path, 'cupy = "*"', "3.14t")) == ("14.2.0", "cuda12", "cupy-cuda12x==14.2.0")


def test_a_package_release_without_t_wheels_is_exit_3_naming_the_build(tmp_path: Path) -> None:
    # CuPy has cp314t wheels from 14.1 and no cp313t ones
    text = _refusal(tmp_path / "a", 'cupy = "<14.1"', "3.14t")
    assert "frameworks.cupy: no release of cupy satisfying <14.1 runs on the target" in text
    assert "cuda12 has no free-threaded wheel (cp314t) in the catalog" in text
    text = _refusal(tmp_path / "b", 'cupy = "*"', "3.13t")
    assert "cuda12 has no free-threaded wheel (cp313t) in the catalog" in text
    # a Python with the GIL is not held to them
    assert _picked(_resolve(tmp_path / "c", 'cupy = "<14.1"', "3.14"))[0] == "14.0.1"


def _team_ext(**free_threaded: str) -> str:
    build = build_entry("cu12", cuda="12.6", archs=["sm_75"], source="https://example.org/t", **free_threaded)  # type: ignore[arg-type]
    return package_entry("team-ext", release_entry("1.0", build), distribution="team-ext-cu{major}")


def test_a_package_builds_tested_t_wheels_are_taken_only_where_unconfirmed_builds_are_allowed(
    tmp_path: Path,
) -> None:
    overlay = _team_ext(free_threaded=">=3.13", free_threaded_unconfirmed="a validation matrix lists 3.14t")
    text = _refusal(tmp_path / "a", 'team-ext = "*"', "3.14t", overlay=overlay)
    assert "cu12 is unconfirmed (free-threaded wheels: a validation matrix lists 3.14t)" in text
    resolution = _resolve(tmp_path / "b", 'team-ext = "*"', "3.14t", overlay=overlay, allow_unconfirmed=True)
    (choice,) = resolution.cuda_packages
    assert "unconfirmed (free-threaded wheels: a validation matrix lists 3.14t), allowed" in choice.reason
    # with the GIL, the build is as confirmed as its other facts
    resolution = _resolve(tmp_path / "c", 'team-ext = "*"', "3.14", overlay=overlay)
    (choice,) = resolution.cuda_packages
    assert "unconfirmed" not in choice.reason


def test_a_package_build_without_the_key_is_exit_3_on_a_free_threaded_python(tmp_path: Path) -> None:
    text = _refusal(tmp_path, 'team-ext = "*"', "3.14t", overlay=_team_ext())
    assert "cu12 has no free-threaded wheel (cp314t) in the catalog" in text
    confirmed = _resolve(tmp_path / "b", 'team-ext = "*"', "3.14t", overlay=_team_ext(free_threaded=">=3.14"))
    assert _picked(confirmed)[:2] == ("1.0", "cu12")
