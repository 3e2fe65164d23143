"""``render --wheelhouse`` and ``[install] wheelhouse`` refused where they cannot work: exit 2,
one line, nothing on stdout."""

from __future__ import annotations

from pathlib import Path

from tests.support.fixtures import Runner

PY = ["--cpu", "--python", "3.12"]


def test_wheelhouse_needs_a_lock(tmp_path: Path, runner: Runner) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text('name = "p"\n[packages]\nrequirements = ["six"]\n')
    done = runner("render", profile, "--wheelhouse", "/kaggle/input/wheels", *PY)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == "colabenv: --wheelhouse DIR needs --lock LOCK: a wheelhouse holds a lock's wheels\n"


def test_a_profile_wheelhouse_without_a_lock_installs_hash_checked_with_no_index(
    tmp_path: Path, runner: Runner
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(
        'name = "p"\n[packages]\nrequirements = ["six"]\n[install]\nwheelhouse = "/content/w"\n'
    )
    done = runner("render", profile, *PY)
    assert done.returncode == 0, done.stderr
    assert "hw resolve" in done.stdout
    assert "COLABENV_WHEELHOUSE_EOF" in done.stdout
    assert (
        'run_install --no-index "${wh_links[@]}" --require-hashes --no-deps -r "${work}/hashed.txt"'
        in done.stdout
    )


def test_bundle_needs_an_output_folder(tmp_path: Path, runner: Runner) -> None:
    done = runner("bundle", tmp_path / "x.lock")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "-o/--output" in done.stderr


def test_a_script_without_a_wheelhouse_carries_no_wheelhouse_program(tmp_path: Path, runner: Runner) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text('name = "p"\n[packages]\nrequirements = ["six"]\n')
    done = runner("render", profile, *PY)
    assert done.returncode == 0, done.stderr
    assert "COLABENV_WHEELHOUSE_EOF" not in done.stdout
    assert "wheelhouse" not in done.stdout
