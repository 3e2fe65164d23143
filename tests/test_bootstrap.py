"""``colabenv.bootstrap()``: render, run with output in the cell, restart when required."""

from __future__ import annotations

import os
import signal
import sys
import types
from pathlib import Path

import pytest

import colabenv
from tests.support.scriptrun import make_host


@pytest.fixture
def host_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throwaway venv and apt stand-ins; the script must never touch the test's own Python."""
    host = make_host(tmp_path / "host", with_pip=True)
    for key, value in host.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PATH", f"{host.bin}{os.pathsep}{os.environ['PATH']}")
    profile = tmp_path / "notebook.toml"
    profile.write_text(
        'name = "notebook"\n[packages]\nrequirements = ["pip>=1"]\n'
        '[apt]\npackages = ["libfoo1"]\n[env]\nNOTEBOOK_FLAG = "on"\n'
    )
    return profile


@pytest.fixture
def colab_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process looks like an IPython kernel on Colab."""
    kernel = types.SimpleNamespace(kernel=object())
    fake_ipython = types.ModuleType("IPython")
    fake_ipython.get_ipython = lambda: kernel  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", fake_ipython)
    monkeypatch.setenv("COLAB_RELEASE_TAG", "release-colab-test")


def test_outside_a_kernel_it_prints_the_restart_instruction(
    host_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert colabenv.bootstrap(str(host_env), cpu=True, python=python) == 0
    out = capsys.readouterr().out
    assert "COLABENV: step apt" in out
    assert "COLABENV: restart required" in out
    assert "restart the kernel" in out

    assert colabenv.bootstrap(str(host_env), cpu=True, python=python) == 0
    out = capsys.readouterr().out
    assert "COLABENV: nothing changed, no restart needed" in out
    assert "restart the kernel" not in out


@pytest.mark.usefixtures("colab_kernel")
def test_on_colab_the_kernel_process_is_ended(
    host_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: killed.append((pid, sig)))
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert colabenv.bootstrap(str(host_env), cpu=True, python=python) == 0
    assert killed == [(os.getpid(), signal.SIGKILL)]


@pytest.mark.usefixtures("colab_kernel")
def test_restart_false_never_ends_the_kernel(
    host_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "kill", lambda pid, sig: pytest.fail("the kernel was ended"))
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert colabenv.bootstrap(str(host_env), cpu=True, python=python, restart=False) == 0
    assert "COLABENV: restart required" in capsys.readouterr().out


def test_a_failing_script_returns_its_status(
    host_env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n[packages]\nrequirements = ["no-such-package-xyz==1"]\n')
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    monkeypatch.setenv("UV_OFFLINE", "1")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    status = colabenv.bootstrap(str(bad), cpu=True, python=python)
    assert status != 0
    assert "no restart marker written" in capsys.readouterr().out
