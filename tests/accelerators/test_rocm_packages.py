"""The CUDA packages' ROCm builds (issue 36, "Choosing wheels": "CUDA packages: which have ... ROCm
builds at all"): a package build may be a ROCm build (``rocm``, ``gfx``, read as a framework's
ROCm variant is), taken on AMD GPUs by a framework's ROCm rules through the accelerator seam
(the host's ROCm caps it, every GPU's gfx in its list, and one built against torch beside
torch's ROCm build of its own ROCm: the joint choice); a package without one stays exit 3 naming
it; the script installs the ROCm wheel from its place and no NVIDIA wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

from colabenv.catalog.load import load_overlay, shipped_catalog, with_overlays
from colabenv.cli.main import main
from colabenv.errors import CatalogOverlayError
from colabenv.models import Catalog, Framework
from tests.support.package_entries import (
    build_entry,
    package_entry,
    packages_file,
    release_entry,
    write_packages,
)
from tests.support.profiles import write_profile_file

AMD = ("--gfx", "gfx942", "--python", "3.12", "--offline", "--allow-unconfirmed")


def _resolve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], frameworks: dict[str, str], *flags: str
) -> tuple[int, str]:
    code = main(["resolve", str(write_profile_file(tmp_path, frameworks)), "--json", *flags])
    out, err = capsys.readouterr()
    return code, out if code == 0 else err


# ---------------------------------------------------------------------------------------------
# The catalog


def _with_cupy_build(tmp_path: Path, **keys: str | list[str]) -> Catalog:
    """The shipped catalog with an overlay of cupy 14.2.0 whose one build, rocm7.0, has ``keys``."""
    build = build_entry("rocm7.0", source="https://example.org/cupy", **keys)  # type: ignore[arg-type]
    release = release_entry("14.2.0", build, python=">=3.10", source="https://example.org/cupy")
    folder = write_packages(tmp_path / "catalog", packages_file(package_entry("cupy", release)))
    return with_overlays(shipped_catalog([Framework.TORCH]), [load_overlay(folder, "test")])


@pytest.mark.parametrize(
    ("keys", "key", "problem"),
    [
        ({"rocm": "7.0"}, "gfx", "a ROCm build needs its gfx list"),
        (
            {"gfx": ["gfx942"], "cuda": "12", "archs": ["sm_80"]},
            "gfx",
            "only a ROCm build (rocm = X.Y) has a gfx list",
        ),
        ({"rocm": "7.0", "gfx": ["gfx94z"]}, "gfx", "'gfx94z' is not a list of AMD GPU architectures"),
        ({"rocm": "7.0", "gfx": ["gfx942"], "cuda": "12"}, "cuda", "a ROCm build has no cuda"),
        ({"rocm": "7.0", "gfx": ["gfx942"], "archs": ["sm_80"]}, "archs", "a ROCm build has no archs"),
        ({"rocm": "7.0", "gfx": ["gfx942"], "min_driver": "535"}, "min_driver", "a ROCm build has no driver"),
    ],
)
def test_a_rocm_build_is_read_as_a_frameworks_rocm_variant_is(
    tmp_path: Path, keys: dict[str, str | list[str]], key: str, problem: str
) -> None:
    with pytest.raises(CatalogOverlayError) as caught:
        _with_cupy_build(tmp_path, **keys)
    message = str(caught.value)
    assert f"build[0].{key}" in message and problem in message, message


def test_a_rocm_build_takes_the_packages_rocm_distribution(tmp_path: Path) -> None:
    catalog = _with_cupy_build(tmp_path, rocm="5.0", gfx=["gfx90a"])
    cupy = catalog.package("cupy")
    assert cupy is not None
    build = cupy.releases[0].builds[0]
    assert (build.distribution, build.cuda, str(build.rocm), build.gfx) == (
        "cupy-rocm-5-0",
        None,
        "5.0",
        ("gfx90a",),
    )


# ---------------------------------------------------------------------------------------------
# Choosing them


def test_xformers_on_amd_gpus_takes_its_rocm_build_beside_torchs_of_the_same_rocm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    code, out = _resolve(tmp_path, capsys, {"torch": "*", "xformers": "*"}, "--rocm", "6.4", *AMD)
    assert code == 0, out
    chosen = json.loads(out)["frameworks"]
    assert (chosen["torch"]["version"], chosen["torch"]["variant"]) == ("2.9.1", "rocm6.4")
    xformers = chosen["xformers"]
    assert xformers["requirements"] == ["xformers==0.0.33.post2+rocm6.4"]
    assert xformers["index_url"] == "https://download.pytorch.org/whl/rocm6.4"
    assert "ROCm 6.4 (host ROCm 6.4)" in xformers["reason"] and "kernels for gfx942" in xformers["reason"]


def test_the_joint_choice_names_torchs_rocm_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # torch 2.8.0's builds are rocm6.3 and rocm6.4; xformers 0.0.32.post2 is built against rocm6.4
    code, err = _resolve(
        tmp_path, capsys, {"torch": "==2.8.0", "xformers": "==0.0.32.post2"}, "--rocm", "6.3", *AMD
    )
    assert code == 3
    assert "xformers 0.0.32.post2: rocm6.4 needs ROCm >= 6.4 (host ROCm 6.3)" in err
    code, out = _resolve(tmp_path, capsys, {"torch": "==2.8.0", "xformers": "*"}, "--rocm", "6.4", *AMD)
    assert code == 0, out
    assert '"xformers==0.0.32.post2+rocm6.4"' in out and '"torch==2.8.0+rocm6.4"' in out


def test_a_rocm_build_without_kernels_for_the_gpu_is_exit_3_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ("--rocm", "6.4", "--gfx", "gfx1100", "--python", "3.12", "--offline", "--allow-unconfirmed")
    code, err = _resolve(tmp_path, capsys, {"torch": "*", "xformers": "*"}, *flags)
    assert code == 3
    assert "rocm6.4 has no kernels for gfx1100" in err


@pytest.mark.parametrize(
    ("rocm", "gfx", "words"),
    [
        ("7.2", "gfx942", None),
        ("6.4", "gfx942", "cupy 14.0.1 to 14.2.0: rocm7.0 needs ROCm >= 7.0 (host ROCm 6.4)"),
        ("7.2", "gfx906", "rocm7.0 has no kernels for gfx906"),
        # its libraries need the host's libamdhip64.so.7: another major's ROCm has none
        ("8.0", "gfx942", "rocm7.0 loads the host's ROCm 7 libraries (libamdhip64.so.7); host ROCm 8.0"),
    ],
)
def test_cupy_on_amd_gpus_is_cupy_rocm_7_0_where_the_host_runs_it(
    rocm: str, gfx: str, words: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ("--rocm", rocm, "--gfx", gfx, "--python", "3.12", "--offline")
    code, text = _resolve(tmp_path, capsys, {"cupy": "*"}, *flags)
    if words is None:
        assert code == 0, text
        assert '"cupy-rocm-7-0==14.2.0"' in text and '"index_url": null' in text
    else:
        assert code == 3 and words in text, text


def test_a_package_with_no_rocm_build_stays_exit_3_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _resolve(tmp_path, capsys, {"cudf": "*"}, "--rocm", "7.2", *AMD)
    assert code == 3
    assert (
        "frameworks.cudf: cudf has no ROCm build in the catalog (a CUDA package; the target has AMD GPUs"
        in err
    )


def test_nvidia_gpus_never_take_a_rocm_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flags = ("--driver", "580.65.06", "--compute-capability", "9.0", "--python", "3.12", "--offline")
    code, out = _resolve(tmp_path, capsys, {"cupy": "*"}, *flags)
    assert code == 0, out
    assert '"cupy-cuda13x==14.2.0"' in out or '"cupy-cuda12x==14.2.0"' in out


# ---------------------------------------------------------------------------------------------
# [packages] requirements


def test_a_cuda_build_of_a_package_with_a_rocm_build_says_to_move_it_to_frameworks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = write_profile_file(tmp_path, {"torch": "*"}, requirements=["cupy-cuda12x>=14"])
    code = main(["resolve", str(profile), "--rocm", "7.2", *AMD])
    out, err = capsys.readouterr()
    assert (code, out) == (3, ""), err
    assert (
        "packages.requirements: cupy-cuda12x>=14 (cupy) is a CUDA build; cupy has ROCm builds in the"
        ' catalog (cupy-rocm-7-0): move it to [frameworks] as cupy = ">=14"'
    ) in err


def test_the_rocm_builds_own_distribution_is_installed_with_the_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = write_profile_file(tmp_path, {"torch": "*"}, requirements=["cupy-rocm-7-0"])
    code = main(["resolve", str(profile), "--rocm", "7.2", *AMD])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert 'move it to [frameworks] as cupy = "*"' in out


# ---------------------------------------------------------------------------------------------
# The script


def test_the_script_installs_the_rocm_wheels_from_their_places_and_no_nvidia_wheel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = write_profile_file(tmp_path, {"torch": "*", "xformers": "*", "cupy": "*"})
    script = tmp_path / "setup.sh"
    code = main(["render", str(profile), "--rocm", "7.2", *AMD, "-o", str(script)])
    assert code == 0, capsys.readouterr().err
    text = script.read_text()
    assert "xformers==0.0.35+rocm7.1" in text and "cupy-rocm-7-0==14.2.0" in text
    assert "torch==2.13.0+rocm7.1" in text and "https://download.pytorch.org/whl/rocm7.1" in text
    installs = [line for line in text.splitlines() if "==" in line and line.startswith("    ")]
    assert installs and not [line for line in installs if "nvidia-" in line or "cupy-cuda" in line]


def test_the_preflight_checks_the_gfx_every_rocm_build_has_the_packages_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The script refuses a GPU any chosen build lacks kernels for: torch's ROCm list has
    gfx1100, xformers' (gfx90a, gfx942) does not, so the preflight's list is the two they all
    have (a Radeon gfx1100 host stops there, not at xformers' first kernel)."""
    (tmp_path / "alone").mkdir()
    (tmp_path / "both").mkdir()
    alone = write_profile_file(tmp_path / "alone", {"torch": "*"})
    both = write_profile_file(tmp_path / "both", {"torch": "*", "xformers": "*"})
    lists = []
    for profile in (alone, both):
        script = profile.parent / "setup.sh"
        code = main(["render", str(profile), "--rocm", "7.2", *AMD, "-o", str(script)])
        assert code == 0, capsys.readouterr().err
        checks = next(line for line in script.read_text().splitlines() if line.startswith("checks=("))
        lists.append(checks.split("--rocm-gfx ", 1)[1].split(" ", 1)[0].strip("'").split(","))
    torch_alone, with_xformers = lists
    assert "gfx1100" in torch_alone
    assert with_xformers == ["gfx90a", "gfx942"]
