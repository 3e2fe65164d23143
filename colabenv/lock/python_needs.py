"""What a lock's pins need of the target's full Python: a lock records its Python as X.Y, so the
clauses of its files' Requires-Python that tell the patch releases of X.Y apart (``!=3.14.1``,
``>=3.12.3``) are recorded beside it (``python-needs``), and held to a full version where one is
known (the host's own interpreter, ``--python 3.14.1``). No I/O."""

from __future__ import annotations

from collections.abc import Iterable

from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

MAX_NEEDS = 200
"""The longest ``python-needs`` value a lock may hold."""


def _minor_of(minor: str) -> tuple[int, int] | None:
    try:
        release = Version(minor).release
    except InvalidVersion:
        return None
    return (release[0], release[1]) if len(release) >= 2 else None


def patch_clauses(requires_python: str | None, minor: str) -> tuple[Specifier, ...]:
    """The clauses of ``requires_python`` whose answer differs between patch releases of
    ``minor`` (``3.14``): each is tried on ``3.14.0`` up to the patch release after the highest
    one any clause names. An unreadable Requires-Python says nothing (installers ignore it too)."""
    wanted = _minor_of(minor)
    if not requires_python or wanted is None:
        return ()
    try:
        spec = SpecifierSet(requires_python)
    except InvalidSpecifier:
        return ()
    top = 0
    for item in spec:
        try:
            release = Version(item.version.removesuffix(".*")).release
        except InvalidVersion:
            continue
        if release[:2] == wanted and len(release) > 2:
            top = max(top, release[2])
    points = [Version(f"{wanted[0]}.{wanted[1]}.{patch}") for patch in range(top + 2)]
    return tuple(
        item for item in spec if len({item.contains(point, prereleases=True) for point in points}) > 1
    )


def python_needs(requires: Iterable[str | None], minor: str) -> str | None:
    """What every Requires-Python of ``requires`` (the locked files') asks of a full version
    of ``minor`` beyond X.Y, as one specifier set (None: nothing)."""
    clauses = {str(item) for text in requires for item in patch_clauses(text, minor)}
    return str(SpecifierSet(",".join(sorted(clauses)))) if clauses else None


def checked_needs(text: str) -> str | None:
    """A ``python-needs`` value read from a lock, as :class:`SpecifierSet` writes it, or None
    when it is not a specifier set of versions."""
    if len(text) > MAX_NEEDS or not text.isprintable():
        return None
    try:
        spec = SpecifierSet(text)
    except InvalidSpecifier:
        return None
    return str(spec) if len(spec) else None


def needs_problem(needs: str | None, python: Version) -> str | None:
    """Why the full Python ``python`` cannot install pins that need ``needs`` (None: it can, or
    only X.Y is known, ``3.14``, which says nothing of its patch release)."""
    if needs is None or len(python.release) < 3:
        return None
    if SpecifierSet(needs).contains(python, prereleases=True):
        return None
    return f"Python {python} is excluded by the lock's pins (they need Python {needs})"
