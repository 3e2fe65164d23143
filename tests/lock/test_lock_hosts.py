"""Lock headers of AMD GPUs (ROCm) and of Linux on aarch64 (issue 36): ``target-rocm`` and
``target-gfx`` written for a ROCm target only and read back equal, in both forms and in a lock
of several targets; the platform recorded; malformed values one line naming the key; a host
whose ROCm, gfx or platform differs named in the difference; free-threaded Python refused."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv._util import toml
from colabenv.errors import LockError, UsageError
from colabenv.lock.content import (
    Lock,
    LockedFile,
    LockedPackage,
    LockFile,
    LockHeader,
    LockSection,
    LockTarget,
)
from colabenv.lock.file import parse_lock, parse_lock_file, render_lock, render_lock_file
from colabenv.lock.fit import current_target, fitting_section
from colabenv.lock.make import make_lock
from colabenv.models import (
    Accelerator,
    CpuTarget,
    Framework,
    LockedFramework,
    RocmTarget,
    Target,
    TargetOverrides,
)
from colabenv.profile.load import load_profile
from colabenv.resolve.resolver import resolve

MI300X = LockTarget(None, None, None, (), "3.12", "linux_x86_64", rocm="6.4", gfx=("gfx942",))
GRACE = LockTarget(None, None, None, (), "3.12", "linux_aarch64")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _lock(target: LockTarget) -> Lock:
    machine = target.platform.removeprefix("linux_")
    variant = "rocm6.4" if target.gfx or target.rocm else "cpu"
    wheel = f"torch-2.9.1+{variant}-cp312-cp312-manylinux_2_28_{machine}.whl"
    packages = (
        LockedPackage(
            canonicalize_name("torch"),
            f"2.9.1+{variant}",
            (LockedFile(_sha(wheel), wheel, f"https://files.example/{wheel}"),),
        ),
    )
    header = LockHeader(
        "0.1.0",
        "amd",
        "sha256:" + _sha("profile"),
        target,
        (LockedFramework(Framework.TORCH, "2.9.1", variant, f"https://mirror.example/whl/{variant}"),),
        "uv 0.13.9",
    )
    return Lock(header, packages, "https://pypi.example/simple")


# ---------------------------------------------------------------------------------------------
# The header records them, and reads them back equal


def test_a_rocm_header_records_rocm_and_gfx_and_reads_back_equal() -> None:
    text = render_lock(_lock(MI300X))
    assert (
        "# target-platform: linux_x86_64\n# target-accelerator: rocm\n# target-tpu: none\n"
        "# target-rocm: 6.4\n# target-gfx: gfx942\n"
    ) in text
    again = parse_lock(text, Path("amd.lock"))
    assert again.header == _lock(MI300X).header and again.pins_digest == _lock(MI300X).pins_digest
    assert (again.header.target.rocm, again.header.target.gfx) == ("6.4", ("gfx942",))
    assert again.header.target.accelerator is Accelerator.ROCM
    assert again.header.target.to_target().device == RocmTarget(Version("6.4"), ("gfx942",))


def test_an_unknown_rocm_is_written_none_and_several_gfx_joined() -> None:
    target = dataclasses.replace(MI300X, rocm=None, gfx=("gfx1100", "gfx90a"))
    text = render_lock(_lock(target))
    assert "# target-rocm: none\n# target-gfx: gfx1100,gfx90a\n" in text
    again = parse_lock(text).header.target
    assert (again.rocm, again.gfx, again.accelerator) == (None, ("gfx1100", "gfx90a"), Accelerator.ROCM)


def test_other_targets_write_no_rocm_lines() -> None:
    for target in (
        GRACE,
        dataclasses.replace(GRACE, driver="580.65.06", cuda="13.0", platform="linux_x86_64"),
    ):
        text = render_lock(_lock(target))
        assert "target-rocm" not in text and "target-gfx" not in text
        assert parse_lock(text).header.target == target


def test_the_pylock_form_records_them_in_its_target_table() -> None:
    lock = _lock(MI300X)
    text = render_lock(lock, pylock=True)
    table = toml.loads(text)["tool"]["colabenv"]["target"]
    assert (table["accelerator"], table["rocm"], table["gfx"]) == ("rocm", "6.4", ["gfx942"])
    assert parse_lock(text, Path("pylock.toml")).header == lock.header
    unknown = _lock(dataclasses.replace(MI300X, rocm=None))
    table = toml.loads(render_lock(unknown, pylock=True))["tool"]["colabenv"]["target"]
    assert "rocm" not in table and table["gfx"] == ["gfx942"]
    assert parse_lock(render_lock(unknown, pylock=True)).header == unknown.header


@pytest.mark.parametrize("pylock", [False, True])
def test_an_aarch64_platform_round_trips(pylock: bool) -> None:
    lock = _lock(GRACE)
    text = render_lock(lock, pylock=pylock)
    again = parse_lock(text, Path("pylock.toml" if pylock else "grace.lock"))
    assert again.header.target.platform == "linux_aarch64" and again.header == lock.header
    assert again.header.target.to_target().platform == "linux_aarch64"
    if pylock:
        assert toml.loads(text)["environments"] == [
            'python_version == "3.12" and sys_platform == "linux" and platform_machine == "aarch64"'
        ]
    else:
        assert "# target-platform: linux_aarch64\n" in text


def test_from_target_records_them_sorted() -> None:
    target = Target(RocmTarget(Version("6.4"), ("gfx942", "gfx90a")), Version("3.12"), "linux_aarch64")
    recorded = LockTarget.from_target(target, None)
    assert (recorded.rocm, recorded.gfx, recorded.platform) == ("6.4", ("gfx90a", "gfx942"), "linux_aarch64")
    assert recorded.accelerator is Accelerator.ROCM


# ---------------------------------------------------------------------------------------------
# Malformed values: one line naming the key


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("# target-rocm: 6.4", "# target-rocm: 6.4a", "target-rocm: '6.4a' is not a ROCm version X.Y or X.Y"),
        ("# target-rocm: 6.4", "# target-rocm: 6.4; rm", "target-rocm: '6.4; rm' is not a ROCm version"),
        (
            "# target-gfx: gfx942",
            "# target-gfx: gfx94z",
            "target-gfx: 'gfx94z' is not an AMD GPU architecture like gfx942",
        ),
        (
            "# target-gfx: gfx942",
            "# target-gfx: gfx942,gfx942",
            "target-gfx: expected at most 16 architectures, each once",
        ),
        (
            "# target-driver: none",
            "# target-driver: 550.54.15",
            "target-gfx: a host with AMD GPUs \\(ROCm\\) has no NVIDIA driver",
        ),
        (
            "# target-compute-capabilities: none",
            "# target-compute-capabilities: 9.0",
            "target-compute-capabilities: a host with AMD GPUs \\(ROCm\\) has no NVIDIA driver",
        ),
        (
            "# target-accelerator: rocm",
            "# target-accelerator: cpu",
            "target-accelerator: 'cpu' but the target has AMD GPUs \\(ROCm\\)",
        ),
        (
            "# target-rocm: 6.4\n# target-gfx: gfx942",
            "# target-rocm: none\n# target-gfx: none",
            "target-accelerator: 'rocm' but the target has no NVIDIA driver",
        ),
        (
            "# target-tpu: none",
            "# target-tpu: generation=v5e type=v5e-1 chips=1",
            "target-tpu: a TPU host has no NVIDIA driver or CUDA",
        ),
    ],
)
def test_a_malformed_rocm_header_is_refused_naming_the_key(old: str, new: str, message: str) -> None:
    text = render_lock(_lock(MI300X))
    assert old in text
    with pytest.raises(LockError, match=message) as error:
        parse_lock(text.replace(old, new, 1), Path("amd.lock"))
    assert str(error.value).startswith("amd.lock: line ") and "\n" not in str(error.value)


def test_a_gfx_beside_a_driver_is_refused_in_the_pylock_form_too() -> None:
    nvidia = dataclasses.replace(GRACE, driver="580.65.06", cuda="13.0")
    text = render_lock(_lock(nvidia), pylock=True)
    assert "[tool.colabenv.target]" in text
    edited = text.replace("[tool.colabenv.target]\n", '[tool.colabenv.target]\ngfx = ["gfx942"]\n', 1)
    with pytest.raises(LockError, match=r"tool\.colabenv\.target\.gfx: a host with AMD GPUs"):
        parse_lock(edited, Path("pylock.toml"))
    amd = render_lock(_lock(MI300X), pylock=True)
    for old, new, key in (
        ('rocm = "6.4"', 'rocm = "six"', "tool.colabenv.target.rocm: 'six' is not a ROCm version"),
        ('gfx = ["gfx942"]', 'gfx = "gfx942"', "tool.colabenv.target.gfx: expected an array of strings"),
        ('gfx = ["gfx942"]', 'gfx = ["GFX942"]', "tool.colabenv.target.gfx: 'GFX942' is not an AMD GPU"),
    ):
        assert old in amd
        with pytest.raises(LockError, match=key):
            parse_lock(amd.replace(old, new, 1), Path("pylock.toml"))


# ---------------------------------------------------------------------------------------------
# What differs, and the section a host fits


def test_a_host_whose_rocm_gfx_or_platform_differs_is_named() -> None:
    assert MI300X.differences(MI300X) == []
    assert MI300X.differences(dataclasses.replace(MI300X, gfx=("gfx1100",))) == [
        "gfx gfx942 in the lock, gfx1100 now"
    ]
    assert MI300X.differences(dataclasses.replace(MI300X, rocm="7.0")) == ["ROCm 6.4 in the lock, 7.0 now"]
    assert MI300X.differences(dataclasses.replace(MI300X, rocm=None, gfx=())) == [
        "accelerator rocm in the lock, cpu now"
    ]
    assert GRACE.differences(dataclasses.replace(GRACE, platform="linux_x86_64")) == [
        "platform linux_aarch64 in the lock, linux_x86_64 now"
    ]


def test_the_target_lock_check_compares_with_keeps_or_replaces_rocm_gfx_and_platform() -> None:
    assert current_target(MI300X, TargetOverrides()) == MI300X
    other = current_target(MI300X, TargetOverrides(rocm=RocmTarget(None, ("gfx1100", "gfx1030"))))
    assert (other.rocm, other.gfx) == ("6.4", ("gfx1030", "gfx1100"))
    assert MI300X.differences(other) == ["gfx gfx942 in the lock, gfx1030, gfx1100 now"]
    cpu = current_target(MI300X, TargetOverrides(cpu=True))
    assert (cpu.rocm, cpu.gfx, cpu.accelerator) == (None, (), Accelerator.CPU)
    assert current_target(GRACE, TargetOverrides(platform="linux_x86_64")).platform == "linux_x86_64"
    assert current_target(GRACE, TargetOverrides()).platform == "linux_aarch64"


@pytest.mark.parametrize("pylock", [False, True])
def test_sections_of_amd_and_aarch64_targets_round_trip_and_the_fitting_one_is_chosen(pylock: bool) -> None:
    lock_file = LockFile((LockSection("amd", _lock(MI300X)), LockSection("grace", _lock(GRACE))))
    text = render_lock_file(lock_file, pylock=pylock)
    again = parse_lock_file(text, Path("pylock.toml" if pylock else "team.lock"))
    amd, grace = again.section("amd"), again.section("grace")
    assert amd is not None and grace is not None
    assert (amd.header.target, grace.header.target) == (MI300X, GRACE)
    assert fitting_section(again, MI300X, "team.lock").name == "amd"
    assert fitting_section(again, GRACE, "team.lock").name == "grace"
    with pytest.raises(LockError) as error:
        fitting_section(again, dataclasses.replace(MI300X, gfx=("gfx1100",)), "team.lock")
    assert "amd: target: gfx gfx942 in the lock, gfx1100 now" in str(error.value)
    assert "grace: target: accelerator cpu in the lock, rocm now" in str(error.value)


# ---------------------------------------------------------------------------------------------
# Targets still refused


def test_amd_gpus_the_header_could_not_describe_are_refused(tmp_path: Path) -> None:
    """Detection can find AMD GPUs with neither a ROCm nor a gfx known: the header would say
    a CPU, so the lock is refused before any index is asked (the index here is unreachable)."""
    profile = tmp_path / "p.toml"
    profile.write_text(
        'name = "p"\n[packages]\nrequirements = ["six"]\n[install]\nindex_url = "http://127.0.0.1:9/simple/"\n'
    )
    from colabenv.catalog.load import shipped_catalog

    target = Target(RocmTarget(None, ()), Version("3.12"))
    resolution = resolve(load_profile(profile), target, shipped_catalog(()))
    with pytest.raises(UsageError, match=r"the target's device \(rocm\) would be recorded as cpu"):
        make_lock(resolution, resolver="uv", colabenv_version="0.1.0", environ={})
    cpu = dataclasses.replace(target, device=CpuTarget(), free_threaded=True, python=Version("3.14"))
    with pytest.raises(UsageError, match=r"uv's pip compile --python-version does not take 3\.14t"):
        make_lock(
            resolve(load_profile(profile), cpu, shipped_catalog(())), resolver="uv", colabenv_version="0"
        )
