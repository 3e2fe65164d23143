"""Which releases of a project a refresh examines: ``--releases SPEC`` or the newest the catalog
has and every newer one, at most the newest :data:`DEFAULT_RELEASES` (``--releases N``: N, at
most :data:`MAX_RELEASES`), and one note naming how many were left out and which."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packaging.version import Version

    from colabenv.curation.refresh.sources import RefreshOptions
    from colabenv.models import Release

DEFAULT_RELEASES = 20
"""The most releases of one project a refresh examines unless ``--releases N`` says more: each
costs a metadata read at least, and an index may list thousands past the catalog."""
MAX_RELEASES = 500
"""The most ``--releases`` (a count or a specifier) can make a refresh examine."""


def selected_versions(
    available: Iterable[Version],
    known: Sequence[Release],
    options: RefreshOptions,
    notes: list[str],
    project: str,
) -> list[Version]:
    """``--releases SPEC`` when given; else the newest release the catalog has and every newer
    one (the newest one on the index when the catalog has none); at most the newest
    ``options.release_count`` of them (:func:`bounded`)."""
    versions = sorted(set(available))
    wanted = options.releases
    if wanted is not None:
        chosen = [v for v in versions if wanted.contains(v, prereleases=True)]
    elif known:
        newest = max(r.version for r in known)
        chosen = [v for v in versions if v >= newest]
    else:
        chosen = versions[-1:]
    return bounded(chosen, options, notes, project)


def bounded(
    chosen: Sequence[Version], options: RefreshOptions, notes: list[str], project: str
) -> list[Version]:
    """The newest ``options.release_count`` of ``chosen`` (ascending), and a note naming how many
    were left out and the oldest and newest of those where any were."""
    kept = sorted(chosen)
    count = options.release_count
    if len(kept) <= count:
        return kept
    left = kept[:-count]
    which = "that --releases names" if options.releases is not None else "from the file's newest on"
    more = "" if count >= MAX_RELEASES else f"; --releases N reads the newest N (at most {MAX_RELEASES})"
    notes.append(
        f"{project}: {len(left)} of the {len(kept)} release(s) {which} left out ({left[0]} to "
        f"{left[-1]}): only the newest {count} are read{more}"
    )
    return kept[-count:]
