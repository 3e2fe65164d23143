"""What the derivations of :mod:`colabenv.curation.refresh.frameworks` share about a build as its
wheels state it: the versions a file or a pin names, the Python tags of its wheels, its arch list
read from its GPU code or carried from the build before, and what a derivation gathers beside
its releases (the builds whose arch list was read, the notes on what was left out)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from colabenv.curation.refresh.sources import History, IndexReader, Metadata, Wheel, carried_archs, preferred
from colabenv.models import Arch
from colabenv.models.frozen import record

_NO_ARCHS = "(no GPU code read, no previous build to carry it from)"
NOT_READ = "the wheels were not read (--archs carry)"
"""Why a build's list of GPU architectures was not read from its wheels: ``--archs carry``."""

Named = TypeVar("Named")

FoundArchs = tuple[tuple[Arch, ...], str | None, str]
"""An arch list, the reason it is unconfirmed (None: read from the wheels), and where it comes from."""


@record
class FrameworkRun:
    """What a framework's derivation reads with and gathers beside its releases: the builds
    whose arch list was read from their wheels (``read``) and what was left out (``notes``)."""

    reader: IndexReader
    history: History
    read: set[tuple[Version, str]]
    notes: list[str]

    def main_wheel(self, wheels: Sequence[Wheel]) -> tuple[Wheel, Metadata]:
        """The wheel of ``wheels`` a build's facts are read from (:func:`preferred`), and its
        METADATA."""
        wheel = preferred(wheels)
        return wheel, self.reader.metadata(wheel)


def text_of(data: bytes | None) -> str:
    """A file read from a wheel as text (empty where the wheel has none)."""
    return (data or b"").decode("utf-8", "replace")


def public_or_none(text: str | None) -> Version | None:
    """The version ``text`` is; None where it is empty or not a version."""
    if not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def python_tags(wheels: Sequence[Wheel]) -> str:
    """The cpXY tags of ``wheels`` as a span (``cp310 to cp313``), for a source text."""
    minors = sorted({p for w in wheels for p in w.pythons}, key=lambda p: int(p.split(".")[1]))
    return f"cp{minors[0].replace('.', '')} to cp{minors[-1].replace('.', '')}" if minors else "no cpXY tag"


def pinned_version(specifier: SpecifierSet) -> Version | None:
    """The one version ``==X`` or ``<=X,>=X`` admits."""
    exact = [s.version for s in specifier if s.operator in ("==", "===")]
    if exact and "*" not in exact[0]:
        return public_or_none(exact[0])
    lows = {s.version for s in specifier if s.operator == ">="}
    highs = {s.version for s in specifier if s.operator == "<="}
    if len(lows) == 1 and lows == highs:
        return public_or_none(lows.pop())
    return None


def archs_of(
    reader: IndexReader,
    wheels: Sequence[Wheel],
    history: History,
    version: Version,
    name: str,
    members: Sequence[str] = (),
) -> FoundArchs | None:
    """(archs, the unconfirmed reason or None, where they come from); None when there is
    neither a wheel with GPU code to read nor a previous build to carry them from."""
    if reader.options.read_archs:
        archs = reader.archs(wheels, members)
        if archs:
            names = " and ".join(w.file.filename for w in wheels)
            return archs, None, f"archs: what every library with GPU code carries in {names}"
        why = "no library with GPU code found in the wheel"
    else:
        why = "the wheels were not read (--archs carry)"
    carried = carried_archs(history, version, name, why)
    if carried is None:
        return None
    return carried[0], carried[1], carried[1]


def read_else_carried(
    run: FrameworkRun,
    build: tuple[Version, str],
    read: Callable[[], tuple[tuple[Named, ...], str]],
    carried: Callable[[str], tuple[tuple[Named, ...], str] | None],
    left_out: Callable[[str], str],
) -> tuple[tuple[Named, ...], str | None, str] | None:
    """A GPU build's list of architectures (an arch list, a gfx list), the reason it is
    unconfirmed (None: read from its wheels) and where it comes from. Where the wheels are read,
    ``read()`` gives the list and where it was read, or nothing and why; then ``build`` counts
    as read. Else ``carried(why)`` gives the list of the build before and its reason; with none,
    the build is left out: None, noted as ``left_out(why)``."""
    if run.reader.options.read_archs:
        listed, said = read()
        if listed:
            run.read.add(build)
            return listed, None, said
        why = said
    else:
        why = NOT_READ
    found = carried(why)
    if found is None:
        run.notes.append(left_out(why))
        return None
    return found[0], found[1], found[1]


def kept_archs(
    found: FoundArchs | None, run: FrameworkRun, build: tuple[Version, str], left_out: str
) -> FoundArchs | None:
    """``found`` (see :func:`archs_of`) for ``build``, which counts as read where its arch list was
    read from its wheels; None, noted as ``left_out``, where there is no arch list."""
    if found is None:
        run.notes.append(f"{left_out} {_NO_ARCHS}")
        return None
    if found[1] is None:
        run.read.add(build)
    return found


def archs_carried_only(history: History, version: Version, name: str) -> FoundArchs | None:
    """The previous release's arch list of build ``name``, for a build with no wheel to read."""
    carried = carried_archs(history, version, name, "the build has no plugin wheel to read")
    return None if carried is None else (carried[0], carried[1], carried[1])
