"""``render --format slurm`` on a real single-node Slurm cluster (``tests.support.slurm``):
``slurmctld`` and ``slurmd`` on localhost, jobs submitted with ``sbatch``.

The lock is of two pure-Python wheels from a local index on 127.0.0.1 and a CPU profile, so a
job builds its environment in seconds. Skipped, with the reason, where Slurm cannot be started
(no root, ``slurm-wlm`` or ``munge`` not installed: ``.ci/run`` installs them where it can).
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.fixtures import Runner, console_script
from tests.support.index import LocalIndex
from tests.support.isolation import clean_env
from tests.support.slurm import SlurmCluster, slurm_problem
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.slow

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
PROFILE = """\
schema = 1
name = "team-cpu"
description = "a small CPU job"

[packages]
requirements = ["tinyjob"]

[install]
index_url = "{index}"

[verify]
require_gpu = false

[job]
cpus = 1
time = "10"
memory = "256M"
"""
COMMAND = ("python", "-c", "import tinyjob, sys; print('tinyjob', tinyjob.__version__, 'in', sys.prefix)")
PASS_LINES = ("PASS  marker", "PASS  versions", "all checks passed")


@dataclass
class Setup:
    cluster: SlurmCluster
    index: LocalIndex
    folder: Path
    """The build folder: ``setup.sh`` and ``job.sbatch``; jobs are submitted from it."""
    work: Path

    def env(self, name: str, **extra: str) -> dict[str, str]:
        """What a job of the test ``name`` is submitted with: the test's colabenv on PATH, its
        own installer caches (so every build downloads), and ``extra``."""
        caches = self.work / f"caches-{name}"
        return clean_env(
            PATH=f"{console_script().parent}:/usr/bin:/bin",
            UV_CACHE_DIR=str(caches / "uv"),
            PIP_CACHE_DIR=str(caches / "pip"),
            TMPDIR=str(self.work),
            **extra,
        )

    def log(self, job: str) -> str:
        path = self.folder / f"slurm-{job}.out"
        return path.read_text(errors="replace") if path.exists() else ""


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    problem = slurm_problem()
    if problem is not None:
        pytest.skip(problem)
    work = tmp_path_factory.mktemp("slurm")
    wheels = work / "wheels"
    build_wheel(wheels, "tinyjob", "1.0", requires=["tinydep>=1"])
    build_wheel(wheels, "tinydep", "2.0")
    cluster = SlurmCluster(work / "cluster")
    with LocalIndex(wheels) as index:
        profile = work / "team.toml"
        profile.write_text(PROFILE.format(index=index.url))
        run = Runner(console_script(), work)
        locked = run("lock", profile, "-o", work / "team.lock", "--cpu", "--python", PY, timeout=300)
        assert locked.returncode == 0, locked.stderr
        rendered = run(
            "render", profile, "--lock", work / "team.lock", "--cpu", "--python", PY,
            "--format", "slurm", "-o", work / "job", "--", *COMMAND,
        )  # fmt: skip
        assert rendered.returncode == 0, rendered.stderr
        cluster.start()
        try:
            yield Setup(cluster, index, work / "job", work)
        finally:
            cluster.stop()


def _pass(log: str) -> None:
    for line in PASS_LINES:
        assert line in log, log
    assert re.search(r"^tinyjob 1\.0 in /", log, re.MULTILINE), log


def test_two_jobs_share_one_environment_built_once(setup: Setup) -> None:
    """Two jobs at once on a shared environment root: one builds it (under the lock), the other
    waits and reuses it with no install; both verify and run the command."""
    root = setup.work / "envs-shared"
    env = setup.env("shared", COLABENV_ENV_ROOT=str(root))
    first = setup.cluster.submit(setup.folder / "job.sbatch", env)
    second = setup.cluster.submit(setup.folder / "job.sbatch", env)
    states = (setup.cluster.wait(first), setup.cluster.wait(second))
    logs = [setup.log(first), setup.log(second)]
    assert states == ("COMPLETED", "COMPLETED"), logs
    for log in logs:
        _pass(log)
    built = [log for log in logs if "COLABENV: building the environment" in log]
    reused = [log for log in logs if "(no install)" in log]
    assert len(built) == 1 and len(reused) == 1, logs
    assert "installing the lockfile" in built[0]
    assert "installing" not in reused[0] and "step pip" not in reused[0], reused[0]
    (link,) = [path for path in root.iterdir() if path.is_symlink()]
    assert link.resolve().parent == root and (link / "bin" / "python").exists()


def test_a_job_of_its_own_environment_removes_it_when_done(setup: Setup) -> None:
    """Without ``COLABENV_ENV_ROOT`` the job builds under its ``$TMPDIR`` and removes it."""
    job = setup.cluster.submit(setup.folder / "job.sbatch", setup.env("own"))
    assert setup.cluster.wait(job) == "COMPLETED", setup.log(job)
    log = setup.log(job)
    _pass(log)
    assert "(this job's own)" in log
    assert not (setup.work / f"colabenv-job-{job}").exists()


def test_a_job_cancelled_mid_install_leaves_the_next_a_clean_start(setup: Setup) -> None:
    """``scancel`` while the install waits on the index: no environment is linked into place,
    and the next job removes what a job killed outright left, builds a whole one and passes
    verify."""
    root = setup.work / "envs-cancel"
    env = setup.env("cancel", COLABENV_ENV_ROOT=str(root))
    setup.index.latency_s = 20.0
    try:
        job = setup.cluster.submit(setup.folder / "job.sbatch", env)
        deadline = time.monotonic() + 60
        while "installing the lockfile" not in setup.log(job):
            assert time.monotonic() < deadline, setup.log(job)
            assert setup.cluster.state(job) in ("PENDING", "RUNNING", "CONFIGURING"), setup.log(job)
            time.sleep(0.2)
        assert any(path.name.startswith(tuple("0123456789abcdef")) for path in root.iterdir())
        cancel = setup.cluster.command("scancel", job)
        assert cancel.returncode == 0, cancel.stderr
        assert setup.cluster.wait(job) == "CANCELLED", setup.log(job)
    finally:
        setup.index.latency_s = 0.0
    assert not [path for path in root.iterdir() if path.is_symlink()], sorted(root.iterdir())
    assert "all checks passed" not in setup.log(job)
    (lock,) = root.glob("*.lock")
    killed = root / f"{lock.stem}.env-999999"  # what a job killed outright (SIGKILL) leaves
    (killed / "bin").mkdir(parents=True)

    after = setup.cluster.submit(setup.folder / "job.sbatch", env)
    assert setup.cluster.wait(after) == "COMPLETED", setup.log(after)
    log = setup.log(after)
    _pass(log)
    assert "COLABENV: building the environment" in log
    assert f"COLABENV: removing the unfinished environment {killed}" in log
    (link,) = [path for path in root.iterdir() if path.is_symlink()]
    kept = sorted(path.name for path in root.iterdir())
    assert kept == sorted([link.name, f"{link.name}.lock", f"{link.name}.env-{after}"]), kept
