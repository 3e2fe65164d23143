"""What ``verify --lock`` checks against: the lock's pins, and its own profile's settings."""

from __future__ import annotations

from pathlib import Path

from colabenv.lock.content import Lock, LockedFile, LockedPackage, LockHeader, LockTarget
from colabenv.lock.file import render_lock
from colabenv.models import LockedFramework
from colabenv.script.marker import RestartMarker, read_marker
from colabenv.verification.expectation import Expectation, expectation_from_lock
from tests.support.standin_frameworks import write_marker

LOCKED = "sha256:" + "1" * 64
OTHER = "sha256:" + "2" * 64


def _lock(path: Path) -> Path:
    header = LockHeader(
        colabenv_version="0.1.0",
        profile_name="team",
        profile_hash=LOCKED,
        target=LockTarget("560.35.03", "525.60.13", "12.6", ("7.5",), "3.11", "linux_x86_64"),
        frameworks=(LockedFramework("torch", "2.6.0", "cu124", None),),
        resolver="uv 0.8.0",
    )
    package = LockedPackage("torch", "2.6.0+cu124", (LockedFile("0" * 64),), None)
    path.write_text(render_lock(Lock(header, (package,))), encoding="utf-8")
    return path


def _settings(expectation: Expectation) -> tuple[object, ...]:
    return (
        expectation.verify,
        expectation.env,
        expectation.reproducibility,
        expectation.smoke,
        expectation.requirements,
    )


def _marker_of(state: Path, profile: str, profile_hash: str, *, gpu: bool) -> RestartMarker:
    write_marker(
        state,
        requirements=["torch==2.6.0+cu124"],
        frameworks={"torch": "2.6.0+cu124"},
        profile=profile,
        profile_hash=profile_hash,
        require_gpu=gpu,
        min_free_vram_gib=6.0 if gpu else None,
        env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"} if gpu else {},
        timeout_s=30.0,
        reproducibility={"seed": 7, "deterministic": True} if gpu else None,
    )
    marker = read_marker(state)
    assert marker is not None
    return marker


def test_the_same_lock_gets_the_same_checks_whichever_profile_ran_last(tmp_path: Path) -> None:
    lock = str(_lock(tmp_path / "team.lock"))
    without = expectation_from_lock(lock, None)
    for name, gpu in (("notebook-gpu", True), ("notebook-cpu", False)):
        marker = _marker_of(tmp_path / name, name, OTHER, gpu=gpu)
        assert _settings(expectation_from_lock(lock, marker)) == _settings(without), name
    assert without.verify.require_gpu is False and without.verify.min_free_vram_gib is None
    assert without.env == () and without.verify.timeout_s == 120.0


def test_the_lock_takes_its_own_profiles_settings_from_the_marker_it_wrote(tmp_path: Path) -> None:
    lock = str(_lock(tmp_path / "team.lock"))
    marker = _marker_of(tmp_path / "state", "team", LOCKED, gpu=True)
    expectation = expectation_from_lock(lock, marker)
    assert expectation.verify.require_gpu is True
    assert expectation.verify.min_free_vram_gib == 6.0
    assert expectation.verify.timeout_s == 30.0
    assert expectation.env == (("XLA_PYTHON_CLIENT_PREALLOCATE", "false"),)
    assert expectation.reproducibility.seed == 7
    assert [str(r) for r in expectation.requirements] == ["torch==2.6.0+cu124"]


def test_a_lock_with_another_profiles_marker_cannot_pass_env(tmp_path: Path) -> None:
    from colabenv.verification.report import Status
    from colabenv.verification.restart import check_env

    lock = str(_lock(tmp_path / "team.lock"))
    foreign = expectation_from_lock(lock, _marker_of(tmp_path / "b", "team-b", OTHER, gpu=True))
    hint = "the restart marker is profile 'team-b''s"
    check = check_env(foreign.env, {}, hint=hint, known=foreign.env_known)
    assert (check.status, check.detail) == (
        Status.FAIL,
        "the [env] of the lock's profile is not known (the restart marker is profile 'team-b''s)",
    )
    assert expectation_from_lock(lock, None).env_known
