"""The package smoke child (``python .../smoke package NAME``) run by its path, as ``verify``
runs it, with stand-in packages (``tests/support/standin_packages.py``) on ``PYTHONPATH``:
the result it writes for a right answer, a wrong one, a NaN, onnxruntime on the CPU, no GPU, an
import error, cuML against scikit-learn or NumPy; under this Python and Python 3.8."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from colabenv._util.resources import SMOKE_PROGRAM
from tests.support.fixtures import make_venv
from tests.support.pythons import child_pythons
from tests.support.smoke import smoke_module
from tests.support.standin_packages import (
    VERSIONS,
    Acts,
    PackageStandin,
    needs,
    numpy_files,
    package_files,
    pandas_files,
    sklearn_files,
    torch_files,
)

PYTHONS = child_pythons()
COMPUTED = (
    "xformers",
    "flash-attn",
    "flash-attn-4",
    "bitsandbytes",
    "cupy",
    "cudf",
    "cuml",
    "onnxruntime-gpu",
    "torch-scatter",
    "pyg-lib",
)


def _site(folder: Path, standin: PackageStandin, *, gpu: bool = True, without: tuple[str, ...] = ()) -> Path:
    files = package_files(standin)
    for need in needs(standin.smoke):
        if need in without:
            continue
        files.update(
            {
                "torch": torch_files(gpu=gpu),
                "numpy": numpy_files(),
                "pandas": pandas_files(),
                "sklearn": sklearn_files(),
            }[need]
        )
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


def _run(
    tmp_path: Path,
    smoke: str,
    acts: Acts = Acts.RIGHT,
    *,
    gpu: bool = True,
    python: str | None = None,
    site: Path | None = None,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """The child's run and result; ``site``: the folder on ``PYTHONPATH``, by default one with the
    stand-in and the small torch, numpy or pandas it stands on."""
    if site is None:
        standin = PackageStandin(smoke, VERSIONS[smoke], acts)
        site = _site(tmp_path / f"site-{smoke}-{acts.value}", standin, gpu=gpu)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "COLABENV_"))}
    env.update(PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1")
    result = tmp_path / f"result-{smoke}.json"
    result.unlink(missing_ok=True)
    done = subprocess.run(
        [python or sys.executable, str(SMOKE_PROGRAM), "package", smoke, "--result", str(result)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    return done, json.loads(result.read_text()) if result.exists() else None


@pytest.mark.parametrize("python", PYTHONS)
def test_every_package_smoke_passes_on_right_answers(tmp_path: Path, python: str) -> None:
    for smoke in COMPUTED:
        done, data = _run(tmp_path, smoke, python=python)
        assert done.returncode == 0, (smoke, done.stderr)
        assert data is not None and data["error"] is None and data["problem"] is None, (smoke, data)
        assert data["mode"] == "package" and data["package"] == smoke
        assert data["version"] == VERSIONS[smoke] and data["stage"] == "done"
        assert data["non_finite"] == 0 and data["gpu_reason"] is None
        assert data["max_abs_diff"] <= data["tolerance"], (smoke, data)
    done, data = _run(tmp_path, "vllm", python=python)
    assert done.returncode == 0, done.stderr
    assert data is not None and data["loaded"] is True and data["device"] == "Stand-in T4"


def test_the_tolerances_are_what_they_say(tmp_path: Path) -> None:
    # the stand-ins round attention to float16 and quantize to int8 as the real kernels do: a
    # difference that is not zero, inside the stated tolerance
    packages = smoke_module("packages")
    _, xformers = _run(tmp_path, "xformers")
    assert xformers is not None and 0 < xformers["max_abs_diff"] < packages.ATTENTION_TOLERANCE
    assert xformers["tolerance"] == packages.ATTENTION_TOLERANCE
    _, bnb = _run(tmp_path, "bitsandbytes")
    assert bnb is not None and 0 < bnb["max_abs_diff"] < bnb["tolerance"]
    _, cupy = _run(tmp_path, "cupy")
    assert cupy is not None and (cupy["max_abs_diff"], cupy["device"], cupy["capability"]) == (
        0.0,
        "Stand-in T4",
        "7.5",
    )
    assert cupy["cuda"] == "12.8"
    # cuDF names the GPU through CuPy, which it requires; without it, only a note
    _, cudf = _run(tmp_path, "cudf")
    assert cudf is not None and cudf["device"] is None and cudf["max_abs_diff"] == 0.0
    assert cudf["notes"] == ["GPU name unknown: ModuleNotFoundError: No module named 'cupy'"]


@pytest.mark.parametrize("smoke", COMPUTED)
def test_a_wrong_answer_is_measured(tmp_path: Path, smoke: str) -> None:
    done, data = _run(tmp_path, smoke, Acts.WRONG)
    assert done.returncode == 0, done.stderr
    assert data is not None and data["error"] is None
    if data["problem"] is None:
        assert not data["max_abs_diff"] <= data["tolerance"], data


@pytest.mark.parametrize(
    "smoke",
    [
        "xformers",
        "flash-attn-4",
        "bitsandbytes",
        "cupy",
        "cuml",
        "onnxruntime-gpu",
        "torch-scatter",
        "pyg-lib",
    ],
)
def test_a_nan_is_counted(tmp_path: Path, smoke: str) -> None:
    _, data = _run(tmp_path, smoke, Acts.NAN)
    assert data is not None and data["non_finite"] == 1 and data["max_abs_diff"] is None


def test_cuml_is_compared_with_scikit_learn_or_else_numpy(tmp_path: Path) -> None:
    right = PackageStandin("cuml", VERSIONS["cuml"])
    _, data = _run(tmp_path, "cuml")
    assert data is not None and data["against"] == "scikit-learn's LinearRegression"
    assert data["problem"] is None and data["max_abs_diff"] < 1e-6
    # without scikit-learn, NumPy's least squares on the same data
    site = _site(tmp_path / "site-no-sklearn", right, without=("sklearn",))
    _, data = _run(tmp_path, "cuml", site=site)
    assert data is not None and data["against"] == "NumPy's least squares"
    assert data["problem"] is None and data["max_abs_diff"] < 1e-6
    assert not any("scikit-learn" in note for note in data["notes"]), "not installed: no note"
    # a cuML fit off by 0.01 is measured against either reference
    wrong = _site(
        tmp_path / "site-wrong-no-sklearn",
        PackageStandin("cuml", VERSIONS["cuml"], Acts.WRONG),
        without=("sklearn",),
    )
    _, data = _run(tmp_path, "cuml", site=wrong)
    assert data is not None and data["problem"] is None
    assert data["tolerance"] < data["max_abs_diff"] < 0.011, data


def test_a_scikit_learn_that_fails_to_import_is_a_note_and_numpy_fits(tmp_path: Path) -> None:
    site = _site(
        tmp_path / "site-broken-sklearn", PackageStandin("cuml", VERSIONS["cuml"]), without=("sklearn",)
    )
    (site / "sklearn").mkdir()
    (site / "sklearn" / "__init__.py").write_text(
        'raise ImportError("numpy.core.multiarray failed to import")\n', encoding="utf-8"
    )
    done, data = _run(tmp_path, "cuml", site=site)
    assert done.returncode == 0, done.stderr
    assert data is not None and data["against"] == "NumPy's least squares" and data["problem"] is None
    assert data["notes"][0] == "scikit-learn not used: ImportError: numpy.core.multiarray failed to import"
    assert data["max_abs_diff"] < 1e-6


def test_a_cpu_reference_that_is_itself_wrong_is_a_problem_not_a_pass(tmp_path: Path) -> None:
    site = _site(
        tmp_path / "site-bad-sklearn", PackageStandin("cuml", VERSIONS["cuml"]), without=("sklearn",)
    )
    for relative, text in sklearn_files(wrong=True).items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_text(text, encoding="utf-8")
    done, data = _run(tmp_path, "cuml", site=site)
    assert done.returncode == 0, done.stderr
    assert data is not None and data["max_abs_diff"] is None
    assert data["problem"] == (
        "scikit-learn's LinearRegression differs from the exact coefficients (max abs diff 0.5)"
    )


def test_flash_attn_4_alone_is_imported_through_the_namespace_package(tmp_path: Path) -> None:
    # flash-attn-4 installs flash_attn/cute only; without flash-attn 2 there is no
    # flash_attn/__init__.py, and the version is read from the stand-in's module
    site = _site(tmp_path / "site-fa4", PackageStandin("flash-attn-4", VERSIONS["flash-attn-4"]))
    assert not (site / "flash_attn" / "__init__.py").exists()
    done, data = _run(tmp_path, "flash-attn-4", site=site)
    assert done.returncode == 0, done.stderr
    assert data is not None and data["version"] == VERSIONS["flash-attn-4"]
    assert data["what"] == "flash_attn.cute.flash_attn_func"
    assert 0 < data["max_abs_diff"] <= data["tolerance"]
    _, data = _run(tmp_path, "flash-attn-4", gpu=False)
    assert data is not None and data["gpu_reason"] == "torch.cuda.is_available() is False"


@pytest.mark.parametrize("acts", [Acts.RIGHT, Acts.WRONG])
def test_vllm_0_31_and_later_load_their_ops_from_c_stable_libtorch(tmp_path: Path, acts: Acts) -> None:
    # vLLM's wheels of 0.31 to 0.33 ship vllm/_C_stable_libtorch.abi3.so and no vllm/_C: its CUDA
    # platform imports that one, and so does the smoke test (a wrong one still fails)
    site = _site(tmp_path / f"site-vllm-stable-{acts.value}", PackageStandin("vllm", VERSIONS["vllm"], acts))
    (site / "vllm" / "_C.py").rename(site / "vllm" / "_C_stable_libtorch.py")
    done, data = _run(tmp_path, "vllm", site=site)
    assert data is not None and data["what"] == "compiled ops (vllm._C_stable_libtorch) loaded"
    if acts is Acts.RIGHT:
        assert done.returncode == 0, done.stderr
        assert data["loaded"] is True and data["error"] is None
    else:
        assert done.returncode == 1 and data.get("loaded") is not True
        assert data["error"].startswith("ImportError: vllm/_C.abi3.so: undefined symbol")


def test_vllm_with_both_ops_libraries_loads_each(tmp_path: Path) -> None:
    # vLLM 0.19.1's wheel has vllm/_C and a small vllm/_C_stable_libtorch: a broken _C fails
    # the check even though the stable library loads
    site = _site(tmp_path / "site-vllm-both", PackageStandin("vllm", VERSIONS["vllm"], Acts.WRONG))
    (site / "vllm" / "_C_stable_libtorch.py").write_text("", encoding="utf-8")
    done, data = _run(tmp_path, "vllm", site=site)
    assert data is not None and data["what"] == "compiled ops (vllm._C_stable_libtorch, vllm._C) loaded"
    assert done.returncode == 1 and data.get("loaded") is not True
    assert data["error"].startswith("ImportError: vllm/_C.abi3.so: undefined symbol")


def test_onnxruntime_on_the_cpu_is_a_problem(tmp_path: Path) -> None:
    done, data = _run(tmp_path, "onnxruntime-gpu", Acts.CPU_FALLBACK)
    assert done.returncode == 0 and data is not None
    assert data["problem"] == (
        "the session fell back to the CPU: it runs on CPUExecutionProvider, not CUDAExecutionProvider"
    )
    assert data["max_abs_diff"] is None and "libcudnn.so.9" in done.stderr
    _, data = _run(tmp_path, "onnxruntime-gpu", Acts.NO_CUDA_PROVIDER)
    assert data is not None and data["problem"].startswith(
        "this onnxruntime has no CUDAExecutionProvider (it offers CPUExecutionProvider)"
    )


def test_no_gpu_and_import_errors(tmp_path: Path) -> None:
    _, data = _run(tmp_path, "xformers", gpu=False)
    assert data is not None and data["gpu_reason"] == "torch.cuda.is_available() is False"
    assert data["max_abs_diff"] is None
    _, data = _run(tmp_path, "cupy", Acts.NO_GPU)
    assert data is not None
    assert data["gpu_reason"] == "CUDARuntimeError: cudaErrorNoDevice: no CUDA-capable device is detected"
    done, data = _run(tmp_path, "flash-attn", Acts.IMPORT_ERROR)
    assert done.returncode == 3 and data is not None
    assert (data["stage"], data["version"]) == ("import", None)
    assert data["error"].startswith("ImportError: libcudart.so.13")
    done, data = _run(tmp_path, "vllm", Acts.WRONG)
    assert done.returncode == 1 and data is not None and data["version"] == VERSIONS["vllm"]
    assert data["error"] == "ImportError: vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"


def test_the_onnx_model_is_well_formed() -> None:
    # the protobuf written by hand, read back field by field (onnx/onnx.proto numbering)
    packages = smoke_module("packages")

    def fields(data: bytes) -> list[tuple[int, int | bytes]]:
        out: list[tuple[int, int | bytes]] = []
        at = 0

        def varint() -> int:
            nonlocal at
            value = shift = 0
            while True:
                byte = data[at]
                at += 1
                value |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    return value

        while at < len(data):
            key = varint()
            if key & 7 == 0:
                out.append((key >> 3, varint()))
            else:
                assert key & 7 == 2
                length = varint()
                out.append((key >> 3, data[at : at + length]))
                at += length
        return out

    model = dict(fields(packages.matmul_model(48)))
    assert model[1] == 7
    assert fields(model[8]) == [(1, b""), (2, 13)]  # type: ignore[arg-type]
    graph = fields(model[7])  # type: ignore[arg-type]
    node = fields(graph[0][1])  # type: ignore[arg-type]
    assert node == [(1, b"A"), (1, b"B"), (2, b"Y"), (4, b"MatMul")]
    inputs = [fields(v) for k, v in graph if k == 11]  # type: ignore[arg-type]
    assert [i[0] for i in inputs] == [(1, b"A"), (1, b"B")]
    tensor = dict(fields(dict(fields(inputs[0][1][1]))[1]))  # type: ignore[arg-type]
    assert tensor[1] == 1  # FLOAT
    dims = [dict(fields(d))[1] for _, d in fields(tensor[2])]  # type: ignore[arg-type]
    assert dims == [48, 48]


@pytest.mark.network
def test_the_real_cpu_onnxruntime_is_refused_and_runs_the_model(tmp_path: Path) -> None:
    """The real onnxruntime (the CPU package) from the package index: the child says it has no
    CUDA provider, and the model written by hand loads and multiplies right in a real session."""
    python = make_venv(tmp_path / "venv")
    uv = Path(sys.executable).parent / "uv"
    subprocess.run(
        [str(uv), "pip", "install", "--quiet", "--python", str(python), "onnxruntime", "numpy"],
        check=True,
        capture_output=True,
        timeout=600,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "COLABENV_"))}
    result = tmp_path / "result.json"
    done = subprocess.run(
        [str(python), str(SMOKE_PROGRAM), "package", "onnxruntime-gpu", "--result", str(result)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(result.read_text())
    assert data["problem"].startswith("this onnxruntime has no CUDAExecutionProvider (it offers ")
    assert "CPUExecutionProvider" in data["problem"]
    session = f"""
