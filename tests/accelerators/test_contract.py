"""The accelerator contract, once, over every registered kind (issue 33): each kind is found by
its name and by a target of its kind, and answers the resolver's questions for the builds of
the shipped catalog in its own way (NVIDIA takes CUDA builds, the TPU its ``tpu`` build, the CPU
its CPU build); detection asks the kinds in the registry's order, each answering its own flags
and nothing on a host without its kind, the CPU last and always."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.accelerators.base import (
    NOT_ASKED,
    AcceleratorKind,
    DeviceChecks,
    DeviceSmoke,
    RecordedDevice,
    VerifyChecks,
)
from colabenv.accelerators.registry import ACCELERATORS, accelerator, accelerator_of, detected
from colabenv.catalog.load import shipped_catalog
from colabenv.models import (
    Accelerator,
    ComputeCapability,
    CpuTarget,
    Device,
    Framework,
    FrameworkRequest,
    InstalledSet,
    NvidiaTarget,
    RocmTarget,
    Target,
    TargetOverrides,
    TpuReport,
    TpuTarget,
    format_driver,
)
from tests.support.readings import StandInReadings

DEVICES: dict[Accelerator, Device] = {
    Accelerator.NVIDIA: NvidiaTarget(Version("580.95.05"), Version("13.0"), (ComputeCapability(9, 0),)),
    Accelerator.ROCM: RocmTarget(Version("6.4"), ("gfx942",)),
    Accelerator.TPU: TpuTarget("v5e", "v5litepod-8", 8),
    Accelerator.CPU: CpuTarget(),
}
"""A device of each kind: a test of a new kind starts by adding one here."""
FLAGS: dict[Accelerator, TargetOverrides] = {
    Accelerator.NVIDIA: TargetOverrides(
        driver=Version("580.95.05"), cuda=Version("13.0"), compute_capabilities=(ComputeCapability(9, 0),)
    ),
    Accelerator.ROCM: TargetOverrides(rocm=RocmTarget(Version("6.4"), ("gfx942",))),
    Accelerator.TPU: TargetOverrides(tpu=TpuTarget("v5e", "v5litepod-8", 8)),
    Accelerator.CPU: TargetOverrides(cpu=True),
}
"""The flags (``--driver``, ``--rocm``, ``--tpu``, ``--cpu`` ...) that give each kind's device above."""

KINDS = [kind.kind for kind in ACCELERATORS]
PAIRS = [(a, b) for a in KINDS for b in KINDS if a is not b]


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
    elif kind is Accelerator.ROCM:
        assert kept and all(v.rocm is not None and "gfx942" in v.gfx for v in kept)
        assert kept[0].rocm == max(v.rocm for v in kept)  # the newest ROCm first
        cpu = release.variant("cpu")
        assert cpu is not None and kind_module.rejection(cpu, request, target, catalog) is NOT_ASKED
        cuda = release.variant("cu128")
        assert cuda is not None and "CUDA build" in str(kind_module.rejection(cuda, request, target, catalog))
        assert kind_module.lacks(target) == ""  # the CUDA packages' ROCm builds are chosen there
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


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_says_what_it_can_do_and_its_catalog_parts_suffice(kind: Accelerator) -> None:
    """A kind's traits agree with its device (CUDA where there is a driver or a CUDA, a TPU
    runtime where there is a TPU), and the catalog parts they name lose nothing: torch and JAX
    resolve on the narrowed catalog exactly as on the whole one."""
    from colabenv.profile.load import load_profile_text
    from colabenv.resolve.resolver import resolve

    target = _target(kind)
    traits = accelerator(kind).traits
    assert traits.cuda is (target.driver is not None or target.cuda is not None)
    assert traits.tpu_runtime is (target.tpu is not None)
    assert not (traits.cuda and traits.tpu_runtime)
    parts = traits.catalog_parts
    assert (parts.components, parts.tpu) == (traits.cuda, traits.tpu_runtime)
    narrowed = shipped_catalog([Framework.TORCH, Framework.JAX], parts=parts)
    whole = shipped_catalog([Framework.TORCH, Framework.JAX])
    assert (narrowed.components != whole.components) is not traits.cuda
    profile = load_profile_text('name = "p"\n[frameworks]\ntorch = "==2.9.0"\njax = "*"\n', Path("p.toml"))
    assert _outcome(resolve, profile, target, narrowed) == _outcome(resolve, profile, target, whole)


def _outcome(resolve: object, *args: object) -> object:
    """A resolution, or the message of the error it ended in (AMD GPUs: no JAX ROCm build)."""
    from colabenv.errors import ColabenvError

    assert callable(resolve)
    try:
        return resolve(*args)
    except ColabenvError as error:
        return error.message


