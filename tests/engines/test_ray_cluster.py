"""``render --format ray`` on a real local Ray cluster (issue 37): ``ray start --head`` and two
more node processes on this machine, ``ray[default]`` from the package index in a venv of the
session's own (with this colabenv), a lock of small pure-Python wheels served on 127.0.0.1.

Tasks pinned to each node import the locked distributions at the locked versions, with
``[env]``'s reference expanded on the node; ``colabenv.verify_ray_nodes`` passes on the sound nodes and
names the one whose environment shadows a locked distribution (node, check, message); an
installer killed mid-install, and a driver interrupted mid-install, leave no half-built
environment: the next task on that node gets a whole one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.engines.test_ray_render import CPU, make_lock, ray_profile
from tests.support.index import LocalIndex
from tests.support.locking import colabenv
from tests.support.ports import free_port
from tests.support.ray_cluster import RayCluster, descendants, install_ray_venv
from tests.support.throttle import ThrottledProxy
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.slow

PROBES = ("rayprobe-alpha", "rayprobe-beta")
LOCKED = {"rayprobe-alpha": "1.0", "rayprobe-beta": "2.0"}
BULK_BYTES = 24 << 20
"""The wheel the interrupt tests install slowly (through a proxy of :data:`SLOW_RATE`)."""
SLOW_RATE = 3 << 20
SHADOWED = "9.9"
"""The version of ``rayprobe-beta`` the broken node's ``PYTHONPATH`` puts first."""


@pytest.fixture(scope="session")
def ray_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    python, why = install_ray_venv(tmp_path_factory.mktemp("ray-venv") / "venv")
    if python is None:
        pytest.skip(why)
    return python


@dataclass(frozen=True)
class Team:
    profile: Path
    lock: Path
    env: Path
    index: LocalIndex
    wheels: Path


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    base = tmp_path_factory.mktemp("ray-team")
    wheels = base / "wheels"
    build_wheel(wheels, "rayprobe-alpha", "1.0", requires=["rayprobe-beta<3"])
    build_wheel(wheels, "rayprobe-beta", "2.0")
    build_wheel(wheels, "rayprobe-beta", "3.0")
    build_wheel(wheels, "rayprobe-bulk", "1.0", payload_bytes=BULK_BYTES)
    with LocalIndex(wheels, port=free_port()) as index:
        profile = ray_profile(base, index.url, requirements=("rayprobe-alpha",))
        lock = make_lock(profile, base / "team.lock")
        env = base / "runtime_env.json"
        done = colabenv("render", profile, "--lock", lock, "--format", "ray", "-o", env, *CPU)
        assert done.returncode == 0, done.stderr
        yield Team(profile, lock, env, index, wheels)


@pytest.fixture(scope="module")
def cluster(ray_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    """Three nodes: the head, a sound node, and a node whose Python finds a stray
    ``rayprobe-beta`` first (``PYTHONPATH``)."""
    base = tmp_path_factory.mktemp("ray-cluster")
    stray = base / "stray"
    info = stray / f"rayprobe_beta-{SHADOWED}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: rayprobe-beta\nVersion: {SHADOWED}\n")
    (stray / "rayprobe_beta").mkdir()
    (stray / "rayprobe_beta" / "__init__.py").write_text(f'__version__ = "{SHADOWED}"\n')
    env = [{"HF_TOKEN": "node-0-token"}, {"HF_TOKEN": "node-1-token"}, {"PYTHONPATH": str(stray)}]
    with RayCluster(ray_python, base / "nodes", workers=2, node_env=env) as running:
        yield running


