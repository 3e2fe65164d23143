"""A GPU that no build in the catalog has kernels for (issue 36): exit 3 naming the build whose
list comes closest (the same major, else the closest newer), for an NVIDIA compute capability
and an AMD gfx alike (docs/catalog.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from colabenv.cli.main import main

GOLDEN = Path(__file__).resolve().parents[2] / "profiles" / "golden"


def _refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(["resolve", str(GOLDEN / "pytorch.toml"), "--offline", "--python", "3.12", *argv])
    err = capsys.readouterr().err
    assert code == 3, err
    return err


def test_a_gfx_no_build_has_names_the_nearest_of_its_major(capsys: pytest.CaptureFixture[str]) -> None:
    err = _refusal(capsys, "--rocm", "7.2", "--gfx", "gfx1013", "--allow-unconfirmed")
    assert "no torch build in the catalog has kernels for gfx1013; the nearest: torch " in err, err
    line = next(line for line in err.splitlines() if "the nearest" in line)
    assert line.endswith("(gfx1030)"), line


def test_a_compute_capability_no_build_has_names_the_nearest_of_its_major(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _refusal(capsys, "--driver", "580.65.06", "--compute-capability", "3.0")
    assert "no torch build in the catalog has kernels for sm_30; the nearest: torch " in err, err
    line = next(line for line in err.splitlines() if "the nearest" in line)
    assert line.endswith("(sm_37)"), line


def test_without_its_major_the_closest_newer_architecture_is_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _refusal(capsys, "--rocm", "7.2", "--gfx", "gfx805", "--allow-unconfirmed")
    line = next(line for line in err.splitlines() if "the nearest" in line)
    assert line.endswith("(gfx900)"), line


def test_a_gpu_some_build_has_kernels_for_names_no_nearest(capsys: pytest.CaptureFixture[str]) -> None:
    err = _refusal(capsys, "--driver", "580.65.06", "--compute-capability", "3.7")
    assert "the nearest" not in err, err


@pytest.mark.parametrize(
    ("profile", "argv", "words"),
    [
        # TensorFlow has no CUDA build for aarch64; its x86-64 and-cuda build has sm_90
        (
            "tensorflow.toml",
            ["--driver", "580.65.06", "--compute-capability", "9.0"],
            "tensorflow's builds with kernels for sm_90 are linux_x86_64 only",
        ),
        # torch's ROCm builds are x86-64 ones
        (
            "pytorch.toml",
            ["--rocm", "7.2", "--gfx", "gfx942"],
            "torch's builds with kernels for gfx942 are linux_x86_64 only",
        ),
    ],
)
def test_kernels_only_another_platforms_builds_have_are_said_so(
    profile: str, argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["resolve", str(GOLDEN / profile), "--offline", "--platform", "linux_aarch64", *argv])
    err = capsys.readouterr().err
    assert code == 3, err
    assert words in err.splitlines()[-1], err
    assert "build in the catalog has kernels" not in err, err


def test_the_nearest_is_a_build_of_the_targets_platform(capsys: pytest.CaptureFixture[str]) -> None:
    # the x86-64 builds of old torch releases have sm_37; the aarch64 builds start at sm_80
    err = _refusal(
        capsys, "--platform", "linux_aarch64", "--driver", "580.65.06", "--compute-capability", "3.7"
    )
    line = err.splitlines()[-1].strip()
    assert line.startswith("torch's builds with kernels for sm_37 are linux_x86_64 only; ")
    assert "the nearest on linux_aarch64: torch " in line and line.endswith("(sm_80)"), line
    err = _refusal(
        capsys, "--platform", "linux_aarch64", "--driver", "580.65.06", "--compute-capability", "3.0"
    )
    line = err.splitlines()[-1].strip()
    assert line.startswith("no torch build in the catalog has kernels for sm_30; the nearest: torch "), line
    assert line.endswith("(sm_80)"), line
