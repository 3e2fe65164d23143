"""TPU hosts: the probe over recorded device nodes and environments, ``--tpu``/``COLABENV_TPU``,
and what ``detect`` and ``diff`` show of the accelerator."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from colabenv.catalog.load import shipped_catalog, shipped_tpu
from colabenv.catalog.tpu import parse_accelerator_type
from colabenv.errors import TargetError
from colabenv.host.detect import detect, fingerprint_to_json
from colabenv.host.probe import HostProbe, list_dir
from colabenv.host.tpu import probe_tpu
from colabenv.models import Accelerator, RuntimeKind, TargetOverrides, TpuFacts, TpuTarget
from colabenv.resolve.overrides import TargetFlags, resolve_overrides
from tests.support.fixtures import Runner
from tests.support.paths import DATA

HOSTS = DATA / "tpu"
HOST_NAMES = sorted(p.name for p in HOSTS.iterdir() if p.is_dir())


def _no_nvml() -> Any:
    raise AssertionError("NVML must not be loaded on a TPU host")


def tpu_probe(
    root: Path, environ: Mapping[str, str] | None = None, dists: tuple[tuple[str, str], ...] = ()
) -> HostProbe:
    """A probe of a recorded host: its device nodes under ``root``, its environment, no GPU
    sources (NVML and nvidia-smi would fail the test if asked)."""

    def no_smi(argv: Any, timeout: float) -> Any:
        raise AssertionError("nvidia-smi must not run")

    return HostProbe(
        environ=dict(environ or {}),
        distributions=lambda: list(dists),
        python_version="3.12.11",
        python_implementation="CPython",
        platform_tag="linux_x86_64",
        glibc="2.35",
        load_nvml=_no_nvml,
        path_exists=lambda path: (root / str(path).lstrip("/")).exists(),
        which=lambda name: None,
        run=no_smi,
        root=root,
        list_dir=list_dir,
    )


def recorded(name: str) -> tuple[HostProbe, dict[str, Any]]:
    folder = HOSTS / name
    environ = json.loads((folder / "environ.json").read_text())
    expected: dict[str, Any] = json.loads((folder / "expected.json").read_text())
    return tpu_probe(folder / "root", environ), expected


@pytest.mark.parametrize("name", HOST_NAMES)
def test_recorded_hosts(name: str) -> None:
    probe, expected = recorded(name)
    fingerprint = detect(probe=probe)
    target = fingerprint_to_json(fingerprint)["target"]
    assert target["accelerator"] == expected["accelerator"]
    assert target["tpu"] == expected["tpu"]
    assert fingerprint.runtime is RuntimeKind(expected["runtime"])
    assert target["driver"] is None and target["cuda"] is None


def test_a_tpu_host_leaves_the_nvidia_sources_alone() -> None:
    probe, _ = recorded("colab-v6e-1")
    notes = detect(probe=probe).notes
    assert "a TPU target: NVIDIA GPU detection skipped" in notes
    assert not any(note.startswith(("NVML", "nvidia-smi")) for note in notes)
    assert any("device 0x006f" in note for note in notes)


def test_the_generation_of_a_shared_pci_id_is_left_unknown_with_the_reason() -> None:
    probe, _ = recorded("v2-or-v3-unnamed")
    fingerprint = detect(probe=probe)
    assert fingerprint.target.tpu == TpuTarget(None, None, 4)
    assert any("0x0027 is v2 or v3" in note for note in fingerprint.notes)


def test_the_pci_device_is_believed_over_the_environment() -> None:
    root = HOSTS / "colab-v6e-1" / "root"
    report = probe_tpu(tpu_probe(root, {"TPU_ACCELERATOR_TYPE": "v5litepod-1"}), shipped_tpu)
    assert report.tpu == TpuTarget("v6e", "v5litepod-1", 1)
    assert any("the PCI device is believed" in note for note in report.notes)


def test_an_accelerator_type_alone_is_no_tpu() -> None:
    probe, _ = recorded("tpu-image-without-tpu")
    fingerprint = detect(probe=probe)
    assert fingerprint.target.accelerator is Accelerator.CPU
    assert any("has no TPU device" in note for note in fingerprint.notes)


def test_a_remote_tpu_node_is_explained_not_taken() -> None:
    probe, _ = recorded("colab-tpu-node-legacy")
    fingerprint = detect(probe=probe)
    assert fingerprint.target.tpu is None
    assert any("COLAB_TPU_ADDR set" in note and "TPU VM" in note for note in fingerprint.notes)


def test_vfio_groups_without_a_tpu_are_not_counted() -> None:
    probe, _ = recorded("gvnic-and-vfio-no-tpu")
    report = probe_tpu(probe, shipped_tpu)
    assert report.tpu is None
    assert any("not taken for a TPU" in note for note in report.notes)


def test_a_bad_accelerator_type_in_the_environment_is_a_note() -> None:
    root = HOSTS / "cloud-v4-8" / "root"
    report = probe_tpu(tpu_probe(root, {"TPU_ACCELERATOR_TYPE": "v4-8\x1b[2J"}), shipped_tpu)
    assert report.tpu == TpuTarget("v4", None, 4)
    assert any(note.startswith("TPU_ACCELERATOR_TYPE:") and "\x1b" not in note for note in report.notes)


def test_a_probe_built_by_hand_never_lists_this_machine(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "accel0").touch()
    probe = tpu_probe(tmp_path)
    assert probe_tpu(probe, shipped_tpu).tpu == TpuTarget(None, None, 1)
    unlisted = dataclasses.replace(probe, list_dir=None)
    assert probe_tpu(unlisted, shipped_tpu).tpu is None


@pytest.mark.parametrize(
    ("host", "reads_facts", "is_tpu"),
    [
        ("gvnic-and-vfio-no-tpu", True, False),
        ("tpu-image-without-tpu", True, False),
        ("colab-v6e-1", True, True),
    ],
)
def test_tpu_toml_is_read_only_for_a_host_that_may_have_a_tpu(
    host: str, reads_facts: bool, is_tpu: bool
) -> None:
    """Every detect probes for a TPU; the facts are loaded (once) only for a Google PCI device
    (gVNIC is one too) or an accelerator type in the environment."""
    probe, _ = recorded(host)
    calls: list[int] = []

    def load() -> TpuFacts:
        calls.append(1)
        return shipped_tpu()

    report = probe_tpu(probe, load)
    assert calls == ([1] if reads_facts else [])
    assert (report.tpu is not None) is is_tpu


def test_a_host_without_google_devices_or_an_accelerator_type_reads_no_tpu_toml(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "null").touch()

    def refuse() -> TpuFacts:
        raise AssertionError("tpu.toml loaded for a host without a TPU sign")

    assert probe_tpu(tpu_probe(tmp_path, {"COLAB_TPU_ADDR": "10.0.0.2:8470"}), refuse).tpu is None


def test_flags_for_another_target_skip_the_tpu_probe() -> None:
    probe, _ = recorded("kaggle-v3-8")
    assert detect(TargetOverrides(cpu=True), probe=probe).target.tpu is None
    nvidia = detect(
        TargetOverrides(driver=Version("550.54.15")), probe=probe, catalog_loader=lambda: shipped_catalog(())
    )
    assert nvidia.target.accelerator is Accelerator.NVIDIA


# ---------------------------------------------------------------------------------------------
# --tpu TYPE and COLABENV_TPU


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("v5e-1", TpuTarget("v5e", "v5e-1", 1)),
        ("v5litepod-8", TpuTarget("v5e", "v5litepod-8", 8)),
        ("V6E-4", TpuTarget("v6e", "v6e-4", 4)),
        ("v3-8", TpuTarget("v3", "v3-8", 4)),
        ("v2-8", TpuTarget("v2", "v2-8", 4)),
        ("v4-16", TpuTarget("v4", "v4-16", 8)),
        ("v5p-8", TpuTarget("v5p", "v5p-8", 4)),
        ("tpu7x-8", TpuTarget("tpu7x", "tpu7x-8", 4)),
        ("v6e", TpuTarget("v6e", "v6e", None)),
    ],
)
def test_accelerator_types(text: str, expected: TpuTarget) -> None:
    assert parse_accelerator_type(text, shipped_tpu()) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("v9-1", "'v9' is not a TPU generation colabenv knows"),
        ("v3-3", "3 is not a whole number of chips"),
        ("v5e-0", "is not a TPU type like v5e-1"),
        ("v5e_1", "is not a TPU type like v5e-1"),
        ("", "is not a TPU type"),
        ("v5e-1; rm -rf /", "is not a TPU type"),
        ("v" + "5" * 100, "is not a TPU type"),
    ],
)
def test_bad_accelerator_types(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_accelerator_type(text, shipped_tpu())


def overrides(flags: TargetFlags, environ: dict[str, str]) -> TargetOverrides:
    return resolve_overrides(flags, environ, tpu_facts=shipped_tpu)


def test_tpu_types_are_checked_against_the_facts_handed_in() -> None:
    """settings reads no catalog: the caller hands the TPU generations in, and they are loaded
    only when a TPU type is named."""
    asked: list[str] = []

    def facts() -> TpuFacts:
        asked.append("facts")
        v5e = shipped_tpu().generation("v5e")
        assert v5e is not None
        return TpuFacts((dataclasses.replace(v5e, name="v9z", type_prefixes=("v9z",)),))

    assert resolve_overrides(TargetFlags(driver="550.54.15"), {}, tpu_facts=facts).tpu is None
    assert asked == []
    assert resolve_overrides(TargetFlags(tpu="v9z-2"), {}, tpu_facts=facts).tpu == TpuTarget(
        "v9z", "v9z-2", 2
    )
    with pytest.raises(TargetError, match="'v5e' is not a TPU generation colabenv knows"):
        resolve_overrides(TargetFlags(tpu="v5e-1"), {}, tpu_facts=facts)
    assert asked == ["facts", "facts"]


def test_tpu_flag_and_variable() -> None:
    flag = overrides(TargetFlags(tpu="v5e-1"), {"COLABENV_DRIVER_VERSION": "550.54.15"})
    assert flag.tpu == TpuTarget("v5e", "v5e-1", 1)
    assert flag.driver is None
    assert flag.origin("tpu") == "--tpu"
    variable = overrides(TargetFlags(), {"COLABENV_TPU": "v6e-1"})
    assert variable.tpu == TpuTarget("v6e", "v6e-1", 1)
    assert variable.origin("tpu") == "COLABENV_TPU"
    assert overrides(TargetFlags(tpu="v6e-1"), {"COLABENV_TPU": "v5e-1"}).tpu == TpuTarget("v6e", "v6e-1", 1)


@pytest.mark.parametrize(
    ("flags", "environ"),
    [
        (TargetFlags(cpu=True), {"COLABENV_TPU": "v5e-1"}),
        (TargetFlags(driver="550.54.15"), {"COLABENV_TPU": "v5e-1"}),
    ],
)
def test_a_flag_for_another_target_beats_the_tpu_variable(
    flags: TargetFlags, environ: dict[str, str]
) -> None:
    assert overrides(flags, environ).tpu is None


@pytest.mark.parametrize(
    ("flags", "environ", "message"),
    [
        (TargetFlags(tpu="v5e-1", cpu=True), {}, "--tpu cannot be combined with --cpu"),
        (TargetFlags(tpu="v5e-1", driver="550.54.15"), {}, "with --driver"),
        (TargetFlags(tpu="v5e-1", cuda="12.4"), {}, "with --cuda"),
        (TargetFlags(tpu="v5e-1", compute_capability=("7.5",)), {}, "--compute-capability"),
        (
            TargetFlags(),
            {"COLABENV_TPU": "v5e-1", "COLABENV_CUDA_VERSION": "12.4"},
            "COLABENV_TPU and COLABENV_CUDA_VERSION are both set",
        ),
        (TargetFlags(tpu="v7-1"), {}, "--tpu: 'v7-1'"),
        (TargetFlags(), {"COLABENV_TPU": "nonsense"}, "COLABENV_TPU: 'nonsense'"),
    ],
)
def test_tpu_target_errors(flags: TargetFlags, environ: dict[str, str], message: str) -> None:
    with pytest.raises(TargetError, match=message):
        overrides(flags, environ)


def test_detect_json_carries_the_accelerator(runner: Runner) -> None:
    done = runner("detect", "--json", "--tpu", "v5litepod-8")
    assert done.returncode == 0, done.stderr
    target = json.loads(done.stdout)["target"]
    assert target["accelerator"] == "tpu"
    assert target["tpu"] == {"generation": "v5e", "accelerator_type": "v5litepod-8", "chips": 8}
    plain = runner("detect", env={"COLABENV_TPU": "v6e-1"})
    assert "accelerator: tpu: TPU v6e (v6e-1, 1 chip)" in plain.stdout.splitlines()
    cpu = json.loads(runner("detect", "--json", "--cpu").stdout)["target"]
    assert cpu["accelerator"] == "cpu" and cpu["tpu"] is None


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (("--tpu", "v5e-1", "--driver", "550.54.15"), {}, "--tpu cannot be combined with --driver"),
        (("--tpu", "v5e-1", "--cpu"), {}, "--tpu cannot be combined with --cpu"),
        (("--tpu", "v10-1"), {}, "not a TPU generation colabenv knows"),
        ((), {"COLABENV_TPU": "v5e-1", "COLABENV_DRIVER_VERSION": "550.54.15"}, "both set"),
    ],
)
def test_tpu_target_errors_exit_2(
    runner: Runner, args: tuple[str, ...], env: dict[str, str], message: str
) -> None:
    for command in (("render", "jax"), ("resolve", "jax"), ("detect",)):
        done = runner(*command, *args, env=env)
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""
        assert message in done.stderr
        assert "Traceback" not in done.stderr


def _fingerprint(tmp_path: Path, runner: Runner, name: str, *args: str) -> Path:
    done = runner("detect", "--json", *args)
    assert done.returncode == 0, done.stderr
    path = tmp_path / name
    path.write_text(done.stdout)
    return path


def test_diff_compares_the_accelerator(runner: Runner, tmp_path: Path) -> None:
    v5e = _fingerprint(tmp_path, runner, "v5e.json", "--tpu", "v5e-1", "--python", "3.12")
    v6e = _fingerprint(tmp_path, runner, "v6e.json", "--tpu", "v6e-1", "--python", "3.12")
    cpu = _fingerprint(tmp_path, runner, "cpu.json", "--cpu", "--python", "3.12")
    done = runner("diff", v5e, v6e)
    assert done.returncode == 1
    assert "accelerator\n  tpu generation: v5e -> v6e\n" in done.stdout
    assert "tpu accelerator type: v5e-1 -> v6e-1" in done.stdout
    moved = runner("diff", cpu, v6e)
    assert "  accelerator: cpu -> tpu\n" in moved.stdout
    assert "  tpu chips: (absent) -> 1\n" in moved.stdout
    assert runner("diff", v5e, v5e).returncode == 0


def test_diff_reads_fingerprints_from_before_the_accelerator(runner: Runner, tmp_path: Path) -> None:
    new = _fingerprint(
        tmp_path,
        runner,
        "new.json",
        "--driver",
        "550.54.15",
        "--compute-capability",
        "7.5",
        "--python",
        "3.12",
    )
    data = json.loads(new.read_text())
    del data["target"]["accelerator"], data["target"]["tpu"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    done = runner("diff", old, new)
    assert done.returncode == 0, done.stdout + done.stderr
    data["target"]["accelerator"] = ["tpu"]
    old.write_text(json.dumps(data))
    bad = runner("diff", old, new)
    assert bad.returncode == 2
    assert "target.accelerator: expected a string" in bad.stderr


def test_detect_names_a_tpu_build_by_its_runtime(runner: Runner, tmp_path: Path) -> None:
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("jax==0.6.2\njaxlib==0.6.2\nlibtpu==0.0.17\ntorch==2.8.0+cpu\ntorch-xla==2.8.1\n")
    tpu = runner("detect", "--tpu", "v5e-1", "--installed-from", freeze).stdout.splitlines()
    assert "framework: jax 0.6.2, built for TPU (libtpu 0.0.17)" in tpu
    assert "framework: torch 2.8.0+cpu, built for TPU (torch-xla 2.8.1)" in tpu
    cpu = runner("detect", "--cpu", "--installed-from", freeze).stdout.splitlines()
    assert "framework: jax 0.6.2, built for CPU (no CUDA plugin)" in cpu
    installed = json.loads(runner("detect", "--json", "--tpu", "v5e-1", "--installed-from", freeze).stdout)[
        "installed"
    ]
    assert installed["libtpu"] == "0.0.17" and installed["torch-xla"] == "2.8.1"


def test_a_gke_style_accelerator_name_leaves_the_pci_device_in_charge() -> None:
    """GKE images have carried ``TPU_ACCELERATOR_TYPE=tpu-v5p-slice`` (a node pool's
    accelerator name, not a slice type): a note, and the generation from the PCI bus."""
    root = HOSTS / "cloud-v5p-8" / "root"
    report = probe_tpu(tpu_probe(root, {"TPU_ACCELERATOR_TYPE": "tpu-v5p-slice"}), shipped_tpu)
    assert report.tpu == TpuTarget("v5p", None, 4)
    assert any(
        note.startswith("TPU_ACCELERATOR_TYPE: 'tpu-v5p-slice' is not a TPU type") for note in report.notes
    )
