"""A CUDA package's distribution named in ``[packages]`` on AMD GPUs (issue 36: "A package with
no build for the platform or accelerator ... exits 3, naming it"; "A ROCm environment installs
no nvidia-* wheel"): the catalog knows it as a CUDA package's CUDA build (``cuda_packages.toml``),
so ``resolve``, ``render`` and ``lock`` are exit 3 naming the requirement, never a hint and a
script that installs a CUDA wheel on AMD GPUs (for a package with ROCm builds, CuPy's, the line
says to move it to ``[frameworks]``: tests/accelerators/test_rocm_packages.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from colabenv.cli.main import main
from tests.support.profiles import write_profile_file

ROCM_FLAGS = ("--rocm", "6.1", "--gfx", "gfx942", "--python", "3.12")


def _profile(tmp_path: Path, *requirements: str) -> Path:
    return write_profile_file(tmp_path, {"torch": "==2.4.1"}, requirements=requirements)


@pytest.mark.parametrize("requirement", ["cudf-cu12>=25", "onnxruntime-gpu", "Cuml_Cu13"])
@pytest.mark.parametrize("command", ["resolve", "render"])
def test_a_cuda_packages_distribution_on_amd_gpus_is_exit_3_naming_it(
    requirement: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, "six", requirement)
    code = main([command, str(profile), "--offline", *ROCM_FLAGS])
    out, err = capsys.readouterr()
    assert (code, out) == (3, ""), err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"colabenv: p.toml: packages.requirements: {requirement} ")
    assert "has no ROCm build in the catalog" in lines[0]
    assert "AMD GPU, ROCm 6.1, gfx942" in lines[0]


def test_every_such_requirement_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = _profile(tmp_path, "cupy-cuda12x", "cudf-cu12", "onnxruntime-gpu")
    code = main(["resolve", str(profile), "--offline", *ROCM_FLAGS])
    err = capsys.readouterr().err
    assert code == 3
    assert "cudf-cu12 (cudf), onnxruntime-gpu have no ROCm build" in err
    # cupy has ROCm builds (cupy-rocm-7-0): its CUDA build is to be moved to [frameworks]
    assert "; cupy-cuda12x (cupy) is a CUDA build; cupy has ROCm builds in the catalog" in err


def test_lock_refuses_it_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, "cupy-cuda12x")
    output = tmp_path / "requirements.lock"
    code = main(["lock", str(profile), "-o", str(output), "--quiet", *ROCM_FLAGS])
    out, err = capsys.readouterr()
    assert (code, out) == (3, ""), err
    assert "packages.requirements: cupy-cuda12x " in err
    assert not output.exists()


@pytest.mark.parametrize(
    "flags",
    [
        ("--driver", "580.65.06", "--compute-capability", "9.0", "--python", "3.12"),
        ("--cpu", "--python", "3.12"),
    ],
)
def test_elsewhere_it_stays_a_hint_to_move_it_to_frameworks(
    flags: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, "cupy-cuda12x")
    code = main(["resolve", str(profile), "--offline", *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert 'move it to [frameworks] as cupy = "*"' in out


def test_a_plain_requirement_on_amd_gpus_is_installed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, "six", "cupy")  # cupy's source distribution is no CUDA build's
    code = main(["resolve", str(profile), "--offline", "--json", *ROCM_FLAGS])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert {"six", "cupy"} <= set(json.loads(out)["requirements"]), out


@pytest.mark.parametrize("command", ["resolve", "render", "lock"])
def test_an_nvidia_wheel_on_amd_gpus_is_the_same_exit_3_for_every_command(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``resolve`` and ``lock`` passed what ``render`` refused (one rule now: the kind's)."""
    profile = _profile(tmp_path, "six", "nvidia-cudnn-cu12", "Cuda.Bindings>=12")
    output = tmp_path / "requirements.lock"
    where = ["-o", str(output), "--quiet"] if command == "lock" else ["--offline"]
    code = main([command, str(profile), *where, *ROCM_FLAGS])
    out, err = capsys.readouterr()
    assert (code, out) == (3, ""), err
    assert err.strip().splitlines() == [
        "colabenv: p.toml: packages.requirements: nvidia-cudnn-cu12, Cuda.Bindings>=12 are NVIDIA CUDA"
        " wheels; an AMD GPU (ROCm) environment installs none (nvidia-*, cuda-*; the target has AMD"
        " GPUs (AMD GPU, ROCm 6.1, gfx942)): leave them out of the profile for this target"
    ]
    assert not output.exists()
