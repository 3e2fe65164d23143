"""The colabenv wheel ``render --format dockerfile -o DIR`` puts into the build folder, installed
by real pip into a fresh venv with no index: the image needs no colabenv release anywhere."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from colabenv import __version__
from tests.support.containers import dependency_wheelhouse
from tests.support.fixtures import Runner, copy_venv
from tests.support.isolation import clean_env

pytestmark = pytest.mark.slow


def test_the_build_folder_wheel_installs_with_no_index_and_runs(
    tmp_path: Path, runner: Runner, pip_venv_template: Path
) -> None:
    done = runner("render", "cpu-only", "--cpu", "--python", "3.12", "--format", "dockerfile", "-o", "ctx")
    assert done.returncode == 0, done.stderr
    wheel = tmp_path / "ctx" / f"colabenv-{__version__}-py3-none-any.whl"
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    dockerfile = (tmp_path / "ctx" / "Dockerfile").read_text(encoding="utf-8")
    assert f"echo '{digest}  /opt/colabenv-build/{wheel.name}'" in dockerfile
    listing = tmp_path / "check.sha256"
    listing.write_text(f"{digest}  {wheel}\n")
    checked = subprocess.run(
        ["sha256sum", "--check", "--strict", str(listing)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr

    python = copy_venv(pip_venv_template, tmp_path / "venv")
    wheels = dependency_wheelhouse(tmp_path / "deps")
    env = clean_env()
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-index", "--find-links", str(wheels), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    version = subprocess.run(
        [str(python), "-m", "colabenv", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert version.returncode == 0, version.stderr
    assert __version__ in version.stdout
    command = subprocess.run(
        [str(python.parent / "colabenv"), "profiles", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert command.returncode == 0, command.stderr
    assert "cpu-only" in command.stdout, "the shipped profiles are in the wheel"
    site = subprocess.run(
        [str(python), "-c", "import colabenv; print(colabenv.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert str(tmp_path / "venv") in site.stdout, "colabenv runs from the venv, not from this checkout"
