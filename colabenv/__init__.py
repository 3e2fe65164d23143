"""colabenv: declarative GPU Python environments for ephemeral notebook runtimes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from colabenv._version import __version__

if TYPE_CHECKING:
    from collections.abc import Mapping

    from colabenv.diagnosis.run import DoctorReport
    from colabenv.models.watch import WatchStatus
    from colabenv.seeding import Seeded
    from colabenv.verification.ray_nodes import NodeReport
    from colabenv.verification.report import VerifyReport


def bootstrap(profile: str, *, restart: bool = True, **target: Any) -> int:
    """Render ``profile`` for this host, run the script with its output streamed, restart if needed.

    ``lock=PATH`` installs that lock exactly (``render --lock``); ``target=NAME`` renders for the
    profile's named target (``render --target``); the target flags (``driver=``, ``cuda=``,
    ``compute_capability=``, ``python=``, ``cpu=``) as the command's."""
    from colabenv.notebook import bootstrap as _bootstrap

    return _bootstrap(profile, restart=restart, **target)


def verify(
    profile: str | None = None,
    *,
    lock: str | None = None,
    timeout: float | None = None,
    interpreter: str | None = None,
    cpu: bool = False,
) -> VerifyReport:
    """Run the post-restart checks and return the report (for a notebook cell).

    ``interpreter``: the path of another Python to verify (a venv's, say) instead of this one.
    ``cpu``: skip the GPU checks on request (``verify --cpu``): a GPU profile's CPU checks.
    """
    from colabenv.verification.run import verify as _verify

    return _verify(profile=profile, lock=lock, timeout=timeout, interpreter=interpreter, cpu=cpu)


def seed_everything(seed: int | None = None, *, deterministic: bool | None = None) -> Seeded:
    """Seed random, NumPy and every installed framework (the profile's seed when none is given);
    returns what was seeded and the key JAX should start from."""
    from colabenv.seeding import seed_everything as _seed_everything

    return _seed_everything(seed, deterministic=deterministic)


def doctor(
    profile: str | None = None,
    *,
    lock: str | None = None,
    since: str | None = None,
    interpreter: str | None = None,
    imports: tuple[str, ...] = (),
    kill_leftovers: bool = False,
) -> DoctorReport:
    """What went wrong and what to do (``colabenv doctor``): a silent kernel death, leftovers
    holding a GPU, imports that fail after installs; ``report.findings``, the most likely cause
    first. The package behind it is :mod:`colabenv.diagnosis`: a package named ``doctor`` would
    take this function's name in ``colabenv`` once imported."""
    from colabenv.diagnosis.run import doctor as _doctor

    return _doctor(
        profile=profile,
        lock=lock,
        since=since,
        interpreter=interpreter,
        imports=imports,
        kill_leftovers=kill_leftovers,
    )


def watch(
    *, interval_s: float = 2.0, max_hours: float = 24.0, paths: tuple[str, ...] = (), stop: bool = False
) -> WatchStatus:
    """Start the recorder of this state directory (``colabenv watch start``) with this process
    as the kernel it watches, unless one runs; returns its status. ``stop``: end it instead
    (the status it had)."""
    from colabenv.recorder.control import start_here

    return start_here(interval_s=interval_s, max_hours=max_hours, paths=paths, stop=stop)


def verify_ray_nodes(
    runtime_env: Mapping[str, object], lock: str, *, timeout_s: float = 600.0
) -> tuple[NodeReport, ...]:
    """``colabenv verify --lock LOCK`` once on every alive node of the Ray cluster this driver is
    connected to, in ``runtime_env`` (``render --format ray``'s); one report per node, each
    failure named by check and message (``report.lines``)."""
    from colabenv.verification.ray_nodes import verify_ray_nodes as _verify_ray_nodes

    return _verify_ray_nodes(runtime_env, lock, timeout_s=timeout_s)


__all__ = ["__version__", "bootstrap", "doctor", "seed_everything", "verify", "verify_ray_nodes", "watch"]
