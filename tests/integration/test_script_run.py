"""The bootstrap script run for real: a fresh venv, local indexes, recording apt stand-ins."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import pytest

from tests.support.fixtures import Runner, venv_template
from tests.support.index import LocalIndex
from tests.support.isolation import uv_bin
from tests.support.scriptrun import Host, make_host
from tests.support.throttle import ThrottledProxy

pytestmark = pytest.mark.slow

PY = f"{sys.version_info.major}.{sys.version_info.minor}"


def _profile(
    path: Path, default: LocalIndex, pytorch: LocalIndex, *, installer: str, extra_packages: str = ""
) -> Path:
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


def _render(profile: Path, out: Path, runner: Runner, *extra: str) -> Path:
    proc = runner(
        "render",
        profile,
        "-o",
        out,
        "--driver",
        "560.35.03",
        "--compute-capability",
        "6.0",
        "--python",
        PY,
        *extra,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    return out


def _installs(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("COLABENV: installing")]


def test_bash_in_posix_mode_runs_the_script(
    tmp_path: Path,
    runner: Runner,
    default_index: LocalIndex,
    pytorch_index: LocalIndex,
    request: pytest.FixtureRequest,
) -> None:
    """``POSIXLY_CORRECT`` in the environment starts bash in POSIX mode, where ``$'\\n'`` inside
    a quoted expansion stays literal: the script leaves POSIX mode before it reads the preflight's
    answer (issue 35), and installs, then finds nothing to do, as in bash's own mode."""
    host = make_host(tmp_path / "host", with_pip=False, venv_from=venv_template(request, False))
    script = _render(
        _profile(tmp_path / "p.toml", default_index, pytorch_index, installer="uv"), tmp_path / "s.sh", runner
    )
    first = host.run(script, POSIXLY_CORRECT="1")
    assert first.returncode == 0, first.stdout + first.stderr
    assert first.stdout.splitlines()[-1] == "COLABENV: restart required"
    assert host.installed()["torch"] == "2.8.0+cu126"
    second = host.run(script, POSIXLY_CORRECT="1")
    assert second.returncode == 0, second.stdout + second.stderr
    assert second.stdout.splitlines()[-1] == "COLABENV: nothing changed, no restart needed"


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_first_run_installs_in_order_then_second_run_installs_nothing(
    installer: str,
    tmp_path: Path,
    runner: Runner,
    default_index: LocalIndex,
    pytorch_index: LocalIndex,
    request: pytest.FixtureRequest,
) -> None:
    pip = installer == "pip"
    host = make_host(
        tmp_path / "host", with_pip=pip, preinstalled_apt=["ffmpeg"], venv_from=venv_template(request, pip)
    )
    script = _render(
        _profile(tmp_path / "p.toml", default_index, pytorch_index, installer=installer),
        tmp_path / "setup.sh",
        runner,
    )

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
        "import os; print(os.environ['TEAM_TEST_PLAIN']); print(repr(os.environ['TEAM_TEST_HOSTILE']))"
    )
    plain, hostile = seen.splitlines()
    assert plain == "on"
    assert hostile == repr(f"a'b\"c $(touch {tmp_path}/pwned) `touch {tmp_path}/pwned2` ; rm -rf /\nline2 ü")

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
    tmp_path: Path, runner: Runner, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    host = make_host(tmp_path / "host", with_pip=False)
    profile = _profile(
        tmp_path / "p.toml",
        default_index,
        pytorch_index,
        installer="uv",
        extra_packages=', "no-such-package==1.0"',
    )
    script = _render(profile, tmp_path / "setup.sh", runner)
    result = host.run(script)
    assert result.returncode != 0
    assert "COLABENV: step pip: default index failed" in result.stderr
    assert "no restart marker written" in result.stderr
    assert host.marker() is None
    assert "restart required" not in result.stdout


