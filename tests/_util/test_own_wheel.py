"""``own_wheel()``: the running colabenv as a wheel, from its own installed files."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from io import BytesIO

import pytest

from colabenv import __version__
from colabenv._util.own_wheel import TIMESTAMP, own_wheel, wheel_name
from colabenv._util.resources import PACKAGE, profiles_root
from colabenv.errors import UsageError

INFO = f"colabenv-{__version__}.dist-info"


def _archive(data: bytes) -> zipfile.ZipFile:
    return zipfile.ZipFile(BytesIO(data))


def test_the_wheel_is_the_same_bytes_every_time() -> None:
    first = own_wheel(__version__)
    assert own_wheel(__version__) == first
    infos = _archive(first).infolist()
    assert {info.date_time for info in infos} == {TIMESTAMP}
    names = [info.filename for info in infos]
    package = [name for name in names if not name.startswith(INFO)]
    assert package == sorted(package)
    assert names[-1] == f"{INFO}/RECORD"
    assert wheel_name(__version__) == f"colabenv-{__version__}-py3-none-any.whl"


def test_its_record_holds_every_file_and_its_sha256() -> None:
    archive = _archive(own_wheel(__version__))
    record = archive.read(f"{INFO}/RECORD").decode().splitlines()
    listed = {}
    for line in record:
        name, digest, size = line.rsplit(",", 2)
        listed[name] = (digest, size)
    assert set(listed) == set(archive.namelist())
    assert listed.pop(f"{INFO}/RECORD") == ("", "")
    for name, (digest, size) in listed.items():
        data = archive.read(name)
        expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert digest == f"sha256={expected}", name
        assert int(size) == len(data), name


def test_it_holds_the_package_the_profiles_and_the_command() -> None:
    archive = _archive(own_wheel(__version__))
    names = set(archive.namelist())
    code = {
        f"colabenv/{path.relative_to(PACKAGE).as_posix()}"
        for path in PACKAGE.rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert code <= names
    assert not any("__pycache__" in name or name.endswith(".pyc") for name in names)
    catalog = sorted(p for p in (profiles_root() / "catalog").iterdir() if p.is_file())
    assert catalog
    for path in catalog:
        assert archive.read(f"colabenv/_profiles/catalog/{path.name}") == path.read_bytes()
    metadata = archive.read(f"{INFO}/METADATA").decode()
    assert "Name: colabenv\n" in metadata and f"Version: {__version__}\n" in metadata
    assert "Requires-Dist: uv" in metadata
    assert "colabenv = colabenv.cli.entry:main" in archive.read(f"{INFO}/entry_points.txt").decode()
    assert "Tag: py3-none-any" in archive.read(f"{INFO}/WHEEL").decode()


def test_metadata_of_another_version_is_refused() -> None:
    with pytest.raises(UsageError, match=r"installed metadata of colabenv 9\.9\.9 is not found"):
        own_wheel("9.9.9")
