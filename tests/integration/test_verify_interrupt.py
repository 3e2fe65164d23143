"""`colabenv verify` and its smoke children: Ctrl-C and SIGTERM end them at once and remove the
scratch folder; a child that prints without end costs verify only a bounded tail."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.proctree import PEAK_LAUNCHER, children_running, finish, session_members, wait_until
from tests.support.standin_frameworks import Behaviour, Standin, make_venv, venv_env, write_marker

pytestmark = pytest.mark.slow

TORCH = "2.6.0+cu124"
GPU_HOST = {
    "COLABENV_DRIVER_VERSION": "560.35.03",
    "COLABENV_CUDA_VERSION": "12.6",
    "COLABENV_COMPUTE_CAPABILITY": "7.5",
}


def _start(
    tmp_path: Path, behaviour: Behaviour, *args: str, launcher: tuple[str, ...] = ()
) -> tuple[subprocess.Popen[str], Path]:
    venv = make_venv(tmp_path / "venv")
    venv.install(Standin("torch", TORCH, behaviour))
    state = tmp_path / "state"
    write_marker(state, requirements=[f"torch=={TORCH}"], frameworks={"torch": TORCH}, python=venv.python)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = venv_env(COLABENV_STATE_DIR=str(state), TMPDIR=str(scratch), **GPU_HOST)
    proc = subprocess.Popen(
        [*launcher, str(venv.colabenv), "verify", "--json", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    return proc, scratch


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_smoke_children_at_once(tmp_path: Path, signum: int) -> None:
    proc, scratch = _start(tmp_path, Behaviour.HANG, "--timeout", "300")
    try:
        wait_until(lambda: bool(children_running(proc.pid, " smoke torch")), 60, "the smoke child")
        (child,) = children_running(proc.pid, " smoke torch")
        time.sleep(1.0)  # into its import, which hangs
        assert [p.name for p in scratch.iterdir() if p.name.startswith("colabenv-verify-")]
        sent = time.monotonic()
        os.kill(proc.pid, signum)
        code, stdout, stderr, _ = finish(proc, 60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 130, stderr
    assert stderr == "colabenv: interrupted\n"
    assert stdout == ""
    assert took < 5, f"verify took {took:.1f} s to end after the signal"
    assert session_members(child) == []
    assert [p.name for p in scratch.iterdir() if p.name.startswith("colabenv-verify-")] == []


def test_a_flooding_smoke_child_costs_verify_only_a_tail(tmp_path: Path) -> None:
    """256 MiB on stdout and a 64 MiB line on stderr: the smoke test passes, and the peak RSS of
    verify (and of every child it reaped) stays far below what the child printed."""
    peak_file = tmp_path / "peak-kib"
    launcher = (sys.executable, "-c", PEAK_LAUNCHER, str(peak_file))
    proc, _ = _start(tmp_path, Behaviour.FLOOD, "--timeout", "120", launcher=launcher)
    code, stdout, stderr, _ = finish(proc, 180)
    peak_mib = int(peak_file.read_text()) >> 10
    assert code in (0, 1), stderr
    checks = {c["name"]: c for c in json.loads(stdout)["checks"]}
    assert checks["smoke:torch"]["status"] == "PASS", checks["smoke:torch"]
    assert peak_mib < 200, f"peak RSS {peak_mib} MiB"
