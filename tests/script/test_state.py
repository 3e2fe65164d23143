"""One state-directory rule and one set of shared names, on both sides of the script.

The rule's bash (rendered into every script) and its Python (``verify``, ``detect``) run here
over a table of environments, each in a real process of its own, and must name the same
directory; the names the helper uses are the ones :mod:`colabenv.script.state` defines.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from colabenv._util.resources import helper_source
from colabenv.script import state
from colabenv.script.bash import state_dir_lines
from colabenv.script.render import helper_program
from colabenv.script.state import expand_home, state_dir
from tests.support.paths import REPO

BASE = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
NO_HOME = "NO HOME"

# (id, environment beyond PATH; HOME is unset unless given)
ENVIRONMENTS: list[tuple[str, dict[str, str]]] = [
    ("nothing-set", {"HOME": "/home/u"}),
    ("home-unset", {}),
    ("home-empty", {"HOME": ""}),
    ("home-trailing-slashes", {"HOME": "/home/u//"}),
    ("home-relative", {"HOME": "rel/home"}),
    ("xdg-absolute", {"HOME": "/home/u", "XDG_CACHE_HOME": "/xdg/cache"}),
    ("xdg-trailing-slash", {"HOME": "/home/u", "XDG_CACHE_HOME": "/xdg/cache/"}),
    ("xdg-empty", {"HOME": "/home/u", "XDG_CACHE_HOME": ""}),
    ("xdg-relative", {"HOME": "/home/u", "XDG_CACHE_HOME": "relative/cache"}),
    ("xdg-tilde", {"HOME": "/home/u", "XDG_CACHE_HOME": "~/cache"}),
    ("colab-gpu-empty", {"HOME": "/home/u", "COLAB_GPU": ""}),
    ("colab-gpu-set", {"HOME": "/home/u", "COLAB_GPU": "1"}),
    ("colab-release-tag", {"HOME": "/home/u", "COLAB_RELEASE_TAG": "release-colab_2025"}),
    ("colab-release-tag-empty", {"HOME": "/home/u", "COLAB_RELEASE_TAG": ""}),
    ("explicit", {"HOME": "/home/u", "COLABENV_STATE_DIR": "/srv/state", "COLAB_GPU": "1"}),
    ("explicit-empty", {"HOME": "/home/u", "COLABENV_STATE_DIR": ""}),
    ("explicit-tilde-slash", {"HOME": "/home/u", "COLABENV_STATE_DIR": "~/x"}),
    ("explicit-tilde", {"HOME": "/home/u", "COLABENV_STATE_DIR": "~"}),
    ("explicit-tilde-home-unset", {"COLABENV_STATE_DIR": "~/x"}),
    ("explicit-tilde-home-empty", {"HOME": "", "COLABENV_STATE_DIR": "~/x"}),
    ("explicit-tilde-root", {"HOME": "/home/u", "COLABENV_STATE_DIR": "~root/x"}),
    ("explicit-tilde-unknown-user", {"HOME": "/home/u", "COLABENV_STATE_DIR": "~no-such-user-here/x"}),
    ("explicit-tilde-digits", {"HOME": "/home/u", "COLABENV_STATE_DIR": "~0/x"}),
    ("explicit-tilde-inside", {"HOME": "/home/u", "COLABENV_STATE_DIR": "/a/~/b"}),
    ("explicit-relative", {"HOME": "/home/u", "COLABENV_STATE_DIR": "rel/state"}),
    ("explicit-dot", {"HOME": "/home/u", "COLABENV_STATE_DIR": "./state/"}),
    ("explicit-spaces", {"HOME": "/home/u", "COLABENV_STATE_DIR": " /with space "}),
    ("explicit-dollar", {"HOME": "/home/u", "COLABENV_STATE_DIR": "/x/$HOME/`id`"}),
]

BASH_PROGRAM = (
    "\n".join(
        [
            "set -euo pipefail",
            'fail() { printf "%s\\n" "NO HOME"; exit 0; }',
            *state_dir_lines(),
            'printf "%s\\n" "$state_dir"',
        ]
    )
    + "\n"
)

PYTHON_PROGRAM = """
from colabenv.errors import StateError
from colabenv.script.state import state_dir
try:
    print(state_dir())
except StateError:
    print("NO HOME")
