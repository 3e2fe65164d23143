"""``colabenv.bootstrap(...)``: plan (a resolution for this host or a named target, or a lock),
render, run the script with its output in the cell, restart."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from colabenv._util import processes
from colabenv._version import __version__
from colabenv.app.install import plan_for
from colabenv.app.resolution import TargetSource, resolve_profile
from colabenv.errors import ColabenvError, ProcessError, printable
from colabenv.host.detect import runtime_kind
from colabenv.models import Profile, RuntimeKind
from colabenv.profile.files import find_profile
from colabenv.profile.load import load_profile
from colabenv.resolve.overrides import TargetFlags
from colabenv.script.plan import InstallPlan
from colabenv.script.render import RESTART_LINE, script_text

SCRIPT_TIMEOUT_S = 3 * 3600.0
RESTART_GRACE_S = 1.0
"""How long the kernel waits, its output flushed, before it ends itself: the front end must
receive the last line over the kernel's message sockets first, or the cell never shows it."""


def _in_ipython_kernel() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    get = getattr(shell, "get_ipython", None)
    instance = get() if get is not None else None
    return instance is not None and getattr(instance, "kernel", None) is not None


def _uv_beside(python: str) -> str | None:
    """The uv installed beside ``python`` (a venv's or pipx's ``bin/``), which is often not on
    PATH: the script installs with it instead of pip."""
    candidate = Path(python).parent / "uv"
    return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None


def _colab_secrets(urls: Iterable[str], environ: Mapping[str, str]) -> dict[str, str]:
    """The values of the ``${VAR}`` references in ``urls`` that ``environ`` lacks, from Colab's
    user secrets (``google.colab.userdata``), for the environment of one script run only. A
    secret that cannot be had is said, without its value; the script then stops at its
    preflight with the usual "not set" error."""
    from colabenv.index.urls import reference_names

    missing = [
        name for name in dict.fromkeys(n for url in urls for n in reference_names(url)) if name not in environ
    ]
    if not missing:
        return {}
    try:
        from google.colab import userdata  # type: ignore[import-not-found]
    except ImportError:
        return {}
    found: dict[str, str] = {}
    for name in missing:
        try:
            value = userdata.get(name)
        except Exception as exc:  # SecretNotFoundError, NotebookAccessError, TimeoutException
            print(
                f"colabenv: ${name} is neither in the environment nor given by Colab's secrets "
                f"({type(exc).__name__}): add it under Secrets (the key icon) and give this "
                "notebook access",
                flush=True,
            )
            continue
        if isinstance(value, str):
            found[name] = value
    return found


def _env_from_colab_secrets(pairs: Iterable[tuple[str, str]]) -> None:
    """The ``[env]`` values with ``${VAR}`` references that this kernel lacks (its ``.pth``
    hook ran when the kernel started, from an environment without the variable), expanded with
    Colab's user secrets and set in ``os.environ`` of this kernel only: never written to a file,
    never printed. A reference Colab does not give is said (:func:`_colab_secrets`); its name
    stays unset."""
    from colabenv._target.helper import UnsetVariable, expand_value
    from colabenv.profile.env import references

    wanting = [(name, value) for name, value in pairs if references(value) and name not in os.environ]
    if not wanting:
        return
    environ = {**os.environ, **_colab_secrets([value for _, value in wanting], os.environ)}
    done = []
    for name, value in wanting:
        try:
            os.environ[name] = expand_value(value, environ)
        except UnsetVariable:
            continue
        done.append(name)
    if done:
        print(f"colabenv: {', '.join(done)} set in this kernel from Colab's secrets", flush=True)