def test_preflight_refuses_old_driver_and_wrong_python(
    tmp_path: Path, runner: Runner, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    host = make_host(tmp_path / "host", with_pip=False)
    host.driver = "470.82.01"
    profile = _profile(tmp_path / "p.toml", default_index, pytorch_index, installer="uv")
    script = _render(profile, tmp_path / "setup.sh", runner)
    result = host.run(script)
    assert result.returncode != 0
    assert "NVIDIA driver >= 525.60.13" in result.stderr
    assert "older than 525.60.13" in result.stderr
    assert host.installed() == {} and host.apt_calls() == []

    other = "3.10" if PY != "3.10" else "3.11"
    wrong = runner("render", profile, "--cpu", "--python", other, timeout=60)
    if wrong.returncode == 0:
        (tmp_path / "wrong.sh").write_text(wrong.stdout)
        result = host.run(tmp_path / "wrong.sh")
        assert result.returncode != 0
        assert f"not Python {other}" in result.stderr


def test_missing_gpu_is_refused(
    tmp_path: Path, runner: Runner, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    host = make_host(tmp_path / "host", with_pip=False)
    (host.bin / "nvidia-smi").unlink()
    script = _render(
        _profile(tmp_path / "p.toml", default_index, pytorch_index, installer="uv"),
        tmp_path / "setup.sh",
        runner,
    )
    result = host.run(script)
    assert result.returncode != 0
    assert "no NVIDIA driver found" in result.stderr


def _run_until(host: Host, script: Path, trigger: str) -> bool:
    """Start the script and SIGKILL its whole process group when ``trigger`` is printed."""
    proc = subprocess.Popen(
        ["bash", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=host.env(),
        start_new_session=True,
    )
    assert proc.stdout is not None
    killed = False
    deadline = time.monotonic() + 300
    for line in proc.stdout:
        if line.rstrip("\n") == trigger or (trigger.endswith("*") and line.startswith(trigger[:-1])):
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
            break
        assert time.monotonic() < deadline
    proc.wait(timeout=60)
    return killed


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_ctrl_c_during_the_install_says_interrupted(
    installer: str,
    tmp_path: Path,
    runner: Runner,
    default_index: LocalIndex,
    pytorch_index: LocalIndex,
    request: pytest.FixtureRequest,
) -> None:
    """Ctrl-C (SIGINT to the whole foreground group) while the installer downloads said "the
    installer failed without a message" (issue 34); it says the run was interrupted."""
    pip = installer == "pip"
    host = make_host(tmp_path / "host", with_pip=pip, venv_from=venv_template(request, pip))
    with ThrottledProxy(pytorch_index.base_url, 64 << 10, hold_files=True) as slow:
        slowed = types.SimpleNamespace(base_url=slow.base_url)  # the pytorch index, files held
        profile = _profile(tmp_path / "p.toml", default_index, slowed, installer=installer)  # type: ignore[arg-type]
        script = _render(profile, tmp_path / "s.sh", runner)
        proc = subprocess.Popen(
            ["bash", str(script)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=host.env(),
            start_new_session=True,
        )
        # SIGINT once a wheel's download has begun and is held by the proxy: a fixed sleep after
        # "installing" let a fast uv finish first (a CI run had it exit 0).
        try:
            assert slow.serving.wait(timeout=120), "the installer fetched no file"
            os.killpg(proc.pid, signal.SIGINT)
            _, stderr = proc.communicate(timeout=60)
        finally:
            slow.release.set()
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
    assert proc.returncode != 0
    last = stderr.strip().splitlines()[-1]
    assert "failed: interrupted (SIGINT); no restart marker written" in last, stderr
    assert "without a message" not in stderr
    assert host.marker() is None


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
    trigger: str,
    tmp_path: Path,
    runner: Runner,
    default_index: LocalIndex,
    pytorch_index: LocalIndex,
) -> None:
    profile = _profile(tmp_path / "p.toml", default_index, pytorch_index, installer="uv")
    script = _render(profile, tmp_path / "setup.sh", runner)

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
    assert sorted((host.root / "tmp").glob("colabenv.*")) == [bystander], (
        "the re-run sweeps the killed run's folder, not one whose process lives (pid 1)"
    )
    assert host.installed() == clean.installed()
    assert host.apt_state.read_text().split() == clean.apt_state.read_text().split()
    marker, reference = host.marker(), clean.marker()
    assert marker is not None and reference is not None
    assert marker["requirements"] == reference["requirements"]
    assert "torch==2.8.0+cu126" in marker["installed"]  # type: ignore[operator]
    assert host.new_interpreter("import os; print(os.environ['TEAM_TEST_PLAIN'])") == "on\n"


# ---------------------------------------------------------------------------------------------
# Failures that say why, before anything changes when they can


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_unreachable_framework_index_is_named_as_the_cause(
    installer: str, tmp_path: Path, runner: Runner, default_index: LocalIndex, request: pytest.FixtureRequest
) -> None:
    port = _closed_port()
    profile = tmp_path / "p.toml"
    profile.write_text(f"""
name = "unreachable"
[frameworks]
torch = {{ version = "==2.8.*", torchvision = "*" }}
[packages]
requirements = ["requests>=2.30"]
[install]
installer = "{installer}"
index_url = "{default_index.url}"
pytorch_index_url = "http://127.0.0.1:{port}"
""")
    script = _render(profile, tmp_path / "setup.sh", runner)
    pip = installer == "pip"
    host = make_host(tmp_path / "host", with_pip=pip, venv_from=venv_template(request, pip))
    result = host.run(script, PIP_RETRIES="0", UV_HTTP_RETRIES="0")
    assert result.returncode != 0
    last = result.stderr.splitlines()[-1]
    assert last.startswith(
        f"COLABENV: step pip: torch, torchvision failed: cannot reach the package index at 127.0.0.1:{port} ("
    ), result.stderr
    assert last.endswith("; no restart marker written")
    assert "conflicting dependencies" not in result.stdout + result.stderr
    assert "ResolutionImpossible" not in result.stdout + result.stderr
    assert host.marker() is None


def test_unset_index_variable_stops_the_script_before_apt(
    tmp_path: Path, runner: Runner, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    profile = _profile(tmp_path / "p.toml", default_index, pytorch_index, installer="uv")
    profile.write_text(
        profile.read_text().replace(
            f'index_url = "{default_index.url}"',
            f'index_url = "{default_index.url}"\n'
            f'extra_index_urls = ["http://${{IDX_USER}}:${{TOKEN}}@127.0.0.1:{default_index.port}/x/"]',
        )
    )
    script = _render(profile, tmp_path / "setup.sh", runner)
    host = make_host(tmp_path / "host", with_pip=False)
    result = host.run(script, IDX_USER="me")
    assert result.returncode != 0
    assert result.stderr.splitlines()[-1] == (
        "COLABENV: step pip failed: index URL needs $TOKEN, which is not set; no restart marker written"
    )
    assert host.apt_calls() == [] and host.installed() == {}
    assert "COLABENV: step apt" not in result.stdout


def test_a_profile_past_the_argv_limit_runs(tmp_path: Path, runner: Runner) -> None:
    """Every list reaches the helper and the installer in a file. Profile files joined by
    ``extends`` hold [env] values (as large as [env] may hold together) and requirements (just
    under the 1 MiB a file may have) that add up to more than the argv limit of the script's
    processes (a quarter of their stack limit, lowered to 3 MiB): the script runs to its end
    (requirements whose markers exclude this host), or to an install that fails for the
    installer's reason (requirements that exist nowhere). A process started from the restarted
    interpreter, which the hook gave the [env] values, starts."""
    import resource

    stack = 3 << 20
    limit = stack // 4

    def small_stack() -> None:
        resource.setrlimit(resource.RLIMIT_STACK, (stack, resource.getrlimit(resource.RLIMIT_STACK)[1]))

    def run(host: Host, script: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(script)],
            capture_output=True,
            text=True,
            timeout=300,
            env=host.env(UV_OFFLINE="1"),
            stdin=subprocess.DEVNULL,
            preexec_fn=small_stack,
        )

    big = 65_000
    (tmp_path / "env-a.toml").write_text(f'name = "a"\n[env]\nBIG_A = "{"a" * big}"\n')
    (tmp_path / "env-b.toml").write_text(
        f'name = "b"\nextends = "env-a.toml"\n[env]\nBIG_B = "{"b" * big}"\n'
    )
    excluded = [f"pkg-{i:04d}-{'x' * 850}>=1; python_version < '3'" for i in range(1000)]
    unmet = [f"pkg-{i:04d}-{'x' * 850}>=1" for i in range(1000)]
    for name, requirements in (("excluded", excluded), ("unmet", unmet)):
        (tmp_path / f"{name}.toml").write_text(
            f'name = "{name}"\nextends = "env-b.toml"\n[packages]\n'
            f'requirements = {json.dumps(requirements)}\n[install]\ninstaller = "uv"\n'
        )
    assert 2 * big + sum(len(r) + 1 for r in excluded) > limit
    host = make_host(tmp_path / "host", with_pip=False)
    for name in ("excluded", "unmet"):
        done = runner(
            "render",
            tmp_path / f"{name}.toml",
            "--cpu",
            "--python",
            PY,
            "-o",
            tmp_path / f"{name}.sh",
            timeout=300,
        )
        assert done.returncode == 0, done.stderr

    finished = run(host, tmp_path / "excluded.sh")
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert finished.stdout.splitlines()[-1] == "COLABENV: restart required"
    marker = host.marker()
    assert marker is not None and len(marker["requirements"]) == 1000  # type: ignore[arg-type]
    child = "import os; print(len(os.environ['BIG_A']), len(os.environ['BIG_B']))"
    started = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}], check=True)"
    assert host.new_interpreter(started) == f"{big} {big}\n"

    failed = run(host, tmp_path / "unmet.sh")
    output = failed.stdout + failed.stderr
    assert "Argument list too long" not in output
    assert "cannot use the state directory" not in output
    assert failed.returncode != 0
    last = failed.stderr.splitlines()[-1]
    assert last.startswith("COLABENV: step pip: default index failed: "), last[:500]
    installing = next(
        line for line in failed.stdout.splitlines() if line.startswith("COLABENV: installing (uv): ")
    )
    assert len(installing.split()) == len(unmet) + 3


