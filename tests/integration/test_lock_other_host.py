"""A lock or a resolution for another platform or another Python than this interpreter's is not
held to what is installed here (issue 36): this host's installed versions are not the target's,
so none is read, and the output says so; ``--installed-from`` still gives them, and a target of
this very platform and Python keeps them. Real uv and pip-tools, an index on 127.0.0.1, and a
site directory with real installs of six 1.16.0 and a torch 2.8.0+cpu stand-in on the
interpreter's path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from colabenv.lock.file import read_lock, read_lock_file
from tests.support.index import LocalIndex
from tests.support.isolation import clean_env
from tests.support.locking import colabenv
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.slow

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
OTHER_PY = "3.12" if PY != "3.12" else "3.13"
AARCH64 = ["--platform", "linux_aarch64", "--cpu", "--python", PY]
AARCH64_NOTE = "installed versions: none read (the target is linux_aarch64, this host linux_x86_64)"
OTHER_PYTHON = ["--cpu", "--python", OTHER_PY]
OTHER_PYTHON_NOTE = (
    f"installed versions: none read (the target's Python is {OTHER_PY}, this interpreter's {PY})"
)


@pytest.fixture
def served(tmp_path: Path) -> tuple[LocalIndex, dict[str, str]]:
    """An index with six 1.16.0 and 1.17.0, and an environment whose interpreter has six 1.16.0
    and torch 2.8.0+cpu installed (pip's own install of the wheels into a folder on
    ``PYTHONPATH``)."""
    root = tmp_path / "index"
    old = build_wheel(root / "six", "six", "1.16.0")
    build_wheel(root / "six", "six", "1.17.0")
    torch = build_wheel(tmp_path / "wheels", "torch", "2.8.0+cpu")
    site = tmp_path / "site"
    argv = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target", site]
    subprocess.run([str(a) for a in (*argv, old, torch)], check=True, env=clean_env(), timeout=120)
    assert (site / "six-1.16.0.dist-info").is_dir()
    return LocalIndex(root), clean_env(UV_HTTP_RETRIES="0", PIP_RETRIES="0", PYTHONPATH=str(site))


def _profile(folder: Path, index: LocalIndex, more: str = "") -> Path:
    path = folder / "p.toml"
    path.write_text(
        f'name = "p"\n[packages]\nrequirements = ["six"]\n[install]\nindex_url = "{index.url}"\n{more}',
        encoding="utf-8",
    )
    return path


def _lock(
    tmp_path: Path, served: tuple[LocalIndex, dict[str, str]], *flags: str | Path, more: str = ""
) -> tuple[Path, str]:
    """``colabenv lock`` of the profile (``more`` after its keys) with ``flags``, the index
    served: the lock written (the run's exit 0 held to) and stderr."""
    index, env = served
    out = tmp_path / "p.lock"
    with index:
        made = colabenv("lock", _profile(tmp_path, index, more), "-o", out, *flags, env=env)
    assert made.returncode == 0, made.stderr
    return out, made.stderr


@pytest.mark.parametrize(
    ("flags", "note", "resolver"),
    [
        (AARCH64, AARCH64_NOTE, "uv"),
        (OTHER_PYTHON, OTHER_PYTHON_NOTE, "uv"),
    ],
    ids=["aarch64", "another-python"],
)
def test_a_lock_for_another_host_is_not_held_to_what_is_installed_here(
    tmp_path: Path, served: tuple[LocalIndex, dict[str, str]], flags: list[str], note: str, resolver: str
) -> None:
    out, stderr = _lock(tmp_path, served, "--resolver", resolver, *flags)
    assert read_lock(out).version_of("six") == "1.17.0"  # the index's newest, not this host's 1.16.0
    assert f"colabenv: {note}\n" in stderr


@pytest.mark.parametrize("resolver", ["uv", "pip-tools"])
def test_a_lock_for_this_host_keeps_what_is_installed_here(
    tmp_path: Path, served: tuple[LocalIndex, dict[str, str]], resolver: str
) -> None:
    out, stderr = _lock(tmp_path, served, "--resolver", resolver, "--cpu", "--python", PY)
    assert read_lock(out).version_of("six") == "1.16.0"
    assert "installed versions" not in stderr


def test_installed_from_still_gives_another_hosts_installed_versions(
    tmp_path: Path, served: tuple[LocalIndex, dict[str, str]]
) -> None:
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("six==1.16.0\n", encoding="utf-8")
    out, stderr = _lock(tmp_path, served, *AARCH64, "--installed-from", freeze)
    assert read_lock(out).version_of("six") == "1.16.0"
    assert "installed versions" not in stderr


def test_a_named_aarch64_target_is_not_held_to_what_is_installed_here(
    tmp_path: Path, served: tuple[LocalIndex, dict[str, str]]
) -> None:
    """A ``[targets]`` entry is made on no host: nothing is installed there, on any platform."""
    targets = (
        f'[targets]\ngrace = {{ platform = "linux_aarch64", cpu = true, python = "{PY}" }}\n'
        f'here = {{ cpu = true, python = "{PY}" }}\n'
    )
    out, _stderr = _lock(tmp_path, served, "--all-targets", more=targets)
    lock_file = read_lock_file(out)
    for name in ("grace", "here"):
        section = lock_file.section(name)
        assert section is not None and section.version_of("six") == "1.17.0", name


@pytest.mark.parametrize(
    ("flags", "note"),
    [(AARCH64, AARCH64_NOTE), (OTHER_PYTHON, OTHER_PYTHON_NOTE)],
    ids=["aarch64", "another-python"],
)
def test_resolve_json_says_no_installed_version_was_read(
    tmp_path: Path, served: tuple[LocalIndex, dict[str, str]], flags: list[str], note: str
) -> None:
    """This host's torch 2.8.0+cpu is the target's only where the target is this host's
    platform and Python."""
    index, env = served
    with index:
        profile = _profile(tmp_path, index, '[frameworks]\ntorch = "==2.8.0"\n')
        other = colabenv("resolve", profile, "--json", "--offline", *flags, env=env)
        here = colabenv("resolve", profile, "--json", "--offline", "--cpu", "--python", PY, env=env)
        plain = colabenv("resolve", profile, "--offline", *flags, env=env)
    assert other.returncode == 0, other.stderr
    shown = json.loads(other.stdout)
    assert shown["notes"] == [note]
    assert shown["frameworks"]["torch"]["installed"] is False
    assert here.returncode == 0, here.stderr
    kept = json.loads(here.stdout)
    assert kept["frameworks"]["torch"]["installed"] is True
    assert "notes" not in kept
    assert plain.returncode == 0 and f"\nnote: {note}\n" in plain.stdout
