"""``colabenv verify`` once on every node of a Ray cluster (issue 37), for a driver to call
after ``ray.init()``: :func:`verify_ray_nodes`.

One task per alive node, pinned to it (``NodeAffinitySchedulingStrategy``, ``soft=False``) and
run in the ``runtime_env`` that ``colabenv render --format ray`` wrote: Ray builds the
environment on that node (or reuses the one it built), then the task runs ``python -m colabenv
verify --lock LOCK --json`` with the environment's interpreter and hands the report back. A
node whose environment Ray could not build is reported too, with the check ``runtime_env``
and the last line of Ray's error that names one (pip's ``ERROR:`` line, the exception). Each
finding names the node (its ID and address), the check and its message. Ray's
``worker_process_setup_hook`` was not used: it runs in every worker process, not once per
node, and a failure there kills the worker without a report to the driver.

colabenv must be installed beside Ray on every node (in the image or the Python the nodes
run): the environment Ray builds is a clone of that Python's, so ``python -m colabenv`` runs
there. ``ray`` is imported only when called; colabenv does not depend on it.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from colabenv._util.processes import run
from colabenv.errors import InputError, UsageError, printable
from colabenv.models.frozen import model

SETUP_CHECK = "runtime_env"
"""The check a node is reported under when Ray could not build its environment."""
VERIFY_TIMEOUT_S = 600.0


@model
class NodeFinding:
    """A check that failed on a node, and what it said (one line)."""

    check: str
    message: str


@model
class NodeReport:
    node_id: str
    address: str
    findings: tuple[NodeFinding, ...]

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def lines(self) -> tuple[str, ...]:
        """``node ID (ADDRESS): CHECK: MESSAGE`` per finding, or one ``... PASS`` line."""
        head = f"node {self.node_id} ({self.address})"
        if self.ok:
            return (f"{head}: PASS",)
        return tuple(f"{head}: {f.check}: {f.message}" for f in self.findings)


def verify_ray_nodes(
    runtime_env: Mapping[str, object], lock: str | Path, *, timeout_s: float = VERIFY_TIMEOUT_S
) -> tuple[NodeReport, ...]:
    """Verify ``lock`` on every alive node of the cluster the driver is connected to, in
    ``runtime_env``; one report per node, in the order Ray lists them."""
    ray = _ray()
    strategies = importlib.import_module("ray.util.scheduling_strategies")
    path = Path(lock)
    text = read_lock_text(path)
    nodes = [(str(n["NodeID"]), str(n.get("NodeManagerAddress", "?"))) for n in ray.nodes() if n.get("Alive")]
    task = ray.remote(num_cpus=0, max_retries=0)(_verify_here)
    pending = [
        task.options(
            runtime_env=dict(runtime_env),
            scheduling_strategy=strategies.NodeAffinitySchedulingStrategy(node_id, soft=False),
        ).remote(text, path.name, timeout_s)
        for node_id, _ in nodes
    ]
    reports = []
    for (node_id, address), ref in zip(nodes, pending, strict=True):
        try:
            answer = ray.get(ref, timeout=timeout_s + 60)
        except Exception as exc:  # Ray's errors: the environment, the worker, the timeout
            findings: tuple[NodeFinding, ...] = (NodeFinding(_error_check(exc), error_line(str(exc))),)
        else:
            findings = findings_of(answer)
        reports.append(NodeReport(node_id, address, findings))
    return tuple(reports)


def read_lock_text(path: Path) -> str:
    """The lock's text, checked to be a lock here before any node is asked."""
    from colabenv._util.files import FileProblem, read_limited
    from colabenv.lock.file import parse_lock_file

    try:
        text = read_limited(path).decode("utf-8")
    except FileProblem as problem:
        raise InputError(f"{printable(path)}: the lock: {problem}") from None
    except UnicodeError:
        raise InputError(f"{printable(path)}: the lock: not UTF-8 text") from None
    parse_lock_file(text, path)
    return text


def findings_of(answer: Mapping[str, object]) -> tuple[NodeFinding, ...]:
    """What failed in one node's answer: its report's FAIL checks, or why there is none."""
    stdout = str(answer.get("stdout", ""))
    try:
        report = json.loads(stdout)
        checks = report["checks"]
    except (ValueError, KeyError, TypeError):
        said = _first_line(str(answer.get("stderr", "")) or stdout) or "no output"
        return (NodeFinding("verify", f"exit {answer.get('returncode')}: {said}"),)
    return tuple(
        NodeFinding(str(c.get("name")), str(c.get("detail", "")))
        for c in checks
        if isinstance(c, dict) and c.get("status") == "FAIL"
    )


def _verify_here(lock_text: str, lock_name: str, timeout_s: float) -> dict[str, object]:
    """On the node, in its runtime environment: ``colabenv verify --lock`` of the lock's text."""
    with tempfile.TemporaryDirectory(prefix="colabenv-ray-verify-") as folder:
        lock = Path(folder) / (Path(lock_name).name or "colabenv.lock")
        lock.write_text(lock_text, encoding="utf-8")
        argv = [sys.executable, "-m", "colabenv", "verify", "--lock", str(lock), "--json"]
        done = run(argv, timeout=timeout_s, env=dict(os.environ))
    return {
        "returncode": done.returncode,
        "stdout": done.stdout,
        "stderr": done.stderr[-2000:],
        "timed_out": done.timed_out,
    }


def _ray() -> Any:
    try:
        ray = importlib.import_module("ray")
    except ImportError:
        raise UsageError("verify_ray_nodes needs ray in this Python (pip install 'ray[default]')") from None
    if not ray.is_initialized():
        raise UsageError("verify_ray_nodes: connect to the cluster first (ray.init(address=...))")
    return ray


def _error_check(exc: BaseException) -> str:
    return SETUP_CHECK if type(exc).__name__ == "RuntimeEnvSetupError" else "task"


_ERROR_LINE = re.compile(r"^(?:\w+\.)*\w*(?:Error|Exception)\b.*|^ERROR: .*")


def error_line(text: str) -> str:
    """What a Ray error says went wrong, in one line: its last line that names an error (an
    exception, pip's ``ERROR:``), else its first."""
    lines = [re.sub(r"^\S*\(raylet\)\S*\s*", "", line).strip() for line in text.splitlines()]
    named = [line for line in lines if _ERROR_LINE.match(line)]
    return _first_line(named[-1] if named else text)


def _first_line(value: object) -> str:
    lines = [line.strip() for line in str(value).splitlines() if line.strip()]
    return printable(lines[0][:300]) if lines else type(value).__name__
