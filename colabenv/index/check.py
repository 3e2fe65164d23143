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

Where a resolution asks what a chosen companion requires (:meth:`IndexCheck.read`'s
``requires``), the PEP 658 metadata file of the wheel the target would install is read, within
the same deadline, bounded by :data:`MAX_METADATA_BYTES`, and kept as the pages are (its
Requires-Dist only). A page that offers no metadata file, or one that is not core metadata (too
large, a Requires-Dist that is not a requirement), says nothing: the choice stands.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
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
from colabenv.errors import ColabenvError, IndexUnavailableError, IndexUnreachableError, printable
from colabenv.index.urls import with_credentials
from colabenv.models.availability import (
    FIND_LINKS_PREFIX,
    FileTarget,
    IndexFacts,
    IndexPage,
    IndexRequires,
    index_key,
    version_key,
)

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
MAX_METADATA_BYTES = 1 << 20
"""A metadata file larger than this is not read (torch's is about 30 KB)."""
MAX_REQUIRES = 2000
"""A metadata file with more Requires-Dist than this is not taken (torch's has about 30)."""
_PAGE_FORM = "with metadata and yanked"
"""The form of a kept page (its files name their metadata file and yanked flag): in its cache
key."""

File = tuple[str, str, tuple[str, ...], str, str, str | None]
"""A file of a page as kept: (``w`` wheel or ``s`` sdist, version, wheel tags, Requires-Python,
the wheel's URL where the page offers its metadata file, credentials left out, else empty, and
the reason it is yanked: None where it is not, "" where none is given)."""


def offline(environ: Mapping[str, str], flag: bool) -> bool:
    """``--offline`` (``offline=True``), or :data:`ENV_OFFLINE` set to a true value."""
    return flag or environ.get(ENV_OFFLINE, "").strip().lower() in ("1", "true", "yes", "on")


def index_check(environ: Mapping[str, str], *, offline_flag: bool = False) -> IndexCheck | None:
    """The check a command confirms its choices with; None with ``--offline`` or
    :data:`ENV_OFFLINE`."""
    return None if offline(environ, offline_flag) else IndexCheck(environ)


def page_files(
    files: Sequence[IndexFile], project: str, redact: Callable[[str], str] = lambda text: text
) -> list[File]:
    """The wheels and sdists of ``project`` on a page, read from their names (others skipped:
    wheel-variant names, another project's files); a wheel's URL, where the page offers its
    metadata file, without credentials (``redact`` puts back what was expanded)."""
    from colabenv.index.urls import strip_credentials

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
            url = redact(strip_credentials(item.url)) if kind == "w" and item.metadata else ""
            found.append((kind, str(version), shown, item.requires_python or "", url, item.yanked))
    return found


def page_of(index: str | None, project: str, files: Sequence[File] | None, target: FileTarget) -> IndexPage:
    """What a page's files say for ``target``: the versions with a wheel it installs, with a
    file it can install from (a wheel, or an sdist), and those whose every such file is yanked
    (the first reason given)."""
    name = canonicalize_name(project)
    if files is None:
        return IndexPage(index, name, found=False)
    tags = target.tags
    ranges: dict[str, bool] = {}
    wheels: set[str] = set()
    installable: set[str] = set()
    yanked: dict[str, list[str]] = {}
    for kind, version, file_tags, requires, _, reason in files:
        if requires and not _python_in(requires, target.python, ranges):
            continue
        if kind == "w" and tags.isdisjoint(file_tags):
            continue
        if kind == "w":
            wheels.add(version)
        installable.add(version)
        yanked.setdefault(version, []).append("\0" if reason is None else reason)
    wholly = tuple(
        (version, next((r for r in reasons if r), ""))
        for version, reasons in sorted(yanked.items())
        if "\0" not in reasons
    )
    return IndexPage(index, name, frozenset(wheels), frozenset(installable), yanked=wholly)


def _python_in(requires: str, python: Version, seen: dict[str, bool]) -> bool:
    if requires not in seen:
        try:
            seen[requires] = SpecifierSet(requires).contains(python, prereleases=True)
        except InvalidSpecifier:
            seen[requires] = True
    return seen[requires]


