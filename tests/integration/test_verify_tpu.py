"""``colabenv verify`` on a TPU host (``COLABENV_TPU``) with stand-in jax and torch_xla in a real
venv: the smoke test multiplies on the TPU devices against the CPU result, in its child with
the timeout, and ``vram`` reports the HBM the framework gives, else SKIP with the reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from colabenv._target.helper import _env_hook_text
from colabenv.models import Framework, Reproducibility, TpuTarget
from colabenv.script.state import ENV_HOOK_NAME
from colabenv.seeding import hook_environment
from colabenv.verification.children import ChildRun, check_hbm, check_tpu_smoke
from colabenv.verification.report import Status
from tests.support.checks import details as details_of
from tests.support.checks import expect
from tests.support.standin_frameworks import make_venv, venv_env, write_marker
from tests.support.standin_tpu import (
    GIB,
    TpuBehaviour,
    TpuStandin,
    install_jax_tpu,
    install_torch_xla,
)

JAX_REQUIREMENTS = ["jax[tpu]==0.6.2", "jaxlib==0.6.2", "libtpu==0.0.17.*"]
TORCH_REQUIREMENTS = ["torch==2.9.0+cpu", "torch-xla[tpu]==2.9.0", "libtpu==0.0.21"]
V5E = TpuTarget("v5e", "v5e-1", 1)


class Case:
    def __init__(self, tmp_path: Path, tpu: str = "v5e-1") -> None:
        self.venv = make_venv(tmp_path / "venv")
        self.state = tmp_path / "state"
        self.env = venv_env(COLABENV_STATE_DIR=str(self.state), COLABENV_TPU=tpu)
        self.env.pop("PJRT_DEVICE", None)

    def marker(self, requirements: list[str], frameworks: dict[str, str], **fields: object) -> Case:
        write_marker(
            self.state, requirements=requirements, frameworks=frameworks, python=self.venv.python, **fields
        )  # type: ignore[arg-type]
        return self

    def verify(self) -> tuple[int, dict[str, Any], dict[str, str]]:
        """The exit code, the report and its details."""
        done = self.venv.run_verify("--json", env=self.env, timeout=180)
        assert done.returncode in (0, 1), done.stderr
        report = json.loads(done.stdout)
        expect(report, components=None)
        return done.returncode, report, details_of(report)


STATIC = {"marker": "PASS", "versions": "PASS", "duplicates": "PASS", "consistency": "PASS"}


@pytest.mark.slow
def test_jax_on_a_healthy_tpu(tmp_path: Path) -> None:
    case = Case(tmp_path)
    install_jax_tpu(case.venv, TpuStandin())
    case.marker(JAX_REQUIREMENTS, {"jax": "0.6.2"})
    code, report, details = case.verify()
    expect(
        report,
        {
            **STATIC,
            "cuda:jax": "SKIP",
            "smoke:jax": "PASS",
            "vram": "PASS",
            "determinism": "SKIP",
            "env": "SKIP",
        },
        only=True,
    )
    assert code == 0
    assert details["smoke:jax"] == "1 TPU device (TPU v5 lite): matmul agrees with CPU; jax 0.6.2"
    assert details["vram"].startswith("TPU0 TPU v5 lite: 15.0 GiB HBM free of 16.0 GiB (from jax); host RAM ")


@pytest.mark.slow
def test_jax_and_torch_xla_share_the_tpu_one_child_at_a_time(tmp_path: Path) -> None:
    case = Case(tmp_path, tpu="v3-8")
    standin = TpuStandin(kind="TPU v3", devices=8, claim=str(tmp_path / "tpu-claim"))
    install_jax_tpu(case.venv, standin, libtpu=None)
    install_torch_xla(case.venv, standin)
    case.marker(
        [*TORCH_REQUIREMENTS, "jax[tpu]==0.6.2", "jaxlib==0.6.2"], {"torch": "2.9.0+cpu", "jax": "0.6.2"}
    )
    code, report, details = case.verify()
    expect(
        report,
        {
            **STATIC,
            "cuda:torch": "SKIP",
            "cuda:jax": "SKIP",
            "smoke:torch": "PASS",
            "smoke:jax": "PASS",
            "vram": "PASS",
            "determinism": "SKIP",
            "env": "SKIP",
        },
        only=True,
    )
    assert details["smoke:jax"].startswith("8 TPU devices (TPU v3): matmul agrees with CPU")
    assert details["smoke:torch"] == ("1 TPU device (TPU (xla:0)): matmul agrees with CPU; torch 2.9.0+cpu")
    assert "(from torch); host RAM " in details["vram"]
    assert code == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("behaviour", "smoke", "smoke_detail", "vram", "vram_detail"),
    [
        (
            TpuBehaviour.NO_TPU,
            "FAIL",
            "jax 0.6.2 sees no TPU although the host has one (TPU v5e (v5e-1, 1 chip); RuntimeError:"
            " Unknown backend: 'tpu' requested",
            "SKIP",
            "TPU v5e (v5e-1, 1 chip): HBM not reported (jax: jax lists no TPU device)",
        ),
        (
            TpuBehaviour.WRONG,
            "FAIL",
            "jax 0.6.2: TPU0 TPU v5 lite: matmul differs from the CPU result (max abs diff 1.0)",
            "PASS",
            "TPU0 TPU v5 lite: 15.0 GiB HBM free of 16.0 GiB (from jax)",
        ),
        (
            TpuBehaviour.NO_HBM,
            "PASS",
            "1 TPU device (TPU v5 lite): matmul agrees with CPU",
            "SKIP",
            "HBM not reported (jax: jax reports no bytes_limit for its TPU devices)",
        ),
    ],
    ids=["no-tpu", "wrong-result", "no-hbm"],
)
def test_jax_on_a_broken_tpu(
    tmp_path: Path, behaviour: TpuBehaviour, smoke: str, smoke_detail: str, vram: str, vram_detail: str
) -> None:
    case = Case(tmp_path)
    install_jax_tpu(case.venv, TpuStandin(behaviour))
    case.marker(JAX_REQUIREMENTS, {"jax": "0.6.2"})
    code, report, details = case.verify()
    expect(report, {"smoke:jax": smoke, "vram": (vram, vram_detail)})
    assert details["smoke:jax"].startswith(smoke_detail), details["smoke:jax"]
    assert code == (1 if smoke == "FAIL" else 0)


@pytest.mark.slow
def test_a_tpu_smoke_test_is_not_followed_by_a_determinism_run(tmp_path: Path) -> None:
    """The rule of ``SMOKES[DeviceSmoke.TPU]``: with determinism asked for, no determinism
    child follows a smoke test on the TPU (one would have reported "jax 0.6.2 on ..."); the
    check names the framework as not run twice and passes on the hook's variables. It used to
    FAIL with "jax: not run (smoke:jax failed)" after a smoke test that passed."""
    case = Case(tmp_path)
    install_jax_tpu(case.venv, TpuStandin())
    case.marker(JAX_REQUIREMENTS, {"jax": "0.6.2"}, reproducibility={"seed": 1234, "deterministic": True})
    hook = _env_hook_text(dict(hook_environment(Reproducibility(1234, True))))
    assert hook is not None
    (case.venv.site_packages / ENV_HOOK_NAME).write_text(hook, encoding="utf-8")
    code, report, details = case.verify()
    expect(report, {"smoke:jax": "PASS", "determinism": "PASS"})
    assert details["determinism"].endswith(
        "; no framework to run twice; not run twice: jax (its smoke test ran on the TPU)"
    ), details["determinism"]
    assert "failed" not in details["determinism"] and "0.6.2 on" not in details["determinism"]
    assert code == 0


@pytest.mark.slow
def test_torch_xla_is_pointed_at_the_tpu(tmp_path: Path) -> None:
    """The stand-in torch_xla answers "TPU" only under PJRT_DEVICE=TPU: verify sets it."""
    case = Case(tmp_path, tpu="v6e-1")
    install_torch_xla(case.venv, TpuStandin(TpuBehaviour.OLD_MEMORY_INFO, kind="TPU v6 lite"))
    case.marker(TORCH_REQUIREMENTS, {"torch": "2.9.0+cpu"})
    code, report, details = case.verify()
    expect(report, {"smoke:torch": "PASS"})
    assert details["vram"].startswith(
        "TPU0 TPU (xla:0): 15.0 GiB HBM free of 16.0 GiB (from torch); host RAM "
    )
    assert code == 0
    case.env["PJRT_DEVICE"] = "CPU"
    _, report, details = case.verify()
    expect(report, {"smoke:torch": ("FAIL", "torch_xla's device xla:0 is a CPU, not a TPU")})


@pytest.mark.slow
def test_a_cpu_install_on_a_tpu_host_runs_the_cpu_smoke_test(tmp_path: Path) -> None:
    case = Case(tmp_path)
    install_jax_tpu(case.venv, TpuStandin(), libtpu=None)
    case.marker(["jax==0.6.2", "jaxlib==0.6.2"], {"jax": "0.6.2"})
    code, report, details = case.verify()
    expect(report, {"smoke:jax": "PASS", "vram": ("SKIP", "no TPU smoke test of torch or jax ran")})
    assert details["smoke:jax"] == "CPU matmul ok (jax 0.6.2); no GPU on this host"
    assert code == 0


@pytest.mark.slow
def test_low_hbm_warns(tmp_path: Path) -> None:
    case = Case(tmp_path)
    install_jax_tpu(case.venv, TpuStandin(hbm_in_use=15 * GIB + GIB // 2))
    case.marker(JAX_REQUIREMENTS, {"jax": "0.6.2"}, min_free_vram_gib=2.0)
    code, report, details = case.verify()
    expect(report, vram="WARN")
    assert details["vram"].startswith("TPU0 has 0.5 GiB HBM free, the profile asks for 2 GiB")
    assert code == 0


# ---------------------------------------------------------------------------------------------
# The checks over results written by hand: what a child that died or lied is judged as


def _run(
    result: dict[str, object] | None, returncode: int = 0, timed_out: bool = False, stderr: str = ""
) -> ChildRun:
    from colabenv._util import processes

    completed = processes.Completed(("python",), returncode, "", stderr, timed_out)
    return ChildRun(completed, json.dumps(result) if result is not None else None)


def _result(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {
        "mode": "smoke",
        "framework": "jax",
        "stage": "done",
        "version": "0.6.2",
        "devices": [],
        "cpu_max_abs_diff": 0.0,
        "cpu_non_finite": 0,
        "error": None,
        "accelerator": "tpu",
        "hbm": [],
        "hbm_reason": None,
    }
    base.update(fields)
    return base


def test_a_hung_tpu_child_is_a_fail_and_no_hbm() -> None:
    run = _run(None, returncode=-9, timed_out=True, stderr="libtpu: waiting for the TPU\n")
    check = check_tpu_smoke(Framework.JAX, run, timeout=30, tpu=V5E)
    assert check.status is Status.FAIL
    assert check.detail.startswith("did not finish within 30s (killed)")
    hbm = check_hbm(V5E, {Framework.JAX: run}, min_free_gib=None)
    assert hbm.status is Status.SKIP
    assert "its TPU smoke test left no result" in hbm.detail


def test_hbm_figures_that_are_not_sizes_are_left_out() -> None:
    result = _result(
        hbm=[
            {"index": 0, "name": "TPU v5 lite", "limit": -1, "in_use": 0},
            {"index": 1, "name": "x", "limit": True, "in_use": 0},
        ],
        hbm_reason="jax reports no bytes_limit for its TPU devices",
    )
    check = check_hbm(V5E, {Framework.JAX: _run(result)}, min_free_gib=None)
    assert check.status is Status.SKIP
    assert check.detail.endswith("(jax: jax reports no bytes_limit for its TPU devices)")


def test_a_nan_on_the_tpu_is_a_fail() -> None:
    device = {
        "index": 0,
        "name": "TPU v6 lite",
        "capability": None,
        "max_abs_diff": None,
        "non_finite": 3,
        "error": None,
    }
    check = check_tpu_smoke(Framework.JAX, _run(_result(devices=[device])), timeout=30, tpu=V5E)
    assert check.status is Status.FAIL
    assert "TPU0 TPU v6 lite: matmul returned 3 non-finite values" in check.detail