IMPORTS = """
import json, os, sys, ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy as On
ray.init(address=sys.argv[1], logging_level="ERROR")
env = json.load(open(sys.argv[2]))

@ray.remote(num_cpus=0, max_retries=0)
def probe():
    import importlib.metadata as md, rayprobe_alpha, rayprobe_beta
    return {
        "node": ray.get_runtime_context().get_node_id(),
        "versions": {n: md.version(n) for n in ("rayprobe-alpha", "rayprobe-beta")},
        "modules": [rayprobe_alpha.__version__, rayprobe_beta.__version__],
        "python": sys.executable,
        "env": {k: os.environ.get(k) for k in ("HF_HOME", "HF_TOKEN")},
    }

nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
wanted = [n for n in nodes if n in sys.argv[3:]] if sys.argv[3:] else nodes
refs = [probe.options(runtime_env=env, scheduling_strategy=On(n, soft=False)).remote() for n in wanted]
print(json.dumps(ray.get(refs, timeout=240)))
"""

VERIFY = """
import json, sys, ray
import colabenv
ray.init(address=sys.argv[1], logging_level="ERROR")
reports = colabenv.verify_ray_nodes(json.load(open(sys.argv[2])), sys.argv[3], timeout_s=240)
print(json.dumps([[r.node_id, list(r.lines)] for r in reports]))
"""


def _json(done: subprocess.CompletedProcess[str]) -> object:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _node_ids(cluster: RayCluster) -> list[str]:
    ids = cluster.node_ids()
    assert len(ids) == 3
    return ids


def test_tasks_on_each_node_import_the_locked_versions_with_env_expanded_there(
    cluster: RayCluster, team: Team
) -> None:
    head, sound, _ = _node_ids(cluster)
    answers = _json(cluster.driver(IMPORTS, str(team.env), head, sound))
    assert isinstance(answers, list)
    assert sorted(a["node"] for a in answers) == sorted([head, sound])
    for answer in answers:
        assert answer["versions"] == LOCKED
        assert answer["modules"] == ["1.0", "2.0"]
        assert "runtime_resources/pip/" in answer["python"]
    tokens = {a["node"]: a["env"] for a in answers}
    assert tokens[head] == {"HF_HOME": "/data/hf", "HF_TOKEN": "node-0-token"}
    assert tokens[sound] == {"HF_HOME": "/data/hf", "HF_TOKEN": "node-1-token"}
    assert "node-0-token" not in team.env.read_text()


def test_verify_on_every_node_names_the_node_check_and_message_that_fail(
    cluster: RayCluster, team: Team
) -> None:
    head, sound, broken = _node_ids(cluster)
    reports = _json(cluster.driver(VERIFY, str(team.env), str(team.lock)))
    assert isinstance(reports, list)
    lines = {node_id: found for node_id, found in reports}
    assert set(lines) == {head, sound, broken}
    assert len(lines[head]) == len(lines[sound]) == 1
    assert lines[head][0].startswith(f"node {head} (") and lines[head][0].endswith(": PASS")
    assert lines[sound][0].startswith(f"node {sound} (") and lines[sound][0].endswith(": PASS")
    assert len(lines[broken]) >= 1
    assert all(line.startswith(f"node {broken} (") for line in lines[broken])
    checks = {line.split("): ", 1)[1].split(": ", 1)[0]: line.split("): ", 1)[1] for line in lines[broken]}
    assert checks["versions"] == f"versions: rayprobe-beta: installed {SHADOWED}, expected ==2.0"
    assert checks["duplicates"].startswith(f"duplicates: rayprobe-beta installed 2 times ({SHADOWED} in ")


def _slow_env(team: Team, proxy: ThrottledProxy, marker: str) -> Path:
    """The team's runtime_env with the bulk wheel added, through the slow proxy; ``marker``
    makes it an environment of its own (Ray keys a pip environment by its field)."""
    env = json.loads(team.env.read_text())
    bulk = team.wheels / "rayprobe_bulk-1.0-py3-none-any.whl"
    import hashlib

    digest = hashlib.sha256(bulk.read_bytes()).hexdigest()
    pip = env["pip"]
    pip["packages"] = [
        f"--index-url {proxy.base_url}/simple/",
        *[p for p in pip["packages"] if not p.startswith("--")],
        f"rayprobe-bulk==1.0 --hash=sha256:{digest}",
    ]
    pip["pip_install_options"] = [*pip["pip_install_options"], "--progress-bar", marker]
    path = team.env.parent / f"slow-{marker}.json"
    path.write_text(json.dumps(env))
    return path


