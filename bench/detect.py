#!/usr/bin/env python3
"""How long `colabenv detect --json` takes, against the bare cost of `python -c "import pynvml"`.

Both run as fresh processes of the same interpreter, alternating, so that the ratio says what
detection costs on top of starting Python and loading the NVML bindings. Prints the median of
each and ends with ``detect: X ms (Rx vs import pynvml)``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path


def wall_ms(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=120)
    return (time.perf_counter() - started) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=21, help="runs of each (default 21)")
    parser.add_argument("--quick", action="store_true", help="5 runs of each")
    args = parser.parse_args()
    runs = 5 if args.quick else args.runs

    exe = Path(sys.executable).parent / "colabenv"
    detect_argv = [str(exe), "detect", "--json"] if exe.exists() else [
        sys.executable, "-m", "colabenv.cli", "detect", "--json"]
    baseline_argv = [sys.executable, "-c", "import pynvml"]

    wall_ms(detect_argv)
    wall_ms(baseline_argv)
    detect_times: list[float] = []
    baseline_times: list[float] = []
    for _ in range(runs):
        detect_times.append(wall_ms(detect_argv))
        baseline_times.append(wall_ms(baseline_argv))

    detect_median = statistics.median(detect_times)
    baseline_median = statistics.median(baseline_times)
    print(f"runs: {runs} each")
    print(f"colabenv detect --json: median {detect_median:.1f} ms"
          f" (min {min(detect_times):.1f}, max {max(detect_times):.1f})")
    print(f"python -c 'import pynvml': median {baseline_median:.1f} ms"
          f" (min {min(baseline_times):.1f}, max {max(baseline_times):.1f})")
    ratio = detect_median / baseline_median
    print(f"detect: {detect_median:.0f} ms ({ratio:.1f}x vs import pynvml)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
