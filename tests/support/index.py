"""A package index on 127.0.0.1 serving a directory of wheels, for installs and locks in tests.

Layout: ``/simple/`` is the index of every wheel under ``root``; ``/<sub>/`` (any folder
``root/<sub>``, e.g. ``/cu124/``) is the index of the wheels under that folder, the way the
PyTorch index serves one index per variant. Project pages answer PEP 503 HTML, or PEP 691 JSON
when the client asks for ``application/vnd.pypi.simple.v1+json`` (with each file's PEP 700
``size`` and ``upload-time``, the file's mtime). Files live under ``/files/``;
each has its PEP 658 metadata beside it (``<file>.metadata``). ``/flat-links/<sub>/`` is one
flat find-links page of the wheels under ``root/<sub>`` (as AMD's ROCm pages are). Wheels are
hashed and served in pieces straight from disk, so wheels of real size (a torch wheel is
~0.8 GB) cost no memory.
"""

from __future__ import annotations

import hashlib
import html
import http.server
import json
import os
import threading
import time
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from urllib.parse import unquote, urlsplit

from packaging.utils import canonicalize_name

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_TYPE = "application/vnd.pypi.simple.v1+html"
FAULT_MODES = ("503", "close", "drip", "huge")
FLAT = "flat-links"
"""``/flat-links/<folder>/``: the flat find-links page of the wheels under that folder."""
HUGE_BYTES = 80 << 20
"""What ``mode="huge"`` answers: more than any client should read of one project page."""


@dataclass(frozen=True)
class _Wheel:
    path: Path
    relative: str
    project: str
    sha256: str
    requires_python: str | None
    metadata: bytes
    metadata_sha256: str
    size: int
    upload_time: str
    """The file's mtime in UTC, as PEP 700 writes an upload time."""


