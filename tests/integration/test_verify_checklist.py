"""``colabenv verify --json`` with the pre-training checklist, in a real venv of stand-in
frameworks: ``io:<path>`` checks and the ``determinism`` check, from a restart marker and from a
profile, with the ``.pth`` hook the bootstrap script writes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from colabenv._target.helper import _env_hook_text
from colabenv.models import Reproducibility
from colabenv.script.state import ENV_HOOK_NAME
from colabenv.seeding import hook_environment
from tests.integration.test_verify import JAX, TF, TORCH, Case, _catalog_torch, _install_companions
from tests.support.checks import details as details_of
from tests.support.checks import expect
from tests.support.standin_frameworks import Behaviour

pytestmark = pytest.mark.slow

ALL_THREE = [f"torch=={TORCH}", f"jax[cuda12]=={JAX}", f"tensorflow=={TF}"]
SEEDED = {"seed": 1234, "deterministic": True}


def _hook(case: Case, seed: int = 1234, deterministic: bool = True) -> None:
    """The ``.pth`` hook the bootstrap script writes for this [reproducibility]."""
    text = _env_hook_text(dict(hook_environment(Reproducibility(seed, deterministic))))
    assert text is not None
    (case.venv.site_packages / ENV_HOOK_NAME).write_text(text, encoding="utf-8")


def _verify(case: Case, *args: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    """The exit code, the whole report (its determinism row included) and its details."""
    code, _, _, _ = case.verify(*args)
    return code, case.report, details_of(case.report)


def test_a_checklist_marker_reports_io_and_determinism_for_every_framework(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    case = (
        Case(tmp_path)
        .gpu_host()
        .torch()
        .jax()
        .tensorflow()
        .marker(ALL_THREE, verify={"io": [{"path": str(data)}], "io_size_mib": 8}, reproducibility=SEEDED)
    )
    _hook(case)
    code, report, details = _verify(case)
    expect(report, {f"io:{data}": ("PASS", "MiB/s uncached", "8 MiB written"), "determinism": "PASS"})
    assert details["determinism"].startswith(
        f"seed 1234, deterministic: two seeded runs bit-identical (torch {TORCH} on GPU0 "
        f"Stand-in T4; tensorflow {TF} on GPU0; jax {JAX} on GPU0 Stand-in T4)"
    )
    assert code == 0
    names = case.order
    assert (
        names.index("smoke:jax")
        < names.index(f"io:{data}")
        < names.index("determinism")
        < names.index("vram")
    )
    assert list(data.iterdir()) == []


def test_a_framework_that_returns_different_bits_fails_determinism(tmp_path: Path) -> None:
    case = (
        Case(tmp_path)
        .gpu_host()
        .torch(Behaviour.NONDETERMINISTIC)
        .jax()
        .marker([f"torch=={TORCH}", f"jax[cuda12]=={JAX}"], reproducibility=SEEDED)
    )
    _hook(case)
    code, report, details = _verify(case)
    expect(report, {"smoke:torch": "PASS", "determinism": "FAIL"})
    assert details["determinism"].startswith(
        f"torch {TORCH} on GPU0 Stand-in T4: two seeded runs differ (sha256 "
    )
    assert "jax" not in details["determinism"]
    assert code == 1


def test_without_the_hook_determinism_fails_naming_the_variables(tmp_path: Path) -> None:
    case = Case(tmp_path).gpu_host().torch().marker([f"torch=={TORCH}"], reproducibility=SEEDED)
    code, report, details = _verify(case)
    expect(report, determinism="FAIL")
    assert details["determinism"].startswith(
        "COLABENV_SEED is not set (expected 1234); PYTHONHASHSEED is not set (expected 1234); "
        "COLABENV_DETERMINISTIC is not set (expected 1); and 4 more (the setup script's .pth "
        "hook sets them when Python starts"
    )
    assert code == 1


def test_a_smoke_test_that_hangs_is_not_run_again_for_determinism(tmp_path: Path) -> None:
    case = (
        Case(tmp_path)
        .gpu_host()
        .torch(Behaviour.HANG)
        .marker([f"torch=={TORCH}"], reproducibility=SEEDED, timeout_s=600)
    )
    _hook(case)
    code, _, _, elapsed = case.verify("--timeout", "3")
    expect(case.report, determinism="FAIL")
    assert details_of(case.report)["determinism"] == "torch: not run (smoke:torch failed)"
    assert elapsed < 3 + 6
    assert code == 1


def test_io_failures_name_the_path_and_the_reason(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    missing = tmp_path / "missing"
    case = (
        Case(tmp_path)
        .torch(Behaviour.NO_GPU)
        .marker(
            [f"torch=={TORCH}"],
            verify={
                "io": [
                    {"path": str(data), "min_read_mib_s": 9e6, "min_write_mib_s": None},
                    {"path": str(missing)},
                ],
                "io_size_mib": 4,
            },
        )
    )
    code, report, details = _verify(case)
    expect(
        report,
        {
            f"io:{data}": ("FAIL", "is below the 9e+06 MiB/s asked for"),
            f"io:{missing}": "FAIL",
            "determinism": "SKIP",
        },
    )
    assert details[f"io:{data}"].startswith(f"{data}: read ")
    assert details[f"io:{missing}"] == f"{missing}: does not exist"
    assert code == 1


def _checklist_profile(path: Path, version: str, data: Path) -> Path:
    path.write_text(
        "\n".join(
            [
                'name = "checklist"',
                "[frameworks]",
                f'torch = "=={version}"',
                "[verify]",
                f'io_paths = ["{data}"]',
                "io_size_mib = 8",
                "[reproducibility]",
                "seed = 1234",
                "deterministic = true",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    return path


def test_verify_of_a_checklist_profile_reports_io_and_determinism(tmp_path: Path) -> None:
    """The issue's "done when": a profile with io_paths and [reproducibility]."""
    version, tag, cuda, driver = _catalog_torch()
    data = tmp_path / "data"
    data.mkdir()
    case = (
        Case(tmp_path)
        .gpu_host(COLABENV_DRIVER_VERSION=driver, COLABENV_CUDA_VERSION=cuda)
        .torch(version=f"{version}+{tag}", cuda=cuda)
    )
    profile = _checklist_profile(tmp_path / "checklist.toml", version, data)
    _install_companions(case, profile, f"{version}+{tag}", driver, cuda)
    _hook(case)
    code, report, details = _verify(case, "--profile", str(profile))
    expect(report, {f"io:{data}": "PASS", "determinism": ("PASS", f"torch {version}+{tag} on GPU0")})
    assert code == 0, details


