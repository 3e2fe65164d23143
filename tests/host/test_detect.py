"""Host detection through the HostProbe boundary: fake NVML, recorded /proc texts and nvidia-smi."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv._util.processes import Completed
from colabenv.catalog.load import shipped_driver_table, shipped_tpu
from colabenv.errors import InputError, TargetError
from colabenv.host.detect import (
    _installed_distributions,
    build_warnings,
    detect,
    fingerprint_to_json,
    platform_tag,
    read_freeze,
)
from colabenv.host.framework_builds import cuda_from_local_tag, framework_builds
from colabenv.host.gpu import (
    NO_DRIVER_NOTE,
    cuda_from_nvml,
    parse_kernel_module_version,
    parse_smi_banner,
    parse_smi_query,
    probe_gpus,
)
from colabenv.host.probe import HostProbe
from colabenv.models import (
    Arch,
    Catalog,
    ComputeCapability,
    CpuTarget,
    Fingerprint,
    Framework,
    InstalledSet,
    Release,
    RuntimeKind,
    Source,
    Target,
    TargetOverrides,
    Variant,
    device_of,
)
from colabenv.resolve.overrides import TargetFlags, resolve_overrides
from tests.support.paths import DATA as TEST_DATA
from tests.support.paths import REPO

DATA = TEST_DATA / "detect"
SMI = DATA / "smi"
PROC = DATA / "proc"
RUNTIMES = TEST_DATA / "runtimes"
GPU_HOSTS = sorted(p.name for p in SMI.iterdir() if p.name != "driver-failed")
PROC_FILE = Path("/proc/driver/nvidia/version")
SYS_FILE = Path("/sys/module/nvidia/version")
FAKE_SMI = "/usr/bin/nvidia-smi"


# ---------------------------------------------------------------------------------------------
# Fakes at the boundary


class FakeNvmlError(Exception):
    pass


@dataclass
class FakeMemory:
    total: int
    free: int


@dataclass
class FakeDevice:
    name: str | bytes
    capability: tuple[int, int]
    total_mib: int | None
    free_mib: int | None
    broken: bool = False
    """A GPU whose memory NVML does not report (a GB10's unified memory) has None for both."""


@dataclass
class FakeNvml:
    """Stands in for the pynvml module: the calls detection makes, with recorded answers."""

    driver: str | bytes = "550.54.15"
    cuda: int = 12040
    devices: Sequence[FakeDevice] = ()
    init_error: str | None = None
    cuda_error: str | None = None
    calls: list[str] = field(default_factory=list)

    def nvmlInit(self) -> None:
        self.calls.append("init")
        if self.init_error is not None:
            raise FakeNvmlError(self.init_error)

    def nvmlShutdown(self) -> None:
        self.calls.append("shutdown")

    def nvmlSystemGetDriverVersion(self) -> str | bytes:
        return self.driver

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        if self.cuda_error is not None:
            raise FakeNvmlError(self.cuda_error)
        return self.cuda

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any:
        return self.devices[index]

    def nvmlDeviceGetName(self, handle: Any) -> str | bytes:
        if handle.broken:
            raise FakeNvmlError("GPU is lost")
        name: str | bytes = handle.name
        return name

    def nvmlDeviceGetCudaComputeCapability(self, handle: Any) -> tuple[int, int]:
        capability: tuple[int, int] = handle.capability
        return capability

    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any:
        if handle.total_mib is None or handle.free_mib is None:
            raise FakeNvmlError("Not Supported")
        return FakeMemory(handle.total_mib * 1024 * 1024, handle.free_mib * 1024 * 1024)


NO_NVML = FakeNvml(init_error="NVML Shared Library Not Found")


def smi_runner(host: Path, calls: list[Sequence[str]] | None = None) -> Any:
    """Answers nvidia-smi calls from a recorded host directory."""

    def run(argv: Sequence[str], timeout: float) -> Completed:
        if calls is not None:
            calls.append(list(argv))
        rc_file = host / "returncode"
        rc = int(rc_file.read_text()) if rc_file.exists() else 0
        name = "query.csv" if any(a.startswith("--query-gpu") for a in argv) else "banner.txt"
        return Completed(tuple(argv), rc, (host / name).read_text(), "", False)

    return run


def never_run(argv: Sequence[str], timeout: float) -> Completed:
    raise AssertionError(f"nvidia-smi must not run: {argv}")


def make_probe(
    *,
    nvml: FakeNvml | None = None,
    files: Mapping[Path, str] | None = None,
    smi: Any = None,
    environ: Mapping[str, str] | None = None,
    dists: Sequence[tuple[str, str]] = (),
    existing: Sequence[str] = (),
    smi_timeout: float = 5.0,
    nvml_timeout: float = 5.0,
    platform_tag: str = "linux_x86_64",
    python_version: str = "3.11.13",
) -> HostProbe:
    texts = dict(files or {})
    fake = nvml or NO_NVML

    def read_text(path: Path) -> str:
        if path in texts:
            return texts[path]
        raise FileNotFoundError(2, "No such file or directory", str(path))

    return HostProbe(
        environ=dict(environ or {"PATH": "/usr/bin"}),
        load_nvml=lambda: fake,
        nvml_needs_device=False,
        read_text=read_text,
        path_exists=lambda p: str(p) in existing,
        which=lambda name: FAKE_SMI if smi is not None else None,
        run=smi if smi is not None else never_run,
        distributions=lambda: list(dists),
        python_version=python_version,
        python_implementation="CPython",
        platform_tag=platform_tag,
        glibc="2.35",
        smi_timeout=smi_timeout,
        nvml_timeout=nvml_timeout,
    )


def expected(host: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SMI / host / "expected.json").read_text())
    return data


def host_platform(host: str) -> str:
    """The platform the interpreter reports on a recorded host: its ``expected.json``'s
    ``platform``, x86-64 where it names none."""
    platform: str = expected(host).get("platform", "linux_x86_64")
    return platform


def nvml_memory_notes(host: str) -> tuple[str, ...]:
    """The notes detection through NVML gives for a recorded host's GPUs whose memory NVML
    does not report (``memory_total_mib`` null: "Not Supported", as on a GB10)."""
    gpus = expected(host)["gpus"]
    unknown = [i for i, gpu in enumerate(gpus) if gpu["memory_total_mib"] is None]
    return tuple(f"NVML: GPU {i} memory unknown (Not Supported)" for i in unknown)


def nvml_from_expected(host: str) -> FakeNvml:
    exp = expected(host)
    major, minor = exp["cuda"].split(".")
    devices = [
        FakeDevice(
            g["name"],
            (int(g["compute_capability"].split(".")[0]), int(g["compute_capability"].split(".")[1])),
            g["memory_total_mib"],
            g["memory_free_mib"],
        )
        for g in exp["gpus"]
    ]
    return FakeNvml(driver=exp["driver"], cuda=int(major) * 1000 + int(minor) * 10, devices=devices)


