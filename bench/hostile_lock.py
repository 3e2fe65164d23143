#!/usr/bin/env python3
"""What a lock against a hostile index costs: its time against ``--http-deadline``, its memory.

Serves an index on 127.0.0.1 (``tests/support/hostile_index.py``) whose project pages are
``endless`` (PEP 691 JSON written as fast as the client reads, without end) or ``stall`` (a
Content-Length of 8 GiB, a few bytes, then nothing), and runs ``colabenv lock`` of a profile
asking one package from it, ``--http-deadline 5`` (``--deadline``), with each resolver. Each run
is timed, and the resident memory of the whole process tree (colabenv, the resolver and what it
starts: every descendant, whatever its session) is sampled from /proc every 20 ms; the peak of
the sum is reported, with the largest single process (``wait4``'s ``ru_maxrss``), which catches
what the sampling misses between samples. Prints the medians over ``--runs`` runs (default 3)
and the exit code each run ended with (4 is the one `docs/cli.md` promises).

    .venv/bin/python bench/hostile_lock.py [--runs N] [--deadline S] [--resolver uv|pip-tools]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.hostile_index import HostileIndex  # noqa: E402
from tests.support.isolation import clean_env  # noqa: E402

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
PROFILE = """\
schema = 1
name = "hostile"
description = "one package from a hostile index"

[packages]
requirements = ["foo"]

[install]
index_url = "{url}"
"""


def _tree_rss(root: int) -> int:
    """Bytes resident in ``root`` and every descendant of it now."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                fields = handle.read().rpartition(b")")[2].split()
            with open(f"/proc/{entry.name}/statm", "rb") as handle:
                resident = int(handle.read().split()[1])
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        rss[int(entry.name)] = resident * PAGE_SIZE
    total = 0
    for pid, resident in rss.items():
        walk, seen = pid, 0
        while walk not in (0, 1) and seen < 64:
            if walk == root:
                total += resident
                break
            walk, seen = parents.get(walk, 0), seen + 1
    return total


def one_run(mode: str, resolver: str, deadline: float, work: Path) -> tuple[float, int, int, int]:
    """Seconds, peak tree RSS, largest single-process RSS (bytes), exit code."""
    with HostileIndex(mode) as index:
        profile = work / "hostile.toml"
        profile.write_text(PROFILE.format(url=index.url), encoding="utf-8")
        argv = [
            sys.executable,
            "-m",
            "colabenv",
            "lock",
            str(profile),
            "--resolver",
            resolver,
            "--http-deadline",
            f"{deadline:g}",
            "--driver",
            "550.54.15",
            "--compute-capability",
            "7.5",
            "--python",
            f"{sys.version_info.major}.{sys.version_info.minor}",
        ]
        started = time.monotonic()
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=clean_env(), cwd=work
        )
        peak = 0
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, _tree_rss(proc.pid))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.monotonic() - started
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, peak, usage.ru_maxrss * 1024, proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--deadline", type=float, default=5.0)
    parser.add_argument("--resolver", action="append", choices=("uv", "pip-tools"))
    args = parser.parse_args()
    resolvers = args.resolver or ["uv", "pip-tools"]
    print(f"colabenv lock against a hostile index, --http-deadline {args.deadline:g}, {args.runs} runs each")
    print(
        f"{'page':<8} {'resolver':<10} {'wall (median)':>14} {'x deadline':>10} {'tree RSS peak':>14} "
        f"{'largest process':>16}  exits"
    )
    for mode in ("endless", "stall"):
        for resolver in resolvers:
            runs = []
            for _ in range(args.runs):
                with tempfile.TemporaryDirectory(prefix="hostile-lock-") as work:
                    runs.append(one_run(mode, resolver, args.deadline, Path(work)))
            wall = statistics.median(r[0] for r in runs)
            tree = statistics.median(r[1] for r in runs) / (1 << 20)
            single = statistics.median(r[2] for r in runs) / (1 << 20)
            codes = ",".join(str(r[3]) for r in runs)
            print(
                f"{mode:<8} {resolver:<10} {wall:>12.1f} s {wall / args.deadline:>9.1f}x "
                f"{tree:>10.0f} MiB {single:>12.0f} MiB  {codes}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
