"""The rendered script's preflight on hosts beyond x86-64 NVIDIA (issue 36), run for real by bash
in a venv: a ROCm script on a host without ``/dev/kfd``, with a GPU the build has no kernels
for, or with an older ROCm stops before anything is installed, saying why in one line.

No AMD GPU is at hand: the host's files come from a fake root (``COLABENV_HELPER_ROOT``, read
by the helper alone) built from the recorded KFD trees in ``tests/data/hosts/amd/``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.amd_hosts import amd_root
from tests.support.journeys import colabenv_cli
from tests.support.paths import REPO
from tests.support.scriptrun import make_host

pytestmark = pytest.mark.slow

PY = f"{sys.version_info[0]}.{sys.version_info[1]}"
REMEDY = "re-render on this host, or with --cpu for a CPU-only runtime"


@pytest.mark.parametrize(
    ("host", "kfd", "rocm", "cause"),
    [
        ("mi300x-cpx", False, None, "no AMD GPU driver (no /dev/kfd)"),
        (
            "mi300x-cpx",
            True,
            "6.2.0-15158",
            "ROCm 6.2.0 (/opt/rocm/.info/version) is older than 6.4, which the chosen build needs",
        ),
    ],
)
def test_a_rocm_script_stops_at_the_preflight_on_a_host_it_does_not_fit(
    tmp_path: Path, host: str, kfd: bool, rocm: str | None, cause: str
) -> None:
    script = tmp_path / "setup.sh"
    done = colabenv_cli(
        "render",
        REPO / "profiles" / "golden" / "pytorch.toml",
        "-o",
        script,
        "--rocm",
        "6.4",
        "--gfx",
        "gfx942",
        "--python",
        PY,
        "--allow-unconfirmed",
        "--offline",
    )
    assert done.returncode == 0, done.stderr
    machine = make_host(tmp_path / "host", with_pip=False)
    ran = machine.run(
        script, timeout=120, COLABENV_HELPER_ROOT=str(amd_root(tmp_path, host, kfd=kfd, rocm=rocm))
    )
    assert ran.returncode == 1, ran.stdout + ran.stderr
    failed = [line for line in ran.stderr.splitlines() if line.startswith("COLABENV:")]
    assert failed == [f"COLABENV: step preflight failed: {cause}; {REMEDY}; no restart marker written"]
    assert machine.installed() == {}
    assert machine.apt_calls() == []
