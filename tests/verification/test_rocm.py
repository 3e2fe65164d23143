"""verify on AMD GPUs (issue 36): the real smoke child run against a stand-in torch that is a
ROCm build (``torch.version.hip``, each GPU's ``gcnArchName``) or a CUDA one, and the WARN of a
free-threaded interpreter that turned the GIL back on."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
import warnings
from pathlib import Path
from types import ModuleType

import pytest

from colabenv._util.resources import SMOKE_PROGRAM
from colabenv.diagnosis.signatures import Classified, classify, shipped_signatures
from colabenv.models import Framework
from colabenv.verification.causes import with_cause
from colabenv.verification.children import GPU_SMOKE, SmokeResult, parse_smoke, run_smoke, smoke_env
from colabenv.verification.report import Status
from colabenv.verification.rocm import GIL_REMEDIES, check_free_threading, check_rocm_smoke
from tests.support.interpreter_facts import GIL_WARNING as CPYTHON_GIL_WARNING
from tests.support.interpreter_facts import REFUSES_GIL_OFF, free_threaded, gil_switch
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
    assert "cause:" not in check.detail, "no failure signature reads this one"


def test_a_rocm_torch_that_sees_no_gpu_fails(tmp_path: Path) -> None:
    from tests.support.standin_frameworks import Behaviour

    blind = Standin("torch", "2.9.1+rocm6.4", Behaviour.NO_GPU, cuda=None, hip="6.4.1", gfx="gfx942")
    run, _ = _smoke(tmp_path, blind)
    check = check_rocm_smoke(Framework.TORCH, run, timeout=60, require_gpu=True)  # type: ignore[arg-type]
    assert check.status is Status.FAIL and "sees no AMD GPU" in check.detail


def _recorded(cause: str, words: str) -> tuple[str, str]:
    """(exception type, text) of the example line a ROCm entry of ``import_failures.toml``
    carries, as its upstream thread quotes the error (``RuntimeError: HIP error: ...``)."""
    entry = next(s for s in shipped_signatures().signatures if s.cause == cause and words in s.example)
    kind, _, text = entry.example.partition(": ")
    return kind, text


def _as_doctor_reads(line: str) -> Classified:
    found = classify([line], shipped_signatures())
    assert found is not None and found.thread.startswith("https://github.com/"), line
    return found


def test_a_gpu_without_kernels_for_its_gfx_fails_naming_the_cause_and_thread_doctor_names(
    tmp_path: Path,
) -> None:
    """ "HIP error: invalid device function" comes at the first kernel, not at ``import torch``
    (pytorch/pytorch#132570: a Radeon RX 5700 XT, gfx1010, beside a build without its
    kernels): the smoke test's FAIL names the cause, the thread and the remedy as doctor's
    signature has them."""
    kind, text = _recorded("invalid-device-function", "HIP error")
    radeon = Standin(
        "torch",
        "2.4.1+rocm6.1",
        cuda=None,
        hip="6.1.40091-a8dbc0c19",
        gfx="gfx1010",
        capability="10.1",
        gpu_name="AMD Radeon RX 5700 XT",
        gpu_error=text,
    )
    run, result = _smoke(tmp_path, radeon)
    assert [d.error for d in result.devices] == [f"{kind}: {text}"]
    check = with_cause(check_rocm_smoke(Framework.TORCH, run, timeout=60, require_gpu=True), run)  # type: ignore[arg-type]
    doctor = _as_doctor_reads(f"{kind}: {text}")
    assert check.status is Status.FAIL, check
    assert check.detail.startswith(
        f"torch 2.4.1+rocm6.1: GPU 0 AMD Radeon RX 5700 XT (gfx1010): {kind}: {text}; cause:"
        " invalid-device-function (https://github.com/pytorch/pytorch/issues/132570): "
    )
    assert check.detail.endswith(doctor.remedy)
    assert "torch ROCm build whose gfx list has it" in check.detail


def test_a_rocm_torch_that_sees_no_gpu_fails_naming_rocms_reason_as_doctor_does(tmp_path: Path) -> None:
    """ "No HIP GPUs are available" comes at the GPU's first use (ROCm/hip#3799: torch.cuda's
    lazy init): the child asks for it where ``torch.cuda.is_available()`` is False, and the
    FAIL names the cause doctor's signature gives it."""
    from tests.support.standin_frameworks import Behaviour

    _, text = _recorded("no-gpu", "HIP")
    blind = Standin(
        "torch", "2.9.1+rocm6.4", Behaviour.NO_GPU, cuda=None, hip="6.4.1", gfx="gfx942", no_gpu_error=text
    )
    run, result = _smoke(tmp_path, blind)
    assert result.gpu_reason == "torch.cuda.is_available() is False"
    check = with_cause(check_rocm_smoke(Framework.TORCH, run, timeout=60, require_gpu=True), run)  # type: ignore[arg-type]
    assert check.status is Status.FAIL and "sees no AMD GPU" in check.detail, check
    assert f"stderr: RuntimeError: {text}" in check.detail
    assert "; cause: no-gpu (https://github.com/ROCm/hip/issues/3799): " in check.detail
    assert check.detail.endswith(_as_doctor_reads(f"RuntimeError: {text}").remedy)


