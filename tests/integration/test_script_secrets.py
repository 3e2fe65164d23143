"""Credentials in index URLs: never in any process's argv, and intact at the index.

The real script runs in a fresh venv against a local index that demands HTTP Basic auth and
records every Authorization header. Every command the script can start is on PATH only as a
wrapper that logs its argv before running the real program, and the target Python is such a
wrapper too, so the log holds the argv of every process the script started.
"""

from __future__ import annotations

import base64
import http.server
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fixtures import Runner, copy_venv, make_venv, venv_template
from tests.support.index import LocalIndex
from tests.support.isolation import clean_env, uv_bin
from tests.support.scriptrun import APT_GET, DPKG_QUERY, NVIDIA_SMI
from tests.support.wheels import Standins

pytestmark = pytest.mark.slow

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
USER = "te@m:user"
TOKEN = "a@b/c#d%e:f g?h&i=j+k"
TOOLS = (
    "bash",
    "mktemp",
    "rm",
    "cat",
    "grep",
    "tr",
    "id",
    "env",
    "sleep",
    "readlink",
    "mkdir",
    "flock",
    "tee",
    "getent",
    "uname",
    "sh",
    "ldconfig",
    "which",
    "git",
)


class AuthIndex(LocalIndex):
    """The local index, answering 401 to any request without Basic credentials."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.authorizations: list[str] = []

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        base = super()._handler_class()
        index = self

        class Handler(base):  # type: ignore[valid-type,misc]
            def _answer(self, *, send_body: bool) -> None:
                header = self.headers.get("Authorization", "")
                index.authorizations.append(header)
                if not header.startswith("Basic "):
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="index"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                super()._answer(send_body=send_body)

        return Handler


def _wrapper(log: Path, real: str) -> str:
    return (
        f"#!/bin/sh\nprintf '%s\\0' \"$0\" \"$@\" >>'{log}'\nprintf '\\n' >>'{log}'\nexec '{real}' \"$@\"\n"
    )


def _host(root: Path, venv_from: Path | None) -> tuple[Path, Path, Path]:
    """(venv, bin with only logging wrappers, argv log); the venv a copy of ``venv_from`` (one
    with pip), else made without pip."""
    venv = root / "venv"
    if venv_from is not None:
        copy_venv(venv_from, venv)
    else:
        make_venv(venv)
    tools = root / "bin"
    tools.mkdir()
    log = root / "argv.log"
    stand_ins = root / "stand-ins"
    stand_ins.mkdir()
    for name, text in (("dpkg-query", DPKG_QUERY), ("apt-get", APT_GET), ("nvidia-smi", NVIDIA_SMI)):
        (stand_ins / name).write_text(text)
        (stand_ins / name).chmod(0o755)
        (tools / name).write_text(_wrapper(log, str(stand_ins / name)))
    (tools / "uv").write_text(_wrapper(log, uv_bin()))
    for name in TOOLS:
        found = shutil.which(name)
        if found:
            (tools / name).write_text(_wrapper(log, found))
    python = root / "python"
    python.write_text(_wrapper(log, str(venv / "bin" / "python")))
    for path in (*tools.iterdir(), python):
        path.chmod(0o755)
    return python, tools, log


@pytest.fixture
def auth_index(standin_wheels: Standins) -> Iterator[AuthIndex]:
    with AuthIndex(standin_wheels.default) as index:
        yield index


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_credentials_reach_the_index_intact_and_no_argv(
    installer: str, tmp_path: Path, runner: Runner, auth_index: AuthIndex, request: pytest.FixtureRequest
) -> None:
    host = tmp_path / "host"
    host.mkdir()
    python, tools, log = _host(host, venv_from=venv_template(request, installer == "pip"))
    url = f"http://${{IDX_USER}}:${{IDX_TOKEN}}@127.0.0.1:{auth_index.port}/simple/"
    profile = tmp_path / "p.toml"
    profile.write_text(
        f'name = "secret"\n[packages]\nrequirements = ["requests>=2.30"]\n'
        f'[install]\ninstaller = "{installer}"\nindex_url = "{url}"\n'
    )
    script = tmp_path / "setup.sh"
    rendered = runner("render", profile, "--cpu", "--python", PY, "-o", script)
    assert rendered.returncode == 0, rendered.stderr
    state = tmp_path / "state"
    (tmp_path / "tmp").mkdir()
    env = clean_env(
        PATH=str(tools),
        COLABENV_PYTHON=str(python),
        COLABENV_STATE_DIR=str(state),
        COLABENV_TEST_APT_LOG=str(host / "apt.log"),
        COLABENV_TEST_APT_STATE=str(host / "apt-state"),
        COLABENV_TEST_DRIVER="0",
        HOME=str(host),
        TMPDIR=str(tmp_path / "tmp"),
        IDX_USER=USER,
        IDX_TOKEN=TOKEN,
        UV_HTTP_RETRIES="0",
    )
    done = subprocess.run(
        [str(tools / "bash"), str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "COLABENV: restart required"

    expected = "Basic " + base64.b64encode(f"{USER}:{TOKEN}".encode()).decode()
    sent = [header for header in auth_index.authorizations if header]
    assert sent, "the installer never sent the credentials"
    assert set(sent) == {expected}
    assert any("requests" in path for path in auth_index.requests)

    commands = [line.split("\0")[:-1] for line in log.read_text().splitlines() if line]
    programs = {Path(argv[0]).name for argv in commands}
    assert {"python", "mktemp"} <= programs
    assert ("uv" if installer == "uv" else "python") in programs
    installs = [argv for argv in commands if "install" in argv]
    assert installs, "no installer ran through the wrappers"
    secrets = [TOKEN, "a%40b", *TOKEN.split("/"), "d%25e"]
    for argv in commands:
        for secret in [*secrets, USER, "te%40m"]:
            assert not any(secret in word for word in argv), argv
    shown = done.stdout + done.stderr + (state / "restart-marker.json").read_text()
    assert not any(secret in shown for secret in secrets), shown


ENV_SECRET = "hf_Env-s3cret/value+0123"


def test_an_env_reference_reaches_the_interpreter_and_no_file_argv_or_output(
    tmp_path: Path, runner: Runner, default_index: LocalIndex
) -> None:
    """``[env]`` ``HF_TOKEN = "${HF_TOKEN}"`` (issue 34): the script, the restart marker, the
    hook's file and every other file of the run hold the reference only; no process the script
    starts has the secret on its command line; a new interpreter has it, from its environment,
    through the hook; ``verify`` checks it without showing it."""
    host = tmp_path / "host"
    host.mkdir()
    python, tools, log = _host(host, venv_from=None)
    profile = tmp_path / "p.toml"
    profile.write_text(
        'name = "secret-env"\n[env]\nHF_TOKEN = "${HF_TOKEN}"\nAUTH_HEADER = "Bearer ${HF_TOKEN}"\n'
        f'TEAM = "on"\n[install]\ninstaller = "uv"\nindex_url = "{default_index.url}"\n'
    )
    script = tmp_path / "setup.sh"
    rendered = runner("render", profile, "--cpu", "--python", PY, "-o", script, env={"HF_TOKEN": ENV_SECRET})
    assert rendered.returncode == 0, rendered.stderr
    state = tmp_path / "state"
    (tmp_path / "tmp").mkdir()
    env = clean_env(
        PATH=str(tools),
        COLABENV_PYTHON=str(python),
        COLABENV_STATE_DIR=str(state),
        COLABENV_TEST_APT_LOG=str(host / "apt.log"),
        COLABENV_TEST_APT_STATE=str(host / "apt-state"),
        COLABENV_TEST_DRIVER="0",
        HOME=str(host),
        TMPDIR=str(tmp_path / "tmp"),
        HF_TOKEN=ENV_SECRET,
    )
    done = subprocess.run(
        [str(tools / "bash"), str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "COLABENV: restart required"
    assert ENV_SECRET not in done.stdout + done.stderr + rendered.stdout + rendered.stderr
    commands = [line.split("\0")[:-1] for line in log.read_text().splitlines() if line]
    assert commands, "no process ran through the wrappers"
    for argv in commands:
        assert not any(ENV_SECRET in word for word in argv), argv
    files = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()]
    assert state / "restart-marker.json" in files
    from colabenv.script.state import ENV_HOOK_NAME

    hooks = [p for p in files if p.name == ENV_HOOK_NAME]
    assert len(hooks) == 1 and b"b'HF_TOKEN'" in hooks[0].read_bytes(), "the hook names the variable"
    for path in files:
        assert ENV_SECRET.encode() not in path.read_bytes(), path

    show = (
        "import json, os; print(json.dumps([os.environ.get(n) for n in ('HF_TOKEN', 'AUTH_HEADER', 'TEAM')]))"
    )
    venv_python = host / "venv" / "bin" / "python"
    for given, expected in (
        ({"HF_TOKEN": ENV_SECRET}, [ENV_SECRET, f"Bearer {ENV_SECRET}", "on"]),
        ({}, [None, None, "on"]),
    ):
        seen = subprocess.run(
            [str(venv_python), "-c", show],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", **given},
        )
        assert seen.returncode == 0 and seen.stderr == "", seen.stderr
        assert json.loads(seen.stdout) == expected

    shell = clean_env(COLABENV_STATE_DIR=str(state), HF_TOKEN=ENV_SECRET)
    verified = runner("verify", "--json", "--cpu", "--interpreter", venv_python, base=shell)
    assert ENV_SECRET not in verified.stdout + verified.stderr
    checks = {c["name"]: c for c in json.loads(verified.stdout)["checks"]}
    assert checks["env"]["status"] == "PASS", checks["env"]
    assert checks["env"]["detail"] == f"AUTH_HEADER, HF_TOKEN, TEAM set as asked in a new {venv_python}"
    without = runner(
        "verify",
        "--json",
        "--cpu",
        "--interpreter",
        venv_python,
        base=clean_env(COLABENV_STATE_DIR=str(state)),
    )
    checks = {c["name"]: c for c in json.loads(without.stdout)["checks"]}
    assert "COLABENV_PYTHON" not in checks["env"]["detail"], "the hook is not what is missing"
    assert checks["env"]["status"] == "FAIL"
    assert checks["env"]["detail"].startswith(
        "AUTH_HEADER=Bearer ${HF_TOKEN} needs $HF_TOKEN, which is not set"
    )
