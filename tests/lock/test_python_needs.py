"""A lock records what its pins need of the full Python (issue 34): a lock's Python is X.Y, so a
lock made on 3.14.2 said nothing of 3.14.1, which torchvision's Requires-Python excludes
(``!=3.14.1``). The clauses that tell patch releases apart are recorded
(``target-python-needs``, in pylock ``requires-python`` too), and a full Python they exclude is
refused by ``render --lock``, ``lock --check`` and the section a host's verify picks."""

from __future__ import annotations

import dataclasses
import re
import shutil
import zipfile
from pathlib import Path

import pytest
from packaging.version import Version

from colabenv.catalog.load import shipped_catalog
from colabenv.errors import LockError
from colabenv.lock.content import (
    Lock,
    LockedFile,
    LockFile,
    LockSection,
    LockTarget,
)
from colabenv.lock.file import parse_lock, read_lock, render_lock
from colabenv.lock.fit import fitting_section
from colabenv.lock.make import make_lock
from colabenv.lock.python_needs import python_needs
from colabenv.models import ComputeCapability, Framework, NvidiaTarget, Target
from colabenv.profile.load import load_profile
from colabenv.resolve.resolver import resolve
from tests.support.fixtures import *  # noqa: F403
from tests.support.fixtures import Runner
from tests.support.index import LocalIndex
from tests.support.isolation import clean_env
from tests.support.locking import PYTHON, write_jax_profile
from tests.support.paths import DATA
from tests.support.wheels import Standins

T4 = ["--driver", "550.54.15", "--compute-capability", "7.5"]
SCHEMA2 = DATA / "lock" / "schema2.lock"
SCHEMA2_PROFILE = DATA / "lock" / "schema2.toml"


def test_only_the_clauses_that_tell_patch_releases_apart_are_recorded() -> None:
    files = [">=3.9,!=3.14.1", ">=3.12.3", ">=3.10", None, "not a specifier", "<3.15"]
    assert python_needs(files, "3.14") == "!=3.14.1"
    assert python_needs(files, "3.12") == ">=3.12.3"
    assert python_needs(files, "3.13") is None
    assert python_needs([">3.12"], "3.12") == ">3.12", "3.12.0 is left out, 3.12.1 is not"
    assert python_needs(["~=3.12.3", "==3.12.*"], "3.12") == "~=3.12.3"


def _lock(needs: str | None) -> Lock:
    base = read_lock(SCHEMA2)
    target = dataclasses.replace(base.header.target, python_needs=needs)
    packages = tuple(
        dataclasses.replace(
            p,
            files=tuple(
                LockedFile(
                    f.sha256,
                    f"{str(p.name).replace('-', '_')}-{p.version}-py3-none-any.whl",
                    f"https://x.example/{f.sha256}.whl",
                )
                for f in p.files
            ),
        )
        for p in base.packages
    )
    return dataclasses.replace(
        base, header=dataclasses.replace(base.header, target=target), packages=packages
    )


@pytest.mark.parametrize("form", ["requirements", "pylock"])
def test_both_forms_write_it_and_read_it_back(form: str) -> None:
    pylock = form == "pylock"
    lock = _lock("!=3.11.4,>=3.11.2")
    text = render_lock(lock, pylock=pylock)
    if pylock:
        assert 'python-needs = "!=3.11.4,>=3.11.2"' in text
        assert 'requires-python = "!=3.11.4,==3.11.*,>=3.11.2"' in text, "installers hold it too"
    else:
        assert "# target-python-needs: !=3.11.4,>=3.11.2\n" in text
    back = parse_lock(text)
    assert back.header.target.python_needs == "!=3.11.4,>=3.11.2"
    assert back.header == lock.header
    plain = render_lock(_lock(None), pylock=pylock)
    assert "python-needs" not in plain, "nothing written where the pins need nothing past X.Y"
    assert parse_lock(plain).header.target.python_needs is None
    assert read_lock(SCHEMA2).header.target.python_needs is None, "an older lock loads as it did"


def test_a_value_that_is_not_a_specifier_set_is_refused_naming_the_line() -> None:
    text = SCHEMA2.read_text().replace(
        "# target-python: 3.11\n", "# target-python: 3.11\n# target-python-needs: >=banana\n"
    )
    with pytest.raises(LockError, match=r"line 14: target-python-needs: '>=banana' is not a Python version"):
        parse_lock(text)


