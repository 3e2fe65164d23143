"""`colabenv pin` and `colabenv init`: round trips that keep comments and order, and validate."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest

from colabenv.lockfile import read_lock
from tests.support.fixtures import *  # noqa: F403
from tests.support.index import LocalIndex
from tests.support.locking import PYTHON, T4, colabenv, lock_profile, write_profile

RUNTIMES = Path(__file__).resolve().parent / "data" / "runtimes"


def _changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    diff = [line for line in difflib.ndiff(before.splitlines(), after.splitlines())
            if line.startswith(("- ", "+ "))]
    removed = [line[2:] for line in diff if line.startswith("- ")]
    added = [line[2:] for line in diff if line.startswith("+ ")]
    return list(zip(removed, added, strict=True))


def test_pin_round_trip(
    tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    profile = write_profile(tmp_path, default_index, pytorch_index)
    lock = lock_profile(profile, tmp_path / "team.lock", "uv")
    before = profile.read_text()
    result = colabenv("pin", profile, "--lock", tmp_path / "team.lock")
    assert result.returncode == 0, result.stderr
    after = profile.read_text()
    assert _changed_lines(before, after) == [
        ('torch = { version = ">=2.5,<2.7", torchvision = "*" }  # the torch line',
         'torch = { version = "==2.6.0", torchvision = "==0.21.0" }  # the torch line'),
        ('jax = ">=0.5,<0.6"  # jax from the default index',
         'jax = "==0.5.3"  # jax from the default index'),
    ]
    check = colabenv("profiles", "check", profile)
    assert check.returncode == 0, check.stderr
    resolved = colabenv("resolve", profile, "--json", *T4)
    assert resolved.returncode == 0, resolved.stderr
    frameworks = json.loads(resolved.stdout)["frameworks"]
    assert frameworks["torch"]["version"] == "2.6.0"
    assert frameworks["torch"]["variant"] == "cu124"
    assert frameworks["jax"]["version"] == "0.5.3"
    relocked = lock_profile(profile, tmp_path / "again.lock", "uv")
    assert relocked.pins == lock.pins
    again = colabenv("pin", profile, "--lock", tmp_path / "team.lock")
    assert again.returncode == 0
    assert "already pinned" in again.stderr
    assert profile.read_text() == after


def test_pin_adds_frameworks_inherited_from_a_parent(
    tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    write_profile(tmp_path, default_index, pytorch_index, name="base.toml")
    child = tmp_path / "child.toml"
    child.write_text('# the project profile\nextends = "base.toml"\nname = "team-gpu"\n'
                     '\n[packages]\n# our extra needs\nrequirements = ["requests>=2", "six"]\n')
    lock_profile(child, tmp_path / "child.lock", "uv")
    result = colabenv("pin", child, "--lock", tmp_path / "child.lock")
    assert result.returncode == 0, result.stderr
    text = child.read_text()
    assert text.startswith('# the project profile\nextends = "base.toml"\n')
    assert "# our extra needs\n" in text
    assert '[frameworks]\ntorch = "==2.6.0"\njax = "==0.5.3"\n' in text
    assert colabenv("profiles", "check", child).returncode == 0
    resolved = json.loads(colabenv("resolve", child, "--json", *T4).stdout)
    assert resolved["frameworks"]["torch"]["requirements"] == [
        "torch==2.6.0+cu124", "torchvision==0.21.0+cu124"]


def test_pin_refuses_a_lock_of_another_profile(
    tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    profile = write_profile(tmp_path, default_index, pytorch_index)
    lock_profile(profile, tmp_path / "team.lock", "uv")
    other = tmp_path / "other.toml"
    other.write_text(profile.read_text().replace('name = "team-gpu"', 'name = "other"'))
    before = other.read_text()
    result = colabenv("pin", other, "--lock", tmp_path / "team.lock")
    assert result.returncode == 2
    assert "made for profile 'team-gpu'" in result.stderr
    assert other.read_text() == before
    missing = colabenv("pin", other, "--lock", tmp_path / "nope.lock")
    assert missing.returncode == 2 and "nope.lock: lockfile: no such file" in missing.stderr
    assert read_lock(tmp_path / "team.lock").header.profile_name == "team-gpu"


def test_init_from_a_colab_snapshot(tmp_path: Path) -> None:
    out = tmp_path / "colab.toml"
    freeze = RUNTIMES / "colab-2025.10" / "pip-freeze.txt"
    result = colabenv("init", "-o", out, "--name", "colab-oct", "--installed-from", freeze,
                      "--driver", "550.54.15", "--compute-capability", "7.5", "--python", "3.12")
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert 'name = "colab-oct"' in text
    assert 'python = "==3.12.*"' in text
    assert ('torch = { version = "==2.8.0", torchvision = "==0.23.0", '
            'torchaudio = "==2.8.0" }') in text
    assert "# torch 2.8.0+cu126 is installed in this runtime." in text
    assert 'tensorflow = "==2.19.0"' in text
    assert 'jax = { version = "==0.5.3", jaxlib = "==0.5.3" }' in text
    assert 'smoke = ["torch", "tensorflow", "jax"]' in text
    assert "require_gpu = true" in text
    for section in ("[frameworks]", "[packages]", "[apt]", "[env]", "[install]", "[verify]"):
        position = text.index(section)
        assert text[position + len(section) + 1] == "#", f"{section} has no comment"
    check = colabenv("profiles", "check", out)
    assert check.returncode == 0, check.stderr
    again = colabenv("init", "-o", out, "--cpu")
    assert again.returncode == 2
    assert "already exists" in again.stderr
    assert out.read_text() == text


def test_init_to_stdout_without_a_gpu(tmp_path: Path) -> None:
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("numpy==2.0.2\n")
    result = colabenv("init", "--cpu", "--installed-from", freeze, "--python", PYTHON)
    assert result.returncode == 0, result.stderr
    assert 'name = "generic"' in result.stdout
    assert "# No framework was found in this runtime." in result.stdout
    assert "require_gpu = false" in result.stdout
    (tmp_path / "p.toml").write_text(result.stdout)
    assert colabenv("profiles", "check", tmp_path / "p.toml").returncode == 0


@pytest.mark.parametrize("name", ["bad name", "x" * 65, "quote\"d"])
def test_init_rejects_bad_names(tmp_path: Path, name: str) -> None:
    result = colabenv("init", "-o", tmp_path / "p.toml", "--name", name, "--cpu")
    assert result.returncode == 2
    assert "--name" in result.stderr
    assert not (tmp_path / "p.toml").exists()
