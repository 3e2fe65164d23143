"""Stand-ins for the CUDA packages around the frameworks, for ``smoke:<package>``: tiny
pure-Python modules named xformers, flash_attn (and flash_attn.cute), bitsandbytes, cupy, cudf,
cuml, onnxruntime, vllm and torch_scatter, with the APIs the package smoke child
(``colabenv/_target/smoke/packages.py``) calls, and the small torch, numpy, pandas and
scikit-learn they stand on or are compared with. Each computes the right answer, a wrong one, or
misbehaves (an import error, a crash, a hang, no GPU, onnxruntime silently on the CPU), as fixed
when it is written.

:func:`package_files` gives a stand-in's files (relative path -> text), for a folder on
``PYTHONPATH`` or for :meth:`tests.support.standin_frameworks.StandinVenv.install_dist`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Acts(str, enum.Enum):
    RIGHT = "right"
    WRONG = "wrong"
    """A result off by more than the tolerance (a missing scale, a group miscounted)."""
    NAN = "nan"
    """One value of the result is NaN."""
    IMPORT_ERROR = "import_error"
    CRASH = "crash"
    """SIGSEGV while computing."""
    HANG = "hang"
    """Sleeps on import."""
    NO_GPU = "no_gpu"
    """torch (or CuPy) sees no GPU."""
    CPU_FALLBACK = "cpu_fallback"
    """onnxruntime offers CUDA but the session runs on CPUExecutionProvider, as when the CUDA
    provider's libraries fail to load."""
    NO_CUDA_PROVIDER = "no_cuda_provider"
    """onnxruntime without the CUDA provider: the CPU package."""
    SLOW = "slow"
    """Right, after computing for :data:`SLOW_S` seconds."""


SLOW_S = 4.0


@dataclass(frozen=True)
class PackageStandin:
    """One stand-in: the smoke name it answers to (``xformers``, ``onnxruntime-gpu``...), its
    distribution, version and behaviour."""

    smoke: str
    version: str
    acts: Acts = Acts.RIGHT

    @property
    def distribution(self) -> str:
        return {"cupy": "cupy-cuda12x", "cudf": "cudf-cu12", "cuml": "cuml-cu12"}.get(self.smoke, self.smoke)


VERSIONS = {
    "xformers": "0.0.29.post3",
    "flash-attn": "2.7.4.post1",
    "flash-attn-4": "4.0.0b4",
    "bitsandbytes": "0.45.5",
    "cupy": "13.4.1",
    "cudf": "25.4.0",
    "cuml": "26.8.0",
    "onnxruntime-gpu": "1.21.1",
    "vllm": "0.8.5",
    "torch-scatter": "2.1.2",
    "pyg-lib": "0.7.0",
}
"""Each stand-in's version, in the order verify reports the package smoke tests."""


_PRELUDE = """\
import os
import signal
import sys
import time

ACTS = {acts!r}
__version__ = {version!r}
SLOW_S = {slow!r}

if ACTS == "import_error":
    raise ImportError("libcudart.so.13: cannot open shared object file: No such file or directory")
if ACTS == "hang":
    sys.stderr.write("stand-in: hanging on import\\n")
    sys.stderr.flush()
    time.sleep(3600)


def _misbehave():
    if ACTS == "slow":
        time.sleep(SLOW_S)
    if ACTS == "crash":
        sys.stderr.write("stand-in: about to crash\\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
"""

