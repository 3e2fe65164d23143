"""``colabenv.seed_everything()``: one call that seeds every random source a training run uses,
and the facts of determinism that the bootstrap script's ``.pth`` hook and ``verify`` share.

It seeds Python's :mod:`random`, NumPy, and each framework that is installed (found with
:func:`importlib.util.find_spec`, so a framework that is not installed is never imported): torch
(every GPU too, and with ``deterministic`` its deterministic algorithms and cuDNN flags),
TensorFlow (``tf.keras.utils.set_random_seed`` and op determinism), and JAX, which has no global
seed: the key it should start from is returned. The calls each framework gets are written once,
in ``colabenv/_target/smoke/seeds.py`` (standard library only), because ``verify``'s determinism
child makes the same calls in an interpreter that may not have colabenv.

The seed and the wish for determinism come from the arguments, else from the profile's
``[reproducibility]`` table, which the bootstrap script's ``.pth`` hook puts into every
interpreter of the environment as :data:`SEED_VARIABLE` and :data:`DETERMINISTIC_VARIABLE`.

What must be in the environment before a framework initialises CUDA (cuBLAS's workspace, the
TensorFlow switches, XLA's flag) is :func:`hook_environment`; the ``.pth`` hook sets it when an
interpreter starts, before any framework is imported.

``PYTHONHASHSEED`` is read only when an interpreter starts, so setting it from a running one
(the hook, or :func:`seed_everything`) takes effect in the Python processes started from it
afterwards (DataLoader workers started with ``spawn``, ``subprocess``, ``!python train.py`` in a
notebook), never in the interpreter itself: its ``hash()`` of strings stays randomised for its
whole life. Workers started with ``fork`` inherit the parent's hashing as it is.

Light on purpose: :mod:`colabenv.script.render` reads the hook's variables from here, so nothing is
imported at module level that ``colabenv render`` does not already load.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import field
from typing import TYPE_CHECKING, Any

from colabenv._util.bounds import MAX_SEED
from colabenv.errors import UsageError
from colabenv.models.frozen import model

if TYPE_CHECKING:
    from colabenv.models import Reproducibility

SEED_VARIABLE = "COLABENV_SEED"
DETERMINISTIC_VARIABLE = "COLABENV_DETERMINISTIC"
HASH_SEED_VARIABLE = "PYTHONHASHSEED"

DETERMINISM_ENV: tuple[tuple[str, str], ...] = (
    ("CUBLAS_WORKSPACE_CONFIG", ":4096:8"),
    ("TF_DETERMINISTIC_OPS", "1"),
    ("TF_CUDNN_DETERMINISTIC", "1"),
)
"""Read by cuBLAS (CUDA >= 10.2 needs a fixed workspace for deterministic GEMMs: cuBLAS docs,
"Results reproducibility"; torch refuses a cuBLAS call under deterministic algorithms without
it) and by TensorFlow when it initialises the GPU."""

ALSO_DETERMINISTIC: Mapping[str, frozenset[str]] = {
    "CUBLAS_WORKSPACE_CONFIG": frozenset({":4096:8", ":16:8"}),
    "TF_DETERMINISTIC_OPS": frozenset({"1", "true"}),
    "TF_CUDNN_DETERMINISTIC": frozenset({"1", "true"}),
}
"""Values that are as deterministic as the ones set (``:16:8`` uses less memory, cuBLAS docs),
accepted where a profile's ``[env]`` chose them."""

XLA_FLAGS_VARIABLE = "XLA_FLAGS"
XLA_DETERMINISM_NAME = "--xla_gpu_deterministic_ops"
XLA_DETERMINISM_FLAG = f"{XLA_DETERMINISM_NAME}=true"
"""XLA's switch to deterministic GPU kernels, read from ``XLA_FLAGS`` when JAX (or TensorFlow's
XLA) initialises its backend; a superset of ``--xla_gpu_exclude_nondeterministic_ops`` (openxla/xla
pull 12520). Every JAX release in the catalog (0.4.26 to 0.12.0.1) knows it: ``xla_gpu_deterministic
_ops`` is defined in ``xla/debug_options_flags.cc`` from before 0.4.26 through the XLA commit
jax 0.11.1's build pins, and the flag's name is in ``libjax_common.so`` of the 0.12.0 and 0.12.0.1
wheels (read 2026-11-22). An unknown flag in ``XLA_FLAGS`` aborts XLA at start, so the name
matters."""

APPEND_PREFIX = "+"
"""In the hook's list of (name, value) pairs, ``+NAME`` means: put ``value`` (a ``--flag=value``
word) into the space-separated ``NAME``, replacing a word of the same flag, keeping the rest.
No ``[env]`` name can start with it (they are POSIX names)."""


