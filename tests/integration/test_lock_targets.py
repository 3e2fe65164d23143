"""One lock, several named targets (issue 26): `lock --all-targets` for real with uv and
pip-tools against the local indexes, `render --lock` picking the section, `--target`, the no-fit
refusal, `lock --check` of a sectioned lock, and a schema-2 lock written before sections."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from colabenv._util import toml
from colabenv.lock.file import parse_lock_file, read_lock, read_lock_file, render_lock_file
from colabenv.lock.resolvers import RESOLVERS
from tests.support.fixtures import *  # noqa: F403
from tests.support.index import LocalIndex
from tests.support.locking import (
    CLUSTER_FLAGS,
    NB_FLAGS,
    OTHER_PYTHON,
    PYTHON,
    colabenv,
    target_indexes,
)
from tests.support.locking import write_targets_profile as write_profile
from tests.support.wheels import Standins

DATA = Path(__file__).resolve().parents[1] / "data" / "lock"


@pytest.fixture(scope="module")
def indexes(
    standin_wheels: Standins, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LocalIndex, ...]]:
    """The stand-in indexes, and one serving ``fastops``: a compiled wheel per Python."""
    with target_indexes(standin_wheels, tmp_path_factory.mktemp("compiled")) as served:
        yield served


@pytest.fixture(scope="module")
def uv_lock(tmp_path_factory: pytest.TempPathFactory, indexes: tuple[LocalIndex, ...]) -> tuple[Path, Path]:
    """A profile with three targets and its lock of every target, made with uv."""
    folder = tmp_path_factory.mktemp("uv-lock")
    profile = write_profile(folder, indexes, OTHER_PYTHON)
    out = folder / "team.lock"
    result = colabenv("lock", profile, "--all-targets", "-o", out)
    assert result.returncode == 0, result.stderr
    return profile, out


def _torch(lock_file_path: Path, section: str) -> str | None:
    lock = read_lock_file(lock_file_path).section(section)
    assert lock is not None
    return lock.version_of("torch")


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_all_targets_one_section_each(tmp_path: Path, indexes: tuple[LocalIndex, ...], resolver: str) -> None:
    ci_python = OTHER_PYTHON if resolver == "uv" else PYTHON
    profile = write_profile(tmp_path, indexes, ci_python)
    out = tmp_path / "team.lock"
    result = colabenv("lock", profile, "--all-targets", "--resolver", resolver, "-o", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    for name in ("nb", "cluster", "ci"):
        assert f"(target {name})" in result.stderr
    text = out.read_text()
    assert "# lock-schema: 3" in text and "# targets: nb cluster ci" in text
    assert text.count("# profile-hash: ") == 1, "the header is shared"
    lock_file = read_lock_file(out)
    assert lock_file.names == ("nb", "cluster", "ci")
    nb, cluster, ci = (lock_file.section(n) for n in lock_file.names)
    assert nb is not None and cluster is not None and ci is not None
    assert nb.version_of("torch") == "2.6.0+cu124"
    assert cluster.version_of("torch") == "2.6.0+cu126"
    assert ci.version_of("torch") == "2.6.0+cpu"
    assert any(p.name.startswith("nvidia-") for p in nb.packages)
    assert not any(p.name.startswith("nvidia-") for p in ci.packages)
    assert (nb.header.target.compute_capabilities, cluster.header.target.compute_capabilities) == (
        ("7.5",),
        ("9.0",),
    )
    assert ci.header.target.driver is None and ci.header.target.python == ci_python
    for lock in (nb, cluster, ci):
        assert lock.header.resolver.split()[0] == resolver
        assert lock.header.profile_name == "team-targets"
    fastops = {n: lock_file.section(n).package("fastops").files[0].sha256 for n in lock_file.names}  # type: ignore[union-attr]
    compiled = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in indexes[2].root.glob("*.whl")}
    own = next(h for name, h in compiled.items() if f"cp{PYTHON.replace('.', '')}" in name)
    assert fastops["nb"] == fastops["cluster"] == own
    if resolver == "uv":
        assert fastops["ci"] != own and fastops["ci"] in compiled.values()
    assert render_lock_file(lock_file) == text, "read back and written again, the same bytes"


def test_pylock_form_holds_the_sections(tmp_path: Path, uv_lock: tuple[Path, Path]) -> None:
    profile, requirements_lock = uv_lock
    out = tmp_path / "pylock.toml"
    result = colabenv("lock", profile, "--all-targets", "--format", "pylock", "-o", out)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "dependency-groups = [" in text and 'default-groups = ["nb"]' in text
    document = toml.loads(text)
    assert document["dependency-groups"] == ["nb", "cluster", "ci"]
    markers = {p["marker"] for p in document["packages"]}
    assert {'"nb" in dependency_groups', '"ci" in dependency_groups'} <= markers
    assert all("tool" not in p for p in document["packages"])
    from_pylock = read_lock_file(out)
    from_requirements = read_lock_file(requirements_lock)
    assert from_pylock.names == from_requirements.names
    for name in from_pylock.names:
        assert from_pylock.section(name).pins == from_requirements.section(name).pins  # type: ignore[union-attr]
    assert parse_lock_file(render_lock_file(from_pylock, pylock=True), out).names == from_pylock.names


def test_target_flag_locks_the_named_sections(tmp_path: Path, indexes: tuple[LocalIndex, ...]) -> None:
    profile = write_profile(tmp_path, indexes)
    out = tmp_path / "ci.lock"
    result = colabenv("lock", profile, "--target", "ci", "-o", out)
    assert result.returncode == 0, result.stderr
    assert read_lock_file(out).names == ("ci",)
    unknown = colabenv("lock", profile, "--target", "gpu", "-o", out)
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert "no such target (targets: nb, cluster, ci)" in unknown.stderr
    both = colabenv("lock", profile, "--target", "ci", "--cpu", "-o", out)
    assert both.returncode == 2 and "leave out --cpu" in both.stderr
    assert read_lock_file(out).names == ("ci",), "a refused run leaves the lock as it was"
    other_python = write_profile(tmp_path, indexes, OTHER_PYTHON)
    pip_tools = colabenv("lock", other_python, "--target", "ci", "--resolver", "pip-tools", "-o", out)
    assert pip_tools.returncode == 2 and pip_tools.stderr.count("\n") == 1
    assert pip_tools.stderr.startswith(
        "colabenv: target ci: pip-tools resolves for the Python running colabenv"
    )


def test_render_picks_the_section_the_host_fits(uv_lock: tuple[Path, Path]) -> None:
    profile, lock = uv_lock
    cluster = colabenv("render", profile, "--lock", lock, *CLUSTER_FLAGS)
    assert cluster.returncode == 0, cluster.stderr
    assert "torch==2.6.0+cu126" in cluster.stdout and "torch==2.6.0+cu124" not in cluster.stdout
    assert cluster.stderr == "colabenv: note: installing section cluster of team.lock\n"
    nb = colabenv("render", profile, "--lock", lock, *NB_FLAGS)
    assert nb.returncode == 0, nb.stderr
    assert "torch==2.6.0+cu124" in nb.stdout and "+cu126" not in nb.stdout
    named = colabenv("render", profile, "--lock", lock, "--target", "ci")
    assert named.returncode == 0, named.stderr
    assert "torch==2.6.0+cpu" in named.stdout and "+cu12" not in named.stdout


def test_render_no_section_fits_is_exit_2_naming_each(uv_lock: tuple[Path, Path]) -> None:
    profile, lock = uv_lock
    result = colabenv(
        "render",
        profile,
        "--lock",
        lock,
        "--driver",
        "570.86.10",
        "--compute-capability",
        "8.0",
        "--python",
        PYTHON,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    message = result.stderr
    assert "team.lock: no section fits this host" in message
    assert "nb: target: driver 550.54.15 in the lock, 570.86.10 now" in message
    assert "cluster: target: driver 580.65.06 in the lock, 570.86.10 now" in message
    assert "ci: target: accelerator" not in message  # cpu and nvidia differ by their driver line
    assert "ci: target: driver none in the lock, 570.86.10 now" in message
    missing = colabenv("render", profile, "--lock", lock, "--target", "edge")
    assert missing.returncode == 2 and "no such target" in missing.stderr


def test_check_a_sectioned_lock(
    tmp_path: Path, uv_lock: tuple[Path, Path], indexes: tuple[LocalIndex, ...]
) -> None:
    source_profile, source_lock = uv_lock
    profile = tmp_path / "team.toml"
    lock = tmp_path / "team.lock"
    shutil.copy(source_profile, profile)
    shutil.copy(source_lock, lock)
    fresh = colabenv("lock", profile, "-o", lock, "--check")
    assert fresh.returncode == 0, fresh.stderr
    assert [line.split(": ")[1] for line in fresh.stdout.splitlines()] == ["nb", "cluster", "ci"]
    assert fresh.stdout.count("up to date with team.toml") == 3
    one = colabenv("lock", profile, "-o", lock, "--check", "--target", "cluster")
    assert one.returncode == 0 and one.stdout.splitlines() == [f"{lock}: cluster: up to date with team.toml"]
    assert colabenv("lock", profile, "-o", lock, "--check", "--target", "edge").returncode == 2
    flags = colabenv("lock", profile, "-o", lock, "--check", "--cpu")
    assert flags.returncode == 2 and "leave out --cpu" in flags.stderr
    profile.write_text(
        profile.read_text().replace('compute_capability = "9.0"', 'compute_capability = "8.0"')
    )
    stale = colabenv("lock", profile, "-o", lock, "--check")
    assert stale.returncode == 1
    assert "team.lock: cluster: stale: " in stale.stdout and "the profile changed" in stale.stdout
    assert "compute capabilities 9.0 in the lock, 8.0 now" in stale.stdout


def test_schema_2_lock_reads_as_before(tmp_path: Path) -> None:
    """A lock written by colabenv before sections (committed as it was written) reads as one
    unnamed section, renders and checks as before."""
    old = DATA / "schema2.lock"
    lock_file = read_lock_file(old)
    assert not lock_file.sectioned and lock_file.names == ()
    assert lock_file.first == read_lock(old)
    assert lock_file.first.header.schema == 2
    assert render_lock_file(lock_file) == old.read_text()
    profile = DATA / "schema2.toml"
    check = colabenv("lock", profile, "-o", old, "--check", *NB_FLAGS[:4], "--python", "3.11")
    assert check.returncode == 0, check.stdout + check.stderr
    script = colabenv("render", profile, "--lock", old, *NB_FLAGS[:4], "--python", "3.11")
    assert script.returncode == 0, script.stderr
    assert "torch==2.6.0+cu124" in script.stdout