_TORCH = """\
import struct
from types import SimpleNamespace

__version__ = "2.6.0+cu124"
version = SimpleNamespace(cuda="12.4")
GPU = {gpu!r}
float16, float32, int64, uint8 = "float16", "float32", "int64", "uint8"
GIB = 1024**3


def _map(data, f):
    return [_map(x, f) for x in data] if isinstance(data, list) else f(data)


def _half(x):
    return struct.unpack("e", struct.pack("e", x))[0]


class Tensor:
    def __init__(self, data, dtype, device):
        self.data, self.dtype, self.device = data, dtype, device

    def float(self):
        return Tensor(_map(self.data, float), float32, self.device)

    def cpu(self):
        return Tensor(self.data, self.dtype, "cpu")

    def tolist(self):
        return _map(self.data, lambda x: x)


def empty(size, dtype=None, device="cpu"):
    if device != "cpu" and size > 12 * GIB:
        raise RuntimeError("CUDA out of memory. Tried to allocate %d bytes" % size)
    return Tensor([], dtype, device)


def tensor(data, dtype=None, device="cpu"):
    if device != "cpu" and not GPU:
        raise RuntimeError("Found no NVIDIA driver on your system.")
    convert = int if dtype == int64 else (_half if dtype == float16 else float)
    return Tensor(_map(data, convert), dtype, device)


class _Cuda:
    @staticmethod
    def is_available():
        return GPU

    @staticmethod
    def device_count():
        return 1 if GPU else 0

    @staticmethod
    def get_device_name(index=0):
        return "Stand-in T4"

    @staticmethod
    def get_device_capability(index=0):
        return 7, 5

    @staticmethod
    def mem_get_info(index=0):
        return 15 * GIB, 16 * GIB

    @staticmethod
    def empty_cache():
        return None


cuda = _Cuda()
"""

_ATTENTION = """\
import math


def _attention(q, k, v, scaled=True):
    out = []
    for b in range(len(q)):
        rows = []
        for i in range(len(q[b])):
            heads = []
            for h in range(len(q[b][i])):
                size = len(q[b][i][h])
                scale = 1.0 / math.sqrt(size) if scaled else 1.0
                scores = [scale * sum(x * y for x, y in zip(q[b][i][h], k[b][j][h]))
                          for j in range(len(k[b]))]
                top = max(scores)
                weights = [math.exp(s - top) for s in scores]
                total = sum(weights)
                heads.append([sum(weights[j] * v[b][j][h][d] for j in range(len(v[b]))) / total
                              for d in range(size)])
            rows.append(heads)
        out.append(rows)
    return out


def _run(q, k, v):
    import torch

    _misbehave()
    data = _attention(q.data, k.data, v.data, scaled=ACTS != "wrong")
    if ACTS == "nan":
        data[0][0][0][0] = float("nan")
    return torch.tensor(data, dtype=torch.float16, device=q.device)
"""

_BITSANDBYTES = """\
def _quantize(rows):
    out = []
    for row in rows:
        top = max(abs(x) for x in row) or 1.0
        out.append(([round(x / top * 127) for x in row], top))
    return out


def matmul(A, B, out=None, state=None, threshold=0.0, bias=None):
    import torch

    _misbehave()
    qa, qb = _quantize(A.data), _quantize(B.data)
    scale = 127.0 * 127.0 * (127.0 if ACTS == "wrong" else 1.0)
    data = [[sum(x * y for x, y in zip(ra, rb)) * sa * sb / scale for rb, sb in qb] for ra, sa in qa]
    if ACTS == "nan":
        data[0][0] = float("nan")
    return torch.tensor(data, dtype=torch.float16, device=A.device)
"""

_LEAST_SQUARES = """\
def _solve(matrix, vector):
    size = len(vector)
    rows = [list(matrix[i]) + [vector[i]] for i in range(size)]
    for col in range(size):
        pivot = max(range(col, size), key=lambda r: abs(rows[r][col]))
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for r in range(size):
            if r != col:
                factor = rows[r][col] / rows[col][col]
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[col])]
    return [rows[i][size] / rows[i][i] for i in range(size)]


def _least_squares(design, targets):
    width = len(design[0])
    normal = [[sum(r[i] * r[j] for r in design) for j in range(width)] for i in range(width)]
    right = [sum(r[i] * t for r, t in zip(design, targets)) for i in range(width)]
    return _solve(normal, right)
"""
"""A least-squares fit by the normal equations and Gaussian elimination with partial pivoting:
the stand-in NumPy's ``linalg.lstsq`` and the stand-in cuML's fit do the same arithmetic."""

