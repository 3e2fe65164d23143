"""A wheel of the running colabenv, made from its own installed files, for a container image.

``render --format dockerfile|apptainer`` puts it into the build folder, so that the image
installs the very colabenv that rendered it, with nothing but the build folder (no release of
that version need exist on an index). The wheel is what the real build makes
(``pyproject.toml``): the ``colabenv`` package, the shipped profiles as ``colabenv/_profiles``,
and a ``.dist-info`` with the installed ``METADATA`` (its ``Requires-Dist`` bring colabenv's
dependencies) and ``entry_points.txt`` (the ``colabenv`` command), ``WHEEL`` and a ``RECORD``
with every file's SHA-256. It is reproducible: the entries sorted, every timestamp
1980-01-01, modes 0644 or 0755, no ``__pycache__``; the same colabenv gives the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import io
import stat
import zipfile
from collections.abc import Iterator
from pathlib import Path

from colabenv._util.resources import PACKAGE, profiles_root
from colabenv.errors import UsageError

DISTRIBUTION = "colabenv"
TIMESTAMP = (1980, 1, 1, 0, 0, 0)
"""The earliest time a zip entry can hold, for every entry: the bytes never depend on when."""
WHEEL_FILE = "Wheel-Version: 1.0\nGenerator: colabenv\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def wheel_name(version: str) -> str:
    return f"{DISTRIBUTION}-{version}-py3-none-any.whl"


def _files(root: Path, prefix: str) -> Iterator[tuple[str, Path]]:
    """(name in the wheel, path) of each regular file under ``root``, bytecode left out."""
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if "__pycache__" in relative.parts or path.suffix == ".pyc":
            continue
        if path.is_file() and not path.is_symlink():
            yield f"{prefix}/{relative.as_posix()}", path


def _dist_info(version: str) -> dict[str, bytes]:
    """``METADATA`` and ``entry_points.txt`` of the installed colabenv: the same version only."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        dist = None
    metadata = dist.read_text("METADATA") if dist is not None else None
    if dist is None or metadata is None or dist.version != version:
        found = "none" if dist is None else f"colabenv {dist.version}"
        raise UsageError(
            f"the image installs the colabenv that renders it, made into a wheel from its "
            f"installed files, but the installed metadata of colabenv {version} is not found "
            f"({found}): install colabenv (pip install), or give --colabenv-wheel"
        )
    info = f"{DISTRIBUTION}-{version}.dist-info"
    files = {f"{info}/METADATA": metadata.encode("utf-8"), f"{info}/WHEEL": WHEEL_FILE.encode()}
    entry_points = dist.read_text("entry_points.txt")
    if entry_points:
        files[f"{info}/entry_points.txt"] = entry_points.encode("utf-8")
    return files


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _entry(name: str, executable: bool) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=TIMESTAMP)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3  # Unix, so that the mode below is read
    info.external_attr = (stat.S_IFREG | (0o755 if executable else 0o644)) << 16
    return info


def own_wheel(version: str) -> bytes:
    """The wheel of the running colabenv (``version``, its ``__version__``), as bytes."""
    entries: list[tuple[str, bytes, bool]] = []
    sources = [*_files(PACKAGE, "colabenv")]
    if not (PACKAGE / "_profiles").is_dir():  # an editable install: the checkout's profiles/
        sources.extend(_files(profiles_root(), "colabenv/_profiles"))
    for name, path in sorted(sources):
        executable = bool(path.stat().st_mode & stat.S_IXUSR)
        entries.append((name, path.read_bytes(), executable))
    entries.extend((name, data, False) for name, data in sorted(_dist_info(version).items()))
    record = f"{DISTRIBUTION}-{version}.dist-info/RECORD"
    lines = [_record_line(name, data) for name, data, _ in entries]
    entries.append((record, "".join(f"{line}\n" for line in [*lines, f"{record},,"]).encode(), False))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data, executable in entries:
            archive.writestr(_entry(name, executable), data, compresslevel=9)
    return buffer.getvalue()
