#!/usr/bin/env python3
"""How long `colabenv lock` takes with uv against pip-tools, on the same input, same indexes.

Both lock one profile (torch + torchvision + torchaudio from a local "PyTorch" index, jax from
the default index, and a web of ordinary packages with several versions each) against indexes
served on 127.0.0.1 by the test support code, each run with a fresh, empty cache (what CI
sees). Like the real PyTorch index, the local one offers no PEP 658 metadata but answers range
requests, and its torch wheel is big (256 MiB here, a third of the real cu124 wheel; 64 MiB
with --quick): a resolver that downloads a wheel to read its metadata pays for that. Runs
alternate between the resolvers. Prints the median of each and ends with
``lock: X s (Rx vs pip-tools)``.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.index import LocalIndex  # noqa: E402
from tests.support.isolation import clean_env  # noqa: E402
from tests.support.wheels import WheelSpec, build_standins, standin_specs  # noqa: E402


def web_specs(count: int) -> list[WheelSpec]:
    """``count`` packages in three versions each; package i depends on i+1 and i+2 (ranges)."""
    specs = []
    for i in range(count):
        for minor in range(3):
            requires = tuple(f"bench-pkg-{j:03d}>=1.{max(0, minor - 1)}"
                             for j in (i + 1, i + 2) if j < count)
            specs.append(WheelSpec("default", "", f"bench-pkg-{i:03d}", f"1.{minor}.0",
                                   requires))
    return specs


PROFILE = """\
schema = 1
name = "bench"
description = "lock benchmark"

[frameworks]
torch = {{ version = "==2.6.0", torchvision = "*", torchaudio = "*" }}
jax = "==0.5.3"

[packages]
requirements = ["requests>=2", "python-dateutil", "bench-pkg-000"]

[install]
index_url = "{default}"
pytorch_index_url = "{pytorch}"
"""


def lock_once(exe: Path, profile: Path, resolver: str, out: Path) -> float:
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    with tempfile.TemporaryDirectory(prefix="colabenv-bench-cache-") as cache:
        env = clean_env(UV_CACHE_DIR=f"{cache}/uv", PIP_CACHE_DIR=f"{cache}/pip",
                        XDG_CACHE_HOME=f"{cache}/xdg")
        started = time.perf_counter()
        subprocess.run([str(exe), "lock", str(profile), "-o", str(out), "--resolver", resolver,
                        "--quiet", "--driver", "550.54.15", "--compute-capability", "7.5",
                        "--python", python], check=True, env=env, capture_output=True,
                       timeout=1200)
        return time.perf_counter() - started


def bench_specs(count: int, torch_mib: int) -> list[WheelSpec]:
    specs = []
    for spec in standin_specs():
        if spec.index == "pytorch" and spec.folder == "cu124" and spec.name == "torch":
            spec = dataclasses.replace(spec, payload_bytes=torch_mib << 20)
        specs.append(spec)
    return [*specs, *web_specs(count)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="runs of each (default 5)")
    parser.add_argument("--packages", type=int, default=60, help="synthetic packages (60)")
    parser.add_argument("--quick", action="store_true", help="3 runs of each, 30 packages")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    count = 30 if args.quick else args.packages
    torch_mib = 64 if args.quick else 256

    exe = Path(sys.executable).parent / "colabenv"
    with tempfile.TemporaryDirectory(prefix="colabenv-bench-lock-") as tmp:
        root = Path(tmp)
        standins = build_standins(root / "wheels", bench_specs(count, torch_mib))
        with LocalIndex(standins.default) as default, \
                LocalIndex(standins.pytorch, metadata=False) as pytorch:
            profile = root / "bench.toml"
            profile.write_text(PROFILE.format(default=default.url, pytorch=pytorch.base_url))
            lock_once(exe, profile, "uv", root / "warmup.lock")
            times: dict[str, list[float]] = {"uv": [], "pip-tools": []}
            for _ in range(runs):
                for resolver in times:
                    times[resolver].append(lock_once(exe, profile, resolver,
                                                     root / f"{resolver}.lock"))
            uv_pins = (root / "uv.lock").read_text().split("\n\n", 1)[1]
            pip_tools_pins = (root / "pip-tools.lock").read_text().split("\n\n", 1)[1]
            same = uv_pins == pip_tools_pins
            pinned = sum(1 for line in uv_pins.splitlines() if "==" in line)

    uv_median = statistics.median(times["uv"])
    pip_tools_median = statistics.median(times["pip-tools"])
    print(f"runs: {runs} each, fresh cache per run; closure of {pinned} packages; "
          f"torch wheel {torch_mib} MiB; identical pins: {'yes' if same else 'NO'}")
    for resolver, values in times.items():
        print(f"colabenv lock --resolver {resolver}: median {statistics.median(values):.2f} s"
              f" (min {min(values):.2f}, max {max(values):.2f})")
    print(f"lock: {uv_median:.2f} s ({uv_median / pip_tools_median:.2f}x vs pip-tools)")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
