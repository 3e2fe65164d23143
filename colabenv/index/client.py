"""What ``colabenv lock`` and ``catalog refresh`` ask of package indexes themselves: project
pages (PEP 691 JSON, else PEP 503 HTML). Their URLs are expanded by :mod:`colabenv.index.urls`.

An index is input colabenv does not control. Every request has one deadline for the whole
exchange (connect, headers, body: an index that drips a byte a second ends there, not never),
every body is bounded, and every page is checked for its shape before a value is used; what is
wrong is one :class:`~colabenv.errors.IndexUnavailableError` (exit 4) naming the URL in its
unexpanded form, never a traceback.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser
from typing import TYPE_CHECKING
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from packaging.utils import canonicalize_name

from colabenv._util.bounds import MAX_FILE_BYTES, file_size
from colabenv.errors import IndexUnavailableError, IndexUnreachableError, UsageError, printable
from colabenv.index.urls import expand_url, strip_credentials
from colabenv.models.frozen import model

if TYPE_CHECKING:
    import requests

HTTP_DEADLINE_S = 60.0
"""The default bound on one whole request (``--http-deadline``, ``COLABENV_HTTP_DEADLINE``)."""
MAX_HTTP_DEADLINE_S = 3600.0
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0
MAX_PAGE_BYTES = 64 * 1024 * 1024
"""A project page larger than this is refused: the largest real ones are a few MiB."""
MAX_PAGE_FILES = 200_000
"""A project page listing more files than this is refused: the largest real ones list tens of
thousands (nightly builds)."""
SIMPLE_ACCEPT = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
)
MAX_YANKED_REASON = 300
"""A yanked file's reason (PEP 592) is kept to this many characters."""
_CHUNK = 64 * 1024
_SHA256_RE = re.compile(r"^[0-9a-fA-F]{64}$")


# ---------------------------------------------------------------------------------------------
# Project pages (PEP 691 JSON, else PEP 503 HTML)


@model
class IndexFile:
    """One file of a project page. ``metadata``: the page offers its PEP 658 metadata file
    (``<url>.metadata``); ``requires_python``: the page's Requires-Python for it; ``size`` and
    ``upload_time``: what a PEP 691 JSON page says of it (PEP 700), None where it says nothing;
    ``yanked``: None where the page does not mark it yanked (PEP 592), else the reason it gives
    ("" for none; cut at :data:`MAX_YANKED_REASON` characters, raw: shown through ``printable``)."""

    filename: str
    url: str
    sha256: str | None
    metadata: bool = False
    requires_python: str | None = None
    size: int | None = None
    upload_time: datetime | None = None
    yanked: str | None = None


class ProjectPageError(ValueError):
    """A project page that is not what the simple API promises (the reason, no URL)."""


