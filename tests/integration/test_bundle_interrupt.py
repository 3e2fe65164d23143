"""``colabenv bundle`` stopped mid-download (Ctrl-C, SIGTERM): exit 130 with one line, no part
file left in the folder, no wheel under its name, no manifest; the next run completes. A real
child process of ``colabenv bundle`` against a real HTTP server on 127.0.0.1 that sends the
first part of a wheel and then holds the rest back."""

from __future__ import annotations

import hashlib
import http.server
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from colabenv.lock.content import Lock, LockedFile, LockedPackage, LockHeader, LockTarget
from colabenv.lock.file import render_lock
from colabenv.wheelhouse.plan import MANIFEST_NAME

WHEEL = "big-1.0-py3-none-any.whl"
BODY = bytes(range(256)) * (16 * 1024)  # 4 MiB
FIRST = 3 * 1024 * 1024 // 2  # past the 1 MiB bundle reads at a time: one read written


class _Server:
    """Serves :data:`WHEEL`: the first :data:`FIRST` bytes at once, the rest once ``release``
    is set (or at once when it already is)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        release = self.release

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path != f"/files/{WHEEL}":
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(BODY)))
                self.end_headers()
                try:
                    self.wfile.write(BODY[:FIRST])
                    self.wfile.flush()
                    release.wait(60)
                    self.wfile.write(BODY[FIRST:])
                except OSError:
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/files/{WHEEL}"

    def stop(self) -> None:
        self.release.set()
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def server() -> Iterator[_Server]:
    served = _Server()
    yield served
    served.stop()


def _lock(tmp_path: Path, url: str) -> Path:
    header = LockHeader(
        colabenv_version="0.1.0",
        profile_name="big",
        profile_hash="sha256:" + "0" * 64,
        target=LockTarget(None, None, None, (), "3.12", "linux_x86_64"),
        frameworks=(),
        resolver="uv 0.13.9",
    )
    files = (LockedFile(hashlib.sha256(BODY).hexdigest(), WHEEL, url),)
    lock = Lock(
        header, (LockedPackage(canonicalize_name("big"), "1.0", files),), "https://pypi.example/simple"
    )
    path = tmp_path / "pylock.toml"
    path.write_text(render_lock(lock, pylock=True))
    return path


def _start(lock: Path, folder: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLABENV_")}
    return subprocess.Popen(
        [sys.executable, "-m", "colabenv", "bundle", str(lock), "-o", str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _wait_for_part_file(folder: Path, child: subprocess.Popen[str]) -> Path:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        parts = [p for p in folder.iterdir() if p.name.startswith(".")] if folder.is_dir() else []
        if parts and parts[0].stat().st_size >= 1 << 20:
            return parts[0]
        assert child.poll() is None, child.communicate()
        time.sleep(0.05)
    raise AssertionError("no part file of the first bytes appeared")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_mid_download_leaves_no_part_file_and_the_next_run_completes(
    tmp_path: Path, server: _Server, signum: int
) -> None:
    lock, folder = _lock(tmp_path, server.url), tmp_path / "wheels"
    child = _start(lock, folder)
    part = _wait_for_part_file(folder, child)
    child.send_signal(signum)
    stdout, stderr = child.communicate(timeout=30)
    assert child.returncode == 130, stderr
    assert stdout == ""
    assert stderr.strip().splitlines()[-1] == "colabenv: interrupted"
    assert "Traceback" not in stderr
    assert not part.exists()
    assert sorted(p.name for p in folder.iterdir()) == []
    server.release.set()
    again = _start(lock, folder)
    stdout, stderr = again.communicate(timeout=60)
    assert again.returncode == 0, stderr
    assert (folder / WHEEL).read_bytes() == BODY
    assert sorted(p.name for p in folder.iterdir()) == sorted([WHEEL, MANIFEST_NAME, "README.md"])
