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


GIL_WARNING = (
    "The global interpreter lock (GIL) has been enabled to load module '{module}', which has not"
    " declared that it can run safely without the GIL. To override this behavior and keep the GIL"
    " disabled (at your own risk), run with PYTHON_GIL=0 or -Xgil=0."
)
"""CPython's RuntimeWarning, word for word as Python/import.c (3.13) formats it."""


def gil_switch(
    folder: Path, *, on_at_start: bool = False, turned_on_by: str | None = None, warns: bool = True
) -> dict[str, str]:
    """The variables that give a child ``sys._is_gil_enabled()`` as a free-threaded CPython
    answers it (a ``sitecustomize`` written into ``folder``, put on ``PYTHONPATH``; pair it
    with :func:`free_threaded` on the same folder). The GIL is on from the start where CPython
    turns it on then: ``-X gil=1`` (the command line over the environment), else
    ``PYTHON_GIL=1``; or where ``on_at_start`` (a module a ``.pth`` file imported turned it on,
    its warning printed before any program ran). ``turned_on_by``: the import of that module
    turns it on, with CPython's warning naming it where ``warns``, as CPython warns only when it
    changes the GIL (``_PyEval_EnableGILPermanent``)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        "import os, sys, warnings\n"
        "_option = sys._xoptions.get('gil')\n"
        "_forced = _option == '1' if _option is not None else os.environ.get('PYTHON_GIL') == '1'\n"
        f"_state = [_forced or {on_at_start!r}]\n"
        "sys._is_gil_enabled = lambda: _state[0]\n"
        "class _TurnsTheGilOn:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name == {turned_on_by!r} and not _state[0]:\n"
        "            _state[0] = True\n"
        f"            if {warns!r}:\n"
        f"                warnings.warn({GIL_WARNING!r}.format(module=name), RuntimeWarning)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _TurnsTheGilOn())\n"
        # sys.flags.gil (3.13+) is always 1 in a build with the GIL; a free-threaded build's is
        # what -X gil or PYTHON_GIL asked (the option first), None where neither did
        "if hasattr(sys.flags, 'gil'):\n"
        "    _asked = _option if _option is not None else os.environ.get('PYTHON_GIL')\n"
        "    class _Flags:\n"
        "        def __init__(self, real, gil):\n"
        "            self._real, self.gil = real, gil\n"
        "        def __getattr__(self, name):\n"
        "            return getattr(self._real, name)\n"
        "    sys.flags = _Flags(sys.flags, int(_asked) if _asked in ('0', '1') else None)\n"
    )
    return {"PYTHONPATH": str(folder)}


REFUSES_GIL_OFF = sys.version_info >= (3, 13) and not sysconfig.get_config_var("Py_GIL_DISABLED")
"""A CPython 3.13+ build with the GIL stops at start where ``-X gil=0`` or ``PYTHON_GIL=0`` asks
for none ("Fatal Python error: config_read_gil: Disabling the GIL is not supported by this
build"), before any ``sitecustomize`` runs: a test that needs either cannot run there."""
