"""The index check of ``render``, ``resolve`` and ``bootstrap()``: the project pages of what a
resolution chose, read from the indexes they come from, as :class:`IndexFacts` (which versions
have a file the target installs). The catalog proposes, the index disposes.

Every page of one resolution shares one deadline (:data:`CHECK_DEADLINE_S`); each request is
bounded as :class:`~colabenv.index.client.SimpleClient` bounds it. An answer is kept in the cache
directory for :data:`CACHE_LIFETIME_S`, by the index URL as the profile writes it (``${VAR}``
unexpanded) and the project, named by their sha256: a re-render makes no request. What cannot be
read (an index unreachable, refusing, the deadline passed, a credential unset) is a note, never
an error: the resolution is then the catalog's. An index that could not be reached (no answer,
refused, a host name not found: a host with no network) is remembered for
:data:`UNREACHABLE_LIFETIME_S` (by its host), so the renders that follow note it at once instead of each
waiting for its deadline; a refusal that a credential may mend is not remembered.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from colabenv._util.cache import keep, recent
from colabenv.errors import ColabenvError, printable
from colabenv.models.availability import FileTarget, IndexFacts, IndexPage, index_key

if TYPE_CHECKING:
    from colabenv.index.client import IndexFile, SimpleClient
    from colabenv.models import InstallSettings

ENV_OFFLINE = "COLABENV_OFFLINE"
"""Set to 1 (or ``true``, ``yes``): no index check, as ``--offline``."""
CHECK_DEADLINE_S = 3.0
"""The bound on every request of one resolution's index check together."""
CACHE_LIFETIME_S = 600.0
"""How long a project page read is taken as the index's answer."""
CACHE_KIND = "index"
UNREACHABLE_LIFETIME_S = 60.0
"""How long an index that could not be reached is taken as unreachable."""
_UNREACHABLE = ("unreachable (", "no complete answer from", "no answer within")

File = tuple[str, str, tuple[str, ...], str]
"""A file of a page as kept: (``w`` wheel or ``s`` sdist, version, wheel tags, Requires-Python)."""


def offline(environ: Mapping[str, str], flag: bool) -> bool:
    """``--offline`` (``offline=True``), or :data:`ENV_OFFLINE` set to a true value."""
    return flag or environ.get(ENV_OFFLINE, "").strip().lower() in ("1", "true", "yes", "on")


def index_check(environ: Mapping[str, str], *, offline_flag: bool = False) -> IndexCheck | None:
    """The check a command confirms its choices with; None with ``--offline`` or
    :data:`ENV_OFFLINE`."""
    return None if offline(environ, offline_flag) else IndexCheck(environ)


def page_files(files: Sequence[IndexFile], project: str) -> list[File]:
    """The wheels and sdists of ``project`` on a page, read from their names (others skipped:
    wheel-variant names, another project's files)."""
    wanted = canonicalize_name(project)
    found: list[File] = []
    for item in files:
        name = item.filename
        try:
            if name.endswith(".whl"):
                dist, version, _, tags = parse_wheel_filename(name)
                kind, shown = "w", tuple(sorted(str(tag) for tag in tags))
            else:
                dist, version = parse_sdist_filename(name)
                kind, shown = "s", ()
        except (InvalidWheelFilename, InvalidSdistFilename):
            continue
        if dist == wanted:
            found.append((kind, str(version), shown, item.requires_python or ""))
    return found


def page_of(index: str | None, project: str, files: Sequence[File] | None, target: FileTarget) -> IndexPage:
    """What a page's files say for ``target``: the versions with a wheel it installs, and with
    a file it can install from (a wheel, or an sdist)."""
    name = canonicalize_name(project)
    if files is None:
        return IndexPage(index, name, found=False)
    tags = target.tags
    ranges: dict[str, bool] = {}
    wheels: set[str] = set()
    installable: set[str] = set()
    for kind, version, file_tags, requires in files:
        if requires and not _python_in(requires, target.python, ranges):
            continue
        if kind == "s":
            installable.add(version)
        elif not tags.isdisjoint(file_tags):
            wheels.add(version)
            installable.add(version)
    return IndexPage(index, name, frozenset(wheels), frozenset(installable))


def _python_in(requires: str, python: Version, seen: dict[str, bool]) -> bool:
    if requires not in seen:
        try:
            seen[requires] = SpecifierSet(requires).contains(python, prereleases=True)
        except InvalidSpecifier:
            seen[requires] = True
    return seen[requires]


