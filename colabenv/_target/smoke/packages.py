"""The smoke tests of the CUDA packages around the frameworks (stdlib only, Python 3.8+; see
``__main__.py``): xformers, flash-attn, flash-attn-4, bitsandbytes, CuPy, cuDF, cuML,
onnxruntime-gpu, vLLM, torch-scatter and pyg-lib, one per child, each computed on the first GPU and
compared with a reference computed here in pure Python (and, where the package comes with one,
its CPU counterpart: NumPy, pandas, scikit-learn).

The result (mode ``package``) holds what was computed (``what``), against what (``against``),
the largest absolute difference and the tolerance it must stay within, a count of non-finite
values, and ``problem``: a finding that is no number (onnxruntime ran on the CPU, cuDF's groups
differ from pandas'). Whether it passes is decided by the parent (``colabenv.verification
.packages``); only the tolerance, which belongs to the computation, is set here.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from base import compare, cuda_text, matrices, one_line, reference_matmul, run_test

if TYPE_CHECKING:
    from typing import TypeAlias

    from base import Matrix

PackageSmoke: TypeAlias = "Callable[[dict[str, Any]], None]"

EXACT_TOLERANCE = 1e-3
"""CuPy, onnxruntime: the framework smoke tests' matrices hold small integers, so their product
is exact in float32 and in TF32, and any difference is a wrong result; the same bound as the
framework smoke tests' (``MATMUL_TOLERANCE`` in the parent)."""
ATTENTION_TOLERANCE = 2e-2
"""xformers, flash-attn: the inputs (multiples of 1/8 in [-1, 1]) are exact in float16; the
kernels accumulate in float32 and round the softmax weights and the output to float16 (11-bit
significand: a relative error under 2**-11, 4.9e-4, on outputs under 1 in magnitude). 2e-2 is
40 times that rounding, while a wrong scale, a transposed key or a softmax over the wrong axis
moves outputs of this size by more than 0.1 (the stand-in without the scale: 0.8)."""
INT8_RELATIVE_TOLERANCE = 0.05
"""bitsandbytes' LLM.int8() matmul: each row of A and of B is scaled by its absolute maximum and
rounded to int8, an error of at most half a step in 127 per operand, so each product term is off
by under 1% of the largest term; the output may differ from the fp32 product by 5% of its
largest magnitude, while garbage, zeros or a missing transpose differ by far more."""
GROUPBY_TOLERANCE = 1e-9
"""cuDF, torch-scatter: sums of small integers held as floats are exact."""
REGRESSION_TOLERANCE = 1e-3
"""cuML's LinearRegression: the targets are an exact linear function of small whole-number
features (exact in float32), so the least-squares fit recovers the coefficients up to float32
rounding in the solve (about 1e-5 at these sizes); a coefficient off by 1e-3 is a wrong fit.
The CPU fit it is compared with (scikit-learn's, or NumPy's least squares, in float64) is
first held to the exact coefficients by the same bound."""

ATTENTION_SHAPE = (1, 32, 2, 32)
"""(batch, sequence, heads, head size): the ``[B, M, H, K]`` layout xformers and flash-attn take;
flash-attn needs a head size that is a multiple of 8."""
FLASH_ATTN_4_SHAPE = (1, 64, 2, 64)
"""flash-attn-4 (``flash_attn.cute``): the same layout, with a head size of 64: its interface
(``flash_attn/cute/interface.py``, ``_validate_head_dims``) takes head sizes of 8 to 256 on
SM90 and 8 to 128 on SM100/SM110, multiples of 16 bytes (8 in float16); SM80 and SM120 are
not held to a range there."""
REGRESSION_COEFFICIENTS = (2.0, -1.0, 0.5)
REGRESSION_INTERCEPT = 3.0
INT8_SHAPE = (16, 64, 32)
"""A is 16 x 64, B is 32 x 64 (the weight's layout, out x in): the product is A @ B^T."""
GROUPS = 7
ROWS = 200


def _values(count: int, salt: int) -> list[float]:
    """``count`` numbers in [-1, 1] that are exact in float16 (multiples of 1/8)."""
    return [float(((i * 7 + salt * 13) % 17) - 8) / 8.0 for i in range(count)]