def test_a_missing_hip_runtime_at_import_fails_naming_the_cause(tmp_path: Path) -> None:
    from tests.support.standin_frameworks import Behaviour

    kind, text = _recorded("missing-library", "libamdhip64")
    broken = Standin(
        "torch", "2.9.1+rocm6.4", Behaviour.IMPORT_ERROR, cuda=None, hip="6.4.1", import_error=text
    )
    run, _ = _smoke(tmp_path, broken)
    check = with_cause(check_rocm_smoke(Framework.TORCH, run, timeout=60, require_gpu=True), run)  # type: ignore[arg-type]
    assert check.status is Status.FAIL, check
    assert check.detail.startswith(f"import failed: {kind}: {text}")
    assert (
        "; cause: missing-library (https://github.com/ROCm/legacy-rocm-build/issues/1753): " in check.detail
    )
    assert "libamdhip64.so.5 is ROCm's HIP runtime" in check.detail


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


GIL_WARNING = CPYTHON_GIL_WARNING.format(module="torch._C")


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


def _result(
    threaded: bool,
    modules: tuple[str, ...],
    *,
    before: bool | None = None,
    after: bool | None = None,
    forced: str | None = None,
) -> SmokeResult:
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
        free_threaded=threaded,
        gil_enabled_by=modules,
        gil_before=before,
        gil_after=after,
        gil_forced_by=forced,
    )


@pytest.mark.parametrize(
    ("results", "status", "words"),
    [
        (
            [_result(True, ("torch._C",)), _result(True, ("jaxlib._jax",))],
            Status.WARN,
            "torch._C, jaxlib._jax",
        ),
        ([_result(True, (), before=False, after=False)], Status.PASS, "the GIL stayed off"),
        ([_result(True, ())], Status.PASS, "no import warned that it turned the GIL back on"),
        (
            [_result(True, (), before=True, after=True, forced="PYTHON_GIL=1 in the environment")],
            Status.WARN,
            "the GIL was on before the frameworks imported: PYTHON_GIL=1 in the environment asks for it",
        ),
    ],
)
def test_a_free_threaded_interpreter_warns_naming_the_modules(
    results: list[SmokeResult], status: Status, words: str
) -> None:
    check = check_free_threading(results)
    assert check is not None and check.status is status and words in check.detail


def test_no_free_threading_check_on_a_plain_interpreter() -> None:
    assert check_free_threading([_result(False, ("torch._C",))]) is None


PLAIN_TORCH = Standin("torch", "2.9.1+cu128", cuda="12.8")


def _free_threaded_smoke(
    tmp_path: Path,
    *,
    options: str = "",
    variables: dict[str, str] | None = None,
    on_at_start: bool = False,
    turned_on_by: str | None = None,
    warns: bool = True,
) -> SmokeResult:
    """The real smoke child of a stand-in torch, in this machine's Python told it is a
    free-threaded build (``Py_GIL_DISABLED``) whose ``sys._is_gil_enabled()`` answers as
    CPython's does (:func:`tests.support.interpreter_facts.gil_switch`), in the child alone;
    ``options``: ``-X`` options the interpreter is started with (a wrapper script stands for
    it)."""
    venv = make_venv(tmp_path / "venv", with_colabenv=False)
    venv.install(PLAIN_TORCH)
    facts = tmp_path / "facts"
    base = {name: value for name, value in os.environ.items() if name != "PYTHON_GIL"}
    base.update(
        free_threaded(facts),
        **gil_switch(facts, on_at_start=on_at_start, turned_on_by=turned_on_by, warns=warns),
        **(variables or {}),
    )
    device = dataclasses.replace(GPU_SMOKE, env=lambda framework: smoke_env(framework, base))
    python = str(venv.python)
    if options:
        wrapper = tmp_path / "python-with-options"
        wrapper.write_text(f'#!/bin/sh\nexec {python} {options} "$@"\n')
        wrapper.chmod(0o755)
        python = str(wrapper)
    run = run_smoke(Framework.TORCH, 60, python=python, scratch=tmp_path, device=device)
    result = parse_smoke(run.result)
    assert result is not None, run.completed
    assert result.free_threaded and result.error is None, result
    return result