def _with_needs(tmp_path: Path, needs: str) -> Path:
    path = tmp_path / "schema2.lock"
    path.write_text(
        SCHEMA2.read_text().replace(
            "# target-python: 3.11\n", f"# target-python: 3.11\n# target-python-needs: {needs}\n"
        )
    )
    return path


def test_render_lock_refuses_a_full_python_the_pins_exclude(runner: Runner, tmp_path: Path) -> None:
    lock = _with_needs(tmp_path, "!=3.11.4")
    offline = {"COLABENV_OFFLINE": "1"}
    refused = runner("render", SCHEMA2_PROFILE, "--lock", lock, *T4, "--python", "3.11.4", env=offline)
    assert refused.returncode == 2, refused.stderr
    assert refused.stdout == ""
    assert "Python 3.11.4 is excluded by the lock's pins (they need Python !=3.11.4)" in refused.stderr
    for python in ("3.11", "3.11.5"):
        fits = runner("render", SCHEMA2_PROFILE, "--lock", lock, *T4, "--python", python, env=offline)
        assert fits.returncode == 0, fits.stderr
        assert "checks=(--python 3.11 --python-needs '!=3.11.4' --driver 525.60.13)" in fits.stdout
        wrong = "this runtime is not Python 3.11 with !=3.11.4, as the locked pins need; make a new lock"
        assert wrong in fits.stdout
    check = runner("lock", SCHEMA2_PROFILE, "--check", lock, "--python", "3.11.4", env=offline)
    assert check.returncode == 1, check.stderr
    assert "stale: target: Python 3.11.4 is excluded by the lock's pins" in check.stdout


def test_the_section_a_host_fits_holds_its_full_python_to_the_pins() -> None:
    lock = _lock("!=3.11.4")
    sections = LockFile((LockSection("t4", lock),))
    device = NvidiaTarget(Version("550.54.15"), Version("12.4"), (ComputeCapability(7, 5),))
    assert (
        fitting_section(sections, LockTarget.current(Target(device, Version("3.11.5")), None), "x").name
        == "t4"
    )
    assert (
        fitting_section(sections, LockTarget.current(Target(device, Version("3.11")), None), "x").name == "t4"
    )
    with pytest.raises(
        LockError, match=re.escape("t4: target: Python 3.11.4 is excluded by the lock's pins")
    ):
        fitting_section(sections, LockTarget.current(Target(device, Version("3.11.4")), None), "x")
    recorded = LockTarget.from_target(Target(device, Version("3.11.4")), None)
    assert recorded.python_full is None, "a lock records X.Y alone"


def _requires_python(wheel: Path, requires_python: str) -> None:
    """``wheel`` with its METADATA's Requires-Python replaced."""
    with zipfile.ZipFile(wheel) as archive:
        members = [(info, archive.read(info)) for info in archive.infolist()]
    with zipfile.ZipFile(wheel, "w") as archive:
        for info, data in members:
            if info.filename.endswith(".dist-info/METADATA"):
                text = re.sub(r"(?m)^Requires-Python:.*\n", "", data.decode())
                data = text.replace("\n", f"\nRequires-Python: {requires_python}\n", 1).encode()
            archive.writestr(info, data)


def test_lock_records_the_patch_releases_the_framework_wheels_exclude(
    tmp_path: Path, standin_wheels: Standins
) -> None:
    root = tmp_path / "index"
    shutil.copytree(standin_wheels.default, root)
    for wheel in root.rglob("jax-0.5.3-*.whl"):
        _requires_python(wheel, f">=3.10,!={PYTHON}.99")
    with LocalIndex(root) as index:
        profile = load_profile(write_jax_profile(tmp_path, index))
        device = NvidiaTarget(Version("550.54.15"), Version("12.4"), (ComputeCapability(7, 5),))
        resolution = resolve(profile, Target(device, Version(PYTHON)), shipped_catalog([Framework.JAX]))
        lock = make_lock(
            resolution, resolver="uv", colabenv_version="0.1.0", environ=clean_env(UV_HTTP_RETRIES="0")
        )
    assert lock.header.target.python_needs == f"!={PYTHON}.99"
    assert f"# target-python-needs: !={PYTHON}.99\n" in render_lock(lock)
