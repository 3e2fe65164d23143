"""``colabenv verify --json`` with stand-in CUDA packages (xformers, cupy, onnxruntime-gpu, ...)
installed for real in a virtual environment: ``smoke:<package>`` PASS on right answers, FAIL
naming the mismatch, FAIL when onnxruntime silently runs on the CPU, SKIP without a GPU and with
``--cpu``, and a hung or crashed child reported in time while the other checks go on.

The GPU host is pretended through the ``COLABENV_*`` target variables; the GPU-real variant
(``@pytest.mark.gpu``) runs the real packages where they are installed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.checks import expect
from tests.support.proctree import (
    children_running,
    finish,
    live_processes,
    session_members,
    wait_until,
)
from tests.support.standin_frameworks import StandinVenv, make_venv, venv_env, write_marker
from tests.support.standin_packages import (
    VERSIONS,
    Acts,
    PackageStandin,
    numpy_files,
    package_files,
    pandas_files,
    torch_files,
)

pytestmark = pytest.mark.slow

GPU_HOST = {
    "COLABENV_DRIVER_VERSION": "560.35.03",
    "COLABENV_CUDA_VERSION": "12.6",
    "COLABENV_COMPUTE_CAPABILITY": "7.5",
}
SMOKES = tuple(VERSIONS)


def _real_gpu_here() -> bool:
    return Path("/proc/driver/nvidia/version").exists() or shutil.which("nvidia-smi") is not None


needs_no_gpu = pytest.mark.skipif(_real_gpu_here(), reason="this host has a real NVIDIA GPU")


class Case:
    def __init__(self, tmp_path: Path, *, gpu: bool = True) -> None:
        self.venv: StandinVenv = make_venv(tmp_path / "venv")
        self.state = tmp_path / "state"
        self.env = venv_env(COLABENV_STATE_DIR=str(self.state))
        if gpu:
            self.env.update(GPU_HOST)
        # the small torch, numpy and pandas the stand-ins stand on, as plain modules: no
        # distribution, so no framework smoke test or VRAM probe is set off by them
        for files in (torch_files(), numpy_files(), pandas_files()):
            for relative, text in files.items():
                path = self.venv.site_packages / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
        self.requirements: list[str] = []

    def package(self, smoke: str, acts: Acts = Acts.RIGHT) -> Case:
        standin = PackageStandin(smoke, VERSIONS[smoke], acts)
        self.venv.install_dist(standin.distribution, standin.version, files=package_files(standin))
        self.requirements.append(f"{standin.distribution}=={standin.version}")
        return self

    def verify(self, *args: str, timeout: float = 120) -> tuple[int, dict[str, Any], float]:
        write_marker(self.state, requirements=self.requirements, python=self.venv.python)
        started = time.monotonic()
        done = self.venv.run_verify("--json", *args, env=self.env, timeout=timeout)
        elapsed = time.monotonic() - started
        assert done.returncode in (0, 1), done.stderr
        report = json.loads(done.stdout)
        assert all("\n" not in c["detail"] for c in report["checks"])
        return done.returncode, report, elapsed


def _smoke_rows(report: dict[str, Any]) -> list[str]:
    return [c["name"] for c in report["checks"] if c["name"].startswith("smoke:")]


def test_right_answers_pass_in_the_tables_order(tmp_path: Path) -> None:
    case = Case(tmp_path)
    for smoke in reversed(SMOKES):
        case.package(smoke)
    code, report, _ = case.verify()
    assert _smoke_rows(report) == [f"smoke:{s}" for s in SMOKES]
    expect(
        report,
        {
            "versions": "PASS",
            "smoke:xformers": ("PASS", "memory_efficient_attention agrees with plain attention (float64)"),
            "smoke:flash-attn": ("PASS", "flash_attn_func agrees with plain attention"),
            "smoke:flash-attn-4": (
                "PASS",
                "flash_attn.cute.flash_attn_func agrees with plain attention",
                "flash-attn-4 4.0.0b4",
            ),
            "smoke:bitsandbytes": ("PASS", "8-bit matmul (LLM.int8()) agrees with the fp32 product"),
            "smoke:cupy": ("PASS", "Stand-in T4 (sm_75): matmul agrees with NumPy (max abs diff 0,"),
            "smoke:cudf": ("PASS", "Stand-in T4: groupby sum agrees with pandas", "cudf 25.4.0"),
            # no scikit-learn in this venv: the CPU fit is NumPy's
            "smoke:cuml": ("PASS", "LinearRegression fit agrees with NumPy's least squares", "cuml 26.8.0"),
            "smoke:onnxruntime-gpu": ("PASS", "GPU: MatMul session agrees with the exact product"),
            "smoke:vllm": ("PASS", "Stand-in T4 (sm_75): compiled ops (vllm._C) loaded; vllm 0.8.5"),
            "smoke:torch-scatter": ("PASS", "scatter sum agrees with the exact sums"),
        },
    )
    # the order of the report: the packages after the frameworks' rows, before vram
    names = [c["name"] for c in report["checks"]]
    assert names.index("smoke:torch-scatter") < names.index("vram")
    assert code == (0 if report["ok"] else 1)


def test_wrong_answers_and_the_silent_cpu_fallback_fail(tmp_path: Path) -> None:
    case = (
        Case(tmp_path)
        .package("xformers", Acts.WRONG)
        .package("cupy", Acts.NAN)
        .package("cudf", Acts.WRONG)
        .package("onnxruntime-gpu", Acts.CPU_FALLBACK)
        .package("vllm", Acts.WRONG)
    )
    code, report, _ = case.verify()
    assert code == 1
    expect(
        report,
        {
            "smoke:xformers": (
                "FAIL",
                "memory_efficient_attention on Stand-in T4 (sm_75) differs from plain attention",
                "tolerance 0.02",
            ),
            "smoke:cupy": ("FAIL", "cupy 13.4.1: matmul returned 1 non-finite value (NaN or infinity)"),
            "smoke:cudf": ("FAIL", "groupby sum on Stand-in T4 differs from pandas (max abs diff 1.0"),
            "smoke:onnxruntime-gpu": (
                "FAIL",
                "the session fell back to the CPU: it runs on CPUExecutionProvider, not"
                " CUDAExecutionProvider",
                "libcudnn.so.9: cannot open shared object file",
            ),
            "smoke:vllm": ("FAIL", "failed: ImportError: vllm/_C.abi3.so: undefined symbol"),
        },
    )


@needs_no_gpu
def test_without_a_gpu_or_with_cpu_they_skip(tmp_path: Path) -> None:
    case = Case(tmp_path, gpu=False).package("cupy").package("bitsandbytes")
    _, report, _ = case.verify()
    expect(
        report,
        {
            "smoke:bitsandbytes": ("SKIP", "no GPU on this host (a GPU check)"),
            "smoke:cupy": ("SKIP", "no GPU on this host (a GPU check)"),
        },
    )
    case.env.update(GPU_HOST)
    _, report, _ = case.verify("--cpu")
    expect(
        report,
        {
            "smoke:bitsandbytes": ("SKIP", "--cpu: GPU checks skipped on request"),
            "smoke:cupy": ("SKIP", "--cpu: GPU checks skipped on request"),
        },
    )


def test_a_hang_and_a_crash_are_reported_in_time(tmp_path: Path) -> None:
    case = (
        Case(tmp_path)
        .package("flash-attn", Acts.HANG)
        .package("bitsandbytes", Acts.CRASH)
        .package("onnxruntime-gpu", Acts.NO_CUDA_PROVIDER)
        .package("torch-scatter")
    )
    code, report, elapsed = case.verify("--timeout", "6")
    assert code == 1
    expect(
        report,
        {
            "smoke:flash-attn": ("FAIL", "did not finish within 6s (killed)", "stand-in: hanging on import"),
            "smoke:bitsandbytes": ("FAIL", "crashed with SIGSEGV", "stand-in: about to crash"),
            "smoke:onnxruntime-gpu": ("FAIL", "this onnxruntime has no CUDAExecutionProvider"),
            "smoke:torch-scatter": "PASS",
        },
    )
    assert elapsed < 60


def _package_children(case: Case) -> list[str]:
    """The command lines of the live package children of this case's venv."""
    marker = f"{case.venv.python} "
    return [c for _, _, c in live_processes().values() if c.startswith(marker) and " package " in c]


