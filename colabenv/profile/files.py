"""Finding profile files and reading them: golden names, size and encoding checks, TOML, and the
``extends`` chain. The only part of :mod:`colabenv.profile.load` that touches the file system.

Profiles are parsed afresh each time (they are small, and a cache would be one more place a
command writes): the parsed-TOML cache (:mod:`colabenv._util.cache`) is for the shipped catalog.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from colabenv._util import toml
from colabenv._util.reader import Problems, shown
from colabenv._util.resources import golden_dir
from colabenv.errors import ProfileError, ProfileErrors, UsageError
from colabenv.models.frozen import model

MAX_PROFILE_BYTES = 1 << 20
MAX_EXTENDS_DEPTH = 64
NAME_PATTERN = r"[A-Za-z0-9._-]+"
"""A profile's name, and the bare name of a golden profile."""

Document = dict[str, object]
Layer = tuple[Document, Path]
"""One file's document, and the folder its relative paths start from."""


@model
class Context:
    """Which file a value came from, and how it was reached (for messages)."""

    path: Path
    via: str = ""

    def fail(self, key: str | None, problem: str) -> ProfileError:
        suffix = f" (extended by {self.via})" if self.via else ""
        return ProfileError(self.path, key or None, problem + suffix)

    def problems(self) -> Problems[ProfileError]:
        """Where one read of this file gathers its errors, to raise them together."""
        return Problems(ProfileError, ProfileErrors)


# ---------------------------------------------------------------------------------------------
# Finding a profile


def find_profile(name_or_path: str) -> Path:
    """A path (``./x``, ``x.toml``, ``dir/x``) is a file; a bare name is the golden profile of
    that name, else a file of that name in the current directory."""
    candidate = Path(name_or_path)
    if looks_like_path(name_or_path):
        if present(candidate):
            return candidate
    else:
        golden = golden_file(name_or_path)
        if golden is not None:
            return golden
        if present(candidate):
            return candidate
    raise UsageError(
        f"no profile file or golden profile named {shown(name_or_path)} (golden: {', '.join(golden_names())})"
    )


def looks_like_path(name_or_path: str) -> bool:
    return (
        "/" in name_or_path
        or (os.altsep is not None and os.altsep in name_or_path)
        or name_or_path.endswith(".toml")
        or name_or_path.startswith((".", "~"))
    )


def shadowed_file(name_or_path: str) -> Path | None:
    """What is in the current directory under a bare golden name (and was not used)."""
    if looks_like_path(name_or_path) or golden_file(name_or_path) is None:
        return None
    candidate = Path(name_or_path)
    return candidate if present(candidate) else None


def golden_path(name: str) -> Path:
    """The shipped golden profile called ``name``."""
    golden = golden_file(name)
    if golden is None:
        raise UsageError(f"no golden profile named {shown(name)} (golden: {', '.join(golden_names())})")
    return golden


def golden_names() -> tuple[str, ...]:
    return tuple(p.stem for p in golden_files())


def golden_files() -> list[Path]:
    directory = golden_dir()
    if not directory.is_dir():
        return []
    return sorted((p for p in directory.glob("*.toml") if p.is_file()), key=lambda p: p.stem)


def golden_file(name: str) -> Path | None:
    if not re.fullmatch(NAME_PATTERN, name):
        return None
    candidate = golden_dir() / f"{name}.toml"
    return candidate if candidate.is_file() else None


def present(path: Path) -> bool:
    """Something is at ``path``, even a link that leads nowhere (reading it says what)."""
    try:
        os.lstat(path)
    except (OSError, ValueError):
        return False
    return True


# ---------------------------------------------------------------------------------------------
# Reading one file