class IndexCheck:
    """Reads project pages for resolutions (:meth:`read`), every request of one check within
    one deadline that starts at its first request; the one seam between a resolution and the
    network (a test hands the application layer its own). Not a value: it keeps the time, the
    indexes that failed and a client per index."""

    def __init__(
        self,
        environ: Mapping[str, str],
        *,
        deadline_s: float = CHECK_DEADLINE_S,
        lifetime_s: float = CACHE_LIFETIME_S,
    ) -> None:
        self.environ = environ
        self.deadline_s = deadline_s
        self.lifetime_s = lifetime_s
        self._started: float | None = None
        self._expired = False
        self._failed: set[str] = set()
        self._clients: dict[str, SimpleClient] = {}

    def read(
        self,
        facts: IndexFacts,
        wanted: Sequence[tuple[str | None, str]],
        target: FileTarget,
        install: InstallSettings,
    ) -> IndexFacts:
        """``facts`` with the pages of ``wanted`` ((index, project); None: the default index, as
        ``install`` names it) added, from the cache or the index; a note for what could not be."""
        pages = []
        notes: list[str] = []
        for index, project in wanted:
            url = install.index_url if index is None else index
            if _shown(url) in self._failed or self._expired:
                continue
            try:
                files = self._files(url, project)
            except ColabenvError as error:
                self._failed.add(_shown(url))
                message = error.message.replace(" (--http-deadline)", "")
                if not isinstance(error, _Remembered) and any(p in message for p in _UNREACHABLE):
                    keep(CACHE_KIND, _unreachable_key(url), {"message": message}, self.environ)
                notes.append(printable(message))
                continue
            pages.append(page_of(index, project, files, target))
        return IndexFacts(target.shown, (*facts.pages, *pages), tuple(dict.fromkeys((*facts.notes, *notes))))

    def _check_remembered(self, url: str | None) -> None:
        """Raises the failure of an index remembered as unreachable (within
        :data:`UNREACHABLE_LIFETIME_S`)."""
        kept = recent(CACHE_KIND, _unreachable_key(url), UNREACHABLE_LIFETIME_S, self.environ)
        message = None if kept is None else kept.get("message")
        if isinstance(message, str):
            raise _Remembered(
                f"{message} (found by a check in the last {UNREACHABLE_LIFETIME_S:g} s; not asked again)"
            )

    def _files(self, url: str | None, project: str) -> list[File] | None:
        """The page's files (None: no such project)."""
        shown = _shown(url)
        key = f"{shown}\n{canonicalize_name(project)}"
        cached = recent(CACHE_KIND, key, self.lifetime_s, self.environ)
        if cached is not None and isinstance(cached.get("files"), list):
            return [_file(item) for item in cached["files"]] if cached.get("found") else None
        self._check_remembered(url)
        if self._started is None:
            self._started = time.monotonic()
        left = self._started + self.deadline_s - time.monotonic()
        if left <= 0:
            self._expired = True
            raise ColabenvError(
                f"the check's deadline of {self.deadline_s:g} s passed before {project} was read"
            )
        found = self._client(url, left).project_files(url or _default_index(), project)
        files = page_files(found, project) if found is not None else None
        keep(CACHE_KIND, key, {"found": files is not None, "files": files or []}, self.environ)
        return files

    def _client(self, url: str | None, left: float) -> SimpleClient:
        from colabenv.index.client import SimpleClient
        from colabenv.index.urls import Redactor

        shown = _shown(url)
        client = self._clients.get(shown)
        if client is None:
            redact = Redactor.for_urls([url] if url else [], self.environ)
            client = self._clients[shown] = SimpleClient(self.environ, redact)
        client.deadline_s = left
        return client


class _Remembered(ColabenvError):
    """An index's failure remembered from an earlier check."""


def _unreachable_key(url: str | None) -> str:
    """Unreachable is said of a host: every index on it shares what was found."""
    shown = _shown(url)
    try:
        parts = urlsplit(shown)
        host = f"{parts.hostname}:{parts.port}" if parts.hostname else shown
    except ValueError:
        host = shown
    return f"{host}\nunreachable"


def _shown(url: str | None) -> str:
    """An index as notes and the cache name it: its URL as written (``${VAR}`` unexpanded)."""
    return index_key(url) or "the default index"


def _default_index() -> str:
    from colabenv.index.urls import default_index_url

    default = default_index_url()
    if default is None:
        raise ColabenvError("no default index is known (pip is not installed)")
    return default


def _file(item: Sequence[Any]) -> File:
    """A kept file back from the cache."""
    kind, version, tags, requires = item
    return (str(kind), str(version), tuple(str(t) for t in tags), str(requires))
