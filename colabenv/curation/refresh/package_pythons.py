"""The Python ranges of the CUDA package releases ``cuda_packages.toml`` has, held to the Python
tags of their wheels (``catalog refresh packages``): Requires-Python alone is not enough (a
``>=3.9`` whose wheels are cp310 to cp313). A range that admits a Python no wheel serves is
written anew, narrowed to what the wheels serve (the release's ``python`` where every build
the file has of it narrows alike, else each build's own); a Python the wheels serve that the
file leaves out is a contradiction, and the file's range is kept there. No I/O."""

from __future__ import annotations

import json
from collections.abc import Sequence

from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from colabenv.curation.refresh.sources import candidate_pythons, stamp
from colabenv.curation.refresh.writer import quoted, specifier_text
from colabenv.models import PackageBuild, PackageRelease
from colabenv.models.frozen import model


@model
class PythonRange:
    """A Python range of the file narrowed to what its wheels serve: the release's (``build``
    None) or one build's; ``was`` the file's, ``tags`` what the wheels' Python tags say."""

    package: NormalizedName
    version: Version
    build: str | None
    python: SpecifierSet
    was: SpecifierSet
    tags: SpecifierSet

    @property
    def label(self) -> str:
        return f"{self.package} {self.version}{f' {self.build}' if self.build else ''}"

    @property
    def said(self) -> str:
        """One line: what the file had, what the tags say, what is written."""
        return (
            f"{self.label}: python: the catalog had {specifier_text(self.was)}, the wheels' Python "
            f"tags say {specifier_text(self.tags)}: written {specifier_text(self.python)}"
        )


def only_in(first: SpecifierSet, second: SpecifierSet) -> list[Version]:
    """The Pythons ``first`` admits and ``second`` does not (each 3.M, each version either names)."""
    return [
        point
        for point in candidate_pythons(first, second)
        if first.contains(point, prereleases=True) and not second.contains(point, prereleases=True)
    ]


def narrowed(had: SpecifierSet, tags: SpecifierSet) -> SpecifierSet:
    """What both ranges admit, with no clause the others already imply (``>=3.10,<3.14``, not
    ``>=3.9,>=3.10,<3.14``)."""
    clauses = sorted({str(item) for item in (had & tags)})
    points = candidate_pythons(had, tags)
    wanted = [(had & tags).contains(p, prereleases=True) for p in points]
    for clause in list(clauses):
        rest = SpecifierSet(",".join(c for c in clauses if c != clause))
        if [rest.contains(p, prereleases=True) for p in points] == wanted:
            clauses.remove(clause)
    return SpecifierSet(",".join(clauses))


def compare_pythons(
    release: PackageRelease, builds: Sequence[PackageBuild]
) -> tuple[list[str], list[PythonRange]]:
    """Where the wheels of ``builds`` (derived from the index for ``release``, which the file
    has) serve another Python range than the file says: contradictions (a Python the wheels serve
    that the file leaves out) and the ranges to write narrowed."""
    said: list[str] = []
    narrower: dict[str, tuple[SpecifierSet, SpecifierSet, SpecifierSet]] = {}
    for build in builds:
        known = release.build(build.name)
        if known is None or known.distribution != build.distribution or build.python is None:
            continue
        had = release.python & (known.python or SpecifierSet())
        if only_in(build.python, had):
            said.append(
                f"{release.package} {release.version} {build.name}: python: the catalog has "
                f"{specifier_text(had)}, the wheels' Python tags say {specifier_text(build.python)}"
            )
        if only_in(had, build.python):
            narrower[build.name] = (narrowed(had, build.python), had, build.python)
    ranges = {str(new) for new, _, _ in narrower.values()}
    if len(ranges) == 1 and {b.name for b in release.builds} <= narrower.keys():
        new, _, tags = next(iter(narrower.values()))
        return said, [PythonRange(release.package, release.version, None, new, release.python, tags)]
    return said, [
        PythonRange(release.package, release.version, name, new, had, tags)
        for name, (new, had, tags) in narrower.items()
    ]


def python_written(text: str, ranges: Sequence[PythonRange]) -> str:
    """``text`` (a ``cuda_packages.toml``) with each range of ``ranges`` written in its entry:
    its ``python`` line replaced (or, for a build with none, put before its ``source``), and
    its ``source`` saying so."""
    lines = text.splitlines(keepends=True)
    for item in ranges:
        span = _entry(lines, item)
        if span is None:
            continue
        start, end = span
        value = f"python = {quoted(specifier_text(item.python))}\n"
        why = f"python {specifier_text(item.python)}: the Python tags of its wheels on the index, {stamp()}"
        own = [n for n in range(start, end) if lines[n].partition("=")[0].strip() == "python"]
        source = [n for n in range(start, end) if lines[n].partition("=")[0].strip() == "source"]
        if source:
            written = json.loads(lines[source[0]].partition("=")[2].strip())
            lines[source[0]] = f"source = {quoted(f'{written}; {why}')}\n"
        if own:
            lines[own[0]] = value
        else:
            lines.insert(source[0] if source else end, value)
    return "".join(lines)


def _entry(lines: Sequence[str], item: PythonRange) -> tuple[int, int] | None:
    """The lines of the release's own keys (or the build's), from its ``[[...]]`` line to the next."""
    wanted = (
        ("[[package]]", "name", str(item.package)),
        ("[[package.release]]", "version", str(item.version)),
        *((("[[package.release.build]]", "name", item.build),) if item.build else ()),
    )
    start = 0
    for header, key, value in wanted:
        found = _next(lines, start, header, key, value)
        if found is None:
            return None
        start = found
    end = start + 1
    while end < len(lines) and not lines[end].lstrip().startswith("[["):
        end += 1
    return start, end


def _next(lines: Sequence[str], start: int, header: str, key: str, value: str) -> int | None:
    """The first ``header`` at or after ``start`` whose next line is ``key = "value"`` (names
    compared normalized), before the entry ``start`` is in ends."""
    for number in range(start, len(lines) - 1):
        line = lines[number].strip()
        if number > start and header != "[[package]]" and line == "[[package]]":
            return None
        if number > start and header == "[[package.release.build]]" and line == "[[package.release]]":
            return None
        if line != header:
            continue
        name, _, written = lines[number + 1].partition("=")
        written = written.strip().strip('"')
        if name.strip() == key and _same(key, written, value):
            return number
    return None


def _same(key: str, written: str, value: str) -> bool:
    return written == value or (key == "name" and canonicalize_name(written) == canonicalize_name(value))