_NUMPY = (
    """\
float32, float64 = "float32", "float64"


class ndarray:
    def __init__(self, rows):  # two dimensions, or one (a vector)
        self.rows = [
            [float(x) for x in row] if isinstance(row, (list, tuple)) else float(row) for row in rows
        ]

    def __matmul__(self, other):
        columns = list(zip(*other.rows))
        return ndarray([[sum(x * y for x, y in zip(row, col)) for col in columns] for row in self.rows])

    def tolist(self):
        return [list(row) if isinstance(row, list) else row for row in self.rows]


def asarray(data, dtype=None):
    return ndarray(data.rows if isinstance(data, ndarray) else data)


"""
    + _LEAST_SQUARES
    + """


class _Linalg:
    @staticmethod
    def lstsq(a, b, rcond=None):
        return ndarray(_least_squares(a.tolist(), b.tolist())), None, len(a.rows[0]), None


linalg = _Linalg()
"""
)

_SKLEARN_LINEAR = """\
import numpy

WRONG = {wrong!r}


class LinearRegression:
    def __init__(self, fit_intercept=True):
        self.fit_intercept = fit_intercept

    def fit(self, X, y):
        design = numpy.asarray([row + [1.0] for row in X.tolist()])
        solution = [float(v) for v in numpy.linalg.lstsq(design, y, rcond=None)[0].tolist()]
        if WRONG:
            solution[2] += 0.5
        self.coef_ = numpy.asarray(solution[:-1])
        self.intercept_ = solution[-1]
        return self
"""

_FRAME = """\
class _GroupBy:
    def __init__(self, frame, key):
        self.frame, self.key = frame, key

    def __getitem__(self, column):
        return _Column(self.frame.columns[self.key], self.frame.columns[column])


class DataFrame:
    def __init__(self, columns):
        self.columns = {name: list(values) for name, values in columns.items()}

    def groupby(self, key):
        return _GroupBy(self, key)
"""
"""The DataFrame both frame stand-ins share (pandas' and cuDF's): columns by name, and a groupby
whose column sums with the module's own ``_Column``."""

_PANDAS = (
    """\
class Series:
    def __init__(self, values):
        self.values = dict(values)

    def to_dict(self):
        return dict(self.values)


class _Column:
    def __init__(self, keys, values):
        self.keys, self.values = keys, values

    def sum(self):
        sums = {}
        for key, value in zip(self.keys, self.values):
            sums[key] = sums.get(key, 0.0) + value
        return Series(sorted(sums.items()))


"""
    + _FRAME
)

_CUPY = """\
import numpy


class CUDARuntimeError(RuntimeError):
    pass


class _Runtime:
    @staticmethod
    def getDeviceCount():
        if ACTS == "no_gpu":
            raise CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
        return 1

    @staticmethod
    def getDeviceProperties(index):
        return {"name": b"Stand-in T4", "major": 7, "minor": 5}

    @staticmethod
    def runtimeGetVersion():
        return 12080


class Device:
    def __init__(self, index=0):
        self.compute_capability = "75"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Cuda:
    runtime = _Runtime()
    Device = Device


cuda = _Cuda()


class ndarray:
    def __init__(self, rows):
        self.rows = rows

    def __matmul__(self, other):
        _misbehave()
        product = (numpy.asarray(self.rows) @ numpy.asarray(other.rows)).tolist()
        if ACTS == "wrong":
            product[1][2] += 1.0
        if ACTS == "nan":
            product[0][0] = float("nan")
        return ndarray(product)


def asarray(data):
    return ndarray(data.tolist())


def asnumpy(array):
    return numpy.asarray(array.rows)
"""

