#!/usr/bin/env python3
"""Time until 4 Ray workers are ready in the environment ``render --format ray`` writes: from a
wheelhouse (``--wheelhouse DIR``, no index) against from a local index on 127.0.0.1, in the same
run, through Ray's ``pip`` field and its ``uv`` field (issue 37).

A real local cluster of 4 node processes (``ray start --head`` and 3 more, one CPU each; ``ray``
from the package index in a venv of the benchmark's own, with uv beside it for the ``uv``
field), and a lock of ``--wheels`` stand-in wheels of ``--wheel-mib`` each, served by a local
index; the wheelhouse is ``colabenv bundle`` of the same lock. A run submits one task pinned to
each node and times, in the driver, from the submission until all 4 have imported every locked
distribution: each node builds the environment (Ray clones the nodes' Python, then installs)
and starts a worker in it. Every run is a new environment: the pins' order is rotated, which
changes Ray's key for it, and the nodes keep no built environment (Ray's cache size 0).

Prints the medians of the four and ends with ``ray: S s (Rx vs the local index)``: the ``pip``
field (the one colabenv writes) from the wheelhouse against from the index.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import Series, alternate, colabenv_exe, ratio_line, without_colabenv_overrides

from tests.support.index import LocalIndex
from tests.support.isolation import clean_env, uv_bin
from tests.support.ray_cluster import RayCluster, install_ray_venv
from tests.support.wheels import build_wheel

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
NODES = 4

READY = """
import json, sys, time, importlib, ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy as On
ray.init(address=sys.argv[1], logging_level="ERROR")
env = json.load(open(sys.argv[2]))
modules = json.loads(sys.argv[3])

@ray.remote(num_cpus=0, max_retries=0)
def ready(names):
    for name in names:
        importlib.import_module(name)
    return ray.get_runtime_context().get_node_id()

nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
started = time.perf_counter()
refs = [ready.options(runtime_env=env, scheduling_strategy=On(n, soft=False)).remote(modules) for n in nodes]
done = ray.get(refs, timeout=1200)
print(json.dumps({"s": time.perf_counter() - started, "nodes": len(set(done))}))
"""


def _lock_and_envs(root: Path, wheels: int, mib: float) -> tuple[Path, Path, list[str], LocalIndex]:
    """The wheels, an index serving them, the lock, the wheelhouse, and the two runtime_envs."""
    folder = root / "wheels"
    names = [f"raybench-pkg{i:02d}" for i in range(wheels)]
    for name in names:
        build_wheel(folder, name, "1.0", payload_bytes=int(mib * 2**20))
    index = LocalIndex(folder).start()
    profile = root / "bench.toml"
    listed = ", ".join(json.dumps(n) for n in names)
    profile.write_text(
        f'schema = 1\nname = "bench-ray"\n[packages]\nrequirements = [{listed}]\n'
        f'[install]\ninstaller = "uv"\nindex_url = "{index.url}"\n'
    )
    exe = str(colabenv_exe())
    env = without_colabenv_overrides()
    cpu = ["--cpu", "--python", PYTHON]
    lock = root / "bench.lock"
    house = root / "house"
    render = [exe, "render", str(profile), "--lock", str(lock), "--format", "ray", *cpu]
    steps = [
        [exe, "lock", str(profile), "-o", str(lock), "--resolver", "uv", *cpu],
        [exe, "bundle", str(lock), "-o", str(house)],
        [*render, "-o", str(root / "index.json")],
        [*render, "--wheelhouse", str(house), "-o", str(root / "house.json")],
    ]
    for argv in steps:
        subprocess.run(argv, check=True, env=env, capture_output=True, timeout=600)
    return root / "index.json", root / "house.json", [n.replace("-", "_") for n in names], index


def _variant(source: Path, field: str, turn: int, out: Path) -> Path:
    """``source`` for ``field`` (the ``uv`` field takes the same lines), pins rotated by ``turn``."""
    env = json.loads(source.read_text())
    pip = env.pop("pip")
    options = [o for o in pip["packages"] if o.startswith("--")]
    pins = [p for p in pip["packages"] if not p.startswith("--")]
    turn %= len(pins)
    packages = options + pins[turn:] + pins[:turn]
    extra = pip["pip_install_options"][2:]  # after Ray's two defaults: the wheelhouse's
    if field == "pip":
        env["pip"] = {**pip, "packages": packages}
    else:
        env["uv"] = {
            "packages": packages,
            "uv_check": False,
            "uv_pip_install_options": ["--no-cache", *extra],
        }
    out.write_text(json.dumps(env))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller wheels, fewer runs")
    parser.add_argument("--runs", type=int, help="runs of each (3; quick 2)")
    parser.add_argument("--wheels", type=int, default=12, help="stand-in wheels in the lock (12)")
    parser.add_argument("--wheel-mib", type=float, help="each wheel's size in MiB (4; quick 1)")
    parser.add_argument("--venv", type=Path, help="a venv with ray[default] and colabenv to reuse")
    args = parser.parse_args()
    runs = args.runs or (2 if args.quick else 3)
    mib = args.wheel_mib if args.wheel_mib is not None else (1.0 if args.quick else 4.0)
    root = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    python, why = install_ray_venv(args.venv or root / "venv")
    if python is None:
        raise SystemExit(f"bench/ray.py: {why}")
    subprocess.run(
        [uv_bin(), "pip", "install", "--python", str(python), "uv"],
        check=True,
        env=clean_env(),
        capture_output=True,
    )
    index_env, house_env, modules, index = _lock_and_envs(root, args.wheels, mib)
    turns = iter(range(10_000))
    no_cache = {"RAY_RUNTIME_ENV_PIP_CACHE_SIZE_GB": "0", "RAY_RUNTIME_ENV_UV_CACHE_SIZE_GB": "0"}
    try:
        with RayCluster(python, root / "cluster", workers=NODES - 1, node_env=[no_cache] * NODES) as cluster:

            def ready(source: Path, field: str) -> Callable[[], float]:
                def once() -> float:
                    turn = next(turns)
                    env = _variant(source, field, turn, root / f"env-{turn}.json")
                    done = cluster.driver(READY, str(env), json.dumps(modules), timeout=1500)
                    if done.returncode != 0:
                        raise SystemExit(f"bench/ray.py: a run failed: {done.stderr[-2000:]}")
                    answer = json.loads(done.stdout.strip().splitlines()[-1])
                    assert answer["nodes"] == NODES, answer
                    return float(answer["s"])

                return once

            series: dict[str, tuple[Series, Series]] = {}
            for field in ("pip", "uv"):
                series[field] = alternate(
                    runs,
                    ready(house_env, field),
                    ready(index_env, field),
                    (f"{field} field, from the wheelhouse", f"{field} field, from the local index"),
                    warmup=field == "pip",
                )
    finally:
        index.stop()
    print(
        f"{NODES} nodes of one CPU each on this machine; {args.wheels} wheels of {mib:g} MiB; "
        f"{runs} runs of each, alternating; each run a new environment on every node"
    )
    for house, from_index in series.values():
        print(house.describe())
        print(from_index.describe())
    pip_house, pip_index = series["pip"]
    uv_house, uv_index = series["uv"]
    print(
        f"uv field against pip field: {uv_index.median / pip_index.median:.2f}x from the index, "
        f"{uv_house.median / pip_house.median:.2f}x from the wheelhouse"
    )
    ratio = pip_house.median / pip_index.median
    print(ratio_line("ray", pip_house.median, "s", ratio, "the local index"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
