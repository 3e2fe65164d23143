"""The hostile-input corpus: every case in ``tests/data/hostile/`` through the real console script.

Each ``*.toml`` there is one input an attacker or a clumsy user could give (see that folder's
README.md for the format). Whatever the input, colabenv must answer with the documented exit
code, no traceback, nothing on stdout when it refuses, within a time bound, and within a memory
bound (the child runs under ``RLIMIT_AS``).
"""

from __future__ import annotations

import http.server
import os
import resource
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.fixtures import console_script
from tests.support.paths import DATA

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HOSTILE = DATA / "hostile"
CASES = sorted(p for p in HOSTILE.glob("*.toml"))
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_MEMORY_MIB = 2048
CASE_KEYS = {
    "about",
    "argv",
    "exit",
    "stderr",
    "absent",
    "stdout",
    "timeout_s",
    "memory_mib",
    "stdin",
    "env",
    "unset",
    "files",
    "links",
    "fifos",
    "server",
    "max_stderr_lines",
    "modes",
    "report",
}


def _load(path: Path) -> dict[str, Any]:
    case = tomllib.loads(path.read_text(encoding="utf-8"))
    unknown = set(case) - CASE_KEYS
    assert not unknown, f"{path.name}: unknown keys {sorted(unknown)}"
    assert "about" in case and "argv" in case and "exit" in case, f"{path.name}: incomplete"
    return case


class _Handler(http.server.BaseHTTPRequestHandler):
    """What a hostile index answers, chosen by the case's ``server`` key."""

    kind = "drip"

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_GET(self) -> None:
        kind = self.server.kind  # type: ignore[attr-defined]
        if kind == "drip":
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                for _ in range(200):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(1.0)
            except OSError:
                return
            return
        body_kind, _, body = kind.partition(":")
        if body_kind in ("nested", "huge"):
            self._generated(body_kind, int(body))
            return
        content_type = {
            "json": "application/vnd.pypi.simple.v1+json",
            "html": "text/html",
        }.get(body_kind, "application/octet-stream")
        data = body.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _generated(self, kind: str, size: int) -> None:
        """JSON ``size`` arrays deep, or ``size`` MiB of JSON whitespace, sent as it is made."""
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
        self.end_headers()
        pieces = [b"[" * size, b"]" * size] if kind == "nested" else (b" " * (1 << 20) for _ in range(size))
        try:
            for piece in pieces:
                self.wfile.write(piece)
        except OSError:
            return


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    kind = "drip"


@contextmanager
def _serve(kind: str | None) -> Iterator[str | None]:
    if kind is None:
        yield None
        return
    server = _Server(("127.0.0.1", 0), _Handler)
    server.kind = kind
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _limit_memory(mib: int) -> Callable[[], None]:
    def apply() -> None:
        size = mib * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size, size))

    return apply


def _expand(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_hostile_input(path: Path, tmp_path: Path) -> None:
    case = _load(path)
    exe = console_script()
    with _serve(case.get("server")) as server:
        values = {"tmp": str(tmp_path), "server": server or "", "data": str(HOSTILE / "files")}
        for name, content in case.get("files", {}).items():
            target = tmp_path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_expand(content, values), encoding="utf-8")
        for name, mode in case.get("modes", {}).items():
            (tmp_path / name).chmod(int(mode, 8))
        for name, points_to in case.get("links", {}).items():
            (tmp_path / name).symlink_to(_expand(points_to, values))
        for name in case.get("fifos", []):
            os.mkfifo(tmp_path / name)
        env = dict(os.environ)
        for key in case.get("unset", []):
            env.pop(key, None)
        env.update({k: _expand(v, values) for k, v in case.get("env", {}).items()})
        argv = [str(exe), *(_expand(a, values) for a in case["argv"])]
        limit = float(case.get("timeout_s", DEFAULT_TIMEOUT_S))
        started = time.monotonic()
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            input=case.get("stdin", ""),
            timeout=limit + 20,
            check=False,
            preexec_fn=_limit_memory(int(case.get("memory_mib", DEFAULT_MEMORY_MIB))),
        )
        elapsed = time.monotonic() - started
    shown = (
        f"{path.name}: exit {done.returncode}\nstdout: {done.stdout[:2000]}\nstderr: {done.stderr[-3000:]}"
    )
    assert elapsed < limit, f"took {elapsed:.1f}s (bound {limit:g}s)\n{shown}"
    assert "Traceback" not in done.stderr, shown
    assert done.returncode == case["exit"], shown
    if done.returncode != 0 and not case.get("report", False):
        assert done.stdout == "", shown
        lines = done.stderr.strip().splitlines()
        assert lines, shown
        assert len(lines) <= int(case.get("max_stderr_lines", 2)), shown
    for fragment in case.get("stderr", []):
        assert _expand(fragment, values) in done.stderr, shown
    for fragment in case.get("stdout", []):
        assert _expand(fragment, values) in done.stdout, shown
    for fragment in case.get("absent", []):
        assert fragment not in done.stderr and fragment not in done.stdout, shown


def test_every_case_is_well_formed() -> None:
    assert CASES, "the corpus is empty"
    for path in CASES:
        case = _load(path)
        assert isinstance(case["argv"], list) and all(isinstance(a, str) for a in case["argv"])
        assert isinstance(case["exit"], int)
