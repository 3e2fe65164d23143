"""The one smoke mechanism both accelerator kinds share (:func:`check_device_smoke`, :func:`run_smoke`),
what differs between them held as data (:data:`GPU_SMOKE`, :data:`TPU_SMOKE`)."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

from colabenv._util import processes
from colabenv.models import Framework, TpuTarget
from colabenv.verification.children import (
    GPU_SMOKE,
    TPU_SMOKE,
    ChildRun,
    SmokeDevice,
    check_device_smoke,
    run_smoke,
)
from colabenv.verification.report import Check, Status

V5E = TpuTarget("v5e", "v5litepod-8", 8)


def _run(devices: list[dict[str, object]], **fields: object) -> ChildRun:
    result: dict[str, object] = {
        "mode": "smoke",
        "framework": "jax",
        "stage": "done",
        "version": "0.6.2",
        "cuda": "12.4",
        "cudnn": "9.1.0",
        "arch_list": ["sm_80"],
        "devices": devices,
        "cpu_max_abs_diff": 0.0,
        "cpu_non_finite": 0,
        "error": None,
    }
    result.update(fields)
    completed = processes.Completed(("python", "smoke"), 0, "", "", False)
    return ChildRun(completed, json.dumps(result))


def _device(index: int, name: str, capability: str | None, **fields: object) -> dict[str, object]:
    return {
        "index": index,
        "name": name,
        "capability": capability,
        "max_abs_diff": 0.0,
        "error": None,
    } | fields


def _never(*_: object) -> Check:
    raise AssertionError("devices were listed")


@pytest.mark.parametrize(
    ("device", "capability", "passed", "failed"),
    [
        (
            GPU_SMOKE,
            "7.5",
            "2 GPUs: Tesla T4 (sm_75): matmul agrees with CPU; jax 0.6.2, CUDA 12.4, cuDNN 9.1.0",
            "jax 0.6.2: GPU1 Tesla T4 (sm_75): no kernels for sm_75 in jax's arch list (sm_80): "
            "no kernel image",
        ),
        (
            TPU_SMOKE,
            None,
            "2 TPU devices (Tesla T4): matmul agrees with CPU; jax 0.6.2",
            "jax 0.6.2: TPU1 Tesla T4: no kernel image",
        ),
    ],
)
def test_each_kind_names_its_devices_and_what_they_lack(
    device: SmokeDevice, capability: str | None, passed: str, failed: str
) -> None:
    good = [_device(0, "Tesla T4", capability), _device(1, "Tesla T4", capability)]
    check = check_device_smoke(device, Framework.JAX, _run(good), timeout=30, no_device=_never)
    assert (check.name, check.status, check.detail) == ("smoke:jax", Status.PASS, passed)
    bad = [good[0], _device(1, "Tesla T4", capability, error="no kernel image")]
    check = check_device_smoke(device, Framework.JAX, _run(bad), timeout=30, no_device=_never)
    assert (check.status, check.detail) == (Status.FAIL, failed)


@pytest.mark.parametrize("device", [GPU_SMOKE, TPU_SMOKE])
def test_the_shared_steps_come_first_and_no_device_is_the_callers_call(device: SmokeDevice) -> None:
    wrong = _run([_device(0, "x", None)], cpu_max_abs_diff=1.0)
    check = check_device_smoke(device, Framework.JAX, wrong, timeout=30, no_device=_never)
    assert check.status is Status.FAIL and check.detail.startswith("jax 0.6.2: CPU matmul differs")
    seen: list[str] = []

    def none(result: object, label: str) -> Check:
        seen.append(label)
        return Check("smoke:jax", Status.WARN, "none")

    assert check_device_smoke(device, Framework.JAX, _run([]), timeout=30, no_device=none).detail == "none"
    assert seen == ["jax 0.6.2"]


def test_the_kinds_differ_in_mode_environment_and_sharing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PJRT_DEVICE", raising=False)
    assert (GPU_SMOKE.mode, TPU_SMOKE.mode) == ("smoke", "smoke-tpu")
    assert GPU_SMOKE.one_at_a_time is None and TPU_SMOKE.one_at_a_time is not None
    assert TPU_SMOKE.env(Framework.TORCH)["PJRT_DEVICE"] == "TPU"
    assert "PJRT_DEVICE" not in GPU_SMOKE.env(Framework.TORCH)
    assert GPU_SMOKE.env(Framework.JAX)["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"


def test_a_tpu_that_lists_no_device_names_the_host() -> None:
    from colabenv.verification.children import check_tpu_smoke

    check = check_tpu_smoke(Framework.JAX, _run([], gpu_reason="no TPU backend"), timeout=30, tpu=V5E)
    assert check.status is Status.FAIL
    assert check.detail.startswith("jax 0.6.2 sees no TPU although the host has one (")
    assert check.detail.endswith("; no TPU backend)")


def _recording_python(folder: Path) -> str:
    """A stand-in interpreter that writes what it was run with (argv, ``PJRT_DEVICE``) as its
    result."""
    path = folder / "python"
    path.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "with open(sys.argv[-1], 'w') as out:\n"
        "    json.dump({'argv': sys.argv[1:], 'pjrt': os.environ.get('PJRT_DEVICE')}, out)\n"
    )
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize(("device", "pjrt"), [(GPU_SMOKE, None), (TPU_SMOKE, "TPU")])
def test_run_smoke_runs_the_kinds_mode_in_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, device: SmokeDevice, pjrt: str | None
) -> None:
    monkeypatch.delenv("PJRT_DEVICE", raising=False)
    run = run_smoke(Framework.TORCH, 30, python=_recording_python(tmp_path), scratch=tmp_path, device=device)
    assert run.completed.returncode == 0 and run.result is not None
    seen = json.loads(run.result)
    result = str(tmp_path / f"{device.mode}-torch.json")
    assert seen["argv"][1:] == [device.mode, "torch", "--result", result]
    assert seen["pjrt"] == pjrt


def test_a_tpu_smoke_child_waits_for_the_one_before_it(tmp_path: Path) -> None:
    lock = TPU_SMOKE.one_at_a_time
    assert lock is not None
    python = _recording_python(tmp_path)
    done = threading.Event()

    def child() -> None:
        run_smoke(Framework.JAX, 30, python=python, scratch=tmp_path, device=TPU_SMOKE)
        done.set()

    with lock:  # another TPU child holds the TPU
        thread = threading.Thread(target=child)
        thread.start()
        assert not done.wait(0.5)
    assert done.wait(30)
    thread.join()
    with lock:  # a GPU child does not wait for the TPU
        assert run_smoke(Framework.JAX, 30, python=python, scratch=tmp_path).completed.returncode == 0


@pytest.mark.parametrize("device", [GPU_SMOKE, TPU_SMOKE])
def test_a_count_past_the_bound_still_fails_and_a_long_text_is_cut(device: SmokeDevice) -> None:
    """A child's count too large to be a real one is held at the bound, not read as none found;
    a text it reports (its error here) is cut, whatever its length."""
    huge = 2**70
    capability = "8.0" if device is GPU_SMOKE else None
    on_cpu = _run([_device(0, "A100", capability)], cpu_non_finite=huge)
    check = check_device_smoke(device, Framework.JAX, on_cpu, timeout=30, no_device=_never)
    assert check.status is Status.FAIL and "non-finite" in check.detail
    on_gpu = _run([_device(0, "A100", capability, non_finite=huge)])
    check = check_device_smoke(device, Framework.JAX, on_gpu, timeout=30, no_device=_never)
    assert check.status is Status.FAIL and "non-finite" in check.detail
    long = _run([_device(0, "A100", capability)], error="CUDA error: " + "x" * 10**6)
    check = check_device_smoke(device, Framework.JAX, long, timeout=30, no_device=_never)
    assert check.status is Status.FAIL and len(check.detail) < 2_100 and check.detail.endswith("...")