def test_ctrl_c_ends_the_package_children_at_once(tmp_path: Path) -> None:
    """Two packages that hang on import: Ctrl-C while the first runs ends verify at once, and
    the one after it is never left running."""
    case = Case(tmp_path).package("xformers", Acts.HANG).package("flash-attn", Acts.HANG)
    write_marker(case.state, requirements=case.requirements, python=case.venv.python)
    proc = subprocess.Popen(
        [str(case.venv.colabenv), "verify", "--json", "--timeout", "300"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=case.env,
        cwd=tmp_path,
    )
    try:
        wait_until(lambda: bool(children_running(proc.pid, " package xformers")), 60, "the xformers child")
        (child,) = children_running(proc.pid, " package xformers")
        time.sleep(1.0)  # into its import, which hangs
        running = _package_children(case)  # the child and the worker it forked (its subreaper)
        assert running and all(" package xformers " in c for c in running), running
        sent = time.monotonic()
        os.kill(proc.pid, signal.SIGINT)
        code, stdout, stderr, _ = finish(proc, 60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (code, stdout, stderr) == (130, "", "colabenv: interrupted\n")
    assert took < 5, f"verify took {took:.1f} s to end after the signal"
    assert session_members(child) == []
    assert _package_children(case) == [], "a package child outlived verify"


def test_the_vram_probe_waits_for_the_package_children(tmp_path: Path) -> None:
    """Two package smoke tests of 4 s each under a 6 s timeout: longer than one timeout
    together, within the two they share; the VRAM probe, which must not run beside them,
    waits for them rather than giving up at one timeout."""
    case = Case(tmp_path).package("cupy", Acts.SLOW).package("cudf", Acts.SLOW)
    _, report, elapsed = case.verify("--timeout", "6")
    expect(
        report,
        {
            "smoke:cupy": "PASS",
            "smoke:cudf": "PASS",
            "vram": ("PASS", "GPU0: 15.0 GiB free of 16.0 GiB, largest block"),
        },
    )
    assert elapsed >= 8


def test_an_expected_package_that_is_missing_fails_its_import(tmp_path: Path) -> None:
    case = Case(tmp_path)
    case.requirements.append("xformers==0.0.29.post3")
    _, report, _ = case.verify()
    expect(
        report,
        {
            "versions": "FAIL",
            "smoke:xformers": ("FAIL", "import failed: ModuleNotFoundError: No module named 'xformers'"),
        },
    )


# ---------------------------------------------------------------------------------------------
# On a machine with an NVIDIA GPU and the real packages installed in this Python


def _installed(module: str) -> bool:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)",
        ],
        capture_output=True,
        timeout=60,
        check=False,
    )
    return done.returncode == 0


@pytest.mark.gpu
@pytest.mark.parametrize("smoke", SMOKES)
def test_the_real_package_passes_on_a_real_gpu(smoke: str) -> None:
    from colabenv.verification.packages import PACKAGES, check_package, run_packages

    module = {"flash-attn": "flash_attn", "onnxruntime-gpu": "onnxruntime", "torch-scatter": "torch_scatter"}
    if not _installed(module.get(smoke, smoke)):
        pytest.skip(f"{smoke} is not installed in this Python")
    row = next(r for r in PACKAGES if r.name == smoke)
    with tempfile.TemporaryDirectory() as folder:
        (done,) = run_packages([row], 300, python=sys.executable, scratch=Path(folder))
    check = check_package(done, timeout=300)
    assert check.status.value == "PASS", check.detail
