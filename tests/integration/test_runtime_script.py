"""A script rendered here for ``--runtime colab-2026.07``, run by real bash in a real venv that
holds what that image's ``pip freeze`` lists: it keeps what the image has at the wanted version
and installs over what it has at another. The installer is a stand-in (no internet): it records
what it is asked for and "installs" it as metadata."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from colabenv.catalog.runtimes import shipped_runtimes
from colabenv.models import Accelerator
from tests.support.fixtures import Runner, make_venv
from tests.support.isolation import clean_env

PROFILE = """\
schema = 1
name = "on-colab"
description = "torch as the image has it; jax older and numpy newer than it has"

[frameworks]
torch = { version = ">=2.11,<2.12" }
jax = { version = "==0.7.1" }

[packages]
requirements = ["numpy>=2.1"]
"""

STANDIN_UV = """#!/bin/sh
# uv pip install --python PY [-c FILE] -r FILE: records argv; each line of the -r file becomes a
# dist-info of that name and version (for name>=X, version X)
echo "uv $*" >>"$STANDIN_LOG"
site="$(ls -d "$STANDIN_VENV"/lib/python3.*/site-packages)"
req=""; prev=""
for arg in "$@"; do [ "$prev" = "-r" ] && req="$arg"; prev="$arg"; done
while read -r line; do
  line="${line#\\'}"; line="${line%\\'}"
  name="${line%%[=<>]*}"; version="${line##*[=>]}"
  echo "installs $name $version" >>"$STANDIN_LOG"
  rm -rf "$site/$name"-*.dist-info
  mkdir -p "$site/$name-$version.dist-info"
  printf 'Metadata-Version: 2.1\\nName: %s\\nVersion: %s\\n' "$name" "$version" \\
    >"$site/$name-$version.dist-info/METADATA"
done <"$req"
"""


def _python(minor: str) -> str | None:
    """An interpreter of Python ``minor`` (``3.12``): this one, on PATH, or installed by pyenv."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == minor:
        return sys.executable
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates = [
        shutil.which(f"python{minor}"),
        *sorted(map(str, root.glob(f"versions/{minor}*/bin/python{minor}"))),
    ]
    for candidate in filter(None, candidates):
        done = subprocess.run([candidate, "-c", "print(1)"], capture_output=True, timeout=60, check=False)
        if done.returncode == 0:
            return candidate
    return None


@pytest.mark.slow
def test_the_script_for_the_current_runtime_keeps_its_stack_and_installs_what_differs(
    runner: Runner, tmp_path: Path
) -> None:
    # colab-2026.07, the newest dated version (colab-latest, the head, comes first and moves)
    runtime = next(r for r in shipped_runtimes().runtimes if r.id == "colab-2026.07")
    minor = f"{runtime.python.major}.{runtime.python.minor}"
    base = _python(minor)
    if base is None:
        pytest.skip(f"no Python {minor} on this machine")
    profile = tmp_path / "on-colab.toml"
    profile.write_text(PROFILE, encoding="utf-8")
    script = tmp_path / "setup.sh"
    done = runner("render", profile, "--runtime", runtime.id, "--cpu", "-o", script)
    assert done.returncode == 0, done.stderr

    venv = tmp_path / "venv"
    python = make_venv(venv, base=base)
    site = next((venv / "lib").glob("python3.*/site-packages"))
    image = runtime.image(Accelerator.CPU)
    for dist in image.installed.dists:  # the image as its pip freeze lists it
        folder = site / f"{dist.name.replace('-', '_')}-{dist.version}.dist-info"
        folder.mkdir()
        (folder / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist.name}\nVersion: {dist.version}\n"
        )
    uv = tmp_path / "uv"
    uv.write_text(STANDIN_UV, encoding="utf-8")
    uv.chmod(0o755)
    log = tmp_path / "installer.log"
    env = clean_env(
        COLABENV_PYTHON=str(python),
        COLABENV_UV=str(uv),
        COLABENV_STATE_DIR=str(tmp_path / "state"),
        STANDIN_LOG=str(log),
        STANDIN_VENV=str(venv),
    )
    ran = subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    installs = [line for line in log.read_text().splitlines() if line.startswith("installs ")]
    assert installs == ["installs jax 0.7.1", "installs jaxlib 0.7.1", "installs numpy 2.1"]
    assert "COLABENV: DOWNGRADED jax 0.7.2 -> 0.7.1" in ran.stdout
    assert "COLABENV: upgraded numpy 2.0.2 -> 2.1" in ran.stdout
    assert [p.name for p in site.glob("torch-*.dist-info")] == ["torch-2.11.0+cpu.dist-info"]
