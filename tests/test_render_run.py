"""The bootstrap script run for real: a fresh venv, local indexes, recording apt stand-ins."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.index import LocalIndex
from tests.support.scriptrun import Host, make_host

pytestmark = pytest.mark.slow

PY = f"{sys.version_info.major}.{sys.version_info.minor}"


def _profile(path: Path, default: LocalIndex, pytorch: LocalIndex, *, installer: str,
             extra_packages: str = "") -> Path:
    path.write_text(f"""
name = "run-{installer}"
description = "torch + jax + a package, from the local indexes"
[frameworks]
torch = {{ version = "==2.8.*", torchvision = "*" }}
jax = "==0.5.3"
[packages]
requirements = ["requests>=2.30"{extra_packages}]
[apt]
packages = ["libsndfile1", "ffmpeg"]
[env]
TEAM_TEST_PLAIN = "on"
TEAM_TEST_HOSTILE = "a'b\\"c $(touch {path.parent}/pwned) `touch {path.parent}/pwned2` ; rm -rf /\\nline2 ü"
[install]
installer = "{installer}"
index_url = "{default.url}"
pytorch_index_url = "{pytorch.base_url}"
""")
    return path


def _render(profile: Path, out: Path, colabenv_exe: Path, *extra: str) -> Path:
    argv = [str(colabenv_exe), "render", str(profile), "-o", str(out), "--driver", "560.35.03",
            "--compute-capability", "6.0", "--python", PY, *extra]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    return out


def _installs(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("COLABENV: installing")]


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_first_run_installs_in_order_then_second_run_installs_nothing(
    installer: str, tmp_path: Path, colabenv_exe: Path, default_index: LocalIndex,
    pytorch_index: LocalIndex,
) -> None:
    host = make_host(tmp_path / "host", with_pip=installer == "pip", preinstalled_apt=["ffmpeg"])
    script = _render(_profile(tmp_path / "p.toml", default_index, pytorch_index,
                              installer=installer), tmp_path / "setup.sh", colabenv_exe)

    first = host.run(script)
    assert first.returncode == 0, first.stdout + first.stderr
    lines = first.stdout.splitlines()
    assert lines[-1] == "COLABENV: restart required"
    steps = [line.split("step ", 1)[1] for line in lines if line.startswith("COLABENV: step ")]
    assert steps[:2] == ["preflight", "apt"]
    assert steps[-2:] == ["env", "marker"]
    apt_at = lines.index("COLABENV: apt-get install libsndfile1")
    assert all(lines.index(line) > apt_at for line in _installs(first.stdout))
    assert host.apt_calls() == [
        "apt-get update -q",
        "apt-get install -y -q --no-install-recommends libsndfile1",
    ]
    installed = host.installed()
    assert installed["torch"] == "2.8.0+cu126"
    assert installed["torchvision"] == "0.23.0+cu126"
    assert installed["jax"] == "0.5.3"
    assert installed["jaxlib"] == "0.5.3"
    assert installed["requests"].startswith("2.")
    assert "nvidia-cudnn-cu12" in installed
    marker = host.marker()
    assert marker is not None and marker["changed"] is True
    assert "torch==2.8.0+cu126" in marker["installed"]  # type: ignore[operator]
    assert "apt:libsndfile1" in marker["installed"]  # type: ignore[operator]
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()
    seen = host.new_interpreter(
        "import os; print(os.environ['TEAM_TEST_PLAIN']); "
        "print(repr(os.environ['TEAM_TEST_HOSTILE']))"
    )
    plain, hostile = seen.splitlines()
    assert plain == "on"
    assert hostile == repr(
        f"a'b\"c $(touch {tmp_path}/pwned) `touch {tmp_path}/pwned2` ; rm -rf /\nline2 ü"
    )

    written_at = marker["written_at"]
    second = host.run(script)
    assert second.returncode == 0, second.stderr
    assert _installs(second.stdout) == []
    assert "apt-get install" not in second.stdout
    assert second.stdout.splitlines()[-1] == "COLABENV: nothing changed, no restart needed"
    assert host.installed() == installed
    again = host.marker()
    assert again is not None and again["written_at"] == written_at


def test_failing_install_names_the_step_and_writes_no_marker(
    tmp_path: Path, colabenv_exe: Path, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    host = make_host(tmp_path / "host", with_pip=False)
    profile = _profile(tmp_path / "p.toml", default_index, pytorch_index, installer="uv",
                       extra_packages=', "no-such-package==1.0"')
    script = _render(profile, tmp_path / "setup.sh", colabenv_exe)
    result = host.run(script)
    assert result.returncode != 0
    assert "COLABENV: step pip: default index failed" in result.stderr
    assert "no restart marker written" in result.stderr
    assert host.marker() is None
    assert "restart required" not in result.stdout


def test_preflight_refuses_old_driver_and_wrong_python(
    tmp_path: Path, colabenv_exe: Path, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    host = make_host(tmp_path / "host", with_pip=False)
    host.driver = "470.82.01"
    profile = _profile(tmp_path / "p.toml", default_index, pytorch_index, installer="uv")
    script = _render(profile, tmp_path / "setup.sh", colabenv_exe)
    result = host.run(script)
    assert result.returncode != 0
    assert "NVIDIA driver >= 525.60.13" in result.stderr
    assert "older than 525.60.13" in result.stderr
    assert host.installed() == {} and host.apt_calls() == []

    other = "3.10" if PY != "3.10" else "3.11"
    wrong = subprocess.run(
        [str(colabenv_exe), "render", str(profile), "--cpu", "--python", other],
        capture_output=True, text=True, timeout=60,
    )
    if wrong.returncode == 0:
        (tmp_path / "wrong.sh").write_text(wrong.stdout)
        result = host.run(tmp_path / "wrong.sh")
        assert result.returncode != 0
        assert f"not Python {other}" in result.stderr


def test_missing_gpu_is_refused(
    tmp_path: Path, colabenv_exe: Path, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    host = make_host(tmp_path / "host", with_pip=False)
    (host.bin / "nvidia-smi").unlink()
    script = _render(_profile(tmp_path / "p.toml", default_index, pytorch_index, installer="uv"),
                     tmp_path / "setup.sh", colabenv_exe)
    result = host.run(script)
    assert result.returncode != 0
    assert "no NVIDIA driver found" in result.stderr


def _run_until(host: Host, script: Path, trigger: str) -> bool:
    """Start the script and SIGKILL its whole process group when ``trigger`` is printed."""
    proc = subprocess.Popen(["bash", str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=host.env(),
                            start_new_session=True)
    assert proc.stdout is not None
    killed = False
    deadline = time.monotonic() + 300
    for line in proc.stdout:
        if line.rstrip("\n") == trigger or (trigger.endswith("*") and
                                            line.startswith(trigger[:-1])):
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
            break
        assert time.monotonic() < deadline
    proc.wait(timeout=60)
    return killed


KILL_POINTS = [
    "COLABENV: step apt",
    "COLABENV: apt-get install*",
    "COLABENV: step pip: torch, torchvision",
    "COLABENV: installing*",
    "COLABENV: step pip: default index",
    "COLABENV: step env",
    "COLABENV: step marker",
]


@pytest.mark.parametrize("trigger", KILL_POINTS)
def test_killed_anywhere_rerun_converges(
    trigger: str, tmp_path: Path, colabenv_exe: Path, default_index: LocalIndex,
    pytorch_index: LocalIndex,
) -> None:
    profile = _profile(tmp_path / "p.toml", default_index, pytorch_index, installer="uv")
    script = _render(profile, tmp_path / "setup.sh", colabenv_exe)

    clean = make_host(tmp_path / "clean", with_pip=False)
    assert clean.run(script).returncode == 0

    host = make_host(tmp_path / "killed", with_pip=False)
    assert _run_until(host, script, trigger), f"never saw {trigger!r}"
    if trigger != "COLABENV: step marker":
        assert host.marker() is None
    left_behind = list((host.root / "tmp").glob("colabenv.*"))
    assert left_behind, "a SIGKILLed script cannot clean its work folder"
    bystander = host.root / "tmp" / "colabenv.1.keep"
    bystander.mkdir()
    rerun = host.run(script)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.splitlines()[-1] == "COLABENV: restart required"
    assert sorted((host.root / "tmp").glob("colabenv.*")) == [bystander], \
        "the re-run sweeps the killed run's folder, not one whose process lives (pid 1)"
    assert host.installed() == clean.installed()
    assert host.apt_state.read_text().split() == clean.apt_state.read_text().split()
    marker, reference = host.marker(), clean.marker()
    assert marker is not None and reference is not None
    assert marker["requirements"] == reference["requirements"]
    assert "torch==2.8.0+cu126" in marker["installed"]  # type: ignore[operator]
    assert host.new_interpreter("import os; print(os.environ['TEAM_TEST_PLAIN'])") == "on\n"
