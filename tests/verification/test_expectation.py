"""What ``verify --lock`` checks against: the lock's pins, and its own profile's settings."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from colabenv.app.resolution import host_fingerprint
from colabenv.lock.content import Lock, LockedFile, LockedPackage, LockHeader, LockTarget
from colabenv.lock.file import render_lock
from colabenv.models import LockedFramework
from colabenv.profile.files import find_profile
from colabenv.profile.load import load_profile
from colabenv.script.marker import RestartMarker, parse_marker, read_marker
from colabenv.verification.expectation import Expectation, expectation_from_lock
from tests.script.test_render_snapshots import HOSTS, NOTHING_INSTALLED, PROFILES, PYTHON
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


# ---------------------------------------------------------------------------------------------
# verify --profile expects what render installs

RECORDED = ("colab-t4", "h200-580", "cpu", "tpu-colab-v6e-1", "runtime-2026.07-t4")
"""Recorded hosts of the render comparison: a T4, an H200, no GPU, a TPU, a Colab runtime's image
(its own cuDF installed)."""


def _flags(host: str) -> list[str]:
    """The host's flags as the render comparison gives them: nothing installed, Python 3.12,
    where no runtime says otherwise."""
    flags = HOSTS[host]
    if "--runtime" in flags:
        return flags
    python = [] if "--python" in flags else ["--python", PYTHON]
    return [*flags, "--installed-from", str(NOTHING_INSTALLED), *python]


def _rendered(argv: list[str]) -> tuple[int, str, str]:
    from colabenv.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _installed_by(script: str) -> tuple[list[str], dict[str, Any]]:
    """Every requirement the script's pip groups install, and its restart marker's record."""
    groups: list[str] = []
    record: dict[str, Any] = {}
    inside = False
    for line in script.splitlines():
        words = shlex.split(line) if inside or line.startswith(("  group=(", "marker_record=")) else []
        if line == "  group=(":
            inside = True
        elif inside and words == [")"]:
            inside = False
        elif inside:
            groups.extend(words)
        elif line.startswith("marker_record="):
            record = json.loads(words[0].partition("=")[2])
    return groups, record


@pytest.mark.parametrize("host", RECORDED)
@pytest.mark.parametrize("name", PROFILES)
def test_verify_expects_exactly_what_render_installs(name: str, host: str, tmp_path: Path) -> None:
    """The expectation of ``verify --profile`` on a host is the plan render makes for it: the
    requirements its pip groups install, as its marker records them, and the marker's
    ``[verify]``; where render refuses the host, the expectation carries that refusal."""
    from colabenv.cli.common import target_flags
    from colabenv.cli.parser import build_parser
    from colabenv.verification.expectation import expectation_from_marker, expectation_from_profile

    argv = ["render", name, *_flags(host)]
    args = build_parser("render").parse_args(argv)
    profile = load_profile(find_profile(name))
    expectation = expectation_from_profile(profile, host_fingerprint(target_flags(args)).target)
    code, script, err = _rendered(argv)
    if code != 0:
        assert expectation.requirements == () and len(expectation.problems) == 1
        problem = expectation.problems[0].removeprefix("no resolution for this host: ")
        assert problem != expectation.problems[0] and problem in err
        return
    assert expectation.problems == ()
    expected = [str(r) for r in expectation.requirements]
    groups, record = _installed_by(script)
    assert expected and sorted(expected) == sorted(groups)
    assert expected == record["requirements"]
    record.update(installed=[], changed=True, written_at=1000.0)
    marker = parse_marker(json.dumps(record), tmp_path / "restart-marker.json")
    # the marker lists the smoke tests that run; the profile's own [verify] may leave them out
    assert expectation.smoke == expectation_from_marker(marker).smoke
    unlisted = dataclasses.replace(marker.verify, smoke=None)
    assert dataclasses.replace(expectation.verify, smoke=None) == unlisted