def test_env_hook_starts_under_a_c_locale(tmp_path: Path, runner: Runner, default_index: LocalIndex) -> None:
    value = "naïve ✓ \U0001f600 'q' \\"
    profile = tmp_path / "p.toml"
    profile.write_text(
        f'name = "locale"\n[env]\nUNICODE_FLAG = {json.dumps(value, ensure_ascii=False)}\n'
        f'[install]\ninstaller = "uv"\nindex_url = "{default_index.url}"\n'
    )
    script = _render(profile, tmp_path / "setup.sh", runner)
    host = make_host(tmp_path / "host", with_pip=False)
    result = host.run(script)
    assert result.returncode == 0, result.stderr
    for locale in (
        {"LC_ALL": "C"},
        {"LC_ALL": "C", "PYTHONUTF8": "0"},
        {"LC_ALL": "C.UTF-8"},
        {"LANG": "C.UTF-8"},
    ):
        seen = subprocess.run(
            [str(host.python), "-c", "import os; print(ascii(os.environb[b'UNICODE_FLAG']))"],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", **locale},
        )
        assert seen.returncode == 0, (locale, seen.stderr)
        assert seen.stderr == "", (locale, seen.stderr)
        assert seen.stdout.strip() == ascii(value.encode()), locale
    utf8 = subprocess.run(
        [str(host.python), "-c", "import os; print(ascii(os.environ['UNICODE_FLAG']))"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
    )
    assert utf8.stdout.strip() == ascii(value)


def test_marker_and_hook_are_written_through_links(
    tmp_path: Path, runner: Runner, default_index: LocalIndex
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(
        f'name = "links"\n[env]\nLINKED = "yes"\n'
        f'[install]\ninstaller = "uv"\nindex_url = "{default_index.url}"\n'
    )
    script = _render(profile, tmp_path / "setup.sh", runner)
    host = make_host(tmp_path / "host", with_pip=False)
    kept = tmp_path / "kept"
    kept.mkdir()
    host.state.mkdir()
    (kept / "marker.json").write_text("")
    (host.state / "restart-marker.json").symlink_to(kept / "marker.json")
    site = Path(host.new_interpreter("import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    (kept / "hook.pth").write_text("")
    (site / "colabenv_env.pth").symlink_to(kept / "hook.pth")
    result = host.run(script)
    assert result.returncode == 0, result.stderr
    assert (host.state / "restart-marker.json").is_symlink()
    assert json.loads((kept / "marker.json").read_text())["profile"] == "links"
    assert (site / "colabenv_env.pth").is_symlink()
    assert "LINKED" in (kept / "hook.pth").read_text()
    assert host.new_interpreter("import os; print(os.environ['LINKED'])") == "yes\n"


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_marker_that_is_no_file_is_neither_read_nor_replaced(
    kind: str, tmp_path: Path, runner: Runner, default_index: LocalIndex
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(
        f'name = "odd-marker"\n[env]\nODD = "1"\n'
        f'[install]\ninstaller = "uv"\nindex_url = "{default_index.url}"\n'
    )
    script = _render(profile, tmp_path / "setup.sh", runner)
    host = make_host(tmp_path / "host", with_pip=False)
    host.state.mkdir()
    marker = host.state / "restart-marker.json"
    if kind == "fifo":
        os.mkfifo(marker)
    else:
        marker.mkdir()
    started = time.monotonic()
    result = host.run(script, timeout=60)
    assert time.monotonic() - started < 30
    assert result.returncode != 0
    last = result.stderr.splitlines()[-1]
    assert last.startswith(f"COLABENV: step marker failed: cannot write the restart marker {marker}: "), last
    assert stat.S_ISFIFO(os.lstat(marker).st_mode) if kind == "fifo" else marker.is_dir()


def test_uv_beside_the_interpreter_is_used_when_not_on_path(
    tmp_path: Path, runner: Runner, default_index: LocalIndex, pip_venv_template: Path
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(
        f'name = "uv-beside"\n[packages]\nrequirements = ["six"]\n'
        f'[install]\nindex_url = "{default_index.url}"\n'
    )
    script = _render(profile, tmp_path / "setup.sh", runner)
    host = make_host(tmp_path / "host", with_pip=True, venv_from=pip_venv_template)
    (host.bin / "uv").unlink()
    (host.python.parent / "uv").symlink_to(uv_bin())
    result = host.run(script)
    assert result.returncode == 0, result.stderr
    assert "COLABENV: installing (uv): six" in result.stdout


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to run as a user with no password entry",
)
def test_no_home_is_a_clear_message_not_an_unbound_variable(tmp_path: Path, runner: Runner) -> None:
    shared = Path(tempfile.mkdtemp(prefix="colabenv-nohome-"))
    try:
        shared.chmod(0o777)
        (tmp_path / "p.toml").write_text('name = "nohome"\n')
        script = _render(tmp_path / "p.toml", shared / "setup.sh", runner)
        script.chmod(0o755)
        done = subprocess.run(
            ["setpriv", "--reuid", "54321", "--regid", "54321", "--clear-groups", "--", "bash", str(script)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=shared,
            env={"PATH": "/usr/bin:/bin", "TMPDIR": str(shared), "COLABENV_PYTHON": sys.executable},
        )
        assert done.returncode != 0
        assert "unbound variable" not in done.stderr
        assert done.stderr.splitlines()[-1] == (
            "COLABENV: step start failed: no home directory (HOME is unset and the user has no "
            "password entry); set COLABENV_STATE_DIR; no restart marker written"
        )
        assert not list(shared.glob("colabenv.*"))
    finally:
        shutil.rmtree(shared, ignore_errors=True)
