"""A Ray ``runtime_env`` (issue 37): the lock's target section installed by Ray's ``pip``
field on every node, with ``[env]`` as its ``env_vars``. No I/O.

The pins go to Ray as the lines of a requirements file, each with its hashes: Ray writes
``packages`` to a file and runs ``pip install -r`` on it with ``pip_install_options`` (Ray's
``_private/runtime_env/pip.py``), so pip checks every hash and expands a ``${VAR}`` of an
index URL itself, on the node, when it reads the file. Ray's ``uv`` field takes the same
lines, but expands the variables into the file it writes (``_private/runtime_env/uv.py``).
docs/scaling-out.md gives the measurement of both (``bench/ray.py``) and the choice.

``env_vars`` keep a ``${VAR}`` reference as written: Ray expands it in the worker's own
environment when the worker starts (``_private/utils.py``, ``update_envs``: ``expandvars``,
then an unset one becomes empty), so no value is written here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from colabenv.errors import UsageError

if TYPE_CHECKING:
    from colabenv.script.plan import InstallPlan

RayField = Literal["pip", "uv"]
RAY_FIELD: RayField = "pip"
"""The field colabenv writes the pins through (docs/scaling-out.md says why, by measurement)."""

PIP_OPTIONS = ("--disable-pip-version-check", "--no-cache-dir")
"""Ray's own default ``pip_install_options``, kept: giving the field replaces them."""
UV_OPTIONS = ("--no-cache",)
"""Ray's own default ``uv_pip_install_options``."""


def runtime_env(plan: InstallPlan, *, field: RayField = RAY_FIELD) -> dict[str, object]:
    """The ``runtime_env`` that installs ``plan``'s lock (its target section) on each node:
    from the lock's indexes, or with ``--wheelhouse`` only from that folder (as the nodes see
    it) with no index; ``env_vars`` the profile's ``[env]``, references unexpanded."""
    lock = plan.lock
    if lock is None or not lock.install_lines:
        raise UsageError("--format ray needs --lock LOCK: the lock's section is what every node installs")
    if lock.offline and lock.wheelhouse is not None:
        lines = [line for line in lock.install_lines if not line.startswith("--")]
        options: tuple[str, ...] = ("--no-index", "--find-links", lock.wheelhouse)
    else:
        lines = list(lock.install_lines)
        options = ()
    if field == "pip":
        install: dict[str, object] = {
            "packages": lines,
            "pip_check": False,
            "pip_install_options": [*PIP_OPTIONS, *options],
        }
    else:
        install = {"packages": lines, "uv_check": False, "uv_pip_install_options": [*UV_OPTIONS, *options]}
    found: dict[str, object] = {field: install}
    env = dict(plan.resolution.env)
    if env:
        found["env_vars"] = env
    return found
