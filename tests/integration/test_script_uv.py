"""The rendered script and a real uv: what the script hands uv, and what it keeps from it.

Each test renders a profile with ``colabenv render``, runs the script with real bash in a venv
copy, and installs with the real uv from the local index on 127.0.0.1.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.fixtures import Runner
from tests.support.index import LocalIndex
from tests.support.scriptrun import Host, make_host

pytestmark = pytest.mark.slow

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
EMPTY_WARNING = "does not contain any dependencies"


def _script(tmp_path: Path, runner: Runner, index: LocalIndex) -> Path:
    """A profile with one package and no framework: its install group has no constraint."""
    profile = tmp_path / "p.toml"
    profile.write_text(
        f'name = "uv-plain"\n[packages]\nrequirements = ["six"]\n'
        f'[install]\ninstaller = "uv"\nindex_url = "{index.url}"\n'
    )
    out = tmp_path / "setup.sh"
    proc = runner("render", profile, "-o", out, "--cpu", "--python", PY, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return out


def _host(tmp_path: Path) -> Host:
    """A venv without pip (the script installs with uv), made in a fraction of a second."""
    return make_host(tmp_path / "host", with_pip=False)


def test_no_empty_constraints_file_is_given_to_uv(
    tmp_path: Path, runner: Runner, default_index: LocalIndex
) -> None:
    script = _script(tmp_path, runner, default_index)
    host = _host(tmp_path)
    result = host.run(script)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "COLABENV: installing (uv): six" in result.stdout
    assert EMPTY_WARNING not in result.stderr + result.stdout
    assert "constraints.txt" not in result.stderr + result.stdout


@pytest.mark.parametrize("variable", ["UV_CONSTRAINT", "UV_BUILD_CONSTRAINT"])
def test_a_uv_variable_naming_a_missing_file_is_said_and_left_out(
    variable: str, tmp_path: Path, runner: Runner, default_index: LocalIndex
) -> None:
    """Colab images have exported such variables (googlecolab/colabtools#5237): uv then fails
    every install with "File not found"."""
    script = _script(tmp_path, runner, default_index)
    host = _host(tmp_path)
    missing = tmp_path / "gone" / "constraints.txt"
    result = host.run(script, **{variable: str(missing)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert host.installed().get("six"), host.installed()
    said = [line for line in (result.stdout + result.stderr).splitlines() if variable in line]
    assert said == [f"COLABENV: {variable} names {missing}, which does not exist: uv runs without it"]
    assert "File not found" not in result.stderr


def test_a_uv_constraint_file_that_exists_is_still_honoured(
    tmp_path: Path, runner: Runner, default_index: LocalIndex
) -> None:
    script = _script(tmp_path, runner, default_index)
    host = _host(tmp_path)
    bound = tmp_path / "bound.txt"
    bound.write_text("six<0\n")
    result = host.run(script, UV_CONSTRAINT=str(bound))
    assert result.returncode != 0
    assert "six" not in host.installed()
    assert "UV_CONSTRAINT names" not in result.stdout + result.stderr
