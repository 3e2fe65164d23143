"""A resolution, or a lock file, to the install plan (:class:`colabenv.script.plan.InstallPlan`)
that the script, the container definitions and ``colabenv.bootstrap()`` take.

A lock is installed exactly only when it fits: read strictly, made from this profile for this
target (the rules of ``lock --check``), and holding every requirement of the profile. The
script's header and marker then describe the lock, not a new resolution.
"""

from __future__ import annotations

from pathlib import Path

from colabenv.errors import LockError, UsageError, printable
from colabenv.models import Profile, Resolution
from colabenv.script.plan import InstallPlan, LockInput, install_plan


def lock_input(
    path: Path, profile: Profile, resolution: Resolution, section_name: str | None = None
) -> LockInput:
    """The lock at ``path`` to install exactly for ``resolution``'s target. Of a lock of several
    targets, the section ``section_name`` (a named target), else the first that fits this target
    (none: every section named with why it does not fit)."""
    from colabenv.lock.content import LockTarget
    from colabenv.lock.file import read_lock_file, render_lock
    from colabenv.lock.fit import check_satisfies, fitting_section, named_section, stale_reasons

    lock_file = read_lock_file(path)
    name = printable(path.name)
    target = LockTarget.current(resolution.target, resolution.required_driver)
    if section_name is not None:
        section = named_section(lock_file, section_name, name)
    elif lock_file.sectioned:
        section = fitting_section(lock_file, target, name, profile, resolution.constraint_lines)
    else:
        section = lock_file.sections[0]
    lock = section.lock
    reasons = stale_reasons(lock, profile, target, resolution.constraint_lines)
    if reasons:
        raise LockError(
            f"{name}: does not fit this script: {'; '.join(reasons)}; make a new "
            "lock for this target with colabenv lock (the same target flags)"
        )
    check_satisfies(lock, profile, name)
    recorded = lock.header.target
    return LockInput(
        name=path.name,
        text=render_lock(lock),
        python=recorded.python,
        required_driver=recorded.required_driver,
        index_urls=lock.index_urls,
        pins=tuple(f"{name}=={version}" for name, version in lock.pins),
        target=recorded,
        frameworks=lock.header.frameworks,
        constraints=lock.header.constraints,
        section=section.name,
        install_lines=lock.install_lines,
    )


def with_wheelhouse(lock: LockInput | None, profile: Profile, offline: str | None) -> LockInput | None:
    """The lock installed from a wheelhouse (issue 26): ``offline`` (``--wheelhouse DIR``, a
    folder as the host the script runs on sees it) only, else the profile's ``[install]
    wheelhouse`` as a cache. Without a lock the resolution's install groups use the profile's
    (:func:`colabenv.script.wheelhouse.resolved_install`)."""
    from dataclasses import replace

    from colabenv._util.reader import path_problem

    if offline is not None:
        if lock is None:
            raise UsageError("--wheelhouse DIR needs --lock LOCK: a wheelhouse holds a lock's wheels")
        problem = path_problem(offline) if len(offline) <= 1024 else "is longer than 1024 characters"
        if problem is not None:
            raise UsageError(
                f"--wheelhouse: {problem}; name the folder as the host the script runs on sees it"
            )
        return replace(lock, wheelhouse=offline, offline=True)
    kept = profile.install.wheelhouse
    if lock is None or kept is None:
        return lock
    return replace(lock, wheelhouse=kept, offline=False)


def plan_for(
    profile: Profile,
    resolution: Resolution,
    colabenv_version: str,
    *,
    lock: Path | None = None,
    section: str | None = None,
) -> InstallPlan:
    """The plan of ``resolution``, or of the lock at ``lock`` (its section ``section``) when given,
    the profile's ``[install] wheelhouse`` a cache for it."""
    given = lock_input(lock, profile, resolution, section) if lock is not None else None
    return install_plan(resolution, profile, colabenv_version, with_wheelhouse(given, profile, None))
