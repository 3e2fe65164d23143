"""What every smoke child shares (stdlib only, Python 3.8+; see ``__main__.py``): the
matrices and the pure-Python reference they are checked against, one-line errors, the result
file written whole, and :func:`smoke`, which runs one framework's smoke test from a table
(:mod:`colabenv._target.smoke.gpu`, :mod:`colabenv._target.smoke.tpu`)."""

from __future__ import annotations

import importlib
import json
import math
import os
import re
import sys
import sysconfig
import time
import traceback
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import TypeAlias

SIZE = 48
EXIT_IMPORT = 3

Matrix: TypeAlias = "list[list[float]]"
SmokeTable: TypeAlias = "dict[str, Callable[[dict[str, Any], Matrix, Matrix], None]]"
"""Framework name -> the function that fills a smoke result with its matmuls."""


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
        len(r) != len(s)
        for r, s in zip(rows, reference)  # noqa: B905
    ):
        return math.inf, 0
    pairs = (abs(x - y) for r, s in zip(rows, reference) for x, y in zip(r, s))  # noqa: B905
    return max(pairs, default=0.0), 0


def max_abs_diff(left: Any, right: Matrix) -> float:
    """The largest absolute difference; NaN when a value is not finite."""
    diff, non_finite = compare(left, right)
    return math.nan if non_finite or diff is None else diff


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def emit(result: dict[str, Any], path: str) -> None:
    """The result, written whole to ``path`` (a new file, then renamed over the name)."""
    partial = f"{path}.{os.getpid()}.partial"
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump(result, handle, sort_keys=True)
    os.replace(partial, path)


def cuda_text(value: Any) -> str | None:
    """CUDA runtime versions come as ints (12040 -> 12.4) or strings ("12.4")."""
    if value is None:
        return None
    if isinstance(value, int):
        return f"{value // 1000}.{(value % 1000) // 10}"
    return str(value)


def cudnn_text(value: Any) -> str | None:
    """cuDNN 9 encodes 9.1.0 as 90100, cuDNN 8 encodes 8.9.2 as 8902."""
    if value is None:
        return None
    if isinstance(value, int):
        if value >= 10000:
            return f"{value // 10000}.{(value % 10000) // 100}.{value % 100}"
        return f"{value // 1000}.{(value % 1000) // 100}.{value % 100}"
    return str(value)


def device_result(index: int, name: str, capability: str | None) -> dict[str, Any]:
    return {
        "index": index,
        "name": name,
        "capability": capability,
        "max_abs_diff": None,
        "non_finite": 0,
        "error": None,
    }


def gpu_matmul(device: dict[str, Any], run: Callable[[], Any], reference: Matrix) -> None:
    try:
        device["max_abs_diff"], device["non_finite"] = compare(run(), reference)
    except Exception as exc:
        device["error"] = one_line(exc)
        traceback.print_exc()


def cpu_matmul(result: dict[str, Any], values: Any, reference: Matrix) -> None:
    result["cpu_max_abs_diff"], result["cpu_non_finite"] = compare(values, reference)


def jax_devices(result: dict[str, Any], a: Matrix, b: Matrix, kind: str) -> tuple[Any, Any, Matrix, Any]:
    """JAX imported, its version and its CPU matmul checked in ``result``: (jax, jax.numpy,
    the reference product the devices' matmuls are checked against, JAX's devices of
    ``kind``); the devices are None (``gpu_reason`` set) when JAX has none of that kind."""
    jax = importlib.import_module("jax")
    jnp = importlib.import_module("jax.numpy")
    result["version"] = str(jax.__version__)
    with jax.default_device(jax.devices("cpu")[0]):
        product = jnp.matmul(jnp.asarray(a, dtype=jnp.float32), jnp.asarray(b, dtype=jnp.float32))
        cpu: Matrix = product.tolist()
    reference = reference_matmul(a, b)
    cpu_matmul(result, cpu, reference)
    try:
        devices = jax.devices(kind)
    except RuntimeError as exc:
        result["gpu_reason"] = one_line(exc)
        devices = None
    return jax, jnp, reference, devices


def smoke(framework: str, result_path: str, table: SmokeTable, *, tpu: bool = False) -> int:
    """Import ``framework`` and run ``table``'s smoke test of it (``tpu``: the TPU table's,
    whose result also holds the HBM the devices report); the result goes to ``result_path``."""
    result: dict[str, Any] = {
        "mode": "smoke",
        "framework": framework,
        "stage": "import",
        "version": None,
        "cuda": None,
        "cudnn": None,
        "arch_list": None,
        "devices": [],
        "gpu_reason": None,
        "cpu_max_abs_diff": None,
        "cpu_non_finite": 0,
        "error": None,
        "notes": [],
        "hip": None,
        "free_threaded": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        "gil_enabled_by": [],
        "gil_before": None,
        "gil_after": None,
        "gil_forced_by": None,
    }
    if tpu:
        result.update(accelerator="tpu", hbm=[], hbm_reason=None)
    a, b = matrices()
    return run_test(
        result, result_path, lambda: _watching_the_gil(result, lambda: table[framework](result, a, b))
    )