UNSET = "unset PYTHON_GIL to run free-threaded"
DROP = "drop -X gil=1 to run free-threaded"
REFUSED = (
    "this CPython 3.13+ with the GIL stops at start on -X gil=0 or PYTHON_GIL=0 (the 3.10 stage runs it)"
)


@pytest.mark.parametrize(
    ("options", "variables", "forced", "remedy"),
    [
        ("", {"PYTHON_GIL": "1"}, "PYTHON_GIL=1 in the environment", UNSET),
        ("-X gil=1", {}, "-X gil=1 on the interpreter's command line", DROP),
        pytest.param(
            "-X gil=1",
            {"PYTHON_GIL": "0"},
            "-X gil=1 on the interpreter's command line",
            DROP,
            marks=pytest.mark.skipif(REFUSES_GIL_OFF, reason=REFUSED),
        ),
    ],
)
def test_a_gil_asked_for_when_the_interpreter_started_is_a_warn_naming_what_asked(
    tmp_path: Path, options: str, variables: dict[str, str], forced: str, remedy: str
) -> None:
    """``PYTHON_GIL=1`` or ``-X gil=1`` (the command line over the environment): the GIL is on
    from the start, so no import turns it on and CPython warns of none; the interpreter is
    asked instead, and the check names what asked for the GIL."""
    result = _free_threaded_smoke(tmp_path, options=options, variables=variables)
    assert (result.gil_before, result.gil_after, result.gil_enabled_by) == (True, True, ())
    assert result.gil_forced_by == forced
    check = check_free_threading([result])
    assert check is not None and check.status is Status.WARN, check
    assert check.detail == (
        f"the GIL was on before the frameworks imported: {forced} asks for it: the interpreter runs"
        f" with the GIL; {remedy}"
    )


def test_a_gil_the_interpreters_configuration_asks_for_names_its_own_remedy() -> None:
    """``sys.flags.gil`` is 1 with neither ``-X gil=1`` nor a ``PYTHON_GIL`` CPython read (an
    embedding program configured it): neither unsetting nor dropping is the remedy."""
    forced = "the interpreter's configuration (sys.flags.gil is 1)"
    check = check_free_threading([_result(True, (), before=True, after=True, forced=forced)])
    assert check is not None and check.status is Status.WARN, check
    assert check.detail == (
        f"the GIL was on before the frameworks imported: {forced} asks for it: the interpreter runs"
        " with the GIL; start the interpreter without the configuration that asks for the GIL (its"
        " embedding program's) to run free-threaded"
    )


@pytest.mark.parametrize(
    ("flags", "options", "variable", "forced"),
    [
        # PYTHON_GIL=1 put in os.environ after startup (a profile's [env] by colabenv's .pth
        # hook): CPython never read it, sys.flags.gil is None (the default)
        ({"gil": None, "ignore_environment": 0}, {}, "1", None),
        ({"gil": 0, "ignore_environment": 0}, {"gil": "0"}, "1", None),
        (
            {"gil": 1, "ignore_environment": 0},
            {"gil": "1"},
            "0",
            "-X gil=1 on the interpreter's command line",
        ),
        ({"gil": 1, "ignore_environment": 0}, {}, "1", "PYTHON_GIL=1 in the environment"),
        # under -E the variable was not read: something else (an embedding program) asked
        (
            {"gil": 1, "ignore_environment": 1},
            {},
            "1",
            "the interpreter's configuration (sys.flags.gil is 1)",
        ),
        # no sys.flags.gil (before Python 3.13): the option over the variable, as before
        ({"ignore_environment": 0}, {}, "1", "PYTHON_GIL=1 in the environment"),
        ({"ignore_environment": 0}, {"gil": "0"}, "1", None),
    ],
)
def test_what_forced_the_gil_is_what_sys_flags_says_cpython_read(
    monkeypatch: pytest.MonkeyPatch,
    flags: dict[str, object],
    options: dict[str, str],
    variable: str,
    forced: str | None,
) -> None:
    """``sys.flags.gil`` is what CPython made of ``-X gil`` and ``PYTHON_GIL`` at startup; the
    environment now may hold a ``PYTHON_GIL`` it never read."""
    from types import SimpleNamespace

    base = _base()
    monkeypatch.setattr(base, "sys", SimpleNamespace(flags=SimpleNamespace(**flags), _xoptions=options))
    monkeypatch.setenv("PYTHON_GIL", variable)
    assert base.gil_forced_by() == forced
    assert forced is None or forced in GIL_REMEDIES, "the WARN has a remedy for each cause the child names"


