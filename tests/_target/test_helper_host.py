"""The helper's preflight on hosts beyond x86-64 NVIDIA (issue 36): the platform, AMD GPUs
through ROCm (``/dev/kfd``, each GPU's gfx against the build's list, the host's ROCm) and
free-threading, each asked only where the script passes it.

The real helper runs as a subprocess against a fake root (``COLABENV_HELPER_ROOT``) built from
the recorded KFD trees in ``tests/data/hosts/amd/`` (each folder's ``SOURCE.md`` says where it
was copied from); its own small gfx decoder is held to :mod:`colabenv.host.kfd`'s on them.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from colabenv._target import helper
from colabenv.host.kfd import gfx_name, read_kfd_gpus
from colabenv.models.target import PLATFORMS
from tests.support.amd_hosts import AMD, amd_root
from tests.support.helper_runs import run_helper
from tests.support.interpreter_facts import free_threaded, on_platform

KFD_HOSTS = sorted(p.name for p in AMD.iterdir() if (p / "sys/class/kfd/kfd/topology/nodes").is_dir())
"""The recorded hosts with a KFD topology (the others record one sysfs file or two)."""


@pytest.mark.parametrize("host", KFD_HOSTS)
def test_the_helpers_kfd_reading_agrees_with_colabenv_host_kfd(host: str) -> None:
    root = AMD / host
    theirs = [(gpu.node, gpu.gfx) for gpu in read_kfd_gpus(root).gpus]
    assert theirs, f"{host}: no GPU node recorded"
    assert helper.kfd_gpus(str(root)) == theirs


@given(st.integers(min_value=0, max_value=2_000_000))
def test_the_helpers_gfx_decoder_agrees_with_colabenv_host_kfd(version: int) -> None:
    assert helper.gfx_name(version) == gfx_name(version)


def _preflight(
    tmp_path: Path,
    *extra: str,
    root: Path | None = None,
    python: str | None = None,
    reqs_text: str = "",
    **env: str,
) -> subprocess.CompletedProcess[str]:
    reqs, env_file = tmp_path / "reqs.txt", tmp_path / "env.bin"
    reqs.write_text(reqs_text)
    env_file.write_bytes(b"")
    minor = f"{sys.version_info[0]}.{sys.version_info[1]}"
    args = [
        "--python",
        python or minor,
        "--driver",
        "-",
        "--state",
        str(tmp_path / "state"),
        "--hash",
        "sha256:abc",
    ]
    args += ["--env", str(env_file), "--reqs", str(reqs), *extra]
    environ = {"PATH": "/usr/bin:/bin", **env}
    if root is not None:
        environ[helper.HELPER_ROOT_VARIABLE] = str(root)
    return run_helper(tmp_path, "preflight", *args, env=environ)


def test_a_rocm_target_is_refused_without_dev_kfd(tmp_path: Path) -> None:
    done = _preflight(tmp_path, "--rocm-gfx", "gfx942", root=amd_root(tmp_path, "mi300x-cpx", kfd=False))
    assert done.returncode == 4
    assert done.stdout.strip() == "no AMD GPU driver (no /dev/kfd)"


@pytest.mark.parametrize(
    ("host", "gfx"), [("mi300x-cpx", "gfx942"), ("mi210-x8", "gfx90a"), ("rx7900xtx-tinygrad", "gfx1100")]
)
def test_a_gpu_whose_gfx_the_build_lacks_is_refused_naming_it_and_the_list(
    tmp_path: Path, host: str, gfx: str
) -> None:
    root = amd_root(tmp_path, host)
    first = read_kfd_gpus(AMD / host).gpus[0].node
    refused = _preflight(tmp_path, "--rocm-gfx", "gfx908,gfx1201", root=root)
    assert refused.returncode == 4, refused.stderr
    assert refused.stdout.strip() == (
        f"the AMD GPU of KFD node {first} is {gfx}; the chosen build has kernels for gfx908, gfx1201 only"
    )
    fits = _preflight(tmp_path, "--rocm-gfx", f"gfx908,{gfx}", root=root)
    assert fits.returncode == 0, fits.stdout + fits.stderr
    assert fits.stdout.splitlines()[0] == "installed"
    overridden = _preflight(tmp_path, "--rocm-gfx", "gfx908", root=root, HSA_OVERRIDE_GFX_VERSION="9.0.8")
    assert overridden.returncode == 0, "the runtime takes the GPUs for the override's gfx: not asked"


def test_a_gpu_that_states_no_gfx_is_not_refused(tmp_path: Path) -> None:
    """A kernel older than ``gfx_target_version`` (the MI25 recording): the gfx is not known,
    so there is nothing to refuse."""
    done = _preflight(tmp_path, "--rocm-gfx", "gfx942", root=amd_root(tmp_path, "mi25-no-gfx-version"))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("installed", "rocm_path", "refused"),
    [
        (
            "6.2.0-15158",
            None,
            "ROCm 6.2.0 (/opt/rocm/.info/version) is older than 6.4, which the chosen build needs",
        ),
        ("6.4.0-15158", None, None),
        ("7.0.1", None, None),
        ("6.4a", None, None),  # not a ROCm version: not readable, not asked
        ("6.2.0", "/nowhere", None),  # $ROCM_PATH is read, and holds no ROCm
    ],
)
def test_a_rocm_older_than_the_builds_is_refused_where_readable(
    tmp_path: Path, installed: str, rocm_path: str | None, refused: str | None
) -> None:
    root = amd_root(tmp_path, "mi300x-cpx", rocm=installed)
    env = {"ROCM_PATH": rocm_path} if rocm_path else {}
    done = _preflight(tmp_path, "--rocm-gfx", "gfx942", "--rocm", "6.4", root=root, **env)
    if refused is None:
        assert done.returncode == 0, done.stdout + done.stderr
    else:
        assert (done.returncode, done.stdout.strip()) == (4, refused)


def test_rocm_path_names_where_the_hosts_rocm_is(tmp_path: Path) -> None:
    root = amd_root(tmp_path, "mi300x-cpx")
    (root / "srv" / "rocm-6.1" / ".info").mkdir(parents=True)
    (root / "srv" / "rocm-6.1" / ".info" / "version").write_text("6.1.2-1\n")
    done = _preflight(tmp_path, "--rocm-gfx", "gfx942", "--rocm", "6.4", root=root, ROCM_PATH="/srv/rocm-6.1")
    assert done.returncode == 4
    assert done.stdout.strip() == (
        "ROCm 6.1.2 (/srv/rocm-6.1/.info/version) is older than 6.4, which the chosen build needs"
    )


PY = f"{sys.version_info[0]}.{sys.version_info[1]}"


def test_a_script_without_a_platform_is_for_x86_64_and_refused_on_another(tmp_path: Path) -> None:
    """A script for x86-64 (no ``--platform``: every golden render's) run by an aarch64 Python
    (a GH200) stops at exit 3, as for another Python (the script's exit 4 is its driver's);
    the line, on stdout (the script's message in place of "not Python X.Y"), names both
    platforms and the flag that fits."""
    refused = _preflight(tmp_path, **on_platform("linux_aarch64"))
    assert (refused.returncode, refused.stderr) == (3, ""), refused.stdout
    assert refused.stdout.strip() == (
        "this is linux_aarch64, the script was rendered for linux_x86_64; "
        "render it with --platform linux_aarch64"
    )
    assert _preflight(tmp_path, **on_platform("linux_x86_64")).returncode == 0
    fits = _preflight(tmp_path, "--platform", "linux_aarch64", **on_platform("linux_aarch64"))
    assert fits.returncode == 0, fits.stdout + fits.stderr


def test_a_cpu_or_pure_python_script_is_refused_on_another_platform_too(tmp_path: Path) -> None:
    """No driver, no GPU check, only a pure-Python requirement that is installed here (pytest):
    the pins were still checked against x86-64's tags, so the script is x86-64's."""
    here = _preflight(tmp_path, reqs_text="pytest\n", **on_platform("linux_x86_64"))
    assert (here.returncode, here.stdout.splitlines()[0]) == (0, "installed"), here.stderr
    refused = _preflight(tmp_path, reqs_text="pytest\n", **on_platform("linux_aarch64"))
    assert refused.returncode == 3
    assert "the script was rendered for linux_x86_64" in refused.stdout


def test_another_platform_is_refused_naming_both(tmp_path: Path) -> None:
    """A platform the script names is the helper's exit 8 (its line names the render that fits),
    not exit 4, which a driver too old and the AMD GPUs share and the script adds a remedy to."""
    refused = _preflight(tmp_path, "--platform", "linux_aarch64", **on_platform("linux_x86_64"))
    assert refused.returncode == 8
    assert refused.stdout.strip() == (
        "this is linux_x86_64, the script was rendered for linux_aarch64; "
        "render it with --platform linux_x86_64"
    )
    here = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    assert _preflight(tmp_path, "--platform", here).returncode == 0


def test_a_platform_colabenv_does_not_render_for_names_the_ones_it_does(tmp_path: Path) -> None:
    refused = _preflight(tmp_path, **on_platform("macosx_14_0_arm64"))
    assert refused.returncode == 3
    assert refused.stdout.strip() == (
        "this is macosx_14_0_arm64, the script was rendered for linux_x86_64; "
        "colabenv renders for linux_x86_64 and linux_aarch64 only"
    )


def test_the_helpers_platforms_are_colabenvs() -> None:
    assert helper.RENDERED_PLATFORMS == PLATFORMS


@pytest.mark.skipif(bool(sysconfig.get_config_var("Py_GIL_DISABLED")), reason="a free-threaded Python")
def test_a_free_threaded_target_refuses_a_python_with_the_gil(tmp_path: Path) -> None:
    refused = _preflight(tmp_path, "--free-threaded", "yes")
    assert refused.returncode == 3
    assert refused.stdout.strip() == (
        f"this is Python {PY} with the GIL, the script was rendered for Python {PY}t "
        f"(free-threaded); render it with --python {PY}"
    )
    said = _preflight(tmp_path, "--free-threaded", "no")
    assert said.returncode == 0, "a target that says it has the GIL takes this one"


def test_a_script_for_a_python_with_the_gil_is_refused_by_a_free_threaded_one(tmp_path: Path) -> None:
    """No ``--free-threaded``: the script is for a Python with the GIL (every golden render's),
    whose pins a free-threaded interpreter's pip could not install (no cpXYt wheel: an sdist
    build, or a late failure)."""
    facts = free_threaded(tmp_path / "facts")
    refused = _preflight(tmp_path, **facts)
    assert (refused.returncode, refused.stderr) == (3, ""), refused.stdout
    assert refused.stdout.strip() == (
        f"this is Python {PY}t (free-threaded: Py_GIL_DISABLED), the script was rendered for "
        f"Python {PY} with the GIL; render it with --python {PY}t"
    )
    fits = _preflight(tmp_path, "--free-threaded", "yes", **facts)
    assert fits.returncode == 0, fits.stdout + fits.stderr


def test_a_skipped_preflight_checks_neither(tmp_path: Path) -> None:
    """``COLABENV_SKIP_PREFLIGHT`` (an image build) passes ``--python -``: no host check."""
    facts = {**free_threaded(tmp_path / "facts"), **on_platform("linux_aarch64")}
    done = _preflight(tmp_path, python="-", **facts)
    assert done.returncode == 0, done.stdout + done.stderr
