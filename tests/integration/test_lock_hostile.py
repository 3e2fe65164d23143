"""`colabenv lock` against a hostile index served on 127.0.0.1 (tests/support/hostile_index.py):
bounded in time by ``--http-deadline`` and in memory, uv's and pip-tools' requests included;
one line naming the index (exit 4); and on SIGINT or SIGTERM, the resolver and what it started
ended and the work folder removed."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.hostile_index import HostileIndex
from tests.support.isolation import clean_env
from tests.support.locking import T4
from tests.support.proctree import (
    TreePeaks,
    children_running,
    finish,
    live_processes,
    measured,
    session_members,
    wait_until,
)

pytestmark = pytest.mark.slow

DEADLINE_S = 2
MEMORY_MIB = 768
GUARD_BYTES = 3 << 30
"""The test's own bound on the whole lock (RLIMIT_AS, inherited): what a resolver that nothing
bounds would reach here instead of the machine's memory."""
WATCH_SLACK_MIB = 64
"""What a resolver reading a page without end may grow past its bound before the watchdog's
next sample (20 ms) sees it: a few MiB here."""
PROFILE = """\
schema = 1
name = "hostile"
description = "one package from a hostile index"

[packages]
requirements = ["foo"]

[install]
index_url = "{url}"
"""


def _profile(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "hostile.toml"
    path.write_text(PROFILE.format(url=url), encoding="utf-8")
    return path


def _guard() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (GUARD_BYTES, GUARD_BYTES))


def _start(
    tmp_path: Path,
    profile: Path,
    resolver: str,
    deadline: float,
    memory_mib: int | None = MEMORY_MIB,
    peak_file: Path | None = None,
) -> subprocess.Popen[str]:
    """The lock, under :func:`measured` where its peak is read (``peak_file``)."""
    work = tmp_path / "tmp"
    work.mkdir(exist_ok=True)
    env = clean_env(TMPDIR=str(work))
    if memory_mib is not None:
        env["COLABENV_LOCK_MEMORY_MIB"] = str(memory_mib)
    argv = [sys.executable, "-m", "colabenv", "lock", str(profile), "--resolver", resolver, *T4]
    argv = [*argv, "--http-deadline", f"{deadline:g}"]
    return subprocess.Popen(
        measured(argv, peak_file) if peak_file is not None else argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
        preexec_fn=_guard,
    )


CASES = {
    "endless": "answered more than 64 MiB for one page",
    "stall": "",
    "malformed": "",
    "nan": "",
    "links": "",
}


@pytest.mark.parametrize(
    ("mode", "resolver"),
    [(mode, "uv") for mode in CASES] + [("malformed", "pip-tools"), ("endless", "pip-tools")],
)
def test_a_hostile_index_is_exit_4_naming_it_within_the_bounds(
    tmp_path: Path, mode: str, resolver: str
) -> None:
    with HostileIndex(mode) as index:
        started = time.monotonic()
        proc = _start(tmp_path, _profile(tmp_path, index.url), resolver, DEADLINE_S)
        code, stdout, stderr, _ = finish(proc, 90)
        elapsed = time.monotonic() - started
    assert code == 4, stderr
    assert stdout == ""
    assert stderr.count("\n") == 1 and stderr.startswith("colabenv: "), stderr
    assert index.url.rstrip("/") in stderr
    assert CASES[mode] in stderr
    assert "Traceback" not in stderr
    if mode == "stall":
        # two tries of the deadline each, uv's backoff between them, colabenv's start
        assert elapsed < 6 * DEADLINE_S + 6, f"{elapsed:.1f} s with --http-deadline {DEADLINE_S}"
    assert not list((tmp_path / "tmp").iterdir())


def test_an_endless_page_is_held_to_the_memory_bound(tmp_path: Path) -> None:
    """Peak RSS of every process of the lock (ru_maxrss of the children this test reaped: the
    lock, and uv, which the lock reaped) stays at the bound (a watchdog sample's growth past
    it at most), not the guard."""
    with HostileIndex("endless") as index:
        peak_file = tmp_path / "peak"
        proc = _start(tmp_path, _profile(tmp_path, index.url), "uv", DEADLINE_S, peak_file=peak_file)
        code, _, stderr, peak_kib = finish(proc, 90, peak_file)
    assert code == 4, stderr
    assert peak_kib < (MEMORY_MIB + WATCH_SLACK_MIB) * 1024, f"peak RSS {peak_kib >> 10} MiB"


TOGETHER_MIB = 600
"""What colabenv and every process it starts may hold together against an endless page, by
default (no ``COLABENV_LOCK_MEMORY_MIB``)."""


@pytest.mark.parametrize("resolver", ["uv", "pip-tools"])
def test_an_endless_page_keeps_colabenv_and_its_children_together_under_600_mb(
    tmp_path: Path, resolver: str
) -> None:
    """What the lock and every process it starts held at one moment: the largest sum of their
    resident memory over samples 10 ms apart, plus what the largest grew past its last sample
    (``wait4``'s peak of it, taken under a small launcher, which is not counted). The sum of
    each one's own peak, an upper bound, over-counted short-lived processes (uv's interpreter
    queries) that never ran beside uv's peak."""
    with HostileIndex("endless") as index:
        peak_file = tmp_path / "peak"
        proc = _start(
            tmp_path,
            _profile(tmp_path, index.url),
            resolver,
            DEADLINE_S,
            memory_mib=None,
            peak_file=peak_file,
        )
        peaks = TreePeaks(proc.pid, skip_root=True)
        code, stdout, stderr, peak_kib = finish(proc, 90, peak_file)
        peaks.stop(peak_kib)
        together = peaks.at_once(peak_kib)
    assert code == 4, stderr
    assert stdout == ""
    assert stderr.count("\n") == 1 and index.url.rstrip("/") in stderr, stderr
    assert CASES["endless"] in stderr, stderr
    assert together < TOGETHER_MIB << 10, f"{together >> 10} MiB together ({peaks.shown()})"


@pytest.mark.parametrize(
    ("resolver", "signum"),
    [("uv", signal.SIGINT), ("uv", signal.SIGTERM), ("pip-tools", signal.SIGTERM)],
)
def test_a_signal_ends_the_resolver_and_removes_the_work_folder(
    tmp_path: Path, resolver: str, signum: int
) -> None:
    marker = "piptools" if resolver == "pip-tools" else "uv pip compile"
    with HostileIndex("slow") as index:
        proc = _start(tmp_path, _profile(tmp_path, index.url), resolver, 300)
        try:

            def resolver_waits() -> bool:
                return bool(children_running(proc.pid, marker)) and bool(index.requests)

            wait_until(resolver_waits, 60, f"{resolver} waiting on the index")
            (child,) = children_running(proc.pid, marker)
            assert live_processes()[child][1] == child, "the resolver runs in its own session"
            assert [p.name for p in (tmp_path / "tmp").iterdir()], "no work folder while resolving"
            sent = time.monotonic()
            os.kill(proc.pid, signum)
            code, stdout, stderr, _ = finish(proc, 30)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
    assert code == 130, stderr
    assert stderr == "colabenv: interrupted\n"
    assert stdout == ""
    assert took < 5, f"{took:.1f} s after the signal"
    assert session_members(child) == []
    assert not list((tmp_path / "tmp").iterdir())