@pytest.mark.parametrize("kind", KINDS)
def test_only_a_kind_with_its_own_runtime_names_an_installed_build(kind: Accelerator) -> None:
    """``detect`` names a framework's build by the kind's runtime only where the kind has one
    and the target has it installed (the TPU's libtpu); else by the wheel."""
    bare = _target(kind)
    runtime = InstalledSet.from_mapping({"libtpu": "0.0.17", "jax": "0.7.2"})
    equipped = Target(bare.device, bare.python, installed=runtime)
    assert accelerator(kind).installed_build(bare, Framework.JAX) is None
    named = accelerator(kind).installed_build(equipped, Framework.JAX)
    assert named == ("TPU (libtpu 0.0.17)" if accelerator(kind).traits.tpu_runtime else None)
    assert accelerator(kind).installed_build(equipped, Framework.TENSORFLOW) is None


def _recorded(kind: Accelerator) -> RecordedDevice:
    """The device of ``kind`` as a lock's header records it."""
    device = DEVICES[kind]
    return RecordedDevice(
        format_driver(device.driver) if device.driver is not None else None,
        str(device.cuda) if device.cuda is not None else None,
        tuple(str(c) for c in device.compute_capabilities),
        device.tpu,
        str(device.rocm) if device.rocm is not None else None,
        device.gfx,
    )


@pytest.mark.parametrize("kind", KINDS)
def test_a_recorded_device_is_the_device_of_its_kind(kind: Accelerator) -> None:
    """A header's device fields make the device they were written from, and its kind checks
    them clean, writes only fields of the header's target (never one every kind writes) and
    finds no difference from itself."""
    recorded = _recorded(kind)
    assert recorded.kind is kind
    assert recorded.device() == DEVICES[kind]
    own = accelerator(kind)
    assert own.recorded_problem(recorded) is None
    assert own.contradiction(kind) is None
    assert own.difference(recorded, recorded) is None
    table = own.recorded_table(recorded)
    assert not set(table) & {
        "driver",
        "requires-driver",
        "cuda",
        "compute-capabilities",
        "python",
        "platform",
    }
    assert bool(table) is (kind in (Accelerator.TPU, Accelerator.ROCM)), table
    assert recorded.overridden(TargetOverrides()) == recorded


@pytest.mark.parametrize(("kind", "other"), PAIRS)
def test_a_header_naming_another_kind_is_refused(kind: Accelerator, other: Accelerator) -> None:
    said = accelerator(kind).contradiction(other)
    assert said is not None and said.startswith("the target ")


@pytest.mark.parametrize(("kind", "other"), PAIRS)
def test_another_kind_now_is_said_both_ways_or_by_the_driver_fields(
    kind: Accelerator, other: Accelerator
) -> None:
    """A change of kind is said in words where the driver and CUDA fields cannot say it (to or
    from a TPU or AMD GPUs), and the same whichever side the lock is on."""
    recorded, now = _recorded(kind), _recorded(other)
    said = accelerator(kind).difference(recorded, now)
    back = accelerator(other).difference(now, recorded)
    assert (said is None) is (back is None)
    words = {Accelerator.TPU, Accelerator.ROCM}
    assert (said is None) is not (words & {kind, other})
    assert said in (None, f"accelerator {kind} in the lock, {other} now")


@pytest.mark.parametrize("kind", KINDS)
def test_flags_replace_a_recorded_device(kind: Accelerator) -> None:
    recorded = _recorded(kind)
    assert recorded.overridden(TargetOverrides(cpu=True)).kind is Accelerator.CPU
    tpu = TpuTarget("v6e", "v6e-1", 1)
    assert recorded.overridden(TargetOverrides(tpu=tpu)) == RecordedDevice(None, None, (), tpu)
    nvidia = recorded.overridden(TargetOverrides(driver=Version("550.54.15")))
    assert nvidia.kind is Accelerator.NVIDIA and nvidia.tpu is None and nvidia.driver == "550.54.15"


def test_another_kind_beside_a_tpu_is_refused_and_a_tpu_is_checked() -> None:
    tpu = TpuTarget("v5e", "v5litepod-8", 8)
    beside = RecordedDevice("550.54.15", "12.4", ("7.5",), tpu)
    assert accelerator(beside.kind).recorded_problem(beside) == "tpu: a TPU host has no NVIDIA driver or CUDA"
    with_caps = RecordedDevice(None, None, ("7.5",), tpu)
    assert with_caps.kind is Accelerator.TPU
    assert accelerator(Accelerator.TPU).recorded_problem(with_caps) == (
        "tpu: a TPU host has no NVIDIA driver or CUDA"
    )
    bad = RecordedDevice(None, None, (), TpuTarget("V5E!", None, 0))
    assert accelerator(Accelerator.TPU).recorded_problem(bad) == "tpu: 'V5E!' is not a TPU generation"


