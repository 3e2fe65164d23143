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

