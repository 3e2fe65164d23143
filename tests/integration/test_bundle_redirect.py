"""``colabenv bundle`` following an index's redirects: the index's credentials go to its own host
and to no other, and a redirect to a scheme that is not http(s) is exit 4 naming the file, with
nothing kept. A real child process of ``colabenv bundle`` against real HTTP servers on
127.0.0.1 (the other host is the same server reached as ``localhost``: another host name)."""

from __future__ import annotations

import base64
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from colabenv.wheelhouse.plan import MANIFEST_NAME
from tests.support.locking import write_wheel_lock

WHEEL = "moved-1.0-py3-none-any.whl"
BODY = b"a wheel's bytes, " * 4096
USER, TOKEN = "reader", "s3cret-token"
BASIC = "Basic " + base64.b64encode(f"{USER}:{TOKEN}".encode()).decode()


class _Server:
    """``/files/WHEEL`` answers 302 to :attr:`location` (a template: ``{port}`` is this server's
    port); ``/store/WHEEL`` answers the wheel (``/bare/WHEEL`` too, with no Content-Length).
    Each request's path and Authorization header (``""`` when none) is recorded in :attr:`seen`."""

    def __init__(self) -> None:
        self.location = ""
        self.seen: list[tuple[str, str]] = []
        served = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                served.seen.append((self.path, self.headers.get("Authorization", "")))
                if self.path == f"/files/{WHEEL}":
                    self.send_response(302)
                    self.send_header("Location", served.location.format(port=served.port))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif self.path == f"/bare/{WHEEL}":  # no Content-Length: the bytes say the size
                    self.send_response(200)
                    self.end_headers()
                    self.wfile.write(BODY)
                elif self.path == f"/store/{WHEEL}":
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(BODY)))
                    self.end_headers()
                    self.wfile.write(BODY)
                else:
                    self.send_error(404)

            def log_message(self, *args: object) -> None:
                pass

        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.http.server_address[1])

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def server() -> Iterator[_Server]:
    served = _Server()
    yield served
    served.stop()


def _lock(tmp_path: Path, port: int) -> Path:
    """A lock whose index needs credentials (``${VAR}`` references) and whose wheel's URL is on
    the index's host, so bundle sends the index's credentials with it."""
    url = f"http://127.0.0.1:{port}/files/{WHEEL}"
    index = f"http://${{BUNDLE_USER}}:${{BUNDLE_TOKEN}}@127.0.0.1:{port}/simple"
    return write_wheel_lock(tmp_path / "pylock.toml", [("moved", WHEEL, BODY, url)], index)