def test_detection_asks_the_tpu_first_then_the_gpus_and_the_cpu_last() -> None:
    """The TPU before NVIDIA: a TPU host leaves the NVIDIA sources unread. NVIDIA before AMD: a
    host with an NVIDIA driver is an NVIDIA host whatever its KFD topology says. The CPU last:
    it answers on every host."""
    assert KINDS == [Accelerator.TPU, Accelerator.NVIDIA, Accelerator.ROCM, Accelerator.CPU]


@pytest.mark.parametrize("kind", KINDS[:-1])
def test_a_kind_answers_nothing_on_a_host_without_it(kind: Accelerator) -> None:
    notes: list[str] = []
    assert accelerator(kind).detected(TargetOverrides(), StandInReadings(), notes) is None


def test_the_last_kind_answers_on_every_host_and_for_every_flag() -> None:
    last = ACCELERATORS[-1]
    for wanted in (TargetOverrides(), *FLAGS.values()):
        found = last.detected(wanted, StandInReadings(closed=True), [])
        assert found is not None and found.device == CpuTarget() and found.gpus == ()
    readings = StandInReadings()
    assert detected(TargetOverrides(), readings, []).device == CpuTarget()
    assert readings.asked == ["tpu", "nvidia_gpus", "amd_gpus"]  # each kind looked, in order


@pytest.mark.parametrize("kind", KINDS)
def test_a_kind_answers_its_own_flags_without_reading_the_host(kind: Accelerator) -> None:
    """Flags win over the host: given its device whole, a kind reads nothing of the host (the
    catalog's driver table aside), and no kind asked before it claims the target."""
    notes: list[str] = []
    found = accelerator(kind).detected(FLAGS[kind], StandInReadings(closed=True), notes)
    assert found is not None and found.device == DEVICES[kind]
    for earlier in KINDS[: KINDS.index(kind)]:
        assert accelerator(earlier).detected(FLAGS[kind], StandInReadings(), []) is None, earlier


def test_the_first_kind_that_answers_is_taken_and_the_rest_are_never_asked() -> None:
    tpu = TpuTarget("v6e", None, 1)
    readings = StandInReadings(tpu_report=TpuReport(tpu, ("TPU v6e: 1 chip (device 0x006f)",)))
    notes: list[str] = []
    assert detected(TargetOverrides(), readings, notes).device == tpu
    assert readings.asked == ["tpu"]
    assert notes == ["TPU v6e: 1 chip (device 0x006f)", "a TPU target: NVIDIA GPU detection skipped"]


# ---------------------------------------------------------------------------------------------
# What the script's preflight and verify check of the device


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_declares_what_the_preflight_checks_of_its_device(kind: Accelerator) -> None:
    """Over the builds the kind's target takes of torch 2.9, with a driver floor recorded: the
    kind checks the NVIDIA driver exactly where it runs CUDA builds, the gfx and ROCm exactly
    where its builds are ROCm ones, and nothing where no build was chosen and no floor given."""
    from colabenv.profile.load import load_profile_text
    from colabenv.resolve.resolver import resolve

    own = accelerator(kind)
    profile = load_profile_text('name = "p"\n[frameworks]\ntorch = "==2.9.0"\n', Path("p.toml"))
    resolution = resolve(profile, _target(kind), shipped_catalog([Framework.TORCH]), allow_unconfirmed=True)
    checks = own.device_checks(resolution.choices, "525.60.13")
    assert isinstance(checks, DeviceChecks)
    assert (checks.driver == "525.60.13") is own.traits.cuda
    assert checks.driver in ("525.60.13", None)
    assert (checks.gfx is not None) is own.traits.hip is (checks.rocm is not None)
    if checks.gfx is not None:
        assert "gfx942" in checks.gfx
    assert own.device_checks((), None) == DeviceChecks()


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_declares_what_verify_checks_and_verify_knows_it(kind: Accelerator) -> None:
    """A kind's verify checks agree with its traits (NVML's GPUs, CUDA, the TPU runtime, HIP),
    and verify runs and judges a smoke test on every device a kind can declare."""
    from colabenv.verification.families import SMOKES

    checks = accelerator(kind).verify_checks
    traits = accelerator(kind).traits
    assert isinstance(checks, VerifyChecks)
    assert checks.gpus is traits.gpu and checks.cuda is traits.cuda
    assert (checks.smoke is DeviceSmoke.TPU) is traits.tpu_runtime
    assert (checks.smoke is DeviceSmoke.HIP) is traits.hip
    assert set(SMOKES) == set(DeviceSmoke)
    assert SMOKES[checks.smoke].memory is None or checks.smoke is DeviceSmoke.TPU
