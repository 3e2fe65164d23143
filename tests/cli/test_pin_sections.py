"""``colabenv pin`` with a lock of several targets: the profile is pinned where the sections agree
on every framework version, and refused (exit 2, nothing written) where they do not."""

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

PROFILE = 'name = "team"\n\n[frameworks]\n# the notebook and CI\ntorch = ">=2.5"\n'


def _section(name: str, torch: str, target: LockTarget, profile_hash: str) -> LockSection:
    version, _, variant = torch.partition("+")
    header = LockHeader(
        colabenv_version="0.1.0",
        profile_name="team",
        profile_hash=profile_hash,
        target=target,
        frameworks=(LockedFramework(Framework.TORCH, version, variant, None),),
        resolver="uv 0.13.9",
        schema=3,
    )
    return LockSection(
        name, Lock(header, (LockedPackage(canonicalize_name("torch"), torch, (LockedFile("1" * 64),)),))
    )


def _write(tmp_path: Path, cpu_torch: str) -> tuple[Path, Path]:
    profile = tmp_path / "team.toml"
    profile.write_text(PROFILE)
    digest = load_profile(profile).content_hash
    gpu = LockTarget("550.54.15", None, "12.4", ("7.5",), "3.12", "linux_x86_64")
    cpu = LockTarget(None, None, None, (), "3.12", "linux_x86_64")
    lock = tmp_path / "team.lock"
    sections = (_section("nb", "2.6.0+cu124", gpu, digest), _section("ci", cpu_torch, cpu, digest))
    lock.write_text(render_lock_file(LockFile(sections)))
    return profile, lock


def test_pin_where_the_sections_agree(runner: Runner, tmp_path: Path) -> None:
    profile, lock = _write(tmp_path, "2.6.0+cpu")
    result = runner("pin", profile, "--lock", lock)
    assert result.returncode == 0, result.stderr
    assert 'torch = "==2.6.0"' in profile.read_text()
    assert "# the notebook and CI" in profile.read_text()


def test_pin_refuses_sections_that_disagree(runner: Runner, tmp_path: Path) -> None:
    profile, lock = _write(tmp_path, "2.8.0+cpu")
    result = runner("pin", profile, "--lock", lock)
    assert result.returncode == 2
    assert result.stdout == ""
    assert (
        "its targets lock different framework versions (torch ==2.6.0 in nb, ==2.8.0 in ci)" in result.stderr
    )
    assert profile.read_text() == PROFILE
