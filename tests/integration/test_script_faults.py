"""Faults and hostile hosts around the bootstrap script itself: the real rendered script run by
real bash against a real venv and the local index (issue 23).

The run lock leaked to a daemon, a stale holder named in the lock file, a link planted at the
lock's path, the state directory removed mid-run or on a full file system, `bash -x`, `sh`,
an interpreter that is no Python, a lock pin whose marker is false here, and an ``[env]`` that
moves the state directory's rule.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from colabenv.lock.content import Lock, LockedFile, new_package
from colabenv.lock.file import read_lock, render_lock
from colabenv.script.render import NO_RESTART_LINE, RESTART_LINE
from colabenv.script.state import MARKER_NAME, state_dir
from tests.support.index import LocalIndex
from tests.support.isolation import uv_bin
from tests.support.journeys import T4, installs, render
from tests.support.locking import colabenv
from tests.support.scriptrun import Host, make_host

pytestmark = pytest.mark.slow


def _profile(directory: Path, index_url: str, *, env: str = 'FAULTS = "on"', name: str = "faults") -> Path:
    path = directory / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\n[packages]\nrequirements = ["requests>=2.30"]\n'
        f"[env]\n{env}\n"
        f'[install]\ninstaller = "uv"\nindex_url = "{index_url}"\n'
    )
    return path


def _script(tmp_path: Path, index: LocalIndex, **profile: str) -> Path:
    script = tmp_path / "setup.sh"
    render(_profile(tmp_path, index.url, **profile), script)
    return script


def _failure_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("COLABENV:")]


def _uv_wrapper(host: Host, body: str) -> None:
    """The host's uv as a wrapper: ``body`` (sh) around the real uv."""
    wrapper = host.bin / "uv"
    wrapper.unlink()
    wrapper.write_text(f"#!/bin/sh\n{body}\n")
    wrapper.chmod(0o755)


def _kill_listed(pids: Path) -> None:
    for line in pids.read_text().split() if pids.exists() else []:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line), signal.SIGKILL)


# ---------------------------------------------------------------------------------------------
# The run lock


def test_a_daemon_started_during_the_install_does_not_keep_the_run_lock(
    tmp_path: Path, default_index: LocalIndex
) -> None:
    script = _script(tmp_path, default_index)
    host = make_host(tmp_path / "host", with_pip=False)
    daemons = tmp_path / "daemons.txt"
    # what a build server or an apt post-install script does: a child that outlives the run
    _uv_wrapper(host, f'sleep 120 </dev/null >/dev/null 2>&1 &\necho $! >>{daemons}\nexec {uv_bin()} "$@"')
    try:
        first = host.run(script, UV_HTTP_RETRIES="0")
        assert first.returncode == 0, first.stderr
        assert first.stdout.splitlines()[-1] == RESTART_LINE
        assert daemons.read_text().split(), "the wrapper started no daemon"
        second = host.run(script, timeout=30, UV_HTTP_RETRIES="0")
    finally:
        _kill_listed(daemons)
    assert second.returncode == 0, second.stderr
    assert "waiting for another colabenv run" not in second.stdout
    assert second.stdout.splitlines()[-1] == NO_RESTART_LINE


