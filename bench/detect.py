#!/usr/bin/env python3
"""How long `colabenv detect --json` takes, against the bare cost of `python -c "import pynvml"`.

Both run as fresh processes of the same interpreter, alternating, so that the ratio says what
detection costs on top of starting Python and loading the NVML bindings. Prints the median of
each and ends with ``detect: X ms (Rx vs import pynvml)``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import alternate, compile_colabenv, ratio_line, wall_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=21, help="runs of each (default 21)")
    parser.add_argument("--quick", action="store_true", help="5 runs of each")
    args = parser.parse_args()
    runs = 5 if args.quick else args.runs
    compile_colabenv()

    exe = Path(sys.executable).parent / "colabenv"
    detect_argv = (
        [str(exe), "detect", "--json"]
        if exe.exists()
        else [sys.executable, "-m", "colabenv", "detect", "--json"]
    )
    baseline_argv = [sys.executable, "-c", "import pynvml"]

    detected, baseline = alternate(
        runs,
        lambda: wall_s(detect_argv),
        lambda: wall_s(baseline_argv),
        ("colabenv detect --json", "python -c 'import pynvml'"),
    )
    print(f"runs: {runs} each")
    print(detected.describe("ms", 1000))
    print(baseline.describe("ms", 1000))
    print(
        ratio_line("detect", detected.median * 1000, "ms", detected.median / baseline.median, "import pynvml")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
