"""Small readings of PEP 508 requirements shared by the checks and the build engine."""

from __future__ import annotations

from collections.abc import Iterable

from packaging.markers import UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import Requirement


def marker_applies(req: Requirement, extras: Iterable[str]) -> bool:
    if req.marker is None:
        return True
    try:
        return any(req.marker.evaluate({"extra": extra}) for extra in ("", *extras))
    except (UndefinedComparison, UndefinedEnvironmentName):
        return True


def exact_pin(req: Requirement) -> str | None:
    specs = list(req.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        return specs[0].version
    return None