def assert_matches(fingerprint: Fingerprint, exp: Mapping[str, Any]) -> None:
    as_json = fingerprint_to_json(fingerprint)
    target = as_json["target"]
    assert isinstance(target, dict)
    assert target["driver"] == exp["driver"]
    assert target["cuda"] == exp["cuda"]
    assert target["compute_capabilities"] == exp["compute_capabilities"]
    assert target["platform"] == exp.get("platform", "linux_x86_64")
    assert as_json["gpus"] == exp["gpus"]


# ---------------------------------------------------------------------------------------------
# Recorded hosts


@pytest.mark.parametrize("host", GPU_HOSTS)
def test_recorded_host_through_nvidia_smi(host: str) -> None:
    calls: list[Sequence[str]] = []
    probe = make_probe(smi=smi_runner(SMI / host, calls), platform_tag=host_platform(host))
    fingerprint = detect(probe=probe)
    assert_matches(fingerprint, expected(host))
    assert calls[0][1].startswith("--query-gpu=name,compute_cap,memory.total,memory.free")
    assert calls[1] == [FAKE_SMI]
    assert not any("in its banner" in note for note in fingerprint.notes), "CUDA read from the banner"
    assert "NVML: not available (NVML Shared Library Not Found)" in fingerprint.notes
    assert NO_DRIVER_NOTE not in fingerprint.notes


@pytest.mark.parametrize("host", GPU_HOSTS)
def test_recorded_host_through_nvml(host: str) -> None:
    nvml = nvml_from_expected(host)
    fingerprint = detect(probe=make_probe(nvml=nvml, platform_tag=host_platform(host)))
    assert_matches(fingerprint, expected(host))
    assert nvml.calls == ["init", "shutdown"]
    assert fingerprint.notes == nvml_memory_notes(host)


def test_mixed_architectures_keep_every_gpu() -> None:
    fingerprint = detect(probe=make_probe(smi=smi_runner(SMI / "mixed-1080ti-3090")))
    assert [g.compute_capability for g in fingerprint.gpus] == [
        ComputeCapability(6, 1),
        ComputeCapability(8, 6),
    ]
    assert fingerprint.target.compute_capabilities == (
        ComputeCapability(6, 1),
        ComputeCapability(8, 6),
    )


def test_dual_t4_lists_two_gpus_and_one_capability() -> None:
    fingerprint = detect(probe=make_probe(smi=smi_runner(SMI / "kaggle-2xt4")))
    assert len(fingerprint.gpus) == 2
    assert fingerprint.target.compute_capabilities == (ComputeCapability(7, 5),)


def test_failing_driver_is_no_gpu_with_the_reason() -> None:
    fingerprint = detect(probe=make_probe(smi=smi_runner(SMI / "driver-failed")))
    assert fingerprint.target.driver is None
    assert fingerprint.target.cuda is None
    assert fingerprint.target.compute_capabilities == ()
    assert fingerprint.gpus == ()
    failed = [n for n in fingerprint.notes if n.startswith("nvidia-smi: exited 9")]
    assert failed and "couldn't communicate with the NVIDIA driver" in failed[0]
    assert NO_DRIVER_NOTE in fingerprint.notes


def test_failing_nvidia_smi_with_a_loaded_kernel_module_keeps_the_driver() -> None:
    files = {PROC_FILE: (PROC / "colab-550.54.15.txt").read_text()}
    fingerprint = detect(probe=make_probe(files=files, smi=smi_runner(SMI / "driver-failed")))
    assert fingerprint.target.driver == Version("550.54.15")
    assert fingerprint.target.cuda == Version("12.4")
    assert fingerprint.target.compute_capabilities == ()
    assert any("every GPU architecture is assumed supported" in n for n in fingerprint.notes)
    assert any("derived from driver 550.54.15" in n for n in fingerprint.notes)


def test_hanging_nvidia_smi_is_a_note_and_the_banner_is_not_tried() -> None:
    calls: list[Sequence[str]] = []

    def hang(argv: Sequence[str], timeout: float) -> Completed:
        calls.append(list(argv))
        return Completed(tuple(argv), -1, "", "", True)

    fingerprint = detect(probe=make_probe(smi=hang, smi_timeout=3.0))
    assert fingerprint.target.driver is None
    assert "nvidia-smi: did not answer within 3s (killed)" in fingerprint.notes
    assert len(calls) == 1


def test_nvidia_smi_that_cannot_start_is_a_note() -> None:
    from colabenv.errors import ProcessError

    def broken(argv: Sequence[str], timeout: float) -> Completed:
        raise ProcessError(list(argv), "not executable")

    fingerprint = detect(probe=make_probe(smi=broken))
    assert "nvidia-smi: not executable" in fingerprint.notes
    assert fingerprint.target.driver is None


def test_no_gpu_host_is_a_normal_answer() -> None:
    fingerprint = detect(probe=make_probe())
    assert fingerprint.target.driver is None
    assert fingerprint.target.cuda is None
    assert fingerprint.target.device == CpuTarget()
    assert fingerprint.notes == (
        "NVML: not available (NVML Shared Library Not Found)",
        "nvidia-smi: not found on PATH",
        NO_DRIVER_NOTE,
    )


def test_nvidia_ml_py_missing_is_a_note() -> None:
    def missing() -> Any:
        raise ModuleNotFoundError("No module named 'pynvml'")

    probe = dataclasses.replace(make_probe(), load_nvml=missing)
    fingerprint = detect(probe=probe)
    assert fingerprint.notes[0] == "NVML: nvidia-ml-py not importable (No module named 'pynvml')"


# ---------------------------------------------------------------------------------------------
# NVML details


def test_nvml_hang_costs_its_timeout_then_nvidia_smi_answers() -> None:
    class SlowNvml(FakeNvml):
        def nvmlInit(self) -> None:
            time.sleep(3)

    probe = make_probe(nvml=SlowNvml(), smi=smi_runner(SMI / "colab-t4"), nvml_timeout=0.2)
    started = time.monotonic()
    fingerprint = detect(probe=probe)
    assert time.monotonic() - started < 2
    assert "NVML: did not answer within 0.2s" in fingerprint.notes
    assert_matches(fingerprint, expected("colab-t4"))


def test_nvml_lost_gpu_is_skipped_and_shutdown_still_runs() -> None:
    nvml = FakeNvml(
        devices=[
            FakeDevice("Tesla T4", (7, 5), 15360, 15000),
            FakeDevice("Tesla T4", (7, 5), 15360, 15000, broken=True),
        ]
    )
    fingerprint = detect(probe=make_probe(nvml=nvml))
    assert len(fingerprint.gpus) == 1
    assert "NVML: GPU 1 skipped (GPU is lost)" in fingerprint.notes
    assert nvml.calls == ["init", "shutdown"]