def metadata_url(files: Sequence[File], version: str, target: FileTarget) -> str | None:
    """The URL (credentials left out) of the wheel of ``version`` the target installs (the
    tag it ranks first), where the page offers its metadata file; else None."""
    wanted = version_key(version)
    rank = {tag: n for n, tag in enumerate(target.ranked)}
    best: tuple[int, str] | None = None
    for kind, found, tags, requires, url, _ in files:
        if kind != "w" or found != wanted or (requires and not _python_in(requires, target.python, {})):
            continue
        fits = [rank.get(tag, len(rank)) for tag in tags if tag in target.tags]
        if fits and (best is None or min(fits) < best[0]):
            best = (min(fits), url)
    return (best[1] or None) if best is not None else None


def requires_dist(data: bytes) -> tuple[str, ...] | None:
    """The Requires-Dist of a core metadata file; None for one that is not (too large, no
    Metadata-Version, more than :data:`MAX_REQUIRES`, one that is not a requirement)."""
    import email.parser

    from packaging.requirements import InvalidRequirement, Requirement

    if len(data) > MAX_METADATA_BYTES:
        return None
    try:
        message = email.parser.BytesHeaderParser().parsebytes(data)
        if message.get("Metadata-Version") is None:
            return None
        texts = tuple(str(text).strip() for text in message.get_all("Requires-Dist") or ())
    except (ValueError, TypeError, LookupError):
        return None
    if len(texts) > MAX_REQUIRES:
        return None
    for text in texts:
        try:
            Requirement(text)
        except InvalidRequirement:
            return None
    return texts


