"""The accelerator contract, once, over every registered kind (issue 33): each kind is found by
its name and by a target of its kind, and answers the resolver's questions for the builds of
the shipped catalog in its own way (NVIDIA takes CUDA builds, the TPU its ``tpu`` build, the CPU
its CPU build)."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.accelerators.base import NOT_ASKED, AcceleratorKind
from colabenv.accelerators.registry import ACCELERATORS, accelerator, accelerator_of
from colabenv.catalog.load import shipped_catalog
from colabenv.models import (
    Accelerator,
    ComputeCapability,
    CpuTarget,
    Device,
    Framework,
    FrameworkRequest,
    NvidiaTarget,
    Target,
    TpuTarget,
)

DEVICES: dict[Accelerator, Device] = {
    Accelerator.NVIDIA: NvidiaTarget(Version("580.95.05"), Version("13.0"), (ComputeCapability(9, 0),)),
    Accelerator.TPU: TpuTarget("v5e", "v5litepod-8", 8),
    Accelerator.CPU: CpuTarget(),
}
"""A device of each kind: a test of a new kind starts by adding one here."""

KINDS = [kind.kind for kind in ACCELERATORS]


def _target(kind: Accelerator) -> Target:
    return Target(DEVICES[kind], Version("3.12"))


def test_every_kind_is_registered_once_and_has_a_device() -> None:
    assert sorted(KINDS) == sorted(Accelerator)
    assert len(set(KINDS)) == len(KINDS)
    assert set(DEVICES) == set(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_a_target_is_handed_to_its_kind(kind: Accelerator) -> None:
    target = _target(kind)
    assert target.accelerator is kind
    assert accelerator_of(target) is accelerator(kind)
    assert accelerator(kind).kind is kind
    members = [name for name in vars(AcceleratorKind) if not name.startswith("_")]
    assert members and all(hasattr(accelerator(kind), name) for name in members), members
    assert accelerator(kind).describe(target) and accelerator(kind).shown(target).startswith(kind.value)


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_takes_builds_of_its_own(kind: Accelerator) -> None:
    """Over torch 2.9's builds in the shipped catalog: the kind keeps at least one and turns
    down the others; what it keeps is its own sort of build."""
    catalog = shipped_catalog([Framework.TORCH])
    release = next(r for r in catalog.releases_of(Framework.TORCH) if r.version == Version("2.9.0"))
    target = _target(kind)
    kind_module = accelerator(kind)
    request = FrameworkRequest(Framework.TORCH, SpecifierSet(), None)
    offered = kind_module.offered_variants(release, target, catalog)
    assert set(release.variants) <= set(offered)
    kept = [v for v in offered if kind_module.rejection(v, request, target, catalog) is None]
    assert kept, [kind_module.rejection(v, request, target, catalog) for v in offered]
    for variant in kept:
        why = kind_module.why(variant, kind_module.fully_supported(variant, target, catalog), target, catalog)
        assert why
    if kind is Accelerator.NVIDIA:
        assert all(v.cuda is not None for v in kept)
        cpu = release.variant("cpu")
        assert cpu is not None and kind_module.rejection(cpu, request, target, catalog) is NOT_ASKED
        assert kind_module.lacks(target) == ""
    elif kind is Accelerator.TPU:
        assert [v.name for v in kept] == ["tpu"]
        assert kind_module.requirements(kept[0])
        assert "TPU" in kind_module.lacks(target)
    else:
        assert all(v.is_cpu for v in kept) and kind_module.lacks(target) == "no GPU"
        assert kind_module.requirements(kept[0]) == ()


@pytest.mark.parametrize("kind", KINDS)
def test_a_build_the_profile_names_is_weighed_on_every_kind(kind: Accelerator) -> None:
    """Asking for the CPU build by name is never passed over unlisted."""
    catalog = shipped_catalog([Framework.TORCH])
    release = next(r for r in catalog.releases_of(Framework.TORCH) if r.version == Version("2.9.0"))
    cpu = release.variant("cpu")
    assert cpu is not None
    request = FrameworkRequest(Framework.TORCH, SpecifierSet(), "cpu")
    assert accelerator(kind).rejection(cpu, request, _target(kind), catalog) is None


def test_an_nvidia_device_has_a_driver_or_a_cuda() -> None:
    with pytest.raises(ValueError, match="driver or a CUDA"):
        NvidiaTarget(None, None)
    assert NvidiaTarget(None, Version("12.4")).kind is Accelerator.NVIDIA