def test_nvml_bytes_answers_from_old_bindings() -> None:
    nvml = FakeNvml(
        driver=b"535.183.01",
        cuda=12020,
        devices=[FakeDevice(b"NVIDIA GeForce RTX 3090", (8, 6), 24576, 24000)],
    )
    fingerprint = detect(probe=make_probe(nvml=nvml))
    assert fingerprint.target.driver == Version("535.183.01")
    assert fingerprint.target.cuda == Version("12.2")
    assert fingerprint.gpus[0].name == "NVIDIA GeForce RTX 3090"


def test_nvml_without_cuda_version_falls_back_to_the_catalog() -> None:
    nvml = FakeNvml(
        driver="580.65.06",
        cuda_error="Function Not Found",
        devices=[FakeDevice("NVIDIA H100 80GB HBM3", (9, 0), 81559, 81000)],
    )
    fingerprint = detect(probe=make_probe(nvml=nvml, smi=never_run))
    assert fingerprint.target.cuda == Version("13.0")
    assert "NVML: no CUDA version from the driver (Function Not Found)" in fingerprint.notes


def test_kernel_module_and_nvml_disagreeing_is_noted() -> None:
    files = {PROC_FILE: (PROC / "desktop-535.183.01.txt").read_text()}
    nvml = FakeNvml(driver="550.54.15", devices=[FakeDevice("Tesla T4", (7, 5), 15360, 1)])
    fingerprint = detect(probe=make_probe(nvml=nvml, files=files))
    assert fingerprint.target.driver == Version("550.54.15")
    assert any("kernel module 535.183.01, NVML 550.54.15" in n for n in fingerprint.notes)


def test_cuda_from_nvml_encoding() -> None:
    assert cuda_from_nvml(12040) == Version("12.4")
    assert cuda_from_nvml(13000) == Version("13.0")
    assert cuda_from_nvml(11080) == Version("11.8")
    assert cuda_from_nvml(0) is None


# ---------------------------------------------------------------------------------------------
# /proc and /sys


@pytest.mark.parametrize("name", sorted(p.name for p in PROC.iterdir()))
def test_kernel_module_version_texts(name: str) -> None:
    want = name.removesuffix(".txt").rsplit("-", 1)[1]
    assert parse_kernel_module_version((PROC / name).read_text()) == Version(want)


@pytest.mark.parametrize(
    ("name", "driver", "cuda"),
    [
        ("colab-550.54.15.txt", "550.54.15", "12.4"),
        ("kaggle-560.35.03.txt", "560.35.03", "12.6"),
        ("desktop-535.183.01.txt", "535.183.01", "12.2"),
        ("open-580.65.06.txt", "580.65.06", "13.0"),
        ("open-aarch64-570.133.20.txt", "570.133.20", "12.8"),
    ],
)
def test_driver_from_proc_alone_derives_max_cuda_from_the_catalog(name: str, driver: str, cuda: str) -> None:
    files = {PROC_FILE: (PROC / name).read_text()}
    fingerprint = detect(probe=make_probe(files=files))
    assert fingerprint.target.driver == Version(driver)
    assert fingerprint.target.cuda == Version(cuda)
    assert fingerprint.target.compute_capabilities == ()
    assert f"max CUDA {cuda} derived from driver {driver} (catalog driver table)" in (fingerprint.notes)
    assert f"driver {driver} found but no GPU could be listed" in fingerprint.notes


def test_legacy_470_driver_gets_cuda_11_4_from_the_driver_table() -> None:
    files = {PROC_FILE: (PROC / "legacy-470.256.02.txt").read_text()}
    fingerprint = detect(probe=make_probe(files=files))
    assert fingerprint.target.driver == Version("470.256.02")
    assert fingerprint.target.cuda == Version("11.4")


def test_driver_older_than_the_catalog_has_no_max_cuda() -> None:
    text = (PROC / "legacy-470.256.02.txt").read_text().replace("470.256.02", "440.33.01")
    fingerprint = detect(probe=make_probe(files={PROC_FILE: text}))
    assert fingerprint.target.driver == Version("440.33.01")
    assert fingerprint.target.cuda is None
    assert any("older than every CUDA" in n for n in fingerprint.notes)


def test_sys_module_version_when_proc_is_missing() -> None:
    files = {SYS_FILE: (PROC / "sys-module-550.54.15.txt").read_text()}
    fingerprint = detect(probe=make_probe(files=files))
    assert fingerprint.target.driver == Version("550.54.15")


def test_nvidia_smi_banner_gives_cuda_when_the_query_has_the_driver() -> None:
    banner = (SMI / "h200-580" / "banner.txt").read_text()
    assert parse_smi_banner(banner) == (Version("580.82.07"), Version("13.0"))
    query = parse_smi_query((SMI / "h200-580" / "query.csv").read_text())
    assert query.driver == Version("580.82.07")
    assert query.gpus[0].memory_total_mib == 143771


def test_the_r610_banner_names_them_kmd_and_cuda_umd_version() -> None:
    """From R610 the banner says "KMD Version" and "CUDA UMD Version" (a B200 on 610.43.02,
    tests/data/detect/smi/b200-610/SOURCE.md): both read, so CUDA comes from the banner, not
    from the driver table (which a newer driver than the table knows would leave unknown)."""
    banner = (SMI / "b200-610" / "banner.txt").read_text()
    assert parse_smi_banner(banner) == (Version("610.43.02"), Version("13.3"))
    fingerprint = detect(probe=make_probe(smi=smi_runner(SMI / "b200-610")))
    assert str(fingerprint.target.cuda) == "13.3"
    assert not any("in its banner" in note for note in fingerprint.notes), fingerprint.notes


def test_smi_query_rows_with_unknown_fields() -> None:
    parsed = parse_smi_query(
        "Tesla K80, [N/A], 11441, 11370, 470.256.02\n"
        "Weird, Name, With, Commas, 8.9, 23034, [N/A], 550.54.15\n"
        "garbage\n"
    )
    assert [g.name for g in parsed.gpus] == ["Weird, Name, With, Commas"]
    assert parsed.gpus[0].memory_free_mib is None
    assert parsed.driver == Version("550.54.15")
    assert len(parsed.problems) == 2


