"""The CUDA packages on Linux aarch64 (issue 36): a package build is eligible on a platform only
where the catalog lists it for it (``platforms``, as a framework's variant), with the arch list
of that platform's build; a package without one is exit 3 naming it and the platform, never
left out. The targets are a GH200 (Grace Hopper, sm_90) and Jetson Thor (sm_110)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from colabenv.cli.main import main

GH200 = (
    "--platform",
    "linux_aarch64",
    "--driver",
    "580.65.06",
    "--compute-capability",
    "9.0",
    "--python",
    "3.12",
    "--offline",
)


def _profile(tmp_path: Path, frameworks: str) -> Path:
    path = tmp_path / "team.toml"
    path.write_text(f'name = "team"\n[frameworks]\n{frameworks}\n', encoding="utf-8")
    return path


def _resolve(
    capsys: pytest.CaptureFixture[str], profile: Path, *argv: str
) -> tuple[int, dict[str, Any], str]:
    code = main(["resolve", str(profile), "--json", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out)["frameworks"] if code == 0 else {}), err


def test_a_gh200_gets_cupys_aarch64_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, chosen, err = _resolve(capsys, _profile(tmp_path, 'cupy = "*"'), *GH200)
    assert code == 0, err
    cupy = chosen["cupy"]
    assert (cupy["version"], cupy["variant"], cupy["requirements"]) == (
        "14.2.0",
        "cuda13",
        ["cupy-cuda13x==14.2.0"],
    ), cupy
    assert "kernels for sm_90" in cupy["reason"]


def test_a_package_without_an_aarch64_build_is_exit_3_naming_it_and_the_platform(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # xformers has no aarch64 wheel on the package index for 0.0.31.post1 to 0.0.35
    profile = _profile(tmp_path, 'torch = "*"\ncupy = "*"\nxformers = "*"')
    code, _, err = _resolve(capsys, profile, *GH200)
    assert code == 3, err
    assert "team.toml: frameworks.xformers: no release of xformers" in err, err
    assert "cu130 has no linux_aarch64 wheel in the catalog (linux_x86_64 only)" in err, err
    assert "cupy" not in err and "torch 2" not in err, "torch and cupy have their aarch64 builds"
    for package in ("flash-attn", "torch-scatter"):
        code, _, err = _resolve(capsys, _profile(tmp_path, f'torch = "*"\n{package} = "*"'), *GH200)
        assert code == 3 and f"frameworks.{package}: no release of {package}" in err, err
        assert "has no linux_aarch64 wheel in the catalog" in err, err


def test_a_gh200_gets_the_aarch64_builds_read_from_the_wheels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, 'torch = "*"\nvllm = "*"\ncudf = "*"\ncuml = "*"\nonnxruntime-gpu = "*"')
    code, chosen, err = _resolve(capsys, profile, *GH200)
    assert code == 0, err
    got = {name: (c["version"], c["variant"], c["requirements"]) for name, c in chosen.items()}
    assert got["torch"][:2] == ("2.14.0", "cu130"), "the torch vllm 0.33.0 pins, on aarch64"
    assert got["vllm"] == ("0.33.0", "cu130", ["vllm==0.33.0"]), got
    assert got["cudf"] == ("26.10.2", "cuda13", ["cudf-cu13==26.10.2"]), got
    assert got["cuml"] == ("26.10.0", "cuda13", ["cuml-cu13==26.10.0"]), got
    assert got["onnxruntime-gpu"] == ("1.31.1", "cuda13", ["onnxruntime-gpu==1.31.1"]), got
    assert all("unconfirmed" not in c["reason"] for c in chosen.values()), chosen


def test_jetson_thor_runs_vllms_aarch64_sm_110_code_and_onnxruntime_has_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thor = [*GH200[:4], "--compute-capability", "11.0", *GH200[6:]]
    code, chosen, err = _resolve(capsys, _profile(tmp_path, 'torch = "*"\nvllm = "*"'), *thor)
    assert code == 0, err
    assert (chosen["vllm"]["version"], chosen["vllm"]["variant"]) == ("0.33.0", "cu130"), chosen
    assert "kernels for sm_110" in chosen["vllm"]["reason"], chosen["vllm"]
    # onnxruntime-gpu's aarch64 CUDA provider carries sm_89, sm_90, sm_120, sm_121 and no PTX
    code, _, err = _resolve(capsys, _profile(tmp_path, 'onnxruntime-gpu = "*"'), *thor)
    assert code == 3 and "frameworks.onnxruntime-gpu" in err, err
    assert "sm_110" in err, err


def test_bitsandbytes_takes_the_aarch64_library_for_torchs_cuda(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, 'torch = "*"\nbitsandbytes = "<0.50.2"')
    code, chosen, err = _resolve(capsys, profile, *GH200, "--allow-unconfirmed")
    assert code == 0, err
    assert chosen["torch"]["variant"] == "cu130", chosen["torch"]
    bnb = chosen["bitsandbytes"]
    assert (bnb["version"], bnb["variant"]) == ("0.50.1", "cuda130"), bnb
    assert "unconfirmed" not in bnb["reason"], "0.50.1's aarch64 builds were read at the tag"
    # 0.50.2's aarch64 builds are carried over from 0.50.1's build files: unconfirmed, so an
    # open request takes 0.50.1 without the flag and 0.50.2 only with it
    code, chosen, err = _resolve(capsys, _profile(tmp_path, 'torch = "*"\nbitsandbytes = "*"'), *GH200)
    assert code == 0, err
    assert chosen["bitsandbytes"]["version"] == "0.50.1", chosen["bitsandbytes"]
    code, chosen, err = _resolve(
        capsys, _profile(tmp_path, 'torch = "*"\nbitsandbytes = "*"'), *GH200, "--allow-unconfirmed"
    )
    assert code == 0, err
    assert chosen["bitsandbytes"]["version"] == "0.50.2", chosen["bitsandbytes"]


def test_jetson_thor_runs_cupys_aarch64_kernels_which_the_x86_build_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thor = [*GH200[:4], "--compute-capability", "11.0", *GH200[6:]]
    code, chosen, err = _resolve(capsys, _profile(tmp_path, 'cupy = "*"'), *thor)
    assert code == 0, err
    assert (chosen["cupy"]["variant"], chosen["cupy"]["version"]) == ("cuda13", "14.2.0")
    # on x86-64 the cuda13 build has no sm_110 code: the cuda12 build's compute_100 PTX is taken
    x86 = ["--platform", "linux_x86_64", *thor[2:]]
    code, chosen, err = _resolve(capsys, _profile(tmp_path, 'cupy = "*"'), *x86)
    assert code == 0, err
    assert chosen["cupy"]["variant"] == "cuda12", chosen["cupy"]
