"""The NVIDIA components on Linux aarch64 (issue 36): a framework build's component pins are
judged by the arch lists of the target's platform's wheels (``archs_aarch64`` in
components.toml), so a GPU the aarch64 wheels of a release lack holds an aarch64 target back
where the x86-64 lists would not, and the reverse. The overlay below moves the first cuDNN for
CUDA 13 with sm_110 code on aarch64 to 9.20 (the shipped wheels carry it from 9.12): torch's
aarch64 cu130 builds that pin an older cuDNN are passed over for a Jetson Thor, and kept for a
GH200, whose sm_90 both lists cover."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from colabenv.catalog.load import COMPONENTS_FILE
from colabenv.cli.main import main
from tests.support.catalogs import component_entry, component_range, components_file

X86 = ["sm_75", "sm_80", "sm_90", "sm_100", "sm_120", "compute_120"]
WITH_SM110 = ["sm_75", "sm_80", "sm_90", "sm_100", "sm_110", "sm_120", "compute_120"]
LATE_SM110 = components_file(
    component_entry(
        "nvidia-cudnn-cu13",
        13,
        component_range(">=9.12.0.46,<9.20", X86, ["9.12.0.46"]),
        component_range(">=9.20", X86, ["9.20.0.48"], aarch64=WITH_SM110),
    )
)
TARGET = ("--driver", "580.65.06", "--python", "3.12", "--offline")
THOR, GH200 = ("--compute-capability", "11.0"), ("--compute-capability", "9.0")


def _resolve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], platform: str, *argv: str
) -> tuple[int, dict[str, Any], str]:
    profile = tmp_path / "team.toml"
    profile.write_text('name = "team"\n[frameworks]\ntorch = "<2.12"\n', encoding="utf-8")
    code = main(["resolve", str(profile), "--json", "--platform", platform, *TARGET, *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out)["frameworks"] if code == 0 else {}), err


@pytest.fixture
def late_sm110(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / COMPONENTS_FILE).write_text(LATE_SM110, encoding="utf-8")
    monkeypatch.setenv("COLABENV_CATALOG", str(overlay))


def test_a_thor_on_aarch64_takes_torchs_cu130_build_with_the_shipped_facts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, chosen, err = _resolve(tmp_path, capsys, "linux_aarch64", *THOR)
    assert code == 0, err
    torch = chosen["torch"]
    assert (torch["version"], torch["variant"]) == ("2.11.0", "cu130"), torch
    assert "held to" not in torch["reason"], "the aarch64 cuDNN 13 wheels carry sm_110 throughout"


def test_a_thor_on_aarch64_passes_over_builds_whose_cudnn_lacks_its_aarch64_kernels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], late_sm110: None
) -> None:
    code, _, err = _resolve(tmp_path, capsys, "linux_aarch64", *THOR)
    assert code == 3, err
    assert "cu130 pins nvidia-cudnn-cu13==9.19.0.56, which has no kernels for sm_110" in err, err
    assert "nvidia-cudnn-cu13>=9.20 has them" in err, err


def test_a_gh200_on_aarch64_keeps_the_build_the_same_facts_pass_over_for_a_thor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], late_sm110: None
) -> None:
    code, chosen, err = _resolve(tmp_path, capsys, "linux_aarch64", *GH200)
    assert code == 0, err
    assert (chosen["torch"]["version"], chosen["torch"]["variant"]) == ("2.11.0", "cu130"), chosen["torch"]