def read_text(context: Context) -> str:
    """The text of ``context.path``: a regular file of at most 1 MiB of UTF-8."""
    path = context.path
    try:
        info = path.stat()
    except FileNotFoundError:
        raise context.fail(None, "no such file") from None
    except (OSError, ValueError) as error:
        raise context.fail(None, f"cannot read: {_os_problem(error)}") from None
    if stat.S_ISDIR(info.st_mode):
        raise context.fail(None, "is a directory, not a profile file")
    if not stat.S_ISREG(info.st_mode):
        raise context.fail(None, "is not a regular file")
    if info.st_size > MAX_PROFILE_BYTES:
        raise context.fail(None, f"is {info.st_size} bytes; a profile may be at most 1 MiB")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_PROFILE_BYTES + 1)
    except OSError as error:
        raise context.fail(None, f"cannot read: {_os_problem(error)}") from None
    if len(data) > MAX_PROFILE_BYTES:
        raise context.fail(None, "is larger than 1 MiB; a profile may be at most 1 MiB")
    return _decode(data, context)


def _os_problem(error: Exception) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror.lower()
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _decode(data: bytes, context: Context) -> str:
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise context.fail(None, "is UTF-32 encoded; save it as UTF-8")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise context.fail(None, "is UTF-16 encoded; save it as UTF-8")
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    if b"\x00" in data:
        raise context.fail(None, "contains NUL bytes: a binary file, not TOML text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise context.fail(
            None,
            f"is not UTF-8 text (byte 0x{data[error.start]:02x} at line {line}, column {column})",
        ) from None


def parse_text(text: str, context: Context) -> Document:
    """``text`` as a TOML document; one ProfileError for any way it is not one."""
    try:
        document: Document = toml.loads(text)
    except RecursionError:
        raise context.fail(None, "invalid TOML: nested too deeply") from None
    except toml.TOMLDecodeError as error:
        message = " ".join(str(error).split()) or "syntax error"
        raise context.fail(None, f"invalid TOML: {message}") from None
    except ValueError:  # int() refusing a literal of thousands of digits
        raise context.fail(None, "invalid TOML: a number literal is too long") from None
    return document


# ---------------------------------------------------------------------------------------------
# The extends chain


def load_chain(path: Path, check: Callable[[Document, Context], object]) -> list[Layer]:
    """The documents of ``path`` and its ancestors, child first, each with the folder its
    relative paths start from; each passes ``check`` before its parent is read (so a broken
    child is reported before a missing parent)."""
    layers: list[Layer] = []
    chain: list[Path] = []
    current = path
    context = Context(path)
    while True:
        document = parse_text(read_text(context), context)
        check(document, context)
        layers.append((document, current.parent))
        chain.append(_identity(current))
        extends = document.get("extends")
        if not isinstance(extends, str):
            return layers
        parent = parent_file(extends, current)
        if parent is None:
            raise context.fail(
                "extends",
                f"{shown(extends)} is neither a golden profile ({', '.join(golden_names())})"
                f" nor a file next to {current.name}",
            )
        problem = _missing_problem(parent, current)
        if problem is not None:
            raise context.fail("extends", f"{shown(extends)} {problem}")
        if _identity(parent) in chain:
            names = [p.name for p in chain[chain.index(_identity(parent)) :]] + [parent.name]
            raise context.fail("extends", f"cycle: {' -> '.join(names)}")
        if len(chain) >= MAX_EXTENDS_DEPTH:
            raise context.fail("extends", f"more than {MAX_EXTENDS_DEPTH} levels of extends")
        context = Context(parent, via=context.via or path.name)
        current = parent


def parent_file(extends: str, child: Path) -> Path | None:
    """The file ``extends`` names in ``child``, by the command line's rule (:func:`find_profile`):
    a path is relative to ``child``'s folder; a bare name is the golden profile of that name,
    else a file of that name next to ``child``; None when it is neither."""
    beside = child.parent / extends
    if looks_like_path(extends):
        return beside
    golden = golden_file(extends)
    if golden is not None:
        return golden
    return beside if present(beside) else None


def _missing_problem(path: Path, beside: Path) -> str | None:
    """Why ``path`` (another profile, named by ``extends``) cannot be opened, in words."""
    try:
        os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            return "is a symbolic link to a file that does not exist"
        return f"not found next to {beside.name}"
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "is a loop of symbolic links"
        return f"cannot be read: {_os_problem(error)}"
    except ValueError as error:
        return f"cannot be read: {error}"
    return None


def _identity(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):
        return path.absolute()
