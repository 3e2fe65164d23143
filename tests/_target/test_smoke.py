"""The smoke child as ``verify`` runs it: the folder ``colabenv/_target/smoke/`` by its path, in
an interpreter without colabenv, its modules (``base``, ``gpu``, ...) importing each other.

Every mode runs under this Python and under the oldest Python colabenv looks into (3.8: the
child is stdlib-only and promises it; ``COLABENV_TEST_OLD_PYTHONS`` adds more), with stand-in
frameworks on ``PYTHONPATH``; a module of a sibling's name in the working directory or on the
path is never taken for it, and no bytecode is written into colabenv's folder.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from colabenv._util.resources import SMOKE_PROGRAM
from tests.support.pythons import child_pythons
from tests.support.standin_frameworks import SOURCES, Standin, StandinVenv
from tests.support.standin_tpu import GIB, TpuStandin, install_jax_tpu, install_torch_xla

PYTHONS = child_pythons()
SIBLINGS = ("base", "determinism", "gpu", "packages", "seeds", "tpu", "vram")


def _decoys(folder: Path) -> Path:
    """A folder holding a module of each sibling's name that fails when imported."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in SIBLINGS:
        (folder / f"{name}.py").write_text(f"raise SystemExit('decoy {name} imported')\n")
    return folder


def _site(folder: Path, *standins: Standin) -> Path:
    for standin in standins:
        for relative, text in SOURCES[standin.framework](standin).items():
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    return folder


def _environ(site: Path, decoys: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("COLABENV_", "CUBLAS_", "TF_", "XLA_", "PJRT_", "PYTHON"))
    }
    env.update(PYTHONPATH=os.pathsep.join([str(decoys), str(site)]), **extra)
    return env


def _child(
    python: str, cwd: Path, env: dict[str, str], *args: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    result = cwd / "result.json"
    result.unlink(missing_ok=True)
    done = subprocess.run(
        [python, str(SMOKE_PROGRAM), *args, "--result", str(result)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
        check=False,
    )
    data = json.loads(result.read_text()) if result.exists() else None
    return done, data


def _bytecode() -> set[str]:
    cache = SMOKE_PROGRAM.parent / "__pycache__"
    return {p.name for p in cache.iterdir()} if cache.is_dir() else set()


@pytest.mark.parametrize("python", PYTHONS)
def test_every_mode_runs_by_path(tmp_path: Path, python: str) -> None:
    before = _bytecode()
    decoys = _decoys(tmp_path / "work")
    site = _site(tmp_path / "site", Standin("torch", "2.6.0+cu124"))
    env = _environ(site, decoys, CUBLAS_WORKSPACE_CONFIG=":4096:8")

    done, smoke = _child(python, decoys, env, "smoke", "torch")
    assert done.returncode == 0, done.stderr
    assert smoke is not None and smoke["stage"] == "done" and smoke["error"] is None
    assert smoke["version"] == "2.6.0+cu124" and smoke["cpu_max_abs_diff"] == 0.0
    assert [(d["name"], d["max_abs_diff"]) for d in smoke["devices"]] == [("Stand-in T4", 0.0)]

    go = tmp_path / "go"
    go.touch()
    done, vram = _child(
        python, decoys, env, "vram", "torch", "--go", str(go), "--deadline", "30", "--search", "30"
    )
    assert done.returncode == 0, done.stderr
    assert vram is not None and vram["probed"] is True
    assert [(g["total"], g["free"]) for g in vram["gpus"]] == [(16 * GIB, 15 * GIB)]
    assert vram["gpus"][0]["largest"] >= 12 * GIB - 64 * 1024 * 1024

    done, determinism = _child(python, decoys, env, "determinism", "torch", "--seed", "7")
    assert done.returncode == 0, done.stderr
    assert determinism is not None and determinism["error"] is None
    first, second = determinism["digests"]
    assert first == second and len(first) == 64

    result = decoys / "environ.json"
    done = subprocess.run(
        [
            python,
            str(SMOKE_PROGRAM),
            "environ",
            "--result",
            str(result),
            "CUBLAS_WORKSPACE_CONFIG",
            "NOT_SET",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=decoys,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(result.read_text())["environ"] == {
        "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
        "NOT_SET": None,
    }

    done, nothing = _child(python, decoys, env, "smoke", "caffe")
    assert (done.returncode, nothing) == (2, None)
    assert done.stderr.startswith("usage: python smoke smoke torch|jax|tensorflow")
    assert _bytecode() == before, "the child wrote bytecode into colabenv's folder"


@pytest.mark.parametrize("python", PYTHONS)
def test_the_tpu_smoke_runs_by_path(tmp_path: Path, python: str) -> None:
    decoys = _decoys(tmp_path / "work")
    jax_site = tmp_path / "jax-site"
    install_jax_tpu(StandinVenv(jax_site, Path(python), jax_site, jax_site / "none"), TpuStandin())
    done, jax = _child(python, decoys, _environ(jax_site, decoys), "smoke-tpu", "jax")
    assert done.returncode == 0, done.stderr
    assert jax is not None and jax["accelerator"] == "tpu" and jax["error"] is None
    assert [(d["name"], d["max_abs_diff"]) for d in jax["devices"]] == [("TPU v5 lite", 0.0)]
    assert jax["hbm"] == [{"index": 0, "name": "TPU v5 lite", "limit": 16 * GIB, "in_use": 1 * GIB}]

    torch_site = tmp_path / "torch-site"
    install_torch_xla(StandinVenv(torch_site, Path(python), torch_site, torch_site / "none"), TpuStandin())
    done, torch = _child(
        python, decoys, _environ(torch_site, decoys, PJRT_DEVICE="TPU"), "smoke-tpu", "torch"
    )
    assert done.returncode == 0, done.stderr
    assert torch is not None and torch["error"] is None
    assert [d["max_abs_diff"] for d in torch["devices"]] == [0.0]
    assert torch["hbm"][0]["limit"] == 16 * GIB
