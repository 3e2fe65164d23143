#!/usr/bin/env python3
"""What the memory bounds cost and hold: ``doctor`` on an inflating ring and ``lock`` against a
page without end, each beside a baseline measured in the same run.

- doctor: ``colabenv doctor --json`` on a full ring of 3,600 records that each inflate to the
  codec's bound (tests/support/rings.py: 3.5 MiB on disk, nearly 900 MiB of JSON), against the
  same doctor on a full ring of the same size of this host's real samples (bench/common.py,
  ``varied``). Its bound: what it holds of the samples (64 MiB as it counts them).
- lock: ``colabenv lock`` with uv (default memory bound, ``--http-deadline 5``) of one package
  from an index whose page never ends (tests/support/hostile_index.py ``endless``), against the
  same lock from a local index serving that package (tests/support/index.py). Its goal: colabenv
  and its children together under 600 MB.

Each run's wall time, and its peak memory: every process's own peak (VmHWM, sampled every 10
ms; the largest also from ``wait4``), summed (tests/support/proctree.py ``TreePeaks``), an
upper bound on what the tree held at any one moment. Prints medians and ratios, and ends with
``bounds: X MiB (Rx vs a normal page)``, the endless page's lock (bench/run takes the last line).

    .venv/bin/python bench/bounds.py [--runs N] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    REPO,
    colabenv_exe,
    compile_colabenv,
    ratio_line,
    without_colabenv_overrides,
    write_full_ring,
)

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.hostile_index import HostileIndex
from tests.support.index import LocalIndex
from tests.support.locking import T4
from tests.support.proctree import TreePeaks, finish
from tests.support.rings import write_inflating_ring
from tests.support.wheels import build_wheel

PROFILE = """\
schema = 1
name = "bounds"
description = "one package"

[packages]
requirements = ["foo"]

[install]
index_url = "{url}"
"""
Run = tuple[float, int, int]
"""Seconds, peak MiB of the tree together, exit code."""


def measured(argv: list[str], env: dict[str, str], cwd: Path) -> Run:
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    peaks = TreePeaks(proc.pid)
    code, _, _, reaped_kib = finish(proc, 300)
    together = peaks.stop(reaped_kib)
    return time.monotonic() - started, together >> 10, code


def series(runs: int, first: Callable[[], Run], second: Callable[[], Run]) -> tuple[list[Run], list[Run]]:
    """Alternately, after one unrecorded run of each."""
    first()
    second()
    ones, twos = [], []
    for _ in range(runs):
        ones.append(first())
        twos.append(second())
    return ones, twos


def describe(label: str, runs: list[Run]) -> str:
    wall = statistics.median(r[0] for r in runs)
    peak = statistics.median(r[1] for r in runs)
    codes = ",".join(sorted({str(r[2]) for r in runs}))
    return (
        f"{label}: median {wall * 1000:.0f} ms, peak {peak:.0f} MiB together "
        f"(max {max(r[1] for r in runs)} MiB, n={len(runs)}, exit {codes})"
    )


def ratios(name: str, hostile: list[Run], normal: list[Run], baseline: str) -> str:
    wall = statistics.median(r[0] for r in hostile) / statistics.median(r[0] for r in normal)
    peak_h = statistics.median(r[1] for r in hostile)
    peak = peak_h / statistics.median(r[1] for r in normal)
    return f"{name}: {peak_h:.0f} MiB ({peak:.2f}x), {wall:.2f}x the time, vs {baseline}"


def bench_doctor(root: Path, runs: int) -> tuple[list[Run], list[Run]]:
    env = without_colabenv_overrides()
    for name in ("inflating", "normal"):
        (root / name).mkdir(mode=0o700)
    records = write_inflating_ring(root / "inflating" / "watch.ring")
    write_full_ring(root / "normal" / "watch.ring", 1.0, varied=True)
    argv = [str(colabenv_exe()), "doctor", "--json"]
    hostile, normal = series(
        runs,
        lambda: measured(argv, dict(env, COLABENV_STATE_DIR=str(root / "inflating")), root),
        lambda: measured(argv, dict(env, COLABENV_STATE_DIR=str(root / "normal")), root),
    )
    print(describe(f"colabenv doctor --json, an inflating ring ({records} records)", hostile))
    print(describe(f"colabenv doctor --json, a ring of real samples ({records} records)", normal))
    return hostile, normal


def bench_lock(root: Path, runs: int) -> tuple[list[Run], list[Run]]:
    env = without_colabenv_overrides()
    build_wheel(root / "wheels", "foo", "1.0")
    argv = [str(colabenv_exe()), "lock", "--quiet", "--resolver", "uv", *T4, "--http-deadline", "5", "-o"]

    def lock(url: str, where: str) -> Run:
        folder = root / where
        folder.mkdir(exist_ok=True)
        profile = folder / "bounds.toml"
        profile.write_text(PROFILE.format(url=url), encoding="utf-8")
        cache = env | {"UV_CACHE_DIR": str(folder / "uv-cache"), "TMPDIR": str(folder)}
        return measured([*argv, str(folder / "bounds.lock"), str(profile)], cache, folder)

    with HostileIndex("endless") as endless, LocalIndex(root / "wheels") as index:
        hostile, normal = series(
            runs, lambda: lock(endless.url, "endless"), lambda: lock(index.url, "normal")
        )
    print(describe("colabenv lock (uv), a page without end", hostile))
    print(describe("colabenv lock (uv), a normal page", normal))
    return hostile, normal


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each (default 7)")
    parser.add_argument("--quick", action="store_true", help="3 runs of each")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    compile_colabenv()
    with tempfile.TemporaryDirectory(prefix="colabenv-bench-bounds-") as folder:
        root = Path(folder)
        (root / "doctor").mkdir()
        (root / "lock").mkdir()
        doctor_hostile, doctor_normal = bench_doctor(root / "doctor", runs)
        lock_hostile, lock_normal = bench_lock(root / "lock", runs)
    print(ratios("doctor-inflating", doctor_hostile, doctor_normal, "a ring of real samples"))
    print(ratios("lock-endless", lock_hostile, lock_normal, "a normal page"))
    peak = statistics.median(r[1] for r in lock_hostile)
    ratio = peak / statistics.median(r[1] for r in lock_normal)
    print(ratio_line("bounds", peak, "MiB", ratio, "a normal page"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