_CUDF = (
    """\
import pandas


class Series:
    def __init__(self, values):
        self.values = values

    def to_pandas(self):
        return pandas.Series(dict(self.values))


class _Column:
    def __init__(self, keys, values):
        self.keys, self.values = keys, values

    def sum(self):
        _misbehave()
        sums = {}
        for key, value in zip(self.keys, self.values):
            sums[key] = sums.get(key, 0.0) + value
        if ACTS == "wrong":
            sums[3] += 1.0
        return Series(sorted(sums.items()))


"""
    + _FRAME
)

_CUML_LINEAR = (
    """\
import numpy

from cuml import ACTS, _misbehave


"""
    + _LEAST_SQUARES
    + """


class LinearRegression:
    def __init__(self, fit_intercept=True):
        self.fit_intercept = fit_intercept

    def fit(self, X, y):
        _misbehave()
        solution = _least_squares([row + [1.0] for row in X.tolist()], y.tolist())
        if ACTS == "wrong":
            solution[0] += 0.01
        if ACTS == "nan":
            solution[1] = float("nan")
        self.coef_ = numpy.asarray(solution[:-1])
        self.intercept_ = solution[-1]
        return self
"""
)

_FLASH_ATTN_4 = (
    _ATTENTION + "\n\ndef flash_attn_func(q, k, v, softmax_scale=None, causal=False, return_lse=False):\n"
    "    out = _run(q, k, v)\n"
    "    return out, None\n"
)
"""``flash_attn/cute`` alone, as flash-attn-4 installs it (its ``pyproject.toml`` packages only
``flash_attn.cute``): ``flash_attn`` is a namespace package unless flash-attn 2 is installed too."""

_ONNXRUNTIME = """\
import numpy

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"


def get_available_providers():
    return [CPU] if ACTS == "no_cuda_provider" else [CUDA, CPU]


def get_device():
    return "CPU" if ACTS == "no_cuda_provider" else "GPU"


class InferenceSession:
    def __init__(self, model, sess_options=None, providers=None):
        if not isinstance(model, bytes) or b"MatMul" not in model:
            raise RuntimeError("[ONNXRuntimeError] : 7 : INVALID_PROTOBUF : Load model failed")
        self._providers = [p for p in (providers or [CPU]) if p in get_available_providers()]
        if ACTS == "cpu_fallback":
            sys.stderr.write(
                "[E:onnxruntime:Default, provider_bridge_ort.cc:2036 TryGetProviderInfo_CUDA] "
                "Failed to load library libonnxruntime_providers_cuda.so with error: "
                "libcudnn.so.9: cannot open shared object file: No such file or directory\\n"
            )
            self._providers = [CPU]

    def get_providers(self):
        return list(self._providers)

    def run(self, output_names, feeds):
        _misbehave()
        product = (feeds["A"] @ feeds["B"]).tolist()
        if ACTS == "wrong":
            product[0][0] += 2.0
        if ACTS == "nan":
            product[0][0] = float("nan")
        return [numpy.asarray(product)]
"""

_VLLM_C = """\
from vllm import ACTS, _misbehave

_misbehave()
if ACTS == "wrong":
    raise ImportError(
        "vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"
    )
"""

_TORCH_SCATTER = """\
def scatter(src, index, dim=0, reduce="sum"):
    import torch

    _misbehave()
    width = len(src.data[0])
    out = [[0.0] * width for _ in range(max(index.data) + 1)]
    for row, key in zip(src.data, index.data):
        out[key] = [a + b for a, b in zip(out[key], row)]
    if ACTS == "wrong":
        out[0][0] += 1.0
    if ACTS == "nan":
        out[0][0] = float("nan")
    return torch.tensor(out, dtype=torch.float32, device=src.device)
"""


