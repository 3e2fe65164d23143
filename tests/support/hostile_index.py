"""A package index on 127.0.0.1 that answers every project page with something hostile.

``mode`` chooses what: ``endless`` (a PEP 691 JSON page that never ends, written as fast as the
client reads), ``stall`` (a page that announces gigabytes in its Content-Length, sends a few
bytes and then nothing), ``slow`` (an answer that starts after a long pause), ``malformed``
(PEP 691 JSON cut short), ``nan`` (JSON with ``NaN`` in it), ``links`` (a PEP 503 page of a
million links), ``releases`` (a PEP 691 page listing :data:`MANY_RELEASES` releases, each wheel
with its PEP 658 metadata, answered after :data:`METADATA_DELAY_S` and counted in
``metadata_requests``). The index root answers 200 to HEAD and GET, so a reachability check passes.
"""

from __future__ import annotations

import http.server
import json
import threading
from types import TracebackType

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
MODES = ("endless", "stall", "slow", "malformed", "nan", "links", "releases")
MANY_RELEASES = 2000
METADATA_DELAY_S = 0.025
"""How long ``releases`` takes to answer each metadata file (a remote index's round trip)."""
STALL_DECLARED_BYTES = 8 << 30
MILLION = 1_000_000


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class HostileIndex:
    """``with HostileIndex("endless") as index: index.url`` (the ``/simple/`` index)."""

    def __init__(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode is one of {', '.join(MODES)}")
        self.mode = mode
        self.requests: list[str] = []
        self.metadata_requests: list[str] = []
        self._stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/simple/"

    def __enter__(self) -> HostileIndex:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: object) -> None:
                return

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                index.requests.append(self.path)
                if self.path.rstrip("/") == "/simple":
                    body = b"<html><body></body></html>"
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                try:
                    getattr(self, f"_{index.mode}")()
                except OSError:
                    return

            def _start(self, content_type: str, length: int | None = None) -> None:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                if length is not None:
                    self.send_header("Content-Length", str(length))
                self.end_headers()

            def _endless(self) -> None:
                self._start(JSON_TYPE)
                self.wfile.write(b'{"meta": {"api-version": "1.0"}, "name": "x", "files": [')
                entry = (
                    b'{"filename": "x-1.0-py3-none-any.whl", "url": "x-1.0-py3-none-any.whl", "hashes": {}}, '
                ) * 1000
                while not index._stopping.is_set():
                    self.wfile.write(entry)

            def _stall(self) -> None:
                self._start(JSON_TYPE, STALL_DECLARED_BYTES)
                self.wfile.write(b'{"meta": {"api-version": "1.0"}, ')
                self.wfile.flush()
                index._stopping.wait()

            def _slow(self) -> None:
                index._stopping.wait(600)

            def _malformed(self) -> None:
                body = b'{"meta": {"api-version": "1.0"}, "name": "x", "files": [{"filename": '
                self._start(JSON_TYPE, len(body))
                self.wfile.write(body)

            def _nan(self) -> None:
                body = (
                    b'{"meta": {"api-version": "1.0"}, "name": "x", "files": [{"filename": '
                    b'"x-1.0-py3-none-any.whl", "url": "x-1.0-py3-none-any.whl", "hashes": {}, '
                    b'"size": NaN}]}'
                )
                self._start(JSON_TYPE, len(body))
                self.wfile.write(body)

            def _links(self) -> None:
                name = self.path.rstrip("/").rsplit("/", 1)[-1].encode()
                self._start("text/html")
                self.wfile.write(b"<html><body>\n")
                for block in range(MILLION // 1000):
                    self.wfile.write(
                        b"".join(
                            b'<a href="/files/%s-0.%d.%d.tar.gz">x</a>\n' % (name, block, n)
                            for n in range(1000)
                        )
                    )
                self.wfile.write(b"</body></html>\n")

            def _releases(self) -> None:
                name = self.path.rstrip("/").rsplit("/", 1)[-1]
                if name.endswith(".metadata"):
                    index.metadata_requests.append(name)
                    index._stopping.wait(METADATA_DELAY_S)
                    version = name.split("-")[1]
                    body = f"Metadata-Version: 2.1\nName: x\nVersion: {version}\n\n".encode()
                    self._start("application/octet-stream", len(body))
                    self.wfile.write(body)
                    return
                files = [
                    {
                        "filename": f"{name}-10.{n}.0-py3-none-any.whl",
                        "url": f"/files/{name}-10.{n}.0-py3-none-any.whl",
                        "hashes": {"sha256": "0" * 64},
                        "core-metadata": True,
                    }
                    for n in range(MANY_RELEASES)
                ]
                page = {"meta": {"api-version": "1.0"}, "name": name, "files": files}
                body = json.dumps(page).encode()
                self._start(JSON_TYPE, len(body))
                self.wfile.write(body)

        return Handler