class _Catalog:
    """The wheels under ``root``, read once per file (keyed by path, size and mtime)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[tuple[str, int, int], _Wheel] = {}
        self._listings: dict[Path, tuple[tuple[tuple[str, int], ...], list[_Wheel]]] = {}
        self._lock = threading.Lock()

    def wheels(self, under: Path) -> list[_Wheel]:
        """The wheels under ``under``; the listing is reused while no folder under it changed
        (adding, removing or replacing a wheel changes its folder's mtime, adding a folder its
        parent's), which takes a stat of each known folder, not a walk of every file."""
        with self._lock:
            listed = self._listings.get(under)
        if listed is not None and self._unchanged(listed[0]):
            return listed[1]
        signature = self._signature(under)
        found = []
        for path in sorted(under.rglob("*.whl")):
            stat = path.stat()
            key = (str(path), stat.st_size, stat.st_mtime_ns)
            with self._lock:
                wheel = self._cache.get(key)
            if wheel is None:
                wheel = self._read(path)
                with self._lock:
                    self._cache[key] = wheel
            found.append(wheel)
        with self._lock:
            self._listings[under] = (signature, found)
        return found

    @staticmethod
    def _unchanged(signature: tuple[tuple[str, int], ...]) -> bool:
        try:
            return all(os.stat(folder).st_mtime_ns == mtime for folder, mtime in signature)
        except OSError:
            return False

    @staticmethod
    def _signature(under: Path) -> tuple[tuple[str, int], ...]:
        folders = []
        for directory, _, _ in os.walk(under):
            try:
                folders.append((directory, os.stat(directory).st_mtime_ns))
            except OSError:
                continue
        return tuple(folders)

    def _read(self, path: Path) -> _Wheel:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            while piece := handle.read(_READ_CHUNK):
                digest.update(piece)
        metadata = b""
        with zipfile.ZipFile(path) as archive:
            for name in archive.namelist():
                if name.count("/") == 1 and name.endswith(".dist-info/METADATA"):
                    metadata = archive.read(name)
                    break
        requires_python = None
        for line in metadata.decode("utf-8", "replace").splitlines():
            if not line.strip():
                break
            if line.startswith("Requires-Python:"):
                requires_python = line.partition(":")[2].strip()
        stat = path.stat()
        uploaded = datetime.fromtimestamp(stat.st_mtime, timezone.utc)
        return _Wheel(
            path=path,
            relative=path.relative_to(self.root).as_posix(),
            project=canonicalize_name(path.name.split("-", 1)[0]),
            sha256=digest.hexdigest(),
            requires_python=requires_python,
            metadata=metadata,
            metadata_sha256=hashlib.sha256(metadata).hexdigest(),
            size=stat.st_size,
            upload_time=uploaded.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        )


@dataclass(frozen=True)
class _FileSpan:
    """``length`` bytes of ``path`` from ``start``: a body streamed from disk, never read whole."""

    path: Path
    start: int
    length: int


_Answer = tuple[int, str, bytes | _FileSpan, dict[str, str]]
_READ_CHUNK = 4 << 20


def _parse_range(header: str, size: int) -> tuple[int, int] | None:
    """``bytes=a-b``, ``bytes=a-`` or ``bytes=-n`` as an inclusive span; None for no range."""
    if not header.startswith("bytes=") or "," in header:
        return None
    first, _, last = header.removeprefix("bytes=").strip().partition("-")
    try:
        if not first:
            length = int(last)
            return max(0, size - length), size - 1
        start = int(first)
        end = int(last) if last else size - 1
    except ValueError:
        return None
    return start, min(end, size - 1)


def _wants_json(accept: str) -> bool:
    best_json, best_html = -1.0, -1.0
    for part in accept.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for param in params:
            if param.startswith("q="):
                try:
                    q = float(param[2:])
                except ValueError:
                    q = 0.0
        if media == JSON_TYPE:
            best_json = max(best_json, q)
        elif media in (HTML_TYPE, "text/html", "*/*"):
            best_html = max(best_html, q)
    return best_json > 0 and best_json >= best_html


class _Server(http.server.ThreadingHTTPServer):
    # uv opens dozens of connections at once; the default backlog of 5 drops some, and each
    # dropped SYN costs the client a one-second retransmission
    request_queue_size = 256
    daemon_threads = True
    block_on_close = False


class LocalIndex:
    """A threaded HTTP server in a daemon thread; use as a context manager or start()/stop().

    ``url`` is the ``/simple/`` URL, ``base_url`` the server root (``sub_url("cu124")`` for a
    sub-folder index). ``metadata=False`` offers no PEP 658 metadata (as the PyTorch index long
    did), so a resolver must read the wheel itself; files answer HTTP range requests.
    ``requests`` lists every path asked for, ``authorizations`` and ``agents`` the
    ``Authorization`` and ``User-Agent`` header of each (empty when none was sent).
    ``fail_after(n)`` answers 503 once ``n`` more requests have been served; other modes:
    ``"close"`` closes the connection unanswered, ``"drip"`` starts a page and sends one byte
    every half second, forever, ``"huge"`` answers a JSON page of ``HUGE_BYTES`` spaces, and
    ``answer_with(body, content_type)`` serves that body as every page (files stay real);
    ``tell(filename, size=...)`` sets keys of one file's entry on JSON pages (a wrong size);
    ``yank(filename, reason)`` marks a file yanked on every page (PEP 592: ``data-yanked`` on
    HTML, ``"yanked": true`` or the reason on JSON, where every other file says
    ``"yanked": false``, as the package index's JSON pages do).
    ``stop()`` then ``start()`` serves again on the same port. ``latency_s``: seconds every
    answer waits before it starts (a real index's round trip, for benchmarks).
    """

    def __init__(self, root: Path, *, port: int = 0, metadata: bool = True) -> None:
        self.root = Path(root)
        self.port = port
        self.metadata = metadata
        self.requests: list[str] = []
        self.accepts: list[str] = []
        self.authorizations: list[str] = []
        self.agents: list[str] = []
        self._catalog = _Catalog(self.root)
        self._lock = threading.Lock()
        self._fail_at: int | None = None
        self._fail_mode = "503"
        self._garbage: tuple[bytes, str] | None = None
        self._told: dict[str, dict[str, object]] = {}
        self._yanked: dict[str, str] = {}
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.latency_s = 0.0

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> LocalIndex:
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", self.port), self._handler_class())
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name="local-index", kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server, self._thread = None, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    @property
    def running(self) -> bool:
        return self._server is not None

    def __enter__(self) -> LocalIndex:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- addresses --------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if not self.port:
            raise RuntimeError("the index has not been started")
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base_url}/simple/"

    def sub_url(self, folder: str) -> str:
        return f"{self.base_url}/{folder.strip('/')}/"

    def links_url(self, folder: str) -> str:
        """The flat find-links page of every wheel under ``root/<folder>``, not an index."""
        return f"{self.base_url}/{FLAT}/{folder.strip('/')}/"

    # -- faults -----------------------------------------------------------------------------

    def fail_after(self, n: int, *, mode: str = "503") -> None:
        """After ``n`` more requests, every request fails (``mode``: see the class)."""
        if mode not in FAULT_MODES:
            raise ValueError(f"mode is one of {', '.join(FAULT_MODES)}")
        with self._lock:
            self._fail_at = len(self.requests) + n
            self._fail_mode = mode

    def answer_with(self, body: bytes, content_type: str = JSON_TYPE) -> None:
        """Every page (not file) answers ``body`` with ``content_type`` from now on."""
        with self._lock:
            self._garbage = (body, content_type)

    def tell(self, filename: str, **keys: object) -> None:
        """The JSON page's entry of ``filename`` says ``keys`` from now on (``size=-1``;
        ``upload_time`` is the ``upload-time`` key), over what the file is."""
        with self._lock:
            told = self._told.setdefault(filename, {})
            told.update({key.replace("_", "-"): value for key, value in keys.items()})

    def yank(self, filename: str, reason: str = "") -> None:
        """``filename`` is yanked from now on, with ``reason`` ("": none given)."""
        with self._lock:
            self._yanked[filename] = reason

    def heal(self) -> None:
        with self._lock:
            self._fail_at = None
            self._garbage = None
            self._told.clear()
            self._yanked.clear()

    def reset_requests(self) -> None:
        with self._lock:
            self.requests.clear()
            self.accepts.clear()
            self.authorizations.clear()
            self.agents.clear()

    def project_requests(self, project: str) -> list[str]:
        wanted = canonicalize_name(project)
        return [p for p in self.requests if p.rstrip("/").rsplit("/", 1)[-1] == wanted]

    # -- serving ----------------------------------------------------------------------------

    def _record(self, path: str, accept: str, authorization: str, agent: str) -> str | None:
        """Count the request; return the failure mode when this one must fail."""
        with self._lock:
            self.requests.append(path)
            self.accepts.append(accept)
            self.authorizations.append(authorization)
            self.agents.append(agent)
            if self._fail_at is not None and len(self.requests) > self._fail_at:
                return self._fail_mode
            if self._garbage is not None and not path.startswith("/files/"):
                return "garbage"
        return None

    def _index_dir(self, prefix: str) -> Path | None:
        if prefix == "simple":
            return self.root
        if not (self.root / prefix).is_dir():
            return None
        candidate = (self.root / prefix).resolve()
        root = self.root.resolve()
        if candidate != root and root not in candidate.parents:
            return None
        return candidate if candidate.is_dir() else None

    def _route(self, raw_path: str, accept: str, byte_range: str = "") -> _Answer:
        path = unquote(urlsplit(raw_path).path)
        if path.startswith("/files/"):
            return self._file(path.removeprefix("/files/"), byte_range)
        parts = [p for p in path.split("/") if p]
        if not parts:
            return 404, "text/plain", b"not found\n", {}
        if parts[0] == FLAT and len(parts) > 1:
            directory = self._index_dir("/".join(parts[1:]))
            if directory is None:
                return 404, "text/plain", b"not found\n", {}
            return self._links_page(self._catalog.wheels(directory), "find-links page")
        # /<prefix...>/            -> root listing of that index
        # /<prefix...>/<project>/  -> project page
        directory = self._index_dir("/".join(parts))
        if directory is not None:
            return self._root_page(directory, accept)
        if len(parts) >= 2:
            directory = self._index_dir("/".join(parts[:-1]))
            if directory is not None:
                return self._project_page(directory, parts[-1], accept)
        return 404, "text/plain", b"not found\n", {}

    def _file(self, relative: str, byte_range: str) -> _Answer:
        metadata = relative.endswith(".whl.metadata")
        wheel_rel = relative.removesuffix(".metadata") if metadata else relative
        candidate = (self.root / wheel_rel).resolve()
        if self.root.resolve() not in candidate.parents or not candidate.is_file():
            return 404, "text/plain", b"not found\n", {}
        if metadata:
            if not self.metadata:
                return 404, "text/plain", b"not found\n", {}
            wheels = self._catalog.wheels(candidate.parent)
            found = next((w for w in wheels if w.path == candidate), None) or next(
                (w for w in wheels if w.path.resolve() == candidate), None
            )
            if found is None:
                return 404, "text/plain", b"not found\n", {}
            return 200, "application/octet-stream", found.metadata, {}
        size = candidate.stat().st_size
        headers = {"Accept-Ranges": "bytes"}
        span = _parse_range(byte_range, size)
        if span is None:
            return 200, "application/octet-stream", _FileSpan(candidate, 0, size), headers
        start, end = span
        if start >= size or start > end:
            return 416, "text/plain", b"", {"Content-Range": f"bytes */{size}"}
        headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        return 206, "application/octet-stream", _FileSpan(candidate, start, end - start + 1), headers

    def _root_page(self, directory: Path, accept: str) -> _Answer:
        projects = sorted({w.project for w in self._catalog.wheels(directory)})
        if _wants_json(accept):
            body = {"meta": {"api-version": "1.1"}, "projects": [{"name": name} for name in projects]}
            return 200, JSON_TYPE, json.dumps(body).encode(), {}
        links = "".join(f'<a href="{name}/">{name}</a>\n' for name in projects)
        page = f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n"
        return 200, "text/html", page.encode(), {}

    def _project_page(self, directory: Path, name: str, accept: str) -> _Answer:
        project = canonicalize_name(name)
        wheels = [w for w in self._catalog.wheels(directory) if w.project == project]
        if not wheels:
            return 404, "text/plain", b"not found\n", {}
        if _wants_json(accept):
            files = []
            for wheel in wheels:
                entry: dict[str, object] = {
                    "filename": wheel.path.name,
                    "url": f"{self.base_url}/files/{wheel.relative}",
                    "hashes": {"sha256": wheel.sha256},
                    "size": wheel.size,
                    "upload-time": wheel.upload_time,
                }
                if self.metadata:
                    entry["core-metadata"] = {"sha256": wheel.metadata_sha256}
                if wheel.requires_python:
                    entry["requires-python"] = wheel.requires_python
                reason = self._yanked.get(wheel.path.name)
                entry["yanked"] = False if reason is None else reason or True
                entry.update(self._told.get(wheel.path.name, {}))
                files.append(entry)
            body = {"meta": {"api-version": "1.1"}, "name": project, "files": files}
            return 200, JSON_TYPE, json.dumps(body).encode(), {}
        return self._links_page(wheels, f"Links for {project}")

    def _links_page(self, wheels: list[_Wheel], title: str) -> _Answer:
        links = []
        for wheel in wheels:
            attrs = ""
            if self.metadata:
                attrs += f' data-core-metadata="sha256={wheel.metadata_sha256}"'
                attrs += f' data-dist-info-metadata="sha256={wheel.metadata_sha256}"'
            if wheel.requires_python:
                attrs += f' data-requires-python="{html.escape(wheel.requires_python)}"'
            if wheel.path.name in self._yanked:
                attrs += f' data-yanked="{html.escape(self._yanked[wheel.path.name])}"'
            href = f"{self.base_url}/files/{wheel.relative}#sha256={wheel.sha256}"
            links.append(f'<a href="{html.escape(href)}"{attrs}>{wheel.path.name}</a><br/>\n')
        page = (
            f"<!DOCTYPE html>\n<html><head><title>{title}</title></head><body>\n"
            f"<h1>{title}</h1>\n{''.join(links)}</body></html>\n"
        )
        return 200, "text/html", page.encode(), {}

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer(send_body=True)

            def do_HEAD(self) -> None:
                self._answer(send_body=False)

            def _answer(self, *, send_body: bool) -> None:
                accept = self.headers.get("Accept", "")
                failure = index._record(
                    self.path,
                    accept,
                    self.headers.get("Authorization", ""),
                    self.headers.get("User-Agent", ""),
                )
                if index.latency_s:
                    time.sleep(index.latency_s)
                if failure == "close":
                    self.close_connection = True
                    return
                if failure in ("drip", "huge"):
                    self._hostile(failure, send_body)
                    return
                headers: dict[str, str] = {}
                body: bytes | _FileSpan
                if failure == "503":
                    status, ctype, body = 503, "text/plain", b"service unavailable\n"
                elif failure == "garbage" and index._garbage is not None:
                    status, (body, ctype) = 200, index._garbage
                else:
                    status, ctype, body, headers = index._route(
                        self.path, accept, self.headers.get("Range", "")
                    )
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                for name, value in headers.items():
                    self.send_header(name, value)
                length = body.length if isinstance(body, _FileSpan) else len(body)
                self.send_header("Content-Length", str(length))
                if not self.path.startswith("/files/"):
                    self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                if not send_body:
                    return
                try:
                    if isinstance(body, _FileSpan):
                        with body.path.open("rb") as handle:
                            self.connection.sendfile(handle, body.start, body.length)
                    else:
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            def _hostile(self, mode: str, send_body: bool) -> None:
                """A page that never ends (drip) or is far larger than any real one (huge)."""
                self.close_connection = True
                self.send_response(200)
                self.send_header("Content-Type", JSON_TYPE)
                size = HUGE_BYTES if mode == "huge" else 100_000
                self.send_header("Content-Length", str(size))
                self.end_headers()
                if not send_body:
                    return
                try:
                    if mode == "huge":
                        piece = b" " * (1 << 20)
                        for _ in range(size >> 20):
                            self.wfile.write(piece)
                        return
                    while index.running:
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        time.sleep(0.5)
                except OSError:
                    return

            def log_message(self, format: str, *args: object) -> None:
                return

        return Handler
