"""Interpreter facts this machine's Python cannot have, given to a child Python through the
variables CPython's own ``sysconfig`` reads for cross builds, so that the child's standard library
answers as the other interpreter's would (nothing of colabenv's is patched):

- ``_PYTHON_HOST_PLATFORM``: what ``sysconfig.get_platform()`` answers (``linux-aarch64``), the
  platform pip's tags and the script helper's preflight take;
- ``_PYTHON_SYSCONFIGDATA_NAME``: the build's configuration module, here this interpreter's own
  with ``Py_GIL_DISABLED`` set, as a free-threaded build (3.13t, 3.14t) has it.

No aarch64 machine and no free-threaded Python are at hand; everything else the child does is
real.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig
from pathlib import Path

FREE_THREADED_MODULE = "_sysconfigdata_colabenv_test_free_threaded"


def on_platform(platform: str) -> dict[str, str]:
    """The variables that make a child's ``sysconfig.get_platform()`` answer ``platform`` (a
    wheel tag's name, ``linux_aarch64``)."""
    system, _, machine = platform.partition("_")
    return {"_PYTHON_HOST_PLATFORM": f"{system}-{machine}"}


def sysconfigdata_name() -> str:
    """The module this interpreter's ``sysconfig`` reads its build variables from, named from
    public facts as the build names it (``_sysconfigdata_{ABIFLAGS}_{MACHDEP}_{MULTIARCH}``, its
    Makefile's rule: ``_sysconfigdata__linux_x86_64-linux-gnu``), unless
    ``_PYTHON_SYSCONFIGDATA_NAME`` names another; found on the path, or an error saying so."""
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    name = (
        os.environ.get("_PYTHON_SYSCONFIGDATA_NAME")
        or f"_sysconfigdata_{sys.abiflags}_{sys.platform}_{multiarch}"
    )
    if importlib.util.find_spec(name) is None:
        raise RuntimeError(f"this interpreter has no {name} module: its build variables are elsewhere")
    return name


def free_threaded(folder: Path) -> dict[str, str]:
    """The variables that make a child's ``sysconfig`` say ``Py_GIL_DISABLED`` (its module
    written into ``folder``, put on ``PYTHONPATH``): every other build variable is this
    interpreter's."""
    folder.mkdir(parents=True, exist_ok=True)
    real = sysconfigdata_name()
    (folder / f"{FREE_THREADED_MODULE}.py").write_text(
        "import importlib\n"
        f"build_time_vars = dict(importlib.import_module({real!r}).build_time_vars, Py_GIL_DISABLED=1)\n"
    )
    return {"PYTHONPATH": str(folder), "_PYTHON_SYSCONFIGDATA_NAME": FREE_THREADED_MODULE}
