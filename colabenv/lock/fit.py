"""Is a lock still the one to install? Staleness (profile, target, component constraints) and
completeness (every requirement of the profile among the pins); which section of a lock of
several targets fits a host; and the pins' markers settled for the lock's one target. No I/O."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.errors import LockError, printable, shown
from colabenv.lock.content import (
    HeaderWord,
    Lock,
    LockedPackage,
    LockFile,
    LockSection,
    LockTarget,
    checked_constraint,
)
from colabenv.models import Profile, TargetOverrides
from colabenv.models.frameworks import FACTS, spellings_of

_ANY = SpecifierSet()


def current_target(recorded: LockTarget, overrides: TargetOverrides) -> LockTarget:
    """The recorded target with whatever the flags or ``COLABENV_*`` variables override: its
    Python (a full ``--python 3.14.1`` is held to the pins' ``python-needs``), its platform, and
    its device as :meth:`~colabenv.accelerators.base.RecordedDevice.overridden` says (``--cpu``
    and ``--tpu`` replace it, an NVIDIA value makes it an NVIDIA device, a ROCm one AMD GPUs)."""
    python = f"{overrides.python.major}.{overrides.python.minor}" if overrides.python else recorded.python
    full = str(overrides.python) if overrides.python and len(overrides.python.release) >= 3 else None
    device = recorded.recorded_device.overridden(overrides)
    driver, cuda, capabilities, tpu = device.driver, device.cuda, device.compute_capabilities, device.tpu
    return LockTarget(
        driver,
        recorded.required_driver,
        cuda,
        capabilities,
        python,
        overrides.platform or recorded.platform,
        tpu,
        python_full=full,
        rocm=device.rocm,
        gfx=tuple(sorted(device.gfx)),
    )


def stale_reasons(
    lock: Lock, profile: Profile, target: LockTarget, constraints: Sequence[str] | None = None
) -> list[str]:
    """Why ``lock`` no longer matches ``profile`` on ``target``; empty when it is fresh.

    ``constraints``: the component bounds a resolution for ``target`` has now (None: not
    compared).
    """
    reasons = []
    header = lock.header
    if header.profile_name != profile.name:
        reasons.append(f"made for profile {shown(header.profile_name)}, not {profile.name!r}")
    if header.profile_hash != profile.content_hash:
        reasons.append(
            f"the profile changed (hash {_short(header.profile_hash)} in the lock, "
            f"{_short(profile.content_hash)} now)"
        )
    reasons.extend(f"target: {d}" for d in header.target.differences(target))
    if constraints is not None:
        recorded = sorted(header.constraints)
        now = sorted(filter(None, (checked_constraint(c) for c in constraints)))
        if recorded != now:
            none = HeaderWord.NONE.value
            reasons.append(
                f"component constraints: {', '.join(recorded) or none} in the lock, "
                f"{', '.join(now) or none} now"
            )
    return reasons


def _short(digest: str) -> str:
    algo, _, hexdigest = digest.partition(":")
    return f"{algo}:{hexdigest[:12]}" if hexdigest else digest[:12]


def unmet_requirements(lock: Lock, profile: Profile) -> list[str]:
    """Each requirement of ``profile`` (its frameworks, their companions, ``[packages]``) that
    the lock's pins do not satisfy on the lock's target; empty for a whole lock."""
    unmet: list[str] = []
    environment = lock.header.target.marker_environment()
    recorded = {f.framework: f for f in lock.header.frameworks}
    for request in profile.frameworks:
        framework = request.framework
        facts = FACTS[framework]
        locked = recorded.get(framework)
        if locked is None:
            unmet.append(f"frameworks.{framework}: not recorded in the lock")
            continue
        public = Version(locked.version).public
        if not request.specifier.contains(public, prereleases=True):
            unmet.append(f"frameworks.{framework}: the lock has {public}, outside {request.specifier}")
        if request.variant and request.variant != locked.variant:
            unmet.append(
                f"frameworks.{framework}: the lock has variant {locked.variant}, not {request.variant}"
            )
        if not any(_public(lock.version_of(d)) == public for d in facts.dists):
            unmet.append(f"{facts.dists[0]}=={public} is not pinned")
        wanted = dict(request.companions)
        for name in facts.required_companions:
            wanted.setdefault(name, _ANY)
        for name, specifier in sorted(wanted.items()):
            version = _public(lock.version_of(name))
            if version is None or not specifier.contains(version, prereleases=True):
                unmet.append(
                    f"{name}{specifier} (frameworks.{framework}) is "
                    f"{'pinned at ' + version if version else 'not pinned'}"
                )
    unmet.extend(_unmet_packages(lock, profile))
    for requirement in profile.requirements:
        if requirement.marker is not None and not requirement.marker.evaluate(environment):
            continue
        version = lock.version_of(requirement.name)
        if version is None:
            unmet.append(f"{requirement} is not pinned")
        elif not requirement.url and not requirement.specifier.contains(version, prereleases=True):
            unmet.append(f"{requirement} is pinned at {version}")
    return unmet


def _unmet_packages(lock: Lock, profile: Profile) -> list[str]:
    """Each CUDA package of ``[frameworks]`` whose distribution the lock does not pin within
    the profile's range, or whose build the header records otherwise than the profile asks (a
    lock of an older colabenv records no CUDA packages: only its pins are held then)."""
    unmet: list[str] = []
    recorded = {p.name: p for p in lock.header.cuda_packages}
    for request in profile.cuda_packages:
        where = f"frameworks.{request.key}"
        locked = recorded.get(request.name)
        if locked is None:
            pinned = [(d, v) for d in spellings_of(request.name) if (v := lock.version_of(d)) is not None]
        else:
            version = lock.version_of(locked.distribution)
            pinned = [] if version is None else [(locked.distribution, version)]
            if _public(version) != Version(locked.version).public:
                unmet.append(
                    f"{where}: the header records {locked.distribution} {locked.version}, pinned at {version}"
                )
            if request.variant and request.variant != locked.variant:
                unmet.append(f"{where}: the lock has build {locked.variant}, not {request.variant}")
        if not pinned:
            unmet.append(f"{where}: not pinned in the lock")
        for dist, version in pinned:
            public = Version(version).public
            if not request.specifier.contains(public, prereleases=True):
                unmet.append(f"{where}: the lock has {dist} {public}, outside {request.specifier}")
    return unmet


def _public(version: str | None) -> str | None:
    return Version(version).public if version is not None else None


def check_satisfies(lock: Lock, profile: Profile, where: str) -> None:
    """LockError naming what is missing when ``lock`` does not hold every requirement of
    ``profile`` (call it once the profile hash matched: a whole lock of this profile does)."""
    unmet = unmet_requirements(lock, profile)
    if unmet:
        raise LockError(
            f"{where}: the lock does not satisfy profile {profile.name!r}: "
            f"{'; '.join(unmet)}; make it again with colabenv lock"
        )


def settled_markers(
    packages: Sequence[LockedPackage], environment: Mapping[str, str]
) -> tuple[LockedPackage, ...]:
    """The pins as installed on the lock's one target: uv writes the markers of the dependency
    edges it followed (``platform_machine == "x86_64"`` on torch's NVIDIA wheels), pip-tools,
    resolving for the interpreter it runs in, writes none. For one target they are settled: a
    marker true there is dropped, and a package whose marker is false there is not the target's.
    So both resolvers write the same lock. A marker that names a value the target does not
    fix (``platform_release``) stays as written."""
    from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName

    settled = []
    for package in packages:
        if package.marker is None:
            settled.append(package)
            continue
        names = set(_MARKER_NAME.findall(_QUOTED.sub("", package.marker))) - _MARKER_WORDS
        if not names <= environment.keys():
            settled.append(package)
            continue
        try:
            applies = Marker(package.marker).evaluate(dict(environment))
        except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
            settled.append(package)
            continue
        if applies:
            settled.append(dataclasses.replace(package, marker=None))
    return tuple(settled)


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_MARKER_NAME = re.compile(r"[a-z_]+")
_MARKER_WORDS = {"and", "or", "in", "not"}


def fitting_section(
    lock_file: LockFile,
    target: LockTarget,
    where: str,
    profile: Profile | None = None,
    constraints: Sequence[str] | None = None,
    hint: str = "; name one with --target NAME, or lock this host's target too",
) -> LockSection:
    """The first section of ``lock_file`` that fits ``target`` (the rules of
    :func:`stale_reasons` where the profile is at hand, else the target alone); LockError
    naming every section and why it does not fit when none does, then ``hint``."""
    why: list[str] = []
    for section in lock_file.sections:
        lock = section.lock
        if profile is not None:
            reasons = stale_reasons(lock, profile, target, constraints)
        else:
            reasons = [f"target: {d}" for d in lock.header.target.differences(target)]
        if not reasons:
            return section
        why.append(f"{section.name or 'the lock'}: {', '.join(reasons)}")
    raise LockError(f"{where}: no section fits this host ({'; '.join(why)}){hint}")


def named_section(lock_file: LockFile, name: str, where: str) -> LockSection:
    """The section ``name`` (``--target NAME``); a lock of one target is its own only section.
    LockError listing the sections when there is none of that name."""
    if not lock_file.sectioned:
        return lock_file.sections[0]
    for section in lock_file.sections:
        if section.name == name:
            return section
    raise LockError(f"{where}: no section {printable(name)[:40]!r} (sections: {', '.join(lock_file.names)})")
