"""``colabenv.bootstrap()``: render, run with output in the cell, restart when required."""

from __future__ import annotations

import json
import os
import signal
import sys
import types
from pathlib import Path

import pytest

import colabenv
from colabenv.errors import LockError, UsageError
from colabenv.notebook import RESTART_GRACE_S, _end_kernel
from colabenv.script.state import MARKER_NAME
from tests.support.index import LocalIndex
from tests.support.locking import PYTHON
from tests.support.locking import colabenv as console
from tests.support.scriptrun import Host, make_host


@pytest.fixture
def host_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pip_venv_template: Path) -> Path:
    """A throwaway venv (a copy of the session's venv with pip) and apt stand-ins; the script
    must never touch the test's own Python."""
    host = make_host(tmp_path / "host", with_pip=True, venv_from=pip_venv_template)
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
def test_on_colab_the_kernel_process_is_ended(host_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    killed: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: killed.append((pid, sig)))
    monkeypatch.setattr("colabenv.notebook.RESTART_GRACE_S", 0.0)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert colabenv.bootstrap(str(host_env), cpu=True, python=python) == 0
    assert killed == [(os.getpid(), signal.SIGKILL)]


@pytest.fixture
def kaggle_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process looks like an IPython kernel on Kaggle."""
    kernel = types.SimpleNamespace(kernel=object())
    fake_ipython = types.ModuleType("IPython")
    fake_ipython.get_ipython = lambda: kernel  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", fake_ipython)
    monkeypatch.delenv("COLAB_RELEASE_TAG", raising=False)
    monkeypatch.setenv("KAGGLE_KERNEL_RUN_TYPE", "Interactive")


@pytest.mark.usefixtures("kaggle_kernel")
def test_on_kaggle_the_kernel_is_left_running_and_the_restart_is_asked_for(
    host_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only Colab is known to start a new kernel when its kernel process ends: on Kaggle no
    source says so (its image, Kaggle/docker-python, holds no kernel manager), so colabenv
    asks, and says that it restarts the kernel itself only on Colab."""
    monkeypatch.setattr(os, "kill", lambda pid, sig: pytest.fail("the kernel was ended"))
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert colabenv.bootstrap(str(host_env), cpu=True, python=python) == 0
    out = capsys.readouterr().out.splitlines()
    assert "COLABENV: restart required" in out
    assert out[-1] == (
        "colabenv: restart the kernel (or the Python process) before importing the frameworks, "
        "then run colabenv.verify(); colabenv restarts a kernel itself only on Colab"
    )


@pytest.mark.usefixtures("colab_kernel")
def test_restart_false_never_ends_the_kernel(
    host_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "kill", lambda pid, sig: pytest.fail("the kernel was ended"))
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert colabenv.bootstrap(str(host_env), cpu=True, python=python, restart=False) == 0
    assert "COLABENV: restart required" in capsys.readouterr().out


