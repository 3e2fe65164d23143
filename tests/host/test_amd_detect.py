"""``detect`` on AMD hosts with the ROCm tools (issue 36): the amdgpu driver's version from sysfs,
the ROCm version from ``.info/version`` or ``amd-smi version``, and the gfx of the KFD topology
cross-checked against ``rocminfo`` and ``amd-smi static --asic``.

Each host is a root of recorded files (tests/data/hosts/amd/*/SOURCE.md says where each came
from) with stand-in ``rocminfo`` and ``amd-smi`` executables on ``PATH`` that print the recorded
outputs (real processes, run through the probe's runner as on a host):

- ``rocminfo``: 4 x MI300X, KFD nodes 2 to 5, gfx942 (``mi300x-x4-tools/rocminfo.txt``);
- ``amd-smi version``: ROCm 6.1.0, ``amd-smi static --asic``: one MI308X, gfx942
  (``mi308x-amd-smi``, ROCm/amdsmi's CHANGELOG samples);
- ``sys/module/amdgpu/version``: ``6.12.12``, an MI300X host's (``mi300x-amdgpu-6.12.12``, from
  the rocminfo line ROCm/rocprofiler-sdk issue #66 quotes), copied in as recorded;
- ``.info/version``: ``6.4.0-15158``, rocm-core 6.4.0's (ROCm/rocm-systems
  ``projects/rocm-core/README.md``).

Each comes from another host than the KFD tree beside it; where that makes them disagree, the
disagreement is the point of the test.
"""

from __future__ import annotations

import json
import shutil
import stat
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from colabenv.cli import detect as detect_command
from colabenv.host.detect import detect, fingerprint_to_json
from colabenv.host.kfd import KFD_NODES
from colabenv.host.probe import ROCM_TOOL_TIMEOUT_S, HostProbe, list_dir
from colabenv.models import Accelerator, Fingerprint
from tests.host.test_detect import NO_NVML, overrides
from tests.support.paths import DATA

AMD = DATA / "hosts" / "amd"
ROCMINFO = AMD / "mi300x-x4-tools" / "rocminfo.txt"
AMD_SMI = AMD / "mi308x-amd-smi"
ROCM_FILE = "6.4.0-15158"
AMDGPU_FILE = AMD / "mi300x-amdgpu-6.12.12" / "sys/module/amdgpu/version"


def _root(
    tmp_path: Path,
    host: str,
    *,
    nodes: Sequence[int] | None = None,
    amdgpu: Path | None = AMDGPU_FILE,
    rocm: str | None = ROCM_FILE,
) -> Path:
    """A root with the KFD nodes of a recorded host (``nodes`` of them, or all), the amdgpu
    module's folder (with the recorded ``version`` file ``amdgpu`` where given) and an installed ROCm's
    ``.info/version`` where ``rocm`` is given."""
    root = tmp_path / "root"
    topology = root / KFD_NODES
    topology.mkdir(parents=True)
    if host:
        for node in (AMD / host / KFD_NODES).iterdir():
            if nodes is None or int(node.name) in nodes:
                (topology / node.name).symlink_to(node, target_is_directory=True)
    module = root / "sys/module/amdgpu"
    module.mkdir(parents=True)
    if amdgpu is not None:
        shutil.copyfile(amdgpu, module / "version")
    if rocm is not None:
        (root / "opt/rocm/.info").mkdir(parents=True)
        (root / "opt/rocm/.info/version").write_text(rocm + "\n")
    return root


