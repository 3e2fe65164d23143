"""A throttling HTTP proxy on 127.0.0.1 in front of a :class:`~tests.support.index.LocalIndex`:
every answer is relayed at a bounded rate (bytes per second, shared by all connections, the
way one notebook's link is), and the index's own address in its pages is rewritten to the
proxy's, so files are fetched through it too. For the wheelhouse tests and benchmark."""

from __future__ import annotations

import http.client
import http.server
import threading
import time
import urllib.error
import urllib.request
from types import TracebackType


class Bucket:
    """A token bucket of ``rate`` bytes per second, shared by every connection."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.lock = threading.Lock()
        self.next_free = time.monotonic()

    def take(self, count: int) -> None:
        with self.lock:
            now = time.monotonic()
            start = max(now, self.next_free)
            self.next_free = start + count / self.rate
            wait = self.next_free - now
        if wait > 0:
            time.sleep(wait)


class ThrottledProxy:
    """``ThrottledProxy(upstream_base, rate).start()``; ``.base_url`` replaces ``upstream_base``."""

    def __init__(
        self,
        upstream_base: str,
        rate_bytes_s: float,
        *,
        chunk: int = 16 * 1024,
        bucket: Bucket | None = None,
        hold_files: bool = False,
    ) -> None:
        """``bucket``: a rate shared with other proxies (one link to two indexes).
        ``hold_files``: a file's body waits for :attr:`release` once its headers are sent, so a
        test can act while a download is surely under way (:attr:`serving` says one started)."""
        self.upstream = upstream_base.rstrip("/")
        self.bucket = bucket or Bucket(rate_bytes_s)
        self.chunk = chunk
        self.serving = threading.Event()
        self.release = threading.Event()
        if not hold_files:
            self.release.set()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> ThrottledProxy:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> ThrottledProxy:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_HEAD(self) -> None:
                with _upstream(urllib.request.Request(proxy.upstream + self.path, method="HEAD")) as answer:
                    kind = answer.headers.get("Content-Type", "application/octet-stream")
                    extra = {k: answer.headers[k] for k in ("Accept-Ranges",) if answer.headers.get(k)}
                    self._head(answer.status, kind, int(answer.headers.get("Content-Length", "0")), extra)

            def do_GET(self) -> None:
                headers = {"Accept": self.headers.get("Accept", "*/*")}
                if self.headers.get("Range"):
                    headers["Range"] = self.headers["Range"]
                with _upstream(urllib.request.Request(proxy.upstream + self.path, headers=headers)) as answer:
                    kind = answer.headers.get("Content-Type", "application/octet-stream")
                    if self.path.startswith("/files/"):
                        length = int(answer.headers.get("Content-Length", "0"))
                        extra = {
                            k: answer.headers[k]
                            for k in ("Content-Range", "Accept-Ranges")
                            if answer.headers.get(k)
                        }
                        self._head(answer.status, kind, length, extra)
                        proxy.serving.set()
                        proxy.release.wait(timeout=120)
                        for piece in iter(lambda: answer.read(proxy.chunk), b""):
                            proxy.bucket.take(len(piece))
                            if not self._send(piece):
                                return
                        return
                    body = answer.read().replace(proxy.upstream.encode(), proxy.base_url.encode())
                self._head(answer.status, kind, len(body))
                for start in range(0, len(body), proxy.chunk):
                    piece = body[start : start + proxy.chunk]
                    proxy.bucket.take(len(piece))
                    if not self._send(piece):
                        return

            def _head(self, status: int, kind: str, length: int, extra: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(length))
                for name, value in (extra or {}).items():
                    self.send_header(name, value)
                self.end_headers()

            def _send(self, piece: bytes) -> bool:
                try:
                    self.wfile.write(piece)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True
                    return False
                return True

            def log_message(self, format: str, *args: object) -> None:
                return

        return Handler


def _upstream(request: urllib.request.Request) -> http.client.HTTPResponse | urllib.error.HTTPError:
    """The upstream's answer to ``request``, an HTTP error status passed on as an answer (its
    status, headers and body) like any other."""
    try:
        return urllib.request.urlopen(request, timeout=60)
    except urllib.error.HTTPError as error:
        return error