# ---------------------------------------------------------------------------------------------
# hypothesis: nothing the host prints crashes detection


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    query=st.text(max_size=400),
    banner=st.text(max_size=400),
    proc=st.text(max_size=300),
    returncode=st.sampled_from([0, 0, 1, 9, -9, 255]),
)
def test_arbitrary_host_output_never_crashes(query: str, banner: str, proc: str, returncode: int) -> None:
    def run(argv: Sequence[str], timeout: float) -> Completed:
        out = query if any(a.startswith("--query-gpu") for a in argv) else banner
        return Completed(tuple(argv), returncode, out, "", False)

    probe = make_probe(files={PROC_FILE: proc, SYS_FILE: proc}, smi=run)
    report = probe_gpus(probe, shipped_driver_table)
    assert report.driver is not None or NO_DRIVER_NOTE in report.notes
    assert all(isinstance(n, str) for n in report.notes)


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(
        st.one_of(
            st.from_regex(
                r"[A-Za-z0-9 ._-]{1,30}, [0-9.\[\]A-Za-z/]{1,8}(, [0-9N/A\[\]]{0,8}){3}", fullmatch=True
            ),
            st.text(max_size=60),
        ),
        max_size=8,
    )
)
def test_arbitrary_smi_rows_parse_or_become_problems(lines: list[str]) -> None:
    text = "\n".join(lines)
    parsed = parse_smi_query(text)
    rows = [line for line in text.splitlines() if line.strip()]
    assert len(parsed.gpus) + len(parsed.problems) == len(rows)
    assert all(gpu.name for gpu in parsed.gpus)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300))
def test_arbitrary_proc_text_never_crashes(text: str) -> None:
    result = parse_kernel_module_version(text)
    assert result is None or isinstance(result, Version)


# ---------------------------------------------------------------------------------------------
# Overrides


T4 = SMI / "colab-t4"


def overrides(environ: Mapping[str, str] | None = None, **flags: Any) -> TargetOverrides:
    return resolve_overrides(TargetFlags(**flags), environ or {}, tpu_facts=shipped_tpu)


def test_cpu_skips_gpu_detection() -> None:
    fingerprint = detect(overrides(cpu=True), probe=make_probe(smi=never_run))
    assert fingerprint.target.driver is None
    assert fingerprint.target.cuda is None
    assert fingerprint.target.compute_capabilities == ()
    assert fingerprint.gpus == ()


def test_driver_alone_on_a_gpu_less_host_derives_cuda_and_leaves_capabilities_open() -> None:
    fingerprint = detect(overrides(driver="550.54.15"), probe=make_probe())
    assert fingerprint.target.driver == Version("550.54.15")
    assert fingerprint.target.cuda == Version("12.4")
    assert fingerprint.target.compute_capabilities == ()
    assert any("assumed supported" in n for n in fingerprint.notes)


def test_driver_override_replaces_the_detected_driver_and_its_cuda() -> None:
    fingerprint = detect(overrides(driver="580.65.06"), probe=make_probe(smi=smi_runner(T4)))
    assert fingerprint.target.driver == Version("580.65.06")
    assert fingerprint.target.cuda == Version("13.0")
    assert fingerprint.target.compute_capabilities == (ComputeCapability(7, 5),)


def test_driver_and_cuda_flags_win_over_environment() -> None:
    env = {
        "COLABENV_DRIVER_VERSION": "535.183.01",
        "COLABENV_CUDA_VERSION": "12.2",
        "COLABENV_COMPUTE_CAPABILITY": "8.6",
    }
    fingerprint = detect(overrides(env, driver="550.54.15"), probe=make_probe())
    assert fingerprint.target.driver == Version("550.54.15")
    assert fingerprint.target.cuda == Version("12.2")
    assert fingerprint.target.compute_capabilities == (ComputeCapability(8, 6),)


def test_cuda_alone_assumes_its_toolkit_driver() -> None:
    fingerprint = detect(overrides(cuda="12.4"), probe=make_probe())
    assert fingerprint.target.cuda == Version("12.4")
    assert fingerprint.target.driver == Version("550.54.14")


def test_cuda_override_keeps_a_detected_driver() -> None:
    fingerprint = detect(overrides(cuda="12.2"), probe=make_probe(smi=smi_runner(T4)))
    assert fingerprint.target.driver == Version("550.54.15")
    assert fingerprint.target.cuda == Version("12.2")


def test_capabilities_replace_detected_ones() -> None:
    fingerprint = detect(
        overrides(compute_capability=["8.0,9.0", "7.5"]), probe=make_probe(smi=smi_runner(T4))
    )
    assert [str(c) for c in fingerprint.target.compute_capabilities] == ["7.5", "8.0", "9.0"]
    assert [g.name for g in fingerprint.gpus] == ["Tesla T4"]


def test_capabilities_without_any_driver_are_refused() -> None:
    with pytest.raises(TargetError, match="--compute-capability"):
        detect(overrides(compute_capability=["7.5"]), probe=make_probe())


@pytest.mark.parametrize(
    ("flags", "environ", "message"),
    [
        ({"driver": "1!0.1"}, {}, "--driver: '1!0.1' is not an NVIDIA driver version"),
        ({"driver": "550.54.15+local"}, {}, "--driver: '550.54.15+local' is not an NVIDIA"),
        ({"driver": "9999.1"}, {}, "--driver: '9999.1' is not an NVIDIA driver version"),
        ({"driver": "0.1"}, {}, "--driver: '0.1' is not an NVIDIA driver version"),
        (
            {},
            {"COLABENV_DRIVER_VERSION": "\u0665\u0665\u0660.54"},
            "COLABENV_DRIVER_VERSION: '\u0665\u0665\u0660.54' is not an NVIDIA driver version",
        ),
        ({"cuda": "1!12.4"}, {}, "--cuda: '1!12.4' is not a CUDA version like 12.4"),
        (
            {},
            {"COLABENV_CUDA_VERSION": "12.4.dev0"},
            "COLABENV_CUDA_VERSION: '12.4.dev0' is not a CUDA version",
        ),
        ({"compute_capability": ["7.10"]}, {}, "--compute-capability: '7.10' is not a compute capability"),
        ({"compute_capability": ["99.9"]}, {}, "--compute-capability: '99.9' is not a compute capability"),
        (
            {"compute_capability": ["\u0667.\u0665"]},
            {},
            "--compute-capability: '\u0667.\u0665' is not a compute capability",
        ),
        (
            {},
            {"COLABENV_COMPUTE_CAPABILITY": "7.5,99.99"},
            "COLABENV_COMPUTE_CAPABILITY: '99.99' is not a compute capability",
        ),
        ({"python": "3"}, {}, "--python: '3' is not a Python version like 3.12"),
        (
            {},
            {"COLABENV_PYTHON_VERSION": "3"},
            "COLABENV_PYTHON_VERSION: '3' is not a Python version like 3.12",
        ),
        ({"python": "1!3.12"}, {}, "--python: '1!3.12' is not a Python version"),
        ({"python": "2.7"}, {}, "--python: '2.7' is not a Python version"),
        ({"cpu": True, "cuda": "12.4"}, {}, "--cpu cannot be combined with --cuda"),
    ],
)
def test_target_values_that_are_not_real_name_where_they_came_from(
    flags: dict[str, Any], environ: dict[str, str], message: str
) -> None:
    with pytest.raises(TargetError) as info:
        overrides(environ, **flags)
    assert str(info.value).startswith(message), str(info.value)


