"""The child side of ``colabenv verify``: one framework per process, one JSON line out.

Run as ``python -m colabenv._smoke smoke FRAMEWORK`` or
``python -m colabenv._smoke vram FRAMEWORK --go FILE --deadline S``. It imports only the
standard library and the framework, so a crash, hang or import error stays in this process.
The last stdout line starting with :data:`PREFIX` carries the result; everything else
(framework chatter, tracebacks on stderr) is left for the parent to quote.

Smoke: import, a small matmul on the CPU checked against pure Python, then on every GPU the
framework sees, compared with the CPU result. The matrices hold small integers, so the product is
exact in float32 and in TF32, and any difference means a wrong result, not rounding.

VRAM probe: free and total memory per GPU, then the largest single block that can be allocated,
by a bounded binary search. It waits for the parent to touch ``--go`` (the smoke tests are done,
so the probe cannot starve them), and gives up at ``--deadline`` seconds after its start.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

PREFIX = "COLABENV_SMOKE "
SIZE = 48
EXIT_IMPORT = 3
EXIT_DEADLINE = 124
MiB = 1024 * 1024
PROBE_STEP = 64 * MiB
PROBE_MAX_TRIES = 24

Matrix = list[list[float]]


def matrices(size: int = SIZE) -> tuple[Matrix, Matrix]:
    a = [[float((i * 7 + j * 3) % 9 - 4) for j in range(size)] for i in range(size)]
    b = [[float((i * 5 + j * 2) % 7 - 3) for j in range(size)] for i in range(size)]
    return a, b


def reference_matmul(a: Matrix, b: Matrix) -> Matrix:
    columns = list(zip(*b, strict=True))
    return [[sum(x * y for x, y in zip(row, col, strict=True)) for col in columns] for row in a]


def max_abs_diff(left: Any, right: Matrix) -> float:
    rows = [[float(v) for v in row] for row in left]
    if len(rows) != len(right) or any(len(r) != len(s) for r, s in zip(rows, right, strict=True)):
        return float("inf")
    return max((abs(x - y) for r, s in zip(rows, right, strict=True)
                for x, y in zip(r, s, strict=True)), default=0.0)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _emit(result: dict[str, Any]) -> None:
    sys.stdout.flush()
    sys.stdout.write(PREFIX + json.dumps(result, sort_keys=True) + "\n")
    sys.stdout.flush()


def _cuda_text(value: Any) -> str | None:
    """CUDA runtime versions come as ints (12040 -> 12.4) or strings ("12.4")."""
    if value is None:
        return None
    if isinstance(value, int):
        return f"{value // 1000}.{(value % 1000) // 10}"
    return str(value)


def _cudnn_text(value: Any) -> str | None:
    """cuDNN 9 encodes 9.1.0 as 90100, cuDNN 8 encodes 8.9.2 as 8902."""
    if value is None:
        return None
    if isinstance(value, int):
        if value >= 10000:
            return f"{value // 10000}.{(value % 10000) // 100}.{value % 100}"
        return f"{value // 1000}.{(value % 1000) // 100}.{value % 100}"
    return str(value)


def _device_result(index: int, name: str, capability: str | None) -> dict[str, Any]:
    return {"index": index, "name": name, "capability": capability, "max_abs_diff": None,
            "error": None}


def _gpu_matmul(device: dict[str, Any], run: Callable[[], Any], cpu: Matrix) -> None:
    try:
        device["max_abs_diff"] = max_abs_diff(run(), cpu)
    except Exception as exc:
        device["error"] = _one_line(exc)
        traceback.print_exc()


# ---------------------------------------------------------------------------------------------
# torch


def _smoke_torch(result: dict[str, Any], a: Matrix, b: Matrix) -> None:
    torch = importlib.import_module("torch")
    result["version"] = str(torch.__version__)
    result["cuda"] = _cuda_text(getattr(torch.version, "cuda", None))
    cpu: Matrix = (
        torch.tensor(a, dtype=torch.float32) @ torch.tensor(b, dtype=torch.float32)
    ).tolist()
    result["cpu_max_abs_diff"] = max_abs_diff(cpu, reference_matmul(a, b))
    if not torch.cuda.is_available():
        result["gpu_reason"] = "torch.cuda.is_available() is False"
        return
    result["cudnn"] = _cudnn_text(torch.backends.cudnn.version())
    result["arch_list"] = [str(x) for x in torch.cuda.get_arch_list()]
    for index in range(torch.cuda.device_count()):
        major, minor = torch.cuda.get_device_capability(index)
        device = _device_result(index, str(torch.cuda.get_device_name(index)), f"{major}.{minor}")
        target = f"cuda:{index}"

        def run(target: str = target) -> Any:
            left = torch.tensor(a, dtype=torch.float32, device=target)
            right = torch.tensor(b, dtype=torch.float32, device=target)
            return (left @ right).cpu().tolist()

        _gpu_matmul(device, run, cpu)
        result["devices"].append(device)


# ---------------------------------------------------------------------------------------------
# jax


def _jax_cuda_versions(result: dict[str, Any]) -> None:
    try:
        lib = importlib.import_module("jax._src.lib")
        versions = getattr(lib, "cuda_versions", None)
        if versions is None:
            return
        result["cuda"] = _cuda_text(versions.cuda_runtime_get_version())
        result["cudnn"] = _cudnn_text(versions.cudnn_get_version())
    except Exception as exc:
        result["notes"].append(f"CUDA/cuDNN versions unknown: {_one_line(exc)}")


def _smoke_jax(result: dict[str, Any], a: Matrix, b: Matrix) -> None:
    jax = importlib.import_module("jax")
    jnp = importlib.import_module("jax.numpy")
    result["version"] = str(jax.__version__)
    cpu_device = jax.devices("cpu")[0]
    with jax.default_device(cpu_device):
        product = jnp.matmul(jnp.asarray(a, dtype=jnp.float32), jnp.asarray(b, dtype=jnp.float32))
        cpu: Matrix = product.tolist()
    result["cpu_max_abs_diff"] = max_abs_diff(cpu, reference_matmul(a, b))
    try:
        gpus = jax.devices("gpu")
    except RuntimeError as exc:
        result["gpu_reason"] = _one_line(exc)
        return
    _jax_cuda_versions(result)
    for index, gpu in enumerate(gpus):
        capability = getattr(gpu, "compute_capability", None)
        device = _device_result(index, str(gpu.device_kind),
                                str(capability) if capability is not None else None)

        def run(gpu: Any = gpu) -> Any:
            with jax.default_device(gpu):
                left = jnp.asarray(a, dtype=jnp.float32)
                right = jnp.asarray(b, dtype=jnp.float32)
                return jnp.matmul(left, right).block_until_ready().tolist()

        _gpu_matmul(device, run, cpu)
        result["devices"].append(device)


# ---------------------------------------------------------------------------------------------
# tensorflow


def _smoke_tensorflow(result: dict[str, Any], a: Matrix, b: Matrix) -> None:
    tf = importlib.import_module("tensorflow")
    result["version"] = str(tf.__version__)
    gpus = tf.config.list_physical_devices("GPU")
    for gpu in gpus:
        try:
            tf.config.experimental.set_memory_growth(gpu, True)
        except Exception as exc:
            result["notes"].append(f"memory growth not set: {_one_line(exc)}")
    info = dict(tf.sysconfig.get_build_info())
    with tf.device("/CPU:0"):
        product = tf.matmul(tf.constant(a, dtype=tf.float32), tf.constant(b, dtype=tf.float32))
        cpu: Matrix = product.numpy().tolist()
    result["cpu_max_abs_diff"] = max_abs_diff(cpu, reference_matmul(a, b))
    if not gpus:
        cuda_build = info.get("is_cuda_build")
        result["gpu_reason"] = "tensorflow lists no GPU" + (
            " (a build without CUDA)" if cuda_build is False else ""
        )
        return
    result["cuda"] = _cuda_text(info.get("cuda_version"))
    result["cudnn"] = _cudnn_text(info.get("cudnn_version"))
    for index, gpu in enumerate(gpus):
        try:
            details = dict(tf.config.experimental.get_device_details(gpu))
        except Exception:
            details = {}
        cap = details.get("compute_capability")
        capability = f"{cap[0]}.{cap[1]}" if isinstance(cap, (tuple, list)) else None
        device = _device_result(index, str(details.get("device_name", gpu.name)), capability)

        def run(index: int = index) -> Any:
            with tf.device(f"/GPU:{index}"):
                left = tf.constant(a, dtype=tf.float32)
                right = tf.constant(b, dtype=tf.float32)
                return tf.matmul(left, right).numpy().tolist()

        _gpu_matmul(device, run, cpu)
        result["devices"].append(device)


SMOKE: dict[str, Callable[[dict[str, Any], Matrix, Matrix], None]] = {
    "torch": _smoke_torch,
    "jax": _smoke_jax,
    "tensorflow": _smoke_tensorflow,
}


def smoke(framework: str) -> int:
    result: dict[str, Any] = {"mode": "smoke", "framework": framework, "stage": "import",
                              "version": None, "cuda": None, "cudnn": None, "arch_list": None,
                              "devices": [], "gpu_reason": None, "cpu_max_abs_diff": None,
                              "error": None, "notes": []}
    a, b = matrices()
    started = time.monotonic()
    try:
        SMOKE[framework](result, a, b)
    except Exception as exc:
        result["error"] = _one_line(exc)
        traceback.print_exc()
        _emit(result)
        return EXIT_IMPORT if result["version"] is None else 1
    result["stage"] = "done"
    result["seconds"] = round(time.monotonic() - started, 3)
    _emit(result)
    return 0


# ---------------------------------------------------------------------------------------------
# VRAM probe


class _Allocator:
    """Free/total memory and one trial allocation per GPU, for the framework that is present."""

    def __init__(self, framework: str) -> None:
        self.framework = framework
        self.module: Any = importlib.import_module({"cupy": "cupy"}.get(framework, framework))
        self._jnp: Any = None
        self._devices: list[Any] = []
        if framework == "jax":
            self._jnp = importlib.import_module("jax.numpy")
            try:
                self._devices = list(self.module.devices("gpu"))
            except RuntimeError:
                self._devices = []

    def count(self) -> int:
        if self.framework == "torch":
            return int(self.module.cuda.device_count()) if self.module.cuda.is_available() else 0
        if self.framework == "cupy":
            return int(self.module.cuda.runtime.getDeviceCount())
        return len(self._devices)

    def memory(self, index: int) -> tuple[int | None, int | None]:
        if self.framework == "torch":
            free, total = self.module.cuda.mem_get_info(index)
            return int(free), int(total)
        if self.framework == "cupy":
            with self.module.cuda.Device(index):
                free, total = self.module.cuda.runtime.memGetInfo()
            return int(free), int(total)
        stats = self._devices[index].memory_stats() or {}
        limit, used = stats.get("bytes_limit"), stats.get("bytes_in_use", 0)
        if limit is None:
            return None, None
        return int(limit) - int(used), int(limit)

    def fits(self, index: int, size: int) -> bool:
        try:
            if self.framework == "torch":
                block = self.module.empty(size, dtype=self.module.uint8, device=f"cuda:{index}")
                del block
                self.module.cuda.empty_cache()
            elif self.framework == "cupy":
                with self.module.cuda.Device(index):
                    block = self.module.empty(size, dtype=self.module.uint8)
                    del block
                    self.module.get_default_memory_pool().free_all_blocks()
            else:
                with self.module.default_device(self._devices[index]):
                    block = self._jnp.zeros((size,), dtype=self._jnp.uint8)
                    block.block_until_ready()
                    block.delete()
        except Exception:
            return False
        return True


def largest_block(fits: Callable[[int], bool], upper: int, deadline: float) -> tuple[int, bool]:
    """The largest size in [0, upper] for which ``fits`` holds, to within PROBE_STEP.

    Returns (size, complete); ``complete`` is False when the deadline cut the search short, and
    the size is then a lower bound.
    """
    if upper <= 0:
        return 0, True
    if fits(upper):
        return upper, True
    low, high, tries = 0, upper, 1
    while high - low > PROBE_STEP and tries < PROBE_MAX_TRIES:
        if time.monotonic() >= deadline:
            return low, False
        middle = (low + high) // 2
        tries += 1
        if fits(middle):
            low = middle
        else:
            high = middle
    return low, True


def _watchdog(seconds: float, what: str) -> threading.Timer:
    """Exit this process if ``what`` takes longer than ``seconds`` (a hanging import)."""

    def expire() -> None:
        sys.stderr.write(f"colabenv vram probe: {what} did not finish within {seconds:g}s\n")
        sys.stderr.flush()
        os._exit(EXIT_DEADLINE)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer


def vram(framework: str, go_file: str, deadline_s: float, search_s: float) -> int:
    started = time.monotonic()
    result: dict[str, Any] = {"mode": "vram", "framework": framework, "gpus": [], "error": None,
                              "probed": False, "reason": None}
    watchdog = _watchdog(deadline_s, f"importing {framework}")
    try:
        allocator = _Allocator(framework)
        count = allocator.count()
        memory = [allocator.memory(i) for i in range(count)]
    except Exception as exc:
        watchdog.cancel()
        result["error"] = _one_line(exc)
        traceback.print_exc()
        _emit(result)
        return 1
    watchdog.cancel()
    for index, (free, total) in enumerate(memory):
        result["gpus"].append({"index": index, "free": free, "total": total, "largest": None,
                               "complete": None})
    while not os.path.exists(go_file):
        if time.monotonic() - started >= deadline_s:
            result["reason"] = "smoke tests still running at the deadline"
            _emit(result)
            return 0
        time.sleep(0.02)
    search_deadline = time.monotonic() + search_s
    for gpu in result["gpus"]:
        index = gpu["index"]
        free = allocator.memory(index)[0]
        gpu["free"] = free if free is not None else gpu["free"]
        upper = gpu["free"] if gpu["free"] is not None else gpu["total"]
        if upper is None:
            continue
        size, complete = largest_block(functools.partial(allocator.fits, index), upper,
                                       search_deadline)
        gpu["largest"], gpu["complete"] = size, complete
    result["probed"] = True
    _emit(result)
    return 0


def main(argv: Sequence[str]) -> int:
    if len(argv) >= 2 and argv[0] == "smoke" and argv[1] in SMOKE:
        return smoke(argv[1])
    if len(argv) == 8 and argv[0] == "vram" and argv[2] == "--go" and argv[4] == "--deadline" \
            and argv[6] == "--search":
        return vram(argv[1], argv[3], float(argv[5]), float(argv[7]))
    sys.stderr.write(
        "usage: python -m colabenv._smoke smoke torch|jax|tensorflow\n"
        "       python -m colabenv._smoke vram FRAMEWORK --go FILE --deadline S --search S\n"
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
