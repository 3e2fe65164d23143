"""The GPU smoke tests (stdlib only, Python 3.8+; see ``__main__.py``): import the
framework, a small matmul on the CPU checked against pure Python, then the same on every GPU
it sees. The matrices hold small integers, so the product is exact in float32 and in TF32: any
difference means a wrong result, not rounding, and a NaN or infinity anywhere is counted and
reported, never compared."""

from __future__ import annotations

import importlib
import traceback
from typing import Any

from base import (
    Matrix,
    SmokeTable,
    cpu_matmul,
    cuda_text,
    cudnn_text,
    device_result,
    gpu_matmul,
    jax_devices,
    one_line,
    reference_matmul,
)

# ---------------------------------------------------------------------------------------------
# torch


def _smoke_torch(result: dict[str, Any], a: Matrix, b: Matrix) -> None:
    torch = importlib.import_module("torch")
    result["version"] = str(torch.__version__)
    result["cuda"] = cuda_text(getattr(torch.version, "cuda", None))
    hip = getattr(torch.version, "hip", None)
    result["hip"] = str(hip) if hip else None
    cpu: Matrix = (torch.tensor(a, dtype=torch.float32) @ torch.tensor(b, dtype=torch.float32)).tolist()
    reference = reference_matmul(a, b)
    cpu_matmul(result, cpu, reference)
    if not torch.cuda.is_available():
        result["gpu_reason"] = "torch.cuda.is_available() is False"
        if hip:  # ROCm's own reason, as a first use of the GPU meets it: printed for verify to read
            try:
                torch.cuda.init()
            except Exception:
                traceback.print_exc()
        return
    result["cudnn"] = cudnn_text(torch.backends.cudnn.version())
    result["arch_list"] = [str(x) for x in torch.cuda.get_arch_list()]
    for index in range(torch.cuda.device_count()):
        major, minor = torch.cuda.get_device_capability(index)
        device = device_result(index, str(torch.cuda.get_device_name(index)), f"{major}.{minor}")
        if hip:  # an AMD GPU's architecture: gcnArchName is "gfx942:sramecc+:xnack-"
            arch = getattr(torch.cuda.get_device_properties(index), "gcnArchName", None)
            device["gfx"] = str(arch).split(":")[0] if arch else None
        target = f"cuda:{index}"

        def run(target: str = target) -> Any:
            left = torch.tensor(a, dtype=torch.float32, device=target)
            right = torch.tensor(b, dtype=torch.float32, device=target)
            return (left @ right).cpu().tolist()

        gpu_matmul(device, run, reference)
        result["devices"].append(device)


# ---------------------------------------------------------------------------------------------
# jax


def _jax_cuda_versions(result: dict[str, Any]) -> None:
    try:
        lib = importlib.import_module("jax._src.lib")
        versions = getattr(lib, "cuda_versions", None)
        if versions is None:
            return
        result["cuda"] = cuda_text(versions.cuda_runtime_get_version())
        result["cudnn"] = cudnn_text(versions.cudnn_get_version())
    except Exception as exc:
        result["notes"].append(f"CUDA/cuDNN versions unknown: {one_line(exc)}")


def _jax_gpu_platform(device: Any) -> str | None:
    """``cuda`` or ``rocm``: the platform of a jax GPU device, by its ``platform`` where it says
    so, else by its name (``RocmDevice(id=0)`` on AMD GPUs, ``CudaDevice(id=0)`` on NVIDIA's)."""
    platform = str(getattr(device, "platform", ""))
    if platform in ("cuda", "rocm"):
        return platform
    shown = repr(device).lower()
    return next((name for name in ("rocm", "cuda") if shown.startswith(name)), None)


def _smoke_jax(result: dict[str, Any], a: Matrix, b: Matrix) -> None:
    jax, jnp, reference, gpus = jax_devices(result, a, b, "gpu")
    if gpus is None:
        return
    result["platform"] = _jax_gpu_platform(gpus[0]) if gpus else None
    if result["platform"] != "rocm":
        _jax_cuda_versions(result)
    for index, gpu in enumerate(gpus):
        capability = getattr(gpu, "compute_capability", None)
        shown = str(capability) if capability is not None else None
        gfx = shown.split(":")[0] if shown is not None and shown.startswith("gfx") else None
        device = device_result(index, str(gpu.device_kind), None if gfx else shown)
        if gfx:
            device["gfx"] = gfx

        def run(gpu: Any = gpu) -> Any:
            with jax.default_device(gpu):
                left = jnp.asarray(a, dtype=jnp.float32)
                right = jnp.asarray(b, dtype=jnp.float32)
                return jnp.matmul(left, right).block_until_ready().tolist()

        gpu_matmul(device, run, reference)
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
            result["notes"].append(f"memory growth not set: {one_line(exc)}")
    info = dict(tf.sysconfig.get_build_info())
    with tf.device("/CPU:0"):
        product = tf.matmul(tf.constant(a, dtype=tf.float32), tf.constant(b, dtype=tf.float32))
        cpu: Matrix = product.numpy().tolist()
    reference = reference_matmul(a, b)
    cpu_matmul(result, cpu, reference)
    if not gpus:
        cuda_build = info.get("is_cuda_build")
        result["gpu_reason"] = "tensorflow lists no GPU" + (
            " (a build without CUDA)" if cuda_build is False else ""
        )
        return
    result["cuda"] = cuda_text(info.get("cuda_version"))
    result["cudnn"] = cudnn_text(info.get("cudnn_version"))
    for index, gpu in enumerate(gpus):
        try:
            details = dict(tf.config.experimental.get_device_details(gpu))
        except Exception:
            details = {}
        cap = details.get("compute_capability")
        capability = f"{cap[0]}.{cap[1]}" if isinstance(cap, (tuple, list)) else None
        device = device_result(index, str(details.get("device_name", gpu.name)), capability)

        def run(index: int = index) -> Any:
            with tf.device(f"/GPU:{index}"):
                left = tf.constant(a, dtype=tf.float32)
                right = tf.constant(b, dtype=tf.float32)
                return tf.matmul(left, right).numpy().tolist()

        gpu_matmul(device, run, reference)
        result["devices"].append(device)


SMOKE: SmokeTable = {
    "torch": _smoke_torch,
    "jax": _smoke_jax,
    "tensorflow": _smoke_tensorflow,
}
