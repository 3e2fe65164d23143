"""The profile's ``[reproducibility]`` reaches every interpreter of the environment through the
bootstrap script's ``.pth`` hook, before any framework can initialise CUDA."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from colabenv._target.helper import _env_hook_text
from colabenv.catalog.load import shipped_catalog
from colabenv.models import CpuTarget, Target
from colabenv.profile.load import load_profile
from colabenv.resolve.resolver import resolve
from colabenv.script.render import hook_pairs
from colabenv.seeding import XLA_DETERMINISM_FLAG
from tests.support.fixtures import Runner
from tests.support.index import LocalIndex
from tests.support.scriptrun import make_host

PY = f"{sys.version_info.major}.{sys.version_info.minor}"

SHOW = (
    "import json, os; print(json.dumps({k: os.environ.get(k) for k in ("
    "'COLABENV_SEED', 'COLABENV_DETERMINISTIC', 'PYTHONHASHSEED', 'CUBLAS_WORKSPACE_CONFIG', "
    "'TF_DETERMINISTIC_OPS', 'TF_CUDNN_DETERMINISTIC', 'XLA_FLAGS', 'TEAM_FLAG')}))"
)


def _hook_namespace(text: str, environ: dict[bytes, bytes]) -> dict[bytes, bytes]:
    """Run the hook line against a stand-in ``os`` whose ``environb`` is ``environ``."""

    class FakeOs:
        environb = environ

    exec(text.replace("import os; ", ""), {"os": FakeOs})
    return environ


def test_a_flag_pair_extends_the_variable_and_replaces_only_its_own_word() -> None:
    text = _env_hook_text({"A": "1", "+XLA_FLAGS": XLA_DETERMINISM_FLAG})
    assert text is not None and text.isascii() and text.count("\n") == 1
    env = _hook_namespace(text, {b"XLA_FLAGS": b"--xla_gpu_deterministic_ops=false --keep=1"})
    assert env == {b"A": b"1", b"XLA_FLAGS": b"--keep=1 " + XLA_DETERMINISM_FLAG.encode()}
    assert _hook_namespace(text, {}) == {b"A": b"1", b"XLA_FLAGS": XLA_DETERMINISM_FLAG.encode()}


def test_env_values_win_over_the_determinism_defaults(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(
        'name = "r"\n[env]\nCUBLAS_WORKSPACE_CONFIG = ":16:8"\n'
        "[reproducibility]\nseed = 5\ndeterministic = true\n"
    )
    profile = load_profile(path)
    resolution = resolve(profile, Target(CpuTarget(), Version(PY)), shipped_catalog(()))
    pairs = dict(hook_pairs(resolution, profile))
    assert pairs["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"
    assert pairs["COLABENV_SEED"] == "5" and pairs["+XLA_FLAGS"] == XLA_DETERMINISM_FLAG


@pytest.mark.slow
def test_the_hook_sets_the_variables_in_a_fresh_interpreter(
    tmp_path: Path, runner: Runner, default_index: LocalIndex
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(
        'name = "repro"\n[env]\nTEAM_FLAG = "on"\n'
        "[reproducibility]\nseed = 1234\ndeterministic = true\n"
        f'[install]\ninstaller = "uv"\nindex_url = "{default_index.url}"\n'
    )
    script = tmp_path / "setup.sh"
    done = runner("render", profile, "--cpu", "--python", PY, "-o", script, timeout=60)
    assert done.returncode == 0, done.stderr
    host = make_host(tmp_path / "host", with_pip=False)
    result = host.run(script)
    assert result.returncode == 0, result.stderr
    assert "COLABENV: restart required" in result.stdout
    seen = subprocess.run(
        [str(host.python), "-c", SHOW],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "XLA_FLAGS": "--xla_dump_to=/tmp/x"},
    )
    assert seen.returncode == 0 and seen.stderr == "", seen.stderr
    assert json.loads(seen.stdout) == {
        "COLABENV_SEED": "1234",
        "COLABENV_DETERMINISTIC": "1",
        "PYTHONHASHSEED": "1234",
        "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
        "TF_DETERMINISTIC_OPS": "1",
        "TF_CUDNN_DETERMINISTIC": "1",
        "TEAM_FLAG": "on",
        "XLA_FLAGS": f"--xla_dump_to=/tmp/x {XLA_DETERMINISM_FLAG}",
    }
    hashes = [
        subprocess.run(
            [
                str(host.python),
                "-c",
                "import subprocess, sys; print(subprocess.run([sys.executable, '-c',"
                " 'print(hash(\"colabenv\"))'], capture_output=True, text=True)"
                ".stdout.strip(), hash('colabenv'))",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin"},
        ).stdout.split()
        for _ in range(2)
    ]
    assert hashes[0][0] == hashes[1][0], "a child of the environment's Python hashes alike"
    assert hashes[0][1] != hashes[1][1], "the interpreter the hook ran in keeps random hashing"
    again = host.run(script)
    assert again.returncode == 0, again.stderr
    assert "COLABENV: nothing changed, no restart needed" in again.stdout
