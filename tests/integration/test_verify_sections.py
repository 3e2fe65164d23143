"""``colabenv verify --lock`` of a lock of several targets, for real in a stand-in venv: the
section whose target this host is gives the pins checked, and the report says which; a host no
section fits is exit 2 naming each section."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from colabenv.lock.content import (
    Lock,
    LockedFile,
    LockedPackage,
    LockFile,
    LockHeader,
    LockSection,
    LockTarget,
)
from colabenv.lock.file import render_lock_file
from colabenv.models import Framework, LockedFramework
from tests.integration.test_verify import GPU_HOST, STATIC_PASS, TORCH, Case, expect, needs_no_gpu

pytestmark = pytest.mark.slow

PROFILE_HASH = "sha256:" + "2" * 64
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


def _section(name: str, target: LockTarget, torch: str) -> LockSection:
    header = LockHeader(
        colabenv_version="0.1.0",
        profile_name="team",
        profile_hash=PROFILE_HASH,
        target=target,
        frameworks=(LockedFramework(Framework.TORCH, "2.6.0", torch.partition("+")[2], None),),
        resolver="uv 0.13.9",
        schema=3,
    )
    package = LockedPackage(canonicalize_name("torch"), torch, (LockedFile("0" * 64),))
    return LockSection(name, Lock(header, (package,)))


def _lock(path: Path) -> Path:
    gpu = LockTarget(
        GPU_HOST["COLABENV_DRIVER_VERSION"],
        "525.60.13",
        GPU_HOST["COLABENV_CUDA_VERSION"],
        (GPU_HOST["COLABENV_COMPUTE_CAPABILITY"],),
        PYTHON,
        "linux_x86_64",
    )
    cpu = LockTarget(None, None, None, (), PYTHON, "linux_x86_64")
    other = LockTarget("580.65.06", "525.60.13", "12.8", ("9.0",), PYTHON, "linux_x86_64")
    sections = (
        _section("cluster", other, "2.6.0+cu126"),
        _section("nb", gpu, TORCH),
        _section("ci", cpu, "2.6.0+cpu"),
    )
    path.write_text(render_lock_file(LockFile(sections)), encoding="utf-8")
    return path


@needs_no_gpu
def test_verify_lock_takes_the_section_of_this_host(tmp_path: Path) -> None:
    case = (
        Case(tmp_path)
        .gpu_host()
        .torch()
        .marker([f"torch=={TORCH}"], profile="team", profile_hash=PROFILE_HASH)
    )
    lock = _lock(tmp_path / "team.lock")
    code, report, details, _ = case.verify("--lock", str(lock))
    expect(report, {**STATIC_PASS, "cuda:torch": "PASS", "smoke:torch": "PASS"})
    assert details["versions"] == f"1 requirement(s) of the lock team.lock (section nb) met (torch {TORCH})"
    assert code == 0
    cpu = Case(tmp_path / "cpu").torch(version="2.6.0+cpu")
    code, report, details, _ = cpu.verify("--lock", str(lock))
    assert details["versions"] == "1 requirement(s) of the lock team.lock (section ci) met (torch 2.6.0+cpu)"


def test_verify_lock_no_section_fits_is_exit_2(tmp_path: Path) -> None:
    case = Case(tmp_path).gpu_host(COLABENV_DRIVER_VERSION="550.54.15", COLABENV_CUDA_VERSION="12.4").torch()
    lock = _lock(tmp_path / "team.lock")
    result = case.venv.run_verify("--lock", str(lock), env=case.env)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert (
        "team.lock: no section fits this host (cluster: target: driver 580.65.06 in the lock" in result.stderr
    )
    assert "; nb: target: driver 560.35.03 in the lock, 550.54.15 now" in result.stderr
    assert "; ci: target: driver none in the lock, 550.54.15 now" in result.stderr
