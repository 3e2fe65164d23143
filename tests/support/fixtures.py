"""pytest fixtures over the stand-in wheels and local indexes.

Use from a test file with ``from tests.support.fixtures import *  # noqa: F403`` (or list
``"tests.support.fixtures"`` in the root conftest's ``pytest_plugins``).

``standin_wheels`` is built once per session; ``default_index`` and ``pytorch_index`` are fresh
servers per test (they start in milliseconds), so a test may stop them or make them fail.
``pytorch_index.sub_url("cu124")`` is the cu124 index; as a profile's ``pytorch_index_url``
mirror, use ``pytorch_index.base_url`` (it replaces ``https://download.pytorch.org/whl``).

A venv with pip takes seconds to make (ensurepip installs pip from its bundled wheel, about 5 s
here) against a fraction of one without: ``pip_venv_template`` makes one per session, and
``copy_venv`` gives a test its own copy of it (about 0.3 s).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from tests.support.index import LocalIndex
from tests.support.isolation import clean_env
from tests.support.wheels import Standins, build_standins

__all__ = [
    "Runner",
    "console_runner",
    "console_script",
    "copy_venv",
    "default_index",
    "fresh_venv",
    "make_venv",
    "pip_venv_template",
    "pytorch_index",
    "runner",
    "standin_wheels",
    "venv_template",
]


@pytest.fixture(scope="session")
def standin_wheels(tmp_path_factory: pytest.TempPathFactory) -> Standins:
    return build_standins(tmp_path_factory.mktemp("standin-wheels"))


@pytest.fixture
def default_index(standin_wheels: Standins) -> Iterator[LocalIndex]:
    with LocalIndex(standin_wheels.default) as index:
        yield index


@pytest.fixture
def pytorch_index(standin_wheels: Standins) -> Iterator[LocalIndex]:
    with LocalIndex(standin_wheels.pytorch) as index:
        yield index


def make_venv(path: Path, *, with_pip: bool = False, base: str | Path | None = None) -> Path:
    """A fresh venv of ``base`` (the running Python by default); returns its interpreter. The
    one place tests make a venv (:func:`copy_venv` copies one). Without pip by default (a
    fraction of a second; install into it with ``uv pip install --python <interpreter>``); with
    pip, about 5 s: a test that needs one copies the session's ``pip_venv_template``."""
    argv = [str(base or sys.executable), "-m", "venv", str(path)]
    if not with_pip:
        argv.insert(3, "--without-pip")
    subprocess.run(argv, check=True, env=clean_env(), capture_output=True)
    return path / "bin" / "python"


def copy_venv(template: Path, path: Path) -> Path:
    """A venv at ``path`` that is a copy of the venv ``template``; returns its interpreter.

    The interpreter links are copied as links (to the same base Python), and every text file
    that names the template's folder (``pyvenv.cfg``, the ``bin/`` scripts' ``#!`` lines, the
    activate scripts) names the copy's instead, so nothing in the copy reaches the template.
    """
    shutil.copytree(template, path, symlinks=True)
    old, new = str(template).encode(), str(path).encode()
    for file in [path / "pyvenv.cfg", *(path / "bin").iterdir()]:
        if file.is_symlink() or not file.is_file():
            continue
        data = file.read_bytes()
        if old in data:
            file.write_bytes(data.replace(old, new))
    return path / "bin" / "python"


@pytest.fixture(scope="session")
def pip_venv_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One venv with pip for the session, never installed into: copy it (:func:`copy_venv`)."""
    path = tmp_path_factory.mktemp("pip-venv-template") / "venv"
    make_venv(path, with_pip=True)
    return path


def venv_template(request: pytest.FixtureRequest, with_pip: bool) -> Path | None:
    """A venv to copy for a test's host (``make_host(..., venv_from=...)``): the session's
    ``pip_venv_template`` when the venv needs pip (made on first use), else None (a venv
    without pip is made in a fraction of a second)."""
    if not with_pip:
        return None
    template: Path = request.getfixturevalue("pip_venv_template")
    return template


@pytest.fixture
def fresh_venv(tmp_path: Path, request: pytest.FixtureRequest) -> Callable[..., Path]:
    """``fresh_venv()`` -> the interpreter of a new venv under the test's tmp_path; with
    ``with_pip=True``, a copy of the session's ``pip_venv_template``."""
    counter = iter(range(1000))

    def make(*, with_pip: bool = False) -> Path:
        path = tmp_path / f"venv{next(counter)}"
        if with_pip:
            return copy_venv(request.getfixturevalue("pip_venv_template"), path)
        return make_venv(path)

    return make


def console_script() -> Path:
    """The real ``colabenv`` console script of the environment running the tests."""
    exe = Path(sys.executable).parent / "colabenv"
    assert exe.exists(), f"console script missing: {exe}"
    return exe


def console_runner(cwd: Path | None = None) -> Runner:
    """A :class:`Runner` for helpers that are not tests (no fixture to ask): its working
    directory is ``cwd``, else the current one."""
    return Runner(console_script(), cwd or Path.cwd())


class Runner:
    """Runs the real ``colabenv`` console script of the test environment, as a user would.

    ``runner("render", "pytorch", "--cpu")`` returns the finished process (text, both streams
    captured). ``env`` adds to (or, with a None value, removes from) ``base``, the test's
    environment unless given (:func:`~tests.support.isolation.clean_env`, say); ``cwd``
    defaults to the runner's (the test's tmp_path for the fixture); ``stdout_path`` may name a
    file to write stdout into (``/dev/full``, say).
    """

    def __init__(self, exe: Path, cwd: Path) -> None:
        self.exe = exe
        self.cwd = cwd

    def __call__(
        self,
        *args: str | Path,
        env: Mapping[str, str | None] | None = None,
        cwd: Path | None = None,
        input: str | None = None,
        timeout: float = 120,
        stdout_path: Path | None = None,
        base: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        environ = dict(os.environ if base is None else base)
        for key, value in (env or {}).items():
            if value is None:
                environ.pop(key, None)
            else:
                environ[key] = value
        argv = [str(self.exe), *(str(a) for a in args)]
        with contextlib.ExitStack() as stack:
            sink = subprocess.PIPE if stdout_path is None else stack.enter_context(open(stdout_path, "w"))
            done = subprocess.run(
                argv,
                stdout=sink,
                stderr=subprocess.PIPE,
                text=True,
                env=environ,
                cwd=cwd or self.cwd,
                input=input,
                timeout=timeout,
                check=False,
            )
        if stdout_path is not None:  # what went to the file is not captured
            return subprocess.CompletedProcess(done.args, done.returncode, "", done.stderr)
        return done


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    """The one way tests run the CLI: the real console script in a subprocess."""
    return Runner(console_script(), tmp_path)
