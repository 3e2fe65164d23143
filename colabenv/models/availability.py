"""What package indexes serve for a target, as the resolver is handed it (``IndexFacts``): for
each project page read, the versions that have a file the target installs. The resolver passes
over a catalog build an index lacks and takes an unconfirmed one an index serves; what could not
be read is a note, never a guess."""

from __future__ import annotations

import functools

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from colabenv.models.frozen import model


def index_key(index: str | None) -> str | None:
    """An index URL as pages are kept by (no trailing slash; None: the default index)."""
    return None if index is None else index.rstrip("/")


def version_key(version: str) -> str:
    """A version as pages list it (normalized: ``2.15.0+cu130``); the text itself if invalid."""
    try:
        return str(Version(version))
    except InvalidVersion:
        return version


@model
class FileTarget:
    """What a file must fit to be installed on the target: its Python (a file's
    Requires-Python) and the wheel tags its CPython installs on its platform; ``shown``, how
    reasons name them (``cp312 on linux_x86_64``); ``ranked``: those tags, the one an installer
    prefers first; ``machine``: its ``platform_machine`` (markers of a wheel's requirements)."""

    python: Version
    tags: frozenset[str]
    shown: str
    ranked: tuple[str, ...] = ()
    machine: str = "x86_64"

    def environment(self) -> dict[str, str]:
        """The PEP 508 marker values of the target (Linux, CPython), no extra asked for."""
        release = (*self.python.release, 0, 0)
        return {
            "python_version": f"{release[0]}.{release[1]}",
            "python_full_version": f"{release[0]}.{release[1]}.{release[2]}",
            "implementation_version": f"{release[0]}.{release[1]}.{release[2]}",
            "sys_platform": "linux",
            "platform_system": "Linux",
            "platform_machine": self.machine,
            "os_name": "posix",
            "implementation_name": "cpython",
            "platform_python_implementation": "CPython",
            "extra": "",
        }


FIND_LINKS_PREFIX = "find-links:"
"""How a find-links page (a flat page of files, an old release's TPU runtime) stands among the
indexes of :class:`IndexFacts`: its URL after this prefix."""


def find_links_key(page: str) -> str:
    """A find-links page as :class:`IndexFacts` keys it (``find-links:URL``)."""
    return FIND_LINKS_PREFIX + page


def where_read(index: str | None) -> str:
    """An index or find-links page as reasons name it (``the default index``)."""
    if index is not None and index.startswith(FIND_LINKS_PREFIX):
        return f"the find-links page {index_key(index.removeprefix(FIND_LINKS_PREFIX))}"
    return f"the index {index_key(index)}" if index is not None else "the default index"


@model
class IndexPage:
    """One project page of one index, read for a target. ``index``: its URL as the resolution
    writes it, ``${VAR}`` unexpanded (None: the default index); ``wheels``: the versions with a
    wheel the target installs (its Python, ABI, platform and manylinux level, and the file's
    Requires-Python); ``files``: the versions with any file (an sdist too); ``found``: False when
    the index has no such project; ``yanked``: the versions of ``files`` whose every file the
    target can install is yanked (PEP 592), each with the reason given ("" for none)."""

    index: str | None
    project: NormalizedName
    wheels: frozenset[str] = frozenset()
    files: frozenset[str] = frozenset()
    found: bool = True
    yanked: tuple[tuple[str, str], ...] = ()


@model
class IndexRequires:
    """What the PEP 658 metadata file of the wheel the target installs of ``project``
    ``version`` (normalized, as pages list it) on ``index`` requires: its Requires-Dist whose
    markers hold for the target, extras left out."""

    index: str | None
    project: NormalizedName
    version: str
    requires: tuple[str, ...]


@model
class IndexFacts:
    """The pages read for one resolution, the target's tags as reasons name them
    (``cp312 on linux_x86_64``), a note for each index that could not be asked, and the
    requirements read from the metadata files of chosen companions (``requires``)."""

    tags: str = ""
    pages: tuple[IndexPage, ...] = ()
    notes: tuple[str, ...] = ()
    requires: tuple[IndexRequires, ...] = ()

    @functools.cached_property
    def _by_key(self) -> dict[tuple[str | None, str], IndexPage]:
        return {(index_key(p.index), p.project): p for p in self.pages}

    @functools.cached_property
    def _requires_by_key(self) -> dict[tuple[str | None, str, str], tuple[str, ...]]:
        return {(index_key(r.index), r.project, r.version): r.requires for r in self.requires}

    def page(self, index: str | None, project: str) -> IndexPage | None:
        return self._by_key.get((index_key(index), canonicalize_name(project)))

    def requirements(self, index: str | None, project: str, version: str) -> tuple[str, ...] | None:
        """What the metadata file of ``project`` ``version`` on ``index`` requires of the
        target; None when it was not read (none offered, or it could not be)."""
        return self._requires_by_key.get((index_key(index), canonicalize_name(project), version_key(version)))

    def served(self, index: str | None, project: str, version: str, *, wheel: bool = True) -> bool | None:
        """Whether ``index`` has a file of ``project`` ``version`` for the target (with ``wheel``,
        a wheel; else any file); None when its page was not read."""
        page = self.page(index, project)
        if page is None:
            return None
        return version_key(version) in (page.wheels if wheel else page.files)

    def yanked(self, index: str | None, project: str, version: str) -> str | None:
        """The reason ("" for none given) where every file of ``project`` ``version`` on
        ``index`` that the target can install is yanked; None where one is not, or the page
        was not read."""
        page = self.page(index, project)
        wanted = version_key(version)
        return None if page is None else dict(page.yanked).get(wanted)

    def missing(self, index: str | None, project: str, version: str) -> str:
        """Which file the index lacks, for a reason."""
        name = canonicalize_name(project).replace("-", "_")
        return f"{where_read(index)} has no file {name}-{version}-*.whl for {self.tags}"

    def merged(
        self, pages: tuple[IndexPage, ...], notes: tuple[str, ...], requires: tuple[IndexRequires, ...] = ()
    ) -> IndexFacts:
        """These facts with ``pages``, ``notes`` and ``requires`` added."""
        return IndexFacts(
            self.tags,
            (*self.pages, *pages),
            tuple(dict.fromkeys((*self.notes, *notes))),
            (*self.requires, *requires),
        )


NO_FACTS = IndexFacts()
"""Nothing read: every build is taken as the catalog says."""
