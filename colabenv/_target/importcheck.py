"""The child side of ``colabenv doctor``'s import check: import one module, say how it went.

Run by its path, in the interpreter being checked (which need not have colabenv)::

    python importcheck.py MODULE RESULT_FILE

The first ``sys.path`` entry is the current directory, as in a notebook kernel or ``python -c``
(not this program's folder), so a same-name file there shadows as it would in the kernel. The
result is one JSON object written to RESULT_FILE: the module, whether the import worked, the
file it was found in, and for a failure the exception's type, its text and the last frames of
its traceback, this program's and importlib's left out (each bounded). What the import prints
is left on stdout and stderr for the parent to quote (NumPy's "compiled using NumPy 1.x" text
is printed before it raises).

What this program needs (``importlib``) is imported before the working directory goes first on
``sys.path``: a file there named like it (``importlib.py``) never runs here, where it could fake
every import (issue 35); ``doctor`` names such a file from its scan of the path. A failure's
frames are read from the traceback objects themselves: ``traceback`` (with linecache, tokenize
and re) would cost each child some 6 ms and load what the module checked may itself import.
Standard library only; runs on Python 3.8 and newer.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import TracebackType

TEXT_LIMIT = 4000
TAIL_LINES = 12
LINE_LIMIT = 2000


def _bounded(text: str, limit: int = TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit // 2] + " ... " + text[-limit // 2 :]


def _origin(module: object) -> str | None:
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None) if spec is not None else None
    if isinstance(origin, str) and origin not in ("built-in", "frozen"):
        return origin
    found = getattr(module, "__file__", None)
    if isinstance(found, str):
        return found
    locations = getattr(spec, "submodule_search_locations", None) if spec is not None else None
    for place in list(locations or [])[:1]:
        return str(place)
    return None


def _string(text: str) -> str:
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
    out.append('"')
    return "".join(out)


def dumps(value: object) -> str:
    """``value`` (dicts, lists, strings, booleans, None) as JSON, ASCII only: written without
    the json module, which the module checked may be (a ``json.py`` where it looks first)."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dict):
        return "{" + ", ".join(_string(str(k)) + ": " + dumps(v) for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(dumps(item) for item in value) + "]"
    return _string(str(value))


def _frames(tb: TracebackType | None) -> list[str]:
    """``file:line in function`` of each frame of ``tb``, oldest first, as
    ``traceback.extract_tb`` names them; this program's and importlib's left out."""
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename != __file__ and "importlib" not in code.co_filename:
            frames.append(f"{code.co_filename}:{tb.tb_lineno} in {code.co_name}")
        tb = tb.tb_next
    return frames


def check(name: str) -> dict[str, object]:
    result: dict[str, object] = {"mode": "import", "module": name, "python": sys.executable}
    try:
        module = importlib.import_module(name)
    except BaseException as exc:  # an import may raise anything, SystemExit included
        tail = _frames(exc.__traceback__)[-TAIL_LINES:]
        result.update(
            ok=False,
            type=type(exc).__name__,
            text=_bounded(str(exc)),
            tail=[line[:LINE_LIMIT] for line in tail],
        )
        return result
    result.update(ok=True, origin=_origin(module))
    return result


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: importcheck.py MODULE RESULT_FILE\n")
        return 2
    name, result_path = argv
    sys.path[0] = os.getcwd()
    result = check(name)
    with open(result_path, "w", encoding="ascii") as handle:
        handle.write(dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