def _installer_on(cluster: RayCluster, node: int, timeout: float = 90) -> int:
    """The pid of a ``pip install`` the node's runtime env agent runs, once it runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in descendants(cluster.nodes[node].pid):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"pip" in cmdline and b"install" in cmdline and b"-r" in cmdline:
                return pid
        time.sleep(0.1)
    raise AssertionError("no pip install started on the node")


def _assert_whole(cluster: RayCluster, env: Path, node_id: str) -> None:
    answers = _json(
        cluster.driver(
            IMPORTS.replace("rayprobe_beta\n", "rayprobe_beta, rayprobe_bulk\n"), str(env), node_id
        )
    )
    assert isinstance(answers, list) and [a["versions"] for a in answers] == [LOCKED]


def _importing_driver(cluster: RayCluster, env: Path, node_id: str) -> subprocess.Popen[str]:
    """A driver process whose task, on ``node_id``, imports the locked distributions in ``env``."""
    return subprocess.Popen(
        [str(cluster.python), "-c", IMPORTS, cluster.address, str(env), node_id],
        env=cluster.env(),
        cwd=cluster.folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_an_installer_killed_mid_install_leaves_no_half_built_environment(
    cluster: RayCluster, team: Team
) -> None:
    _, sound, _ = _node_ids(cluster)
    with ThrottledProxy(team.index.base_url, SLOW_RATE) as proxy:
        env = _slow_env(team, proxy, "off")
        driver = _importing_driver(cluster, env, sound)
        try:
            pid = _installer_on(cluster, 1)
            os.kill(pid, signal.SIGKILL)
            _out, _err = driver.communicate(timeout=240)
        finally:
            driver.kill()
        logs = "".join(
            p.read_text(errors="replace") for p in cluster.temp.glob("n1/session_*/logs/runtime_env*.log")
        )
        assert "Delete incomplete virtualenv" in logs
        _assert_whole(cluster, env, sound)


def test_a_driver_interrupted_mid_install_leaves_the_next_task_a_whole_environment(
    cluster: RayCluster, team: Team
) -> None:
    _, sound, _ = _node_ids(cluster)
    with ThrottledProxy(team.index.base_url, SLOW_RATE) as proxy:
        env = _slow_env(team, proxy, "raw")
        driver = _importing_driver(cluster, env, sound)
        try:
            _installer_on(cluster, 1)
            driver.send_signal(signal.SIGINT)
            driver.communicate(timeout=60)
        finally:
            driver.kill()
        assert driver.returncode != 0
        _assert_whole(cluster, env, sound)


def test_from_a_wheelhouse_every_node_installs_with_no_index(
    cluster: RayCluster, team: Team, tmp_path: Path
) -> None:
    house = tmp_path / "house"
    bundled = colabenv("bundle", team.lock, "-o", house)
    assert bundled.returncode == 0, bundled.stderr
    env = tmp_path / "house.yaml"
    done = colabenv(
        "render", team.profile, "--lock", team.lock, "--format", "ray", "--wheelhouse", house, "-o", env, *CPU
    )
    assert done.returncode == 0, done.stderr
    as_json = tmp_path / "house.json"
    as_json.write_text(json.dumps(yaml.safe_load(env.read_text())))
    head, sound, _ = _node_ids(cluster)
    team.index.reset_requests()
    answers = _json(cluster.driver(IMPORTS, str(as_json), head, sound))
    assert isinstance(answers, list)
    assert [a["versions"] for a in answers] == [LOCKED, LOCKED]
    assert team.index.requests == []