def test_cpu_flag_beats_the_gpu_variables() -> None:
    env = {"COLABENV_DRIVER_VERSION": "550.54.15", "COLABENV_COMPUTE_CAPABILITY": "7.5"}
    fingerprint = detect(overrides(env, cpu=True), probe=make_probe(smi=never_run))
    assert fingerprint.target.driver is None
    assert fingerprint.target.compute_capabilities == ()


@pytest.mark.parametrize(
    ("flags", "environ", "message"),
    [
        (
            {"driver": "550.54.15", "cuda": "11.8"},
            {},
            "--cuda 11.8 conflicts with --driver 550.54.15, which supports CUDA 12.4",
        ),
        (
            {"driver": "550.54.15", "cuda": "13.0"},
            {},
            "--cuda 13.0 conflicts with --driver 550.54.15, which supports CUDA 12.4",
        ),
        (
            {"cuda": "11.8"},
            {"COLABENV_DRIVER_VERSION": "580.65.06"},
            "--cuda 11.8 conflicts with COLABENV_DRIVER_VERSION 580.65.06, which supports CUDA 13.0",
        ),
        (
            {"driver": "550.54.15"},
            {"COLABENV_CUDA_VERSION": "11.8"},
            "COLABENV_CUDA_VERSION 11.8 conflicts with --driver 550.54.15",
        ),
    ],
)
def test_cuda_that_the_driver_does_not_support_is_an_error_naming_both(
    flags: dict[str, Any], environ: dict[str, str], message: str
) -> None:
    with pytest.raises(TargetError) as info:
        detect(overrides(environ, **flags), probe=make_probe())
    assert str(info.value).startswith(message), str(info.value)
    assert "give one of them" in str(info.value)


def test_cuda_against_the_detected_driver_says_which_to_drop() -> None:
    with pytest.raises(TargetError) as info:
        detect(overrides(cuda="13.0"), probe=make_probe(smi=smi_runner(T4)))
    assert str(info.value) == (
        "--cuda 13.0 conflicts with the detected driver 550.54.15, which supports CUDA 12.4:"
        " drop --cuda, or give --driver for the host you mean"
    )


@pytest.mark.parametrize(
    ("driver", "cuda"),
    [
        ("550.54.15", "12.4"),
        ("550.54.15", "12.2"),
        ("550.40.07", "12.4"),
        ("595.10.01", "14.0"),
        ("440.33.01", "10.2"),
    ],
)
def test_cuda_the_driver_may_support_is_taken(driver: str, cuda: str) -> None:
    fingerprint = detect(overrides(driver=driver, cuda=cuda), probe=make_probe())
    assert (fingerprint.target.driver, fingerprint.target.cuda) == (Version(driver), Version(cuda))


def test_python_override() -> None:
    fingerprint = detect(overrides(python="3.12"), probe=make_probe())
    assert fingerprint.target.python == Version("3.12")
    assert fingerprint.target.python_minor == "3.12"
    full = detect(overrides(python="3.14.1"), probe=make_probe())
    assert full.target.python.release == (3, 14, 1)
    assert full.target.python_minor == "3.14"
    default = detect(probe=make_probe())
    assert default.target.python.release == (3, 11, 13)
    assert default.python_full == "3.11.13"


def test_installed_from_replaces_the_scan() -> None:
    freeze = RUNTIMES / "colab-2025.10" / "pip-freeze.txt"
    probe = make_probe(dists=[("torch", "9.9.9")])
    fingerprint = detect(overrides(installed_from=str(freeze)), probe=probe)
    assert fingerprint.target.installed.get("torch") is not None
    assert fingerprint.target.installed.version_of("torch") == Version("2.8.0+cu126")


# ---------------------------------------------------------------------------------------------
# Runtime, platform, JSON


@pytest.mark.parametrize(
    ("environ", "existing", "dists", "kind"),
    [
        ({"COLAB_RELEASE_TAG": "release-colab_20250101-060111_RC00"}, (), (), RuntimeKind.COLAB),
        ({"COLAB_GPU": ""}, (), (), RuntimeKind.GENERIC),
        ({"COLAB_GPU": "0"}, (), (), RuntimeKind.COLAB),
        ({}, ("/content",), (("google-colab", "1.0.0"),), RuntimeKind.GENERIC),
        ({"COLAB_RELEASE_TAG": ""}, ("/content",), (("google-colab", "1.0.0"),), RuntimeKind.GENERIC),
        ({}, ("/content",), (), RuntimeKind.GENERIC),
        ({"KAGGLE_KERNEL_RUN_TYPE": "Interactive"}, (), (), RuntimeKind.KAGGLE),
        ({"KAGGLE_URL_BASE": "https://www.kaggle.com"}, (), (), RuntimeKind.KAGGLE),
        ({}, ("/kaggle/input",), (), RuntimeKind.KAGGLE),
        ({}, (), (), RuntimeKind.GENERIC),
    ],
)
def test_runtime_kind(
    environ: dict[str, str],
    existing: tuple[str, ...],
    dists: tuple[tuple[str, str], ...],
    kind: RuntimeKind,
) -> None:
    probe = make_probe(environ={"PATH": "/usr/bin", **environ}, existing=existing, dists=dists)
    assert detect(probe=probe).runtime is kind


COLAB_VALUES: list[tuple[str | None, bool]] = [
    (None, False),
    ("", False),
    ("0", True),
    ("1", True),
    (" ", True),
]
"""Each value of a Colab variable, and whether it makes the host Colab: set and not empty."""


def _bash_says_colab(environ: Mapping[str, str], cwd: Path) -> bool:
    from colabenv.script.bash import state_dir_lines
    from colabenv.script.state import COLAB_STATE_DIR

    lines = ["set -euo pipefail", "fail() { exit 3; }", *state_dir_lines(), 'printf %s "$state_dir"']
    program = "\n".join(lines)
    done = subprocess.run(
        ["bash", "-c", program], capture_output=True, text=True, env=dict(environ), cwd=cwd, timeout=30
    )
    assert done.returncode == 0, done.stderr
    return done.stdout == COLAB_STATE_DIR


@pytest.mark.parametrize("variable", ["COLAB_GPU", "COLAB_RELEASE_TAG"])
@pytest.mark.parametrize(("value", "colab"), COLAB_VALUES, ids=["unset", "empty", "0", "1", "space"])
def test_detect_the_state_directory_and_the_script_agree_on_colab(
    variable: str, value: str | None, colab: bool, tmp_path: Path
) -> None:
    """One rule: detect's runtime (which bootstrap() reads), the state directory in Python and
    the script's bash say Colab for the same values of each Colab variable."""
    from colabenv.script.state import COLAB_STATE_DIR, state_dir

    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    if value is not None:
        environ[variable] = value
    fingerprint = detect(probe=make_probe(environ=environ))
    assert (fingerprint.runtime is RuntimeKind.COLAB) is colab
    assert (fingerprint.state_dir == Path(COLAB_STATE_DIR)) is colab
    assert (state_dir(environ) == Path(COLAB_STATE_DIR)) is colab
    assert _bash_says_colab(environ, tmp_path) is colab


