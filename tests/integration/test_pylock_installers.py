"""A `pylock.toml` colabenv writes is installed as it is by pip (26.1 or later: `pip install -r
pylock.toml`) and by uv (`uv pip install -r`), with no colabenv (issue 34): a lock of one target,
and one `pylock.<target>.toml` per target of a profile's `[targets]`. Real installers in venvs,
a local index on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from tests.support.fixtures import *  # noqa: F403
from tests.support.fixtures import make_venv
from tests.support.index import LocalIndex
from tests.support.isolation import clean_env, uv_bin
from tests.support.locking import PYTHON, colabenv

pytestmark = pytest.mark.slow

PROFILE = (
    'name = "p"\n[packages]\nrequirements = ["requests>=2", "python-dateutil"]\n'
    '[install]\nindex_url = "{url}"\n'
)
CLOSURE = {"certifi", "charset-normalizer", "idna", "python-dateutil", "requests", "six", "urllib3"}


def _pip_version() -> Version:
    from importlib.metadata import version

    return Version(version("pip"))


def _install(installer: str, python: Path, lock: Path) -> subprocess.CompletedProcess[str]:
    if installer == "uv":
        argv = [uv_bin(), "pip", "install", "--python", str(python), "-r", str(lock)]
    else:
        if _pip_version() < Version("26.1"):
            pytest.skip(f"pip {_pip_version()} installs no pylock.toml (26.1 or later does; CI upgrades pip)")
        argv = [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-input",
            "-r",
            str(lock),
        ]
    env = clean_env(UV_NO_CONFIG="1", PIP_CONFIG_FILE="/dev/null", UV_HTTP_RETRIES="0", PIP_RETRIES="0")
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)


def _installed(python: Path) -> set[str]:
    code = (
        "import json, importlib.metadata as m; "
        "print(json.dumps(sorted(d.metadata['Name'].lower() for d in m.distributions())))"
    )
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout)) - {"pip", "setuptools", "wheel"}


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_a_pylock_of_one_target_installs_as_it_is(
    tmp_path: Path, default_index: LocalIndex, installer: str
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(PROFILE.format(url=default_index.url))
    out = tmp_path / "pylock.toml"
    made = colabenv("lock", profile, "-o", out, "--format", "pylock", "--cpu", "--python", PYTHON)
    assert made.returncode == 0, made.stderr
    venv = make_venv(tmp_path / "venv")
    done = _install(installer, venv, out)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _installed(venv) == CLOSURE


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_each_target_gets_a_pylock_of_its_own_that_installs_as_it_is(
    tmp_path: Path, default_index: LocalIndex, installer: str
) -> None:
    from colabenv.lock.file import read_lock, read_lock_file

    profile = tmp_path / "p.toml"
    profile.write_text(
        PROFILE.format(url=default_index.url)
        + f'[targets]\nnb = {{ cpu = true, python = "{PYTHON}" }}\n'
        + f'gpu = {{ driver = "550.54.15", compute_capability = ["7.5"], python = "{PYTHON}" }}\n'
    )
    out = tmp_path / "pylock.toml"
    made = colabenv("lock", profile, "--all-targets", "-o", out, "--format", "pylock")
    assert made.returncode == 0, made.stderr
    assert read_lock_file(out).names == ("nb", "gpu")  # the file of all targets, as before
    for name in ("nb", "gpu"):
        own = tmp_path / f"pylock.{name}.toml"
        assert read_lock(own).header.target.python == PYTHON
        venv = make_venv(tmp_path / f"venv-{name}")
        done = _install(installer, venv, own)
        assert done.returncode == 0, done.stdout + done.stderr
        assert _installed(venv) == CLOSURE
