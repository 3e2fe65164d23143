"""A requirements lock made against the default index names no index (issue 34): `bundle` and
the script's `[install] wheelhouse` fill search the installer's default index (PIP_INDEX_URL
here, a local index on 127.0.0.1) instead of searching none and blaming the hashes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from colabenv.lock.file import read_lock, render_lock
from colabenv.profile.load import load_profile
from colabenv.wheelhouse.plan import MANIFEST_NAME
from tests.support.fixtures import *  # noqa: F403
from tests.support.index import LocalIndex
from tests.support.isolation import clean_env
from tests.support.journeys import render
from tests.support.locking import T4, colabenv
from tests.support.scriptrun import make_host
from tests.support.wheels import Standins

pytestmark = pytest.mark.slow

REQUIREMENTS = '["requests>=2", "python-dateutil"]'


def _default_index_lock(folder: Path, index: LocalIndex, extra: str = "") -> tuple[Path, Path]:
    """A profile that names no index and its lock, as `lock` makes it against the default index
    (no `--index-url` line): made on ``index``, then written without its index line and with the
    hash of the profile that names none."""
    named = folder / "named.toml"
    named.write_text(
        f'name = "d"\n[packages]\nrequirements = {REQUIREMENTS}\n'
        f'[install]\ninstaller = "uv"\nindex_url = "{index.url}"\n{extra}'
    )
    made = colabenv("lock", named, "-o", folder / "named.lock", "--resolver", "uv", *T4)
    assert made.returncode == 0, made.stderr
    profile = folder / "d.toml"
    profile.write_text(
        f'name = "d"\n[packages]\nrequirements = {REQUIREMENTS}\n[install]\ninstaller = "uv"\n{extra}'
    )
    lock = read_lock(folder / "named.lock")
    header = dataclasses.replace(lock.header, profile_hash=load_profile(profile).content_hash)
    out = folder / "d.lock"
    out.write_text(render_lock(dataclasses.replace(lock, header=header, index_url=None)))
    assert "--index-url" not in out.read_text()
    return profile, out


def test_bundle_of_a_default_index_lock_searches_the_default_index(
    tmp_path: Path, standin_wheels: Standins
) -> None:
    with LocalIndex(standin_wheels.default) as index:
        _, lock = _default_index_lock(tmp_path, index)
        folder = tmp_path / "wheels"
        env = clean_env(UV_HTTP_RETRIES="0", PIP_RETRIES="0", PIP_INDEX_URL=index.url)
        done = colabenv("bundle", lock, "-o", folder, env=env)
    assert done.returncode == 0, done.stderr
    files = json.loads((folder / MANIFEST_NAME).read_text())["files"]
    assert len(files) == 7
    assert all(str(f["url"]).startswith(index.url.rsplit("/", 2)[0]) for f in files)


def test_the_script_fill_of_a_default_index_lock_searches_the_default_index(
    tmp_path: Path, standin_wheels: Standins
) -> None:
    cache = tmp_path / "cache"
    with LocalIndex(standin_wheels.default) as index:
        profile, lock = _default_index_lock(tmp_path, index, f'wheelhouse = "{cache}"\n')
        script = tmp_path / "setup.sh"
        render(profile, script, "--lock", str(lock))
        host = make_host(tmp_path / "host", with_pip=False)
        done = host.run(script, UV_HTTP_RETRIES="0", PIP_INDEX_URL=index.url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"COLABENV: wheelhouse {cache}: 0 wheels from it, 7 downloaded" in done.stdout
    assert host.installed()["requests"] == "2.32.4"
