"""Stand-in jax and torch with torch_xla on a TPU, installed into a stand-in venv
(:func:`tests.support.standin_frameworks.make_venv`).

They implement what ``colabenv/_target/smoke/__main__.py``'s TPU smoke test uses: ``jax.devices("tpu")`` with
``device_kind`` and ``memory_stats()``, and torch_xla's ``xla_device()``, ``xla_device_hw()``
and ``get_memory_info()``; the matmul is done in Python. A behaviour fixed at install time
stands for a healthy TPU, no TPU, a wrong result, or HBM figures the framework does not give.
torch_xla answers "TPU" only under ``PJRT_DEVICE=TPU``, as the real one picks its device from it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from tests.support.standin_frameworks import GIB, StandinVenv


class TpuBehaviour(str, enum.Enum):
    HEALTHY = "healthy"
    NO_TPU = "no_tpu"
    """``jax.devices("tpu")`` raises; torch_xla's device is the CPU."""
    WRONG = "wrong"
    """One cell of every TPU matmul is off by one."""
    NO_HBM = "no_hbm"
    """``memory_stats()`` is None; torch_xla's memory info has no limit."""
    OLD_MEMORY_INFO = "old_memory_info"
    """torch_xla 2.1's ``get_memory_info``: ``kb_free`` and ``kb_total``."""


@dataclass(frozen=True)
class TpuStandin:
    behaviour: TpuBehaviour = TpuBehaviour.HEALTHY
    kind: str = "TPU v5 lite"
    devices: int = 1
    hbm_limit: int = 16 * GIB
    hbm_in_use: int = 1 * GIB
    claim: str | None = None
    """A file the stand-in locks while it holds the TPU (until its process ends), failing as
    libtpu does when another process holds it: two at once cannot both pass."""


_COMMON = """\
import fcntl
import os
import time

BEHAVIOUR = {behaviour!r}
KIND = {kind!r}
DEVICES = {devices!r}
HBM_LIMIT = {hbm_limit!r}
HBM_IN_USE = {hbm_in_use!r}
CLAIM = {claim!r}
_held = []


def _claim_tpu():
    if CLAIM is None or _held:
        return
    handle = os.open(CLAIM, os.O_CREAT | os.O_WRONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        raise RuntimeError("ABORTED: The TPU is already in use by another process") from None
    _held.append(handle)
    time.sleep(0.5)


def _matmul(left, right, on_tpu):
    columns = list(zip(*right))
    product = [[float(sum(x * y for x, y in zip(row, col))) for col in columns] for row in left]
    if on_tpu and BEHAVIOUR == "wrong":
        product[0][0] += 1.0
    return product
"""

_JAX = """\
import contextlib
import threading

from ._standin import BEHAVIOUR, DEVICES, HBM_IN_USE, HBM_LIMIT, KIND, _claim_tpu, _matmul

__version__ = {version!r}
_state = threading.local()


class Device:
    def __init__(self, platform, index):
        self.platform = platform
        self.id = index
        self.device_kind = KIND if platform == "tpu" else "cpu"

    def memory_stats(self):
        if self.platform != "tpu" or BEHAVIOUR == "no_hbm":
            return None
        return {{"bytes_limit": HBM_LIMIT, "bytes_in_use": HBM_IN_USE,
                 "peak_bytes_in_use": HBM_IN_USE}}


_CPU = [Device("cpu", 0)]
_TPU = [Device("tpu", i) for i in range(DEVICES)]


def devices(backend=None):
    if backend == "cpu":
        return list(_CPU)
    if backend in ("tpu", None) and BEHAVIOUR != "no_tpu":
        _claim_tpu()
        return list(_TPU)
    if backend is None:
        return list(_CPU)
    raise RuntimeError(
        "Unknown backend: '%s' requested, but no platforms that are instances of %s are"
        " present. Platforms present are: cpu" % (backend, backend)
    )


@contextlib.contextmanager
def default_device(device):
    stack = _state.__dict__.setdefault("stack", [])
    stack.append(device)
    try:
        yield device
    finally:
        stack.pop()


def _current():
    stack = getattr(_state, "stack", [])
    return stack[-1] if stack else devices()[0]


class Array:
    def __init__(self, rows, device):
        self.rows = rows
        self.device = device

    def block_until_ready(self):
        return self

    def tolist(self):
        return [list(row) for row in self.rows]


def _asarray(data, dtype=None):
    return Array([[float(x) for x in row] for row in data], _current())


def _matmul_arrays(left, right, precision=None):
    return Array(_matmul(left.rows, right.rows, left.device.platform == "tpu"), left.device)
"""

