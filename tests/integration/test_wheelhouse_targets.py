"""A wheelhouse of a lock of three targets (issue 26): `bundle` of every section (a compiled
wheel per Python, so the closures differ), the index stopped, then the script of the section the
host fits, and of one `--target` names, installing offline into a real venv; `bundle --target`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from colabenv.lock.file import read_lock_file
from colabenv.wheelhouse.plan import MANIFEST_NAME
from tests.support.fixtures import *  # noqa: F403
from tests.support.fixtures import venv_template
from tests.support.index import LocalIndex
from tests.support.locking import (
    NB_FLAGS,
    OTHER_PYTHON,
    PYTHON,
    colabenv,
    target_indexes,
    write_targets_profile,
)
from tests.support.scriptrun import Host, make_host
from tests.support.wheels import Standins

pytestmark = pytest.mark.slow

OWN = f"cp{PYTHON.replace('.', '')}"
OTHER = f"cp{OTHER_PYTHON.replace('.', '')}"


@dataclass(frozen=True)
class Locked:
    profile: Path
    lock: Path
    indexes: tuple[LocalIndex, ...]


@pytest.fixture(scope="module")
def locked(standin_wheels: Standins, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Locked]:
    """nb (T4) and cluster (H100) on this Python, ci (CPU) on another: one lock of all three."""
    folder = tmp_path_factory.mktemp("targets-wheelhouse")
    with target_indexes(standin_wheels, folder / "compiled") as indexes:
        profile = write_targets_profile(folder, indexes, OTHER_PYTHON, torch=False)
        lock = folder / "team.lock"
        made = colabenv("lock", profile, "--all-targets", "-o", lock)
        assert made.returncode == 0, made.stderr
        yield Locked(profile, lock, indexes)


@pytest.fixture
def served(locked: Locked) -> Locked:
    """The module's lock with its indexes serving (a test before may have stopped them; each
    starts again on its own port, so the lock's URLs hold)."""
    for index in locked.indexes:
        index.start()
    return locked


def _render(locked: Locked, out: Path, folder: Path, *extra: str) -> None:
    done = colabenv(
        "render", locked.profile, "--lock", locked.lock, "--wheelhouse", folder, "-o", out, *extra
    )
    assert done.returncode == 0, done.stderr


def _host(tmp_path: Path, request: pytest.FixtureRequest, name: str) -> Host:
    return make_host(tmp_path / name, with_pip=False, venv_from=venv_template(request, False))


def _fastops(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("fastops-*.whl"))


def test_bundle_of_every_section_then_the_index_stopped_then_each_script_installs_offline(
    tmp_path: Path, served: Locked, request: pytest.FixtureRequest
) -> None:
    locked = served
    lock_file = read_lock_file(locked.lock)
    assert lock_file.names == ("nb", "cluster", "ci")
    fastops = {n: lock_file.section(n).package("fastops").files[0].sha256 for n in lock_file.names}  # type: ignore[union-attr]
    assert fastops["nb"] == fastops["cluster"] != fastops["ci"], "the closures differ"
    folder = tmp_path / "wheels"
    done = colabenv("bundle", locked.lock, "-o", folder)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    assert [(s["name"], s["python"]) for s in manifest["sections"]] == [
        ("nb", PYTHON),
        ("cluster", PYTHON),
        ("ci", OTHER_PYTHON),
    ]
    files = {f["file"]: f["sections"] for f in manifest["files"]}
    own = f"fastops-1.0-{OWN}-{OWN}-manylinux_2_28_x86_64.whl"
    other = f"fastops-1.0-{OTHER}-{OTHER}-manylinux_2_28_x86_64.whl"
    assert _fastops(folder) == sorted([own, other])
    assert files[own] == ["nb", "cluster"] and files[other] == ["ci"]
    for index in locked.indexes:
        index.stop()

    fits = tmp_path / "fits.sh"
    _render(locked, fits, folder, *NB_FLAGS)  # a T4 host: the nb section fits
    host = _host(tmp_path, request, "nb")
    ran = host.run(fits, UV_HTTP_RETRIES="0")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "from the wheelhouse, no index (uv)" in ran.stdout
    installed = host.installed()
    assert installed["fastops"] == "1.0" and installed["requests"] == "2.32.4"

    named = tmp_path / "cluster.sh"
    _render(locked, named, folder, "--target", "cluster")
    host = _host(tmp_path, request, "cluster")
    ran = host.run(named, UV_HTTP_RETRIES="0")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert host.installed()["fastops"] == "1.0"

    # ci is locked for another Python: its script renders, and on this host its preflight
    # refuses before anything is installed
    other = tmp_path / "ci.sh"
    _render(locked, other, folder, "--target", "ci")
    host = _host(tmp_path, request, "ci")
    before = host.installed()
    ran = host.run(other, UV_HTTP_RETRIES="0")
    assert ran.returncode != 0
    assert f"this runtime is not Python {OTHER_PYTHON}" in ran.stderr, ran.stdout + ran.stderr
    assert host.installed() == before


def test_bundle_target_fetches_only_that_sections_files(tmp_path: Path, served: Locked) -> None:
    locked = served
    folder = tmp_path / "ci"
    done = colabenv("bundle", locked.lock, "-o", folder, "--target", "ci")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    assert [s["name"] for s in manifest["sections"]] == ["ci"]
    assert _fastops(folder) == [f"fastops-1.0-{OTHER}-{OTHER}-manylinux_2_28_x86_64.whl"]
    unknown = colabenv("bundle", locked.lock, "-o", tmp_path / "gpu", "--target", "gpu")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert "team.lock: no section 'gpu' (sections: nb, cluster, ci)" in unknown.stderr
