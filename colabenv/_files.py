"""Writing a file whole or not at all: a temporary file beside it, then a rename (or a link)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


def write_atomic(
    path: Path,
    data: bytes,
    *,
    mode: int | None = None,
    exclusive: bool = False,
    validate: Callable[[Path], None] | None = None,
) -> None:
    """Write ``data`` to ``path`` via a temporary file beside it: never half-written.

    ``validate`` sees the temporary file before it takes the name (an error leaves ``path`` as it
    was); ``exclusive`` refuses to replace an existing file (FileExistsError); ``mode`` defaults
    to the existing file's, else 0o644. Failures are OSError; the temporary file is removed.
    """
    fd, tmp = _create_beside(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if validate is not None:
            validate(tmp)
        if mode is None:
            mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
        os.chmod(tmp, mode)
        if exclusive:
            os.link(tmp, path)
        else:
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _create_beside(path: Path) -> tuple[int, Path]:
    """A new, empty, private file next to ``path``, named after it and this process.

    What :func:`tempfile.mkstemp` does, without importing tempfile (and with it shutil, random
    and the compression modules) on the path of ``colabenv render -o``.
    """
    directory = path.parent if str(path.parent) else Path(".")
    for attempt in range(100):
        candidate = directory / f".{path.stem}.{os.getpid()}.{attempt}{path.suffix}"
        try:
            return os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), candidate
        except FileExistsError:
            continue
    raise OSError(f"no free temporary name beside {path.name}")
