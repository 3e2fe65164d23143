"""The sweep of killed runs' work folders: only what the script itself marked, and whose
process is gone; never a link, another user's folder, a live run's, or one it cannot judge.

Each test runs the real script in a fresh venv with a ``TMPDIR`` prepared beforehand.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fixtures import Runner
from tests.support.index import LocalIndex
from tests.support.scriptrun import Host, make_host

pytestmark = pytest.mark.slow

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
MARK = ".colabenv-run"


def _boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def _pid_ns(pid: int | str = "self") -> str:
    return os.readlink(f"/proc/{pid}/ns/pid")


def _start_time(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(") ", 1)[1].split()[19]


def _dead_pid() -> int:
    """A pid no process has now (the one a finished child had)."""
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def _folder(tmp: Path, name: str, mark: str | None) -> Path:
    folder = tmp / name
    folder.mkdir()
    (folder / "data.txt").write_text("keep me\n")
    if mark is not None:
        (folder / MARK).write_text(mark + "\n")
    return folder


@pytest.fixture
def host_and_script(tmp_path: Path, runner: Runner, default_index: LocalIndex) -> tuple[Host, Path]:
    profile = tmp_path / "p.toml"
    profile.write_text(
        f'name = "sweep"\n[env]\nSWEPT = "1"\n'
        f'[install]\ninstaller = "uv"\nindex_url = "{default_index.url}"\n'
    )
    script = tmp_path / "setup.sh"
    done = runner("render", profile, "--cpu", "--python", PY, "-o", script, timeout=60)
    assert done.returncode == 0, done.stderr
    return make_host(tmp_path / "host", with_pip=False), script


def test_only_marked_folders_of_gone_runs_are_swept(
    host_and_script: tuple[Host, Path], tmp_path: Path
) -> None:
    host, script = host_and_script
    tmp = host.root / "tmp"
    boot, ns = _boot_id(), _pid_ns()
    live = subprocess.Popen(["sleep", "120"])
    try:
        dead = _dead_pid()
        kept = [
            _folder(tmp, "colabenv.0.1.0", None),
            _folder(tmp, "colabenv.2024.backup", None),
            _folder(tmp, f"colabenv.{live.pid}.live", f"{live.pid} {_start_time(live.pid)} {ns} {boot}"),
            _folder(tmp, f"colabenv.{dead}.other-namespace", f"{dead} 12345 pid:[1] {boot}"),
            _folder(tmp, f"colabenv.{dead}.garbled", "not a mark at all"),
            _folder(tmp, f"colabenv.{dead}.unmarked", None),
        ]
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / MARK).write_text(f"{dead} 1 {ns} {boot}\n")
        link = tmp / f"colabenv.{dead}.link"
        link.symlink_to(elsewhere)
        swept = [
            _folder(tmp, f"colabenv.{dead}.killed", f"{dead} 12345 {ns} {boot}"),
            _folder(
                tmp, f"colabenv.{live.pid}.reused", f"{live.pid} {int(_start_time(live.pid)) - 1} {ns} {boot}"
            ),
            _folder(tmp, "colabenv.1.rebooted", f"1 1 {ns} an-earlier-boot"),
        ]
        done = host.run(script)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == "COLABENV: restart required"
        for folder in kept:
            assert (folder / "data.txt").read_text() == "keep me\n", folder.name
        assert link.is_symlink() and (elsewhere / MARK).exists()
        for folder in swept:
            assert not folder.exists(), folder.name
        assert sorted(p.name for p in tmp.iterdir()) == sorted([p.name for p in kept] + [link.name]), (
            "the run's own folder is removed at its end"
        )
    finally:
        live.kill()
        live.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a folder to another user")
def test_another_users_folder_is_never_swept(host_and_script: tuple[Host, Path]) -> None:
    host, script = host_and_script
    tmp = host.root / "tmp"
    dead = _dead_pid()
    theirs = _folder(tmp, f"colabenv.{dead}.theirs", f"{dead} 1 {_pid_ns()} {_boot_id()}")
    for path in (theirs, theirs / MARK, theirs / "data.txt"):
        os.chown(path, 65534, 65534)
    done = host.run(script)
    assert done.returncode == 0, done.stderr
    assert (theirs / "data.txt").read_text() == "keep me\n"


def test_a_folder_that_cannot_be_removed_does_not_stop_the_run(host_and_script: tuple[Host, Path]) -> None:
    """``rm`` fails on a stale folder (a stand-in that refuses it, as rm would for a file in a
    sticky folder that is not ours): the sweep goes on quietly and the run completes."""
    host, script = host_and_script
    tmp = host.root / "tmp"
    dead = _dead_pid()
    stuck = _folder(tmp, f"colabenv.{dead}.stuck", f"{dead} 1 {_pid_ns()} {_boot_id()}")
    real_rm = os.readlink(host.bin / "rm")
    (host.bin / "rm").unlink()
    (host.bin / "rm").write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do case "$arg" in *.stuck) echo "rm: cannot remove $arg" >&2; '
        "exit 1 ;; esac; done\n"
        f'exec {real_rm} "$@"\n'
    )
    (host.bin / "rm").chmod(0o755)
    done = host.run(script)
    assert done.returncode == 0, done.stderr
    assert "cannot remove" not in done.stderr
    assert done.stdout.splitlines()[-1] == "COLABENV: restart required"
    assert (stuck / "data.txt").exists()


def test_a_run_marks_its_folder_with_its_pid_and_start_time(host_and_script: tuple[Host, Path]) -> None:
    """What a sweep reads is what a run writes: seen in the folder of a run killed mid-way."""
    host, script = host_and_script
    text = script.read_text()
    stopped = script.with_name("stopped.sh")
    stopped.write_text(text.replace('announce "preflight"', 'announce "preflight"\nsleep 60', 1))
    proc = subprocess.Popen(
        ["bash", str(stopped)], stdout=subprocess.PIPE, text=True, env=host.env(), start_new_session=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "COLABENV: step preflight\n"
        (folder,) = (host.root / "tmp").glob("colabenv.*")
        pid, start, ns, boot = (folder / MARK).read_text().split()
        assert int(pid) == proc.pid
        assert start == _start_time(proc.pid)
        assert ns == _pid_ns(proc.pid) and boot == _boot_id()
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
