"""The script for hosts beyond x86-64 NVIDIA (issue 36): its preflight passes the platform, the
ROCm build's gfx list and ROCm, and free-threading only where the target needs them (every
x86-64 NVIDIA, CPU and TPU script keeps its line: tests/script/test_render_snapshots.py), the
rendered lines pass shellcheck, and a ROCm environment installs no ``nvidia-*`` wheel."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from colabenv import __version__
from colabenv._util.resources import helper_source
from colabenv.catalog.load import shipped_catalog
from colabenv.cli.main import main
from colabenv.errors import ResolutionError
from colabenv.models import ComputeCapability, Framework, NvidiaTarget, RocmTarget, Target
from colabenv.profile.load import load_profile
from colabenv.resolve.resolver import resolve
from colabenv.script.plan import LockInput, install_plan
from colabenv.script.render import HELPER_DELIMITER, render_script
from tests.support.catalogs import release_entry, variant_entry, write_overlay
from tests.support.paths import REPO

GOLDEN = REPO / "profiles" / "golden"
ROCM_FLAGS = ("--rocm", "6.4", "--gfx", "gfx942", "--python", "3.12", "--allow-unconfirmed", "--offline")
SHELLCHECK = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")


def _render(capsys: pytest.CaptureFixture[str], profile: Path, *flags: str) -> str:
    code = main(["render", str(profile), *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _after_helper(text: str) -> list[str]:
    """The script's own lines past the embedded helper (whose source names nvidia-smi)."""
    lines = text.splitlines()
    return lines[lines.index(HELPER_DELIMITER) + 1 :]


def _checks(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("checks=("))


