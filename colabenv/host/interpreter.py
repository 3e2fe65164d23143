"""The Python interpreter colabenv looks at: this one, or another one given by its path.

What ``detect`` and ``verify`` need of an interpreter (its version, ``sys.path``, standard
library and extension suffixes, platform) is read in-process for this interpreter, and for
another one by running a tiny standard-library-only probe in it, so the target needs neither
colabenv nor anything else installed.
"""

from __future__ import annotations

import importlib.machinery
import os
import platform
import sys
import sysconfig
from collections.abc import Iterable

from colabenv.models.frozen import model


@model
class Interpreter:
    """One Python interpreter, as seen from inside it."""

    executable: str
    version: str
    implementation: str
    path: tuple[str, ...]
    stdlib: tuple[str, ...]
    extension_suffixes: tuple[str, ...]
    platform: str
    free_threaded: bool = False
    """Built with the GIL disabled (``sysconfig``'s ``Py_GIL_DISABLED``: 3.13t, 3.14t)."""
    machine: str = ""
    """``platform.machine()``: ``x86_64``, ``aarch64``."""

    @property
    def wheel_platform(self) -> str | None:
        """``linux_x86_64`` or ``linux_aarch64`` (what ``--platform`` takes); None elsewhere."""
        return wheel_platform(self.platform, self.machine)

    @classmethod
    def current(cls) -> Interpreter:
        paths = sysconfig.get_paths()
        return cls(
            executable=sys.executable,
            version=platform.python_version(),
            implementation=platform.python_implementation(),
            path=tuple(sys.path),
            stdlib=_with_dynload(paths[key] for key in ("stdlib", "platstdlib") if key in paths),
            extension_suffixes=tuple(importlib.machinery.EXTENSION_SUFFIXES),
            platform=sysconfig.get_platform(),
            free_threaded=bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
            machine=platform.machine(),
        )


_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


def wheel_platform(sysconfig_platform: str, machine: str = "") -> str | None:
    """``sysconfig.get_platform()`` (``linux-x86_64``), else Linux and ``platform.machine()``,
    as ``linux_x86_64`` or ``linux_aarch64``; None for any other system or machine."""
    system, _, arch = sysconfig_platform.partition("-")
    if system != "linux":
        return None
    found = _MACHINES.get(arch.lower()) or _MACHINES.get(machine.lower())
    return f"linux_{found}" if found else None


def _with_dynload(stdlib: Iterable[str]) -> tuple[str, ...]:
    found = set(stdlib)
    found |= {os.path.join(p, "lib-dynload") for p in list(found)}
    return tuple(sorted(found))


PROBE_PREFIX = "COLABENV_INTERPRETER "
PROBE_TIMEOUT_S = 30.0
OLDEST_PYTHON = (3, 8)
"""The oldest Python colabenv can look into (what ``_smoke.py`` and the script helper run on)."""

PROBE_SOURCE = (
    "import sys\n"
    "h = sys.path[:1] if sys.path[:1] == [''] else []\n"
    "del sys.path[: len(h)]\n"
    "import importlib.machinery as m, json, platform, sysconfig\n"
    "p = sysconfig.get_paths()\n"
    "sys.stdout.write('\\n' + " + repr(PROBE_PREFIX) + " + json.dumps({\n"
    " 'executable': sys.executable, 'version': platform.python_version(),\n"
    " 'implementation': platform.python_implementation(), 'path': h + sys.path,\n"
    " 'stdlib': [p[k] for k in ('stdlib', 'platstdlib') if k in p],\n"
    " 'extension_suffixes': m.EXTENSION_SUFFIXES, 'platform': sysconfig.get_platform(),\n"
    " 'free_threaded': bool(sysconfig.get_config_var('Py_GIL_DISABLED')),\n"
    " 'machine': platform.machine()})"
    " + '\\n')\n"
)
"""Run in the other interpreter with ``-c``: the standard library only, any Python 3. The working
directory (``''``, first on ``sys.path`` with ``-c``) is off the path while it imports, so a
file there named like a module it uses (``json.py``) never runs (issue 35); the path it reports
is the interpreter's own, the working directory first."""


def probe_interpreter(executable: str, flag: str = "--interpreter") -> Interpreter:
    """The interpreter at ``executable``, as it describes itself; UsageError (naming ``flag``)
    when it cannot be run, is not a Python colabenv can look into, or says nothing sensible."""
    from colabenv._util import processes
    from colabenv.errors import ProcessError, UsageError, printable

    where = f"{flag} {printable(executable)}"
    try:
        done = processes.run([executable, "-c", PROBE_SOURCE], timeout=PROBE_TIMEOUT_S)
    except ProcessError as error:
        raise UsageError(f"{where}: {str(error).removeprefix(executable + ': ')}") from None
    if done.timed_out:
        raise UsageError(f"{where}: did not answer within {PROBE_TIMEOUT_S:g}s")
    lines = [line for line in done.stdout.splitlines() if line.startswith(PROBE_PREFIX)]
    described = _described(lines[-1][len(PROBE_PREFIX) :]) if lines else None
    if described is None:
        last = (done.stderr.strip().splitlines() or [""])[-1]
        why = f"exited {done.returncode}" + (f": {printable(last[:200])}" if last else "")
        raise UsageError(f"{where}: not a Python interpreter colabenv can read ({why})")
    if _release(described.version) < OLDEST_PYTHON:
        oldest = ".".join(map(str, OLDEST_PYTHON))
        raise UsageError(f"{where}: Python {printable(described.version)} is older than {oldest}")
    return described


def _release(version: str) -> tuple[int, ...]:
    parts = []
    for part in version.split(".")[:2]:
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits[:4]) if digits else 0)
    return tuple(parts)


def _strings(value: object) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _described(text: str) -> Interpreter | None:
    import json

    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    texts = [data.get(k) for k in ("executable", "version", "implementation", "platform")]
    lists = [_strings(data.get(k)) for k in ("path", "stdlib", "extension_suffixes")]
    if not all(isinstance(t, str) for t in texts) or any(v is None for v in lists):
        return None
    executable, version, implementation, platform_name = (str(t) for t in texts)
    path, stdlib, suffixes = (v or () for v in lists)
    free_threaded, machine = data.get("free_threaded", False), data.get("machine", "")
    if not executable or not isinstance(free_threaded, bool) or not isinstance(machine, str):
        return None
    return Interpreter(
        executable,
        version,
        implementation,
        path,
        _with_dynload(stdlib),
        suffixes,
        platform_name,
        free_threaded=free_threaded,
        machine=machine,
    )


def environment_of(executable: str) -> str:
    """What identifies the environment an interpreter path runs in: its virtual environment's
    folder (PEP 405: ``pyvenv.cfg`` beside the executable or one level up), else the
    interpreter file itself, links followed. ``/usr/local/bin/python3`` and the
    ``/usr/bin/python3.11`` it links to are one environment; two venvs made from it are not."""
    path = os.path.abspath(executable)
    for folder in (os.path.dirname(path), os.path.dirname(os.path.dirname(path))):
        if os.path.isfile(os.path.join(folder, "pyvenv.cfg")):
            return os.path.realpath(folder)
    return os.path.realpath(path)


def same_environment(left: str, right: str) -> bool:
    return environment_of(left) == environment_of(right)
