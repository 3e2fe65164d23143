"""verify on AMD GPUs (issue 36): the real smoke child run against a stand-in torch that is a
ROCm build (``torch.version.hip``, each GPU's ``gcnArchName``) or a CUDA one, and the WARN of a
free-threaded interpreter that turned the GIL back on."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path
from types import ModuleType

import pytest

from colabenv._util.resources import SMOKE_PROGRAM
from colabenv.models import Framework
from colabenv.verification.children import SmokeResult, parse_smoke, run_smoke
from colabenv.verification.report import Status
from colabenv.verification.rocm import check_free_threading, check_rocm_smoke
from tests.support.standin_frameworks import Standin, make_venv

MI300X = Standin(
    "torch",
    "2.9.1+rocm6.4",
    cuda=None,
    hip="6.4.43482-0f2d60242",
    gfx="gfx942:sramecc+:xnack-",
    capability="9.4",
    gpu_name="AMD Instinct MI300X",
    gpus=2,
)


def _smoke(tmp_path: Path, standin: Standin) -> tuple[object, SmokeResult]:
    venv = make_venv(tmp_path / "venv", with_colabenv=False)
    venv.install(standin)
    framework = Framework(standin.framework)
    run = run_smoke(framework, 60, python=str(venv.python), scratch=tmp_path)
    result = parse_smoke(run.result)
    assert result is not None, run.completed
    return run, result


def test_a_rocm_torch_that_sees_the_gpus_passes_naming_each_gfx_and_hip(tmp_path: Path) -> None:
    run, result = _smoke(tmp_path, MI300X)
    assert result.hip == MI300X.hip and [d.gfx for d in result.devices] == ["gfx942", "gfx942"]
    check = check_rocm_smoke(Framework.TORCH, run, timeout=60, require_gpu=True)  # type: ignore[arg-type]
    assert check.status is Status.PASS, check
    assert "2 GPUs: AMD Instinct MI300X (gfx942): matmul agrees with CPU" in check.detail
    assert "HIP 6.4.43482" in check.detail


def test_a_cuda_torch_on_amd_gpus_fails_naming_its_build(tmp_path: Path) -> None:
    cuda = Standin("torch", "2.9.1+cu128", cuda="12.8")
    run, _ = _smoke(tmp_path, cuda)
    check = check_rocm_smoke(Framework.TORCH, run, timeout=60, require_gpu=True)  # type: ignore[arg-type]
    assert check.status is Status.FAIL
    assert "is built for CUDA 12.8, not ROCm (torch.version.hip is None)" in check.detail


def test_a_rocm_torch_that_sees_no_gpu_fails(tmp_path: Path) -> None:
    from tests.support.standin_frameworks import Behaviour

    blind = Standin("torch", "2.9.1+rocm6.4", Behaviour.NO_GPU, cuda=None, hip="6.4.1", gfx="gfx942")
    run, _ = _smoke(tmp_path, blind)
    check = check_rocm_smoke(Framework.TORCH, run, timeout=60, require_gpu=True)  # type: ignore[arg-type]
    assert check.status is Status.FAIL and "sees no AMD GPU" in check.detail


ROCM_JAX = Standin(
    "jax",
    "0.8.0",
    cuda=None,
    gfx="gfx942",
    capability="9.4",
    gpu_name="AMD Instinct MI300X",
    gpus=2,
    jax_gpu="Rocm",
)


def test_a_jax_that_sees_rocm_devices_passes_naming_each_gfx(tmp_path: Path) -> None:
    """jax on AMD GPUs: its devices are ``RocmDevice``s (as jax-ml/jax build/rocm/README.md
    shows them), each multiplying as the CPU does, named with its gfx."""
    run, result = _smoke(tmp_path, ROCM_JAX)
    assert result.platform == "rocm" and [d.gfx for d in result.devices] == ["gfx942", "gfx942"]
    check = check_rocm_smoke(Framework.JAX, run, timeout=60, require_gpu=True)  # type: ignore[arg-type]
    assert check.status is Status.PASS, check
    assert check.detail.startswith("2 GPUs: AMD Instinct MI300X (gfx942): matmul agrees with CPU;")
    assert check.detail.endswith(", ROCm")


def test_a_jax_whose_gpus_are_cuda_devices_fails_on_amd_gpus(tmp_path: Path) -> None:
    cuda = Standin("jax", "0.8.0", cuda="12.8", jax_gpu="Cuda")
    run, result = _smoke(tmp_path, cuda)
    assert result.platform == "cuda"
    check = check_rocm_smoke(Framework.JAX, run, timeout=60, require_gpu=True)  # type: ignore[arg-type]
    assert check.status is Status.FAIL and "runs its GPUs through cuda, not ROCm" in check.detail


def test_a_jax_with_no_rocm_plugin_sees_no_amd_gpu(tmp_path: Path) -> None:
    from tests.support.standin_frameworks import Behaviour

    blind = Standin("jax", "0.8.0", Behaviour.NO_GPU, cuda=None, jax_gpu="Rocm")
    run, _ = _smoke(tmp_path, blind)
    check = check_rocm_smoke(Framework.JAX, run, timeout=60, require_gpu=True)  # type: ignore[arg-type]
    assert check.status is Status.FAIL and "sees no AMD GPU" in check.detail


@pytest.mark.parametrize("cpu", [False, True])
def test_verify_on_amd_gpus_judges_the_smoke_test_as_its_kind_declares(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpu: bool
) -> None:
    """On a host with AMD GPUs (the ROCm variables), ``verify`` judges a framework's smoke test
    by the device the kind declares (HIP): a CUDA torch fails for not being a ROCm build, and
    the CUDA checks and NVML's GPUs are not asked; with ``--cpu`` the CPU smoke test passes it."""
    from colabenv.verification.run import verify
    from tests.support.standin_frameworks import write_marker

    venv = make_venv(tmp_path / "venv", with_colabenv=False)
    venv.install(Standin("torch", "2.9.1+cu128", cuda="12.8"))
    state = tmp_path / "state"
    monkeypatch.setenv("COLABENV_STATE_DIR", str(state))
    monkeypatch.setenv("COLABENV_ROCM_VERSION", "6.4")
    monkeypatch.setenv("COLABENV_GFX", "gfx942")
    write_marker(
        state, requirements=["torch==2.9.1+cu128"], frameworks={"torch": "2.9.1+cu128"}, python=venv.python
    )
    checks = {c.name: c for c in verify(timeout=60, interpreter=str(venv.python), cpu=cpu).checks}
    smoke = checks["smoke:torch"]
    if cpu:
        assert smoke.status is Status.PASS and "matmul agrees with CPU" in smoke.detail, smoke
    else:
        assert smoke.status is Status.FAIL, smoke
        assert "is built for CUDA 12.8, not ROCm (torch.version.hip is None)" in smoke.detail
        assert checks["cuda:torch"].status is Status.SKIP and "components" not in checks


