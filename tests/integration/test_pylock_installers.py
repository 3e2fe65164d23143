"""A `pylock.toml` colabenv writes is installed as it is by pip (26.1 or later: `pip install -r
pylock.toml`) and by uv (`uv pip install -r`), with no colabenv (issue 34): a lock of one target,
and one `pylock.<target>.toml` per target of a profile's `[targets]`. Real installers in venvs,
a local index on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from packaging.version import Version

from colabenv._util import toml
from tests.support.fixtures import *  # noqa: F403
from tests.support.fixtures import make_venv
from tests.support.index import LocalIndex
from tests.support.isolation import clean_env, uv_bin
from tests.support.locking import OTHER_PYTHON, PYTHON, colabenv
from tests.support.wheels import Standins

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


# ---------------------------------------------------------------------------------------------
# The file of all targets: its sections from the markers, its default group installed


def _two_targets(tmp_path: Path, index: LocalIndex) -> Path:
    """A profile of two targets whose closures differ: nb (this Python, listed first: the
    default group) pins requests' closure; other (another Python) adds python-dateutil."""
    profile = tmp_path / "p.toml"
    profile.write_text(
        f'name = "p"\n[packages]\nrequirements = ["requests>=2", '
        f"\"python-dateutil ; python_version == '{OTHER_PYTHON}'\"]\n"
        f'[install]\nindex_url = "{index.url}"\n'
        f'[targets]\nnb = {{ cpu = true, python = "{PYTHON}" }}\n'
        f'other = {{ cpu = true, python = "{OTHER_PYTHON}" }}\n'
    )
    return profile


def _without_package_tools(text: str) -> str:
    import tomlkit

    document = tomlkit.parse(text)
    for package in document["packages"]:  # type: ignore[union-attr]
        package.pop("tool", None)
    return tomlkit.dumps(document)


def test_the_file_of_all_targets_reads_the_same_without_its_package_tool_tables(
    tmp_path: Path, default_index: LocalIndex
) -> None:
    from colabenv.lock.file import parse_lock_file, read_lock_file

    out = tmp_path / "pylock.toml"
    made = colabenv(
        "lock", _two_targets(tmp_path, default_index), "--all-targets", "-o", out, "--format", "pylock"
    )
    assert made.returncode == 0, made.stderr
    written = read_lock_file(out)
    assert written.names == ("nb", "other")
    assert written.section("other").package("python-dateutil") is not None  # type: ignore[union-attr]
    assert written.section("nb").package("python-dateutil") is None  # type: ignore[union-attr]
    stripped = _without_package_tools(out.read_text())
    assert parse_lock_file(stripped, out) == written


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_a_plain_install_of_the_file_of_all_targets_installs_the_default_target(
    tmp_path: Path, default_index: LocalIndex, installer: str
) -> None:
    from colabenv.lock.file import read_lock_file

    out = tmp_path / "pylock.toml"
    made = colabenv(
        "lock", _two_targets(tmp_path, default_index), "--all-targets", "-o", out, "--format", "pylock"
    )
    assert made.returncode == 0, made.stderr
    assert "target nb" in out.read_text().split("\nlock-version", 1)[0]  # the opening comment says which
    venv = make_venv(tmp_path / "venv")
    done = _install(installer, venv, out)
    assert done.returncode == 0, done.stdout + done.stderr
    nb = read_lock_file(out).section("nb")
    assert nb is not None
    assert _installed_versions(venv) == dict(nb.pins)
    assert _installed(venv) == CLOSURE - {"python-dateutil", "six"}


def _installed_versions(python: Path) -> dict[str, str]:
    code = (
        "import json, importlib.metadata as m; "
        "print(json.dumps({d.metadata['Name'].lower(): d.version for d in m.distributions()}))"
    )
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    found: dict[str, str] = json.loads(out.stdout)
    return {name: version for name, version in found.items() if name not in {"pip", "setuptools", "wheel"}}


# ---------------------------------------------------------------------------------------------
# size and upload-time (PEP 700) from the index


@pytest.mark.parametrize("resolver", ["uv", "pip-tools"])
def test_each_file_has_the_size_and_upload_time_the_index_gives(
    tmp_path: Path, default_index: LocalIndex, standin_wheels: Standins, resolver: str
) -> None:
    from colabenv.lock.file import read_lock

    profile = tmp_path / "p.toml"
    profile.write_text(PROFILE.format(url=default_index.url))
    out = tmp_path / "pylock.toml"
    made = colabenv(
        "lock", profile, "-o", out, "--format", "pylock", "--cpu", "--python", PYTHON, "--resolver", resolver
    )
    assert made.returncode == 0, made.stderr
    on_disk = {path.name: path.stat() for path in standin_wheels.default.rglob("*.whl")}
    document = toml.loads(out.read_text())
    wheels = [wheel for package in document["packages"] for wheel in package["wheels"]]
    assert len(wheels) == len(CLOSURE)
    for wheel in wheels:
        stat = on_disk[wheel["name"]]
        assert wheel["size"] == stat.st_size
        uploaded = wheel["upload-time"]
        assert isinstance(uploaded, datetime) and uploaded.utcoffset() == timedelta(0)
        # uv writes whole seconds; what pip-tools' lock takes from the page is exact
        assert abs(uploaded.timestamp() - stat.st_mtime) < (1 if resolver == "uv" else 1e-5)
    again = read_lock(out)
    files = {f.name: f for package in again.packages for f in package.files}
    assert {name: (f.size, f.upload_time) for name, f in files.items()} == {
        w["name"]: (w["size"], w["upload-time"]) for w in wheels
    }
    venv = make_venv(tmp_path / "venv")
    done = _install("uv", venv, out)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("resolver", ["uv", "pip-tools"])
@pytest.mark.parametrize(("key", "value"), [("size", -1), ("upload_time", "yesterday")])
def test_a_malformed_size_or_upload_time_from_the_index_is_refused(
    tmp_path: Path,
    default_index: LocalIndex,
    standin_wheels: Standins,
    resolver: str,
    key: str,
    value: object,
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(PROFILE.format(url=default_index.url))
    wheel = next(standin_wheels.default.rglob("requests-*.whl")).name
    default_index.tell(wheel, **{key: value})
    out = tmp_path / "pylock.toml"
    made = colabenv(
        "lock", profile, "-o", out, "--format", "pylock", "--cpu", "--python", PYTHON, "--resolver", resolver
    )
    assert made.returncode == 4, made.stderr
    assert made.stdout == "" and "Traceback" not in made.stderr and not out.exists()
    last = made.stderr.splitlines()[-1]
    assert f"{default_index.url}requests/" in last, made.stderr
    if resolver == "pip-tools":  # pip fails on the page, and colabenv reads it again itself
        assert f"({wheel}).{key.replace('_', '-')}: expected" in last
    # uv reads the page first, and refuses it: its own words, naming the page