def _shellcheck(text: str, tmp_path: Path) -> None:
    script = tmp_path / "setup.sh"
    script.write_text(text)
    done = subprocess.run(
        [SHELLCHECK, "--severity=style", str(script)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout


def test_a_rocm_script_checks_the_builds_gfx_list_and_rocm(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = _render(capsys, GOLDEN / "pytorch.toml", *ROCM_FLAGS)
    gfx = "gfx900,gfx906,gfx908,gfx90a,gfx942,gfx1030,gfx1100,gfx1101,gfx1102,gfx1200,gfx1201"
    assert _checks(text) == f"checks=(--python 3.12 --driver - --rocm-gfx '{gfx}' --rocm 6.4)"
    assert (
        "  4) fail \"$out; \"'re-render on this host, or with --cpu for a CPU-only runtime' ;;"
        in text.splitlines()
    )
    _shellcheck(text, tmp_path)


def _rocm_releases() -> list[str]:
    """The shipped torch releases with a ROCm build a ROCm 6.4 host with gfx942 runs on 3.12."""
    found = []
    for release in shipped_catalog([Framework.TORCH]).releases_of(Framework.TORCH):
        builds = [v for v in release.variants if v.rocm is not None and v.rocm <= Version("6.4")]
        if release.python.contains("3.12") and any("gfx942" in v.gfx for v in builds):
            found.append(str(release.version))
    return found


@pytest.mark.parametrize("version", _rocm_releases())
def test_a_rocm_script_installs_no_nvidia_wheel(
    version: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(f'name = "p"\n[frameworks]\ntorch = "=={version}"\n')
    text = _render(capsys, profile, *ROCM_FLAGS)
    assert "--rocm-gfx " in _checks(text)
    assert any(f"torch=={version}+rocm" in line for line in _after_helper(text))
    assert not [line for line in _after_helper(text) if "nvidia-" in line]


def test_rocm_torch_builds_are_checked_at_all() -> None:
    assert len(_rocm_releases()) >= 5, _rocm_releases()


def test_an_nvidia_pin_in_a_rocm_lock_is_refused_by_the_plan() -> None:
    """A profile's NVIDIA wheels are the ROCm kind's refusal, for resolve, render and lock alike
    (tests/accelerators/test_rocm_requirements.py); a lock's pins (a dependency's, which no
    profile names) are the plan's: exit 3 naming them."""
    profile = load_profile(GOLDEN / "pytorch.toml")
    target = Target(RocmTarget(Version("6.4"), ("gfx942",)), Version("3.12"), "linux_x86_64")
    resolution = resolve(profile, target, shipped_catalog(), allow_unconfirmed=True)
    pins = ("nvidia_cudnn_cu12==9.1.0.70", "six==1.16.0", "Cuda.Bindings==12.9.0")
    lock = LockInput(name="p.lock", text="", python="3.12", required_driver=None, index_urls=(), pins=pins)
    with pytest.raises(ResolutionError) as info:
        install_plan(resolution, profile, __version__, lock)
    assert str(info.value) == (
        "the target's GPUs are AMD (AMD GPU, ROCm 6.4, gfx942): the lock p.lock pins "
        "cuda-bindings, nvidia-cudnn-cu12; an AMD GPU (ROCm) environment installs no NVIDIA CUDA wheel "
        "(nvidia-*, cuda-*)"
    )


def test_an_nvidia_wheel_a_catalog_build_requires_is_refused_on_amd_gpus(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The profile names no NVIDIA wheel, so the ROCm kind's refusal of a profile's requirements
    says nothing; a team's overlay whose jax ROCm build ``requires`` one still never reaches the
    script: the plan refuses it (exit 3, naming it), nothing on stdout."""
    rocm7 = variant_entry(
        "rocm7",
        rocm="7.1",
        gfx=["gfx942"],
        requires=["jax-rocm7-plugin==0.7.1", "nvidia-nccl-cu12==2.21.5"],
        source="test: an overlay's build",
    )
    overlay = write_overlay(
        tmp_path / "cat", release_entry("0.7.1", rocm7, default_variant="rocm7"), framework="jax"
    )
    profile = tmp_path / "p.toml"
    profile.write_text(f'name = "p"\n[frameworks]\njax = "==0.7.1"\n[catalog]\npaths = ["{overlay.name}"]\n')
    code = main(["render", str(profile), "--rocm", "7.1", "--gfx", "gfx942", "--python", "3.12", "--offline"])
    out, err = capsys.readouterr()
    assert (code, out) == (3, ""), err
    assert err.strip() == (
        "colabenv: the target's GPUs are AMD (AMD GPU, ROCm 7.1, gfx942): the script would install "
        "nvidia-nccl-cu12; an AMD GPU (ROCm) environment installs no NVIDIA CUDA wheel (nvidia-*, cuda-*)"
    )


def test_an_aarch64_script_checks_the_platform(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text('name = "p"\n[frameworks]\ntorch = { version = "*", variant = "cpu" }\n')
    text = _render(capsys, profile, "--platform", "linux_aarch64", "--python", "3.12", "--cpu", "--offline")
    assert _checks(text) == "checks=(--python 3.12 --driver - --platform linux_aarch64)"
    # the helper's platform line (its exit 8) names its own fix: printed alone, without the
    # NVIDIA remedy; with no driver floor and no AMD GPUs there is no exit 4 to say anything
    lines = text.splitlines()
    assert '  8) fail "$out" ;;' in lines
    assert not [line for line in lines if line.startswith("  4)")]
    _shellcheck(text, tmp_path)


def test_an_aarch64_script_with_a_driver_floor_says_either_reason(tmp_path: Path) -> None:
    """Exit 8 is the platform's (its reason printed alone), exit 4 the driver's (its remedy
    after it): NVIDIA GPUs on aarch64 (a Grace Hopper), whose kind checks the driver floor."""
    profile = load_profile(GOLDEN / "cpu-only.toml")
    gh200 = NvidiaTarget(Version("580.95.05"), Version("13.0"), (ComputeCapability(9, 0),))
    target = Target(gh200, Version("3.12"), "linux_aarch64")
    resolution = resolve(profile, target, shipped_catalog())
    resolution = dataclasses.replace(resolution, required_driver=Version("580.65.06"))
    text = "\n".join(
        render_script(resolution, profile, colabenv_version=__version__, helper_source=helper_source())
    )
    assert _checks(text) == "checks=(--python 3.12 --driver 580.65.06 --platform linux_aarch64)"
    lines = text.splitlines()
    assert [line for line in lines if line.startswith(("  4)", "  8)"))] == [
        "  4) fail 'the chosen GPU wheels need NVIDIA driver >= 580.65.06; re-render on this host, "
        "or with --cpu for a CPU-only runtime' ;;",
        '  8) fail "$out" ;;',
    ]
    _shellcheck(text, tmp_path)


def test_a_free_threaded_script_checks_free_threading(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text('name = "p"\n[packages]\nrequirements = ["six"]\n')
    text = _render(capsys, profile, "--python", "3.14t", "--cpu", "--offline")
    assert _checks(text) == "checks=(--python 3.14 --driver - --free-threaded yes)"
    assert (
        "  3) [ -n \"$out\" ] || out='this runtime is not Python 3.14t; re-render the script here'"
        in text.splitlines()
    )
    assert "# target: no GPU, Python 3.14t, linux_x86_64" in text.splitlines()
    _shellcheck(text, tmp_path)
