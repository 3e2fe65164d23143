"""A lock is whole and fits its target (issue 11): `render --lock` refuses a lock made for
another host, a truncated or tampered lock is refused wherever it is read, and `lock -o` / `pin`
write through links and devices the way `-o` promises."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from colabenv.lock.file import read_lock
from tests.support.fixtures import *  # noqa: F403
from tests.support.index import LocalIndex
from tests.support.locking import PYTHON, T4, colabenv, lock_profile, write_profile

OTHER_PYTHON = "3.12" if PYTHON != "3.12" else "3.11"
H200 = ["--driver", "570.124.06", "--compute-capability", "9.0", "--python", OTHER_PYTHON]


@pytest.fixture
def locked(tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex) -> tuple[Path, Path]:
    """(profile, its requirements-format lock for a T4)."""
    profile = write_profile(tmp_path, default_index, pytorch_index)
    out = tmp_path / "team.lock"
    lock_profile(profile, out, "uv")
    return profile, out


def test_render_lock_for_its_own_target(locked: tuple[Path, Path]) -> None:
    profile, out = locked
    result = colabenv("render", profile, "--lock", out, *T4)
    assert result.returncode == 0, result.stderr
    assert "installs exactly the lockfile team.lock" in result.stdout
    assert "torch==2.6.0+cu124" in result.stdout


def test_render_lock_for_another_target_names_each_field(locked: tuple[Path, Path]) -> None:
    profile, out = locked
    result = colabenv("render", profile, "--lock", out, *H200)
    assert result.returncode == 2, result.stdout[-500:]
    assert result.stdout == ""
    message = result.stderr
    assert message.count("\n") == 1, message
    assert "team.lock" in message
    assert "driver 550.54.15 in the lock, 570.124.06 now" in message
    assert "compute capabilities 7.5 in the lock, 9.0 now" in message
    assert f"Python {PYTHON} in the lock, {OTHER_PYTHON} now" in message
    assert "CUDA 12.4 in the lock" in message
    assert "colabenv lock" in message
    cpu = colabenv("render", profile, "--lock", out, "--cpu", "--python", PYTHON)
    assert cpu.returncode == 2
    assert "driver 550.54.15 in the lock, none now" in cpu.stderr


def test_render_lock_of_a_changed_profile_is_refused(locked: tuple[Path, Path]) -> None:
    profile, out = locked
    profile.write_text(profile.read_text().replace('"requests>=2"', '"requests>=2", "six"'))
    result = colabenv("render", profile, "--lock", out, *T4)
    assert result.returncode == 2
    assert "the profile changed" in result.stderr and result.stdout == ""


def _cut_after_first_package(text: str) -> str:
    lines = text.splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line[:1].isalnum())
    end = first + 1
    while lines[end - 1].rstrip().endswith("\\"):
        end += 1
    return "".join(lines[:end])


def test_check_takes_the_lock_as_its_value_or_from_o(tmp_path: Path, locked: tuple[Path, Path]) -> None:
    """``lock PROFILE --check LOCK`` was refused (issue 34): the lock had to come by ``-o``."""
    profile, out = locked
    for argv in (("--check", out), ("--check", out, "-o", out), ("-o", out, "--check")):
        check = colabenv("lock", profile, *argv, *T4)
        assert check.returncode == 0, (argv, check.stdout, check.stderr)
        assert check.stdout == f"{out}: up to date with {profile.name}\n"
    other = colabenv("lock", profile, "--check", out, "-o", tmp_path / "other.lock", *T4)
    assert (other.returncode, other.stdout) == (2, "")
    assert "-o names another lock" in other.stderr
    missing = colabenv("lock", profile, "--check", *T4)
    assert missing.returncode == 2 and "--check LOCK or -o LOCK" in missing.stderr


def test_truncated_lock_is_refused_everywhere(tmp_path: Path, locked: tuple[Path, Path]) -> None:
    profile, out = locked
    truncated = tmp_path / "truncated.lock"
    truncated.write_text(_cut_after_first_package(out.read_text()))
    check = colabenv("lock", profile, "-o", truncated, "--check")
    assert check.returncode == 2, check.stdout
    assert "truncated.lock" in check.stderr
    assert "pins-sha256" in check.stderr
    render = colabenv("render", profile, "--lock", truncated, *T4)
    assert render.returncode == 2 and render.stdout == ""
    verify = colabenv("verify", "--lock", truncated)
    assert verify.returncode == 2, verify.stdout + verify.stderr
    assert "pins-sha256" in verify.stderr


def test_lock_that_does_not_satisfy_its_profile_is_refused(tmp_path: Path, locked: tuple[Path, Path]) -> None:
    """A lock whose body was replaced consistently (digest recomputed, as an editor could)
    still has to hold every requirement of the profile."""
    from colabenv.lock.content import Lock
    from colabenv.lock.file import render_lock

    profile, out = locked
    lock = read_lock(out)
    kept = tuple(p for p in lock.packages if p.name not in ("requests", "torchvision"))
    edited = tmp_path / "edited.lock"
    edited.write_text(render_lock(Lock(lock.header, kept, lock.index_url, lock.extra_index_urls)))
    check = colabenv("lock", profile, "-o", edited, "--check")
    assert check.returncode == 2, check.stdout
    assert "requests>=2" in check.stderr
    assert "torchvision" in check.stderr
    render = colabenv("render", profile, "--lock", edited, *T4)
    assert render.returncode == 2 and "requests>=2" in render.stderr


def test_pylock_with_an_injected_version_is_refused(
    tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    profile = write_profile(tmp_path, default_index, pytorch_index)
    out = tmp_path / "pylock.toml"
    made = colabenv("lock", profile, "-o", out, "--format", "pylock", *T4)
    assert made.returncode == 0, made.stderr
    text = out.read_text()
    assert 'version = "2.0.2"' in text
    out.write_text(
        text.replace('version = "2.0.2"', 'version = "2.0.2\\n--index-url https://evil.example/simple"', 1)
    )
    result = colabenv("render", profile, "--lock", out, *T4)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "evil.example" not in result.stdout
    assert "version" in result.stderr and "pylock.toml" in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr


def test_lock_output_through_a_link_and_to_dev_null(
    tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    profile = write_profile(tmp_path, default_index, pytorch_index)
    real_dir = tmp_path / "locks"
    real_dir.mkdir()
    real = real_dir / "team.lock"
    real.write_text("old\n")
    link = tmp_path / "team.lock"
    link.symlink_to(real)
    result = colabenv("lock", profile, "-o", link, *T4)
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text().startswith("# colabenv lock")
    assert read_lock(link).header.profile_name == "team-gpu"
    null = colabenv("lock", profile, "-o", "/dev/null", *T4)
    assert null.returncode == 0, null.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_pin_through_a_symlinked_profile_edits_its_target(tmp_path: Path, locked: tuple[Path, Path]) -> None:
    profile, out = locked
    shared = tmp_path / "shared"
    shared.mkdir()
    real = shared / "team.toml"
    profile.rename(real)
    link_dir = tmp_path / "project"
    link_dir.mkdir()
    link = link_dir / "team.toml"
    link.symlink_to(real)
    before = real.read_text()
    result = colabenv("pin", link, "--lock", out)
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    after = real.read_text()
    assert after != before and '"==2.6.0"' in after
    assert "changed" in result.stderr
    again = colabenv("pin", link, "--lock", out)
    assert again.returncode == 0
    assert "already pinned" in again.stderr and "changed" not in again.stderr
    assert real.read_text() == after


def test_lock_input_describes_what_the_lock_installs(locked: tuple[Path, Path]) -> None:
    """What render --lock hands the script: the lock's own target, frameworks and pins."""
    from packaging.version import Version

    from colabenv.app.install import lock_input
    from colabenv.catalog.load import shipped_catalog
    from colabenv.models import ComputeCapability, Framework, NvidiaTarget, Target
    from colabenv.profile.load import load_profile
    from colabenv.resolve.resolver import resolve

    profile_path, out = locked
    profile = load_profile(profile_path)
    target = Target(
        NvidiaTarget(Version("550.54.15"), Version("12.4"), (ComputeCapability(7, 5),)), Version(PYTHON)
    )
    resolution = resolve(profile, target, shipped_catalog(r.framework for r in profile.frameworks))
    given = lock_input(out, profile, resolution)
    lock = read_lock(out)
    assert given.target is not None
    assert given.target == lock.header.target
    assert given.target.to_target() == target
    assert given.python == PYTHON and given.required_driver == "525.60.13"
    assert [(f.framework, f.version, f.variant) for f in given.frameworks] == [
        (Framework.TORCH, "2.6.0", "cu124"),
        (Framework.JAX, "0.5.3", "cuda12"),
    ]
    assert given.constraints == ()
    assert given.pins == tuple(f"{n}=={v}" for n, v in lock.pins)
    assert given.text.startswith("# colabenv lock")