@pytest.mark.skipif(REFUSES_GIL_OFF, reason=REFUSED)
def test_a_gil_turned_off_on_the_command_line_beats_the_environment(tmp_path: Path) -> None:
    result = _free_threaded_smoke(tmp_path, options="-X gil=0", variables={"PYTHON_GIL": "1"})
    assert (result.gil_before, result.gil_after, result.gil_forced_by) == (False, False, None)
    check = check_free_threading([result])
    assert check is not None and check.status is Status.PASS, check
    assert check.detail.startswith("the GIL stayed off while the frameworks imported")


def test_a_gil_a_startup_import_turned_on_is_a_warn_saying_nothing_asked_for_it(tmp_path: Path) -> None:
    """A module a ``.pth`` file imported turned the GIL on before the smoke program ran: its
    warning was printed then, out of the child's sight; the check says so."""
    result = _free_threaded_smoke(tmp_path, on_at_start=True)
    assert (result.gil_before, result.gil_forced_by, result.gil_enabled_by) == (True, None, ())
    check = check_free_threading([result])
    assert check is not None and check.status is Status.WARN, check
    assert check.detail == (
        "the GIL was on before the frameworks imported, and neither PYTHON_GIL nor -X gil asks for it"
        " (a module imported at startup, by a .pth file or sitecustomize, turned it on before verify"
        " could see CPython's warning): the interpreter runs with the GIL; python -c pass prints that"
        " warning, naming the module"
    )


@pytest.mark.parametrize("warns", [True, False])
def test_an_import_that_turned_the_gil_on_is_a_warn_naming_it_or_saying_none_was_named(
    tmp_path: Path, warns: bool
) -> None:
    result = _free_threaded_smoke(tmp_path, turned_on_by="torch", warns=warns)
    assert (result.gil_before, result.gil_after) == (False, True)
    check = check_free_threading([result])
    assert check is not None and check.status is Status.WARN, check
    if warns:
        assert result.gil_enabled_by == ("torch",)
        assert check.detail == (
            "the GIL was turned back on to import torch (not declared free-threading safe): the"
            " interpreter runs with the GIL; PYTHON_GIL=0 keeps it off at your own risk"
        )
    else:
        assert result.gil_enabled_by == ()
        assert check.detail == (
            "the GIL was turned on while torch imported, and no warning named the module: the"
            " interpreter runs with the GIL; the smoke child's stderr may name it"
        )


def test_a_gil_that_stayed_off_passes_saying_the_interpreter_was_asked(tmp_path: Path) -> None:
    result = _free_threaded_smoke(tmp_path)
    assert (result.gil_before, result.gil_after, result.gil_enabled_by) == (False, False, ())
    check = check_free_threading([result])
    assert check is not None and check.status is Status.PASS, check
    assert check.detail == (
        "the GIL stayed off while the frameworks imported (sys._is_gil_enabled() is False after them)"
    )


def test_verify_on_a_free_threaded_interpreter_run_with_python_gil_1_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``verify`` itself: its ``free-threading`` check said "the GIL stayed off" under
    ``PYTHON_GIL=1``, where CPython warns of no import (the GIL was on from the start)."""
    import sysconfig

    from colabenv.verification.run import verify
    from tests.support.standin_frameworks import write_marker

    venv = make_venv(tmp_path / "venv", with_colabenv=False)
    venv.install(PLAIN_TORCH)
    state = tmp_path / "state"
    facts = tmp_path / "facts"
    sysconfig.get_config_vars()  # read (and kept) before the variables for the children are set
    for name, value in {**free_threaded(facts), **gil_switch(facts), "PYTHON_GIL": "1"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("COLABENV_STATE_DIR", str(state))
    write_marker(
        state, requirements=["torch==2.9.1+cu128"], frameworks={"torch": "2.9.1+cu128"}, python=venv.python
    )
    checks = {c.name: c for c in verify(timeout=60, interpreter=str(venv.python), cpu=True).checks}
    threading = checks["free-threading"]
    assert threading.status is Status.WARN, threading
    assert "PYTHON_GIL=1 in the environment asks for it" in threading.detail
