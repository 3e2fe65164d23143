"""The calls that seed each framework and switch it to deterministic kernels: what
``colabenv.seed_everything()`` does (``colabenv.seeding`` imports this file) and what the
determinism child does before its computation (``determinism.py``), written once. Standard
library only, Python 3.8+, and it imports nothing beside it, so both can load it."""

from __future__ import annotations

from typing import Any


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
