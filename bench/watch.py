#!/usr/bin/env python3
"""What the recorder (`colabenv watch`) costs: its CPU share of one core and its RSS at an
interval of 2 s and of 0.5 s, against an idle `python -c "import time; time.sleep(...)"` of the
same interpreter measured over the same seconds (goal at 2 s: under 1% of a core, under 30 MiB).

A real recorder is started with `colabenv watch start` in a state directory of its own, warmed up
for a few samples, then read from /proc: CPU time (utime + stime of /proc/PID/stat) over each of
several windows, and VmRSS once a second. Then times ``read_ring()`` (what doctor reads) on a
full ring at 2 s, whole and its last 10 minutes. Prints the medians and ends with
``watch: Y MiB RSS and X% of a core at 2 s (Rx vs idle python's RSS)``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import colabenv_exe, ratio_line, without_colabenv_overrides, write_full_ring

HERTZ = os.sysconf("SC_CLK_TCK")
WARM_S = 3.0


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"no VmRSS for {pid}")


def measure(pids: dict[str, int], seconds: float, windows: int) -> dict[str, tuple[list[float], list[float]]]:
    """Per process: the CPU share of each window, and RSS read once a second."""
    found: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in pids}
    window = seconds / windows
    for _ in range(windows):
        before = {name: cpu_ticks(pid) for name, pid in pids.items()}
        began = time.monotonic()
        while time.monotonic() - began < window:
            for name, pid in pids.items():
                found[name][1].append(rss_mib(pid))
            time.sleep(min(1.0, max(0.0, window - (time.monotonic() - began))))
        spent = time.monotonic() - began
        for name, pid in pids.items():
            found[name][0].append((cpu_ticks(pid) - before[name]) / HERTZ / spent * 100)
    return found


def one_interval(interval: float, seconds: float, windows: int) -> tuple[float, float, float, float]:
    """(recorder CPU %, recorder RSS MiB, idle CPU %, idle RSS MiB), medians."""
    with tempfile.TemporaryDirectory(prefix="colabenv-bench-watch-") as tmp:
        env = {**without_colabenv_overrides(), "COLABENV_STATE_DIR": tmp}
        started = subprocess.run(
            [str(colabenv_exe()), "watch", "start", "--interval", str(interval), "--path", tmp],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=True,
        )
        recorder = int(started.stdout.split()[-1])
        idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        try:
            time.sleep(WARM_S)
            found = measure({"recorder": recorder, "idle": idle.pid}, seconds, windows)
        finally:
            idle.kill()
            idle.wait()
            stopped = subprocess.run(
                [str(colabenv_exe()), "watch", "status", "--json"], capture_output=True, text=True, env=env
            )
            if json.loads(stopped.stdout).get("running"):
                subprocess.run(
                    [str(colabenv_exe()), "watch", "stop"], env=env, capture_output=True, check=True
                )
    cpu, rss = found["recorder"]
    idle_cpu, idle_rss = found["idle"]
    print(
        f"interval {interval:g} s over {seconds:g} s: recorder {statistics.median(cpu):.3f} % of a core "
        f"(windows: {', '.join(f'{c:.2f}' for c in cpu)}), RSS median {statistics.median(rss):.1f} MiB "
        f"(max {max(rss):.1f}); idle python {statistics.median(idle_cpu):.3f} %, "
        f"{statistics.median(idle_rss):.1f} MiB"
    )
    return (
        statistics.median(cpu),
        statistics.median(rss),
        statistics.median(idle_cpu),
        statistics.median(idle_rss),
    )


def read_full_ring(runs: int) -> float:
    """Median ms of ``read_ring()`` (what doctor reads) on a full ring at 2 s: 1800 records made
    of 60 real samples of this host, repeated with their times moved on."""
    from colabenv.recorder.ring import read_ring

    with tempfile.TemporaryDirectory(prefix="colabenv-bench-ring-") as tmp:
        path = Path(tmp) / "watch.ring"
        slots = write_full_ring(path, 2.0)
        size = path.stat().st_size
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            contents = read_ring(path)
            times.append((time.perf_counter() - started) * 1000)
        assert len(contents.samples) == slots
        recent = []
        for _ in range(runs):
            started = time.perf_counter()
            read_ring(path, since=time.time() - 600)
            recent.append((time.perf_counter() - started) * 1000)
    print(
        f"read_ring of a full ring ({slots} samples at 2 s, {size / 2**20:.1f} MiB): "
        f"median {statistics.median(times):.0f} ms (min {min(times):.0f}); its last 10 minutes "
        f"(since=): median {statistics.median(recent):.0f} ms"
    )
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=30.0, help="measured per interval (default 30)")
    parser.add_argument("--quick", action="store_true", help="10 s per interval")
    args = parser.parse_args()
    seconds = 10.0 if args.quick else args.seconds
    windows = 5
    print(f"{os.cpu_count()} CPUs; {WARM_S:g} s of warm-up, then {windows} windows per interval")
    results = {interval: one_interval(interval, seconds, windows) for interval in (2.0, 0.5)}
    read_full_ring(3 if args.quick else 7)
    fast = results[0.5]
    print(f"at 0.5 s: {fast[0]:.3f} % of a core, {fast[1]:.1f} MiB")
    cpu, rss, _, idle_rss = results[2.0]
    print(
        ratio_line(
            "watch", rss, f"MiB RSS and {cpu:.2f}% of a core at 2 s", rss / idle_rss, "idle python's RSS"
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
