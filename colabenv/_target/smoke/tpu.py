"""The TPU smoke tests (stdlib only, Python 3.8+; see ``__main__.py``): the matmul on
each TPU device the framework lists (JAX: ``jax.devices("tpu")``; torch: torch_xla's XLA
device) against the CPU result, and the HBM each one has, read in that same process: libtpu
opens the TPU for one process at a time."""

from __future__ import annotations

import importlib
from typing import Any

from base import (
    Matrix,
    SmokeTable,
    cpu_matmul,
    device_result,
    gpu_matmul,
    jax_devices,
    one_line,
    reference_matmul,
)


def _hbm_entry(index: int, name: str, limit: Any, in_use: Any) -> dict[str, Any]:
    def size(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    return {"index": index, "name": name, "limit": size(limit), "in_use": size(in_use)}


def _smoke_jax_tpu(result: dict[str, Any], a: Matrix, b: Matrix) -> None:
    jax, jnp, reference, tpus = jax_devices(result, a, b, "tpu")
    if tpus is None:
        result["hbm_reason"] = "jax lists no TPU device"
        return
    for index, tpu in enumerate(tpus):
        device = device_result(index, str(tpu.device_kind), None)

        def run(tpu: Any = tpu) -> Any:
            with jax.default_device(tpu):
                left = jnp.asarray(a, dtype=jnp.float32)
                right = jnp.asarray(b, dtype=jnp.float32)
                return jnp.matmul(left, right, precision="highest").block_until_ready().tolist()

        gpu_matmul(device, run, reference)
        result["devices"].append(device)
        try:
            stats = tpu.memory_stats() or {}
        except Exception as exc:
            result["hbm_reason"] = f"jax memory_stats() failed: {one_line(exc)}"
            continue
        if stats.get("bytes_limit") is None:
            result["hbm_reason"] = "jax reports no bytes_limit for its TPU devices"
            continue
        result["hbm"].append(
            _hbm_entry(index, str(tpu.device_kind), stats.get("bytes_limit"), stats.get("bytes_in_use", 0))
        )


def _smoke_torch_tpu(result: dict[str, Any], a: Matrix, b: Matrix) -> None:
    torch = importlib.import_module("torch")
    result["version"] = str(torch.__version__)
    cpu: Matrix = (torch.tensor(a, dtype=torch.float32) @ torch.tensor(b, dtype=torch.float32)).tolist()
    reference = reference_matmul(a, b)
    cpu_matmul(result, cpu, reference)
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
    device = device_result(0, name, None)

    def run() -> Any:
        left = torch.tensor(a, dtype=torch.float32, device=target)
        right = torch.tensor(b, dtype=torch.float32, device=target)
        return (left @ right).cpu().tolist()

    gpu_matmul(device, run, reference)
    result["devices"].append(device)
    try:
        info = dict(xm.get_memory_info(target))
    except Exception as exc:
        result["hbm_reason"] = f"torch_xla get_memory_info() failed: {one_line(exc)}"
        return
    if "bytes_limit" in info:
        result["hbm"].append(_hbm_entry(0, name, info.get("bytes_limit"), info.get("bytes_used")))
    elif "kb_total" in info and "kb_free" in info:
        total, free = info["kb_total"], info["kb_free"]
        if isinstance(total, int) and isinstance(free, int):
            result["hbm"].append(_hbm_entry(0, name, total * 1024, (total - free) * 1024))
    else:
        result["hbm_reason"] = "torch_xla reports no memory limit for its device"


SMOKE_TPU: SmokeTable = {
    "torch": _smoke_torch_tpu,
    "jax": _smoke_jax_tpu,
}
