"""Which wheel of a pin a target installs, the sections of a lock, the manifest (no I/O)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from colabenv.errors import LockError, ProfileError, UsageError
from colabenv.lock.content import (
    Lock,
    LockedFile,
    LockedPackage,
    LockFile,
    LockHeader,
    LockSection,
    LockTarget,
)
from colabenv.profile.load import load_profile_text
from colabenv.wheelhouse.plan import (
    Wanted,
    choose_wheel,
    lock_sections,
    manifest_text,
    merge,
    target_tags,
    wheel_pin,
)

TARGET = LockTarget(None, None, None, (), "3.12", "linux_x86_64")


def _package(name: str, version: str, *files: str, marker: str | None = None) -> LockedPackage:
    locked = tuple(
        LockedFile(f"{n:064x}", file, f"https://files.example/{file}") for n, file in enumerate(files)
    )
    return LockedPackage(canonicalize_name(name), version, locked, marker)


def _lock(*packages: LockedPackage) -> Lock:
    header = LockHeader("0.1.0", "p", "sha256:" + "0" * 64, TARGET, (), "uv 0.8.0")
    return Lock(header, packages, None, (), Path("team.lock"))


def _one(lock: Lock) -> LockFile:
    return LockFile((LockSection(None, lock),), lock.path)


def _sectioned(**sections: Lock) -> LockFile:
    return LockFile(tuple(LockSection(name, lock) for name, lock in sections.items()), Path("team.lock"))


def _files(package: LockedPackage) -> dict[str, tuple[str, str]]:
    return {f.sha256: (f.name or "", f.url or "") for f in package.files}


def test_the_most_specific_wheel_for_the_target_is_chosen() -> None:
    package = _package(
        "numpy",
        "2.0.2",
        "numpy-2.0.2-py3-none-any.whl",
        "numpy-2.0.2-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "numpy-2.0.2-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "numpy-2.0.2-cp312-cp312-macosx_11_0_arm64.whl",
        "numpy-2.0.2.tar.gz",
    )
    chosen = choose_wheel(package, _files(package), target_tags(TARGET))
    assert chosen is not None
    assert chosen[0] == "numpy-2.0.2-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
    assert chosen[2] == f"{2:064x}"


def test_no_wheel_for_the_target_is_none() -> None:
    package = _package(
        "numpy", "2.0.2", "numpy-2.0.2-cp311-cp311-manylinux_2_17_x86_64.whl", "numpy-2.0.2.tar.gz"
    )
    assert choose_wheel(package, _files(package), target_tags(TARGET)) is None


def test_a_file_of_another_pin_is_not_taken_for_this_one() -> None:
    package = _package("six", "1.17.0", "six-1.16.0-py2.py3-none-any.whl")
    assert choose_wheel(package, _files(package), target_tags(TARGET)) is None


def test_a_lock_of_one_target_is_one_section_without_the_pins_whose_marker_is_false() -> None:
    kept = _package("six", "1.17.0", "six-1.17.0-py2.py3-none-any.whl")
    other = _package(
        "pywin32", "306", "pywin32-306-cp312-cp312-win_amd64.whl", marker='sys_platform == "win32"'
    )
    (section,) = lock_sections(_one(_lock(kept, other)), None)
    assert section.name is None
    assert section.packages == (kept,)


def test_target_names_no_section_of_a_lock_of_one_target() -> None:
    with pytest.raises(
        UsageError, match=r"^team.lock: no section 'nb' \(sections: none: it is a lock of one target\)$"
    ):
        lock_sections(_one(_lock()), "nb")


def test_a_sectioned_lock_is_every_section_or_the_one_target_names() -> None:
    six = _package("six", "1.17.0", "six-1.17.0-py2.py3-none-any.whl")
    old = _package("tomli", "2.2.1", "tomli-2.2.1-py3-none-any.whl", marker='python_version < "3.11"')
    py310 = dataclasses.replace(TARGET, python="3.10")
    nb = _lock(six, old)
    ci = dataclasses.replace(nb, header=dataclasses.replace(nb.header, target=py310))
    lock_file = _sectioned(nb=nb, ci=ci)
    both = lock_sections(lock_file, None)
    assert [(s.name, s.packages) for s in both] == [("nb", (six,)), ("ci", (six, old))]
    (only,) = lock_sections(lock_file, "ci")
    assert (only.name, only.target.python) == ("ci", "3.10")
    with pytest.raises(UsageError, match=r"^team.lock: no section 'gpu' \(sections: nb, ci\)$"):
        lock_sections(lock_file, "gpu")


def test_one_file_name_with_two_hashes_is_refused() -> None:
    a = Wanted("x-1-py3-none-any.whl", "x", "1", "a" * 64, "u", ("nb",))
    b = Wanted("x-1-py3-none-any.whl", "x", "1", "b" * 64, "u", ("ci",))
    with pytest.raises(LockError, match="two sha256 hashes"):
        merge([a, b])
    (both,) = merge([a, Wanted(a.filename, "x", "1", "a" * 64, "u", ("ci",))])
    assert both.sections == ("nb", "ci")


def test_the_manifest_is_sorted_json_naming_each_file_and_its_hash() -> None:
    wanted = merge(
        [
            Wanted("z-1-py3-none-any.whl", "z", "1", "c" * 64, "https://i.example/z", ("default",)),
            Wanted("a-1-py3-none-any.whl", "a", "1", "d" * 64, "https://i.example/a", ("default",)),
        ]
    )
    (section,) = lock_sections(_one(_lock()), None)
    document = json.loads(manifest_text("team.lock", [section], wanted))
    assert document["schema"] == 1
    assert document["sections"] == [
        {
            "name": "default",
            "pins_sha256": _lock().pins_digest,
            "python": "3.12",
            "platform": "linux_x86_64",
            "accelerator": "cpu",
            "driver": None,
            "compute_capabilities": [],
        }
    ]
    assert [f["file"] for f in document["files"]] == ["a-1-py3-none-any.whl", "z-1-py3-none-any.whl"]
    assert document["files"][0]["sha256"] == "d" * 64


def test_wheel_pin_reads_a_wheel_name_and_nothing_else() -> None:
    assert wheel_pin("Python_Dateutil-2.9.0.post0-py2.py3-none-any.whl") == ("python-dateutil", "2.9.0.post0")
    assert wheel_pin("six-1.17.0.tar.gz") is None


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ('"wheels"', "is not an absolute path"),
        ('"/content/a\\nb"', "contains a line break"),
        ('"/' + "x" * 1100 + '"', "longer than 1024 characters"),
        ("3", "expected"),
    ],
)
def test_install_wheelhouse_is_an_absolute_bounded_path(value: str, problem: str) -> None:
    text = f'name = "p"\n[install]\nwheelhouse = {value}\n'
    with pytest.raises(ProfileError, match=problem) as caught:
        load_profile_text(text, Path("p.toml"))
    assert "install.wheelhouse" in str(caught.value)


def test_install_wheelhouse_is_kept() -> None:
    text = 'name = "p"\n[install]\nwheelhouse = "/content/drive/MyDrive/colabenv-wheels"\n'
    profile = load_profile_text(text, Path("p.toml"))
    assert profile.install.wheelhouse == "/content/drive/MyDrive/colabenv-wheels"


def test_an_offline_script_keeps_no_index_and_no_page_of_links_in_its_lockfile() -> None:
    from colabenv.script.render import LockInput, _lock_file

    text = (
        "--index-url https://i.example/simple\n--find-links https://links.example/libtpu.html\n"
        f"six==1.17.0 --hash=sha256:{'a' * 64}\n"
    )
    lock = LockInput("team.lock", text, "3.12", None, ("https://i.example/simple",), ("six==1.17.0",))
    online = list(_lock_file(lock))
    assert "--find-links https://links.example/libtpu.html" in online
    assert not any(line.startswith("--index-url") for line in online)
    offline = list(_lock_file(dataclasses.replace(lock, wheelhouse="/kaggle/input/w", offline=True)))
    assert not any(line.startswith(("--index-url", "--find-links")) for line in offline)
    assert f"six==1.17.0 --hash=sha256:{'a' * 64}" in offline
