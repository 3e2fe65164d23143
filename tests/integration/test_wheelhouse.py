"""Wheelhouses for real: ``colabenv bundle`` from a local index on 127.0.0.1, then bootstrap
scripts installing from the folder (with no index, or as a persistent cache) into real venvs
with real uv and pip (issue 26)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from colabenv.wheelhouse.plan import MANIFEST_NAME
from tests.support.fixtures import venv_template
from tests.support.index import LocalIndex
from tests.support.journeys import render
from tests.support.locking import T4, colabenv
from tests.support.scriptrun import Host, make_host

pytestmark = pytest.mark.slow

REQUIREMENTS = ["requests>=2", "python-dateutil"]


def _profile(directory: Path, index: LocalIndex, *, installer: str = "uv", extra: str = "") -> Path:
    path = directory / "wh.toml"
    requirements = ", ".join(json.dumps(r) for r in REQUIREMENTS)
    path.write_text(
        f'name = "wh"\n[packages]\nrequirements = [{requirements}]\n'
        f'[install]\ninstaller = "{installer}"\nindex_url = "{index.url}"\n{extra}'
    )
    return path


def _lock(directory: Path, profile: Path) -> Path:
    out = directory / "wh.lock"
    made = colabenv("lock", profile, "-o", out, "--resolver", "uv", *T4)
    assert made.returncode == 0, made.stderr
    return out


def _bundle(lock: Path, folder: Path, *extra: str) -> tuple[int, str, str]:
    done = colabenv("bundle", lock, "-o", folder, *extra)
    return done.returncode, done.stdout, done.stderr


def _manifest(folder: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((folder / MANIFEST_NAME).read_text())
    return data


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_bundle_fetches_every_wheel_checked_and_a_second_run_only_what_is_missing_or_damaged(
    tmp_path: Path, default_index: LocalIndex
) -> None:
    lock = _lock(tmp_path, _profile(tmp_path, default_index))
    folder = tmp_path / "wheels"
    code, out, err = _bundle(lock, folder)
    assert code == 0, err
    manifest = _manifest(folder)
    files = manifest["files"]
    assert isinstance(files, list)
    names = sorted(str(f["name"]) for f in files)
    assert names == sorted(
        ["certifi", "charset-normalizer", "idna", "python-dateutil", "requests", "six", "urllib3"]
    )
    for entry in files:
        assert _sha(folder / entry["file"]) == entry["sha256"]
        assert entry["url"].startswith(default_index.base_url)
    assert "7 wheels" in out
    assert "7 downloaded, 0 already there" in err
    assert "Kaggle" in (folder / "README.md").read_text()

    default_index.reset_requests()
    six = next(f for f in files if f["name"] == "six")
    idna = next(f for f in files if f["name"] == "idna")
    (folder / six["file"]).unlink()
    damaged = folder / idna["file"]
    damaged.write_bytes(damaged.read_bytes()[:-10])
    code, out, err = _bundle(lock, folder)
    assert code == 0, err
    assert "2 downloaded, 5 already there" in err
    assert _sha(folder / six["file"]) == six["sha256"]
    assert _sha(damaged) == idna["sha256"]
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]


def _host(tmp_path: Path, request: pytest.FixtureRequest, installer: str, name: str = "host") -> Host:
    with_pip = installer == "pip"
    return make_host(tmp_path / name, with_pip=with_pip, venv_from=venv_template(request, with_pip))


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_bundle_then_the_index_stopped_then_the_script_installs_offline(
    installer: str, tmp_path: Path, default_index: LocalIndex, request: pytest.FixtureRequest
) -> None:
    profile = _profile(tmp_path, default_index, installer=installer)
    lock = _lock(tmp_path, profile)
    folder = tmp_path / "wheels"
    assert _bundle(lock, folder)[0] == 0
    script = tmp_path / "setup.sh"
    render(profile, script, "--lock", str(lock), "--wheelhouse", str(folder))
    text = script.read_text()
    assert default_index.url not in text.split("COLABENV_LOCK_EOF")[-1]
    default_index.stop()
    host = _host(tmp_path, request, installer)
    done = host.run(script, UV_HTTP_RETRIES="0", PIP_RETRIES="0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "each with the lock's sha256" in done.stdout
    installed = host.installed()
    assert installed["requests"] == "2.32.4"
    assert installed["six"] == "1.17.0"


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_a_tampered_wheel_is_refused_by_name_and_nothing_is_installed(
    installer: str, tmp_path: Path, default_index: LocalIndex, request: pytest.FixtureRequest
) -> None:
    profile = _profile(tmp_path, default_index, installer=installer)
    lock = _lock(tmp_path, profile)
    folder = tmp_path / "wheels"
    assert _bundle(lock, folder)[0] == 0
    urllib3 = next(folder.glob("urllib3-*.whl"))
    urllib3.write_bytes(urllib3.read_bytes() + b"\0")
    script = tmp_path / "setup.sh"
    render(profile, script, "--lock", str(lock), "--wheelhouse", str(folder))
    host = _host(tmp_path, request, installer)
    done = host.run(script)
    assert done.returncode != 0
    assert f"refused, nothing installed: {urllib3}: sha256" in done.stdout + done.stderr
    assert "urllib3==2.5.0" in done.stdout + done.stderr
    assert host.installed() == {}