def _attention_inputs(
    shape: tuple[int, int, int, int] = ATTENTION_SHAPE,
) -> tuple[list[Any], list[Any], list[Any]]:
    batch, sequence, heads, size = shape

    def tensor(salt: int) -> list[Any]:
        flat = _values(batch * sequence * heads * size, salt)
        it = iter(flat)
        return [
            [[[next(it) for _ in range(size)] for _ in range(heads)] for _ in range(sequence)]
            for _ in range(batch)
        ]

    return tensor(1), tensor(2), tensor(3)


def reference_attention(q: list[Any], k: list[Any], v: list[Any]) -> list[Any]:
    """softmax(Q K^T / sqrt(K)) V for each batch and head, in the ``[B, M, H, K]`` layout."""
    out: list[Any] = []
    for b in range(len(q)):
        rows: list[Any] = []
        for i in range(len(q[b])):
            heads: list[Any] = []
            for h in range(len(q[b][i])):
                size = len(q[b][i][h])
                scale = 1.0 / math.sqrt(size)
                scores = [
                    scale * sum(x * y for x, y in zip(q[b][i][h], k[b][j][h]))  # noqa: B905
                    for j in range(len(k[b]))
                ]
                top = max(scores)
                weights = [math.exp(s - top) for s in scores]
                total = sum(weights)
                heads.append(
                    [sum(weights[j] * v[b][j][h][d] for j in range(len(v[b]))) / total for d in range(size)]
                )
            rows.append(heads)
        out.append(rows)
    return out


def _rows(values: Any) -> Matrix:
    """A ``[B, M, H, K]`` nested list as rows of K."""
    return [[float(x) for x in head] for batch in values for row in batch for head in row]


def _record(result: dict[str, Any], values: Any, reference: Matrix, tolerance: float) -> None:
    result["max_abs_diff"], result["non_finite"] = compare(values, reference)
    result["tolerance"] = tolerance


def _torch_gpu(result: dict[str, Any]) -> Any:
    """torch, with the first GPU's name and capability in ``result``; None (``gpu_reason`` set)
    when torch sees no GPU."""
    torch = importlib.import_module("torch")
    result["torch"] = str(torch.__version__)
    result["cuda"] = cuda_text(getattr(getattr(torch, "version", None), "cuda", None))
    if not torch.cuda.is_available():
        result["gpu_reason"] = "torch.cuda.is_available() is False"
        return None
    major, minor = torch.cuda.get_device_capability(0)
    result["device"] = str(torch.cuda.get_device_name(0))
    result["capability"] = f"{major}.{minor}"
    return torch


def _import(result: dict[str, Any], module: str) -> Any:
    package = importlib.import_module(module)
    result["version"] = str(getattr(package, "__version__", "?"))
    return package


def _torch_test(result: dict[str, Any], module: str, what: str, against: str) -> tuple[Any, Any]:
    """``module`` imported (its version in ``result``), the test named, and torch with its first
    GPU: (the module, torch), torch None when it sees no GPU (``gpu_reason`` set)."""
    package = _import(result, module)
    result.update(what=what, against=against)
    return package, _torch_gpu(result)


# ---------------------------------------------------------------------------------------------
# attention: xformers, flash-attn


def _attention(
    result: dict[str, Any],
    run: Callable[[Any, Any, Any], Any],
    shape: tuple[int, int, int, int] = ATTENTION_SHAPE,
) -> None:
    torch = _torch_gpu(result)
    if torch is None:
        return
    q, k, v = _attention_inputs(shape)
    left = [torch.tensor(x, dtype=torch.float16, device="cuda:0") for x in (q, k, v)]
    values = run(*left).float().cpu().tolist()
    _record(result, _rows(values), _rows(reference_attention(q, k, v)), ATTENTION_TOLERANCE)


def _smoke_xformers(result: dict[str, Any]) -> None:
    _import(result, "xformers")
    ops = importlib.import_module("xformers.ops")
    result.update(what="memory_efficient_attention", against="plain attention (float64)")
    _attention(result, lambda q, k, v: ops.memory_efficient_attention(q, k, v))


def _smoke_flash_attn(result: dict[str, Any]) -> None:
    flash = _import(result, "flash_attn")
    result.update(what="flash_attn_func", against="plain attention (float64)")
    _attention(result, lambda q, k, v: flash.flash_attn_func(q, k, v, dropout_p=0.0, causal=False))