def test_state_dir_follows_the_runtime() -> None:
    colab = make_probe(environ={"COLAB_RELEASE_TAG": "x"})
    assert detect(probe=colab).state_dir == Path("/content/.colabenv")
    explicit = make_probe(environ={"COLAB_RELEASE_TAG": "x", "COLABENV_STATE_DIR": "/tmp/st"})
    assert detect(probe=explicit).state_dir == Path("/tmp/st")


def test_platform_tag_normalisation() -> None:
    assert platform_tag("linux-x86_64") == "linux_x86_64"
    assert platform_tag("linux-aarch64") == "linux_aarch64"
    assert platform_tag("macosx-11.0-arm64") == "macosx_11_0_arm64"
    # a Linux platform naming no machine takes the machine's, by the interpreter's one rule
    assert platform_tag("linux", "arm64") == "linux_aarch64"
    assert platform_tag("linux", "riscv64") == "linux"


def test_json_shape_shows_frameworks_and_cuda_wheels_under_installed() -> None:
    dists = [
        ("torch", "2.8.0+cu126"),
        ("nvidia-cudnn-cu12", "9.10.2.21"),
        ("numpy", "2.0.2"),
        ("nvidia-ml-py", "12.575.51"),
        ("jax-cuda12-plugin", "0.5.3"),
        ("cuda-toolkit", "12.8.1"),
    ]
    fingerprint = detect(probe=make_probe(smi=smi_runner(T4), dists=dists))
    data = fingerprint_to_json(fingerprint)
    assert list(data)[:6] == ["target", "gpus", "runtime", "installed", "packages", "notes"]
    assert data["target"] == {
        "driver": "550.54.15",
        "cuda": "12.4",
        "compute_capabilities": ["7.5"],
        "python": "3.11",
        "platform": "linux_x86_64",
        "accelerator": "nvidia",
        "tpu": None,
    }
    assert data["gpus"] == [
        {"name": "Tesla T4", "compute_capability": "7.5", "memory_total_mib": 15360, "memory_free_mib": 15095}
    ]
    assert data["installed"] == {
        "cuda-toolkit": "12.8.1",
        "jax-cuda12-plugin": "0.5.3",
        "nvidia-cudnn-cu12": "9.10.2.21",
        "torch": "2.8.0+cu126",
    }
    assert data["packages"] == {"numpy": "2.0.2", "nvidia-ml-py": "12.575.51"}
    assert len(fingerprint.target.installed) == 6
    json.dumps(data)


# ---------------------------------------------------------------------------------------------
# Installed distributions


def test_scan_reads_dist_info_names_without_importing(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for directory in (first, second):
        directory.mkdir()
    (first / "torch-2.6.0+cu124.dist-info").mkdir()
    (first / "nvidia_cudnn_cu12-9.1.0.70.dist-info").mkdir()
    (first / "Legacy_Pkg-1.2-py3.11.egg-info").mkdir()
    odd = first / "odd.dist-info"
    odd.mkdir()
    (odd / "METADATA").write_text("Metadata-Version: 2.1\nName: Odd-Thing\nVersion: 0.3\n")
    (first / "nometadata.dist-info").mkdir()
    (second / "torch-2.5.1.dist-info").mkdir()
    (second / "numpy-2.0.2.dist-info").mkdir()
    found = dict(_installed_distributions([str(first), str(second), str(tmp_path / "missing")]))
    assert found == {
        "torch": "2.6.0+cu124",
        "nvidia-cudnn-cu12": "9.1.0.70",
        "legacy-pkg": "1.2",
        "odd-thing": "0.3",
        "numpy": "2.0.2",
    }


def test_detect_imports_no_framework(tmp_path: Path) -> None:
    """A torch on sys.path is listed from its metadata, never imported."""
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    marker = tmp_path / "imported"
    (site / "torch" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (site / "torch-2.8.0+cu126.dist-info").mkdir()
    code = (
        "import sys, json\n"
        "from colabenv.host.detect import detect, fingerprint_to_json\n"
        "fp = detect()\n"
        "heavy = [m for m in ('torch', 'tensorflow', 'jax', 'rich') if m in sys.modules]\n"
        "print(json.dumps([fingerprint_to_json(fp)['installed'], heavy]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=60
    )
    installed, heavy = json.loads(out.stdout)
    assert installed["torch"] == "2.8.0+cu126"
    assert heavy == []
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------
# pip freeze files


def test_freeze_colab_2025_07() -> None:
    installed = read_freeze(RUNTIMES / "colab-2025.07" / "pip-freeze.txt")
    assert installed.get("torch") is not None
    assert installed.get("torch").version == "2.6.0+cu124"  # type: ignore[union-attr]
    assert installed.version_of("torchvision") == Version("0.21.0+cu124")
    assert installed.version_of("torchaudio") == Version("2.6.0+cu124")
    assert installed.version_of("tensorflow") == Version("2.18.0")
    assert installed.version_of("jax") == Version("0.5.2")
    assert installed.version_of("nvidia-cudnn-cu12") == Version("9.3.0.75")
    assert installed.version_of("google-colab") == Version("1.0.0")
    assert installed.version_of("lightgbm") == Version("4.5.0")
    assert installed.version_of("cudf-cu12") == Version("25.2.1")
    assert installed.version_of("tensorflow-decision-forests") == Version("1.11.0")
    assert installed.get("jupyter-kernel-gateway") is None
    assert len(installed) > 600


def test_freeze_colab_2025_10() -> None:
    installed = read_freeze(RUNTIMES / "colab-2025.10" / "pip-freeze.txt")
    assert installed.version_of("torch") == Version("2.8.0+cu126")
    assert installed.version_of("tensorflow") == Version("2.19.0")
    assert installed.version_of("jax") == Version("0.5.3")
    assert installed.version_of("nvidia-cudnn-cu12") == Version("9.10.2.21")


def test_freeze_line_kinds(tmp_path: Path) -> None:
    freeze = tmp_path / "freeze.txt"
    freeze.write_text(
        "\ufeff# comment\n"
        "\n"
        "-e git+https://github.com/org/repo@abc#egg=editable_pkg\n"
        "-e /src/local\n"
        "--extra-index-url https://example.invalid/simple\n"
        "Foo_Bar==1.0\n"
        "legacy===2019.weird\n"
        "pkg[extra]==3.0\n"
        "torch @ https://example.invalid/whl/cu124/torch-2.6.0%2Bcu124-cp311-cp311-linux_x86_64.whl#sha256=00\n"
        "sdist @ file:///tmp/dist/sdist-0.4.tar.gz\n"
        "vcs @ git+https://github.com/org/vcs@0123\n"
        "trailing==1.1  # pinned by hand\n"
    )
    installed = read_freeze(freeze)
    assert {d.name: d.version for d in installed.dists} == {
        "foo-bar": "1.0",
        "legacy": "2019.weird",
        "pkg": "3.0",
        "torch": "2.6.0+cu124",
        "sdist": "0.4",
        "trailing": "1.1",
    }


@pytest.mark.parametrize("bad", ["numpy>=1.0", "numpy", "numpy==1.*", "not a requirement !!"])
def test_freeze_bad_line_names_file_and_line(tmp_path: Path, bad: str) -> None:
    freeze = tmp_path / "freeze.txt"
    freeze.write_text(f"ok==1.0\n# c\n{bad}\n")
    with pytest.raises(TargetError) as info:
        read_freeze(freeze)
    assert str(info.value).startswith(f"{freeze}: line 3: ")


def test_freeze_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"absent\.txt: cannot read: no such file"):
        read_freeze(tmp_path / "absent.txt")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory", "not-utf8"])
def test_freeze_that_is_no_regular_text_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    path = {"dev-zero": Path("/dev/zero")}.get(kind, tmp_path / "freeze")
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "not-utf8":
        path.write_bytes(b"numpy==1.0\n\xff\n")
    words = {
        "fifo": "is a FIFO",
        "dev-zero": "is a character device",
        "directory": "is a directory",
        "not-utf8": "not UTF-8 text (byte 11)",
    }[kind]
    started = time.monotonic()
    with pytest.raises(InputError) as info:
        read_freeze(path)
    assert time.monotonic() - started < 1
    assert str(info.value).startswith(f"{path}: ") and words in str(info.value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=500))
