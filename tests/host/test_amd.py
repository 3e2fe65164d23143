"""AMD hosts from recorded sysfs trees and tool outputs (tests/data/hosts/amd/*/SOURCE.md says
where each came from): the KFD topology, the driver and ROCm versions, rocminfo and amd-smi, and
the DRM memory files; each malformed input a note, never a crash."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from packaging.version import Version

from colabenv.host.amd_vram import read_amd_vram
from colabenv.host.kfd import KFD_NODES, KfdGpu, gfx_name, read_kfd_gpus
from colabenv.host.probe import HostProbe
from colabenv.host.rocm import (
    parse_amd_smi_asic,
    parse_amd_smi_version,
    parse_rocminfo,
    probe_rocm_tools,
    read_amdgpu_version,
    read_rocm_version,
)
from tests.support.paths import DATA

AMD = DATA / "hosts" / "amd"


@pytest.mark.parametrize(
    ("version", "name"),
    [
        (90402, "gfx942"),
        (90010, "gfx90a"),
        (110000, "gfx1100"),
        (120001, "gfx1201"),
        (90500, "gfx950"),
        (100300, "gfx1030"),
        (110501, "gfx1151"),
        (0, None),
        (9999, None),
        (90016, None),
        (91600, None),
    ],
)
def test_gfx_target_version_is_named_as_rocr_names_it(version: int, name: str | None) -> None:
    assert gfx_name(version) == name


@pytest.mark.parametrize(
    ("host", "gpus", "gfx", "first"),
    [
        # 8 MI300X in CPX mode: 8 KFD nodes each, sharing the GPU's unique_id; 2 CPU nodes.
        (
            "mi300x-cpx",
            63,
            ("gfx942",),
            KfdGpu(2, "gfx942", 90402, 128, None, 16404946649897475633, 1280, 0, 29857),
        ),
        (
            "mi308x-cpx",
            32,
            ("gfx942",),
            KfdGpu(2, "gfx942", 90402, 128, 51539607552, 598046273873802902, 2560, 0, 29858),
        ),
        (
            "mi210-x8",
            8,
            ("gfx90a",),
            KfdGpu(2, "gfx90a", 90010, 128, None, 1801979520617338022, 25344, 0, 29711),
        ),
    ],
)
def test_instinct_recordings_decode(host: str, gpus: int, gfx: tuple[str, ...], first: KfdGpu) -> None:
    report = read_kfd_gpus(AMD / host)
    assert len(report.gpus) == gpus and report.gfx == gfx and report.notes == ()
    assert report.gpus[0] == first
    assert all(g.node not in (0, 1) for g in report.gpus), "the CPU nodes 0 and 1 are left out"
    assert [g.node for g in report.gpus] == sorted(g.node for g in report.gpus)


def test_a_radeon_recording_with_its_placeholder_is_read_with_a_note() -> None:
    """tinygrad's recorded 7900 XTX properties carry ``{drm_render_minor}`` where the mock fills
    in a number: that line is a note, the rest of the node is read."""
    report = read_kfd_gpus(AMD / "rx7900xtx-tinygrad")
    (gpu,) = report.gpus
    assert (gpu.gfx, gpu.node, gpu.device_id, gpu.drm_render_minor) == ("gfx1100", 1, 29772, None)
    assert gpu.pci_address == "0000:86:00.0"
    assert report.notes == ("KFD node 1 line 24: 'drm_render_minor {drm_render_minor}' is not 'name number'",)


def test_a_kernel_without_gfx_target_version_lists_the_gpu_unnamed() -> None:
    report = read_kfd_gpus(AMD / "mi25-no-gfx-version")
    (gpu,) = report.gpus
    assert gpu.gfx is None and gpu.vram_bytes == 17163091968 and gpu.drm_render_minor == 128
    assert report.gfx == ()
    assert report.notes == (
        "KFD node 1: no gfx_target_version (a kernel older than the property): architecture unknown",
    )


def _copy(host: str, tmp_path: Path) -> Path:
    shutil.copytree(AMD / host, tmp_path / host)
    return tmp_path / host


def test_letters_in_gfx_target_version_fall_back_with_a_reason(tmp_path: Path) -> None:
    root = _copy("mi210-x8", tmp_path)
    path = root / KFD_NODES / "2" / "properties"
    path.write_text(path.read_text().replace("gfx_target_version 90010", "gfx_target_version 9001O"))
    report = read_kfd_gpus(root)
    assert report.gpus[0].gfx is None and report.gfx == ("gfx90a",)
    assert "KFD node 2 line 19: 'gfx_target_version 9001O' is not 'name number'" in report.notes
    assert (
        "KFD node 2: no gfx_target_version (a kernel older than the property): architecture unknown"
        in report.notes
    )


def test_a_huge_or_missing_properties_file_is_a_note(tmp_path: Path) -> None:
    root = _copy("mi210-x8", tmp_path)
    huge = root / KFD_NODES / "3" / "properties"
    with huge.open("ab") as handle:
        handle.write(b"0" * (10 * 1024 * 1024))
    (root / KFD_NODES / "4" / "properties").unlink()
    report = read_kfd_gpus(root)
    assert [g.node for g in report.gpus] == [2, 5, 6, 7, 8, 9]
    assert report.notes == (
        "KFD node 3: is 10 MiB; at most 65536 bytes is read",
        "KFD node 4: no such file or directory",
    )


def test_a_fifo_or_many_lines_never_hang_or_pass(tmp_path: Path) -> None:
    root = _copy("mi210-x8", tmp_path)
    fifo = root / KFD_NODES / "2" / "properties"
    fifo.unlink()
    os.mkfifo(fifo)
    (root / KFD_NODES / "3" / "properties").write_text("simd_count 1\n" * 300)
    report = read_kfd_gpus(root)
    assert [g.node for g in report.gpus][:1] == [4]
    assert report.notes[:2] == (
        "KFD node 2: is a FIFO, not a regular file",
        "KFD node 3: more than 256 lines; not a KFD properties file",
    )


def test_no_kfd_is_an_empty_report_with_the_reason(tmp_path: Path) -> None:
    report = read_kfd_gpus(tmp_path)
    assert report.gpus == () and report.notes == (
        "/sys/class/kfd/kfd/topology/nodes: no KFD nodes (no amdgpu driver with KFD on this host)",
    )


# --- versions ------------------------------------------------------------------------------------


def _write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_amdgpu_version_read_absent_and_malformed(tmp_path: Path) -> None:
    """The recorded file (``mi300x-amdgpu-6.12.12``: ``6.12.12``, an MI300X host's, from the
    rocminfo line ROCm/rocprofiler-sdk issue #66 quotes) is read as its version; the module
    folder without the file (as on the host of ``mi300x-x4-tools``, whose rocminfo says "ROCk
    module is loaded" without a version) says why. The malformed file is the recorded version
    with a suffix, derived here, not recorded."""
    assert read_amdgpu_version(tmp_path).reason == "/sys/module/amdgpu/version: no such file or directory"
    (tmp_path / "sys/module/amdgpu").mkdir(parents=True)
    absent = read_amdgpu_version(tmp_path)
    assert absent.version is None and "built into the kernel" in (absent.reason or "")
    recorded = AMD / "mi300x-amdgpu-6.12.12"
    assert read_amdgpu_version(recorded).version == Version("6.12.12")
    text = (recorded / "sys/module/amdgpu/version").read_text()
    _write(tmp_path, "sys/module/amdgpu/version", text.strip() + "-rc1\n")
    bad = read_amdgpu_version(tmp_path)
    assert bad.version is None and bad.reason == (
        "/sys/module/amdgpu/version: '6.12.12-rc1' is not a driver version (digits and dots)"
    )


def test_rocm_version_from_rocm_path_or_opt_rocm(tmp_path: Path) -> None:
    """``6.4.0-15158``: the 12-byte ``.info/version`` of rocm-core 6.4.0 (ROCm/rocm-systems
    projects/rocm-core/README.md lists it in the package)."""
    assert read_rocm_version(tmp_path, {}).reason == "/opt/rocm/.info/version: no such file or directory"
    _write(tmp_path, "opt/rocm/.info/version", "6.4.0-15158\n")
    assert read_rocm_version(tmp_path, {}).version == Version("6.4.0")
    _write(tmp_path, "opt/rocm-6.2.2/.info/version", "6.2.2-116\n")
    assert read_rocm_version(tmp_path, {"ROCM_PATH": "/opt/rocm-6.2.2"}).version == Version("6.2.2")
    _write(tmp_path, "opt/rocm/.info/version", "6.4.0rc1\n")
    bad = read_rocm_version(tmp_path, {})
    assert (
        bad.version is None
        and bad.reason == "/opt/rocm/.info/version: '6.4.0rc1' is not a ROCm version (X.Y.Z-build)"
    )
    _write(tmp_path, "opt/rocm/.info/version", "6" * 1000)
    assert "at most 256 bytes" in (read_rocm_version(tmp_path, {}).reason or "")


# --- rocminfo and amd-smi --------------------------------------------------------------------------


def test_rocminfo_of_four_mi300x() -> None:
    report = parse_rocminfo((AMD / "mi300x-x4-tools" / "rocminfo.txt").read_text())
    assert [(a.gfx, a.node) for a in report.agents] == [("gfx942", n) for n in (2, 3, 4, 5)]
    assert report.agents[0].marketing_name == "AMD Instinct MI300X"
    assert report.agents[0].uuid == "GPU-8d1457e2c20f59d2"
    assert report.driver is None and report.problems == ()


def test_amd_smi_recordings() -> None:
    folder = AMD / "mi308x-amd-smi"
    assert parse_amd_smi_version((folder / "version.txt").read_text()) == (Version("6.1.0"), None)
    assert parse_amd_smi_asic((folder / "static-asic.txt").read_text()) == (("gfx942",), ())
    assert parse_amd_smi_version("AMDSMI Tool: 1 | ROCm version: 6.x") == (
        None,
        "ROCm version '6.x' is not a version",
    )
    assert parse_amd_smi_version("AMDSMI Tool: 1 | ROCm version: N/A") == (None, None)


def _tool(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _probe(bin_dir: Path, root: Path) -> HostProbe:
    return HostProbe(
        environ={"PATH": str(bin_dir)},
        distributions=lambda: [],
        python_version="3.12.11",
        python_implementation="CPython",
        platform_tag="linux_x86_64",
        glibc="2.35",
        root=root,
        path_exists=lambda path: path.exists(),
    )


def test_the_tools_run_with_a_time_limit(tmp_path: Path) -> None:
    """Stand-ins print the recorded outputs; an amd-smi that hangs is killed at the limit."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _tool(bin_dir, "rocminfo", f"cat '{AMD / 'mi300x-x4-tools' / 'rocminfo.txt'}'\n")
    smi = AMD / "mi308x-amd-smi"
    _tool(
        bin_dir,
        "amd-smi",
        f"[ \"$1\" = version ] && cat '{smi / 'version.txt'}' || cat '{smi / 'static-asic.txt'}'\n",
    )
    report = probe_rocm_tools(_probe(bin_dir, tmp_path))
    assert report.rocminfo is not None and len(report.rocminfo.agents) == 4
    assert report.amd_smi is not None and (report.amd_smi.rocm, report.amd_smi.gfx) == (
        Version("6.1.0"),
        ("gfx942",),
    )
    assert report.notes == ()
    _tool(bin_dir, "amd-smi", "exec sleep 30\n")
    _tool(bin_dir, "rocminfo", "echo 'hsa api call failure' >&2; exit 1\n")
    slow = probe_rocm_tools(_probe(bin_dir, tmp_path), timeout=0.5)
    assert slow.rocminfo is None and slow.amd_smi is None
    assert slow.notes == (
        "rocminfo: exited 1: hsa api call failure",
        "amd-smi version: did not answer within 0.5s (killed)",
    )


def test_tools_not_installed_are_notes(tmp_path: Path) -> None:
    report = probe_rocm_tools(_probe(tmp_path, tmp_path))
    assert report == type(report)(None, None, ("rocminfo: not installed",), ("amd-smi: not installed",))
    assert report.notes == ("rocminfo: not installed", "amd-smi: not installed")


# --- memory through DRM ----------------------------------------------------------------------------


VEGA64_DEVICE = AMD / "vega64-procfs" / "sys/class/drm/card0/device"


def test_vram_samples_map_to_kfd_nodes_by_render_minor(tmp_path: Path) -> None:
    """The MI210 x8 KFD tree with two DRM cards whose memory files are the recorded Vega 64's
    (``vega64-procfs``: no recording of these files on an MI210 was found), each card tied to
    its node by its render minor; a third card's ``-1`` is a malformed value, not a recording."""
    root = _copy("mi210-x8", tmp_path)
    gpus = read_kfd_gpus(root).gpus
    for card, minor in (("card1", 128), ("card2", 129)):
        device = root / "sys/class/drm" / card / "device"
        (device / "drm" / f"renderD{minor}").mkdir(parents=True)
        for name in ("mem_info_vram_used", "mem_info_vram_total"):
            shutil.copyfile(VEGA64_DEVICE / name, device / name)
    _write(root, "sys/class/drm/card3/device/mem_info_vram_used", "-1\n")
    reading = read_amd_vram(root, gpus)
    assert [(s.card, s.node, s.used_bytes, s.total_bytes) for s in reading.samples] == [
        ("card1", 2, 1490378752, 8573157376),
        ("card2", 3, 1490378752, 8573157376),
    ]
    assert reading.notes == ("card3: mem_info_vram_used/mem_info_vram_total unreadable or not byte counts",)


def test_vram_of_the_recorded_card_as_recorded() -> None:
    """The recorded tree itself, read in place: one card, no KFD node to tie it to."""
    reading = read_amd_vram(AMD / "vega64-procfs")
    assert [(s.card, s.node, s.used_bytes, s.total_bytes) for s in reading.samples] == [
        ("card0", None, 1490378752, 8573157376)
    ]
    assert reading.notes == ()