def _end_kernel() -> None:
    """End this kernel process so that Colab restarts it, after its last lines reach the cell.

    Only on Colab: its runtime starts a new kernel when the kernel process ends (the way
    notebooks there have restarted since, ``os.kill(os.getpid(), 9)``). Kaggle's kernels are
    managed by Kaggle's own service, which no public source describes (its image,
    Kaggle/docker-python, configures no kernel manager), so whether a Kaggle kernel that ends
    itself comes back, or the session is lost, is not known: there, and in plain Jupyter,
    colabenv prints the instruction instead."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    time.sleep(RESTART_GRACE_S)
    os.kill(os.getpid(), signal.SIGKILL)


def _plan(profile: Profile, source: TargetSource, lock: Path | None, *, offline: bool = False) -> InstallPlan:
    """The plan for ``source``'s target, of ``lock`` when given; its notes and warnings printed.
    Unless ``offline``, the choices are confirmed against the indexes they come from."""
    from colabenv.index.check import index_check

    resolution = resolve_profile(profile, source, index=index_check(os.environ, offline_flag=offline))
    plan = plan_for(profile, resolution, __version__, lock=lock, section=source.name)
    if plan.lock is not None and plan.lock.section is not None:
        print(f"colabenv: note: installing section {plan.lock.section} of {printable(plan.lock.name)}")
    for warning in resolution.warnings:
        print(f"colabenv: warning: {warning}")
    return plan


def _run_script(plan: InstallPlan, on_colab: bool) -> tuple[int, list[str]]:
    """The plan's script run by bash in a private folder, each line shown as it comes: its
    exit status and its lines. In a Colab kernel, the index URLs' ``${VAR}`` the environment
    lacks come from Colab's secrets, in that run's environment only."""
    text = script_text(plan)
    with tempfile.TemporaryDirectory(prefix="colabenv-") as tmp:
        script = Path(tmp) / "setup.sh"
        script.write_text(text, encoding="utf-8")
        env = dict(os.environ)
        if _in_ipython_kernel() and on_colab:
            env.update(_colab_secrets(plan.index_urls, env))
        env.setdefault("COLABENV_PYTHON", sys.executable)
        uv = _uv_beside(sys.executable)
        if uv is not None:
            env.setdefault("COLABENV_UV", uv)
        lines: list[str] = []

        def show(line: str) -> None:
            lines.append(line)
            print(line, flush=True)

        try:
            status = processes.stream(["bash", str(script)], timeout=SCRIPT_TIMEOUT_S, on_line=show, env=env)
        except ProcessError as error:
            raise ColabenvError(f"cannot run the bootstrap script: {error}") from None
    return status, lines


def bootstrap(
    profile: str,
    *,
    restart: bool = True,
    driver: str | None = None,
    cuda: str | None = None,
    compute_capability: tuple[str, ...] = (),
    python: str | None = None,
    cpu: bool = False,
    lock: str | os.PathLike[str] | None = None,
    target: str | None = None,
    offline: bool = False,
    **unknown: Any,
) -> int:
    """Render ``profile`` for this host, run the script, and restart the kernel if required.

    ``lock``: a lock file of the profile (``colabenv lock``) to install exactly, as
    ``colabenv render --lock`` does: refused unless it fits the target. ``target``: the
    profile's named target (``[targets]``) to render for instead of this host's detection
    (no target flag beside it); of a lock of several targets, the section of that name.
    ``offline``: do not confirm the choices against the indexes they come from (as
    ``render --offline``; ``COLABENV_OFFLINE=1`` does the same).

    Returns the script's exit status (0 on success). When a restart is required and this runs
    inside an IPython kernel on Colab, the kernel process ends so that Colab restarts it;
    elsewhere (Kaggle, plain Jupyter, a script) the instruction to restart is printed. Inside
    a Colab kernel, a ``${VAR}`` of an index URL that the environment lacks is taken from
    Colab's user secrets and handed to the script in the environment of that one run: never
    written to a file, never left in ``os.environ``. An ``[env]`` value whose ``${VAR}`` the
    kernel lacks (the ``.pth`` hook expands references when an interpreter starts, and Colab's
    secrets are not in its environment) is expanded with Colab's secrets and set in this
    kernel's ``os.environ`` once no restart is pending: after the restart, run the cell again.
    """
    if unknown:
        raise TypeError(f"bootstrap() got unexpected arguments: {', '.join(sorted(unknown))}")
    flags = TargetFlags(
        driver=driver, cuda=cuda, compute_capability=compute_capability, python=python, cpu=cpu
    )
    loaded = load_profile(find_profile(profile))
    source = TargetSource(flags, target, "target=")
    plan = _plan(loaded, source, Path(lock) if lock is not None else None, offline=offline)
    on_colab = runtime_kind() is RuntimeKind.COLAB
    status, lines = _run_script(plan, on_colab)
    if status != 0:
        return status
    if _in_ipython_kernel() and on_colab and not (RESTART_LINE in lines and restart):
        _env_from_colab_secrets(plan.resolution.env)
    if loaded.watch.enabled and not (RESTART_LINE in lines and restart):
        from colabenv.recorder.control import start_for_profile

        start_for_profile(loaded.watch)  # [watch] enabled; after a restart, verify() starts it
    if RESTART_LINE in lines and restart:
        if _in_ipython_kernel() and on_colab:
            print("colabenv: restarting the runtime now; run the next cell after it reconnects")
            _end_kernel()
        else:
            print(
                "colabenv: restart the kernel (or the Python process) before importing the "
                "frameworks, then run colabenv.verify(); colabenv restarts a kernel itself only "
                "on Colab"
            )
    return 0
