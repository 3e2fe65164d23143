"""The child side of ``colabenv verify``: one framework per process, its result in a file.

Run by its path, in the interpreter being verified, which need not have colabenv installed::

    python /path/to/_smoke.py smoke FRAMEWORK --result FILE
    python /path/to/_smoke.py smoke-tpu FRAMEWORK --result FILE
    python /path/to/_smoke.py vram FRAMEWORK --go FILE --deadline S --search S --result FILE
    python /path/to/_smoke.py determinism FRAMEWORK --seed N --result FILE
    python /path/to/_smoke.py environ --result FILE NAME...

It imports only the standard library (and runs on Python 3.8 and newer) and the framework, so a
crash, hang or import error stays in this process. The result is a JSON object written to
``--result``, whatever the framework prints; stdout and stderr are left for the parent to quote.

This file starts the child; the work is in its sibling files, loaded by path (:func:`children`):
the command line and the reaping of every process the child starts in
:mod:`colabenv._smoke_main`; the smoke tests in :mod:`colabenv._smoke_gpu` and
:mod:`colabenv._smoke_tpu`, with what they share in :mod:`colabenv._smoke_base`; the VRAM probe
in :mod:`colabenv._smoke_vram`; the determinism child in :mod:`colabenv._smoke_determinism`.
Environ: the values of the named variables in a fresh interpreter of the verified environment,
after its ``.pth`` hooks ran.
"""

from __future__ import annotations

import importlib
import os
import sys
import types

PACKAGE = "_colabenv_smoke"
"""The name this file's siblings are imported under when it runs by its path."""


def _own_directory_off_the_path() -> None:
    """Run by its path, this file's folder (colabenv's package, holding a ``profile.py``) would
    come first on sys.path; the current directory takes its place, as with ``python -m``."""
    here = os.path.dirname(os.path.realpath(__file__))
    if sys.path and os.path.realpath(sys.path[0] or ".") == here:
        sys.path[0] = os.getcwd()


def children() -> types.ModuleType:
    """:mod:`colabenv._smoke_main`, with the sibling files it imports, loaded from this file's
    folder by path: colabenv's package is not importable in the interpreter being verified (or
    is another colabenv), so the folder stands in as the package ``_colabenv_smoke``, whose
    modules import each other relatively. No ``.pyc`` is written into that folder."""
    package = types.ModuleType(PACKAGE)
    package.__path__ = [os.path.dirname(os.path.realpath(__file__))]
    sys.modules[PACKAGE] = package
    writing = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        return importlib.import_module(f"{PACKAGE}._smoke_main")
    finally:
        sys.dont_write_bytecode = writing


if __name__ == "__main__":
    _own_directory_off_the_path()
    sys.exit(children().main(sys.argv[1:]))