def _smoke_flash_attn_4(result: dict[str, Any]) -> None:
    cute = importlib.import_module("flash_attn.cute")
    try:
        result["version"] = importlib.import_module("importlib.metadata").version("flash-attn-4")
    except Exception:  # not installed as a distribution (a checkout on sys.path)
        result["version"] = str(getattr(cute, "__version__", "?"))
    result.update(what="flash_attn.cute.flash_attn_func", against="plain attention (float64)")

    def run(q: Any, k: Any, v: Any) -> Any:
        out = cute.flash_attn_func(q, k, v, causal=False)
        # FlashAttnFunc.forward returns (out, lse) (flash_attn/cute/interface.py); a tensor alone
        # is taken as the output
        return out[0] if isinstance(out, tuple) else out

    _attention(result, run, FLASH_ATTN_4_SHAPE)


# ---------------------------------------------------------------------------------------------
# bitsandbytes


def _smoke_bitsandbytes(result: dict[str, Any]) -> None:
    bnb, torch = _torch_test(result, "bitsandbytes", "8-bit matmul (LLM.int8())", "the fp32 product")
    if torch is None:
        return
    rows, inner, columns = INT8_SHAPE
    flat_a, flat_b = _values(rows * inner, 4), _values(columns * inner, 5)
    a = [flat_a[r * inner : (r + 1) * inner] for r in range(rows)]
    b = [flat_b[c * inner : (c + 1) * inner] for c in range(columns)]
    # bnb.matmul(A, B) is A @ B^T, B in a weight's (out, in) layout, as Linear8bitLt calls it
    # (bitsandbytes/autograd/_functions.py, MatMul8bitLt: output shape (A rows, B rows))
    product = bnb.matmul(
        torch.tensor(a, dtype=torch.float16, device="cuda:0"),
        torch.tensor(b, dtype=torch.float16, device="cuda:0"),
        threshold=0.0,
    )
    reference = reference_matmul(a, [list(col) for col in zip(*b)])  # noqa: B905
    largest = max((abs(x) for row in reference for x in row), default=0.0)
    _record(result, product.float().cpu().tolist(), reference, INT8_RELATIVE_TOLERANCE * largest)


# ---------------------------------------------------------------------------------------------
# CuPy


def _smoke_cupy(result: dict[str, Any]) -> None:
    cupy = _import(result, "cupy")
    numpy = importlib.import_module("numpy")
    result.update(what="matmul", against="NumPy")
    a, b = matrices()
    reference = reference_matmul(a, b)
    host_a, host_b = numpy.asarray(a, dtype=numpy.float32), numpy.asarray(b, dtype=numpy.float32)
    cpu_diff, cpu_bad = compare((host_a @ host_b).tolist(), reference)
    if cpu_bad or cpu_diff is None or not cpu_diff <= EXACT_TOLERANCE:
        result["problem"] = f"NumPy's matmul differs from the exact product (max abs diff {cpu_diff})"
        return
    runtime = cupy.cuda.runtime
    try:
        count = int(runtime.getDeviceCount())
    except Exception as exc:
        result["gpu_reason"] = one_line(exc)
        return
    if count < 1:
        result["gpu_reason"] = "cupy.cuda.runtime.getDeviceCount() is 0"
        return
    name = runtime.getDeviceProperties(0).get("name", b"?")
    result["device"] = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
    capability = str(cupy.cuda.Device(0).compute_capability)
    result["capability"] = f"{capability[:-1]}.{capability[-1]}" if capability.isdigit() else None
    result["cuda"] = cuda_text(int(runtime.runtimeGetVersion()))
    with cupy.cuda.Device(0):
        product = cupy.asnumpy(cupy.asarray(host_a) @ cupy.asarray(host_b))
    _record(result, product.tolist(), reference, EXACT_TOLERANCE)


# ---------------------------------------------------------------------------------------------
# cuDF


def _groupby_input() -> tuple[list[int], list[float], dict[int, float]]:
    keys = [(i * 5) % GROUPS for i in range(ROWS)]
    values = [float((i * 7) % 11) for i in range(ROWS)]
    sums: dict[int, float] = {}
    for key, value in zip(keys, values):  # noqa: B905
        sums[key] = sums.get(key, 0.0) + value
    return keys, values, sums