def _base() -> ModuleType:
    """The smoke program's ``base.py``, loaded by its path as the child loads it."""
    spec = importlib.util.spec_from_file_location("smoke_base_for_test", Path(str(SMOKE_PROGRAM)) / "base.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


GIL_WARNING = (
    "The global interpreter lock (GIL) has been enabled to load module 'torch._C', which has not"
    " declared that it can run safely without the GIL. To override this behavior and keep the GIL"
    " disabled (at your own risk), run with PYTHON_GIL=0 or -Xgil=0."
)
"""CPython's RuntimeWarning, word for word as Python/import.c (3.13) formats it."""


def test_the_child_names_each_module_that_turned_the_gil_back_on() -> None:
    base = _base()

    def importing() -> None:
        warnings.warn(GIL_WARNING, RuntimeWarning, stacklevel=1)

    result: dict[str, object] = {"free_threaded": True, "gil_enabled_by": []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base._watching_the_gil(result, importing)
    assert result["gil_enabled_by"] == ["torch._C"]
    plain: dict[str, object] = {"free_threaded": False, "gil_enabled_by": []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base._watching_the_gil(plain, importing)
    assert plain["gil_enabled_by"] == []


def _result(free_threaded: bool, modules: tuple[str, ...]) -> SmokeResult:
    return SmokeResult(
        framework="torch",
        stage="done",
        version="2.9.1",
        cuda=None,
        cudnn=None,
        arch_list=None,
        devices=(),
        gpu_reason=None,
        cpu_max_abs_diff=0.0,
        cpu_non_finite=0,
        error=None,
        free_threaded=free_threaded,
        gil_enabled_by=modules,
    )


@pytest.mark.parametrize(
    ("results", "status", "words"),
    [
        (
            [_result(True, ("torch._C",)), _result(True, ("jaxlib._jax",))],
            Status.WARN,
            "torch._C, jaxlib._jax",
        ),
        ([_result(True, ())], Status.PASS, "the GIL stayed off"),
    ],
)
def test_a_free_threaded_interpreter_warns_naming_the_modules(
    results: list[SmokeResult], status: Status, words: str
) -> None:
    check = check_free_threading(results)
    assert check is not None and check.status is status and words in check.detail


def test_no_free_threading_check_on_a_plain_interpreter() -> None:
    assert check_free_threading([_result(False, ("torch._C",))]) is None
