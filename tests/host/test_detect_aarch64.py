"""``detect`` and ``resolve`` on recorded aarch64 NVIDIA hosts (issue 36): a GH200 and a DGX Spark
(GB10, sm_121), from their real nvidia-smi outputs (``tests/data/detect/smi/<host>/SOURCE.md``)
through the stand-in nvidia-smi and the stand-in NVML, with the platform tag the interpreter
reports there. NVIDIA is read as on x86-64; the platform is the probe's, and the resolver takes
the aarch64 builds for it (``docs/aarch64.md``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

import colabenv.host.detect as detect_module
from colabenv.catalog.load import load_catalog
from colabenv.cli.main import main
from colabenv.host.detect import detect
from colabenv.host.probe import HostProbe
from colabenv.models import Framework
from tests.host.test_detect import (
    SMI,
    expected,
    make_probe,
    nvml_from_expected,
    nvml_memory_notes,
    smi_runner,
)
from tests.support.resolving import chosen, resolve_json

GOLDEN = Path(__file__).resolve().parents[2] / "profiles" / "golden"
ARM_HOSTS = ("gh200-aarch64", "dgx-spark-gb10")
SOURCES = ("nvidia-smi", "nvml")
AARCH64 = "linux_aarch64"
PYTHON = "3.12.3"
"""The probe's interpreter (not part of the recordings; the GH200's page shows Python 3.12.3)."""


def arm_probe(host: str, source: str, platform: str = AARCH64) -> HostProbe:
    """The recorded ``host`` read through ``source`` by an interpreter reporting ``platform``."""
    if source == "nvml":
        return make_probe(nvml=nvml_from_expected(host), platform_tag=platform, python_version=PYTHON)
    return make_probe(smi=smi_runner(SMI / host), platform_tag=platform, python_version=PYTHON)


def on_host(monkeypatch: pytest.MonkeyPatch, host: str, source: str = "nvidia-smi") -> None:
    """The commands run in this process see ``host`` as the machine they run on."""
    probe = arm_probe(host, source)
    monkeypatch.setattr(detect_module, "live_probe", lambda environ=None: probe)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("host", ARM_HOSTS)
def test_detect_json_shows_the_recorded_aarch64_host(
    host: str, source: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    on_host(monkeypatch, host, source)
    assert main(["detect", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    exp = expected(host)
    assert data["target"] == {
        "driver": exp["driver"],
        "cuda": "13.0",
        "compute_capabilities": exp["compute_capabilities"],
        "python": "3.12",
        "platform": AARCH64,
        "accelerator": "nvidia",
        "tpu": None,
    }
    assert data["gpus"] == exp["gpus"]
    if source == "nvml":  # a GB10's memory: "Not Supported", a note; the GPU is kept
        assert tuple(data["notes"]) == nvml_memory_notes(host)
    else:  # nvidia-smi's [N/A] is no problem to report
        assert data["notes"] == ["NVML: not available (NVML Shared Library Not Found)"]


@pytest.mark.parametrize("platform", [AARCH64, "linux_x86_64"])
@pytest.mark.parametrize("host", ARM_HOSTS)
def test_the_platform_is_the_interpreters_whatever_this_machine_is(host: str, platform: str) -> None:
    """One of the two tags is not this machine's: detection reading it from anywhere but the
    probe (the interpreter's ``sysconfig``) fails one of them."""
    for source in SOURCES:
        assert detect(probe=arm_probe(host, source, platform)).target.platform == platform


@pytest.mark.parametrize(("host", "runs"), [("gh200-aarch64", "sm_90"), ("dgx-spark-gb10", "sm_120")])
def test_the_golden_pytorch_profile_takes_the_aarch64_cu130_build(
    host: str, runs: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A GH200 runs the aarch64 cu130 build's sm_90 code; a GB10 (sm_121) its sm_120 code,
    the list having no sm_121 (NVIDIA's rule for a major)."""
    on_host(monkeypatch, host)
    code, resolution, err = resolve_json(capsys, str(GOLDEN / "pytorch.toml"), "--offline")
    assert code == 0, err
    assert resolution["target"]["platform"] == AARCH64  # type: ignore[index]
    torch = chosen(resolution)
    assert (torch["version"], torch["variant"]) == ("2.11.0", "cu130"), torch
    capability = expected(host)["compute_capabilities"][0]
    assert f"kernels for sm_{capability.replace('.', '')}" in torch["reason"]
    release = load_catalog().release(Framework.TORCH, Version("2.11.0"))
    assert release is not None
    arm = release.on_platform(AARCH64).variant("cu130")
    assert arm is not None and AARCH64 in arm.platforms
    archs = {str(a) for a in arm.archs}
    assert runs in archs and "sm_121" not in archs


@pytest.mark.parametrize("host", ARM_HOSTS)
def test_the_golden_jax_profile_pins_the_aarch64_cuda13_plugin(
    host: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The aarch64 build pins its plugin and PJRT (read from their aarch64 wheels); the x86-64
    build of the same release does not."""
    on_host(monkeypatch, host)
    code, resolution, err = resolve_json(capsys, str(GOLDEN / "jax.toml"), "--offline")
    assert code == 0, err
    jax = chosen(resolution, "jax")
    assert (jax["version"], jax["variant"]) == ("0.8.3", "cuda13"), jax
    assert "jax-cuda13-plugin==0.8.3" in jax["requirements"]
    assert "jax-cuda13-pjrt==0.8.3" in jax["requirements"]


def test_the_golden_tensorflow_profile_on_a_recorded_gh200_is_exit_3_naming_its_cpu_build(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    on_host(monkeypatch, "gh200-aarch64")
    code = main(["resolve", str(GOLDEN / "tensorflow.toml"), "--offline"])
    err = capsys.readouterr().err
    assert code == 3
    assert "and-cuda has no linux_aarch64 wheel in the catalog (linux_x86_64 only)" in err, err
    assert "cpu is the only linux_aarch64 build of tensorflow" in err, err
