"""A real local Ray cluster for the Ray tests and the benchmark (issue 37): ``ray start --head``
on 127.0.0.1 and a second node process, each ``--block`` in its own process group, from a venv
of its own that has ``ray[default]`` from the package index and this colabenv.

Each node has its own ``--temp-dir``: two nodes on one machine would otherwise share their
``runtime_resources`` folder, and Ray builds an environment in a folder named by its hash, so
both would build into the same one at once. Stopping ends each node's process group (TERM, then
KILL), then every process that was below a node when stopping began (the workers, which Ray
starts in sessions of their own) and any left whose command line names the cluster's folder, so
nothing outlives the cluster, also on failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from tests.support.isolation import clean_env, uv_bin
from tests.support.ports import free_port

REPO = Path(__file__).resolve().parents[2]
NODE_RESOURCE = "colabenv_test_node_"
"""Node N has one unit of the resource ``colabenv_test_node_N``: how a test tells them apart."""
NODE_IDS = f"""
import json, sys, ray
ray.init(address=sys.argv[1], logging_level="ERROR")
found = {{}}
for n in ray.nodes():
    for key in n["Resources"]:
        if n["Alive"] and key.startswith("{NODE_RESOURCE}"):
            found[int(key[len("{NODE_RESOURCE}"):])] = n["NodeID"]
print(json.dumps([found[i] for i in sorted(found)]))
"""


def install_ray_venv(folder: Path, *, timeout: float = 900) -> tuple[Path | None, str]:
    """A venv at ``folder`` with ``ray[default]`` (from the package index) and this colabenv
    (editable); (its interpreter, "") or (None, why it could not be made)."""
    python = folder / "bin" / "python"
    if python.exists():
        return python, ""
    made = subprocess.run(
        [uv_bin(), "venv", "--seed", "--python", _base_python(), str(folder)],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if made.returncode != 0:
        return None, f"uv venv failed: {made.stderr.strip()[-300:]}"
    done = subprocess.run(
        [uv_bin(), "pip", "install", "--python", str(python), "ray[default]", "-e", str(REPO)],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        return None, f"ray could not be installed from the package index: {done.stderr.strip()[-300:]}"
    return python, ""


def _base_python() -> str:
    import sys

    return sys.executable


class RayCluster:
    """``ray start --head`` and ``workers`` more nodes on 127.0.0.1, from ``python``'s venv;
    ``node_env`` adds variables to one node's environment (by index, 0 the head)."""

    def __init__(
        self,
        python: Path,
        folder: Path,
        *,
        workers: int = 1,
        cpus: int = 1,
        node_env: Sequence[dict[str, str]] = (),
    ) -> None:
        self.python = python
        self.folder = folder
        self.workers = workers
        self.cpus = cpus
        self.node_env = list(node_env)
        self.port = free_port()
        self.nodes: list[subprocess.Popen[bytes]] = []
        self.temp = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))
        """The nodes' ``--temp-dir`` root: short, since Ray's sockets live below it (107 bytes)."""

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def env(self, index: int = -1) -> dict[str, str]:
        """The environment of node ``index`` (and of a driver: -1)."""
        env = clean_env(RAY_USAGE_STATS_ENABLED="0", RAY_DEDUP_LOGS="0", PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYTHONDONTWRITEBYTECODE")
        if 0 <= index < len(self.node_env):
            env.update(self.node_env[index])
        return env

    def start(self, timeout: float = 120) -> RayCluster:
        ray = str(self.python.parent / "ray")
        self.folder.mkdir(parents=True, exist_ok=True)
        common = ["--block", "--node-ip-address", "127.0.0.1", "--num-cpus", str(self.cpus)]
        common += ["--disable-usage-stats", "--num-gpus", "0"]
        head = [ray, "start", "--head", "--port", str(self.port), "--include-dashboard", "false"]
        head += ["--ray-client-server-port", str(free_port()), "--temp-dir", str(self.temp / "n0")]
        head += ["--resources", json.dumps({f"{NODE_RESOURCE}0": 1})]
        try:
            self._spawn([*head, *common, "--dashboard-agent-listen-port", str(free_port())], 0)
            self._wait_for(1, timeout)
            for index in range(1, self.workers + 1):
                argv = [
                    ray,
                    "start",
                    "--address",
                    self.address,
                    "--temp-dir",
                    str(self.temp / f"n{index}"),
                ]
                argv += ["--resources", json.dumps({f"{NODE_RESOURCE}{index}": 1})]
                self._spawn([*argv, *common, "--dashboard-agent-listen-port", str(free_port())], index)
            self._wait_for(self.workers + 1, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, argv: list[str], index: int) -> None:
        log = open(self.folder / f"node{index}.log", "wb")  # noqa: SIM115 (kept by the child)
        self.nodes.append(
            subprocess.Popen(
                argv,
                env=self.env(index),
                cwd=self.folder,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        log.close()

    def _wait_for(self, count: int, timeout: float) -> None:
        """Until every node started says so in its log, then until a driver counts ``count``."""
        deadline = time.monotonic() + timeout
        for index, node in enumerate(self.nodes):
            log = self.folder / f"node{index}.log"
            while "Ray runtime started" not in log.read_text(errors="replace"):
                if node.poll() is not None or time.monotonic() > deadline:
                    tail = log.read_text(errors="replace")[-1500:]
                    raise RuntimeError(f"ray node {index} did not start ({node.returncode}): {tail}")
                time.sleep(0.2)
        script = (
            "import ray,sys; ray.init(address=sys.argv[1], logging_level='ERROR');"
            "print(sum(1 for n in ray.nodes() if n['Alive']))"
        )
        while time.monotonic() < deadline:
            try:
                done = self.driver(script, timeout=30)
            except subprocess.TimeoutExpired:
                continue
            if done.returncode == 0 and done.stdout.strip().splitlines()[-1:] == [str(count)]:
                return
            time.sleep(0.5)
        raise RuntimeError(f"the Ray cluster did not reach {count} nodes in {timeout:.0f} s")

    def driver(self, script: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """``script`` run by the cluster's Python as a driver (``sys.argv[1]`` the address)."""
        return subprocess.run(
            [str(self.python), "-c", script, self.address, *args],
            env=self.env(),
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def node_ids(self) -> list[str]:
        """The node IDs, in the order the nodes were started (the head first)."""
        done = self.driver(NODE_IDS)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        ids: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
        return ids

    def stop(self) -> None:
        started = {pid for node in self.nodes for pid in descendants(node.pid)}
        for node in self.nodes:
            _signal_group(node.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for node in self.nodes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                node.wait(max(0.1, deadline - time.monotonic()))
            _signal_group(node.pid, signal.SIGKILL)
        for pid in started | set(processes_naming(str(self.temp))):
            _signal(pid, signal.SIGKILL)
        for node in self.nodes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                node.wait(5)
        self.nodes = []
        shutil.rmtree(self.temp, ignore_errors=True)

    def __enter__(self) -> RayCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def descendants(root: int) -> set[int]:
    """``root`` and every process below it now (``/proc``: each one's parent)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rpartition(")")[2].split()[1])
        parents.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(parents.get(pid, []))
    return found


def processes_naming(text: str) -> list[int]:
    """The processes whose command line holds ``text`` (this cluster's folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if text.encode() in cmdline:
            found.append(int(entry.name))
    return found


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)
