"""Each kind's detection (issue 33): what the host says, read by the host layer over the
recorded hosts of ``tests/data`` (NVIDIA's nvidia-smi and NVML answers, TPU VMs' device trees,
AMD hosts' KFD topologies), or a stand-in host where a rule of the flags is the point."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from colabenv.accelerators.base import Detected, HostReadings
from colabenv.accelerators.cpu import CPU
from colabenv.accelerators.nvidia import NVIDIA
from colabenv.accelerators.rocm import ROCM
from colabenv.accelerators.tpu import TPU
from colabenv.catalog.load import shipped_driver_table, shipped_tpu
from colabenv.errors import TargetError
from colabenv.host.detect import detect
from colabenv.host.probe import HostProbe, list_dir
from colabenv.host.readings import ProbeReadings
from colabenv.models import (
    Accelerator,
    Catalog,
    ComputeCapability,
    CpuTarget,
    Gpu,
    GpuReport,
    NvidiaTarget,
    RocmTarget,
    TargetOverrides,
    TpuTarget,
)
from tests.host.test_detect import GPU_HOSTS, expected, make_probe, nvml_from_expected
from tests.host.test_tpu import HOST_NAMES, recorded
from tests.support.amd_hosts import amd_root
from tests.support.readings import StandInReadings

T4 = GpuReport(Version("550.54.15"), Version("12.4"), (Gpu("Tesla T4", ComputeCapability(7, 5)),), ())


def _no_table() -> Catalog:
    raise AssertionError("the driver table is not needed here")


def _readings(probe: HostProbe) -> HostReadings:
    return ProbeReadings(probe, shipped_driver_table, shipped_tpu)


# ---------------------------------------------------------------------------------------------
# NVIDIA


@pytest.mark.parametrize("host", GPU_HOSTS)
def test_nvidia_answers_the_recorded_gpu_hosts(host: str) -> None:
    wanted = expected(host)
    notes: list[str] = []
    found = NVIDIA.detected(TargetOverrides(), _readings(make_probe(nvml=nvml_from_expected(host))), notes)
    assert found is not None
    assert found.device == NvidiaTarget(
        Version(wanted["driver"]),
        Version(wanted["cuda"]),
        tuple(sorted({ComputeCapability.parse(c) for c in wanted["compute_capabilities"]})),
    )
    assert [gpu.name for gpu in found.gpus] == [g["name"] for g in wanted["gpus"]]


def test_nvidia_answers_nothing_without_a_driver_and_says_why() -> None:
    notes: list[str] = []
    assert NVIDIA.detected(TargetOverrides(), _readings(make_probe()), notes) is None
    assert any("NVML" in note for note in notes), notes


def test_nvidia_flags_replace_what_the_host_says() -> None:
    notes: list[str] = []
    wanted = TargetOverrides(compute_capabilities=(ComputeCapability(8, 0),))
    found = NVIDIA.detected(wanted, StandInReadings(gpu_report=T4), notes)
    assert found == Detected(
        NvidiaTarget(Version("550.54.15"), Version("12.4"), (ComputeCapability(8, 0),)), T4.gpus
    )
    derived: list[str] = []
    readings = StandInReadings(closed=True)
    given = NVIDIA.detected(
        TargetOverrides(driver=Version("550.54.15"), compute_capabilities=(ComputeCapability(7, 5),)),
        readings,
        derived,
    )
    assert given is not None and given.device.cuda == Version("12.4") and given.gpus == ()
    assert derived == [
        "GPU detection skipped: driver and compute capabilities were given",
        "max CUDA 12.4 derived from --driver 550.54.15 (catalog driver table)",
    ]
    assert readings.asked == ["driver_table"]


def test_nvidia_refuses_flags_that_contradict_the_host() -> None:
    with pytest.raises(TargetError, match=r"^--cuda 13.0 conflicts with the detected driver 550.54.15"):
        NVIDIA.detected(TargetOverrides(cuda=Version("13.0")), StandInReadings(gpu_report=T4), [])
    with pytest.raises(TargetError, match=r"^--compute-capability given but no NVIDIA driver was detected"):
        NVIDIA.detected(
            TargetOverrides(compute_capabilities=(ComputeCapability(7, 5),)), StandInReadings(), []
        )


def test_nvidia_leaves_the_gpus_alone_for_cpu_and_amd_flags() -> None:
    for wanted, note in (
        (TargetOverrides(cpu=True), "--cpu: GPU detection skipped"),
        (TargetOverrides(rocm=RocmTarget(Version("6.4"))), "--rocm given: NVIDIA GPU detection skipped"),
        (
            TargetOverrides(rocm=RocmTarget(None, ("gfx942",)), origins=(("gfx", "COLABENV_GFX"),)),
            "COLABENV_GFX given: NVIDIA GPU detection skipped",
        ),
        (
            TargetOverrides(
                rocm=RocmTarget(Version("6.4"), ("gfx942",)),
                origins=(("rocm", "COLABENV_ROCM"), ("gfx", "--gfx")),
            ),
            "COLABENV_ROCM and --gfx given: NVIDIA GPU detection skipped",
        ),
    ):
        notes: list[str] = []
        assert NVIDIA.detected(wanted, StandInReadings(gpu_report=T4, closed=True), notes) is None
        assert notes == [note]
        assert "TPU" not in notes[0]


# ---------------------------------------------------------------------------------------------
# TPU


@pytest.mark.parametrize("name", HOST_NAMES)
def test_the_tpu_answers_the_recorded_tpu_hosts(name: str) -> None:
    probe, wanted = recorded(name)
    notes: list[str] = []
    found = TPU.detected(TargetOverrides(), ProbeReadings(probe, _no_table, shipped_tpu), notes)
    if wanted["accelerator"] != "tpu":
        assert found is None
        return
    assert found is not None and isinstance(found.device, TpuTarget)
    shown = {"generation": found.device.generation, "chips": found.device.chips}
    assert shown == {key: wanted["tpu"][key] for key in shown}
    assert notes[-1] == "a TPU target: NVIDIA GPU detection skipped"


def test_the_tpu_flag_is_taken_and_nvidia_flags_leave_the_tpu_unread() -> None:
    v5e = TpuTarget("v5e", "v5litepod-8", 8)
    notes: list[str] = []
    wanted = TargetOverrides(tpu=v5e, origins=(("tpu", "COLABENV_TPU"),))
    assert TPU.detected(wanted, StandInReadings(closed=True), notes) == Detected(v5e)
    assert notes == [
        "COLABENV_TPU v5litepod-8: TPU detection skipped",
        "a TPU target: NVIDIA GPU detection skipped",
    ]
    amd = TargetOverrides(rocm=RocmTarget(Version("6.4"), ("gfx942",)))
    for other in (TargetOverrides(cpu=True), TargetOverrides(cuda=Version("12.4")), amd):
        assert TPU.detected(other, StandInReadings(closed=True), []) is None


def test_amd_flags_on_a_tpu_host_describe_amd_gpus() -> None:
    """``--rocm``/``--gfx`` describe another target than the host's TPU, as ``--driver`` does:
    the flags win (a TPU VM rendering for an MI300X host)."""
    probe, _ = recorded("colab-v6e-1")
    given = RocmTarget(Version("6.4"), ("gfx942",))
    fingerprint = detect(TargetOverrides(rocm=given), probe=probe)
    assert fingerprint.target.device == given
    assert not any("chip" in note for note in fingerprint.notes), fingerprint.notes


# ---------------------------------------------------------------------------------------------
# AMD GPUs (ROCm)


def _amd_readings(root: Path) -> HostReadings:
    probe = HostProbe(
        environ={},
        distributions=lambda: (),
        python_version="3.12.13",
        python_implementation="CPython",
        platform_tag="linux_x86_64",
        glibc="2.35",
        root=root,
        list_dir=list_dir,
    )
    return ProbeReadings(probe, _no_table, shipped_tpu)


@pytest.mark.parametrize(("host", "gfx"), [("mi300x-cpx", ("gfx942",)), ("mi210-x8", ("gfx90a",))])
def test_rocm_answers_the_recorded_kfd_topologies(tmp_path: Path, host: str, gfx: tuple[str, ...]) -> None:
    notes: list[str] = []
    found = ROCM.detected(
        TargetOverrides(), _amd_readings(amd_root(tmp_path, host, rocm="6.4.0-15158")), notes
    )
    assert found is not None and found.device == RocmTarget(Version("6.4.0"), gfx)
    assert found.amdgpu_driver is not None and found.amdgpu_driver.version is None  # no sys/module
    assert f"AMD GPUs read from the KFD topology: {', '.join(gfx)}" in notes


def test_rocm_fills_in_what_the_flags_leave_out_and_says_what_is_not_known(tmp_path: Path) -> None:
    readings = _amd_readings(amd_root(tmp_path, "mi300x-cpx"))
    notes: list[str] = []
    found = ROCM.detected(TargetOverrides(rocm=RocmTarget(None, ("gfx90a",))), readings, notes)
    assert found is not None and found.device == RocmTarget(
        None, ("gfx90a",)
    )  # the flag's gfx over the host's
    assert any(note.startswith("ROCm version not known: ") for note in notes), notes
    given = RocmTarget(Version("6.1"), ("gfx942",))
    assert ROCM.detected(TargetOverrides(rocm=given), StandInReadings(closed=True), []) == Detected(given)


def test_rocm_answers_nothing_without_amd_gpus_or_beside_cpu(tmp_path: Path) -> None:
    assert ROCM.detected(TargetOverrides(), _amd_readings(amd_root(tmp_path, None)), []) is None
    assert ROCM.detected(TargetOverrides(cpu=True), StandInReadings(closed=True), []) is None
    # a host whose folders are not listed (a probe of stand-ins): the flags alone
    stand_in = StandInReadings(kfd=None)
    partial = RocmTarget(Version("6.4"))
    assert ROCM.detected(TargetOverrides(rocm=partial), stand_in, []) == Detected(partial)
    assert stand_in.asked == ["amd_gpus"]


# ---------------------------------------------------------------------------------------------
# The CPU


def test_the_cpu_answers_whatever_the_host_says() -> None:
    found = CPU.detected(TargetOverrides(), StandInReadings(gpu_report=T4, closed=True), [])
    assert found == Detected(CpuTarget()) and found.device.kind is Accelerator.CPU
