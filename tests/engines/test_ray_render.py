"""``colabenv render --format ray`` (issue 37): a Ray ``runtime_env`` of a real lock, made by
``colabenv lock`` from a local index on 127.0.0.1; the pins with their hashes through Ray's
``pip`` field, ``[env]`` as ``env_vars`` with ``${VAR}`` kept, a wheelhouse with no index,
and bad input refused with nothing written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from colabenv.lock.file import read_lock
from tests.support.index import LocalIndex
from tests.support.locking import PYTHON, colabenv
from tests.support.ports import free_port
from tests.support.wheels import Standins

CPU = ("--cpu", "--python", PYTHON)
OTHER_PYTHON = "3.12" if PYTHON != "3.12" else "3.13"


def ray_profile(directory: Path, index_url: str, requirements: tuple[str, ...] = ("requests>=2",)) -> Path:
    """A team's profile for its Ray nodes: requirements from ``index_url``, an ``[env]`` with a
    plain value and a secret that is a reference."""
    path = directory / "team.toml"
    listed = ", ".join(json.dumps(r) for r in requirements)
    path.write_text(
        f'schema = 1\nname = "team"\n[packages]\nrequirements = [{listed}]\n'
        f'[install]\ninstaller = "uv"\nindex_url = "{index_url}"\n'
        '[env]\nHF_HOME = "/data/hf"\nHF_TOKEN = "${HF_TOKEN}"\n'
    )
    return path


def make_lock(profile: Path, out: Path) -> Path:
    made = colabenv("lock", profile, "-o", out, "--resolver", "uv", *CPU)
    assert made.returncode == 0, made.stderr
    return out


@dataclass(frozen=True)
class Locked:
    profile: Path
    lock: Path


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory, standin_wheels: Standins) -> Iterator[Locked]:
    base = tmp_path_factory.mktemp("ray-render")
    with LocalIndex(standin_wheels.default, port=free_port()) as index:
        profile = ray_profile(base, index.url)
        yield Locked(profile, make_lock(profile, base / "team.lock"))


def _render(locked: Locked, *words: str | Path) -> tuple[int, str, str]:
    done = colabenv("render", locked.profile, "--lock", locked.lock, "--format", "ray", *CPU, *words)
    return done.returncode, done.stdout, done.stderr


def test_the_runtime_env_installs_the_lock_pins_with_their_hashes_through_pip(locked: Locked) -> None:
    code, out, err = _render(locked)
    assert code == 0, err
    env = json.loads(out)
    assert sorted(env) == ["env_vars", "pip"]
    pip = env["pip"]
    assert pip["pip_check"] is False
    assert pip["pip_install_options"] == ["--disable-pip-version-check", "--no-cache-dir"]
    lock = read_lock(locked.lock)
    assert lock.index_url is not None
    assert pip["packages"][0] == f"--index-url {lock.index_url}"
    pins = [line for line in pip["packages"] if not line.startswith("--")]
    assert [line.split(" ")[0] for line in pins] == [f"{n}=={v}" for n, v in lock.pins]
    for line, package in zip(pins, lock.packages, strict=True):
        assert "--hash=sha256:" in line
        assert all(f"--hash={h}" in line for h in package.hashes)


def test_env_vars_come_from_env_and_a_reference_stays_one(
    locked: Locked, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value_1234")
    code, out, err = _render(locked)
    assert code == 0, err
    assert json.loads(out)["env_vars"] == {"HF_HOME": "/data/hf", "HF_TOKEN": "${HF_TOKEN}"}
    assert "hf_secret_value_1234" not in out + err


@pytest.mark.parametrize("name", ["env.yaml", "env.yml", "ENV.JSON"])
def test_o_writes_json_or_yaml_by_extension_the_same_value(locked: Locked, tmp_path: Path, name: str) -> None:
    code, out, _ = _render(locked)
    assert code == 0
    target = tmp_path / name
    code, written_out, err = _render(locked, "-o", target)
    assert (code, written_out) == (0, ""), err
    text = target.read_text()
    read = json.loads(text) if name.lower().endswith(".json") else yaml.safe_load(text)
    assert read == json.loads(out)


def test_a_wheelhouse_installs_with_no_index(locked: Locked) -> None:
    code, out, err = _render(locked, "--wheelhouse", "/shared/wheels")
    assert code == 0, err
    pip = json.loads(out)["pip"]
    assert pip["pip_install_options"][-3:] == ["--no-index", "--find-links", "/shared/wheels"]
    assert not any(line.startswith("--") for line in pip["packages"])
    assert len(pip["packages"]) == len(read_lock(locked.lock).pins)


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (("-o", "env.txt"), "colabenv: -o env.txt: with --format ray, a .json, .yaml or .yml file\n"),
        (("--gpus", "1"), "colabenv: --gpus: with --format slurm or kubernetes only\n"),
        (("--python", OTHER_PYTHON), "colabenv: team.lock: does not fit this script: target: Python"),
        (("--wheelhouse", ""), "colabenv: --wheelhouse: "),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(
    locked: Locked, tmp_path: Path, words: tuple[str, ...], message: str
) -> None:
    out = tmp_path / "env.json"
    argv = ["-o", out, *words] if words[0] != "-o" else [*words[:1], tmp_path / words[1]]
    code, stdout, err = _render(locked, *argv)
    assert (code, stdout) == (2, ""), err
    assert err.replace(str(tmp_path) + "/", "").startswith(message)
    assert err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


def test_without_a_lock_is_refused(locked: Locked, tmp_path: Path) -> None:
    out = tmp_path / "env.json"
    done = colabenv("render", locked.profile, "--format", "ray", "-o", out, *CPU)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "colabenv: --format ray needs --lock LOCK: the lock's section is what every node installs\n"
    )
    assert not out.exists()