class _LinkParser(HTMLParser):
    """The links of a page; past MAX_PAGE_FILES, :class:`ProjectPageError` (parsing stops)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self.attributes: list[dict[str, str | None]] = []
        self._href: str | None = None
        self._attrs: dict[str, str | None] = {}
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._attrs = dict(attrs)
            self._href = self._attrs.get("href")
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            if len(self.links) >= MAX_PAGE_FILES:
                raise ProjectPageError(f"more than {MAX_PAGE_FILES} links")
            self.links.append((self._href, "".join(self._text).strip()))
            self.attributes.append(self._attrs)
            self._href = None


def parse_project_page(body: bytes, content_type: str, page_url: str) -> tuple[IndexFile, ...]:
    """The files of a project page; :class:`ProjectPageError` for one of the wrong shape."""
    if "json" in content_type:
        return _json_files(body, page_url)
    return _html_files(body, page_url)


def _refuse_constant(name: str) -> object:
    raise ProjectPageError(f"{name} is not a JSON value")


def _json_files(body: bytes, page_url: str) -> tuple[IndexFile, ...]:
    try:
        document = json.loads(body, parse_constant=_refuse_constant)
    except RecursionError:
        raise ProjectPageError("JSON nested too deeply") from None
    except ValueError as error:
        if isinstance(error, ProjectPageError):
            raise
        raise ProjectPageError("not JSON") from None
    if not isinstance(document, dict):
        raise ProjectPageError(f"a JSON {type(document).__name__}, not an object")
    entries = document.get("files")
    if not isinstance(entries, list):
        raise ProjectPageError("files: expected a list")
    if len(entries) > MAX_PAGE_FILES:
        raise ProjectPageError(f"files: more than {MAX_PAGE_FILES}")
    files = []
    for position, entry in enumerate(entries):
        where = f"files[{position}]"
        if not isinstance(entry, dict):
            raise ProjectPageError(f"{where}: expected an object")
        filename, url, hashes = entry.get("filename"), entry.get("url"), entry.get("hashes", {})
        if not isinstance(filename, str) or not filename:
            raise ProjectPageError(f"{where}.filename: expected a string")
        if not isinstance(url, str):
            raise ProjectPageError(f"{where}.url: expected a string")
        if not isinstance(hashes, dict) or not all(isinstance(v, str) for v in hashes.values()):
            raise ProjectPageError(f"{where}.hashes: expected an object of strings")
        metadata = entry.get("core-metadata", entry.get("dist-info-metadata", False))
        requires = entry.get("requires-python")
        named = f"{where} ({printable(filename[:200])})"
        files.append(
            IndexFile(
                filename,
                _join(page_url, url, where),
                _sha256(hashes.get("sha256")),
                bool(metadata),
                requires if isinstance(requires, str) else None,
                *_size_and_time(entry, named),
                yanked=_json_yanked(entry.get("yanked"), named),
            )
        )
    return tuple(files)


def _json_yanked(value: object, where: str) -> str | None:
    """A JSON page entry's ``yanked`` (PEP 691): absent, null or false: None; true: ""; a
    string: the reason ("" read as yanked with none given, as uv reads it); anything else is
    :class:`ProjectPageError`."""
    if value is None or value is False:
        return None
    if value is True:
        return ""
    if isinstance(value, str):
        return value[:MAX_YANKED_REASON]
    raise ProjectPageError(
        f"{where}.yanked: expected true, false or a reason (a string), got {printable(str(value)[:40])}"
    )


_UPLOAD_TIME_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(Z|[+-]\d{2}:\d{2})$"
)


def _size_and_time(entry: Mapping[str, object], where: str) -> tuple[int | None, datetime | None]:
    """A JSON page entry's PEP 700 ``size`` and ``upload-time`` (each None when absent);
    :class:`ProjectPageError` for one of the wrong shape."""
    size = entry.get("size")
    if size is not None and file_size(size) is None:
        raise ProjectPageError(
            f"{where}.size: expected a whole number of bytes from 0 to {MAX_FILE_BYTES}, "
            f"got {printable(str(size)[:40])}"
        )
    written = entry.get("upload-time")
    uploaded = None if written is None else upload_time(written)
    if written is not None and uploaded is None:
        raise ProjectPageError(
            f"{where}.upload-time: expected an ISO 8601 time (yyyy-mm-ddThh:mm:ss.ffffffZ), "
            f"got {printable(str(written)[:60])}"
        )
    return file_size(size), uploaded


def upload_time(value: object) -> datetime | None:
    """A PEP 700 ``upload-time`` string as an aware datetime, None when it is not one."""
    match = _UPLOAD_TIME_RE.match(value) if isinstance(value, str) and len(value) <= 40 else None
    if match is None:
        return None
    *fields, fraction, offset = match.groups()
    try:
        zone = timezone.utc
        if offset != "Z":
            hours, minutes = int(offset[1:3]), int(offset[4:6])
            sign = -1 if offset[0] == "-" else 1
            zone = timezone(sign * timedelta(hours=hours, minutes=minutes))
        micro = int((fraction or "0").ljust(6, "0"))
        year, month, day, hour, minute, second = (int(f) for f in fields)
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=zone)
    except ValueError:
        return None


def _html_files(body: bytes, page_url: str) -> tuple[IndexFile, ...]:
    parser = _LinkParser()
    try:
        parser.feed(body.decode("utf-8", "replace"))
        parser.close()
    except ProjectPageError:
        raise
    except (ValueError, AssertionError, RecursionError):
        raise ProjectPageError("HTML that cannot be read") from None
    found = []
    for position, ((href, text), attrs) in enumerate(zip(parser.links, parser.attributes, strict=True)):
        url = _join(page_url, href, f"link {position + 1}")
        parts = urlsplit(url)
        digest = None
        if parts.fragment.startswith("sha256="):
            digest = _sha256(parts.fragment.partition("=")[2])
        filename = unquote(parts.path.rsplit("/", 1)[-1]) or text
        offered = attrs.get("data-core-metadata", attrs.get("data-dist-info-metadata"))
        metadata = "data-core-metadata" in attrs or "data-dist-info-metadata" in attrs
        if offered is not None and offered.strip().lower() == "false":
            metadata = False
        yanked = (attrs.get("data-yanked") or "") if "data-yanked" in attrs else None
        found.append(
            IndexFile(
                filename,
                urlunsplit(parts._replace(fragment="")),
                digest,
                metadata,
                attrs.get("data-requires-python"),
                yanked=None if yanked is None else yanked[:MAX_YANKED_REASON],
            )
        )
    return tuple(found)


def _join(page_url: str, url: str, where: str) -> str:
    try:
        joined = urljoin(page_url, url)
        urlsplit(joined).port  # noqa: B018  (a port out of range raises here)
    except ValueError:
        raise ProjectPageError(f"{where}: {printable(url[:200])!s} is not a URL") from None
    return joined


def _sha256(value: object) -> str | None:
    if isinstance(value, str) and _SHA256_RE.match(value):
        return value.lower()
    return None


# ---------------------------------------------------------------------------------------------
# The client


@model
class _Answer:
    status: int
    content_type: str
    body: bytes
    url: str


def check_deadline(seconds: float, where: str) -> float:
    """A deadline read from ``where`` (a flag or variable), finite and in (0, 3600] s."""
    if not math.isfinite(seconds) or not 0 < seconds <= MAX_HTTP_DEADLINE_S:
        raise UsageError(
            f"{where}: expected seconds between 0 and {MAX_HTTP_DEADLINE_S:g}, got {printable(seconds)}"
        )
    return seconds


class SimpleClient:
    """GETs project pages with one ``requests`` session; failures become exit-4 errors.

    Each request runs in a worker thread that the caller waits for at most ``deadline_s``: the
    socket timeouts of ``requests`` bound each read, not the exchange. A request past its
    deadline is abandoned (the thread is a daemon) and the client refuses further use.
    """

    def __init__(
        self,
        environ: Mapping[str, str],
        redact: Callable[[str], str],
        *,
        deadline_s: float = HTTP_DEADLINE_S,
    ) -> None:
        import requests

        from colabenv._version import __version__

        self._requests = requests
        self._environ = environ
        self._redact = redact
        self.deadline_s = deadline_s
        self._abandoned = False
        self.session: requests.Session = requests.Session()
        self.session.headers["User-Agent"] = f"colabenv/{__version__}"
        self.session.trust_env = True

    def project_files(self, index: str, project: str) -> tuple[IndexFile, ...] | None:
        """The files of ``project`` on ``index``, or None when the index does not have it."""
        shown = f"{index.rstrip('/')}/{canonicalize_name(project)}/"
        page = f"{expand_url(index, self._environ).rstrip('/')}/{canonicalize_name(project)}/"
        answer = self._exchange(index, shown, "GET", page)
        if answer.status == 404:
            return None
        self._check_status(index, answer.status, f" for {canonicalize_name(project)}")
        try:
            return parse_project_page(answer.body, answer.content_type, answer.url)
        except ProjectPageError as problem:
            kind = "691" if "json" in answer.content_type else "503"
            raise IndexUnavailableError(
                f"index at {printable(shown)} answered something that is not a PEP {kind} "
                f"project page ({self._redact(printable(problem))})"
            ) from None

    def page_files(self, page: str) -> tuple[IndexFile, ...]:
        """The files a find-links page links to (HTML, or PEP 691 JSON)."""
        files = self._page_files(page, absent_ok=False)
        assert files is not None
        return files

    def page_files_if_any(self, page: str) -> tuple[IndexFile, ...] | None:
        """As :meth:`page_files`, or None where the server has no such page (a 404)."""
        return self._page_files(page, absent_ok=True)

    def _page_files(self, page: str, *, absent_ok: bool) -> tuple[IndexFile, ...] | None:
        shown = strip_credentials(page)
        answer = self._exchange(page, shown, "GET", expand_url(page, self._environ))
        if absent_ok and answer.status == 404:
            return None
        self._check_status(page, answer.status, "")
        try:
            return parse_project_page(answer.body, answer.content_type, answer.url)
        except ProjectPageError as problem:
            raise IndexUnavailableError(
                f"find-links page {printable(shown)} answered something that is not a page of "
                f"links ({self._redact(printable(problem))})"
            ) from None

    def file_bytes(self, index: str, url: str, *, max_bytes: int = MAX_PAGE_BYTES) -> bytes | None:
        """A small file named by a page of ``index`` (a PEP 658 ``.metadata`` file), bounded
        like a page (or by ``max_bytes``); None when the server has no such file."""
        shown = strip_credentials(url)
        answer = self._exchange(index, shown, "GET", url, max_bytes)
        if answer.status == 404:
            return None
        self._check_status(index, answer.status, f" for {printable(shown)}")
        return answer.body

    def reachable(self, index: str) -> None:
        """The index answers (a 404 or 405 to HEAD on its root is an answer)."""
        url = expand_url(index, self._environ).rstrip("/") + "/"
        answer = self._exchange(index, index.rstrip("/") + "/", "HEAD", url)
        if answer.status in (401, 403, 429) or answer.status >= 500:
            self._check_status(index, answer.status, "")

    def _exchange(
        self, index: str, shown: str, method: str, url: str, max_bytes: int = MAX_PAGE_BYTES
    ) -> _Answer:
        if self._abandoned:
            raise IndexUnavailableError(
                f"index {printable(index)}: an earlier request to an index did not finish"
            )
        outcome: list[_Answer | BaseException] = []
        worker = threading.Thread(
            target=self._run, args=(method, url, outcome, max_bytes), name="colabenv-http", daemon=True
        )
        started = time.monotonic()
        worker.start()
        worker.join(self.deadline_s)
        timed_out = bool(outcome) and isinstance(outcome[0], self._requests.exceptions.Timeout)
        if worker.is_alive() or not outcome or (timed_out and time.monotonic() - started >= self.deadline_s):
            # a socket timeout (set to the deadline when it is shorter) that fired as the wait
            # ended is the deadline too: one message, whichever thread was first
            self._abandoned = True
            raise IndexUnreachableError(
                f"index {printable(index)}: no complete answer from {printable(shown)} within "
                f"{self.deadline_s:g} s (--http-deadline)"
            )
        result = outcome[0]
        if isinstance(result, _TooLarge):
            what = "one page" if max_bytes == MAX_PAGE_BYTES else "one file"
            raise IndexUnavailableError(
                f"index at {printable(shown)} answered more than {_in_mib(max_bytes)} MiB for {what}; refused"
            ) from None
        if isinstance(result, BaseException):
            why, unreachable = self._why(result, started)
            error = IndexUnreachableError if unreachable else IndexUnavailableError
            raise error(f"index {printable(index)}: {why}")
        return result

    def _run(self, method: str, url: str, outcome: list[_Answer | BaseException], max_bytes: int) -> None:
        timeout = (min(CONNECT_TIMEOUT_S, self.deadline_s), min(READ_TIMEOUT_S, self.deadline_s))
        try:
            with self.session.request(
                method,
                url,
                headers={"Accept": SIMPLE_ACCEPT},
                timeout=timeout,
                stream=True,
                allow_redirects=True,
            ) as response:
                body = b""
                if method == "GET" and response.status_code == 200:
                    body = _bounded_body(response, max_bytes)
                outcome.append(
                    _Answer(
                        response.status_code,
                        str(response.headers.get("Content-Type", "")),
                        body,
                        str(response.url),
                    )
                )
        except BaseException as error:  # handed to the waiting thread, which decides
            outcome.append(error)

    def _check_status(self, index: str, status: int, what: str) -> None:
        shown = printable(index)
        if status in (401, 403):
            raise IndexUnavailableError(
                f"index {shown}: refused access{what} (HTTP {status}); check its credentials"
            )
        if status >= 400:
            raise IndexUnavailableError(f"index {shown}: answered HTTP {status}{what}")

    def _why(self, exc: BaseException, started: float) -> tuple[str, bool]:
        """Why a request failed, and whether the index gave no answer at all (unreachable)."""
        requests = self._requests
        text = str(exc)
        if isinstance(exc, requests.exceptions.SSLError):
            return "TLS error (certificate or protocol)", False
        if isinstance(exc, requests.exceptions.Timeout):
            return f"no answer within {time.monotonic() - started:.0f} s", True
        if "Connection refused" in text:
            return "unreachable (connection refused)", True
        if (
            "Name or service not known" in text
            or "NameResolutionError" in text
            or "nodename nor servname" in text
        ):
            return "unreachable (host name not found)", True
        if isinstance(exc, requests.exceptions.ConnectionError):
            return "unreachable (the connection failed)", True
        return self._redact(f"request failed: {type(exc).__name__}"), False


class _TooLarge(Exception):
    pass


def _in_mib(size: int) -> str:
    return f"{size / (1 << 20):g}"


def _bounded_body(response: requests.Response, max_bytes: int = MAX_PAGE_BYTES) -> bytes:
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and len(declared) < 20 and int(declared) > max_bytes:
        raise _TooLarge()
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_content(_CHUNK):
        size += len(chunk)
        if size > max_bytes:
            raise _TooLarge()
        chunks.append(chunk)
    return b"".join(chunks)