_JAX_NUMPY = """\
from jax import _asarray as asarray, _matmul_arrays as matmul

float32 = "float32"
"""

_TORCH = """\
__version__ = {version!r}
float32 = "float32"


class Tensor:
    def __init__(self, rows, device):
        self.rows = rows
        self.device = device

    def __matmul__(self, other):
        from torch._standin import _matmul

        if self.device != other.device:
            raise RuntimeError("Expected all tensors to be on the same device")
        return Tensor(_matmul(self.rows, other.rows, self.device != "cpu"), self.device)

    def cpu(self):
        return Tensor(self.rows, "cpu")

    def tolist(self):
        return [list(row) for row in self.rows]


def tensor(data, dtype=None, device="cpu"):
    return Tensor([[float(x) for x in row] for row in data], str(device))
"""

_TORCH_XLA = """\
__version__ = {version!r}
"""

_XLA_MODEL = """\
import os

from torch._standin import BEHAVIOUR, HBM_IN_USE, HBM_LIMIT, _claim_tpu


def xla_device(n=None):
    return "xla:0"


def xla_device_hw(device):
    if BEHAVIOUR == "no_tpu" or os.environ.get("PJRT_DEVICE") != "TPU":
        return "CPU"
    _claim_tpu()
    return "TPU"


def get_memory_info(device=None):
    if BEHAVIOUR == "no_hbm":
        return {{"bytes_used": HBM_IN_USE}}
    if BEHAVIOUR == "old_memory_info":
        return {{"kb_free": (HBM_LIMIT - HBM_IN_USE) // 1024, "kb_total": HBM_LIMIT // 1024}}
    return {{"bytes_used": HBM_IN_USE, "bytes_limit": HBM_LIMIT, "peak_bytes_used": HBM_IN_USE}}
"""


def _fields(standin: TpuStandin) -> dict[str, object]:
    return {
        "behaviour": standin.behaviour.value,
        "kind": standin.kind,
        "devices": standin.devices,
        "hbm_limit": standin.hbm_limit,
        "hbm_in_use": standin.hbm_in_use,
        "claim": standin.claim,
    }


def install_jax_tpu(
    venv: StandinVenv, standin: TpuStandin, *, version: str = "0.6.2", libtpu: str | None = "0.0.17.1"
) -> None:
    """jax and jaxlib of ``version``, and libtpu (None: without it, a CPU install)."""
    venv.install_dist(
        "jax",
        version,
        requires=(f"jaxlib=={version}",),
        top_level=["jax"],
        files={
            "jax/__init__.py": _JAX.format(version=version),
            "jax/numpy.py": _JAX_NUMPY,
            "jax/_standin.py": _COMMON.format(**_fields(standin)),
        },
    )
    venv.install_plain("jaxlib", version)
    if libtpu is not None:
        venv.install_plain("libtpu", libtpu)


def install_torch_xla(
    venv: StandinVenv,
    standin: TpuStandin,
    *,
    version: str = "2.9.0+cpu",
    torch_xla: str | None = "2.9.0",
    libtpu: str = "0.0.21",
) -> None:
    """torch of ``version`` and torch_xla with its libtpu (torch_xla None: torch alone)."""
    venv.install_dist(
        "torch",
        version,
        top_level=["torch"],
        files={
            "torch/__init__.py": _TORCH.format(version=version),
            "torch/_standin.py": _COMMON.format(**_fields(standin)),
        },
    )
    if torch_xla is None:
        return
    venv.install_dist(
        "torch-xla",
        torch_xla,
        requires=(f"libtpu=={libtpu}",),
        top_level=["torch_xla"],
        files={
            "torch_xla/__init__.py": _TORCH_XLA.format(version=torch_xla),
            "torch_xla/core/__init__.py": "",
            "torch_xla/core/xla_model.py": _XLA_MODEL.format(),
        },
    )
    venv.install_plain("libtpu", libtpu)