def test_a_failing_script_returns_its_status(
    host_env: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
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


def test_uv_beside_the_kernels_python_is_used_when_not_on_path(
    host_env: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    default_index: LocalIndex,
) -> None:
    assert (Path(sys.executable).parent / "uv").exists(), "the test venv has uv beside python"
    host_bin = Path(os.environ["PATH"].split(os.pathsep)[0])
    (host_bin / "uv").unlink()
    monkeypatch.setenv("PATH", f"{host_bin}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.delenv("COLABENV_UV", raising=False)
    profile = tmp_path / "six.toml"
    profile.write_text(
        f'name = "six"\n[packages]\nrequirements = ["six"]\n[install]\nindex_url = "{default_index.url}"\n'
    )
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert colabenv.bootstrap(str(profile), cpu=True, python=python) == 0
    out = capsys.readouterr().out
    assert "COLABENV: installing (uv): six" in out


KERNEL_CELL = """
import colabenv
colabenv.bootstrap({profile!r}, cpu=True, python={python!r})
"""


@pytest.mark.slow
def test_restart_line_reaches_a_real_cell_before_the_kernel_ends(
    host_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real ipykernel, driven by nbclient as a notebook front end would: the last line is in
    the cell's output every time, then the kernel is gone (Colab would restart it). Eight
    runs: with no grace before the kill, the line was lost within twelve."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from nbclient.exceptions import DeadKernelError

    monkeypatch.setenv("COLAB_RELEASE_TAG", "release-colab-test")
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    for attempt in range(8):
        profile = tmp_path / f"kernel-{attempt}.toml"
        profile.write_text(f'name = "kernel"\n[env]\nKERNEL_RUN = "{attempt}"\n')
        cell = nbformat.v4.new_code_cell(KERNEL_CELL.format(profile=str(profile), python=python))
        notebook = nbformat.v4.new_notebook(cells=[cell])
        client = nbclient.NotebookClient(notebook, timeout=180, kernel_name="python3", startup_timeout=120)
        with pytest.raises(DeadKernelError):
            client.execute()
        text = "".join(output.get("text", "") for output in notebook.cells[0].outputs)
        assert "COLABENV: restart required" in text, text
        assert text.rstrip().endswith(
            "colabenv: restarting the runtime now; run the next cell after it reconnects"
        ), text


def test_the_kernel_flushes_and_waits_before_it_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []

    class Stream:
        def __init__(self, name: str) -> None:
            self.name = name

        def flush(self) -> None:
            events.append(f"flush {self.name}")

    monkeypatch.setattr(sys, "stdout", Stream("stdout"))
    monkeypatch.setattr(sys, "stderr", Stream("stderr"))
    monkeypatch.setattr("time.sleep", lambda seconds: events.append(f"sleep {seconds}"))
    monkeypatch.setattr(os, "kill", lambda pid, sig: events.append(f"kill {sig}"))
    _end_kernel()
    assert events == ["flush stdout", "flush stderr", f"sleep {RESTART_GRACE_S}", f"kill {signal.SIGKILL}"]
    assert RESTART_GRACE_S >= 0.5


# ---------------------------------------------------------------------------------------------
# Secrets from the runtime: Colab's user secrets for a ${VAR} the environment lacks

SECRET = "s3cr3t-t0ken:with@odd/chars"


@pytest.fixture
def colab_secrets(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """A stand-in ``google.colab.userdata``: ``get`` answers from ``store`` (a missing key
    raises SecretNotFoundError, as Colab's does) and records each key asked for."""
    store: dict[str, object] = {"asked": []}

    class SecretNotFoundError(Exception):
        pass

    def get(key: str) -> str:
        asked = store["asked"]
        assert isinstance(asked, list)
        asked.append(key)
        value = store.get(key)
        if not isinstance(value, str):
            raise SecretNotFoundError(f"Secret {key} does not exist.")
        return value

    google = types.ModuleType("google")
    colab = types.ModuleType("google.colab")
    userdata = types.ModuleType("google.colab.userdata")
    userdata.get = get  # type: ignore[attr-defined]
    userdata.SecretNotFoundError = SecretNotFoundError  # type: ignore[attr-defined]
    colab.userdata = userdata  # type: ignore[attr-defined]
    google.colab = colab  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "google", google)
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setitem(sys.modules, "google.colab.userdata", userdata)
    return store


def _secret_profile(tmp_path: Path, index: LocalIndex) -> Path:
    base = index.url.split("://", 1)[1]
    profile = tmp_path / "secret.toml"
    profile.write_text(
        'name = "secret"\n[packages]\nrequirements = ["six"]\n'
        f'[install]\nindex_url = "http://${{IDX_USER}}:${{IDX_TOKEN}}@{base}"\n'
    )
    return profile


def _written_anywhere(root: Path, value: str) -> list[Path]:
    return [
        p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and value.encode() in p.read_bytes()
    ]


@pytest.mark.usefixtures("colab_kernel")
def test_a_variable_missing_in_a_colab_kernel_comes_from_colab_secrets(
    host_env: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    default_index: LocalIndex,
    colab_secrets: dict[str, object],
) -> None:
    monkeypatch.setattr(os, "kill", lambda pid, sig: None)
    monkeypatch.setattr("colabenv.notebook.RESTART_GRACE_S", 0.0)
    monkeypatch.setenv("IDX_USER", "team")
    monkeypatch.delenv("IDX_TOKEN", raising=False)
    colab_secrets["IDX_TOKEN"] = SECRET
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    status = colabenv.bootstrap(str(_secret_profile(tmp_path, default_index)), cpu=True, python=python)
    out = capsys.readouterr().out
    assert status == 0, out
    assert "COLABENV: installing" in out and "six" in out
    assert colab_secrets["asked"] == ["IDX_TOKEN"], "only what the environment lacks is asked"
    assert "IDX_TOKEN" not in os.environ, "the secret lives in that one run's environment"
    assert SECRET not in out
    assert _written_anywhere(tmp_path, SECRET) == []


@pytest.mark.usefixtures("colab_kernel")
def test_a_secret_colab_does_not_have_is_said_and_the_script_stops_before_installing(
    host_env: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    default_index: LocalIndex,
    colab_secrets: dict[str, object],
) -> None:
    monkeypatch.setenv("IDX_USER", "team")
    monkeypatch.delenv("IDX_TOKEN", raising=False)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    status = colabenv.bootstrap(str(_secret_profile(tmp_path, default_index)), cpu=True, python=python)
    out = capsys.readouterr().out
    assert status != 0
    assert (
        "colabenv: $IDX_TOKEN is neither in the environment nor given by Colab's secrets "
        "(SecretNotFoundError)"
    ) in out
    assert "index URL needs $IDX_TOKEN, which is not set" in out
    assert "COLABENV: installing" not in out


def test_outside_a_colab_kernel_colab_secrets_are_not_asked(
    host_env: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    default_index: LocalIndex,
    colab_secrets: dict[str, object],
) -> None:
    monkeypatch.setenv("IDX_USER", "team")
    monkeypatch.delenv("IDX_TOKEN", raising=False)
    colab_secrets["IDX_TOKEN"] = SECRET
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    status = colabenv.bootstrap(str(_secret_profile(tmp_path, default_index)), cpu=True, python=python)
    out = capsys.readouterr().out
    assert status != 0
    assert "index URL needs $IDX_TOKEN, which is not set" in out
    assert colab_secrets["asked"] == []


# ---------------------------------------------------------------------------------------------
# lock= and target=: the same plan as render --lock and render --target


TARGETS_PROFILE = """\
name = "locked"
[packages]
requirements = ["requests>=2.30"]
[install]
installer = "uv"
index_url = "{index}"
[targets]
ci = {{ cpu = true, python = "{python}" }}
nb = {{ driver = "550.54.15", compute_capability = ["7.5"], python = "{python}" }}
"""


@pytest.fixture
def targets_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, default_index: LocalIndex
) -> tuple[Path, Host]:
    """A profile with two named targets on the local index, and a host without pip whose
    variables are this process's (as a notebook kernel's are)."""
    profile = tmp_path / "locked.toml"
    profile.write_text(TARGETS_PROFILE.format(index=default_index.url, python=PYTHON))
    host = make_host(tmp_path / "host", with_pip=False)
    for key, value in host.env().items():
        monkeypatch.setenv(key, value)
    return profile, host


def test_lock_installs_the_named_targets_section_exactly(
    targets_host: tuple[Path, Host], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile, host = targets_host
    lock = tmp_path / "team.lock"
    made = console("lock", profile, "-o", lock, "--resolver", "uv", "--all-targets")
    assert made.returncode == 0, made.stderr
    pins = dict(line.split(" ")[0].split("==") for line in lock.read_text().splitlines() if "==" in line)
    capsys.readouterr()
    assert colabenv.bootstrap(str(profile), target="ci", lock=lock) == 0
    out = capsys.readouterr().out
    assert "colabenv: note: installing section ci of team.lock" in out
    assert "COLABENV: installing the lockfile (uv)" in out
    assert "COLABENV: restart required" in out
    installed = host.installed()
    assert pins and all(installed.get(name) == version for name, version in pins.items())
    marker = json.loads((host.state / MARKER_NAME).read_text())
    assert marker["target"]["accelerator"] == "cpu"
    assert sorted(marker["requirements"]) == sorted(f"{n}=={v}" for n, v in pins.items())


def test_a_lock_of_another_profile_is_refused_before_anything_runs(
    targets_host: tuple[Path, Host], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile, host = targets_host
    lock = tmp_path / "team.lock"
    assert console("lock", profile, "-o", lock, "--resolver", "uv", "--target", "ci").returncode == 0
    profile.write_text(profile.read_text().replace('"requests>=2.30"', '"requests>=2.31"'))
    with pytest.raises(LockError, match="does not fit this script"):
        colabenv.bootstrap(str(profile), target="ci", lock=lock)
    assert "COLABENV: step" not in capsys.readouterr().out
    assert not (host.state / MARKER_NAME).exists()


def test_target_renders_for_the_named_target_not_this_host(
    targets_host: tuple[Path, Host], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    profile, host = targets_host
    monkeypatch.setenv("COLABENV_PYTHON_VERSION", "3.9")  # read for this host, never for a named target
    assert colabenv.bootstrap(str(profile), target="ci") == 0
    out = capsys.readouterr().out
    assert "COLABENV: installing (uv)" in out and "lockfile" not in out
    assert "requests" in host.installed()
    marker = json.loads((host.state / MARKER_NAME).read_text())
    assert marker["target"]["python"] == PYTHON
    assert colabenv.bootstrap(str(profile)) != 0  # for this host, the variable's Python 3.9
    assert "this runtime is not Python 3.9" in capsys.readouterr().out


def test_target_refuses_target_flags_and_unknown_names(targets_host: tuple[Path, Host]) -> None:
    profile, _host = targets_host
    with pytest.raises(UsageError, match="leave out the target flags"):
        colabenv.bootstrap(str(profile), target="ci", cpu=True)
    with pytest.raises(UsageError, match=r"^target= 'nope': .*no such target \(targets: ci, nb\)"):
        colabenv.bootstrap(str(profile), target="nope")


@pytest.mark.usefixtures("colab_kernel")
def test_an_env_reference_the_kernel_lacks_comes_from_colab_secrets_once_no_restart_is_pending(
    host_env: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    colab_secrets: dict[str, object],
) -> None:
    """``[env]`` ``HF_TOKEN = "${HF_TOKEN}"`` on Colab (issue 34): the restarted kernel's hook
    finds no ``HF_TOKEN`` in its environment; the cell run again takes it from Colab's secrets
    into this kernel's ``os.environ``, and writes it nowhere."""
    monkeypatch.setattr(os, "kill", lambda pid, sig: None)
    monkeypatch.setattr("colabenv.notebook.RESTART_GRACE_S", 0.0)
    monkeypatch.setenv("HF_TOKEN", "placeholder")
    monkeypatch.delenv("HF_TOKEN")
    monkeypatch.setenv("AUTH_HEADER", "placeholder")
    monkeypatch.delenv("AUTH_HEADER")
    colab_secrets["HF_TOKEN"] = SECRET
    profile = tmp_path / "env.toml"
    profile.write_text(
        'name = "env-secret"\n[env]\nHF_TOKEN = "${HF_TOKEN}"\nAUTH_HEADER = "Bearer ${HF_TOKEN}"\n'
    )
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert colabenv.bootstrap(str(profile), cpu=True, python=python) == 0
    first = capsys.readouterr().out
    assert "restarting the runtime now" in first
    assert colab_secrets["asked"] == [], "nothing is asked while a restart is pending"
    assert "HF_TOKEN" not in os.environ
    assert colabenv.bootstrap(str(profile), cpu=True, python=python) == 0
    again = capsys.readouterr().out
    assert "COLABENV: nothing changed, no restart needed" in again
    assert "colabenv: HF_TOKEN, AUTH_HEADER set in this kernel from Colab's secrets" in again
    assert colab_secrets["asked"] == ["HF_TOKEN"]
    assert os.environ["HF_TOKEN"] == SECRET and os.environ["AUTH_HEADER"] == f"Bearer {SECRET}"
    assert SECRET not in first + again
    assert _written_anywhere(tmp_path, SECRET) == []
