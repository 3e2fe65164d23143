"""The staleness notice of ``colabenv lock``: the framework pages a lock reads anyway say when
the index has a release newer than the catalog's that the profile admits."""

from __future__ import annotations

from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.catalog.load import shipped_catalog
from colabenv.index.client import IndexFile
from colabenv.lock.make import KnownRelease, make_lock, staleness_notices
from colabenv.models import ComputeCapability, Framework, NvidiaTarget, Target
from colabenv.profile.load import load_profile
from colabenv.resolve.resolver import resolve
from tests.support.fixtures import *  # noqa: F403
from tests.support.index import LocalIndex
from tests.support.isolation import clean_env
from tests.support.locking import PYTHON, write_jax_profile


def _files(*names: str) -> tuple[IndexFile, ...]:
    return tuple(IndexFile(name, f"https://i.example/{name}", None) for name in names)


def test_a_newer_release_the_profile_admits_is_named_with_the_command() -> None:
    seen = {
        Framework.TORCH: _files(
            "torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.16.0-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.17.0rc1-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.16.1+cu132-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.18.0.tar.gz",
            "not a wheel.whl",
        )
    }
    known = [KnownRelease(Framework.TORCH, SpecifierSet(">=2.14"), Version("2.15.0"))]
    assert staleness_notices(seen, known) == [
        "torch 2.16.1 is on the index but not in the catalog: run `colabenv catalog refresh torch`"
    ]
    narrow = [KnownRelease(Framework.TORCH, SpecifierSet("<2.16"), Version("2.15.0"))]
    assert staleness_notices(seen, narrow) == []
    current = [KnownRelease(Framework.TORCH, SpecifierSet(), Version("2.16.1"))]
    assert staleness_notices(seen, current) == []
    assert staleness_notices({}, known) == []


def test_lock_says_so_in_one_line_and_locks_all_the_same(tmp_path: Path, default_index: LocalIndex) -> None:
    profile = write_jax_profile(tmp_path, default_index)
    loaded = load_profile(profile)
    target = Target(
        NvidiaTarget(Version("550.54.15"), Version("12.4"), (ComputeCapability(7, 5),)), Version(PYTHON)
    )
    resolution = resolve(loaded, target, shipped_catalog([Framework.JAX]))
    assert str(resolution.choices[0].release) == "0.5.3"
    said: list[str] = []
    behind = [KnownRelease(Framework.JAX, SpecifierSet(">=0.5,<0.6"), Version("0.5.2"))]
    lock = make_lock(
        resolution,
        resolver="uv",
        colabenv_version="0.1.0",
        known=behind,
        notice=said.append,
        environ=clean_env(UV_HTTP_RETRIES="0"),
    )
    assert lock.version_of("jax") == "0.5.3"
    assert said == ["jax 0.5.3 is on the index but not in the catalog: run `colabenv catalog refresh jax`"]
    said.clear()
    current = [KnownRelease(Framework.JAX, SpecifierSet(">=0.5,<0.6"), Version("0.5.3"))]
    make_lock(
        resolution,
        resolver="uv",
        colabenv_version="0.1.0",
        known=current,
        notice=said.append,
        environ=clean_env(UV_HTTP_RETRIES="0"),
    )
    assert said == []


def test_known_releases_are_the_catalogs_newest_of_each_framework_asked_for() -> None:
    from pathlib import Path

    from colabenv.catalog.load import shipped_catalog
    from colabenv.lock.make import known_releases
    from colabenv.profile.load import load_profile_text

    profile = load_profile_text(
        'name = "p"\n[frameworks]\ntorch = ">=2.8"\ntensorflow = "*"\n', Path("p.toml")
    )
    catalog = shipped_catalog([Framework.TORCH])
    (torch,) = known_releases(profile, catalog)
    newest = max(r.version for r in catalog.releases_of(Framework.TORCH))
    assert (torch.framework, str(torch.specifier), torch.newest) == (Framework.TORCH, ">=2.8", newest)
