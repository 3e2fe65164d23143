#!/usr/bin/env python3
"""What each start-up mechanism of ``colabenv render`` saves: render with all of them, against
render with one switched off, runs interleaved in random order (docs/decisions/ cites these).

    bench/mechanisms.py [--runs N]

- ``@model``: every model made by ``@dataclass(frozen=True, slots=True)`` instead (what the
  standard library would have; ``@record`` by the same with ``eq=False, repr=False``; a class
  with a ``functools.cached_property`` keeps its ``__dict__``), and by ``@dataclass(frozen=True)``,
  patched in before any model is defined;
- the parsed-catalog cache: ``COLABENV_CACHE_DIR`` under a regular file, so nothing can be
  cached and every catalog file is parsed;
- the garbage collector off: ``gc.disable`` made a no-op, and no ``gc.freeze`` at exit;
- ``packaging.requirements`` imported first, before any colabenv module (a trick the entry
  module used until it stopped paying: docs/decisions/0004-dropped.md).

The help formatter that avoided importing ``shutil`` was removed in issue 33
(docs/decisions/0005-plain-over-clever.md holds what this measured for it).

Each variant runs ``render pytorch`` for a T4 in a fresh interpreter through ``python -c``, as
the baseline does (the entry module, all mechanisms on). Prints the median wall and CPU time of
each, the difference to the baseline and the ratio; a mechanism stays while it saves at least
10% of render (docs/decisions/README.md).
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import T4, wall_s, without_colabenv_overrides

RUN = "import sys; sys.argv = ['colabenv', *sys.argv[1:]]\n"

GC_OFF = "import gc\ngc.disable()\n"
"""What the entry module does first, done first by the variants that patch before importing it."""

ENTRY = RUN + "from colabenv.cli.entry import main\nraise SystemExit(main())\n"

FROZEN_ALONE = (
    "import dataclasses, importlib.util, os, sys, colabenv\n"
    + "path = os.path.join(colabenv.__path__[0], 'models', 'frozen.py')\n"
    + "spec = importlib.util.spec_from_file_location('colabenv.models.frozen', path)\n"
    + "frozen = sys.modules[spec.name] = importlib.util.module_from_spec(spec)\n"
    + "spec.loader.exec_module(frozen)\n"
)
"""``colabenv.models.frozen`` loaded without its package, whose ``__init__`` imports every model
module: patched after ``import colabenv.models.frozen``, ``@model`` would reach only the models
defined outside ``colabenv.models`` (22 of the 83 on render's path)."""

DATACLASSES = (
    RUN
    + GC_OFF
    + FROZEN_ALONE
    + "frozen.model = lambda cls: dataclasses.dataclass(frozen=True)(cls)\n"
    + "frozen.record = lambda cls: dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)\n"
    + "from colabenv.cli.entry import main\nraise SystemExit(main())\n"
)

SLOTTED = (
    RUN
    + GC_OFF
    + FROZEN_ALONE
    + "import functools\n"
    + "def slots(cls):\n"
    + "    return not any(isinstance(v, functools.cached_property) for v in vars(cls).values())\n"
    + "frozen.model = lambda cls: dataclasses.dataclass(frozen=True, slots=slots(cls))(cls)\n"
    + "frozen.record = lambda cls: dataclasses.dataclass(\n"
    + "    frozen=True, slots=slots(cls), eq=False, repr=False\n"
    + ")(cls)\n"
    + "from colabenv.cli.entry import main\nraise SystemExit(main())\n"
)

GC_ON = (
    RUN
    + "import gc\ngc.disable = lambda: None\nfrom colabenv.cli.main import main\nraise SystemExit(main())\n"
)

PACKAGING_FIRST = (
    RUN
    + "import gc\n"
    + "gc.disable()\n"
    + "import packaging.requirements\n"
    + "from colabenv.cli.main import main\n"
    + "try:\n    raise SystemExit(main())\nfinally:\n    gc.freeze()\n"
)


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user and system) of one fresh process: on a shared machine
    the CPU time moves less than the wall time with what else runs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = wall_s(argv, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="colabenv-bench-mechanisms-") as tmp:
        out = Path(tmp) / "setup.sh"
        cache = Path(tmp) / "cache"
        blocker = Path(tmp) / "not-a-directory"
        blocker.write_text("no cache can be made under a file\n")
        env = {**without_colabenv_overrides(), "COLABENV_CACHE_DIR": str(cache)}
        no_cache = {**env, "COLABENV_CACHE_DIR": str(blocker / "cache")}
        render = ["render", "pytorch", *T4, "-o", str(out)]
        variants = {
            "all mechanisms (the entry module)": ([sys.executable, "-c", ENTRY, *render], env),
            "@dataclass(frozen=True) instead of @model": ([sys.executable, "-c", DATACLASSES, *render], env),
            "@dataclass(frozen=True, slots=True) instead": ([sys.executable, "-c", SLOTTED, *render], env),
            "no parsed-catalog cache": ([sys.executable, "-c", ENTRY, *render], no_cache),
            "garbage collector on": ([sys.executable, "-c", GC_ON, *render], env),
            "packaging.requirements imported first": ([sys.executable, "-c", PACKAGING_FIRST, *render], env),
        }
        for argv, environ in variants.values():
            wall_s(argv, environ)  # warm up, and the cache filled
        times: dict[str, list[float]] = {name: [] for name in variants}
        cpu: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.runs):
            order = list(variants)
            random.shuffle(order)
            for name in order:
                argv, environ = variants[name]
                wall, used = timed(argv, environ)
                times[name].append(wall)
                cpu[name].append(used)
    base_name = next(iter(variants))
    base = statistics.median(times[base_name])
    base_cpu = statistics.median(cpu[base_name])
    print(f"render pytorch {' '.join(T4)}, {args.runs} runs of each, interleaved in random order")
    for name, values in times.items():
        median = statistics.median(values)
        delta = (median - base) * 1000
        used = statistics.median(cpu[name])
        print(
            f"{name}: median {median * 1000:.1f} ms (min {min(values) * 1000:.1f}), "
            f"{delta:+.1f} ms, {median / base:.2f}x; CPU {used * 1000:.1f} ms, "
            f"{(used - base_cpu) * 1000:+.1f} ms, {used / base_cpu:.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
