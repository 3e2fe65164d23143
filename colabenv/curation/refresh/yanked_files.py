"""The files a page read by ``catalog refresh`` marks yanked (PEP 592): left aside, never read
as a release's (a yanked ``cp314t`` wheel makes no free-threaded range, a release whose every
wheel is yanked is never proposed), and remembered for the notes: a release the file has whose
every wheel is now yanked (the entry is kept: installers still take a yanked file for an exact
pin, with a warning), and one the selection would have read that is left out for it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from colabenv.errors import printable

if TYPE_CHECKING:
    from colabenv.curation.refresh.sources import RefreshOptions
    from colabenv.index.client import IndexFile


class YankedFiles:
    """The wheels of the pages read, by project and version (its local tag left out): the
    reasons of the yanked ones, and which versions have a wheel that is not yanked."""

    def __init__(self) -> None:
        self._yanked: dict[tuple[str, Version], list[str]] = {}
        self._kept: set[tuple[str, Version]] = set()

    def kept(self, files: Iterable[IndexFile]) -> tuple[IndexFile, ...]:
        """``files`` less the yanked ones, each wheel's flag remembered."""
        found = []
        for file in files:
            key = _key(file.filename)
            if file.yanked is None:
                found.append(file)
                if key is not None:
                    self._kept.add(key)
            elif key is not None:
                self._yanked.setdefault(key, []).append(file.yanked)
        return tuple(found)

    def wholly(self, projects: Iterable[str]) -> dict[Version, str]:
        """The versions whose every wheel of ``projects`` on the pages read is yanked, each with
        the first reason given ("" for none)."""
        names = {canonicalize_name(p) for p in projects}
        kept = {v for p, v in self._kept if p in names}
        found: dict[Version, list[str]] = {}
        for (project, version), reasons in self._yanked.items():
            if project in names and version not in kept:
                found.setdefault(version, []).extend(reasons)
        return {v: next((r for r in found[v] if r), "") for v in sorted(found)}

    def notes(
        self, label: str, projects: Sequence[str], known: Iterable[Version], options: RefreshOptions
    ) -> list[str]:
        """One note per version of ``projects`` wholly yanked that the file has (``known``: its
        entry is kept) or that the selection would have read (``--releases``, else past the
        file's newest): named by ``label`` (the framework or package) and with the reason."""
        releases = {Version(v.public) for v in known}
        newest = max(releases, default=None)
        notes = []
        for version, reason in self.wholly(projects).items():
            said = f"yanked ({_reason(reason)})"
            if version in releases:
                notes.append(
                    f"{label} {version}: every wheel of it on the pages read is {said}; the "
                    "catalog's entry is kept (installers take a yanked file only for an exact "
                    "pin, with a warning: PEP 592)"
                )
            elif (options.releases.contains(version, prereleases=True) if options.releases else False) or (
                options.releases is None and newest is not None and version > newest
            ):
                notes.append(f"{label} {version} left out: every wheel of it on the pages read is {said}")
        return notes


def _reason(reason: str) -> str:
    return f"reason: {printable(reason)}" if reason else "no reason given"


def _key(filename: str) -> tuple[str, Version] | None:
    """A wheel's project and public version; None for another file, or a name not read."""
    if not filename.endswith(".whl"):
        return None
    try:
        name, version, _, _ = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion, ValueError):
        return None
    return name, Version(version.public)