def test_a_waiting_run_names_the_process_that_really_holds_the_lock(
    tmp_path: Path, default_index: LocalIndex
) -> None:
    script = _script(tmp_path, default_index)
    host = make_host(tmp_path / "host", with_pip=False)
    host.state.mkdir()
    lock = host.state / "run.lock"
    lock.write_text("999999 1\n")  # a run long gone, as an inherited descriptor leaves it
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            f"fd = os.open({str(lock)!r}, os.O_RDWR)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        run = subprocess.Popen(
            ["bash", str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=host.env()
        )
        assert run.stdout is not None
        lines = [run.stdout.readline() for _ in range(2)]
        assert lines == [
            "COLABENV: step preflight\n",
            f"COLABENV: waiting for another colabenv run (pid {holder.pid})\n",
        ]
        holder.kill()
        rest, err = run.communicate(timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert run.returncode == 0, err
    assert rest.splitlines()[-1] == RESTART_LINE


def test_a_link_at_the_lock_path_is_refused_and_its_target_untouched(
    tmp_path: Path, default_index: LocalIndex
) -> None:
    script = _script(tmp_path, default_index)
    host = make_host(tmp_path / "host", with_pip=False)
    host.state.mkdir()
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    (host.state / "run.lock").symlink_to(precious)
    done = host.run(script)
    assert done.returncode == 1
    assert precious.read_text() == "keep me\n"
    assert _failure_lines(done.stderr) == [
        f"COLABENV: step preflight failed: the run lock {host.state}/run.lock is a symbolic link; "
        "remove it; no restart marker written"
    ]
    assert host.installed() == {}


# ---------------------------------------------------------------------------------------------
# The state directory


def test_state_directory_removed_mid_run_fails_in_one_line_and_the_next_run_restarts(
    tmp_path: Path, default_index: LocalIndex
) -> None:
    script = _script(tmp_path, default_index)
    host = make_host(tmp_path / "host", with_pip=False)
    _uv_wrapper(host, f'{uv_bin()} "$@"; rc=$?\nrm -rf -- "$COLABENV_STATE_DIR"\nexit $rc')
    first = host.run(script, UV_HTTP_RETRIES="0")
    assert first.returncode == 1
    assert "Traceback" not in first.stderr
    assert _failure_lines(first.stderr) == [
        f"COLABENV: step pip: default index failed: the state directory {host.state} was removed "
        "during the run; no restart marker written"
    ]
    assert "requests" in host.installed()

    os.symlink(uv_bin(), host.bin / "uv.real")
    (host.bin / "uv").unlink()
    (host.bin / "uv.real").rename(host.bin / "uv")
    second = host.run(script, UV_HTTP_RETRIES="0")
    assert second.returncode == 0, second.stderr
    assert installs(second.stdout) == []
    assert second.stdout.splitlines()[-1] == RESTART_LINE
    marker = host.marker()
    assert marker is not None and marker["changed"] is True
    assert any(str(item).startswith("dist:requests==") for item in marker["installed"])  # type: ignore[attr-defined]


def _fill(mount: Path) -> None:
    fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs with an empty state directory on it."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        (mount / "state").mkdir()
        yield mount / "state"
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_full_state_directory_is_named_in_colabenvs_own_line(
    tmp_path: Path, default_index: LocalIndex, small_tmpfs: Path
) -> None:
    script = _script(tmp_path, default_index)
    host = make_host(tmp_path / "host", with_pip=False)
    _fill(small_tmpfs.parent)
    done = host.run(script, COLABENV_STATE_DIR=str(small_tmpfs))
    assert done.returncode == 1
    lines = _failure_lines(done.stderr)
    assert len(lines) == 1 and lines[0].startswith("COLABENV: step preflight failed: "), done.stderr
    assert "no space left on device" in lines[0].lower()
    assert host.installed() == {}


def test_env_that_moves_the_state_rule_does_not_move_the_marker(
    tmp_path: Path, default_index: LocalIndex
) -> None:
    moved = tmp_path / "elsewhere"
    script = _script(tmp_path, default_index, env=f'XDG_CACHE_HOME = "{moved}"')
    host = make_host(tmp_path / "host", with_pip=False)
    run_cache = tmp_path / "run-cache"
    done = host.run(script, COLABENV_STATE_DIR="", XDG_CACHE_HOME=str(run_cache), UV_HTTP_RETRIES="0")
    assert done.returncode == 0, done.stderr
    used = run_cache / "colabenv"
    assert (used / MARKER_NAME).is_file()

    # verify in the restarted runtime reads the rule in the environment the hook made
    shown = subprocess.run(
        [str(host.python), "-c", "import json, os; print(json.dumps(dict(os.environ)))"],
        capture_output=True,
        text=True,
        check=True,
        env=host.env(COLABENV_STATE_DIR="", XDG_CACHE_HOME=str(run_cache)),
    )
    restarted = json.loads(shown.stdout)
    assert restarted["XDG_CACHE_HOME"] == str(moved)
    assert state_dir(restarted) == used


# ---------------------------------------------------------------------------------------------
# The shell and the interpreter


def test_bash_x_never_prints_the_index_token(tmp_path: Path, default_index: LocalIndex) -> None:
    token = "tok3n-S3CRET-value"
    url = default_index.url.replace("http://", "http://${IDX_USER}:${IDX_TOKEN}@")
    script = tmp_path / "setup.sh"
    render(_profile(tmp_path, url), script)
    host = make_host(tmp_path / "host", with_pip=False)
    done = subprocess.run(
        ["bash", "-x", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=host.env(IDX_USER="someone", IDX_TOKEN=token, UV_HTTP_RETRIES="0"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "+ " in done.stderr  # it was traced
    assert "requests" in host.installed()
    assert token not in done.stderr and token not in done.stdout


@pytest.mark.parametrize("shell", ["dash", "sh"])
def test_a_shell_that_is_not_bash_is_told_to_use_bash_before_anything(
    shell: str, tmp_path: Path, default_index: LocalIndex
) -> None:
    found = shutil.which(shell)
    if found is None:
        pytest.skip(f"no {shell} here")
    script = _script(tmp_path, default_index)
    host = make_host(tmp_path / "host", with_pip=False)
    done = subprocess.run([found, str(script)], capture_output=True, text=True, timeout=60, env=host.env())
    if os.path.realpath(found).endswith("/bash"):
        pytest.skip(f"{shell} is bash here")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        f"COLABENV: step start failed: this script needs bash 4 or later; run it as: bash {script}\n"
    )
    assert not host.state.exists()
    assert not list((host.root / "tmp").iterdir())


@pytest.mark.parametrize("fake", ["true", "wrapper"])
def test_an_interpreter_that_is_not_python_is_refused(
    fake: str, tmp_path: Path, default_index: LocalIndex
) -> None:
    script = _script(tmp_path, default_index)
    host = make_host(tmp_path / "host", with_pip=False)
    python = shutil.which("true") or "/bin/true"
    if fake == "wrapper":  # prints what the helper's preflight says when all is done
        wrapper = tmp_path / "python3"
        wrapper.write_text(f"#!/bin/sh\necho satisfied\necho {tmp_path}/nothing-pending\necho locked\n")
        wrapper.chmod(0o755)
        python = str(wrapper)
    done = host.run(script, COLABENV_PYTHON=python)
    assert done.returncode == 1
    assert NO_RESTART_LINE not in done.stdout
    assert _failure_lines(done.stderr) == [
        f"COLABENV: step preflight failed: {python} is not a working Python (it did not run the "
        "script's helper); set COLABENV_PYTHON to a python3; no restart marker written"
    ]
    assert not (host.state / MARKER_NAME).exists()


# ---------------------------------------------------------------------------------------------
# A lock pin whose marker is false on this host


def test_a_lock_pin_whose_marker_is_false_here_is_skipped_by_both_installer_and_helper(
    tmp_path: Path, default_index: LocalIndex
) -> None:
    profile = _profile(tmp_path, default_index.url)
    made = colabenv("lock", profile, "-o", tmp_path / "made.lock", "--resolver", "uv", *T4)
    assert made.returncode == 0, made.stderr
    lock = read_lock(tmp_path / "made.lock")
    absent = new_package(
        "not-on-this-host",
        "1.0",
        (LockedFile("0" * 64, "not_on_this_host-1.0-py3-none-any.whl"),),
        'platform_release == "0.0-no-such-kernel"',
        None,
        "test",
    )
    edited = Lock(
        lock.header, (*lock.packages, absent), lock.index_url, lock.extra_index_urls, None, lock.find_links
    )
    (tmp_path / "team.lock").write_text(render_lock(edited))
    script = tmp_path / "setup.sh"
    render(profile, script, "--lock", str(tmp_path / "team.lock"))
    assert 'not-on-this-host==1.0 ; platform_release == "0.0-no-such-kernel"' in script.read_text()

    host = make_host(tmp_path / "host", with_pip=False)
    done = host.run(script, UV_HTTP_RETRIES="0")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == RESTART_LINE
    again = host.run(script, UV_HTTP_RETRIES="0")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == NO_RESTART_LINE
    assert "not-on-this-host" not in host.installed()
