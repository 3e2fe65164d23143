"""A real single-node Slurm cluster on localhost for the tests of ``render --format slurm``.

``SlurmCluster(work).start()`` writes a ``slurm.conf`` for this host (one CPU node, no GRES, no
cgroups: ``proctrack/linuxproc``, ``task/none``), starts ``munged`` with its own key, socket and
state, then ``slurmctld`` and ``slurmd``, each with its own spool and state folders under
``work``, and waits for the node to be idle; ``stop()`` ends them (by the pids they wrote).
The daemons run as root (``SlurmUser=root``): ``slurm_problem()`` says why a cluster cannot be
started here (not root, a binary missing), for a skip.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.support.ports import free_ports

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo", "flock")
SBIN = Path("/usr/sbin")
"""Where Debian puts the daemons (not on a user's PATH)."""
CONF = """\
ClusterName=colabenvtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={work}/ctld-state
SlurmdSpoolDir={work}/d-spool
SlurmctldPidFile={work}/slurmctld.pid
SlurmdPidFile={work}/slurmd.pid
SlurmctldLogFile={work}/slurmctld.log
SlurmdLogFile={work}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
KillWait=5
InactiveLimit=0
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=30
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def slurm_problem() -> str | None:
    """Why no Slurm cluster can be started here (None: one can)."""
    if os.geteuid() != 0:
        return "a local Slurm cluster needs root (slurmd runs jobs as their users); run as root"
    missing = [name for name in BINARIES if shutil.which(name) is None and not (SBIN / name).exists()]
    if missing:
        return (
            f"Slurm is not installed here ({', '.join(missing)} missing): "
            "apt-get install -y slurm-wlm munge (as .ci/run does)"
        )
    return None


def _binary(name: str) -> str:
    return shutil.which(name) or str(SBIN / name)


class SlurmCluster:
    """One node (this host) and its controller, with everything under ``work``."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.host = socket.gethostname().split(".")[0]
        self.conf = work / "slurm.conf"
        self.munge_socket = work / "munge" / "munge.socket"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self._pid_files = [work / "slurmd.pid", work / "slurmctld.pid", work / "munge" / "munged.pid"]

    def start(self, timeout: float = 60) -> None:
        """Write the configuration, start the daemons, wait for the node to be idle; on any
        failure what was started is stopped, and the logs are in the error."""
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise

    def _start(self, timeout: float) -> None:
        for folder in ("ctld-state", "d-spool", "munge"):
            (self.work / folder).mkdir(parents=True, exist_ok=True)
        os.chmod(self.work / "munge", 0o755)
        key = self.work / "munge" / "munge.key"
        key.write_bytes(os.urandom(128))
        key.chmod(0o600)
        ctld_port, d_port = free_ports(2)
        self.conf.write_text(
            CONF.format(
                host=self.host,
                ctld_port=ctld_port,
                d_port=d_port,
                munge_socket=self.munge_socket,
                work=self.work,
                cpus=os.cpu_count() or 1,
            )
        )
        munge = self.work / "munge"
        self._run(
            _binary("munged"),
            "--force",
            f"--key-file={key}",
            f"--socket={self.munge_socket}",
            f"--pid-file={munge / 'munged.pid'}",
            f"--log-file={munge / 'munged.log'}",
            f"--seed-file={munge / 'munged.seed'}",
        )
        self._run(_binary("slurmctld"), "-f", str(self.conf))
        self._run(_binary("slurmd"), "-f", str(self.conf), "-N", self.host)
        self._wait_idle(timeout)

    def _run(self, *argv: str) -> None:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=self.env)
        if done.returncode != 0:
            raise RuntimeError(f"{argv[0]} did not start: {done.stderr.strip()}\n{self.logs()}")

    def _wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            done = self.command("sinfo", "-h", "-N", "-o", "%t")
            state = done.stdout.strip()
            if done.returncode == 0 and state.startswith("idle"):
                return
            time.sleep(0.5)
        raise RuntimeError(f"the node is not idle after {timeout:.0f} s ({state!r})\n{self.logs()}")

    def command(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """A Slurm client command against this cluster."""
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=self.env)

    def submit(self, script: Path, env: dict[str, str]) -> str:
        """``sbatch`` from the script's folder with ``env`` (exported into the job); the job id."""
        done = subprocess.run(
            ["sbatch", "--parsable", script.name],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=script.parent,
            env={**env, "SLURM_CONF": str(self.conf)},
        )
        assert done.returncode == 0, done.stderr + self.logs()
        return done.stdout.strip().split(";")[0]

    def state(self, job: str) -> str:
        """The job's state (PENDING, RUNNING, COMPLETED, FAILED, CANCELLED ...)."""
        done = self.command("scontrol", "show", "job", job, "-o")
        for word in done.stdout.split():
            if word.startswith("JobState="):
                return word.split("=", 1)[1]
        return "GONE"

    def wait(self, job: str, timeout: float = 120) -> str:
        """The job's final state, once it has one."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.state(job)
            if state not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED"):
                return state
            time.sleep(0.3)
        raise AssertionError(f"job {job} did not end in {timeout:.0f} s\n{self.logs()}")

    def logs(self) -> str:
        parts = []
        for name in ("slurmctld.log", "slurmd.log", "munge/munged.log"):
            path = self.work / name
            if path.exists():
                parts.append(f"--- {name}\n" + path.read_text(errors="replace")[-2000:])
        return "\n".join(parts)

    def stop(self) -> None:
        """End the daemons by the pids they wrote, then wait for them to be gone."""
        pids = []
        for path in self._pid_files:
            try:
                pids.append(int(path.read_text().split()[0]))
            except (OSError, ValueError, IndexError):
                continue
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        deadline = time.monotonic() + 15
        for pid in pids:
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.1)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