def test_arbitrary_freeze_text_is_parsed_or_refused(tmp_path: Path, text: str) -> None:
    freeze = tmp_path / "freeze.txt"
    freeze.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        result = read_freeze(freeze)
    except TargetError as error:
        assert str(error).startswith(str(freeze))
    else:
        assert isinstance(result, InstalledSet)


# ---------------------------------------------------------------------------------------------
# Framework builds and warnings (pure)


def _catalog_with_torch_28() -> Catalog:
    from colabenv.catalog.load import shipped_catalog

    shipped = shipped_catalog()
    archs = tuple(
        Arch.parse(a)
        for a in ("sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120")
    )
    variant = Variant("cu128", Version("12.8"), None, "cu128", None, archs, (), None, Source("t"))
    release = Release(
        Framework.TORCH, Version("2.8.0"), SpecifierSet(">=3.9"), (variant,), "cu128", (), Source("t")
    )
    return Catalog(shipped.toolkits, shipped.major_lines, (*shipped.releases, release))


def _target(driver: str | None, caps: Sequence[str], dists: Mapping[str, str]) -> Target:
    return Target(
        device_of(
            Version(driver) if driver else None, None, tuple(ComputeCapability.parse(c) for c in caps), None
        ),
        Version("3.12"),
        installed=InstalledSet.from_mapping(dists),
    )


def test_no_kernels_warning_for_an_old_gpu() -> None:
    target = _target("570.124.06", ["6.0", "7.5"], {"torch": "2.8.0+cu128"})
    assert build_warnings(target, _catalog_with_torch_28()) == ("torch 2.8.0+cu128 has no kernels for sm_60",)


def test_no_kernels_warning_from_the_shipped_catalog() -> None:
    from colabenv.catalog.load import shipped_catalog

    target = _target("550.54.15", ["3.7", "7.5"], {"torch": "2.6.0+cu124"})
    assert build_warnings(target, shipped_catalog()) == ("torch 2.6.0+cu124 has no kernels for sm_37",)


@pytest.mark.parametrize(("platform", "warned"), [("linux_x86_64", True), ("linux_aarch64", False)])
def test_the_kernels_warning_reads_the_build_of_the_hosts_platform(platform: str, warned: bool) -> None:
    """A Jetson Thor (sm_110) runs torch's linux_aarch64 cu130 build, whose list has sm_110;
    the x86-64 cu130 build of the same name has none."""
    from colabenv.catalog.load import shipped_catalog

    target = dataclasses.replace(_target("580.65.06", ["11.0"], {"torch": "2.9.0+cu130"}), platform=platform)
    expected = ("torch 2.9.0+cu130 has no kernels for sm_110",) if warned else ()
    assert build_warnings(target, shipped_catalog()) == expected


def test_cuda_major_above_the_driver_floor_warns() -> None:
    from colabenv.catalog.load import shipped_catalog

    target = _target("550.54.15", ["9.0"], {"torch": "2.9.0+cu130"})
    warnings = build_warnings(target, shipped_catalog())
    assert warnings == (
        "torch 2.9.0+cu130 is built for CUDA 13, which needs driver >= 580.65.06; this driver is 550.54.15",
    )


def test_framework_builds_from_local_tags_and_plugins() -> None:
    installed = InstalledSet.from_mapping(
        {"torch": "2.8.0+cu126", "jax": "0.5.3", "jax-cuda12-plugin": "0.5.3", "tensorflow": "2.99.0"}
    )
    builds = {b.name: b for b in framework_builds(installed, None)}
    assert builds["torch"].cuda == Version("12.6")
    assert builds["torch"].build == "CUDA 12.6"
    assert builds["jax"].cuda == Version("12")
    assert builds["tensorflow"].build == "unknown"
    cpu = framework_builds(InstalledSet.from_mapping({"torch": "2.8.0+cpu", "jax": "0.5.3"}), None)
    assert [b.build for b in cpu] == ["CPU (no CUDA plugin)", "CPU"]


def test_cuda_from_local_tag() -> None:
    assert cuda_from_local_tag("cu126") == Version("12.6")
    assert cuda_from_local_tag("cu118") == Version("11.8")
    assert cuda_from_local_tag("cu130") == Version("13.0")
    assert cuda_from_local_tag("cpu") is None
    assert cuda_from_local_tag(None) is None


def test_old_nvidia_smi_without_compute_cap_still_gives_driver_and_cuda() -> None:
    banner = (SMI / "colab-t4" / "banner.txt").read_text()

    def run(argv: Sequence[str], timeout: float) -> Completed:
        if any(a.startswith("--query-gpu") for a in argv):
            return Completed(
                tuple(argv), 2, 'Field "compute_cap" is not a valid field to query.\n', "", False
            )
        return Completed(tuple(argv), 0, banner, "", False)

    fingerprint = detect(probe=make_probe(smi=run))
    assert fingerprint.target.driver == Version("550.54.15")
    assert fingerprint.target.cuda == Version("12.4")
    assert fingerprint.target.compute_capabilities == ()
    assert 'nvidia-smi: exited 2: Field "compute_cap" is not a valid field to query.' in (fingerprint.notes)


def test_failing_driver_note_is_not_repeated() -> None:
    fingerprint = detect(probe=make_probe(smi=smi_runner(SMI / "driver-failed")))
    assert len(fingerprint.notes) == len(set(fingerprint.notes))
    assert sum(n.startswith("nvidia-smi: exited 9") for n in fingerprint.notes) == 1


