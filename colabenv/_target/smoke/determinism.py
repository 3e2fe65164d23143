"""The determinism child (stdlib only, Python 3.8+; see ``__main__.py``): the framework seeded
and switched to deterministic kernels with the calls ``colabenv.seed_everything(deterministic=True)``
makes (``seeds.py``), then one small computation with operations that are not deterministic on a
GPU without those switches (cuBLAS GEMMs, atomics in index_add_ and scatter-add), seeded and run
twice; the two results' digests are compared by the parent."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import struct
import traceback
from collections.abc import Callable
from typing import Any

from base import emit, one_line
from seeds import seed_jax, seed_tensorflow, seed_torch

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
    result: dict[str, Any] = {
        "mode": "determinism",
        "framework": framework,
        "version": None,
        "device": None,
        "digests": [],
        "error": None,
        "notes": [],
    }
    try:
        once = DETERMINISM[framework](result, seed)
        result["digests"] = [digest(once()), digest(once())]
    except Exception as exc:
        result["error"] = one_line(exc)
        traceback.print_exc()
        emit(result, result_path)
        return 1
    emit(result, result_path)
    return 0