def test_the_json_report_holds_the_checklist_checks(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    case = (
        Case(tmp_path)
        .torch(Behaviour.NO_GPU)
        .marker(
            [f"torch=={TORCH}"],
            verify={"io": [{"path": str(data)}], "io_size_mib": 4},
            reproducibility={"seed": 3, "deterministic": True},
        )
    )
    _hook(case, seed=3)
    result = case.venv.run_verify("--json", env=case.env)
    report: dict[str, Any] = json.loads(result.stdout)
    expect(report, {"determinism": ("PASS", "on CPU"), f"io:{data}": "PASS"})
    assert report["ok"] is (result.returncode == 0)


FAKE_PYNVML = '''\
"""Stands in for nvidia-ml-py in this venv: GPUs and the compute processes NVML lists."""
import types

GPUS = {gpus!r}
PROCESSES = {processes!r}


class NVMLError(Exception):
    pass


def nvmlInit():
    pass


def nvmlShutdown():
    pass


def nvmlDeviceGetCount():
    return len(GPUS)


def nvmlDeviceGetHandleByIndex(index):
    return index


def nvmlDeviceGetName(handle):
    return GPUS[handle][0]


def nvmlDeviceGetMemoryInfo(handle):
    return types.SimpleNamespace(total=GPUS[handle][1], free=GPUS[handle][1], used=0)


def nvmlDeviceGetComputeRunningProcesses(handle):
    return [types.SimpleNamespace(pid=pid, usedGpuMemory=used)
            for pid, used in PROCESSES.get(handle, [])]
'''

GIB = 1024**3


def test_vram_lists_who_holds_the_gpu_and_warns_about_another_process(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        ["zombie-trainer", "-c", "import time; time.sleep(120)"], executable=sys.executable
    )
    try:
        case = (
            Case(tmp_path)
            .gpu_host()
            .torch()
            .marker([f"torch=={TORCH}"], verify={"max_other_vram_share": 0.25, "min_free_ram_gib": 0.001})
        )
        (case.venv.site_packages / "pynvml.py").write_text(
            FAKE_PYNVML.format(gpus=[("Stand-in T4", 16 * GIB)], processes={0: [(holder.pid, 6 * GIB)]})
        )
        code, report, details = _verify(case)
        expect(report, vram="WARN")
        assert details["vram"].startswith(
            f"another process holds 6.0 GiB of GPU0 (38%, more than 25%): pid {holder.pid} "
            "zombie-trainer -c import time; time.sleep(120) (GPU0: 15.0 GiB free of 16.0 GiB"
        )
        assert f"GPU0 Stand-in T4 held by: pid {holder.pid} zombie-trainer" in details["vram"]
        assert re.search(r"; host RAM [0-9.]+ GiB free of [0-9.]+ GiB\)$", details["vram"])
        assert code == 0
    finally:
        holder.kill()
        holder.wait()
