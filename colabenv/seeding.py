"""``colabenv.seed_everything()``: one call that seeds every random source a training run uses.

It seeds Python's :mod:`random`, NumPy, and each framework that is installed (found with
:func:`importlib.util.find_spec`, so a framework that is not installed is never imported): torch
(every GPU too, and with ``deterministic`` its deterministic algorithms and cuDNN flags),
TensorFlow (``tf.keras.utils.set_random_seed`` and op determinism), and JAX, which has no global
seed: the key it should start from is returned.

The seed and the wish for determinism come from the arguments, else from the profile's
``[reproducibility]`` table, which the bootstrap script's ``.pth`` hook puts into every
interpreter of the environment as :data:`SEED_VARIABLE` and :data:`DETERMINISTIC_VARIABLE`.

What must be in the environment before a framework initialises CUDA (cuBLAS's workspace, the
XLA and TensorFlow switches) is :data:`DETERMINISM_ENV`; the ``.pth`` hook sets it at interpreter
start. ``PYTHONHASHSEED`` is read only when an interpreter starts, so setting it from a running
one takes effect in the child processes it starts (DataLoader workers, subprocesses), never in
itself: :func:`seed_everything` sets it for those and says so in its notes.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import random
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import field
from typing import Any

from colabenv._model import model
from colabenv.errors import UsageError

SEED_VARIABLE = "COLABENV_SEED"
DETERMINISTIC_VARIABLE = "COLABENV_DETERMINISTIC"
MAX_SEED = 2**32 - 1

DETERMINISM_ENV: tuple[tuple[str, str], ...] = (
    ("CUBLAS_WORKSPACE_CONFIG", ":4096:8"),
    ("TF_DETERMINISTIC_OPS", "1"),
    ("TF_CUDNN_DETERMINISTIC", "1"),
)
"""Read by cuBLAS (CUDA >= 10.2 needs a fixed workspace for deterministic GEMMs: cuBLAS docs,
"Results reproducibility") and by TensorFlow when it initialises the GPU."""

XLA_DETERMINISM_FLAG = "--xla_gpu_deterministic_ops=true"
"""XLA's switch to deterministic GPU kernels, read from ``XLA_FLAGS`` when JAX initialises its
backend; a superset of ``--xla_gpu_exclude_nondeterministic_ops`` (openxla/xla pull 12520)."""


@model
class Seeded:
    """What :func:`seed_everything` did: the seed, which sources it seeded, and the JAX key (an
    array, derived from the seed: not compared or hashed)."""

    seed: int
    deterministic: bool
    seeded: tuple[str, ...]
    notes: tuple[str, ...]
    jax_key: Any = field(default=None, compare=False)


def determinism_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables to set for deterministic GPU work, ``XLA_FLAGS`` extended, not replaced."""
    wanted = dict(DETERMINISM_ENV)
    flags = environ.get("XLA_FLAGS", "").split()
    if not any(flag.startswith("--xla_gpu_deterministic_ops") for flag in flags):
        flags.append(XLA_DETERMINISM_FLAG)
    wanted["XLA_FLAGS"] = " ".join(flags)
    return wanted


def _seed_from(value: object, origin: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise UsageError(f"{origin}: expected a whole number from 0 to {MAX_SEED}")
    text = str(value).strip()
    if not text.isascii() or not text.isdigit() or len(text) > 10 or int(text) > MAX_SEED:
        raise UsageError(f"{origin}: {text[:20]!r} is not a whole number from 0 to {MAX_SEED}")
    return int(text)


def _flag_from(text: str, origin: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes"):
        return True
    if lowered in ("", "0", "false", "no"):
        return False
    raise UsageError(f"{origin}: {text[:20]!r} is not true or false")


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _seed_numpy(np: Any, seed: int) -> None:
    np.random.seed(seed)


def _seed_torch(torch: Any, seed: int, deterministic: bool, notes: list[str]) -> None:
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


def _seed_tensorflow(tf: Any, seed: int, deterministic: bool, notes: list[str]) -> None:
    tf.keras.utils.set_random_seed(seed)
    if deterministic:
        tf.config.experimental.enable_op_determinism()
        notes.append("tensorflow: op determinism on")


def _seed_jax(jax: Any, seed: int) -> Any:
    return jax.random.PRNGKey(seed)


def seed_everything(
    seed: int | None = None,
    *,
    deterministic: bool | None = None,
    environ: MutableMapping[str, str] | None = None,
    importer: Callable[[str], Any] = importlib.import_module,
    is_installed: Callable[[str], bool] = _installed,
) -> Seeded:
    """Seed random, NumPy and every installed framework; return what was done and JAX's key.

    ``seed`` defaults to the profile's (``COLABENV_SEED``), else 0; ``deterministic`` to the
    profile's (``COLABENV_DETERMINISTIC``), else False. ``environ``, ``importer`` and
    ``is_installed`` are the process's own unless a caller (a test) hands in others.
    """
    env = os.environ if environ is None else environ
    if seed is None:
        raw = env.get(SEED_VARIABLE, "").strip()
        seed = _seed_from(raw, SEED_VARIABLE) if raw else 0
    else:
        seed = _seed_from(seed, "seed_everything(seed=...)")
    if deterministic is None:
        deterministic = _flag_from(env.get(DETERMINISTIC_VARIABLE, ""), DETERMINISTIC_VARIABLE)
    notes: list[str] = []
    seeded = ["random"]
    random.seed(seed)
    env["PYTHONHASHSEED"] = str(seed)
    notes.append("PYTHONHASHSEED set for child processes; this interpreter's hashing is fixed "
                 "when it starts")
    if deterministic:
        missing = {k: v for k, v in determinism_environment(env).items() if env.get(k) != v}
        if missing:
            notes.append("set before any framework initialises CUDA: " + ", ".join(sorted(missing))
                         + " (the profile's .pth hook sets them at interpreter start)")
            env.update(missing)
    jax_key = None
    for name in ("numpy", "torch", "tensorflow", "jax"):
        if not is_installed(name):
            continue
        module = importer(name)
        if name == "numpy":
            _seed_numpy(module, seed)
        elif name == "torch":
            _seed_torch(module, seed, deterministic, notes)
        elif name == "tensorflow":
            _seed_tensorflow(module, seed, deterministic, notes)
        else:
            jax_key = _seed_jax(module, seed)
            notes.append("jax: no global seed; start from the returned jax_key")
        seeded.append(name)
    return Seeded(seed, deterministic, tuple(seeded), tuple(notes), jax_key)
