"""Run rendered bootstrap scripts for real: a venv, local indexes, apt and nvidia-smi stand-ins.

apt-get and dpkg-query are replaced on PATH by recording stand-ins that keep a list of
"installed" Debian packages in a file; nvidia-smi by one that reports a chosen driver. pip or
uv install for real from the local PEP 503 indexes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from colabenv.script.state import MARKER_NAME
from tests.support.fixtures import copy_venv, make_venv
from tests.support.isolation import clean_env, uv_bin

DPKG_QUERY = """#!/bin/sh
# dpkg-query -W -f='${Status}' NAME
name=""
for arg in "$@"; do name="$arg"; done
echo "dpkg-query $name" >>"$COLABENV_TEST_APT_LOG"
if grep -qx "$name" "$COLABENV_TEST_APT_STATE" 2>/dev/null; then
  printf 'install ok installed'
  exit 0
fi
echo "dpkg-query: no packages found matching $name" >&2
exit 1
"""

APT_GET = """#!/bin/sh
echo "apt-get $*" >>"$COLABENV_TEST_APT_LOG"
[ "$DEBIAN_FRONTEND" = noninteractive ] || { echo "not noninteractive" >&2; exit 9; }
if [ "$1" = install ]; then
  for arg in "$@"; do
    case "$arg" in
      -*|install) ;;
      *) echo "${arg%%=*}" >>"$COLABENV_TEST_APT_STATE" ;;
    esac
  done
fi
exit 0
"""

NVIDIA_SMI = """#!/bin/sh
case "$*" in
  *driver_version*) echo "$COLABENV_TEST_DRIVER" ;;
  *) echo "NVIDIA-SMI $COLABENV_TEST_DRIVER   Driver Version: $COLABENV_TEST_DRIVER" ;;
esac
"""


@dataclass
class Host:
    """A fake host: a venv to install into, stand-in tools, a state directory."""

    root: Path
    python: Path
    bin: Path
    state: Path
    apt_log: Path
    apt_state: Path
    driver: str = "560.35.03"

    def env(self, **extra: str) -> dict[str, str]:
        env = clean_env(
            PATH=f"{self.bin}{os.pathsep}/usr/bin{os.pathsep}/bin",
            COLABENV_PYTHON=str(self.python),
            COLABENV_STATE_DIR=str(self.state),
            COLABENV_TEST_APT_LOG=str(self.apt_log),
            COLABENV_TEST_APT_STATE=str(self.apt_state),
            COLABENV_TEST_DRIVER=self.driver,
            HOME=str(self.root / "home"),
            TMPDIR=str(self.root / "tmp"),
        )
        env.update(extra)
        return env

    def run(self, script: Path, timeout: float = 300, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(script)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env(**extra),
            stdin=subprocess.DEVNULL,
        )

    def installed(self) -> dict[str, str]:
        code = (
            "import json, importlib.metadata as m; "
            "print(json.dumps({d.metadata['Name'].lower(): d.version for d in m.distributions()}))"
        )
        out = subprocess.run(
            [str(self.python), "-c", code], capture_output=True, text=True, check=True, env=clean_env()
        )
        found: dict[str, str] = json.loads(out.stdout)
        return {k: v for k, v in found.items() if k not in ("pip", "setuptools", "wheel")}

    def marker(self) -> dict[str, object] | None:
        path = self.state / MARKER_NAME
        if not path.exists():
            return None
        data: dict[str, object] = json.loads(path.read_text())
        return data

    def apt_calls(self) -> list[str]:
        if not self.apt_log.exists():
            return []
        return [line for line in self.apt_log.read_text().splitlines() if line.startswith("apt-get")]

    def new_interpreter(self, code: str) -> str:
        """Run ``code`` in a new interpreter of the venv: the 'restarted kernel'."""
        out = subprocess.run(
            [str(self.python), "-c", code], capture_output=True, text=True, check=True, env=clean_env()
        )
        return out.stdout


def make_host(
    root: Path, *, with_pip: bool, preinstalled_apt: Sequence[str] = (), venv_from: Path | None = None
) -> Host:
    """A host under ``root``; its venv is made (with pip or without), or with ``venv_from`` a
    copy of that venv (``pip_venv_template`` for one with pip, made once per session)."""
    root.mkdir(parents=True, exist_ok=True)
    venv = root / "venv"
    if venv_from is not None:
        copy_venv(venv_from, venv)
        assert (venv / "bin" / "pip").exists() is with_pip, f"{venv_from} with_pip={with_pip}"
    else:
        make_venv(venv, with_pip=with_pip)
    tools = root / "bin"
    tools.mkdir()
    for name, text in (("dpkg-query", DPKG_QUERY), ("apt-get", APT_GET), ("nvidia-smi", NVIDIA_SMI)):
        path = tools / name
        path.write_text(text)
        path.chmod(0o755)
    os.symlink(uv_bin(), tools / "uv")
    for name in ("python3", "bash", "mktemp", "rm", "cat", "grep", "tr", "id", "env", "sleep"):
        found = shutil.which(name)
        if found and not (tools / name).exists() and name != "python3":
            os.symlink(found, tools / name)
    apt_state = root / "apt-installed.txt"
    apt_state.write_text("".join(f"{p}\n" for p in preinstalled_apt))
    (root / "home").mkdir()
    (root / "tmp").mkdir()
    return Host(root, venv / "bin" / "python", tools, root / "state", root / "apt.log", apt_state)
