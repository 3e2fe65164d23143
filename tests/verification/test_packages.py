"""``smoke:<package>``: which packages get a smoke test, the table held to the child's, and each
status read from what a child leaves (its exit and its result file); the children themselves run
in tests/_target/test_package_smoke.py and, through the real ``verify``, in
tests/integration/test_verify_packages.py."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.utils import canonicalize_name

from colabenv._util import processes
from colabenv.models.frameworks import package_of, spellings_of
from colabenv.verification.children import ChildRun
from colabenv.verification.packages import (
    PACKAGES,
    SHARED_TIMEOUTS,
    PackageRun,
    check_package,
    package_smokes,
    parse_package,
    run_packages,
)
from colabenv.verification.report import Check, Status
from tests.support.smoke import smoke_module

ROW = {row.name: row for row in PACKAGES}


def test_the_table_is_the_childs() -> None:
    assert [row.name for row in PACKAGES] == list(smoke_module("packages").PACKAGE_SMOKE)
    distributions = [d for row in PACKAGES for d in row.distributions]
    assert len(distributions) == len(set(distributions))


def test_named_or_installed_packages_get_a_smoke_test() -> None:
    assert package_smokes([], []) == ()
    assert package_smokes(["torch", "numpy"], ["torch", "pip"]) == ()
    # expected by name (any spelling), or installed in the verified interpreter
    chosen = package_smokes(["Flash_Attn", "cupy-cuda12x"], ["cudf-cu12", "onnxruntime-gpu", "torch"])
    assert [row.name for row in chosen] == ["flash-attn", "cupy", "cudf", "onnxruntime-gpu"]
    # the CPU onnxruntime alone is not onnxruntime-gpu: no CUDA provider is expected of it
    assert package_smokes([], ["onnxruntime"]) == ()


def _run(
    data: dict[str, Any] | None, returncode: int = 0, stderr: str = "", timed_out: bool = False
) -> ChildRun:
    base: dict[str, Any] = {
        "mode": "package",
        "package": "cupy",
        "stage": "done",
        "version": "13.4.1",
        "torch": None,
        "cuda": "12.8",
        "device": "Tesla T4",
        "capability": "7.5",
        "gpu_reason": None,
        "what": "matmul",
        "against": "NumPy",
        "max_abs_diff": 0.0,
        "tolerance": 1e-3,
        "non_finite": 0,
        "problem": None,
        "error": None,
    }
    text = None if data is None else json.dumps({**base, **data})
    return ChildRun(processes.Completed(("python",), returncode, "", stderr, timed_out), text)


def _check(name: str, run: ChildRun) -> tuple[Status, str]:
    check = check_package(PackageRun(ROW[name], run, 30.0), timeout=30)
    assert check.name == f"smoke:{name}" and "\n" not in check.detail
    return check.status, check.detail


def test_a_right_answer_passes() -> None:
    assert _check("cupy", _run({})) == (
        Status.PASS,
        "Tesla T4 (sm_75): matmul agrees with NumPy (max abs diff 0, tolerance 0.001); cupy 13.4.1",
    )
    status, detail = _check(
        "xformers",
        _run(
            {
                "package": "xformers",
                "version": "0.0.29.post3",
                "torch": "2.6.0+cu124",
                "what": "memory_efficient_attention",
                "against": "plain attention (float64)",
                "max_abs_diff": 0.00049,
                "tolerance": 0.02,
            }
        ),
    )
    assert status is Status.PASS
    assert detail == (
        "Tesla T4 (sm_75): memory_efficient_attention agrees with plain attention (float64)"
        " (max abs diff 0.00049, tolerance 0.02); xformers 0.0.29.post3 (torch 2.6.0+cu124)"
    )
    vllm = {"package": "vllm", "version": "0.8.5", "what": "compiled ops (vllm._C) loaded", "against": None}
    assert _check("vllm", _run({**vllm, "loaded": True})) == (
        Status.PASS,
        "Tesla T4 (sm_75): compiled ops (vllm._C) loaded; vllm 0.8.5",
    )
    assert _check("vllm", _run(vllm))[0] is Status.FAIL


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        (
            {"max_abs_diff": 1.0},
            "cupy 13.4.1: matmul on Tesla T4 (sm_75) differs from NumPy (max abs diff 1.0, tolerance 0.001)",
        ),
        ({"max_abs_diff": math.nan}, "cupy 13.4.1: matmul on Tesla T4 (sm_75) differs from NumPy"),
        ({"max_abs_diff": None, "non_finite": 1}, "cupy 13.4.1: matmul returned 1 non-finite value"),
        ({"tolerance": None}, "differs from NumPy (max abs diff 0.0, tolerance None)"),
        ({"problem": "cuDF's groups [0] are not pandas' [0, 1]"}, "cupy 13.4.1: cuDF's groups [0]"),
        (
            {"gpu_reason": "cudaErrorNoDevice"},
            "cupy 13.4.1 sees no GPU although the host has one (cudaErrorNoDevice)",
        ),
        (
            {"stage": "import", "version": None, "error": "ImportError: libcudart.so.13: cannot open"},
            "import failed: ImportError: libcudart.so.13: cannot open",
        ),
        ({"error": "RuntimeError: CUDA error: no kernel image"}, "failed: RuntimeError: CUDA error"),
    ],
)
def test_what_fails(fields: dict[str, Any], detail: str) -> None:
    status, text = _check("cupy", _run(fields))
    assert status is Status.FAIL
    assert detail in text


def test_a_child_that_died_or_left_nothing_fails() -> None:
    assert _check("vllm", _run(None, returncode=-9, timed_out=True, stderr="stand-in: hanging\n")) == (
        Status.FAIL,
        "did not finish within 30s (killed); stderr: stand-in: hanging",
    )
    status, detail = _check("flash-attn", _run(None, returncode=-11, stderr="about to crash\n"))
    assert (status, detail) == (Status.FAIL, "crashed with SIGSEGV; stderr: about to crash")
    assert _check("cudf", _run(None, returncode=1)) == (Status.FAIL, "exited 1 without a result")
    # the stderr of a problem is quoted: onnxruntime says why its CUDA provider did not load
    status, detail = _check(
        "onnxruntime-gpu",
        _run(
            {"package": "onnxruntime-gpu", "problem": "the session fell back to the CPU"},
            stderr="Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.9\n",
        ),
    )
    assert status is Status.FAIL
    assert detail.endswith(
        "fell back to the CPU; stderr: Failed to load library"
        " libonnxruntime_providers_cuda.so with error: libcudnn.so.9"
    )


def test_what_a_child_reports_is_bounded() -> None:
    assert parse_package("not json") is None
    assert parse_package(json.dumps({"mode": "smoke"})) is None
    parsed = parse_package(json.dumps({"mode": "package", "error": "x\n" * 1000, "non_finite": True}))
    assert parsed is not None and parsed.error is not None
    assert len(parsed.error) == 300 and "\n" not in parsed.error and parsed.non_finite == 0


def test_the_package_children_share_a_bounded_time(tmp_path: Path) -> None:
    """One after another, they take at most SHARED_TIMEOUTS smoke timeouts: a child that would
    start with less than MIN_CHILD_S left does not start, and says why."""
    times = iter([0.0, 0.0, 30.0, SHARED_TIMEOUTS * 30.0 - 1.0])
    rows = [ROW["xformers"], ROW["cupy"], ROW["vllm"]]
    first, second, third = run_packages(
        rows, 30, python=sys.executable, scratch=tmp_path, clock=lambda: next(times)
    )
    assert (first.limit, second.limit, third.limit) == (30.0, 30.0, 0.0)
    assert first.run is not None and second.run is not None and third.run is None
    # the first two ran for real, in this Python, where neither package is installed
    assert check_package(first, timeout=30).detail.startswith("import failed: ModuleNotFoundError")
    assert check_package(third, timeout=30) == Check(
        "smoke:vllm",
        Status.FAIL,
        "not run: the package smoke tests before it used the 60s they share (raise --timeout)",
    )
    # a child given less than the timeout is judged by what it was given
    hung = ChildRun(processes.Completed(("python",), -9, "", "", True), None)
    assert check_package(PackageRun(ROW["cudf"], hung, 12.5), timeout=30).detail == (
        "did not finish within 12.5s (killed)"
    )


@pytest.mark.parametrize(
    ("name", "spelled"),
    [
        ("xformers", ("xformers",)),
        (
            "cupy",
            (
                "cupy",
                "cupy-cuda11x",
                "cupy-cuda12x",
                "cupy-cuda13x",
                *(f"cupy-rocm-{line}" for line in ("4-0", "4-2", "4-3", "5-0", "7-0")),
            ),
        ),
        ("cuml", ("cuml", "cuml-cu11", "cuml-cu12", "cuml-cu13")),
        ("team-ext", ("team-ext",)),
    ],
)
def test_a_package_is_known_by_each_of_its_spellings(name: str, spelled: tuple[str, ...]) -> None:
    """One list of spellings for the smoke rows, the lock's fit, ``pin`` and ``package_of``: a
    package of one distribution is spelled once, an unknown one only as written."""
    assert spellings_of(canonicalize_name(name)) == spelled
    for dist in spelled[1:]:
        names = package_of(dist)
        assert names is not None and names.name == name
    rows = [row for row in PACKAGES if row.name == name]
    assert all(row.distributions == spelled for row in rows)
