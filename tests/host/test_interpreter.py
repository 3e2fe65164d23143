"""Looking into another interpreter (``--interpreter``) runs none of the working directory's files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from colabenv.errors import UsageError
from colabenv.host.interpreter import PROBE_PREFIX, Interpreter, probe_interpreter, wheel_platform


def test_files_named_like_the_probes_modules_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -c`` puts the working directory first on sys.path; a ``json.py`` or
    ``importlib.py`` there ran in the probe and broke it (issue 35). The path reported still
    has the working directory first, as the interpreter itself has it."""
    ran = tmp_path / "ran"
    ran.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    for name in ("json", "importlib", "platform", "sysconfig"):
        (work / f"{name}.py").write_text(f"open({str(ran / name)!r}, 'w').close()\nraise SystemExit(3)\n")
    monkeypatch.chdir(work)
    described = probe_interpreter(sys.executable)
    assert sorted(p.name for p in ran.iterdir()) == []
    assert described.path[0] == "" and described.executable
    assert any(Path(p).is_dir() for p in described.stdlib)


def test_the_probe_reports_free_threading_and_the_machine() -> None:
    """This interpreter's own answers (``Py_GIL_DISABLED``, ``platform.machine()``), through the
    probe child as in-process."""
    import platform
    import sysconfig

    described = probe_interpreter(sys.executable)
    assert described.free_threaded is bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    assert described.machine == platform.machine()
    assert described.wheel_platform == wheel_platform(sysconfig.get_platform(), platform.machine())
    current = Interpreter.current()
    assert (current.free_threaded, current.machine) == (described.free_threaded, described.machine)


def test_a_free_threaded_answer_is_read_and_a_malformed_one_refused(tmp_path: Path) -> None:
    """An interpreter that says it is free-threaded (what ``python3.14t`` prints) is taken at its
    word; a ``free_threaded`` that is not a boolean is no answer colabenv can read."""
    answer = {
        "executable": "/usr/bin/python3.14t",
        "version": "3.14.0",
        "implementation": "CPython",
        "path": [""],
        "stdlib": ["/usr/lib/python3.14t"],
        "extension_suffixes": [".cpython-314t-x86_64-linux-gnu.so"],
        "platform": "linux-x86_64",
        "free_threaded": True,
        "machine": "x86_64",
    }
    fake = tmp_path / "python3.14t"
    fake.write_text(f"#!/bin/sh\necho '{PROBE_PREFIX}{json.dumps(answer)}'\n")
    fake.chmod(0o755)
    described = probe_interpreter(str(fake))
    assert described.free_threaded is True and described.wheel_platform == "linux_x86_64"
    fake.write_text(f"#!/bin/sh\necho '{PROBE_PREFIX}{json.dumps({**answer, 'free_threaded': 'yes'})}'\n")
    with pytest.raises(UsageError, match="not a Python interpreter colabenv can read"):
        probe_interpreter(str(fake))


@pytest.mark.parametrize(
    ("system", "machine", "tag"),
    [
        ("linux-x86_64", "x86_64", "linux_x86_64"),
        ("linux-aarch64", "aarch64", "linux_aarch64"),
        ("linux-arm64", "", "linux_aarch64"),
        ("linux", "aarch64", "linux_aarch64"),
        ("macosx-14.0-arm64", "arm64", None),
        ("linux-riscv64", "riscv64", None),
        ("win-amd64", "AMD64", None),
    ],
)
def test_wheel_platform(system: str, machine: str, tag: str | None) -> None:
    assert wheel_platform(system, machine) == tag
