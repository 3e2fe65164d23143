"""The ``versions`` and ``consistency`` checks: installed versions against the expectation, and
every requirement met in the dependency closure of what was asked for."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from colabenv._util.pep508 import exact_pin, marker_applies
from colabenv.host.installed import DistInfo
from colabenv.models.frameworks import framework_of
from colabenv.models.frozen import model
from colabenv.verification.expectation import Expectation
from colabenv.verification.report import Check, Status, join_limited


def _satisfies(installed: str, req: Requirement) -> bool:
    pin = exact_pin(req)
    if pin is not None:
        if next(iter(req.specifier)).operator == "===":
            return installed == pin
        try:
            return Version(installed) == Version(pin)
        except InvalidVersion:
            return installed == pin
    if not req.specifier:
        return True
    return req.specifier.contains(installed, prereleases=True)


def check_versions(expectation: Expectation, lookup: Callable[[str], str | None]) -> Check:
    """Installed versions, local tags included: ``==2.6.0+cu124`` is not met by ``2.6.0+cu126``."""
    if not expectation.requirements and not expectation.problems:
        return Check("versions", Status.SKIP, f"nothing to compare with: {expectation.source}")
    problems = list(expectation.problems)
    checked = 0
    frameworks: list[str] = []
    for req in expectation.requirements:
        if not marker_applies(req, ()):
            continue
        checked += 1
        installed = lookup(req.name)
        wanted = str(req.specifier) or "any version"
        if installed is None:
            problems.append(f"{req.name}: not installed, expected {wanted}")
        elif not _satisfies(installed, req):
            problems.append(f"{req.name}: installed {installed}, expected {wanted}")
        elif framework_of(req.name) is not None:
            frameworks.append(f"{canonicalize_name(req.name)} {installed}")
    if problems:
        return Check("versions", Status.FAIL, join_limited(problems))
    shown = f" ({', '.join(frameworks)})" if frameworks else ""
    return Check("versions", Status.PASS, f"{checked} requirement(s) of the {expectation.source} met{shown}")


@model
class Closure:
    """The distributions reached from the roots through their Requires-Dist, and what is unmet."""

    names: tuple[NormalizedName, ...]
    problems: tuple[str, ...]
    involved: tuple[tuple[NormalizedName, NormalizedName], ...] = ()
    """For each problem, the distribution that requires and the one required."""


def dependency_closure(
    roots: Iterable[tuple[str, frozenset[str]]], lookup: Callable[[str], DistInfo | None]
) -> Closure:
    """What ``pip check`` reports, limited to the roots and everything they pull in.

    Markers are evaluated for this interpreter, with the extras each requirement asks for.
    Roots that are not installed are the versions check's business and are skipped here.
    """
    seen: set[tuple[NormalizedName, frozenset[str]]] = set()
    order: dict[NormalizedName, None] = {}
    problems: dict[str, tuple[NormalizedName, NormalizedName]] = {}
    queue = [(canonicalize_name(name), extras) for name, extras in roots]
    while queue:
        name, extras = queue.pop(0)
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        info = lookup(name)
        if info is None:
            continue
        order[name] = None
        for text in info.requires:
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if not marker_applies(req, extras):
                continue
            dep = lookup(req.name)
            label = f"{info.name} {info.version} requires {req.name}{req.specifier}"
            pair = (name, canonicalize_name(req.name))
            if dep is None:
                problems.setdefault(f"{label}, which is not installed", pair)
                continue
            if req.specifier and not req.specifier.contains(dep.version, prereleases=True):
                problems.setdefault(f"{label}, installed {dep.version}", pair)
            queue.append((canonicalize_name(req.name), frozenset(req.extras)))
    return Closure(tuple(order), tuple(problems), tuple(problems.values()))


def check_consistency(closure: Closure, changed: frozenset[str] | None = None) -> Check:
    """Unmet requirements are a FAIL, unless the bootstrap script (``changed``: what its marker
    says it installed or moved) touched neither side: then the runtime image shipped them
    that way (Colab forces one cuDNN under frameworks that pin another) and it is a WARN."""
    if closure.problems:
        if (
            changed is not None
            and closure.involved
            and not any(owner in changed or dep in changed for owner, dep in closure.involved)
        ):
            return Check(
                "consistency",
                Status.WARN,
                "as the runtime image shipped it (colabenv changed neither side): "
                + join_limited(list(closure.problems)),
            )
        return Check("consistency", Status.FAIL, join_limited(list(closure.problems)))
    if not closure.names:
        return Check("consistency", Status.SKIP, "no installed distribution to check")
    return Check(
        "consistency", Status.PASS, f"{len(closure.names)} distribution(s) checked, every requirement met"
    )