def _by_key(series: Any) -> dict[int, float]:
    return {int(k): float(v) for k, v in dict(series.to_dict()).items()}


def _cupy_device(result: dict[str, Any]) -> None:
    """The first GPU's name as CuPy (which cuDF requires) reads it, for the detail only."""
    try:
        runtime = importlib.import_module("cupy").cuda.runtime
        name = runtime.getDeviceProperties(0).get("name", b"?")
        result["device"] = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
    except Exception as exc:
        result["notes"].append(f"GPU name unknown: {one_line(exc)}")


def _smoke_cudf(result: dict[str, Any]) -> None:
    cudf = _import(result, "cudf")
    pandas = importlib.import_module("pandas")
    result.update(what="groupby sum", against="pandas")
    keys, values, sums = _groupby_input()
    frame = {"key": keys, "value": values}
    expected = _by_key(pandas.DataFrame(frame).groupby("key")["value"].sum())
    if expected != sums:
        result["problem"] = "pandas' groupby sum differs from the exact sums"
        return
    _cupy_device(result)
    got = _by_key(cudf.DataFrame(frame).groupby("key")["value"].sum().to_pandas())
    if sorted(got) != sorted(expected):
        result["problem"] = f"cuDF's groups {sorted(got)} are not pandas' {sorted(expected)}"
        return
    order = sorted(expected)
    _record(result, [[got[k] for k in order]], [[expected[k] for k in order]], GROUPBY_TOLERANCE)


# ---------------------------------------------------------------------------------------------
# cuML


def _regression_input() -> tuple[list[list[float]], list[float], list[float]]:
    """Features (whole numbers), targets exactly ``X @ REGRESSION_COEFFICIENTS + intercept``, and
    the coefficients then the intercept."""
    features = [
        [float((i * 3) % 11 - 5), float((i * 7) % 13 - 6), float((i * 5) % 17 - 8)] for i in range(ROWS)
    ]
    targets = [
        sum(w * x for w, x in zip(REGRESSION_COEFFICIENTS, row)) + REGRESSION_INTERCEPT  # noqa: B905
        for row in features
    ]
    return features, targets, [*REGRESSION_COEFFICIENTS, REGRESSION_INTERCEPT]


def _host_list(value: Any) -> list[float]:
    """A cuML attribute as floats: a NumPy or CuPy array (``.get()`` first), or a scalar."""
    if hasattr(value, "get") and not isinstance(value, dict):
        value = value.get()
    if hasattr(value, "tolist"):
        value = value.tolist()
    return [float(x) for x in value] if isinstance(value, list) else [float(value)]


def _cpu_fit(
    numpy: Any, features: list[list[float]], targets: list[float], notes: list[str]
) -> tuple[str, list[float]]:
    """The same least-squares fit on the CPU, in float64: scikit-learn's ``LinearRegression``
    where scikit-learn imports, else NumPy's ``linalg.lstsq`` on the features with a column of
    ones (a scikit-learn that is installed but fails to import is a note, not cuML's failure);
    its name and the coefficients then the intercept."""
    y = numpy.asarray(targets, dtype=numpy.float64)
    try:
        sklearn = importlib.import_module("sklearn.linear_model")
    except Exception as exc:
        if not isinstance(exc, ModuleNotFoundError) or exc.name not in ("sklearn", "sklearn.linear_model"):
            notes.append(f"scikit-learn not used: {one_line(exc)}")
        design = numpy.asarray([[*row, 1.0] for row in features], dtype=numpy.float64)
        return "NumPy's least squares", _host_list(numpy.linalg.lstsq(design, y, rcond=None)[0])
    x = numpy.asarray(features, dtype=numpy.float64)
    model = sklearn.LinearRegression(fit_intercept=True).fit(x, y)
    return "scikit-learn's LinearRegression", _host_list(model.coef_) + _host_list(model.intercept_)