def applying(texts: Sequence[str], target: FileTarget) -> tuple[str, ...]:
    """The requirements of ``texts`` whose markers hold for the target, no extra asked for."""
    from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
    from packaging.requirements import InvalidRequirement, Requirement

    environment = target.environment()
    found = []
    for text in texts:
        try:
            marker = Requirement(text).marker
            if marker is None or marker.evaluate(environment):
                found.append(text)
        except (InvalidRequirement, InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
            continue
    return tuple(found)


class IndexCheck:
    """Reads project pages for resolutions (:meth:`read`), every request of one check within
    one deadline that starts at its first request; the one seam between a resolution and the
    network (a test hands the application layer its own). Not a value: it keeps the time, the
    indexes that failed, the pages read and a client per index."""

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
        self._redactors: dict[str, Callable[[str], str]] = {}
        self._pages: dict[tuple[str, str], list[File] | None] = {}
        self._flat: dict[str, Sequence[IndexFile] | None] = {}

    def read(
        self,
        facts: IndexFacts,
        wanted: Sequence[tuple[str | None, str]],
        target: FileTarget,
        install: InstallSettings,
        requires: Sequence[tuple[str | None, str, str]] = (),
    ) -> IndexFacts:
        """``facts`` with the pages of ``wanted`` ((index, project); None: the default index, as
        ``install`` names it) added, from the cache or the index, and what the metadata files
        of ``requires`` ((index, project, version), on pages read) require of the target; a
        note for what could not be read."""
        pages = []
        notes: list[str] = []
        for index, project in wanted:
            url = install.index_url if index is None else index
            if _shown(url) in self._failed or self._expired:
                continue
            try:
                files = self._files(url, project)
            except ColabenvError as error:
                notes.append(self._failure(url, error))
                continue
            pages.append(page_of(index, project, files, target))
        found = []
        for index, project, version in requires:
            url = install.index_url if index is None else index
            if _shown(url) in self._failed or self._expired:
                continue
            try:
                texts = self._requires(url, project, version, target)
            except ColabenvError as error:
                notes.append(self._failure(url, error))
                continue
            if texts is not None:
                name, key = canonicalize_name(project), version_key(version)
                found.append(IndexRequires(index, name, key, applying(texts, target)))
        return IndexFacts(
            target.shown,
            (*facts.pages, *pages),
            tuple(dict.fromkeys((*facts.notes, *notes))),
            (*facts.requires, *found),
        )

    def _failure(self, url: str | None, error: ColabenvError) -> str:
        """The note for an index that failed (remembered when it could not be reached)."""
        self._failed.add(_shown(url))
        redact = self._redactors.get(_shown(url))
        message = error.message.replace(" (--http-deadline)", "")
        message = redact(message) if redact is not None else message
        if isinstance(error, IndexUnreachableError):
            keep(CACHE_KIND, _unreachable_key(url), {"message": message}, self.environ)
        return printable(message)

    def _check_remembered(self, url: str | None) -> None:
        """Raises the failure of an index remembered as unreachable (within
        :data:`UNREACHABLE_LIFETIME_S`)."""
        kept = recent(CACHE_KIND, _unreachable_key(url), UNREACHABLE_LIFETIME_S, self.environ)
        message = None if kept is None else kept.get("message")
        if isinstance(message, str):
            raise _Remembered(
                f"{message} (found by a check in the last {UNREACHABLE_LIFETIME_S:g} s; not asked again)"
            )

    def _left(self, what: str) -> float:
        """The seconds left of the deadline (which starts now if it has not)."""
        if self._started is None:
            self._started = time.monotonic()
            return self.deadline_s
        left = self._started + self.deadline_s - time.monotonic()
        if left <= 0:
            self._expired = True
            raise ColabenvError(
                f"the check's deadline of {self.deadline_s:g} s passed before {what} was read"
            )
        return left

    def _files(self, url: str | None, project: str) -> list[File] | None:
        """The page's files (None: no such project), kept for :meth:`_requires`."""
        shown = _shown(url)
        name = canonicalize_name(project)
        key = f"{shown}\n{name}\n{_PAGE_FORM}"
        kept = _kept_page(recent(CACHE_KIND, key, self.lifetime_s, self.environ))
        if kept is not None:
            files = kept[1] if kept[0] else None
        else:
            self._check_remembered(url)
            client = self._client(url, self._left(project))
            found = self._page(client, url, project)
            files = page_files(found, project, self._redactors[shown]) if found is not None else None
            keep(CACHE_KIND, key, {"found": files is not None, "files": files or []}, self.environ)
        self._pages[(shown, name)] = files
        return files

    def _page(self, client: SimpleClient, url: str | None, project: str) -> Sequence[IndexFile] | None:
        """The files of ``project``'s page on the index ``url``; of a find-links page
        (``find-links:URL``), the files it links to, read once per check (the same page serves
        every project on it)."""
        if url is None or not url.startswith(FIND_LINKS_PREFIX):
            return client.project_files(url or _default_index(), project)
        page = url.removeprefix(FIND_LINKS_PREFIX)
        if page not in self._flat:
            self._flat[page] = client.page_files_if_any(page)
        return self._flat[page]

    def _requires(
        self, url: str | None, project: str, version: str, target: FileTarget
    ) -> tuple[str, ...] | None:
        """The Requires-Dist of the metadata file of the wheel of ``project`` ``version`` the
        target installs, from the cache or the index; None where its page (read in this check)
        offers none, or the file is not core metadata."""
        shown = _shown(url)
        files = self._pages.get((shown, canonicalize_name(project)))
        wheel = metadata_url(files, version, target) if files else None
        if wheel is None:
            return None
        key = f"{shown}\n{wheel}\nmetadata"
        kept = recent(CACHE_KIND, key, self.lifetime_s, self.environ)
        if kept is not None and isinstance(kept.get("requires"), list):
            return tuple(str(text) for text in kept["requires"]) if kept.get("found") else None
        client = self._client(url, self._left(f"the metadata of {project} {version}"))
        try:
            data = client.file_bytes(
                url or _default_index(),
                with_credentials(wheel, (url,) if url else (), self.environ) + ".metadata",
                max_bytes=MAX_METADATA_BYTES,
            )
        except IndexUnreachableError:
            raise
        except IndexUnavailableError:
            data = None  # answered, but not with a file to read: it says nothing
        texts = requires_dist(data) if data is not None else None
        keep(CACHE_KIND, key, {"found": texts is not None, "requires": list(texts or ())}, self.environ)
        return texts

    def _client(self, url: str | None, left: float) -> SimpleClient:
        from colabenv.index.client import SimpleClient
        from colabenv.index.urls import Redactor

        shown = _shown(url)
        client = self._clients.get(shown)
        if client is None:
            redact = Redactor.for_urls([url.removeprefix(FIND_LINKS_PREFIX)] if url else [], self.environ)
            self._redactors[shown] = redact
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


def _kept_page(kept: Mapping[str, Any] | None) -> tuple[bool, list[File]] | None:
    """A kept page back from the cache: whether the project was found, and its files; None
    for no entry (or one not of this form)."""
    if kept is None or not isinstance(kept.get("files"), list):
        return None
    try:
        return bool(kept.get("found")), [_file(item) for item in kept["files"]]
    except (TypeError, ValueError):
        return None


def _file(item: Sequence[Any]) -> File:
    """A kept file back from the cache."""
    kind, version, tags, requires, url, yanked = item
    reason = None if yanked is None else str(yanked)
    return (str(kind), str(version), tuple(str(t) for t in tags), str(requires), str(url), reason)
