"""NVIDIA components on Linux aarch64 (issue 36): a range of components.toml may record the arch
list NVIDIA's aarch64 wheels of its releases carry (``archs_aarch64``) where it is not the x86-64
one, and an aarch64 target is judged by that list; the x86-64 facts are untouched."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from colabenv.catalog.components import component_problems, coverage
from colabenv.catalog.load import COMPONENTS_FILE, load_components
from colabenv.errors import CatalogError
from colabenv.models import ComponentFacts, ComputeCapability
from tests.support.catalogs import component_entry, component_range, components_file, write_catalog

THOR, GH200 = ComputeCapability.parse("11.0"), ComputeCapability.parse("9.0")
X86_OLD = ["sm_75", "sm_80", "sm_90", "sm_100", "sm_120"]
X86_NEW = ["sm_75", "sm_80", "sm_90", "sm_100", "sm_120", "compute_120"]
ARM_NEW = ["sm_75", "sm_80", "sm_90", "sm_100", "sm_110", "sm_120", "compute_120"]


def _text(aarch64: list[str] | None = ARM_NEW) -> str:
    """A CUDA 13 component whose aarch64 wheels gain sm_110 code at 10.4.3, the x86-64 ones never."""
    return components_file(
        component_entry(
            "nvidia-curand",
            13,
            component_range(">=10.4.0,<10.4.3", X86_OLD, ["10.4.0.35"]),
            component_range(">=10.4.3", X86_NEW, ["10.4.3.29", "10.4.5.25"], aarch64=aarch64),
        )
    )


def _facts(tmp_path: Path, text: str) -> ComponentFacts:
    return load_components(write_catalog(tmp_path / "catalog", components=text))


def test_a_range_carries_its_aarch64_list_and_the_platforms_see_their_own(tmp_path: Path) -> None:
    facts = _facts(tmp_path, _text())
    curand = facts.component("nvidia-curand")
    assert curand is not None
    assert [str(a) for a in curand.ranges[1].archs] == X86_NEW
    assert facts.for_platform("linux_x86_64") is facts
    arm = facts.for_platform("linux_aarch64")
    assert arm is facts.for_platform("linux_aarch64"), "made once per platform"
    arm_curand = arm.component("nvidia-curand")
    assert arm_curand is not None
    assert [str(a) for a in arm_curand.ranges[1].archs] == ARM_NEW
    assert arm_curand.ranges[0] == curand.ranges[0], "a range without an aarch64 list is the same there"
    assert arm.toolkit_metas == facts.toolkit_metas


def test_the_aarch64_list_decides_for_an_aarch64_target_only(tmp_path: Path) -> None:
    facts = _facts(tmp_path, _text())
    curand = facts.component("nvidia-curand")
    arm_curand = facts.for_platform("linux_aarch64").component("nvidia-curand")
    assert curand is not None and arm_curand is not None
    # x86-64: no release carries sm_110 code, so a Thor holds nothing back there
    assert coverage(curand, [THOR]) is None
    found = coverage(arm_curand, [THOR])
    assert found is not None
    assert found.requirement == "nvidia-curand>=10.4.3"
    assert found.last_covering == Version("10.4.5.25")
    assert coverage(arm_curand, [GH200]) is None
    installed = {"nvidia-curand": "10.4.0.35"}
    assert component_problems(installed, [THOR], facts) == ()
    problems = component_problems(installed, [THOR], facts.for_platform("linux_aarch64"))
    assert [str(p) for p in problems] == [
        "nvidia-curand 10.4.0.35 has no kernels for sm_110 (GPU 11.0);"
        " 10.4.5.25 is the last release that covers it"
    ]


@pytest.mark.parametrize(
    ("aarch64", "said"),
    [
        pytest.param([], "expected the arch list the linux_aarch64 wheels carry", id="empty"),
        pytest.param(["sm_11.0"], "sm_11.0", id="bad-arch"),
        pytest.param(X86_NEW, "the same list as archs", id="same-as-archs"),
    ],
)
def test_a_bad_aarch64_list_is_refused_naming_its_key(tmp_path: Path, aarch64: list[str], said: str) -> None:
    with pytest.raises(CatalogError) as caught:
        _facts(tmp_path, _text(aarch64))
    message = str(caught.value)
    assert message.startswith(f"catalog {COMPONENTS_FILE}: component[0].range[1].archs_aarch64"), message
    assert said in message, message
    assert "\n" not in message


def test_an_aarch64_list_that_is_not_an_array_is_refused(tmp_path: Path) -> None:
    text = _text().replace("archs_aarch64 = [", 'archs_aarch64 = "sm_110" # [')
    with pytest.raises(CatalogError) as caught:
        _facts(tmp_path, text)
    assert "component[0].range[1].archs_aarch64" in str(caught.value)


# ---------------------------------------------------------------------------------------------
# The shipped facts: what NVIDIA's aarch64 wheels were read to carry (components.toml's sources)


SHIPPED = load_components()


@pytest.mark.parametrize(
    ("name", "version", "gpu", "on_x86", "on_aarch64", "why"),
    [
        ("nvidia-cudnn-cu13", "9.13.0.50", "11.0", False, True, "torch 2.9 cu130's cuDNN: sm_110 on aarch64"),
        ("nvidia-cudnn-cu13", "9.26.0.51", "11.0", False, True, "torch 2.15.0's cuDNN on a Jetson Thor"),
        ("nvidia-cudnn-cu13", "9.26.0.51", "9.0", True, True, "GH200"),
        ("nvidia-cublas", "13.0.0.19", "11.0", False, True, "cuBLAS 13 aarch64 carries sm_110"),
        ("nvidia-curand", "10.4.0.35", "11.0", False, True, "cuRAND 13 aarch64 carries sm_110"),
        ("nvidia-cudnn-cu12", "9.10.2.21", "6.0", True, True, "the same list on both"),
        ("nvidia-cudnn-cu12", "9.11.0.98", "7.0", False, False, "no Volta from 9.11 on either"),
        ("nvidia-nccl-cu12", "2.25.1", "11.0", True, True, "compute_90 PTX on both"),
        ("nvidia-nccl-cu12", "2.26.2", "11.0", True, False, "aarch64 2.26.2: sm_100, sm_120, compute_120"),
        ("nvidia-nccl-cu12", "2.26.2", "10.0", True, True, "GB200: PTX on x86-64, a cubin on aarch64"),
        ("nvidia-nccl-cu12", "2.25.1.post1", "11.0", False, False, "no compute_90 in either wheel"),
        ("nvidia-nccl-cu12", "2.25.1.post1", "12.0", True, True, "RTX PRO 6000: an sm_120 cubin on both"),
    ],
)
def test_shipped_component_fact_per_platform(
    name: str, version: str, gpu: str, on_x86: bool, on_aarch64: bool, why: str
) -> None:
    capability = ComputeCapability.parse(gpu)
    for facts, expected in ((SHIPPED, on_x86), (SHIPPED.for_platform("linux_aarch64"), on_aarch64)):
        component = facts.component(name)
        assert component is not None
        item = component.range_of(Version(version))
        assert item is not None, f"{version} is in no range"
        assert item.covers(capability) is expected, why


def test_a_thor_on_aarch64_holds_nccl_cu12_below_the_first_aarch64_wheel_without_its_ptx() -> None:
    """NCCL for CUDA 12 covers sm_110 only by compute_90 PTX, which the aarch64 wheels drop at
    2.25.1.post1 and the x86-64 ones at 2.26.2.post1: the same Thor is held to other releases."""
    x86 = SHIPPED.component("nvidia-nccl-cu12")
    arm = SHIPPED.for_platform("linux_aarch64").component("nvidia-nccl-cu12")
    assert x86 is not None and arm is not None
    on_x86, on_arm = coverage(x86, [THOR]), coverage(arm, [THOR])
    # on x86-64 only 2.26.2's wheel has compute_90 again, and no later release does
    assert on_x86 is not None and on_x86.requirement == "nvidia-nccl-cu12>=2.26.2,<2.26.2.post1"
    assert on_arm is not None and on_arm.requirement == "nvidia-nccl-cu12<2.25.1.post1"
    assert on_arm.last_covering == Version("2.25.1")


def test_nccl_cu12_2_25_1_post1_and_2_26_2_carry_on_x86_64_what_their_wheels_do() -> None:
    """The x86-64 wheel of 2.25.1.post1 carries sm_100, sm_120 and compute_120 in place of
    compute_90; 2.26.2's went back to compute_90 (both read with colabenv catalog archs): each
    release is its own range, with its own list, as the aarch64 wheels of both keep Blackwell's."""
    nccl = SHIPPED.component("nvidia-nccl-cu12")
    assert nccl is not None
    post1, later = nccl.range_of(Version("2.25.1.post1")), nccl.range_of(Version("2.26.2"))
    assert post1 is not None and later is not None and post1 is not later
    assert [str(a) for a in post1.archs][-3:] == ["sm_100", "sm_120", "compute_120"]
    assert [str(a) for a in later.archs][-2:] == ["sm_90", "compute_90"]
    assert post1.checked == (Version("2.25.1.post1"),) and later.checked == (Version("2.26.2"),)
    assert "2.25.1.post1" in post1.source.text and "2.26.2" in later.source.text
    arm = SHIPPED.for_platform("linux_aarch64").component("nvidia-nccl-cu12")
    assert arm is not None
    blackwell = ["sm_100", "sm_120", "compute_120"]
    for version in ("2.25.1.post1", "2.26.2"):
        on_arm = arm.range_of(Version(version))
        assert on_arm is not None and [str(a) for a in on_arm.archs][-3:] == blackwell


def test_every_shipped_range_says_what_its_aarch64_wheels_carry() -> None:
    for component in SHIPPED.components:
        for item in component.ranges:
            said = item.source.text
            assert "aarch64" in said, f"{component.name}{item.specifier}"
            if item.platform_archs:
                assert "archs_aarch64: the GPU code every library matching" in said
            assert "://" not in said, "wheel file names, not addresses"