@model
class Seeded:
    """What :func:`seed_everything` did: the seed, which sources it seeded, and the JAX key (an
    array, derived from the seed: not compared or hashed)."""

    seed: int
    deterministic: bool
    seeded: tuple[str, ...]
    notes: tuple[str, ...]
    jax_key: Any = field(default=None, compare=False)


def with_flag(flags: str, flag: str) -> str:
    """``flags`` (space-separated ``--name=value`` words) with ``flag`` last, replacing any word
    of the same ``--name``; the hook does the same in bytes."""
    name = flag.split("=", 1)[0]
    kept = [word for word in flags.split() if word.split("=", 1)[0] != name]
    return " ".join([*kept, flag])


def determinism_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables to set for deterministic GPU work, ``XLA_FLAGS`` extended, not replaced (a
    ``--xla_gpu_deterministic_ops=false`` there is turned to true)."""
    wanted = dict(DETERMINISM_ENV)
    wanted[XLA_FLAGS_VARIABLE] = with_flag(environ.get(XLA_FLAGS_VARIABLE, ""), XLA_DETERMINISM_FLAG)
    return wanted


def hook_environment(reproducibility: Reproducibility) -> tuple[tuple[str, str], ...]:
    """What the ``.pth`` hook sets for the profile's ``[reproducibility]``, as (name, value)
    pairs; a ``+NAME`` pair adds a flag to ``NAME`` (:data:`APPEND_PREFIX`)."""
    pairs: list[tuple[str, str]] = []
    if reproducibility.seed is not None:
        pairs.append((SEED_VARIABLE, str(reproducibility.seed)))
        pairs.append((HASH_SEED_VARIABLE, str(reproducibility.seed)))
    if reproducibility.deterministic:
        pairs.append((DETERMINISTIC_VARIABLE, "1"))
        pairs.extend(DETERMINISM_ENV)
        pairs.append((APPEND_PREFIX + XLA_FLAGS_VARIABLE, XLA_DETERMINISM_FLAG))
    return tuple(pairs)


def environment_problems(reproducibility: Reproducibility, environ: Mapping[str, str]) -> list[str]:
    """What of :func:`hook_environment` is not in effect in ``environ``, one phrase each."""
    problems = []
    for name, value in hook_environment(reproducibility):
        if name.startswith(APPEND_PREFIX):
            name = name[len(APPEND_PREFIX) :]
            flag_name = value.split("=", 1)[0]
            words = [w for w in environ.get(name, "").split() if w.split("=", 1)[0] == flag_name]
            if not words:
                problems.append(f"{name} lacks {value}")
            elif words[-1] != value:
                problems.append(f"{name} has {words[-1]}, not {value}")
            continue
        actual = environ.get(name)
        if actual is None:
            problems.append(f"{name} is not set (expected {value})")
        elif actual != value and actual not in ALSO_DETERMINISTIC.get(name, frozenset()):
            problems.append(f"{name}={actual!r}, expected {value!r}")
    return problems


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
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _import(name: str) -> Any:
    import importlib

    return importlib.import_module(name)


def seed_everything(
    seed: int | None = None,
    *,
    deterministic: bool | None = None,
    environ: MutableMapping[str, str] | None = None,
    importer: Callable[[str], Any] = _import,
    is_installed: Callable[[str], bool] = _installed,
) -> Seeded:
    """Seed random, NumPy and every installed framework; return what was done and JAX's key.

    ``seed`` defaults to the profile's (``COLABENV_SEED``), else 0; ``deterministic`` to the
    profile's (``COLABENV_DETERMINISTIC``), else False. ``environ``, ``importer`` and
    ``is_installed`` are the process's own unless a caller (a test) hands in others.
    """
    import random

    from colabenv._target.smoke import seeds as calls

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
    env[HASH_SEED_VARIABLE] = str(seed)
    notes.append(
        "PYTHONHASHSEED set for the Python processes started from here; this "
        "interpreter's hashing was fixed when it started"
    )
    if deterministic:
        missing = {
            k: v
            for k, v in determinism_environment(env).items()
            if env.get(k) != v and env.get(k) not in ALSO_DETERMINISTIC.get(k, ())
        }
        if missing:
            notes.append(
                "set before any framework initialises CUDA: "
                + ", ".join(sorted(missing))
                + " (the profile's .pth hook sets them at interpreter start)"
            )
            env.update(missing)
    jax_key = None
    for name in ("numpy", "torch", "tensorflow", "jax"):
        if not is_installed(name):
            continue
        module = importer(name)
        if name == "numpy":
            calls.seed_numpy(module, seed)
        elif name == "torch":
            calls.seed_torch(module, seed, deterministic, notes)
        elif name == "tensorflow":
            calls.seed_tensorflow(module, seed, deterministic, notes)
        else:
            jax_key = calls.seed_jax(module, seed)
            notes.append("jax: no global seed; start from the returned jax_key")
        seeded.append(name)
    return Seeded(seed, deterministic, tuple(seeded), tuple(notes), jax_key)
