#!/usr/bin/env python3
"""How long `colabenv doctor` takes on a host without a GPU, for a profile of a few packages,
against the bare cost of `python -c "import colabenv"`.

The profile names four small distributions installed in a fresh venv; doctor imports each in
its own child of the venv's interpreter (`--interpreter`), as it does on a notebook runtime.
Both commands run as fresh processes, alternating. The start of the venv's interpreter alone
is printed too: doctor starts one per module (two at a time).

Then doctor's time on a full recorder ring (an hour of samples at 2 s, 1800 records, in the
state directory; nothing to import) against the same doctor with no ring, and against
`python -c "import colabenv"` (the issue's goal: under 300 ms): once on 60 real samples
repeated, once on the same with every record's figures moved as a live host's move (no two
records share a part: what a real ring holds). Prints ``doctor-ring: X ms (Rx vs import
colabenv)`` and ``doctor-ring-varied: ...``, and ends with ``doctor: X ms (Rx vs import
colabenv)`` for the profile run (bench/run takes the last line).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    alternate,
    colabenv_exe,
    compile_colabenv,
    ratio_line,
    wall_s,
    without_colabenv_overrides,
    write_full_ring,
)

PACKAGES = ("alpha", "bravo", "charlie", "delta")


def _venv(root: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    python = root / "venv" / "bin" / "python"
    (site,) = sorted((root / "venv" / "lib").glob("python3*/site-packages"))
    for name in PACKAGES:
        package = site / name
        package.mkdir()
        (package / "__init__.py").write_text(f"NAME = {name!r}\n")
        info = site / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        (info / "top_level.txt").write_text(f"{name}\n")
        (info / "RECORD").write_text(f"{name}/__init__.py,,\n")
    return python


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=21, help="runs of each (default 21)")
    parser.add_argument("--quick", action="store_true", help="5 runs of each")
    args = parser.parse_args()
    runs = 5 if args.quick else args.runs
    compile_colabenv()

    with tempfile.TemporaryDirectory(prefix="colabenv-bench-doctor-") as folder:
        root = Path(folder)
        python = _venv(root)
        profile = root / "team.toml"
        listed = ", ".join(f'"{name}"' for name in PACKAGES)
        profile.write_text(f'schema = 1\nname = "team"\n\n[packages]\nrequirements = [{listed}]\n')
        env = without_colabenv_overrides()
        env["COLABENV_STATE_DIR"] = str(root / "state")
        doctor_argv = [str(colabenv_exe()), "doctor", "--profile", str(profile), "--interpreter", str(python)]
        baseline_argv = [sys.executable, "-c", "import colabenv"]
        start_argv = [str(python), "-c", "pass"]
        doctored, baseline = alternate(
            runs,
            lambda: wall_s(doctor_argv, env=env, cwd=root, ok=(0, 1)),
            lambda: wall_s(baseline_argv, env=env, cwd=root),
            ("colabenv doctor --profile (4 packages)", "python -c 'import colabenv'"),
        )
        started, _ = alternate(
            runs,
            lambda: wall_s(start_argv, cwd=root),
            lambda: wall_s(start_argv, cwd=root),
            ("the venv's python -c pass", "(again)"),
        )
        (root / "ringed").mkdir()
        records = write_full_ring(root / "ringed" / "watch.ring", 2.0)
        (root / "varied").mkdir()
        write_full_ring(root / "varied" / "watch.ring", 2.0, varied=True)
        (root / "empty").mkdir()
        ringed_env = dict(env, COLABENV_STATE_DIR=str(root / "ringed"))
        varied_env = dict(env, COLABENV_STATE_DIR=str(root / "varied"))
        empty_env = dict(env, COLABENV_STATE_DIR=str(root / "empty"))
        plain_argv = [str(colabenv_exe()), "doctor", "--json"]
        ringed, unringed = alternate(
            runs,
            lambda: wall_s(plain_argv, env=ringed_env, cwd=root, ok=(0, 1)),
            lambda: wall_s(plain_argv, env=empty_env, cwd=root, ok=(0, 1)),
            (f"colabenv doctor --json, a full ring ({records} records)", "colabenv doctor --json, no ring"),
        )
        varied, _ = alternate(
            runs,
            lambda: wall_s(plain_argv, env=varied_env, cwd=root, ok=(0, 1)),
            lambda: wall_s(plain_argv, env=empty_env, cwd=root, ok=(0, 1)),
            (f"colabenv doctor --json, a full varied ring ({records} records)", "(no ring again)"),
        )
    print(f"runs: {runs} each")
    print(doctored.describe("ms", 1000))
    print(baseline.describe("ms", 1000))
    print(started.describe("ms", 1000))
    ratio = doctored.median / baseline.median
    print(ringed.describe("ms", 1000))
    print(varied.describe("ms", 1000))
    print(unringed.describe("ms", 1000))
    print(
        f"the ring costs doctor {(ringed.median - unringed.median) * 1000:.0f} ms (varied: "
        f"{(varied.median - unringed.median) * 1000:.0f} ms)"
    )
    ring_ratio = ringed.median / baseline.median
    print(ratio_line("doctor-ring", ringed.median * 1000, "ms", ring_ratio, "import colabenv"))
    varied_ratio = varied.median / baseline.median
    print(ratio_line("doctor-ring-varied", varied.median * 1000, "ms", varied_ratio, "import colabenv"))
    print(ratio_line("doctor", doctored.median * 1000, "ms", ratio, "import colabenv"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
