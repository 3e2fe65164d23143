"""What a run checks against: the install plan of a profile for this host (the one render makes
there), a lock's pins, or the restart marker's record."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from colabenv._util.bounds import MAX_TIMEOUT_S, finite_number
from colabenv.errors import ColabenvError, UsageError, printable
from colabenv.models import Framework, Profile, Reproducibility, Target, VerifySettings
from colabenv.models.frameworks import framework_of, ordered
from colabenv.models.frozen import model
from colabenv.script.marker import RestartMarker
from colabenv.script.plan import InstallPlan

DEFAULT_TIMEOUT_S = VerifySettings().timeout_s


class ExpectationKind(str, enum.Enum):
    """Which source the expectation was built from."""

    PROFILE = "profile"
    LOCK = "lock"
    MARKER = "marker"
    NONE = "none"


@model
class ProfileIdentity:
    """A profile as the restart marker and the lock header record it."""

    name: str
    content_hash: str

    def __str__(self) -> str:
        short = self.content_hash.removeprefix("sha256:")[:12]
        return f"{self.name!r} ({short})"


@model
class Expectation:
    """What this run checks against, whichever source it came from. ``profile``: the profile a
    restart marker must have been written by (from ``--profile`` or the lock's header).
    ``verify``: what the profile's ``[verify]`` asks (its ``timeout_s`` held to its bound); the
    smoke tests that run are ``smoke``, worked out from its ``smoke`` and the frameworks."""

    source: str
    requirements: tuple[Requirement, ...] = ()
    frameworks: tuple[Framework, ...] = ()
    smoke: tuple[Framework, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    verify: VerifySettings = VerifySettings(timeout_s=DEFAULT_TIMEOUT_S)
    problems: tuple[str, ...] = ()
    kind: ExpectationKind = ExpectationKind.NONE
    profile: ProfileIdentity | None = None
    reproducibility: Reproducibility = Reproducibility()
    env_known: bool = True
    """False for a lock whose profile's ``[env]`` cannot be known: the marker is another's."""
    target_differences: tuple[str, ...] = ()
    """How this host differs from the target a lock of one target was made for (a lock of
    several targets has a section that fits, or is refused)."""

    @property
    def explicit(self) -> bool:
        """A profile or lock was named: the marker is then a record, not the only source."""
        return self.kind in (ExpectationKind.PROFILE, ExpectationKind.LOCK)


def checked_timeout(value: float | str, origin: str = "--timeout") -> float:
    """A bound on each smoke test: a finite number of seconds above 0 and at most a day."""
    number: float | None
    if isinstance(value, str):
        try:
            number = finite_number(float(value.strip()))
        except ValueError:
            number = None
    else:
        number = finite_number(value)
    if number is None or not 0 < number <= MAX_TIMEOUT_S:
        shown = printable(value if isinstance(value, str) else f"{value:g}")[:40]
        raise UsageError(
            f"{origin}: {shown!r} is not a number of seconds above 0 and at most {MAX_TIMEOUT_S:g} (a day)"
        )
    return number


def _profile_timeout(value: float) -> float:
    """A profile's ``verify.timeout_s``, held to the same bound (profiles check refuses more)."""
    number = finite_number(value)
    return min(number, MAX_TIMEOUT_S) if number is not None and number > 0 else DEFAULT_TIMEOUT_S


def parse_requirements(lines: Iterable[str]) -> tuple[tuple[Requirement, ...], tuple[str, ...]]:
    reqs: list[Requirement] = []
    bad: list[str] = []
    for line in lines:
        try:
            reqs.append(Requirement(line))
        except InvalidRequirement:
            bad.append(f"{line!r} is not a requirement")
    return tuple(reqs), tuple(bad)


def expectation_from_marker(marker: RestartMarker) -> Expectation:
    reqs, bad = parse_requirements(marker.requirements)
    frameworks = ordered(f for f in (framework_of(m.name) for m in marker.frameworks) if f is not None)
    return Expectation(
        source=f"restart marker ({marker.profile})",
        requirements=reqs,
        frameworks=frameworks,
        smoke=marker.verify.smoke if marker.verify.smoke is not None else frameworks,
        env=marker.env,
        verify=marker.verify,
        problems=bad,
        kind=ExpectationKind.MARKER,
        reproducibility=marker.reproducibility,
    )


def expectation_from_plan(plan: InstallPlan) -> Expectation:
    """What the script of ``plan`` installs (the requirements its restart marker records) and
    what its profile asks of verify."""
    reqs, problems = parse_requirements(plan.requirements)
    return _of_profile(plan.profile, reqs, problems)


def expectation_from_profile(profile: Profile, target: Target) -> Expectation:
    """What ``profile`` installs on ``target``: the install plan render would make here, by the
    same way (:func:`colabenv.app.resolution.resolve_for`, its catalog the profile's with the
    overlays merged, then :func:`colabenv.app.install.plan_for`); no resolution is a problem
    the checks report."""
    from colabenv._version import __version__
    from colabenv.app.install import plan_for
    from colabenv.app.resolution import resolve_for

    try:
        resolution = resolve_for(profile, target).resolution
    except ColabenvError as error:
        return _of_profile(profile, (), (f"no resolution for this host: {error}",))
    return expectation_from_plan(plan_for(profile, resolution, __version__))


def _of_profile(profile: Profile, reqs: tuple[Requirement, ...], problems: tuple[str, ...]) -> Expectation:
    return Expectation(
        source=f"profile {profile.name}",
        requirements=reqs,
        frameworks=ordered(r.framework for r in profile.frameworks),
        smoke=ordered(profile.smoke_frameworks),
        env=profile.env,
        verify=dataclasses.replace(profile.verify, timeout_s=_profile_timeout(profile.verify.timeout_s)),
        problems=problems,
        kind=ExpectationKind.PROFILE,
        profile=ProfileIdentity(profile.name, profile.content_hash),
        reproducibility=profile.reproducibility,
    )


def expectation_from_lock(
    path: str, marker: RestartMarker | None, target: Target | None = None
) -> Expectation:
    """The lock's pins; what the lock's profile asks of verify (``require_gpu``, the free VRAM,
    ``[env]``, ``io``, ``[reproducibility]``) from the restart marker only when the script of
    that same profile wrote it (the lock header's profile hash): the marker another profile's
    script left says nothing of this lock (the ``marker`` check FAILs it), so the lock is then
    checked with the defaults, the same whichever profile ran last. Of a lock of several
    targets, the section whose target this host (``target``) is; none is a LockError naming
    each section and why."""
    lock_path = Path(path)
    if not lock_path.is_file():
        raise UsageError(f"{path}: no such lock file")
    from colabenv.lock.content import LockTarget
    from colabenv.lock.file import read_lock_file
    from colabenv.lock.fit import fitting_section

    lock_file = read_lock_file(lock_path)
    lock = lock_file.first
    source = f"lock {lock_path.name}"
    differences: tuple[str, ...] = ()
    if not lock_file.sectioned and target is not None:
        differences = tuple(lock.header.target.differences(LockTarget.current(target, None)))
    if lock_file.sectioned:
        if target is None:
            raise UsageError(
                f"{path}: a lock of several targets needs this host's target to pick its section"
            )
        section = fitting_section(
            lock_file,
            LockTarget.current(target, None),
            printable(lock_path.name),
            hint="; verify the host a section was made for",
        )
        lock = section.lock
        source = f"lock {lock_path.name} (section {section.name})"
    packages = lock.packages
    reqs, problems = parse_requirements(p.pin + (f" ; {p.marker}" if p.marker else "") for p in packages)
    frameworks = ordered(f for f in (framework_of(p.name) for p in packages) if f is not None)
    own = marker is not None and marker.profile_hash == lock.header.profile_hash
    base = expectation_from_marker(marker) if marker is not None and own else Expectation(source="")
    return Expectation(
        source=source,
        requirements=reqs,
        frameworks=frameworks,
        smoke=frameworks,
        env=base.env,
        verify=base.verify,
        problems=problems,
        kind=ExpectationKind.LOCK,
        profile=ProfileIdentity(lock.header.profile_name, lock.header.profile_hash),
        reproducibility=base.reproducibility,
        env_known=marker is None or own,
        target_differences=differences,
    )
