"""The child side of ``colabenv verify``: one framework per process, its result in a file.

Run by its path, in the interpreter being verified, which need not have colabenv installed::

    python /path/to/_smoke.py smoke FRAMEWORK --result FILE
    python /path/to/_smoke.py vram FRAMEWORK --go FILE --deadline S --search S --result FILE
    python /path/to/_smoke.py determinism FRAMEWORK --seed N --result FILE
    python /path/to/_smoke.py environ --result FILE NAME...

It imports only the standard library (and runs on Python 3.8 and newer) and the framework, so a
crash, hang or import error stays in this process. The result is a JSON object written to
``--result``, whatever the framework prints; stdout and stderr are left for the parent to quote.

No process it starts outlives it: on Linux it makes itself a child subreaper, does the work in
a forked child, and when that child ends (or the parent sends SIGTERM at the timeout) stops and
kills every process left below it, however it was detached (``setsid``, a double fork).

Smoke: import, a small matmul on the CPU checked against pure Python, then on every GPU the
framework sees, checked against the same reference. The matrices hold small integers, so the
product is exact in float32 and in TF32: any difference means a wrong result, not rounding, and
a NaN or infinity anywhere is counted and reported, never compared.

TPU smoke (``smoke-tpu``): the same on the TPU devices (JAX: ``jax.devices("tpu")``; torch:
torch_xla's XLA device), and the HBM each one has, read in that same process: libtpu opens the
TPU for one process at a time.

VRAM probe: free and total memory per GPU, then the largest single block that can be allocated,
by a bounded binary search. It waits for the parent to touch ``--go`` (the smoke tests are done,
so the probe cannot starve them), and gives up at ``--deadline`` seconds after its start.

Determinism: the framework seeded and switched to deterministic kernels with the calls
``colabenv.seed_everything(deterministic=True)`` makes (:func:`seed_torch` and its siblings,
written here once), then one small computation with operations that are not deterministic on a
GPU without those switches (cuBLAS GEMMs, atomics in index_add_ and scatter-add), seeded and run
twice; the two results' digests are compared by the parent. Environ: the values of the named
variables in a fresh interpreter of the verified environment, after its ``.pth`` hooks ran.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import math
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import TypeAlias

SIZE = 48
EXIT_IMPORT = 3
EXIT_TERMINATED = 143
EXIT_DEADLINE = 124
PR_SET_CHILD_SUBREAPER = 36
REAP_SECONDS = 5.0
MiB = 1024 * 1024
PROBE_STEP = 64 * MiB
PROBE_MAX_TRIES = 24

Matrix: TypeAlias = "list[list[float]]"


def matrices(size: int = SIZE) -> tuple[Matrix, Matrix]:
    a = [[float((i * 7 + j * 3) % 9 - 4) for j in range(size)] for i in range(size)]
    b = [[float((i * 5 + j * 2) % 7 - 3) for j in range(size)] for i in range(size)]
    return a, b


def reference_matmul(a: Matrix, b: Matrix) -> Matrix:
    columns = list(zip(*b))  # noqa: B905 (runs on Python 3.8)
    return [[sum(x * y for x, y in zip(row, col)) for col in columns] for row in a]  # noqa: B905


def compare(values: Any, reference: Matrix) -> tuple[float | None, int]:
    """(largest absolute difference, count of non-finite values) of ``values`` against
    ``reference``; the difference is None when a value is not finite (a NaN compares as
    nothing, so it would hide in a maximum) and infinity when the shapes differ."""
    rows = [[float(v) for v in row] for row in values]
    non_finite = sum(1 for row in rows for v in row if not math.isfinite(v))
    if non_finite:
        return None, non_finite
    if len(rows) != len(reference) or any(
        len(r) != len(s) for r, s in zip(rows, reference)  # noqa: B905
    ):
        return math.inf, 0
    pairs = (abs(x - y) for r, s in zip(rows, reference) for x, y in zip(r, s))  # noqa: B905
    return max(pairs, default=0.0), 0


def max_abs_diff(left: Any, right: Matrix) -> float:
    """The largest absolute difference; NaN when a value is not finite."""
    diff, non_finite = compare(left, right)
    return math.nan if non_finite or diff is None else diff


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _emit(result: dict[str, Any], path: str) -> None:
    """The result, written whole to ``path`` (a new file, then renamed over the name)."""
    partial = f"{path}.{os.getpid()}.partial"
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump(result, handle, sort_keys=True)
    os.replace(partial, path)


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
            "non_finite": 0, "error": None}


def _gpu_matmul(device: dict[str, Any], run: Callable[[], Any], reference: Matrix) -> None:
    try:
        device["max_abs_diff"], device["non_finite"] = compare(run(), reference)
    except Exception as exc:
        device["error"] = _one_line(exc)
        traceback.print_exc()


def _cpu_matmul(result: dict[str, Any], values: Any, reference: Matrix) -> None:
    result["cpu_max_abs_diff"], result["cpu_non_finite"] = compare(values, reference)


# ---------------------------------------------------------------------------------------------
# torch


def _smoke_torch(result: dict[str, Any], a: Matrix, b: Matrix) -> None:
    torch = importlib.import_module("torch")
    result["version"] = str(torch.__version__)
    result["cuda"] = _cuda_text(getattr(torch.version, "cuda", None))
    cpu: Matrix = (
        torch.tensor(a, dtype=torch.float32) @ torch.tensor(b, dtype=torch.float32)
    ).tolist()
    reference = reference_matmul(a, b)
    _cpu_matmul(result, cpu, reference)
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

        _gpu_matmul(device, run, reference)
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
    reference = reference_matmul(a, b)
    _cpu_matmul(result, cpu, reference)
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

        _gpu_matmul(device, run, reference)
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
    reference = reference_matmul(a, b)
    _cpu_matmul(result, cpu, reference)
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

        _gpu_matmul(device, run, reference)
        result["devices"].append(device)


SMOKE: dict[str, Callable[[dict[str, Any], Matrix, Matrix], None]] = {
    "torch": _smoke_torch,
    "jax": _smoke_jax,
    "tensorflow": _smoke_tensorflow,
}


# ---------------------------------------------------------------------------------------------
# TPU: the same matmul on each TPU device the framework lists, and the HBM it reports


def _hbm_entry(index: int, name: str, limit: Any, in_use: Any) -> dict[str, Any]:
    def size(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
            else None

    return {"index": index, "name": name, "limit": size(limit), "in_use": size(in_use)}


def _smoke_jax_tpu(result: dict[str, Any], a: Matrix, b: Matrix) -> None:
    jax = importlib.import_module("jax")
    jnp = importlib.import_module("jax.numpy")
    result["version"] = str(jax.__version__)
    with jax.default_device(jax.devices("cpu")[0]):
        cpu: Matrix = jnp.matmul(jnp.asarray(a, dtype=jnp.float32),
                                 jnp.asarray(b, dtype=jnp.float32)).tolist()
    reference = reference_matmul(a, b)
    _cpu_matmul(result, cpu, reference)
    try:
        tpus = jax.devices("tpu")
    except RuntimeError as exc:
        result["gpu_reason"] = _one_line(exc)
        result["hbm_reason"] = "jax lists no TPU device"
        return
    for index, tpu in enumerate(tpus):
        device = _device_result(index, str(tpu.device_kind), None)

        def run(tpu: Any = tpu) -> Any:
            with jax.default_device(tpu):
                left = jnp.asarray(a, dtype=jnp.float32)
                right = jnp.asarray(b, dtype=jnp.float32)
                return jnp.matmul(left, right, precision="highest").block_until_ready().tolist()

        _gpu_matmul(device, run, reference)
        result["devices"].append(device)
        try:
            stats = tpu.memory_stats() or {}
        except Exception as exc:
            result["hbm_reason"] = f"jax memory_stats() failed: {_one_line(exc)}"
            continue
        if stats.get("bytes_limit") is None:
            result["hbm_reason"] = "jax reports no bytes_limit for its TPU devices"
            continue
        result["hbm"].append(_hbm_entry(index, str(tpu.device_kind), stats.get("bytes_limit"),
                                        stats.get("bytes_in_use", 0)))


def _smoke_torch_tpu(result: dict[str, Any], a: Matrix, b: Matrix) -> None:
    torch = importlib.import_module("torch")
    result["version"] = str(torch.__version__)
    cpu: Matrix = (
        torch.tensor(a, dtype=torch.float32) @ torch.tensor(b, dtype=torch.float32)
    ).tolist()
    reference = reference_matmul(a, b)
    _cpu_matmul(result, cpu, reference)
    xla = importlib.import_module("torch_xla")
    xm = importlib.import_module("torch_xla.core.xla_model")
    result["notes"].append(f"torch_xla {getattr(xla, '__version__', '?')}")
    target = xm.xla_device()
    kind = str(xm.xla_device_hw(target))
    if kind != "TPU":
        result["gpu_reason"] = f"torch_xla's device {target} is a {kind}, not a TPU"
        result["hbm_reason"] = "torch_xla has no TPU device"
        return
    name = f"TPU ({target})"
    device = _device_result(0, name, None)

    def run() -> Any:
        left = torch.tensor(a, dtype=torch.float32, device=target)
        right = torch.tensor(b, dtype=torch.float32, device=target)
        return (left @ right).cpu().tolist()

    _gpu_matmul(device, run, reference)
    result["devices"].append(device)
    try:
        info = dict(xm.get_memory_info(target))
    except Exception as exc:
        result["hbm_reason"] = f"torch_xla get_memory_info() failed: {_one_line(exc)}"
        return
    if "bytes_limit" in info:
        result["hbm"].append(_hbm_entry(0, name, info.get("bytes_limit"), info.get("bytes_used")))
    elif "kb_total" in info and "kb_free" in info:
        total, free = info["kb_total"], info["kb_free"]
        if isinstance(total, int) and isinstance(free, int):
            result["hbm"].append(_hbm_entry(0, name, total * 1024, (total - free) * 1024))
    else:
        result["hbm_reason"] = "torch_xla reports no memory limit for its device"


SMOKE_TPU: dict[str, Callable[[dict[str, Any], Matrix, Matrix], None]] = {
    "torch": _smoke_torch_tpu,
    "jax": _smoke_jax_tpu,
}


def smoke(framework: str, result_path: str,
          table: dict[str, Callable[[dict[str, Any], Matrix, Matrix], None]] | None = None
          ) -> int:
    result: dict[str, Any] = {"mode": "smoke", "framework": framework, "stage": "import",
                              "version": None, "cuda": None, "cudnn": None, "arch_list": None,
                              "devices": [], "gpu_reason": None, "cpu_max_abs_diff": None,
                              "cpu_non_finite": 0, "error": None, "notes": []}
    if table is SMOKE_TPU:
        result.update(accelerator="tpu", hbm=[], hbm_reason=None)
    a, b = matrices()
    started = time.monotonic()
    try:
        (table or SMOKE)[framework](result, a, b)
    except Exception as exc:
        result["error"] = _one_line(exc)
        traceback.print_exc()
        _emit(result, result_path)
        return EXIT_IMPORT if result["version"] is None else 1
    result["stage"] = "done"
    result["seconds"] = round(time.monotonic() - started, 3)
    _emit(result, result_path)
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


def vram(framework: str, go_file: str, deadline_s: float, search_s: float, result_path: str
         ) -> int:
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
        _emit(result, result_path)
        return 1
    watchdog.cancel()
    for index, (free, total) in enumerate(memory):
        result["gpus"].append({"index": index, "free": free, "total": total, "largest": None,
                               "complete": None})
    while not os.path.exists(go_file):
        if time.monotonic() - started >= deadline_s:
            result["reason"] = "smoke tests still running at the deadline"
            _emit(result, result_path)
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
    _emit(result, result_path)
    return 0


# ---------------------------------------------------------------------------------------------
# Seeding: the calls colabenv.seed_everything() makes, and the determinism child makes the same


def seed_numpy(np: Any, seed: int) -> None:
    np.random.seed(seed)


def seed_torch(torch: Any, seed: int, deterministic: bool, notes: list[str]) -> None:
    torch.manual_seed(seed)
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and hasattr(cuda, "manual_seed_all"):
        cuda.manual_seed_all(seed)
    if deterministic:
        torch.use_deterministic_algorithms(True)
        cudnn = getattr(getattr(torch, "backends", None), "cudnn", None)
        if cudnn is not None:
            cudnn.deterministic = True
            cudnn.benchmark = False
        notes.append("torch: deterministic algorithms on, cuDNN benchmark off")


def seed_tensorflow(tf: Any, seed: int, deterministic: bool, notes: list[str]) -> None:
    tf.keras.utils.set_random_seed(seed)
    if deterministic:
        tf.config.experimental.enable_op_determinism()
        notes.append("tensorflow: op determinism on")


def seed_jax(jax: Any, seed: int) -> Any:
    return jax.random.PRNGKey(seed)


# ---------------------------------------------------------------------------------------------
# Determinism: one computation, seeded and run twice in this process, compared bit for bit

DETERMINISM_SIZE = 64


def _flatten(values: Any) -> list[float]:
    if isinstance(values, (list, tuple)):
        return [x for item in values for x in _flatten(item)]
    return [float(values)]


def digest(values: Any) -> str:
    """SHA-256 of the values' IEEE doubles (float32 results convert exactly): equal digests
    mean bit-identical results."""
    import hashlib
    import struct

    flat = _flatten(values)
    return hashlib.sha256(struct.pack(f"<{len(flat)}d", *flat)).hexdigest()


def _determinism_torch(result: dict[str, Any], seed: int) -> Callable[[], Any]:
    """Matmul (cuBLAS: refused under deterministic algorithms without CUBLAS_WORKSPACE_CONFIG)
    and index_add_ (atomics on CUDA unless deterministic) on the first GPU, else the CPU."""
    torch = importlib.import_module("torch")
    result["version"] = str(torch.__version__)
    seed_torch(torch, seed, True, result["notes"])
    on_gpu = bool(torch.cuda.is_available())
    target = "cuda:0" if on_gpu else "cpu"
    result["device"] = f"GPU0 {torch.cuda.get_device_name(0)}" if on_gpu else "CPU"
    size = DETERMINISM_SIZE

    def once() -> Any:
        torch.manual_seed(seed)
        left = torch.randn((size, size), device=target)
        right = torch.randn((size, size), device=target)
        rows = torch.randint(0, size, (size,), device=target)
        product = left @ right
        return torch.zeros((size, size), device=target).index_add_(0, rows, product).cpu().tolist()

    return once


def _determinism_tensorflow(result: dict[str, Any], seed: int) -> Callable[[], Any]:
    """Matmul and a reduction on the first GPU, else the CPU, under op determinism."""
    tf = importlib.import_module("tensorflow")
    result["version"] = str(tf.__version__)
    gpus = tf.config.list_physical_devices("GPU")
    for gpu in gpus:
        with contextlib.suppress(Exception):
            tf.config.experimental.set_memory_growth(gpu, True)
    seed_tensorflow(tf, seed, True, result["notes"])
    target = "/GPU:0" if gpus else "/CPU:0"
    result["device"] = "GPU0" if gpus else "CPU"
    size = DETERMINISM_SIZE

    def once() -> Any:
        tf.keras.utils.set_random_seed(seed)
        with tf.device(target):
            left = tf.random.normal((size, size))
            right = tf.random.normal((size, size))
            product = tf.matmul(left, right)
            return [product.numpy().tolist(), tf.reduce_sum(product, axis=0).numpy().tolist()]

    return once


def _determinism_jax(result: dict[str, Any], seed: int) -> Callable[[], Any]:
    """Matmul and a scatter-add (atomics on GPU unless XLA's deterministic ops flag is on) on
    the first GPU, else the CPU."""
    jax = importlib.import_module("jax")
    jnp = importlib.import_module("jax.numpy")
    result["version"] = str(jax.__version__)
    try:
        device = jax.devices("gpu")[0]
        result["device"] = f"GPU0 {device.device_kind}"
    except RuntimeError:
        device = jax.devices("cpu")[0]
        result["device"] = "CPU"
    size = DETERMINISM_SIZE

    def once() -> Any:
        with jax.default_device(device):
            key = seed_jax(jax, seed)
            first, second, third = jax.random.split(key, 3)
            left = jax.random.normal(first, (size, size))
            right = jax.random.normal(second, (size, size))
            rows = jax.random.randint(third, (size,), 0, size)
            product = jnp.matmul(left, right)
            total = jnp.zeros((size, size)).at[rows].add(product)
            return total.block_until_ready().tolist()

    return once


DETERMINISM: dict[str, Callable[[dict[str, Any], int], Callable[[], Any]]] = {
    "torch": _determinism_torch,
    "jax": _determinism_jax,
    "tensorflow": _determinism_tensorflow,
}


def determinism(framework: str, seed: int, result_path: str) -> int:
    """Seed ``framework`` as ``colabenv.seed_everything(deterministic=True)`` does, run one
    computation twice (re-seeded each time) and record both digests."""
    result: dict[str, Any] = {"mode": "determinism", "framework": framework, "version": None,
                              "device": None, "digests": [], "error": None, "notes": []}
    try:
        once = DETERMINISM[framework](result, seed)
        result["digests"] = [digest(once()), digest(once())]
    except Exception as exc:
        result["error"] = _one_line(exc)
        traceback.print_exc()
        _emit(result, result_path)
        return 1
    _emit(result, result_path)
    return 0


def environ(names: Sequence[str], result_path: str) -> int:
    """The values of ``names`` in this interpreter's environment, as its ``.pth`` hooks left it."""
    _emit({"mode": "environ", "environ": {name: os.environ.get(name) for name in names}},
          result_path)
    return 0


# ---------------------------------------------------------------------------------------------
# No process outlives this one


def _become_subreaper() -> bool:
    """Orphans below this process are given to it instead of to init (Linux 3.4 and newer)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def descendants(root: int, proc: str = "/proc") -> set[int]:
    """Every process below ``root``, found through the parent ids in ``/proc/PID/stat``."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir(proc)
    except OSError:
        return set()
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc, name, "stat"), encoding="ascii", errors="replace") as f:
                text = f.read()
            parent = int(text[text.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(name))
    found: set[int] = set()
    queue = [root]
    while queue:
        for child in children.get(queue.pop(), ()):
            if child not in found:
                found.add(child)
                queue.append(child)
    return found


def _signal_all(pids: set[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)


def kill_descendants() -> None:
    """Stop every process below this one until no new one appears (a stopped process cannot
    fork), kill them all, and reap what is handed to this subreaper."""
    me = os.getpid()
    stopped: set[int] = set()
    for _ in range(100):
        new = descendants(me) - stopped
        if not new:
            break
        _signal_all(new, signal.SIGSTOP)
        stopped |= new
    _signal_all(stopped, signal.SIGKILL)
    deadline = time.monotonic() + REAP_SECONDS
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.01)


def _terminated(signum: int, frame: object) -> None:
    kill_descendants()
    os._exit(EXIT_TERMINATED)


def reaped(work: Callable[[], int]) -> int:
    """``work()`` in a forked child, this process waiting as its subreaper; afterwards (or on
    SIGTERM, SIGINT, SIGHUP) every process left below is killed. The child's exit status is
    passed on, a signal that killed it by dying of the same signal."""
    if not _become_subreaper():
        return work()
    stops = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    for stop in stops:
        signal.signal(stop, _terminated)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        for stop in stops:
            signal.signal(stop, signal.SIG_DFL)
        code = 1
        try:
            code = work()
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    kill_descendants()
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except (ImportError, ValueError, OSError):
            pass
        os.kill(os.getpid(), signum)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1


USAGE = (
    "usage: python _smoke.py smoke torch|jax|tensorflow --result FILE\n"
    "       python _smoke.py smoke-tpu torch|jax --result FILE\n"
    "       python _smoke.py vram FRAMEWORK --go FILE --deadline S --search S --result FILE\n"
    "       python _smoke.py determinism torch|jax|tensorflow --seed N --result FILE\n"
    "       python _smoke.py environ --result FILE NAME...\n"
)


def main(argv: Sequence[str]) -> int:
    words = list(argv)
    options = dict(zip(words[2::2], words[3::2]))  # noqa: B905
    result = options.get("--result")
    if len(words) == 4 and words[0] == "smoke" and words[1] in SMOKE and result:
        return reaped(functools.partial(smoke, words[1], result))
    if len(words) == 4 and words[0] == "smoke-tpu" and words[1] in SMOKE_TPU and result:
        return reaped(functools.partial(smoke, words[1], result, SMOKE_TPU))
    if len(words) == 10 and words[0] == "vram" and set(options) == {
        "--go", "--deadline", "--search", "--result"
    }:
        try:
            deadline, search = float(options["--deadline"]), float(options["--search"])
        except ValueError:
            deadline = search = math.nan
        if math.isfinite(deadline) and math.isfinite(search) and result:
            return reaped(functools.partial(vram, words[1], options["--go"], deadline, search,
                                            result))
    checked = _checklist_mode(words)
    if checked is not None:
        return checked
    sys.stderr.write(USAGE)
    return 2


def _checklist_mode(words: list[str]) -> int | None:
    """The determinism child and the environment report; None for any other command line."""
    options = dict(zip(words[2::2], words[3::2]))  # noqa: B905
    if (len(words) == 6 and words[0] == "determinism" and words[1] in DETERMINISM
            and set(options) == {"--seed", "--result"} and options["--seed"].isdigit()):
        return reaped(functools.partial(determinism, words[1], int(options["--seed"]),
                                        options["--result"]))
    if len(words) >= 3 and words[0] == "environ" and words[1] == "--result":
        return environ(words[3:], words[2])
    return None


def _own_directory_off_the_path() -> None:
    """Run by its path, this file's folder (colabenv's package, holding a ``profile.py``) would
    come first on sys.path; the current directory takes its place, as with ``python -m``."""
    here = os.path.dirname(os.path.realpath(__file__))
    if sys.path and os.path.realpath(sys.path[0] or ".") == here:
        sys.path[0] = os.getcwd()


if __name__ == "__main__":
    _own_directory_off_the_path()
    sys.exit(main(sys.argv[1:]))
