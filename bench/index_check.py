#!/usr/bin/env python3
"""What the index check costs `colabenv render` (issue 34): render offline (as before the
check), render with a cold check (no page cached: every page asked of the index) and with a
warm cache (every page cached: no request), each a fresh process, alternated.

The index runs on 127.0.0.1 and waits ``--latency`` seconds (default 0.05) before each answer,
a real index's round trip. The profile asks for torch and torchvision (their PyTorch-index
builds, served by sub-indexes of the local index; torchvision's metadata file is read, as the
check reads a companion's) and pins one plain requirement (the default index). Goals:
cold at most 1 s more than offline, warm at most 50 ms more. Ends with
``index_check: X ms cold, Y ms warm (+A ms, +B ms vs offline Z ms)``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, compile_colabenv, wall_s

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.index import LocalIndex
from tests.support.wheels import build_wheel

TAG = "cp312-cp312-manylinux_2_28_x86_64"
H100_580 = ("--driver", "580.65.06", "--cuda", "13.0", "--compute-capability", "9.0", "--python", "3.12")
VERSIONS = {
    "cu130": ("2.14.1+cu130", "2.15.0+cu130"),
    "cu132": ("2.14.1+cu132", "2.15.0+cu132"),
}
TORCHVISION = {"2.14.1": "0.29.1", "2.15.0": "0.29.2"}
"""The catalog's torchvision of each torch release: its wheels require that torch."""


def _index(root: Path) -> LocalIndex:
    for folder, versions in VERSIONS.items():
        for version in versions:
            build_wheel(root / folder, "torch", version, tag=TAG)
            public, _, local = version.partition("+")
            vision = f"{TORCHVISION[public]}+{local}"
            build_wheel(root / folder, "torchvision", vision, tag=TAG, requires=[f"torch=={public}"])
    build_wheel(root / "simple", "einops", "0.8.1")
    return LocalIndex(root)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15, help="runs of each (default 15)")
    parser.add_argument("--quick", action="store_true", help="5 runs of each")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the index waits per answer")
    args = parser.parse_args()
    runs = 5 if args.quick else args.runs
    compile_colabenv()
    exe = Path(sys.executable).parent / "colabenv"
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "colabenv"]
    work = Path(tempfile.mkdtemp(prefix="colabenv-bench-index-"))
    try:
        with _index(work / "wheels") as index:
            index.latency_s = args.latency
            profile = work / "team.toml"
            profile.write_text(
                'name = "team"\n[frameworks]\ntorch = { version = "*", torchvision = "*" }\n'
                '[packages]\nrequirements = ["einops==0.8.1"]\n'
                f'[install]\npytorch_index_url = "{index.base_url}"\nindex_url = "{index.url}"\n'
            )
            cache = work / "cache"
            base = {k: v for k, v in os.environ.items() if not k.startswith("COLABENV_")}
            base["COLABENV_CACHE_DIR"] = str(cache)
            argv = [*command, "render", str(profile), *H100_580, "-o", str(work / "setup.sh")]

            def offline() -> float:
                return wall_s(argv, env={**base, "COLABENV_OFFLINE": "1"})

            def cold() -> float:
                shutil.rmtree(cache / "index", ignore_errors=True)
                return wall_s(argv, env=base)

            def warm() -> float:
                return wall_s(argv, env=base)

            times: dict[str, list[float]] = {"offline": [], "cold": [], "warm": []}
            offline(), cold(), warm()  # unrecorded: the parsed catalog cached, the files compiled
            requests_cold: list[int] = []
            for _ in range(runs):
                times["offline"].append(offline())
                index.reset_requests()
                times["cold"].append(cold())
                requests_cold.append(len(index.requests))
                index.reset_requests()
                times["warm"].append(warm())
                assert index.requests == [], index.requests
    finally:
        shutil.rmtree(work, ignore_errors=True)
    median = {name: statistics.median(values) * 1000 for name, values in times.items()}
    for name, values in times.items():
        print(
            f"render {name}: median {median[name]:.0f} ms (min {min(values) * 1000:.0f}, "
            f"max {max(values) * 1000:.0f}, n={len(values)})"
        )
    print(f"cold check: {statistics.median(requests_cold):.0f} requests at {args.latency * 1000:.0f} ms each")
    cold_more, warm_more = median["cold"] - median["offline"], median["warm"] - median["offline"]
    print(
        f"cold vs offline: +{cold_more:.0f} ms ({median['cold'] / median['offline']:.2f}x; "
        "goal at most +1000 ms)"
    )
    print(
        f"warm vs offline: +{warm_more:.0f} ms ({median['warm'] / median['offline']:.2f}x; "
        "goal at most +50 ms)"
    )
    print(
        f"index_check: {median['cold']:.0f} ms cold, {median['warm']:.0f} ms warm "
        f"(+{cold_more:.0f} ms, +{warm_more:.0f} ms vs offline {median['offline']:.0f} ms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
