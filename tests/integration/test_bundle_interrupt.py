"""``colabenv bundle`` stopped mid-download (Ctrl-C, SIGTERM): exit 130 with one line, no part
file left in the folder, no wheel under its name, no manifest; the next run completes. And an
index that drips a wheel a byte at a time (each byte inside the read timeout): ended by the rate
rule, exit 4 naming the file. A real child process of ``colabenv bundle`` against a real HTTP
server on 127.0.0.1."""

from __future__ import annotations

import http.server
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from colabenv.wheelhouse.plan import MANIFEST_NAME
from tests.support.locking import write_wheel_lock

WHEEL = "big-1.0-py3-none-any.whl"
BODY = bytes(range(256)) * (16 * 1024)  # 4 MiB
FIRST = 3 * 1024 * 1024 // 2  # past the 1 MiB bundle reads at a time: one read written
AHEAD = "ahead-1.0-py3-none-any.whl"  # bundled before WHEEL (files go in name order)
AHEAD_BODY = b"a small wheel, served whole at once " * 1024


class _Server:
    """Serves :data:`WHEEL`: the first :data:`FIRST` bytes at once, the rest once ``release``
    is set (or at once when it already is); ``drip``: a byte every 0.2 s from the start, with
    or without a Content-Length. :data:`AHEAD` is served whole at once; each GET's path is
    recorded in :attr:`paths`."""

    def __init__(self, *, drip: bool = False, length: bool = True) -> None:
        self.release = threading.Event()
        self.paths: list[str] = []
        release, paths = self.release, self.paths

        class Handler(http.server.BaseHTTPRequestHandler):
            # with a length, a connection kept open (the socket stays the connection's); without,
            # one closed after the answer (http.client hands the socket to the response)
            protocol_version = "HTTP/1.1" if length else "HTTP/1.0"

            def do_GET(self) -> None:
                paths.append(self.path)
                if self.path == f"/files/{AHEAD}":
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(AHEAD_BODY)))
                    self.end_headers()
                    self.wfile.write(AHEAD_BODY)
                    return
                if self.path != f"/files/{WHEEL}":
                    self.send_error(404)
                    return
                self.send_response(200)
                if length:
                    self.send_header("Content-Length", str(len(BODY)))
                self.end_headers()
                try:
                    while drip and not release.is_set():
                        self.wfile.write(b"x")
                        self.wfile.flush()
                        time.sleep(0.2)
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
        return self.url_of(WHEEL)

    def url_of(self, filename: str) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/files/{filename}"

    def stop(self) -> None:
        self.release.set()
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def server() -> Iterator[_Server]:
    served = _Server()
    yield served
    served.stop()


def _lock(tmp_path: Path, url: str, ahead: str | None = None) -> Path:
    """A lock of :data:`WHEEL` from ``url``, and of :data:`AHEAD` from ``ahead`` when given."""
    wheels = [("big", WHEEL, BODY, url)]
    if ahead is not None:
        wheels.insert(0, ("ahead", AHEAD, AHEAD_BODY, ahead))
    return write_wheel_lock(tmp_path / "pylock.toml", wheels, "https://pypi.example/simple")


