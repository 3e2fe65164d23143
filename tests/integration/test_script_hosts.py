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
from tests.support.interpreter_facts import free_threaded, on_platform
from tests.support.journeys import colabenv_cli
from tests.support.paths import REPO
from tests.support.scriptrun import make_host

pytestmark = pytest.mark.slow

PY = f"{sys.version_info[0]}.{sys.version_info[1]}"
GOLDEN_CPU_ONLY = pytest.mark.skipif(
    sys.version_info < (3, 11),
    reason="the golden cpu-only profile is for Python 3.11 and later (its jax): no script of it"
    " for this interpreter",
)
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


@GOLDEN_CPU_ONLY
@pytest.mark.parametrize(
    ("facts", "helper_line"),
    [
        (
            "aarch64",
            "this is linux_aarch64, the script was rendered for linux_x86_64; "
            "render it with --platform linux_aarch64",
        ),
        (
            "free-threaded",
            f"this is Python {PY}t (free-threaded: Py_GIL_DISABLED), the script was rendered for "
            f"Python {PY} with the GIL; render it with --python {PY}t",
        ),
    ],
)
def test_a_cpu_script_for_x86_64_and_the_gil_stops_on_an_aarch64_or_free_threaded_python(
    tmp_path: Path, facts: str, helper_line: str
) -> None:
    """The script every golden profile renders here (no ``--platform``, no ``--free-threaded``)
    run by a GH200's aarch64 Python or by a free-threaded one: it stops at the preflight, its
    one line the helper's naming both and the flag that fits, and installs nothing. The other
    interpreter's facts are given through CPython's cross-build variables, which its
    ``sysconfig`` reads (``tests/support/interpreter_facts.py``)."""
    script = tmp_path / "setup.sh"
    done = colabenv_cli("render", "cpu-only", "-o", script, "--cpu", "--python", PY, "--offline")
    assert done.returncode == 0, done.stderr
    text = script.read_text()
    assert "--platform" not in text.split("checks=(", 1)[1].split(")", 1)[0]
    machine = make_host(tmp_path / "host", with_pip=False)
    env = on_platform("linux_aarch64") if facts == "aarch64" else free_threaded(tmp_path / "facts")
    ran = machine.run(script, timeout=120, **env)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    # one line, the helper's reason: not "this runtime is not Python X.Y", which it is
    assert ran.stderr.splitlines() == [
        f"COLABENV: step preflight failed: {helper_line}; no restart marker written"
    ]
    assert machine.installed() == {}
    assert machine.apt_calls() == []


@GOLDEN_CPU_ONLY
@pytest.mark.parametrize(
    "flags",
    [
        ("--cpu",),
        ("--cuda", "13.0", "--compute-capability", "9.0", "--driver", "580.95.05", "--allow-unconfirmed"),
    ],
    ids=["cpu", "gh200"],
)
def test_an_aarch64_script_on_x86_64_says_the_helpers_line_alone(
    tmp_path: Path, flags: tuple[str, ...]
) -> None:
    """A script rendered for aarch64 (CPU, or a GH200's with its driver floor) run here, on
    x86-64: its one failure line is the helper's, which names its own fix; the NVIDIA remedy
    (re-render ... with --cpu) is not appended to it, as it is to a driver too old."""
    script = tmp_path / "setup.sh"
    done = colabenv_cli(
        "render", "cpu-only", "-o", script, "--platform", "linux_aarch64", "--python", PY, "--offline", *flags
    )
    assert done.returncode == 0, done.stderr
    machine = make_host(tmp_path / "host", with_pip=False)
    ran = machine.run(script, timeout=120)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert ran.stderr.splitlines() == [
        "COLABENV: step preflight failed: this is linux_x86_64, the script was rendered for "
        "linux_aarch64; render it with --platform linux_x86_64; no restart marker written"
    ]
    assert machine.installed() == {}