_PYG_LIB_OPS = """\
from pyg_lib import ACTS, _misbehave


def segment_matmul(inputs, ptr, other):
    import torch

    _misbehave()
    bounds = ptr.data
    out = []
    for index, (low, high) in enumerate(zip(bounds, bounds[1:])):
        columns = list(zip(*other.data[index]))
        for row in inputs.data[low:high]:
            out.append([sum(x * y for x, y in zip(row, col)) for col in columns])
    if ACTS == "wrong":
        out[0][0] += 1.0
    if ACTS == "nan":
        out[0][0] = float("nan")
    return torch.tensor(out, dtype=torch.float32, device=inputs.device)
"""


def torch_files(*, gpu: bool = True) -> dict[str, str]:
    """The small torch the attention, int8, vLLM and scatter stand-ins stand on."""
    return {"torch/__init__.py": _TORCH.format(gpu=gpu)}


def numpy_files() -> dict[str, str]:
    return {"numpy/__init__.py": _NUMPY}


def pandas_files() -> dict[str, str]:
    return {"pandas/__init__.py": _PANDAS}


def sklearn_files(*, wrong: bool = False) -> dict[str, str]:
    """A scikit-learn with ``linear_model.LinearRegression`` (the CPU fit cuML's smoke test
    compares with), fitting through ``numpy.linalg.lstsq``; ``wrong``: a coefficient off by 0.5."""
    return {
        "sklearn/__init__.py": "",
        "sklearn/linear_model.py": _SKLEARN_LINEAR.format(wrong=wrong),
    }


def package_files(standin: PackageStandin) -> dict[str, str]:
    """The stand-in's own files (not torch, numpy or pandas: :func:`needs`)."""
    prelude = _PRELUDE.format(acts=standin.acts.value, version=standin.version, slow=SLOW_S)
    if standin.smoke == "xformers":
        return {
            "xformers/__init__.py": prelude,
            "xformers/ops.py": "from xformers import ACTS, _misbehave\n"
            + _ATTENTION
            + "\n\ndef memory_efficient_attention(query, key, value, attn_bias=None, p=0.0, scale=None):\n"
            "    return _run(query, key, value)\n",
        }
    if standin.smoke == "flash-attn-4":
        return {"flash_attn/cute/__init__.py": prelude + _FLASH_ATTN_4}
    if standin.smoke == "cuml":
        return {"cuml/__init__.py": prelude, "cuml/linear_model.py": _CUML_LINEAR}
    if standin.smoke == "pyg-lib":
        return {"pyg_lib/__init__.py": prelude, "pyg_lib/ops.py": _PYG_LIB_OPS}
    if standin.smoke == "flash-attn":
        return {
            "flash_attn/__init__.py": prelude
            + _ATTENTION
            + "\n\ndef flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False):\n"
            "    return _run(q, k, v)\n"
        }
    body = {
        "bitsandbytes": ("bitsandbytes/__init__.py", _BITSANDBYTES),
        "cupy": ("cupy/__init__.py", _CUPY),
        "cudf": ("cudf/__init__.py", _CUDF),
        "onnxruntime-gpu": ("onnxruntime/__init__.py", _ONNXRUNTIME),
        "vllm": ("vllm/__init__.py", ""),
        "torch-scatter": ("torch_scatter/__init__.py", _TORCH_SCATTER),
    }
    path, text = body[standin.smoke]
    files = {path: prelude + "\n\n" + text}
    if standin.smoke == "vllm":
        files["vllm/_C.py"] = _VLLM_C
    return files


def needs(smoke: str) -> tuple[str, ...]:
    """What else a stand-in imports: ``torch``, ``numpy``, ``pandas`` (and, for cuML's CPU
    reference, ``sklearn``: without it the smoke test fits with NumPy)."""
    if smoke == "cuml":
        return ("numpy", "sklearn")
    if smoke in ("cupy", "onnxruntime-gpu"):
        return ("numpy",)
    if smoke == "cudf":
        return ("pandas",)
    return ("torch",)
