"""What each kind's script preflight checks of the device (issue 33): NVIDIA the driver floor
recorded for its builds, ROCm the gfx every ROCm build chosen has kernels for and the newest
ROCm among them, the TPU and the CPU nothing; and the script's preflight line is the kind's."""

from __future__ import annotations

import dataclasses

import pytest
from packaging.version import Version

from colabenv import __version__
from colabenv.accelerators.base import NO_DEVICE_CHECKS, DeviceChecks
from colabenv.accelerators.registry import accelerator
from colabenv.catalog.load import shipped_catalog
from colabenv.models import Accelerator, CpuTarget, Framework, FrameworkChoice, Target
from colabenv.profile.load import load_profile
from colabenv.resolve.resolver import resolve
from colabenv.script.plan import install_plan
from tests.support.paths import REPO


def _choice(
    framework: Framework, variant: str, rocm: str | None = None, gfx: tuple[str, ...] = ()
) -> FrameworkChoice:
    return FrameworkChoice(
        framework=framework,
        release=Version("2.9.0"),
        variant=variant,
        index_url=None,
        requirements=(),
        installed=False,
        reason="",
        cuda=None,
        pins=(),
        archs=(),
        rocm=Version(rocm) if rocm is not None else None,
        gfx=gfx,
    )


ROCM_BUILDS = (
    _choice(Framework.TORCH, "rocm6.3", "6.3", ("gfx1100", "gfx90a", "gfx942")),
    _choice(Framework.JAX, "cpu"),
    _choice(Framework.TENSORFLOW, "rocm6.4", "6.4.1", ("gfx942", "gfx90a")),
)
"""Two ROCm builds (6.3 with three gfx, 6.4.1 with two of them) and a CPU build named."""


def test_nvidia_checks_the_driver_floor_recorded_and_nothing_of_amd() -> None:
    nvidia = accelerator(Accelerator.NVIDIA)
    assert nvidia.device_checks((_choice(Framework.TORCH, "cu128"),), "570.26") == DeviceChecks(
        driver="570.26"
    )
    assert nvidia.device_checks((_choice(Framework.TORCH, "cpu"),), None) == NO_DEVICE_CHECKS


def test_rocm_checks_the_gfx_every_rocm_build_has_and_the_newest_rocm() -> None:
    """In the first ROCm build's order, only the gfx both builds have; the newest ROCm as X.Y;
    never a driver, though a floor is given."""
    checks = accelerator(Accelerator.ROCM).device_checks(ROCM_BUILDS, "570.26")
    assert checks == DeviceChecks(driver=None, gfx=("gfx90a", "gfx942"), rocm="6.4")


def test_rocm_checks_nothing_without_a_rocm_build() -> None:
    assert accelerator(Accelerator.ROCM).device_checks((_choice(Framework.TORCH, "cpu"),), None) == (
        NO_DEVICE_CHECKS
    )


def test_rocm_builds_without_a_shared_gfx_check_an_empty_list() -> None:
    """No gfx every build has kernels for: an empty list (the preflight refuses every AMD GPU
    whose gfx it reads), not None (nothing checked)."""
    builds = (
        _choice(Framework.TORCH, "rocm6.4", "6.4", ("gfx942",)),
        _choice(Framework.JAX, "rocm6.4", "6.4", ("gfx90a",)),
    )
    assert accelerator(Accelerator.ROCM).device_checks(builds, None) == DeviceChecks(gfx=(), rocm="6.4")


@pytest.mark.parametrize("kind", [Accelerator.TPU, Accelerator.CPU])
def test_the_tpu_and_the_cpu_check_nothing_of_a_device(kind: Accelerator) -> None:
    assert accelerator(kind).device_checks(ROCM_BUILDS, "570.26") == NO_DEVICE_CHECKS


def test_a_cpu_script_checks_no_driver_whatever_floor_is_recorded() -> None:
    """The plan's driver is the kind's: a CPU target's resolution with a floor recorded beside
    it still checks no NVIDIA driver, in its preflight options and its header."""
    profile = load_profile(REPO / "profiles" / "golden" / "cpu-only.toml")
    resolution = resolve(profile, Target(CpuTarget(), Version("3.12")), shipped_catalog())
    resolution = dataclasses.replace(resolution, required_driver=Version("580.65.06"))
    plan = install_plan(resolution, profile, __version__)
    assert plan.required_driver is None and plan.host_checks.device == NO_DEVICE_CHECKS
    assert not any("NVIDIA driver" in line for line in plan.described)
