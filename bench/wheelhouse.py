#!/usr/bin/env python3
"""Time to a ready environment from a wheelhouse on local disk, against from the index over a
throttled link: the same lock, the same closure, the same script (issue 26).

The closure is the install benchmark's (torch, torchvision, torchaudio from a local "PyTorch"
index, jax with its CUDA plugin, requests and python-dateutil from the default index), its
stand-in wheels at the real sizes (``bench/run``'s ``REAL_MB``) divided by ``--scale``. Both
indexes are reached through one throttling proxy on 127.0.0.1 (``tests/support/throttle.py``):
one link whose rate is ``--real-mib-s`` divided by the same scale, so each transfer takes as
long as the real one would over that link. The rate is an assumption, not a measurement of
any notebook: set it to your link's.

Three things are timed, each on a fresh venv with an empty installer cache, alternating
(``--installer uv``, the default, or ``pip``):

- the script rendered with ``--lock``: the installer downloads the closure through the proxy;
- the script rendered with ``--lock --wheelhouse DIR``, DIR filled once by ``colabenv bundle``
  through the proxy: the helper hashes every wheel, the installer installs with no index;
- the floor: a plain copy of DIR's bytes (what any install from it must at least read).

Prints the medians and ends with ``wheelhouse: S s (Rx vs the index over the link)``.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.machinery
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import REPO, T4, Series, alternate, colabenv_exe, ratio_line, without_colabenv_overrides

PROFILE = """\
name = "bench-wheelhouse"

[frameworks]
torch = {{ version = "==2.8.*", torchvision = "*", torchaudio = "*" }}
jax = "==0.5.3"

[packages]
requirements = ["requests>=2.30", "python-dateutil"]

[install]
installer = "{installer}"
index_url = "{default}"
pytorch_index_url = "{pytorch}"
"""


def _real_mb() -> dict[str, float]:
    loader = importlib.machinery.SourceFileLoader("bench_run", str(REPO / "bench" / "run"))
    module = loader.load_module()
    table: dict[str, float] = module.REAL_MB
    return table


def _colabenv(*args: str | Path) -> None:
    done = subprocess.run(
        [str(colabenv_exe()), *(str(a) for a in args)],
        capture_output=True,
        text=True,
        env=without_colabenv_overrides(),
        timeout=1800,
    )
    if done.returncode != 0:
        raise SystemExit(f"colabenv {args[0]} failed: {done.stderr[-3000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller wheels, fewer runs")
    parser.add_argument(
        "--installer", choices=("uv", "pip"), default="uv", help="the profile's installer (uv)"
    )
    parser.add_argument("--scale", type=int, help="divide real sizes and the rate by this (100; quick 400)")
    parser.add_argument("--real-mib-s", type=float, default=100.0, help="the link's real rate (100 MiB/s)")
    parser.add_argument("--runs", type=int, help="runs of each (5; quick 3)")
    args = parser.parse_args()

    from packaging.utils import canonicalize_name

    from tests.support.index import LocalIndex
    from tests.support.scriptrun import make_host
    from tests.support.throttle import Bucket, ThrottledProxy
    from tests.support.wheels import build_standins, standin_specs

    scale = args.scale or (400 if args.quick else 100)
    runs = args.runs or (3 if args.quick else 5)
    rate = args.real_mib_s * 2**20 / scale
    real = _real_mb()
    with tempfile.TemporaryDirectory(prefix="colabenv-bench-wheelhouse-") as tmp:
        root = Path(tmp)
        specs = [
            dataclasses.replace(
                spec, payload_bytes=int(real.get(canonicalize_name(spec.name), 0.0) * 2**20 / scale)
            )
            for spec in standin_specs()
        ]
        standins = build_standins(root / "wheels", specs)
        bucket = Bucket(rate)
        with (
            LocalIndex(standins.default) as default,
            LocalIndex(standins.pytorch) as pytorch,
            ThrottledProxy(default.base_url, rate, bucket=bucket) as link_default,
            ThrottledProxy(pytorch.base_url, rate, bucket=bucket) as link_pytorch,
        ):
            profile = root / "p.toml"
            profile.write_text(
                PROFILE.format(
                    default=f"{link_default.base_url}/simple/",
                    pytorch=link_pytorch.base_url,
                    installer=args.installer,
                )
            )
            lock = root / "p.lock"
            _colabenv("lock", profile, "-o", lock, "--resolver", "uv", *T4)
            house = root / "wheelhouse"
            began = time.perf_counter()
            _colabenv("bundle", lock, "-o", house, "--quiet")
            bundle_s = time.perf_counter() - began
            from_index, from_house = root / "index.sh", root / "house.sh"
            _colabenv("render", profile, "-o", from_index, "--lock", lock, *T4)
            _colabenv("render", profile, "-o", from_house, "--lock", lock, "--wheelhouse", house, *T4)
            counter = iter(range(10_000))
            closures: dict[str, dict[str, str]] = {}

            def ready(script: Path, label: str) -> float:
                number = next(counter)
                host = make_host(root / f"host-{number}", with_pip=args.installer == "pip")
                host.driver = "550.54.15"
                started = time.perf_counter()
                cache = str(root / f"cache-{number}")
                done = host.run(script, UV_CACHE_DIR=cache, PIP_CACHE_DIR=cache, timeout=1800)
                elapsed = time.perf_counter() - started
                if done.returncode != 0:
                    raise SystemExit(f"{label} failed: {(done.stdout + done.stderr)[-3000:]}")
                closures[label] = host.installed()
                shutil.rmtree(host.root, ignore_errors=True)
                return elapsed

            house_series, index_series = alternate(
                runs,
                lambda: ready(from_house, "house"),
                lambda: ready(from_index, "index"),
                ("ready from the wheelhouse on local disk", "ready from the index over the link"),
                warmup=False,
            )

            def copy() -> float:
                target = root / f"copy-{next(counter)}"
                started = time.perf_counter()
                shutil.copytree(house, target)
                elapsed = time.perf_counter() - started
                shutil.rmtree(target)
                return elapsed

            floor = Series("plain copy of the wheelhouse's bytes", tuple(copy() for _ in range(runs)))
        house_mb = sum(p.stat().st_size for p in house.glob("*.whl")) / 2**20
        files = len(list(house.glob("*.whl")))
    same = closures["house"] == closures["index"]
    print(
        f"installer: {args.installer}; closure: {len(closures['house'])} packages, {files} wheels, "
        f"{house_mb:.1f} MiB "
        f"(real sizes / {scale}); "
        f"link {rate / 2**20:.2f} MiB/s ({args.real_mib_s:g} MiB/s / {scale}); same closure both ways: "
        f"{'yes' if same else 'NO'}; bundle through the link: {bundle_s:.2f} s"
    )
    print(house_series.describe())
    print(index_series.describe())
    print(floor.describe())
    print(
        f"wheelhouse over its copy floor: {house_series.median - floor.median:.2f} s more "
        f"({house_series.median / max(floor.median, 1e-9):.1f}x)"
    )
    ratio = house_series.median / index_series.median
    print(ratio_line("wheelhouse", house_series.median, "s", ratio, "the index over the link"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