def _smoke_cuml(result: dict[str, Any]) -> None:
    _import(result, "cuml")
    linear = importlib.import_module("cuml.linear_model")
    numpy = importlib.import_module("numpy")
    result["what"] = "LinearRegression fit"
    features, targets, exact = _regression_input()
    name, reference = _cpu_fit(numpy, features, targets, result["notes"])
    result["against"] = name
    cpu_diff, cpu_bad = compare([reference], [exact])
    if cpu_bad or cpu_diff is None or not cpu_diff <= REGRESSION_TOLERANCE:
        result["problem"] = f"{name} differs from the exact coefficients (max abs diff {cpu_diff})"
        return
    _cupy_device(result)
    model = linear.LinearRegression(fit_intercept=True)
    model.fit(numpy.asarray(features, dtype=numpy.float32), numpy.asarray(targets, dtype=numpy.float32))
    got = _host_list(model.coef_) + _host_list(model.intercept_)
    if len(got) != len(exact):
        result["problem"] = f"the fit has {len(got)} coefficients with the intercept, not {len(exact)}"
        return
    _record(result, [got], [reference], REGRESSION_TOLERANCE)


# ---------------------------------------------------------------------------------------------
# onnxruntime


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes | int) -> bytes:
    """One protobuf field: a varint (wire type 0) or bytes (wire type 2)."""
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _tensor_info(name: str, rows: int, columns: int) -> bytes:
    """ValueInfoProto {name = 1; type = 2 {tensor_type = 1 {elem_type = 1 (FLOAT); shape = 2
    {dim = 1 {dim_value = 1}}}}} (onnx/onnx.proto)."""
    shape = _field(1, _field(1, rows)) + _field(1, _field(1, columns))
    return _field(1, name.encode()) + _field(2, _field(1, _field(1, 1) + _field(2, shape)))


def matmul_model(size: int) -> bytes:
    """An ONNX model, ``Y = MatMul(A, B)`` on float32 ``size`` x ``size`` matrices, written
    without the onnx package: ModelProto {ir_version = 1: 7; graph = 7; opset_import = 8
    {domain = 1: ""; version = 2: 13}}; GraphProto {node = 1; name = 2; input = 11;
    output = 12}; NodeProto {input = 1; output = 2; op_type = 4}."""
    node = _field(1, b"A") + _field(1, b"B") + _field(2, b"Y") + _field(4, b"MatMul")
    graph = (
        _field(1, node)
        + _field(2, b"colabenv_smoke")
        + _field(11, _tensor_info("A", size, size))
        + _field(11, _tensor_info("B", size, size))
        + _field(12, _tensor_info("Y", size, size))
    )
    return _field(1, 7) + _field(7, graph) + _field(8, _field(1, b"") + _field(2, 13))


CUDA_PROVIDER = "CUDAExecutionProvider"


def _smoke_onnxruntime(result: dict[str, Any]) -> None:
    ort = _import(result, "onnxruntime")
    numpy = importlib.import_module("numpy")
    result.update(what="MatMul session", against="the exact product")
    available = [str(p) for p in ort.get_available_providers()]
    if CUDA_PROVIDER not in available:
        result["problem"] = (
            f"this onnxruntime has no {CUDA_PROVIDER} (it offers {', '.join(available) or 'none'}):"
            " the CPU-only onnxruntime package, or one installed over onnxruntime-gpu"
        )
        return
    a, b = matrices()
    session = ort.InferenceSession(matmul_model(len(a)), providers=[CUDA_PROVIDER, "CPUExecutionProvider"])
    used = [str(p) for p in session.get_providers()]
    result["providers"] = used
    if not used or used[0] != CUDA_PROVIDER:
        result["problem"] = (
            f"the session fell back to the CPU: it runs on {', '.join(used) or 'nothing'},"
            f" not {CUDA_PROVIDER}"
        )
        return
    result["device"] = str(ort.get_device())
    feeds = {"A": numpy.asarray(a, dtype=numpy.float32), "B": numpy.asarray(b, dtype=numpy.float32)}
    _record(result, session.run(None, feeds)[0].tolist(), reference_matmul(a, b), EXACT_TOLERANCE)


# ---------------------------------------------------------------------------------------------
# vLLM


VLLM_OPS = ("vllm._C_stable_libtorch", "vllm._C")
"""vLLM's compiled CUDA ops, as its CUDA platform loads them: ``_C_stable_libtorch`` in the
wheels of 0.26 to 0.33 as read (which ship no ``_C``), ``_C`` in those to 0.19.1 (0.19.1 has a
small ``_C_stable_libtorch`` beside it): each one the installed vLLM has is loaded."""


