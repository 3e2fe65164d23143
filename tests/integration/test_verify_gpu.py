"""The real smoke tests and VRAM probe, for whichever of torch, jax, tensorflow is importable.

Marked ``gpu``: run by hand on a GPU host (``pytest -m gpu tests/integration/test_verify_gpu.py -s``); the
default run deselects them. They exercise the child code against the real frameworks, which the
stand-ins only imitate.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

import pytest

from colabenv.accelerators.registry import accelerator_of
from colabenv.models import Fingerprint, Framework
from colabenv.verification.children import check_smoke, check_vram, probe_framework, run_probe, run_smoke
from colabenv.verification.report import Status
from tests.support.checks import expect
from tests.support.fixtures import Runner

pytestmark = pytest.mark.gpu

TIMEOUT = 300.0
FRAMEWORKS = [
    f
    for f in (Framework.TORCH, Framework.JAX, Framework.TENSORFLOW)
    if importlib.util.find_spec(f.value) is not None
]


def _fingerprint() -> Fingerprint:
    from colabenv.host.detect import detect

    return detect()


@pytest.fixture(scope="module")
def gpu_host() -> bool:
    fingerprint = _fingerprint()
    if not accelerator_of(fingerprint.target).traits.gpu:
        pytest.skip("no NVIDIA GPU detected")
    return True


@pytest.mark.parametrize("framework", FRAMEWORKS, ids=lambda f: f.value)
def test_real_smoke_test_passes_on_the_gpu(gpu_host: bool, framework: Framework) -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        run = run_smoke(framework, TIMEOUT, python=sys.executable, scratch=Path(scratch))
    elapsed = time.monotonic() - started
    check = check_smoke(framework, run, timeout=TIMEOUT, host_has_gpu=True, require_gpu=True)
    print(f"\n{check.name}: {check.status.value} in {elapsed:.1f}s: {check.detail}")
    assert check.status is Status.PASS, f"{check.detail}\n{run.completed.stderr[-2000:]}"
    assert "matmul agrees with CPU" in check.detail


def test_real_vram_probe_finds_a_large_block(gpu_host: bool) -> None:
    framework = probe_framework(lambda name: importlib.util.find_spec(name) is not None)
    if framework is None:
        pytest.skip("no torch, cupy or jax to probe with")
    with tempfile.TemporaryDirectory() as scratch:
        go = Path(scratch) / "go"
        go.touch()
        run = run_probe(framework, go, TIMEOUT, python=sys.executable, scratch=Path(scratch))
    fingerprint = _fingerprint()
    check = check_vram(
        fingerprint.gpus, run, probe_timeout=TIMEOUT, host_has_gpu=True, require_gpu=True, min_free_gib=None
    )
    print(f"\nvram: {check.status.value}: {check.detail}")
    assert check.status is Status.PASS, f"{check.detail}\n{run.completed.stderr[-2000:]}"
    assert "largest block" in check.detail


def test_real_verify_runs_the_smoke_tests_concurrently(
    gpu_host: bool, tmp_path: Path, runner: Runner
) -> None:
    if not FRAMEWORKS:
        pytest.skip("no framework importable")
    singles = {}
    for framework in FRAMEWORKS:
        started = time.monotonic()
        run_smoke(framework, TIMEOUT, python=sys.executable, scratch=tmp_path)
        singles[framework.value] = time.monotonic() - started
    started = time.monotonic()
    result = runner("verify", "--json", "--timeout", str(TIMEOUT), timeout=TIMEOUT * 2)
    whole = time.monotonic() - started
    data = json.loads(result.stdout)
    print("\n" + json.dumps(data, indent=2))
    slowest = max(singles.values())
    print(f"verify {whole:.1f}s; single smoke tests {singles}; ratio {whole / slowest:.2f}x the slowest")
    expect(
        data, {**{f"smoke:{framework.value}": "PASS" for framework in FRAMEWORKS}, "vram": {"PASS", "WARN"}}
    )
    assert whole < 2 * slowest + 10
