"""Helpers for tests that run `colabenv lock` against the local indexes (and journeys that do).

``write_profile`` writes a small team profile whose ``[install]`` points at a ``default_index``
and a ``pytorch_index`` (see ``tests.support.fixtures``), ``write_jax_profile`` a jax-only one;
``colabenv`` runs the real console script in an isolated environment; ``lock_profile`` locks for
a T4 target and reads the lock. ``target_indexes`` and ``write_targets_profile`` are the
three-target setup of issue 26 (tests/integration/test_lock_targets.py, test_wheelhouse_targets.py);
``write_wheel_lock`` a pylock of given wheels for the bundle tests.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from packaging.utils import canonicalize_name

from colabenv.lock.content import Lock, LockedFile, LockedPackage, LockHeader, LockTarget
from colabenv.lock.file import read_lock, render_lock
from tests.support.fixtures import console_runner
from tests.support.index import LocalIndex
from tests.support.isolation import clean_env
from tests.support.wheels import Standins, build_wheel

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
T4 = ["--driver", "550.54.15", "--compute-capability", "7.5", "--python", PYTHON]
PROFILE = """\
# A team profile used by the lock tests.
schema = 1
name = "team-gpu"
description = "torch and jax on one GPU"

[frameworks]
# torch with its vision companion
torch = {{ version = ">=2.5,<2.7", torchvision = "*" }}  # the torch line
jax = ">=0.5,<0.6"  # jax from the default index

[packages]
requirements = [{requirements}]

[install]
index_url = "{default}"
pytorch_index_url = "{pytorch}"
{extra}
"""

JAX_PROFILE = """\
schema = 1
name = "jax-gpu"
description = "jax alone"

[frameworks]
jax = ">=0.5,<0.6"

[install]
index_url = "{default}"
"""


def write_profile(
    directory: Path,
    default_index: LocalIndex,
    pytorch_index: LocalIndex,
    *,
    requirements: Sequence[str] = ("requests>=2",),
    extra: str = "",
    name: str = "team.toml",
) -> Path:
    path = directory / name
    path.write_text(
        PROFILE.format(
            requirements=", ".join(json.dumps(r) for r in requirements),
            default=default_index.url,
            pytorch=pytorch_index.base_url,
            extra=extra,
        )
    )
    return path


def write_jax_profile(directory: Path, default_index: LocalIndex, *, name: str = "jax.toml") -> Path:
    """A jax-only profile on ``default_index``: its cuDNN comes from the plugin's range."""
    path = directory / name
    path.write_text(JAX_PROFILE.format(default=default_index.url))
    return path


def colabenv(
    *args: str | Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """The console script in ``env`` (the test environment without pip and uv configuration,
    no retries, by default), for lock's longer runs."""
    return console_runner(cwd)(
        *args, base=env or clean_env(UV_HTTP_RETRIES="0", PIP_RETRIES="0"), timeout=timeout
    )


def lock_profile(profile: Path, out: Path, resolver: str, *extra: str) -> Lock:
    result = colabenv("lock", profile, "-o", out, "--resolver", resolver, *T4, *extra)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    return read_lock(out)


OTHER_PYTHON = "3.12" if PYTHON != "3.12" else "3.13"
"""The CI target's Python in a lock of three targets: another Python than the others, so its
compiled stand-in wheel is another file (pip-tools resolves only for the Python it runs in)."""

TARGETS_PROFILE = """\
schema = 1
name = "team-targets"
description = "one lock for the notebook, the cluster and CI"
{frameworks}
[packages]
requirements = ["requests>=2", "fastops"]

[install]
index_url = "{default}"
pytorch_index_url = "{pytorch}"
extra_index_urls = ["{extra}"]

[targets]
nb = {{ driver = "550.54.15", compute_capability = ["7.5"], python = "{python}" }}
cluster = {{ driver = "580.65.06", compute_capability = "9.0", python = "{python}" }}
ci = {{ cpu = true, python = "{ci_python}" }}
"""
NB_FLAGS = ["--driver", "550.54.15", "--compute-capability", "7.5", "--python", PYTHON]
CLUSTER_FLAGS = ["--driver", "580.65.06", "--compute-capability", "9.0", "--python", PYTHON]


@contextmanager
def target_indexes(standins: Standins, compiled: Path) -> Iterator[tuple[LocalIndex, LocalIndex, LocalIndex]]:
    """The stand-in indexes served, and one of ``compiled`` (an empty folder) serving
    ``fastops``: a compiled wheel for this Python and one for ``OTHER_PYTHON``."""
    for python in sorted({PYTHON, OTHER_PYTHON}):
        tag = f"cp{python.replace('.', '')}"
        build_wheel(compiled, "fastops", "1.0", tag=f"{tag}-{tag}-manylinux_2_28_x86_64")
    with (
        LocalIndex(standins.default) as default,
        LocalIndex(standins.pytorch) as pytorch,
        LocalIndex(compiled) as served,
    ):
        yield default, pytorch, served


def write_targets_profile(
    directory: Path, indexes: tuple[LocalIndex, ...], ci_python: str = PYTHON, *, torch: bool = True
) -> Path:
    """``team.toml`` in ``directory``: targets nb (T4), cluster (H100) and ci (CPU, ``ci_python``);
    ``torch`` False leaves ``[frameworks]`` out (only ``requests`` and ``fastops``)."""
    default, pytorch, compiled = indexes
    path = directory / "team.toml"
    path.write_text(
        TARGETS_PROFILE.format(
            frameworks='\n[frameworks]\ntorch = ">=2.5,<2.7"\n' if torch else "",
            default=default.url,
            pytorch=pytorch.base_url,
            extra=compiled.url,
            python=PYTHON,
            ci_python=ci_python,
        )
    )
    return path


def write_wheel_lock(
    path: Path, wheels: Sequence[tuple[str, str, bytes, str]], index: str, *, sizes: Sequence[int] = ()
) -> Path:
    """A pylock at ``path`` holding one wheel per ``(project, filename, body, url)``, each hashed
    from its body, for CPython 3.12 on Linux x86_64 and no frameworks, with ``index`` as the
    lock's index (``${VAR}`` references allowed): what ``colabenv bundle`` downloads. ``sizes``:
    each wheel's recorded ``size`` in turn (none recorded where left out)."""
    header = LockHeader(
        colabenv_version="0.1.0",
        profile_name=wheels[0][0],
        profile_hash="sha256:" + "0" * 64,
        target=LockTarget(None, None, None, (), "3.12", "linux_x86_64"),
        frameworks=(),
        resolver="uv 0.13.9",
    )
    recorded = [*sizes, *[None] * len(wheels)]
    packages = tuple(
        LockedPackage(
            canonicalize_name(project),
            "1.0",
            (LockedFile(hashlib.sha256(body).hexdigest(), filename, url, recorded[position]),),
        )
        for position, (project, filename, body, url) in enumerate(wheels)
    )
    path.write_text(render_lock(Lock(header, packages, index), pylock=True))
    return path
