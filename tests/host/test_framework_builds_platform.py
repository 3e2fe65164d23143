"""An installed framework's build as a linux_aarch64 host sees it (issue 36): the catalog's build of
that platform (torch's aarch64 cu130 has its own arch list; the plain aarch64 wheel of torch 2.7 to
2.11 and of TensorFlow is the CPU build), never the x86-64 build of the same name first. The
targets are the named ones of the issue: a Jetson Thor (sm_110) and a GH200 (sm_90), each with
the open driver of tests/data/proc (open-aarch64-570.133.20.txt, open-580.65.06.txt)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from colabenv.catalog.load import load_catalog, shipped_catalog
from colabenv.diagnosis.gpu_variables import installed_torch_gfx
from colabenv.host.framework_builds import framework_build, framework_builds
from colabenv.host.installed import scan_path
from colabenv.models import (
    ComputeCapability,
    Framework,
    InstalledSet,
    Target,
    device_of,
)
from colabenv.verification.cuda import check_cuda
from colabenv.verification.report import Status
from tests.support.catalogs import DRIVERS, TORCH, write_catalog
from tests.support.dists import add_dist

X86, ARM = "linux_x86_64", "linux_aarch64"


def _target(platform: str, driver: str, cap: str, dists: dict[str, str]) -> Target:
    device = device_of(Version(driver), None, (ComputeCapability.parse(cap),), None)
    return Target(device, Version("3.12"), platform, installed=InstalledSet.from_mapping(dists))


@pytest.mark.parametrize(
    ("dist", "version", "platform", "variant", "cuda"),
    [
        # the plain PyPI wheel: CUDA 12.8 on x86-64, the CPU build on aarch64 (2.7 to 2.11)
        ("torch", "2.8.0", X86, "cu128", "12.8"),
        ("torch", "2.8.0", ARM, "cpu", None),
        # from 2.12 the aarch64 wheel is the CUDA 13.0 build
        ("torch", "2.12.0", ARM, "cu130", "13.0"),
        # TensorFlow's aarch64 wheel is AWS's CPU build
        ("tensorflow", "2.20.0", X86, "and-cuda", None),
        ("tensorflow", "2.20.0", ARM, "cpu", None),
    ],
)
def test_a_plain_wheel_is_the_build_the_platform_serves(
    dist: str, version: str, platform: str, variant: str, cuda: str | None
) -> None:
    installed = InstalledSet.from_mapping({dist: version})
    (build,) = framework_builds(installed, shipped_catalog(), platform=platform)
    assert build.variant == variant
    if cuda is not None or variant == "cpu":
        assert build.cuda == (Version(cuda) if cuda else None)


def test_verify_reads_the_arch_list_of_the_hosts_own_build() -> None:
    """torch 2.9.0+cu130 on a Jetson Thor: the aarch64 build has sm_110, the x86-64 one not."""
    catalog = shipped_catalog()
    for platform, status in ((X86, Status.FAIL), (ARM, Status.PASS)):
        target = _target(platform, "580.65.06", "11.0", {"torch": "2.9.0+cu130"})
        build = framework_build(Framework.TORCH, target.installed, catalog, platform=platform)
        check = check_cuda(Framework.TORCH, build, target, catalog, require_gpu=True)
        assert check.status is status, check
        assert ("no kernels for sm_110" in check.detail) is (status is Status.FAIL)


def test_the_gfx_list_of_an_installed_rocm_build_is_its_platforms(tmp_path: Path) -> None:
    """A catalog that lists a ROCm build of one name for each platform: the host's is read."""
    rocm = (
        '[[release.variant]]\nname = "rocm6.4"\nrocm = "6.4"\nindex_url = "https://example.invalid/rocm6.4"\n'
        'local_tag = "rocm6.4"\ngfx = ["gfx942"]\nsource = "test"\n\n'
        '[[release.variant]]\nname = "rocm6.4"\nrocm = "6.4"\nindex_url = "https://example.invalid/rocm6.4"\n'
        'local_tag = "rocm6.4"\ngfx = ["gfx90a"]\nplatforms = ["linux_aarch64"]\nsource = "test"\n'
    )
    catalog = load_catalog(write_catalog(tmp_path, drivers=DRIVERS, torch=f"{TORCH}\n{rocm}"))
    site = tmp_path / "site"
    add_dist(site, "torch", {"torch/__init__.py": ""}, version="1.0.0+rocm6.4")
    scan = scan_path([str(site)])
    for platform, gfx in ((X86, ("gfx942",)), (ARM, ("gfx90a",))):
        installed = installed_torch_gfx(scan, catalog, platform)
        assert installed is not None and installed.gfx == gfx, installed
