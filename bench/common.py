"""What the benchmarks share: timing fresh processes, medians, the final ratio line, and the
test support code (stand-in wheels, local indexes, fake hosts) on ``sys.path``."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
T4 = ("--driver", "550.54.15", "--compute-capability", "7.5", "--python", PY)


def compile_colabenv() -> None:
    """Byte-compile colabenv as an installed wheel is: with PYTHONDONTWRITEBYTECODE set, an
    editable checkout would otherwise recompile every module on every run, while the floor's
    packaging modules are already compiled in site-packages."""
    import compileall

    import colabenv

    compileall.compile_dir(str(Path(colabenv.__file__).parent), quiet=1)


def colabenv_exe() -> Path:
    """The console script beside the running interpreter (the benchmarks' colabenv)."""
    exe = Path(sys.executable).parent / "colabenv"
    if not exe.exists():
        raise SystemExit(
            f"no colabenv console script beside {sys.executable}; "
            "run the benchmarks with the project's virtual environment"
        )
    return exe


def wall_s(
    argv: Sequence[str | Path],
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 1200,
    ok: Sequence[int] = (0,),
) -> float:
    """Seconds one fresh process takes, start to exit; it must exit with a code of ``ok``."""
    started = time.perf_counter()
    done = subprocess.run(
        [str(a) for a in argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode not in ok:
        raise SystemExit(
            f"{' '.join(map(str, argv))} failed ({done.returncode}): "
            f"{done.stderr.decode(errors='replace')[-2000:]}"
        )
    return elapsed


@dataclass(frozen=True)
class Series:
    label: str
    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def describe(self, unit: str = "s", scale: float = 1.0) -> str:
        return (
            f"{self.label}: median {self.median * scale:.{_digits(unit)}f} {unit} "
            f"(min {min(self.values) * scale:.{_digits(unit)}f}, "
            f"max {max(self.values) * scale:.{_digits(unit)}f}, n={len(self.values)})"
        )


def _digits(unit: str) -> int:
    return 0 if unit == "ms" else 2


def alternate(
    runs: int,
    measured: Callable[[], float],
    baseline: Callable[[], float],
    labels: tuple[str, str],
    warmup: bool = True,
) -> tuple[Series, Series]:
    """Run the two alternately (so drift hits both alike), after one unrecorded run of each."""
    if warmup:
        measured()
        baseline()
    first: list[float] = []
    second: list[float] = []
    for _ in range(runs):
        first.append(measured())
        second.append(baseline())
    return Series(labels[0], tuple(first)), Series(labels[1], tuple(second))


def ratio_line(name: str, value: float, unit: str, ratio: float, baseline: str) -> str:
    """The line every benchmark ends with: ``NAME: VALUE UNIT (RATIOx vs BASELINE)``."""
    shown = f"{value:.0f}" if unit == "ms" else f"{value:.2f}"
    return f"{name}: {shown} {unit} ({ratio:.2f}x vs {baseline})"


def without_colabenv_overrides() -> dict[str, str]:
    """This environment without its ``COLABENV_*`` variables, and offline (``COLABENV_OFFLINE``):
    the benchmarks measure what they always did, with nothing asked beyond 127.0.0.1; the index
    check has its own (bench/index_check.py)."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("COLABENV_")}
    return {**kept, "COLABENV_OFFLINE": "1"}


def write_full_ring(path: Path, interval: float = 2.0, *, varied: bool = False) -> int:
    """A full recorder ring at ``path`` for ``interval``: 60 real samples of this host, repeated
    with their times moved on so that the last is now. ``varied``: each record's figures moved
    as a live host's move (each process's RSS and start time, read against the uptime, host
    memory, the cgroup's usage, free space), so that no two records share a part. Returns the
    number of records."""
    import dataclasses
    import random

    from colabenv.host.sampler import Sampler
    from colabenv.models import RingHeader, Sample
    from colabenv.recorder.ring import RingWriter, slots_for

    run = Sampler(kernel_pid=os.getpid(), paths=("/tmp",)).start()
    real = []
    for _ in range(60):
        real.append(run.sample())
        time.sleep(0.02)
    run.close()
    slots = slots_for(interval)
    writer = RingWriter.create(path, RingHeader(1, os.getpid(), os.getpid(), interval, time.time(), slots))
    began = time.time() - interval * slots
    moved = random.Random(24)

    def vary(sample: Sample) -> Sample:
        page = 4096
        jitter = moved.uniform(-0.01, 0.01)
        processes = tuple(
            dataclasses.replace(
                p,
                rss=p.rss + page * moved.randrange(200),
                started=None if p.started is None else p.started + jitter,
            )
            for p in sample.processes
        )
        memory = sample.memory and dataclasses.replace(
            sample.memory, available=max(0, sample.memory.available - page * moved.randrange(1000))
        )
        cgroup = sample.cgroup and dataclasses.replace(
            sample.cgroup, usage=sample.cgroup.usage + page * moved.randrange(1000)
        )
        filesystems = tuple(
            dataclasses.replace(f, free=max(0, f.free - page * moved.randrange(100)))
            for f in sample.filesystems
        )
        return dataclasses.replace(
            sample, processes=processes, memory=memory, cgroup=cgroup, filesystems=filesystems
        )

    for n in range(slots):
        sample = real[n % len(real)]
        writer.append(dataclasses.replace(vary(sample) if varied else sample, time=began + interval * n))
    writer.close()
    return slots