GIL_ENABLED = re.compile(
    r"The global interpreter lock \(GIL\) has been enabled to load module '([^']{1,200})'"
)
"""CPython's warning when a free-threaded interpreter turns the GIL back on for an extension
module that has not declared it can run without it (Python/import.c, 3.13 and newer)."""


def gil_enabled() -> bool | None:
    """Whether the GIL is on now: ``sys._is_gil_enabled()`` (Python 3.13 and newer, the sys
    docs); None where the interpreter cannot say (older Pythons have no such function)."""
    probe = getattr(sys, "_is_gil_enabled", None)
    if probe is None:
        return None
    try:
        return bool(probe())
    except Exception:
        return None


def gil_forced_by() -> str | None:
    """What asked for the GIL when the interpreter started, as CPython read it: None when
    nothing did. ``sys.flags.gil`` (Python 3.13 and newer) is 1 only where the command line's
    ``-X gil=1`` or the environment's ``PYTHON_GIL=1`` (read unless ``-E``/``-I``), or an
    embedding program, asked; ``os.environ`` alone may hold a ``PYTHON_GIL`` CPython never read
    (set after startup, by a ``.pth`` file, or ignored under ``-E``), so it only names which one
    asked. Where ``sys.flags`` has no ``gil``, ``-X gil`` over ``PYTHON_GIL`` as CPython reads
    them."""
    option = getattr(sys, "_xoptions", {}).get("gil")
    flags = sys.flags
    if hasattr(flags, "gil"):
        if getattr(flags, "gil", None) != 1:
            return None
        if option is not None and str(option) == "1":
            return "-X gil=1 on the interpreter's command line"
        if not getattr(flags, "ignore_environment", 0) and os.environ.get("PYTHON_GIL") == "1":
            return "PYTHON_GIL=1 in the environment"
        return "the interpreter's configuration (sys.flags.gil is 1)"
    if option is not None:
        return "-X gil=1 on the interpreter's command line" if str(option) == "1" else None
    if os.environ.get("PYTHON_GIL") == "1":
        return "PYTHON_GIL=1 in the environment"
    return None


def _watching_the_gil(result: dict[str, Any], test: Callable[[], None]) -> None:
    """Run ``test``, noting in ``result`` whether the GIL was on before it (``gil_before``,
    and what asked for it: ``gil_forced_by``) and after it (``gil_after``), and in
    ``result["gil_enabled_by"]`` each module whose import turned it back on (CPython's warning;
    a free-threaded interpreter only; the warnings are shown as they would be). CPython warns
    only when an import changes the GIL: one already on (``PYTHON_GIL=1``, ``-X gil=1``, a
    module a ``.pth`` file imported at startup) gives no warning, hence the direct questions."""
    if not result["free_threaded"]:
        test()
        return
    result["gil_before"] = gil_enabled()
    result["gil_forced_by"] = gil_forced_by() if result["gil_before"] else None
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as recorded:
            warnings.simplefilter("always", RuntimeWarning)
            try:
                test()
            finally:
                caught.extend(recorded)
    finally:  # shown once recording has ended (showing them inside would record them again)
        result["gil_after"] = gil_enabled()
        for item in caught:
            found = GIL_ENABLED.search(str(item.message))
            if found and found.group(1) not in result["gil_enabled_by"]:
                result["gil_enabled_by"].append(found.group(1))
            warnings.showwarning(item.message, item.category, item.filename, item.lineno)


def run_test(result: dict[str, Any], result_path: str, test: Callable[[], None]) -> int:
    """Run ``test``, which fills ``result``, and write ``result`` to ``result_path``: at stage
    ``done`` with the seconds it took, or with the error it raised (exit 1, or
    :data:`EXIT_IMPORT` when it raised before the version was known)."""
    started = time.monotonic()
    try:
        test()
    except Exception as exc:
        result["error"] = one_line(exc)
        traceback.print_exc()
        emit(result, result_path)
        return EXIT_IMPORT if result["version"] is None else 1
    result["stage"] = "done"
    result["seconds"] = round(time.monotonic() - started, 3)
    emit(result, result_path)
    return 0
