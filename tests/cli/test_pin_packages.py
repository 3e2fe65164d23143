"""``colabenv pin`` pins the CUDA packages ``[frameworks]`` names as it pins the frameworks: a
generic name (``cupy``) takes the release of the distribution the lock holds (``cupy-cuda12x``),
a table keeps its build, and sections that disagree on one are refused."""

from __future__ import annotations

from pathlib import Path

from packaging.utils import canonicalize_name

from colabenv.lock.content import (
    Lock,
    LockedFile,
    LockedPackage,
    LockFile,
    LockHeader,
    LockSection,
    LockTarget,
)
from colabenv.lock.file import render_lock_file
from colabenv.models import Framework, LockedFramework
from colabenv.profile.load import load_profile
from tests.support.fixtures import Runner

PROFILE = """name = "team"

[frameworks]
torch = ">=2.8"
# the CUDA packages
cupy = "*"
xformers = { version = ">=0.0.31", variant = "cu128" }
"""


def _section(name: str, cupy: str, target: LockTarget, profile_hash: str) -> LockSection:
    header = LockHeader(
        colabenv_version="0.1.0",
        profile_name="team",
        profile_hash=profile_hash,
        target=target,
        frameworks=(LockedFramework(Framework.TORCH, "2.8.0", "cu128", None),),
        resolver="uv 0.13.9",
        schema=3,
    )
    pins = {"torch": "2.8.0+cu128", "cupy-cuda12x": cupy, "xformers": "0.0.32.post2+cu128", "numpy": "2.3.1"}
    packages = tuple(
        LockedPackage(canonicalize_name(n), v, (LockedFile(str(i) * 64),))
        for i, (n, v) in enumerate(pins.items())
    )
    return LockSection(name, Lock(header, packages))


def _write(tmp_path: Path, second_cupy: str) -> tuple[Path, Path]:
    profile = tmp_path / "team.toml"
    profile.write_text(PROFILE)
    digest = load_profile(profile).content_hash
    t4 = LockTarget("550.54.15", None, "12.4", ("7.5",), "3.12", "linux_x86_64")
    a100 = LockTarget("550.54.15", None, "12.4", ("8.0",), "3.12", "linux_x86_64")
    lock = tmp_path / "team.lock"
    sections = (_section("t4", "14.2.0", t4, digest), _section("a100", second_cupy, a100, digest))
    lock.write_text(render_lock_file(LockFile(sections)))
    return profile, lock


def test_pin_pins_the_cuda_packages_by_the_distribution_the_lock_holds(
    runner: Runner, tmp_path: Path
) -> None:
    profile, lock = _write(tmp_path, "14.2.0")
    result = runner("pin", profile, "--lock", lock)
    assert result.returncode == 0, result.stderr
    text = profile.read_text()
    assert 'torch = "==2.8.0"' in text
    assert 'cupy = "==14.2.0"' in text
    assert 'xformers = { version = "==0.0.32.post2", variant = "cu128" }' in text
    assert "# the CUDA packages" in text
    assert "numpy" not in text
    assert "frameworks.cupy = '==14.2.0'" in result.stderr
    again = runner("pin", profile, "--lock", lock)
    assert again.returncode == 0 and profile.read_text() == text
    assert "already pinned" in again.stderr


def test_pin_refuses_sections_that_disagree_on_a_cuda_package(runner: Runner, tmp_path: Path) -> None:
    profile, lock = _write(tmp_path, "13.6.0")
    result = runner("pin", profile, "--lock", lock)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "(cupy ==14.2.0 in t4, ==13.6.0 in a100)" in result.stderr
    assert profile.read_text() == PROFILE
