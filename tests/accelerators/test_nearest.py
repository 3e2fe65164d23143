"""A GPU that no build in the catalog has kernels for (issue 36): exit 3 naming the build whose
list comes closest (the same major, else the closest newer), for an NVIDIA compute capability
and an AMD gfx alike; one whose kernels only releases outside the profile's range have: the
nearest of those on each side, and what keeps it out (docs/catalog.md)."""

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


def test_a_gpu_a_build_in_range_has_kernels_for_names_no_nearest(capsys: pytest.CaptureFixture[str]) -> None:
    # the range's builds have sm_80; the driver is what keeps them out, and the lines say so
    err = _refusal(capsys, "--driver", "450.80.02", "--compute-capability", "8.0")
    assert "needs driver >= " in err, err
    assert "the nearest" not in err and "(the profile's range)" not in err, err


def _golden_refusal(capsys: pytest.CaptureFixture[str], profile: str, *argv: str) -> str:
    """The last line of the refusal of the golden ``profile`` on the target ``argv`` names."""
    code = main(["resolve", str(GOLDEN / profile), "--offline", "--python", "3.12", *argv])
    err = capsys.readouterr().err
    assert code == 3, err
    return err.splitlines()[-1].strip()


def test_kernels_only_releases_outside_the_range_have_name_the_nearest_and_what_keeps_it_out(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """torch 2.7.1 cu118 lists sm_37 but pins a cuDNN without it; 2.3.1 cu118 runs a 3.7 GPU:
    the profile's range (>=2.9) alone keeps that one out."""
    line = _golden_refusal(capsys, "pytorch.toml", "--driver", "580.65.06", "--compute-capability", "3.7")
    assert line.startswith(
        "no torch release in <2.12,>=2.9 (the profile's range) has kernels for sm_37; the nearest older "
        "build that has them: torch 2.7.1 cu118, which the target would not run either (cu118 pins "
        "nvidia-cudnn-cu11==9.1.0.70, which has no kernels for sm_37"
    ), line
    assert line.endswith("; of those, the nearest only the range keeps out: torch 2.3.1 cu118"), line


def test_the_driver_is_named_where_it_keeps_the_nearest_out_too(capsys: pytest.CaptureFixture[str]) -> None:
    line = _golden_refusal(
        capsys, "pytorch.toml", "--driver", "418.39", "--cuda", "10.1", "--compute-capability", "3.7"
    )
    assert "torch 2.7.1 cu118, which the target would not run either (cu118 needs driver >= 450.80.02" in line
    assert line.endswith("; nor would the target run any other of them"), line


@pytest.mark.parametrize(
    ("rocm", "words"),
    [
        # jax 0.7.1's rocm7 (ROCm 7.1) and 0.9.2's (ROCm 7.2) both have gfx942: the golden
        # profile's range >=0.7.2,<0.9 holds cuda12 and cuda13 builds alone
        (
            "7.2",
            "no jax release in <0.9,>=0.7.2 (the profile's range) has kernels for gfx942; the nearest "
            "older build that has them: jax 0.7.1 rocm7, which only the range keeps out; the nearest "
            "newer one: jax 0.9.2 rocm7, which only the range keeps out",
        ),
        (
            "7.1",
            "the nearest newer one: jax 0.9.2 rocm7, which the target would not run either"
            " (rocm7 needs ROCm >= 7.2",
        ),
    ],
)
def test_a_gfx_only_releases_outside_the_range_have_names_them_on_each_side(
    rocm: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _golden_refusal(capsys, "jax.toml", "--rocm", rocm, "--gfx", "gfx942")
    assert words in line, line


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


def _gapped_refusal(tmp_path: Path, *, unconfirmed_older: bool = False) -> str:
    """The nearest-build line for a 3.7 GPU and the range ``>=1.1,!=1.2.*,<1.4`` over releases
    whose builds alternate: 1.0.0, 1.2.0 and 1.4.0 with sm_37, 1.1.0 and 1.3.0 (the range's
    releases) without it; 1.0.0's build unconfirmed where ``unconfirmed_older``."""
    from colabenv.catalog.load import load_catalog
    from colabenv.errors import ResolutionError
    from colabenv.profile.load import load_profile
    from colabenv.resolve.resolver import resolve
    from tests.support.catalogs import framework_file, release_entry, torch_variant, write_catalog
    from tests.support.targets import nvidia_target

    def release(version: str, archs: str, unconfirmed: bool = False) -> str:
        reason = "not read from the index" if unconfirmed else None
        variant = torch_variant(
            "cu124", archs=archs, unconfirmed=unconfirmed or None, unconfirmed_reason=reason
        )
        return release_entry(version, variant)

    torch = framework_file(
        "torch",
        release("1.4.0", "kepler"),
        release("1.3.0", "modern"),
        release("1.2.0", "kepler"),
        release("1.1.0", "modern"),
        release("1.0.0", "kepler", unconfirmed_older),
        archs={"kepler": ["sm_37", "sm_50", "sm_80"], "modern": ["sm_80", "compute_90"]},
    )
    catalog = load_catalog(write_catalog(tmp_path / "catalog", torch=torch))
    profile = tmp_path / "p.toml"
    profile.write_text('name = "p"\n[frameworks]\ntorch = ">=1.1,!=1.2.*,<1.4"\n')
    with pytest.raises(ResolutionError) as caught:
        resolve(load_profile(profile), nvidia_target("550.54.15", "12.4", ("3.7",)), catalog)
    assert caught.value.exit_code == 3
    return str(caught.value).splitlines()[-1].strip()


def test_a_build_a_gap_in_the_range_excludes_is_named_as_such_not_as_newer(tmp_path: Path) -> None:
    """1.2.0 lies within the range's bounds, left out by its ``!=``: it is the nearest, named
    as excluded by the range; the newer side starts above the range's newest release (1.4.0),
    the older below its oldest (1.0.0)."""
    line = _gapped_refusal(tmp_path)
    assert line == (
        "no torch release in !=1.2.*,<1.4,>=1.1 (the profile's range) has kernels for sm_37; excluded by"
        " the range: torch 1.2.0 cu124, which only the range keeps out; the nearest older one: torch"
        " 1.0.0 cu124, which only the range keeps out; the nearest newer one: torch 1.4.0 cu124, which"
        " only the range keeps out"
    ), line


def test_a_build_kept_out_for_being_unconfirmed_is_not_taken_rather_than_not_run(tmp_path: Path) -> None:
    """Being unconfirmed (or lacking a file on the index) is no fault of the target's device:
    the line says the build is not taken, never that the target would not run it."""
    line = _gapped_refusal(tmp_path, unconfirmed_older=True)
    assert "the nearest older one: torch 1.0.0 cu124, which is not taken either (cu124 is unconfirmed" in line
    assert "would not run" not in line and "any other of them" not in line, line
