"""The wheelhouse program's ``fill`` as the script runs it: a real process of
``colabenv/_target/wheelhouse.py`` (by its path, the helper beside it) against an index on
127.0.0.1 that answers what an attacker chooses: a file name that leaves the folder, a file
that streams slowly while the run that started the fill goes away."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from colabenv._util.resources import WHEELHOUSE_PROGRAM
from tests.support.proctree import wait_until

BODY = bytes(range(256)) * 16384  # 4 MiB: the first half is past the 1 MiB the fill reads at a time
DIGEST = hashlib.sha256(BODY).hexdigest()
WHEEL = "tinya-1.0-py3-none-any.whl"


class _Index:
    """``/simple/tinya/``: a PEP 691 page (or a PEP 503 one: ``html``) listing ``names``, each
    with :data:`DIGEST`; ``/files/...``: :data:`BODY`, the first half at once and the rest once
    :attr:`release` is set (at once unless ``slow``)."""

    def __init__(self, names: list[str], *, html: bool = False, slow: bool = False) -> None:
        self.release = threading.Event()
        if not slow:
            self.release.set()
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                if self.path == "/simple/tinya/":
                    base = f"http://127.0.0.1:{index.port}/files/"
                    if html:
                        links = "".join(
                            f'<a href="{base}{quote(n, safe="")}#sha256={DIGEST}">x</a>' for n in names
                        )
                        self._send(links.encode(), "text/html")
                    else:
                        files = [
                            {"filename": n, "url": base + quote(n, safe=""), "hashes": {"sha256": DIGEST}}
                            for n in names
                        ]
                        self._send(
                            json.dumps({"files": files}).encode(), "application/vnd.pypi.simple.v1+json"
                        )
                    return
                if not self.path.startswith("/files/"):
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(BODY)))
                self.end_headers()
                try:
                    self.wfile.write(BODY[: len(BODY) // 2])
                    self.wfile.flush()
                    index.release.wait(60)
                    self.wfile.write(BODY[len(BODY) // 2 :])
                except OSError:
                    pass

            def _send(self, body: bytes, kind: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.port = self.http.server_address[1]
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/simple/"

    def stop(self) -> None:
        self.release.set()
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    lock = tmp_path / "lock.txt"
    lock.write_text(f"# a lock\ntinya==1.0 \\\n    --hash=sha256:{DIGEST}\n")
    missing = tmp_path / "missing.txt"
    missing.write_text("tinya==1.0\n")
    return lock, missing


def _fill(
    index: _Index, lock: Path, missing: Path, folder: Path, staging: Path, **popen: object
) -> subprocess.Popen[str]:
    env = {**os.environ, "COLABENV_INDEX_URLS": index.url}
    return subprocess.Popen(
        [sys.executable, str(WHEELHOUSE_PROGRAM), "fill", str(lock), str(missing), str(folder), str(staging)],
        env=env,
        text=True,
        **popen,  # type: ignore[call-overload]
    )


@pytest.mark.parametrize(
    ("shape", "html"),
    [("rooted", False), ("rooted", True), ("parent", False), ("inner", False)],
    ids=["json-rooted", "html-rooted", "json-parent", "json-inner"],
)
def test_a_name_that_leaves_the_folder_is_refused_and_writes_nothing_outside(
    tmp_path: Path, inputs: tuple[Path, Path], shape: str, html: bool
) -> None:
    """``/../../..`` then the victim's path: joined to the folder, the part file and the name
    both resolve outside it (``..`` of ``/`` is ``/``), and the victim was replaced."""
    lock, missing = inputs
    folder, staging, outside = tmp_path / "wh", tmp_path / "work" / "wheels", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    victim = outside / WHEEL
    victim.write_bytes(b"precious")
    up = "/.." * (len(folder.parts) + 1)
    name = {"rooted": f"{up}{victim}", "parent": f"../outside/{WHEEL}", "inner": f"sub/../../outside/{WHEEL}"}
    rooted = Path("/" + WHEEL)
    index = _Index([name[shape]], html=html)
    try:
        child = _fill(index, lock, missing, folder, staging, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stdout, stderr = child.communicate(timeout=60)
    finally:
        index.stop()
    assert victim.read_bytes() == b"precious"
    assert sorted(p.name for p in outside.iterdir()) == [WHEEL]
    assert not rooted.exists() or rooted.read_bytes() != BODY
    assert child.returncode == 8, stdout + stderr
    assert stdout == "no index has a wheel of tinya==1.0 with the lock's sha256 for this Python\n"
    assert sorted(p.name for p in folder.iterdir()) == []


def test_a_name_of_another_project_or_version_is_not_taken_for_the_pin(
    tmp_path: Path, inputs: tuple[Path, Path]
) -> None:
    """The lock's sha256 under another wheel's name: the installer would not take it for the
    pin, so the fill does not write it under that name."""
    lock, missing = inputs
    folder, staging = tmp_path / "wh", tmp_path / "work" / "wheels"
    index = _Index(["other-1.0-py3-none-any.whl", "tinya-2.0-py3-none-any.whl"])
    try:
        child = _fill(index, lock, missing, folder, staging, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stdout, stderr = child.communicate(timeout=60)
    finally:
        index.stop()
    assert child.returncode == 8, stdout + stderr
    assert sorted(p.name for p in folder.iterdir()) == []


def _parts(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.endswith(".part")] if folder.is_dir() else []


def test_the_fill_stops_and_removes_its_part_file_when_its_reader_is_gone(
    tmp_path: Path, inputs: tuple[Path, Path]
) -> None:
    """The script reads the fill's answer through a pipe (``$(...)``): a script killed (SIGTERM,
    SIGKILL) closes it, and the fill, in another process, must not go on downloading."""
    lock, missing = inputs
    folder, staging = tmp_path / "wh", tmp_path / "work" / "wheels"
    index = _Index([WHEEL], slow=True)
    read, write = os.pipe()
    try:
        child = _fill(index, lock, missing, folder, staging, stdout=write, stderr=subprocess.DEVNULL)
        os.close(write)
        wait_until(lambda: any(p.stat().st_size > 0 for p in _parts(folder)), 30, "a part file")
        os.close(read)  # the script is gone
        started = time.monotonic()
        child.wait(timeout=10)
        took = time.monotonic() - started
    finally:
        index.stop()
    assert took < 3
    assert child.returncode != 0
    assert _parts(folder) == []
    assert not (folder / WHEEL).exists()


def test_sigterm_to_the_fill_removes_its_part_file(tmp_path: Path, inputs: tuple[Path, Path]) -> None:
    lock, missing = inputs
    folder, staging = tmp_path / "wh", tmp_path / "work" / "wheels"
    index = _Index([WHEEL], slow=True)
    try:
        child = _fill(index, lock, missing, folder, staging, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_until(lambda: any(p.stat().st_size > 0 for p in _parts(folder)), 30, "a part file")
        child.send_signal(signal.SIGTERM)
        _, stderr = child.communicate(timeout=10)
    finally:
        index.stop()
    assert child.returncode == 128 + signal.SIGTERM, stderr
    assert "Traceback" not in stderr
    assert _parts(folder) == []


def test_a_later_fill_removes_the_part_files_of_dead_runs_and_only_those(
    tmp_path: Path, inputs: tuple[Path, Path]
) -> None:
    """Part files named as :func:`write_wheel` names them: one of a process that has exited, one
    whose pid a later process took (another start time): removed; one of a process that runs
    (with its own start time), and a file that is no part file: kept."""
    from colabenv._target.wheelhouse import part_owner

    lock, missing = inputs
    folder, staging = tmp_path / "wh", tmp_path / "work" / "wheels"
    folder.mkdir()
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    mine = part_owner()  # this test's own process: pid-start-namespace-boot
    pid, start, rest = mine.split("-", 2)
    live_owner = f"{live.pid}-{_ticks(live.pid)}-{rest}"
    kept = folder / f".{WHEEL}.{live_owner}.0.part"
    dead = folder / f".{WHEEL}.{gone.pid}-{start}-{rest}.0.part"
    reused = folder / f".{WHEEL}.{pid}-{int(start) + 1}-{rest}.0.part"
    other = folder / f".{WHEEL}.notes"
    for path in (kept, dead, reused, other):
        path.write_bytes(b"half a wheel")
    index = _Index([WHEEL])
    try:
        child = _fill(index, lock, missing, folder, staging, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stdout, stderr = child.communicate(timeout=60)
    finally:
        index.stop()
        assert live.stdin is not None
        live.stdin.close()
        live.wait()
    assert child.returncode == 0, stdout + stderr
    assert (folder / WHEEL).read_bytes() == BODY
    assert sorted(p.name for p in folder.iterdir()) == sorted([WHEEL, kept.name, other.name])


def _ticks(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]