def test_cuda_visible_devices_is_noted() -> None:
    probe = make_probe(
        smi=smi_runner(SMI / "kaggle-2xt4"), environ={"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "1"}
    )
    fingerprint = detect(probe=probe)
    assert len(fingerprint.gpus) == 2
    assert "CUDA_VISIBLE_DEVICES='1': frameworks see only those GPUs" in fingerprint.notes


# ---------------------------------------------------------------------------------------------
# What the host reports, read strictly; detect and detect_gpu without a circle


def test_detect_gpu_and_the_host_module_do_not_import_detect() -> None:
    import ast

    for module in ("gpu", "probe"):
        tree = ast.parse((REPO / "colabenv" / "host" / f"{module}.py").read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert "colabenv.host.detect" not in imported, module


def test_nvml_is_left_alone_without_a_device_node_only_when_the_probe_says_so() -> None:
    nvml = nvml_from_expected("colab-t4")
    needs = dataclasses.replace(make_probe(nvml=nvml), nvml_needs_device=True)
    fingerprint = detect(probe=needs)
    assert nvml.calls == []
    assert "NVML: skipped, no NVIDIA device or kernel module on this host" in fingerprint.notes
    with_node = dataclasses.replace(needs, path_exists=lambda p: str(p) == "/dev/nvidiactl")
    assert_matches(detect(probe=with_node), expected("colab-t4"))
    assert nvml.calls == ["init", "shutdown"]


@pytest.mark.parametrize("memory", ["inf", "-inf", "nan", "1e400", "-5", "99999999999", "12 GB"])
def test_smi_memory_that_is_no_size_is_unknown_with_a_problem(memory: str) -> None:
    parsed = parse_smi_query(f"Tesla T4, 7.5, {memory}, 15095, 550.54.15\n")
    assert parsed.gpus[0].memory_total_mib is None
    assert parsed.gpus[0].memory_free_mib == 15095
    assert parsed.problems == (f"GPU 'Tesla T4': memory.total {memory!r} is not a size in MiB",)


def test_smi_reporting_infinite_memory_is_a_note_through_detect() -> None:
    def run(argv: Sequence[str], timeout: float) -> Completed:
        if any(a.startswith("--query-gpu") for a in argv):
            return Completed(tuple(argv), 0, "Tesla T4, 7.5, inf, nan, 550.54.15\n", "", False)
        return Completed(tuple(argv), 0, (T4 / "banner.txt").read_text(), "", False)

    fingerprint = detect(probe=make_probe(smi=run))
    assert fingerprint.gpus[0].memory_total_mib is None
    assert fingerprint.gpus[0].memory_free_mib is None
    assert "nvidia-smi: GPU 'Tesla T4': memory.total 'inf' is not a size in MiB" in fingerprint.notes


def test_nvml_memory_that_is_no_size_is_unknown() -> None:
    class HugeMemory(FakeNvml):
        def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any:
            return FakeMemory(10**40, -1)

    nvml = HugeMemory(devices=[FakeDevice("Tesla T4", (7, 5), 15360, 15000)])
    fingerprint = detect(probe=make_probe(nvml=nvml))
    assert fingerprint.gpus[0].memory_total_mib is None
    assert fingerprint.gpus[0].memory_free_mib is None
    assert any(n.startswith("NVML: GPU 0 memory unknown (reported") for n in fingerprint.notes)


@pytest.mark.parametrize("capability", ["7.10", "99.9", "99.99", "0.5", "\u0667.\u0665", "7.5a"])
def test_smi_compute_capability_that_is_no_real_one_is_a_problem(capability: str) -> None:
    parsed = parse_smi_query(f"Tesla T4, {capability}, 15360, 15095, 550.54.15\n")
    assert parsed.gpus == ()
    assert parsed.problems == (f"GPU 'Tesla T4': compute capability {capability!r} unknown",)


def test_nvml_compute_capability_that_is_no_real_one_skips_the_gpu() -> None:
    nvml = FakeNvml(devices=[FakeDevice("Odd", (7, 10), 1, 1), FakeDevice("T4", (7, 5), 1, 1)])
    fingerprint = detect(probe=make_probe(nvml=nvml))
    assert [g.name for g in fingerprint.gpus] == ["T4"]
    assert any(
        n.startswith("NVML: GPU 0 skipped ('7.10' is not a compute capability") for n in fingerprint.notes
    )


@pytest.mark.parametrize(
    "driver", ["1!550.54.15", "550.54.15+local", "550.54.15rc1", "5.1", "\u0665\u0665\u0660.54.15", "99999.1"]
)
def test_driver_versions_that_are_no_real_ones_are_not_read(driver: str) -> None:
    assert parse_kernel_module_version(f"{driver}\n") is None
    nvml = FakeNvml(driver=driver, devices=[FakeDevice("Tesla T4", (7, 5), 1, 1)])
    fingerprint = detect(probe=make_probe(nvml=nvml))
    assert fingerprint.target.driver is None
    assert f"NVML: driver version {driver!r} is not a driver version" in fingerprint.notes


def test_nvml_encoded_cuda_that_is_no_real_one_is_none() -> None:
    assert cuda_from_nvml(10**30) is None
    assert cuda_from_nvml(12040) == Version("12.4")


@pytest.mark.parametrize(
    ("flags", "torch", "freeze_file"),
    [
        ({"cpu": True}, "2.11.0+cpu", "pip-freeze.txt"),
        ({"driver": "550.54.15", "compute_capability": ("7.5",)}, "2.11.0+cu128", "pip-freeze.gpu.txt"),
        ({"tpu": "v5e-1"}, "2.9.0+cpu", "pip-freeze.tpu.txt"),  # torch_xla 2.9 there
    ],
)
def test_runtime_installs_its_image_for_the_target_not_the_host(
    flags: dict[str, Any], torch: str, freeze_file: str
) -> None:
    """``--runtime``: what is installed is the runtime's image for the target's accelerator
    (the host's own distributions are not read), and Python is the runtime's."""
    from colabenv.catalog.runtimes import shipped_runtimes

    wanted = resolve_overrides(
        TargetFlags(runtime="colab-2026.07", **flags),
        {},
        tpu_facts=shipped_tpu,
        runtime_facts=shipped_runtimes,
    )
    host = make_probe(smi=never_run, dists=[("torch", "1.0.0"), ("host-only", "1")])
    fingerprint = detect(wanted, probe=host)
    installed = fingerprint.target.installed
    assert installed.version_of("torch") == Version(torch)
    assert installed.get("host-only") is None
    assert (installed.get("tensorflow") is None) == ("tpu" in flags)
    assert fingerprint.python_full == "3.12.13"
    assert any(freeze_file in note for note in fingerprint.notes)