def _smoke_vllm(result: dict[str, Any]) -> None:
    _import(result, "vllm")
    present = [name for name in VLLM_OPS if importlib.util.find_spec(name) is not None]
    ops = present or [VLLM_OPS[-1]]  # none: importing _C says why
    result.update(what=f"compiled ops ({', '.join(ops)}) loaded", against=None)
    if _torch_gpu(result) is None:
        return
    for name in ops:
        importlib.import_module(name)
    result["loaded"] = True


# ---------------------------------------------------------------------------------------------
# torch-scatter


def _smoke_torch_scatter(result: dict[str, Any]) -> None:
    scatter, torch = _torch_test(result, "torch_scatter", "scatter sum", "the exact sums")
    if torch is None:
        return
    keys, values, sums = _groupby_input()
    source = [[value, -value] for value in values]
    out = scatter.scatter(
        torch.tensor(source, dtype=torch.float32, device="cuda:0"),
        torch.tensor(keys, dtype=torch.int64, device="cuda:0"),
        dim=0,
        reduce="sum",
    )
    reference = [[sums.get(k, 0.0), -sums.get(k, 0.0)] for k in range(GROUPS)]
    _record(result, out.cpu().tolist(), reference, GROUPBY_TOLERANCE)


# ---------------------------------------------------------------------------------------------
# pyg-lib

SEGMENTS = (0, 5, 12, 16)
"""pyg-lib's segment matmul: the 16 rows of A in three segments of unequal length, each
multiplied by its own matrix (a kernel that used one matrix for all, or misread the segment
bounds, is off by whole numbers)."""


def _segment_inputs() -> tuple[Matrix, list[Matrix], Matrix]:
    """A (16 x 16), one 16 x 16 matrix per segment, and the exact product of each segment of A
    with its matrix: small integers, exact in float32 and in TF32."""
    a, b = matrices(SEGMENTS[-1])
    others = [b, [list(row) for row in zip(*b)], [row[::-1] for row in b]]  # noqa: B905
    product: Matrix = []
    for index in range(len(SEGMENTS) - 1):  # itertools.pairwise is Python 3.10+
        product.extend(reference_matmul(a[SEGMENTS[index] : SEGMENTS[index + 1]], others[index]))
    return a, others, product


def _smoke_pyg_lib(result: dict[str, Any]) -> None:
    _, torch = _torch_test(result, "pyg_lib", "segment matmul", "the exact products per segment")
    if torch is None:
        return
    ops = importlib.import_module("pyg_lib.ops")
    a, others, product = _segment_inputs()
    out = ops.segment_matmul(
        torch.tensor(a, dtype=torch.float32, device="cuda:0"),
        torch.tensor(list(SEGMENTS), dtype=torch.int64),  # on the CPU, as pyg-lib asks
        torch.tensor(others, dtype=torch.float32, device="cuda:0"),
    )
    _record(result, out.cpu().tolist(), product, EXACT_TOLERANCE)


PACKAGE_SMOKE: dict[str, PackageSmoke] = {
    "xformers": _smoke_xformers,
    "flash-attn": _smoke_flash_attn,
    "flash-attn-4": _smoke_flash_attn_4,
    "bitsandbytes": _smoke_bitsandbytes,
    "cupy": _smoke_cupy,
    "cudf": _smoke_cudf,
    "cuml": _smoke_cuml,
    "onnxruntime-gpu": _smoke_onnxruntime,
    "vllm": _smoke_vllm,
    "torch-scatter": _smoke_torch_scatter,
    "pyg-lib": _smoke_pyg_lib,
}
"""Smoke name (the check is ``smoke:<name>``) -> the function that fills its result; which
distributions each one covers is the parent's table (``colabenv.verification.packages``)."""


def package_smoke(name: str, result_path: str) -> int:
    """Run ``name``'s smoke test; the result goes to ``result_path``."""
    result: dict[str, Any] = {
        "mode": "package",
        "package": name,
        "stage": "import",
        "version": None,
        "torch": None,
        "cuda": None,
        "device": None,
        "capability": None,
        "gpu_reason": None,
        "what": None,
        "against": None,
        "max_abs_diff": None,
        "tolerance": None,
        "non_finite": 0,
        "problem": None,
        "error": None,
        "notes": [],
    }
    return run_test(result, result_path, lambda: PACKAGE_SMOKE[name](result))
