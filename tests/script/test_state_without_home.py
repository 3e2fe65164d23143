"""Where the cache (colabenv._util.cache) and the state live when the host has no home directory."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from colabenv._util import cache
from colabenv.cli import main
from colabenv.errors import StateError
from colabenv.host.detect import detect
from colabenv.profile.files import golden_path
from colabenv.profile.load import load_profile
from colabenv.script import state
from tests.support.fixtures import Runner


def _no_passwd_entry(uid: int) -> pwd.struct_passwd:
    raise KeyError(f"getpwuid(): uid not found: {uid}")


@pytest.fixture
def homeless(monkeypatch: pytest.MonkeyPatch) -> None:
    """HOME unset, and this user unknown to the password database (a container running as an
    arbitrary uid): the one thing this machine cannot be made to be, faked at ``pwd``."""
    for name in ("HOME", "XDG_CACHE_HOME", "COLABENV_CACHE_DIR", "COLABENV_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pwd, "getpwuid", _no_passwd_entry)


def test_home_dir_from_home_then_the_password_database() -> None:
    assert cache.home_dir({"HOME": "/h"}) == Path("/h")
    assert cache.home_dir({}) == Path(pwd.getpwuid(os.getuid()).pw_dir)


@pytest.mark.usefixtures("homeless")
def test_without_a_home_the_cache_is_skipped_and_the_state_has_a_place() -> None:
    assert cache.home_dir() is None
    with pytest.raises(RuntimeError, match="no cache directory"):
        cache.cache_dir()
    assert cache.cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/colabenv")
    with pytest.raises(StateError, match="COLABENV_STATE_DIR"):
        state.state_dir({})
    assert state.state_dir({"COLABENV_STATE_DIR": "/s"}) == Path("/s")
    assert load_profile(golden_path("pytorch")).name == "pytorch"


@pytest.mark.usefixtures("homeless")
def test_without_a_home_a_tilde_is_not_taken_literally() -> None:
    with pytest.raises(RuntimeError):
        cache.cache_dir({"COLABENV_CACHE_DIR": "~/cache"})
    assert cache.cache_dir({"COLABENV_CACHE_DIR": "~/cache", "HOME": "/h"}) == Path("/h/cache")


@pytest.mark.usefixtures("homeless")
def test_without_a_home_the_commands_run(capsys: pytest.CaptureFixture[str]) -> None:
    fingerprint = detect()
    assert fingerprint.state_dir is None
    assert any("COLABENV_STATE_DIR" in note for note in fingerprint.notes)
    assert main.main(["render", "pytorch", "--cpu", "--python", "3.12"]) == 0
    assert capsys.readouterr().out.startswith("#!/usr/bin/env bash")
    assert main.main(["detect", "--cpu"]) == 0
    out = capsys.readouterr().out
    assert "state dir: -\n" in out
    assert "note: no home directory (HOME is unset and this user is not in the password" in out


def test_home_unset_through_the_console_script(runner: Runner) -> None:
    unset: dict[str, str | None] = {
        name: None for name in ("HOME", "XDG_CACHE_HOME", "COLABENV_CACHE_DIR", "COLABENV_STATE_DIR")
    }
    for argv in (["detect", "--cpu"], ["render", "pytorch", "--cpu"], ["init", "--cpu"]):
        done = runner(*argv, env=unset)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