import sys
sys.path.insert(0, {str(SMOKE_PROGRAM)!r})
import numpy, onnxruntime
from base import compare, matrices, reference_matmul
from packages import matmul_model
a, b = matrices()
session = onnxruntime.InferenceSession(matmul_model(len(a)), providers=["CPUExecutionProvider"])
feeds = {{"A": numpy.asarray(a, dtype=numpy.float32), "B": numpy.asarray(b, dtype=numpy.float32)}}
print(compare(session.run(None, feeds)[0].tolist(), reference_matmul(a, b)))
"""
    done = subprocess.run(
        [str(python), "-c", session], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(0.0, 0)"


@pytest.mark.network
def test_cupy_and_cudf_checked_against_the_real_numpy_and_pandas(tmp_path: Path) -> None:
    """The CPU references the CuPy and cuDF smoke tests call, the real NumPy and pandas from the
    package index, under stand-in CuPy and cuDF: right answers pass, a wrong group is measured."""
    python = make_venv(tmp_path / "venv")
    uv = Path(sys.executable).parent / "uv"
    subprocess.run(
        [str(uv), "pip", "install", "--quiet", "--python", str(python), "numpy", "pandas"],
        check=True,
        capture_output=True,
        timeout=600,
    )
    for smoke, acts in (("cupy", Acts.RIGHT), ("cudf", Acts.RIGHT), ("cudf", Acts.WRONG)):
        site = tmp_path / f"site-{smoke}-{acts.value}"
        for relative, text in package_files(PackageStandin(smoke, VERSIONS[smoke], acts)).items():
            (site / relative).parent.mkdir(parents=True, exist_ok=True)
            (site / relative).write_text(text, encoding="utf-8")
        done, data = _run(tmp_path, smoke, acts, python=str(python), site=site)
        assert done.returncode == 0, done.stderr
        assert data is not None and data["error"] is None and data["problem"] is None, data
        assert (data["max_abs_diff"] == 0.0) is (acts is Acts.RIGHT), data