"""


def _env(extra: dict[str, str]) -> dict[str, str]:
    return {**BASE, **extra}


def _bash_side(environ: dict[str, str], cwd: Path, prefix: tuple[str, ...] = ()) -> str:
    done = subprocess.run(
        [*prefix, "bash", "-c", BASH_PROGRAM],
        capture_output=True,
        text=True,
        env=environ,
        cwd=cwd,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout.removesuffix("\n")


def _python_side(environ: dict[str, str], cwd: Path, prefix: tuple[str, ...] = ()) -> str:
    repo = REPO
    done = subprocess.run(
        [*prefix, sys.executable, "-c", PYTHON_PROGRAM],
        capture_output=True,
        text=True,
        env={**environ, "PYTHONPATH": str(repo)},
        cwd=cwd,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.removesuffix("\n")


def _same(bash: str, python: str) -> bool:
    if NO_HOME in (bash, python):
        return bash == python
    return Path(bash) == Path(python)


@pytest.mark.parametrize(("name", "extra"), ENVIRONMENTS, ids=[n for n, _ in ENVIRONMENTS])
def test_script_and_python_agree_on_the_state_directory(
    name: str, extra: dict[str, str], tmp_path: Path
) -> None:
    environ = _env(extra)
    bash, python = _bash_side(environ, tmp_path), _python_side(environ, tmp_path)
    assert _same(bash, python), f"{name}: bash {bash!r}, python {python!r}"


def test_the_table_covers_each_branch_of_the_rule(tmp_path: Path) -> None:
    """The cases above reach every outcome, so agreement is not agreement on one default."""
    results = {name: _python_side(_env(extra), tmp_path) for name, extra in ENVIRONMENTS}
    home_entry = os.path.expanduser("~root")
    assert results["colab-gpu-empty"] == "/home/u/.cache/colabenv"
    assert results["colab-release-tag-empty"] == "/home/u/.cache/colabenv"
    assert results["colab-gpu-set"] == state.COLAB_STATE_DIR
    assert results["explicit"] == "/srv/state"
    assert results["explicit-tilde-slash"] == "/home/u/x"
    assert results["explicit-tilde"] == "/home/u"
    assert results["explicit-tilde-home-empty"] == "/x"
    assert results["explicit-tilde-root"] == f"{home_entry}/x"
    assert results["explicit-tilde-unknown-user"] == f"{tmp_path}/~no-such-user-here/x"
    assert results["xdg-absolute"] == "/xdg/cache/colabenv"
    assert results["xdg-relative"] == "/home/u/.cache/colabenv"
    assert results["home-empty"] == "/.cache/colabenv"
    assert results["explicit-relative"] == f"{tmp_path}/rel/state"  # fixed where the run starts


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to run as a user with no password entry",
)
def test_no_home_at_all_is_the_same_clear_error_on_both_sides(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    nobody = ("setpriv", "--reuid", "54321", "--regid", "54321", "--clear-groups", "--")
    runs = subprocess.run(
        [*nobody, sys.executable, "-c", ""], capture_output=True, text=True, timeout=30, check=False
    )
    if runs.returncode != 0:
        pytest.skip(
            "this interpreter cannot be started by a user without a password entry "
            f"(its files are not readable to others): {runs.stderr.strip()[:200]}"
        )
    environ = _env({})
    bash = _bash_side(environ, tmp_path, nobody)
    python = _python_side(environ, tmp_path, nobody)
    assert bash == python == NO_HOME


@pytest.mark.parametrize(
    "path", ["~", "~/", "~/x", "~//x/", "~root", "~root/x", "~nobody-xyz/x", "~0", "x/~", "", "/abs", "~x~/y"]
)
@pytest.mark.parametrize("home", [None, "", "/h", "/h/", "//", "rel"])
def test_expand_home_is_os_path_expanduser(
    path: str, home: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if home is None:
        monkeypatch.delenv("HOME", raising=False)
    else:
        monkeypatch.setenv("HOME", home)
    assert expand_home(path, os.environ) == os.path.expanduser(path)


def test_state_dir_reads_the_mapping_it_is_given() -> None:
    assert state_dir({"COLABENV_STATE_DIR": "~/s", "HOME": "/elsewhere"}) == Path("/elsewhere/s")
    assert state_dir({"COLAB_GPU": "0", "HOME": "/h"}) == Path(state.COLAB_STATE_DIR)


def test_the_helper_gets_its_names_from_state() -> None:
    program = helper_program(helper_source())
    namespace: dict[str, object] = {"__name__": "embedded"}
    exec(compile(program, "helper.py", "exec"), namespace)
    assert namespace["SHARED"] == state.shared_names()
    for name in (state.MARKER_NAME, state.ENV_HOOK_NAME, state.PENDING_NAME):
        assert name not in helper_source(), f"{name} is spelled in the helper itself"


def test_marker_name_is_defined_once() -> None:
    from colabenv.script import marker as marker

    assert marker.MARKER_NAME is state.MARKER_NAME