def _tool(bin_dir: Path, name: str, body: str) -> None:
    """An executable ``name`` that logs its arguments to ``ran.log`` beside ``bin_dir``, then runs
    ``body``."""
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    log = bin_dir.parent / "ran.log"
    path.write_text(f"#!/bin/sh\necho \"{name} $*\" >> '{log}'\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _recorded_tools(bin_dir: Path) -> None:
    _tool(bin_dir, "rocminfo", f"cat '{ROCMINFO}'\n")
    _tool(
        bin_dir,
        "amd-smi",
        f"case \"$1\" in\n  version) cat '{AMD_SMI / 'version.txt'}' ;;\n"
        f"  static) cat '{AMD_SMI / 'static-asic.txt'}' ;;\n  *) exit 2 ;;\nesac\n",
    )


def _ran(tmp_path: Path) -> list[str]:
    log = tmp_path / "ran.log"
    return log.read_text().splitlines() if log.exists() else []


def _probe(root: Path, bin_dir: Path, timeout: float | None = None, *, cross_check: bool = True) -> HostProbe:
    """The host of ``root`` with ``bin_dir`` as its ``PATH``, the tools' time limit ``timeout``
    (the default where None), and no NVIDIA driver, read as ``detect`` reads it (``cross_check``:
    the tools check the files), or as every other command does."""
    return HostProbe(
        environ={"PATH": str(bin_dir)},
        distributions=lambda: (),
        python_version="3.12.11",
        python_implementation="CPython",
        platform_tag="linux_x86_64",
        glibc="2.35",
        load_nvml=lambda: NO_NVML,
        nvml_needs_device=False,
        read_text=lambda path: (root / str(path).lstrip("/")).read_text(),
        path_exists=lambda path: path.exists(),
        root=root,
        list_dir=list_dir,
        cross_check=cross_check,
        rocm_tool_timeout=ROCM_TOOL_TIMEOUT_S if timeout is None else timeout,
    )


def _plain(fingerprint: Fingerprint, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """What ``detect`` prints into a pipe for ``fingerprint``."""
    detect_command._plain(detect_command._report(fingerprint))
    return capsys.readouterr().out.splitlines()


def _json(fingerprint: Fingerprint) -> dict[str, object]:
    """``detect --json``'s object, through JSON as it is printed."""
    loaded: dict[str, object] = json.loads(json.dumps(fingerprint_to_json(fingerprint)))
    return loaded


def test_detect_shows_the_amdgpu_driver_and_the_rocm_of_the_file_over_amd_smi(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first GPU nodes of the MI300X tree (nodes 2 to 5, gfx942, as rocminfo lists them):
    rocminfo and amd-smi agree on the gfx; amd-smi's ROCm (6.1.0) is not the file's (6.4.0):
    said, and the file's taken."""
    root = _root(tmp_path, "mi300x-cpx", nodes=range(6))
    _recorded_tools(tmp_path / "bin")
    fingerprint = detect(probe=_probe(root, tmp_path / "bin"))
    data = _json(fingerprint)
    assert data["target"] == {
        "driver": None,
        "cuda": None,
        "compute_capabilities": [],
        "python": "3.12",
        "platform": "linux_x86_64",
        "accelerator": "rocm",
        "tpu": None,
        "rocm": "6.4.0",
        "gfx": ["gfx942"],
    }
    assert data["amdgpu_driver"] == "6.12.12"
    notes = fingerprint.notes
    assert notes[notes.index("no NVIDIA driver found") + 1 :] == (
        "ROCm 6.4.0 from /opt/rocm/.info/version; amd-smi version says ROCm 6.1.0: the file's is taken",
        "AMD GPUs read from the KFD topology: gfx942 (rocminfo and amd-smi agree)",
    )
    assert sorted(_ran(tmp_path)) == ["amd-smi static --asic", "amd-smi version", "rocminfo "]
    lines = _plain(fingerprint, capsys)
    assert "accelerator: rocm (AMD GPU, ROCm 6.4.0, gfx942)" in lines
    assert "amdgpu driver: 6.12.12" in lines
    assert "note: AMD GPUs read from the KFD topology: gfx942 (rocminfo and amd-smi agree)" in lines


def test_without_the_file_amd_smi_gives_the_rocm_and_an_unversioned_driver_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No ``.info/version``: amd-smi's ROCm, naming its source; the amdgpu driver of the kernel
    itself (a module folder, no ``version``): not known, with the reason, in both outputs."""
    root = _root(tmp_path, "mi308x-cpx", amdgpu=None, rocm=None)
    _recorded_tools(tmp_path / "bin")
    fingerprint = detect(probe=_probe(root, tmp_path / "bin"))
    data = _json(fingerprint)
    assert fingerprint.target.device.kind is Accelerator.ROCM
    assert (data["target"]["rocm"], data["target"]["gfx"]) == ("6.1.0", ["gfx942"])  # type: ignore[index]
    assert data["amdgpu_driver"] is None
    why = (
        "amdgpu driver version not known: /sys/module/amdgpu/version: absent (the amdgpu driver"
        " built into the kernel states no version)"
    )
    assert why in fingerprint.notes
    assert "ROCm 6.1.0 from amd-smi version (/opt/rocm/.info/version: no such file or directory)" in (
        fingerprint.notes
    )
    lines = _plain(fingerprint, capsys)
    assert "amdgpu driver: not known" in lines and f"note: {why}" in lines
    assert "accelerator: rocm (AMD GPU, ROCm 6.1.0, gfx942)" in lines


def test_gpus_the_tools_and_the_kfd_topology_disagree_on_are_notes_never_a_change(tmp_path: Path) -> None:
    """The MI308X tree's 32 GPU nodes (2 to 33) beside rocminfo's 4: the nodes it leaves out are
    a note. A 7900 XTX's tree (node 1, gfx1100) beside tools that list gfx942 at nodes 2 to 5:
    each side's GPUs the other lacks are notes; the target keeps the KFD topology's gfx1100."""
    _recorded_tools(tmp_path / "bin")
    partitions = detect(probe=_probe(_root(tmp_path / "a", "mi308x-cpx"), tmp_path / "bin"))
    assert partitions.target.gfx == ("gfx942",)
    assert "the KFD topology has 28 GPU nodes rocminfo does not list (nodes 6-33)" in partitions.notes
    assert "AMD GPUs read from the KFD topology: gfx942 (amd-smi agrees)" in partitions.notes

    radeon = detect(probe=_probe(_root(tmp_path / "b", "rx7900xtx-tinygrad"), tmp_path / "bin"))
    assert radeon.target.gfx == ("gfx1100",)
    for note in (
        "rocminfo lists GPUs at nodes 2-5 (gfx942) where the KFD topology has none: left out",
        "the KFD topology has 1 GPU node rocminfo does not list (node 1)",
        "amd-smi lists gfx942, which the KFD topology does not: left out",
        "the KFD topology has gfx1100, which amd-smi does not list",
        "AMD GPUs read from the KFD topology: gfx1100",
    ):
        assert note in radeon.notes, radeon.notes


def test_a_gfx_rocminfo_names_otherwise_is_a_note_and_the_topologys_is_kept(tmp_path: Path) -> None:
    """rocminfo's gfx942 at nodes 2 to 5 against the MI210 tree's gfx90a there (nodes 2 to 9):
    the topology's kept. Then the MI300X tree's node 2 without its ``gfx_target_version`` (a
    kernel older than the property, as ``mi25-no-gfx-version`` is): rocminfo's name for it is
    offered as a flag, not taken."""
    _recorded_tools(tmp_path / "bin")
    mi210 = detect(probe=_probe(_root(tmp_path / "a", "mi210-x8"), tmp_path / "bin"))
    assert mi210.target.gfx == ("gfx90a",)
    for note in (
        "the KFD topology has 4 GPU nodes rocminfo does not list (nodes 6-9)",
        "rocminfo names nodes 2-5 gfx942, the KFD topology gfx90a: gfx90a is kept",
    ):
        assert note in mi210.notes, mi210.notes

    root = _root(tmp_path / "b", "mi300x-cpx", nodes=range(6))
    node = root / KFD_NODES / "2"
    recorded = node.resolve()
    node.unlink()
    shutil.copytree(recorded, node)
    properties = node / "properties"
    properties.write_text(properties.read_text().replace("gfx_target_version 90402\n", ""))
    unnamed = detect(probe=_probe(root, tmp_path / "bin"))
    assert unnamed.target.gfx == ("gfx942",)  # nodes 3 to 5
    for note in (
        "KFD node 2: no gfx_target_version (a kernel older than the property): architecture unknown",
        "the KFD topology states no gfx at node 2; rocminfo names gfx942: give --gfx gfx942 to use it",
        "AMD GPUs read from the KFD topology: gfx942 (amd-smi agrees)",
    ):
        assert note in unnamed.notes, unnamed.notes


def test_a_hung_failing_or_missing_tool_is_a_note_and_detection_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """rocminfo hangs (killed at the limit), amd-smi is not installed: the file's ROCm and the
    KFD topology's gfx, each tool's fate a note. Then an amd-smi that fails and no file: the
    ROCm is not known, and the note says why of each source."""
    bin_dir = tmp_path / "bin"
    _tool(bin_dir, "rocminfo", "exec sleep 30\n")
    root = _root(tmp_path, "mi210-x8")
    started = time.monotonic()
    fingerprint = detect(probe=_probe(root, bin_dir, timeout=0.5))
    assert time.monotonic() - started < 8
    assert (str(fingerprint.target.rocm), fingerprint.target.gfx) == ("6.4.0", ("gfx90a",))
    for note in (
        "rocminfo: did not answer within 0.5s (killed)",
        "amd-smi: not installed",
        "ROCm 6.4.0 from /opt/rocm/.info/version",
        "AMD GPUs read from the KFD topology: gfx90a",
    ):
        assert note in fingerprint.notes, fingerprint.notes
    assert _json(fingerprint)["amdgpu_driver"] == "6.12.12"

    (root / "opt/rocm/.info/version").unlink()
    _tool(bin_dir, "amd-smi", "echo 'amdsmi init failed' >&2; exit 1\n")
    unknown = detect(probe=_probe(root, bin_dir, timeout=0.5))
    assert unknown.target.rocm is None and unknown.target.gfx == ("gfx90a",)
    assert (
        "ROCm version not known: /opt/rocm/.info/version: no such file or directory;"
        " amd-smi version: exited 1: amdsmi init failed"
    ) in unknown.notes, unknown.notes
    assert "accelerator: rocm (AMD GPU, ROCm unknown, gfx90a)" in _plain(unknown, capsys)


def test_given_values_run_no_tool_for_them_and_other_hosts_run_none(tmp_path: Path) -> None:
    """``--rocm``: no ``amd-smi version``; ``--gfx``: neither rocminfo nor ``amd-smi static``;
    both: nothing read. A host whose KFD topology has no GPU (a CPU host) runs no tool."""
    _recorded_tools(tmp_path / "bin")
    probe = _probe(_root(tmp_path, "mi300x-cpx", nodes=range(6)), tmp_path / "bin")
    rocm_given = detect(overrides(rocm="6.2"), probe=probe)
    assert str(rocm_given.target.rocm) == "6.2" and rocm_given.target.gfx == ("gfx942",)
    assert sorted(_ran(tmp_path)) == ["amd-smi static --asic", "rocminfo "]
    assert "AMD GPUs read from the KFD topology: gfx942 (rocminfo and amd-smi agree)" in rocm_given.notes
    assert not any(note.startswith("ROCm ") for note in rocm_given.notes), rocm_given.notes
    (tmp_path / "ran.log").unlink()
    gfx_given = detect(overrides(gfx=("gfx90a",)), probe=probe)
    assert str(gfx_given.target.rocm) == "6.4.0" and gfx_given.target.gfx == ("gfx90a",)
    assert _ran(tmp_path) == ["amd-smi version"]
    (tmp_path / "ran.log").unlink()
    both = detect(overrides(rocm="6.2", gfx=("gfx90a",)), probe=probe)
    assert both.target.gfx == ("gfx90a",) and _ran(tmp_path) == []
    assert "amdgpu_driver" not in _json(both)

    cpu = detect(probe=_probe(_root(tmp_path / "cpu", ""), tmp_path / "bin"))
    assert cpu.target.device.kind is Accelerator.CPU and _ran(tmp_path) == []
    assert "amdgpu_driver" not in _json(cpu)


def test_the_other_commands_run_amd_smi_only_for_a_rocm_the_file_does_not_state(tmp_path: Path) -> None:
    """render, resolve and lock read the host without the cross-check: the tools take seconds,
    so with the installed ROCm's version file none runs and the topology's gfx is taken as it
    is; without the file, ``amd-smi version`` alone gives the ROCm."""
    _recorded_tools(tmp_path / "bin")
    probe = _probe(_root(tmp_path / "a", "mi300x-cpx", nodes=range(6)), tmp_path / "bin", cross_check=False)
    found = detect(probe=probe)
    assert str(found.target.rocm) == "6.4.0" and found.target.gfx == ("gfx942",)
    assert _ran(tmp_path) == []
    assert "AMD GPUs read from the KFD topology: gfx942" in found.notes
    assert "ROCm 6.4.0 from /opt/rocm/.info/version" in found.notes
    no_file = _root(tmp_path / "b", "mi300x-cpx", nodes=range(6), rocm=None)
    found = detect(probe=_probe(no_file, tmp_path / "bin", cross_check=False))
    assert str(found.target.rocm) == "6.1.0" and _ran(tmp_path) == ["amd-smi version"]
    assert any(note.startswith("ROCm 6.1.0 from amd-smi version (") for note in found.notes), found.notes
    (tmp_path / "ran.log").unlink()
    asked = detect(probe=probe, cross_check=True)
    assert sorted(_ran(tmp_path)) == ["amd-smi static --asic", "amd-smi version", "rocminfo "]
    assert "AMD GPUs read from the KFD topology: gfx942 (rocminfo and amd-smi agree)" in asked.notes