def _start(lock: Path, folder: Path, *extra: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLABENV_")}
    return subprocess.Popen(
        [sys.executable, "-m", "colabenv", "bundle", str(lock), "-o", str(folder), *extra],
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


@pytest.mark.parametrize("length", [True, False], ids=["content-length", "no-length"])
def test_a_dripping_index_is_ended_by_the_rate_rule_naming_the_file(tmp_path: Path, length: bool) -> None:
    served = _Server(drip=True, length=length)
    try:
        lock, folder = _lock(tmp_path, served.url), tmp_path / "wheels"
        started = time.monotonic()
        child = _start(lock, folder, "--http-deadline", "1")
        stdout, stderr = child.communicate(timeout=60)
        took = time.monotonic() - started
    finally:
        served.stop()
    assert child.returncode == 4, stderr
    assert stdout == ""
    (line,) = stderr.strip().splitlines()
    assert line.startswith(f"colabenv: {WHEEL} from http://127.0.0.1:")
    assert "under 64 KiB/s after the first 1 s (--http-deadline); refused (nothing kept)" in line
    assert took < 15  # the read timeout (60 s) never fired: each byte came within it
    assert sorted(p.name for p in folder.iterdir()) == []


def test_after_an_interrupt_the_next_run_fetches_only_what_is_missing(
    tmp_path: Path, server: _Server
) -> None:
    lock, folder = _lock(tmp_path, server.url, ahead=server.url_of(AHEAD)), tmp_path / "wheels"
    child = _start(lock, folder)
    part = _wait_for_part_file(folder, child)
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=30)
    assert child.returncode == 130, stderr
    # the wheel done before the signal stays, checked; no part file, no manifest (a manifest
    # is written only once every file is whole)
    assert sorted(p.name for p in folder.iterdir()) == [AHEAD]
    assert (folder / AHEAD).read_bytes() == AHEAD_BODY
    assert not part.exists()
    assert server.paths == [f"/files/{AHEAD}", f"/files/{WHEEL}"]
    server.release.set()
    again = _start(lock, folder)
    _, stderr = again.communicate(timeout=60)
    assert again.returncode == 0, stderr
    assert server.paths == [f"/files/{AHEAD}", f"/files/{WHEEL}", f"/files/{WHEEL}"]
    assert (folder / WHEEL).read_bytes() == BODY
    assert sorted(p.name for p in folder.iterdir()) == sorted([AHEAD, WHEEL, MANIFEST_NAME, "README.md"])


PART = re.compile(r"\.(?P<name>.+)\.(?P<pid>[0-9]+)-[0-9]+-[0-9]+-[0-9a-f]{8}\.[0-9]+\.part")
"""A part file's name as docs/cli.md gives it: ``.NAME.PID-START-NS-BOOT.N.part``."""


def test_after_sigkill_the_next_run_removes_the_part_file_and_completes(
    tmp_path: Path, server: _Server
) -> None:
    lock, folder = _lock(tmp_path, server.url), tmp_path / "wheels"
    child = _start(lock, folder)
    part = _wait_for_part_file(folder, child)
    named = PART.fullmatch(part.name)
    assert named is not None, part.name
    assert (named["name"], int(named["pid"])) == (WHEEL, child.pid)
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    assert part.exists()  # nothing runs on SIGKILL: the next run removes it
    server.release.set()
    again = _start(lock, folder)
    _, stderr = again.communicate(timeout=60)
    assert again.returncode == 0, stderr
    assert (folder / WHEEL).read_bytes() == BODY
    assert sorted(p.name for p in folder.iterdir()) == sorted([WHEEL, MANIFEST_NAME, "README.md"])


def test_the_part_file_of_a_bundle_still_running_is_left_alone(tmp_path: Path, server: _Server) -> None:
    """A second bundle into the same folder (of another lock) while the first downloads: the
    first's part file is a live run's, so it stays, and the first completes."""
    lock, folder = _lock(tmp_path, server.url), tmp_path / "wheels"
    first = _start(lock, folder)
    part = _wait_for_part_file(folder, first)
    other = write_wheel_lock(
        tmp_path / "other.toml",
        [("ahead", AHEAD, AHEAD_BODY, server.url_of(AHEAD))],
        "https://pypi.example/simple",
    )
    second = _start(other, folder)
    _, stderr = second.communicate(timeout=60)
    assert second.returncode == 0, stderr
    assert part.exists()
    assert first.poll() is None
    server.release.set()
    _, stderr = first.communicate(timeout=60)
    assert first.returncode == 0, stderr
    assert (folder / WHEEL).read_bytes() == BODY
    assert sorted(p.name for p in folder.iterdir()) == sorted([AHEAD, WHEEL, MANIFEST_NAME, "README.md"])