def _bundle(lock: Path, folder: Path, home: Path) -> subprocess.CompletedProcess[str]:
    unwanted = ("COLABENV_", "NETRC")
    env = {k: v for k, v in os.environ.items() if not k.startswith(unwanted) and "proxy" not in k.lower()}
    # no proxy and no ~/.netrc of this machine's: requests reads both (trust_env)
    env.update(BUNDLE_USER=USER, BUNDLE_TOKEN=TOKEN, HOME=str(home), NETRC=str(home / "none"))
    return subprocess.run(
        [sys.executable, "-m", "colabenv", "bundle", str(lock), "-o", str(folder), "--quiet"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_a_redirect_to_another_host_carries_no_credentials(tmp_path: Path, server: _Server) -> None:
    server.location = f"http://localhost:{{port}}/store/{WHEEL}"
    folder = tmp_path / "wheels"
    done = _bundle(_lock(tmp_path, server.port), folder, tmp_path)
    assert done.returncode == 0, done.stderr
    assert server.seen == [(f"/files/{WHEEL}", BASIC), (f"/store/{WHEEL}", "")]
    assert (folder / WHEEL).read_bytes() == BODY
    assert TOKEN not in done.stdout + done.stderr + (folder / MANIFEST_NAME).read_text()


def test_a_redirect_on_the_index_host_keeps_its_credentials(tmp_path: Path, server: _Server) -> None:
    server.location = f"http://127.0.0.1:{{port}}/store/{WHEEL}"
    folder = tmp_path / "wheels"
    done = _bundle(_lock(tmp_path, server.port), folder, tmp_path)
    assert done.returncode == 0, done.stderr
    assert server.seen == [(f"/files/{WHEEL}", BASIC), (f"/store/{WHEEL}", BASIC)]
    assert (folder / WHEEL).read_bytes() == BODY


def test_a_redirect_to_another_port_of_the_host_carries_no_credentials(
    tmp_path: Path, server: _Server
) -> None:
    other = _Server()
    try:
        server.location = f"http://127.0.0.1:{other.port}/store/{WHEEL}"
        folder = tmp_path / "wheels"
        done = _bundle(_lock(tmp_path, server.port), folder, tmp_path)
    finally:
        other.stop()
    assert done.returncode == 0, done.stderr
    assert server.seen == [(f"/files/{WHEEL}", BASIC)]
    assert other.seen == [(f"/store/{WHEEL}", "")]


@pytest.mark.parametrize(
    "location", ["file:///etc/passwd", f"ftp://127.0.0.1/{WHEEL}", "gopher://127.0.0.1:70/"], ids=str
)
def test_a_redirect_to_a_scheme_not_http_is_refused_naming_the_file(
    tmp_path: Path, server: _Server, location: str
) -> None:
    server.location = location
    folder = tmp_path / "wheels"
    done = _bundle(_lock(tmp_path, server.port), folder, tmp_path)
    assert done.returncode == 4, done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line == (
        f"colabenv: {WHEEL} from http://127.0.0.1:{server.port}/files/{WHEEL}: "
        "the index redirected to a URL that is not http or https; refused (nothing kept)"
    )
    assert server.seen == [(f"/files/{WHEEL}", BASIC)]
    assert not folder.exists() or sorted(p.name for p in folder.iterdir()) == []


@pytest.mark.parametrize(
    ("store", "recorded", "said"),
    [
        ("store", len(BODY) - 1, f"{len(BODY)} bytes announced, the lock says {len(BODY) - 1}"),
        ("store", len(BODY) + 1, f"{len(BODY)} bytes announced, the lock says {len(BODY) + 1}"),
        ("bare", len(BODY) - 1, f"more than the {len(BODY) - 1} bytes the lock records"),
        ("bare", len(BODY) + 1, f"{len(BODY)} bytes, the lock says {len(BODY) + 1}"),
    ],
)
def test_a_file_of_another_size_than_the_lock_records_is_refused_and_not_kept(
    tmp_path: Path, server: _Server, store: str, recorded: int, said: str
) -> None:
    """A pylock's ``size`` bounds the download: the announced length or the bytes that came
    differ from it, and bundle refuses the file, its hash never the first to say so."""
    server.location = f"http://127.0.0.1:{{port}}/{store}/{WHEEL}"
    url = f"http://127.0.0.1:{server.port}/files/{WHEEL}"
    lock = write_wheel_lock(
        tmp_path / "pylock.toml",
        [("moved", WHEEL, BODY, url)],
        f"http://127.0.0.1:{server.port}/simple",
        sizes=[recorded],
    )
    folder = tmp_path / "wheels"
    done = _bundle(lock, folder, tmp_path)
    assert done.returncode == 4, done.stderr
    assert f"{said}; refused (nothing kept)" in done.stderr
    assert not (folder / WHEEL).exists()


def test_the_size_the_lock_records_is_taken(tmp_path: Path, server: _Server) -> None:
    server.location = f"http://127.0.0.1:{{port}}/store/{WHEEL}"
    url = f"http://127.0.0.1:{server.port}/files/{WHEEL}"
    lock = write_wheel_lock(
        tmp_path / "pylock.toml",
        [("moved", WHEEL, BODY, url)],
        f"http://127.0.0.1:{server.port}/simple",
        sizes=[len(BODY)],
    )
    done = _bundle(lock, tmp_path / "wheels", tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "wheels" / WHEEL).read_bytes() == BODY
