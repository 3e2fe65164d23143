"""``doctor`` on a full ring whose every record inflates to the codec's bound (3.5 MiB on disk,
nearly 900 MiB of JSON), written by the recorder's own writer: the real CLI in a child process,
its peak resident memory (``wait4``) held under a bound, and a note that says records were left
out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from colabenv.recorder.ring import MAX_SLOTS, RING_NAME
from tests.support.isolation import clean_env
from tests.support.proctree import finish, measured
from tests.support.rings import write_inflating_ring

PEAK_MIB = 300
"""doctor's bound here: what it holds of the ring, its imports and its findings together."""


def test_doctor_on_an_inflating_ring_stays_under_its_memory_bound_and_says_what_it_left_out(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    assert write_inflating_ring(state / RING_NAME) == MAX_SLOTS
    assert (state / RING_NAME).stat().st_size < 4 << 20
    peak_file = tmp_path / "peak"
    proc = subprocess.Popen(
        measured([sys.executable, "-m", "colabenv", "doctor", "--json", "--since", "2h"], peak_file),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(COLABENV_STATE_DIR=str(state)),
        cwd=tmp_path,
    )
    code, stdout, stderr, peak_kib = finish(proc, 300, peak_file)
    assert code in (0, 1), stderr
    assert peak_kib < PEAK_MIB << 10, f"doctor peaked at {peak_kib >> 10} MiB"
    notes = json.loads(stdout)["notes"]
    left_out = [n for n in notes if "left out" in n and RING_NAME in n]
    assert len(left_out) == 1, notes
    assert "MiB" in left_out[0], left_out
