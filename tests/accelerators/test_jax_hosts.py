"""jax beyond x86-64 NVIDIA (issue 36): on an aarch64 NVIDIA host a CUDA plugin build listed
for linux_aarch64; on AMD GPUs the ROCm plugin build whose ROCm the host reaches and whose gfx
list has every GPU, installed with its plugin and PJRT pins from AMD's find-links page (jax's
own ``rocm`` extra of that release names the ROCm 6 plugin); never a CPU build unasked."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from packaging.version import Version

from colabenv.catalog.load import load_catalog
from colabenv.cli.main import main
from colabenv.errors import CatalogError
from colabenv.models import Framework
from tests.support.catalogs import release_entry, variant_entry, write_catalog

GOLDEN = Path(__file__).resolve().parents[2] / "profiles" / "golden"
ROCM_PAGE = "https://repo.radeon.com/rocm/manylinux/rocm-rel-7.1/"


def _profile(tmp_path: Path, jax: str) -> Path:
    path = tmp_path / "p.toml"
    path.write_text(f'name = "p"\n[frameworks]\njax = {jax}\n', encoding="utf-8")
    return path


def _resolve(
    capsys: pytest.CaptureFixture[str], profile: Path, *argv: str
) -> tuple[int, dict[str, object], str]:
    code = main(["resolve", str(profile), "--json", "--offline", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out)["frameworks"]["jax"] if code == 0 else {}), err


AARCH64 = ("--platform", "linux_aarch64", "--driver", "580.65.06", "--python", "3.12")


@pytest.mark.parametrize(("cap", "variant"), [("9.0", "cuda13"), ("12.1", "cuda13")])
def test_an_aarch64_nvidia_host_gets_a_cuda_plugin_build_listed_for_aarch64(
    cap: str, variant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """GH200 (9.0) and the DGX Spark (12.1: sm_120 machine code runs on 12.1); the golden
    profile's range (<0.9) ends at 0.8.3, whose aarch64 builds were read from their wheels."""
    code, jax, err = _resolve(capsys, GOLDEN / "jax.toml", *AARCH64, "--compute-capability", cap)
    assert code == 0, err
    assert (jax["version"], jax["variant"]) == ("0.8.3", variant), jax
    assert "jax[cuda13]==0.8.3" in jax["requirements"]  # type: ignore[operator]


def test_a_gh200_gets_the_newest_aarch64_build_without_allowing_unconfirmed_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plugin's and PJRT's manylinux_2_27_aarch64 wheels of every listed release from 0.7.2
    on were read from the package index: the newest release has a confirmed aarch64 build."""
    code, jax, err = _resolve(capsys, _profile(tmp_path, '"*"'), *AARCH64, "--compute-capability", "9.0")
    assert code == 0, err
    assert (jax["version"], jax["variant"]) == ("0.12.0.1", "cuda13"), jax
    assert "jax-cuda13-plugin==0.12.0.1" in jax["requirements"]  # type: ignore[operator]
    assert "jax-cuda13-pjrt==0.12.0.1" in jax["requirements"]  # type: ignore[operator]
    assert "unconfirmed" not in err, err


def test_a_thor_has_no_kernels_in_the_aarch64_builds_before_0_10_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """sm_110 came with the 0.10.2 lists (.bazelrc cuda_v13; the aarch64 wheels carry it);
    compute_120 PTX does not run on 11.0, so the golden profile's range (<0.9) has no build."""
    code, _, err = _resolve(capsys, GOLDEN / "jax.toml", *AARCH64, "--compute-capability", "11.0")
    assert code == 3
    assert "cuda13 has no kernels for sm_110" in err, err
    code, jax, err = _resolve(capsys, _profile(tmp_path, '"*"'), *AARCH64, "--compute-capability", "11.0")
    assert code == 0, err
    assert (jax["version"], jax["variant"]) == ("0.12.0.1", "cuda13"), jax


def test_jax_on_aarch64_where_no_release_has_an_aarch64_build_is_exit_3_naming_the_platform(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """0.7.1's cuda12 build is listed for linux_x86_64 alone (0.7.2 is the first with aarch64
    builds in the catalog)."""
    profile = _profile(tmp_path, '"==0.7.1"')
    code, _, err = _resolve(capsys, profile, *AARCH64, "--compute-capability", "9.0", "--allow-unconfirmed")
    assert code == 3
    assert "cuda12 has no linux_aarch64 wheel in the catalog" in err, err
    assert "cpu" not in err.split("runs on the target")[0]


@pytest.mark.parametrize(
    "version",
    ["0.7.2", "0.8.0", "0.8.3", "0.9.2", "0.10.0", "0.10.2", "0.11.0", "0.11.2", "0.12.0", "0.12.0.1"],
)
def test_the_aarch64_builds_are_read_from_their_wheels_and_match_the_x86_ones(version: str) -> None:
    """The aarch64 wheels carry the x86-64 build's arch list and with-cuda pins (one .bazelrc
    list and one plugin_setup.py for both platforms), and pin the plugin and PJRT."""
    release = load_catalog().release(Framework.JAX, Version(version))
    assert release is not None
    for name in ("cuda12", "cuda13"):
        arm = release.on_platform("linux_aarch64").variant(name)
        x86 = release.on_platform("linux_x86_64").variant(name)
        assert arm is not None and x86 is not None and arm is not x86
        assert arm.platforms == ("linux_aarch64",) and arm.unconfirmed is None
        assert (arm.archs, arm.pin_texts, arm.cuda) == (x86.archs, x86.pin_texts, x86.cuda)
        jaxlib = str(release.companions[0].version)
        assert arm.requires == (f"jax-{name}-plugin=={jaxlib}", f"jax-{name}-pjrt=={jaxlib}")
        assert f"jax_{name}_plugin-{jaxlib}-cp312-cp312-manylinux_2_27_aarch64.whl (sha256 " in str(
            arm.source
        )


ROCM = ("--python", "3.12")


def test_a_mi300x_with_rocm_7_1_gets_the_rocm7_plugin_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, '">=0.7,<0.8"')
    code, jax, err = _resolve(capsys, profile, *ROCM, "--rocm", "7.1", "--gfx", "gfx942")
    assert code == 0, err
    assert (jax["version"], jax["variant"]) == ("0.7.1", "rocm7"), jax
    assert jax["requirements"] == [
        "jax==0.7.1",
        "jaxlib==0.7.1",
        "jax-rocm7-plugin==0.7.1",
        "jax-rocm7-pjrt==0.7.1",
    ]
    assert jax["find_links"] == ROCM_PAGE


def test_a_newer_host_rocm_reaches_the_build_and_every_gpu_needs_kernels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, '">=0.7,<0.8"')
    code, jax, err = _resolve(capsys, profile, *ROCM, "--rocm", "7.2", "--gfx", "gfx942,gfx90a")
    assert code == 0, err
    assert jax["variant"] == "rocm7"
    code, _, err = _resolve(capsys, profile, *ROCM, "--rocm", "7.2", "--gfx", "gfx942,gfx1013")
    assert code == 3
    assert "rocm7 has no kernels for gfx1013" in err, err


def test_a_gfx_no_jax_build_has_is_exit_3_naming_the_nearest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _resolve(
        capsys, _profile(tmp_path, '">=0.7,<0.8"'), *ROCM, "--rocm", "7.1", "--gfx", "gfx1013"
    )
    assert code == 3
    assert (
        "no jax build in the catalog has kernels for gfx1013; the nearest: jax 0.12.0 rocm7 (gfx1012)" in err
    ), err


def test_a_rocm_too_old_is_exit_3_naming_the_rocm_the_build_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _resolve(
        capsys, _profile(tmp_path, '">=0.7,<0.8"'), *ROCM, "--rocm", "6.4", "--gfx", "gfx942"
    )
    assert code == 3
    assert "rocm7 needs ROCm >= 7.1 (host ROCm 6.4)" in err, err


@pytest.mark.parametrize(
    ("rocm", "flag", "version"),
    [
        ("7.1", (), "0.7.1"),
        ("7.2", (), "0.10.0"),
        ("7.14", (), "0.12.0"),
    ],
)
def test_a_mi300x_gets_the_newest_rocm_build_its_rocm_reaches(
    rocm: str, flag: tuple[str, ...], version: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The package index's jax-rocm7-plugin builds: 0.9.2 and 0.10.0 for ROCm 7.2, 0.11.2 and
    0.12.0 for ROCm 7.14 (their METADATA Summary), each gfx list read from its plugin's
    zstd-compressed bundles; 0.7.1's from its plugin's plain bundles."""
    profile = _profile(tmp_path, '"*"')
    code, jax, err = _resolve(capsys, profile, *ROCM, "--rocm", rocm, "--gfx", "gfx942", *flag)
    assert code == 0, err
    assert (jax["version"], jax["variant"]) == (version, "rocm7"), jax
    if version != "0.7.1":  # from the package index itself: no find-links page
        assert jax["requirements"][-2:] == [  # type: ignore[index]
            f"jax-rocm7-plugin=={version}",
            f"jax-rocm7-pjrt=={version}",
        ]
        assert jax.get("find_links") is None, jax


def test_the_package_index_rocm_builds_carry_the_gfx_their_bundles_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """0.9.2's and 0.10.0's plugins carry gfx908, gfx90a and LLVM's generic targets (a gfx1151,
    Strix Halo, runs gfx11-generic code) but no gfx906 code, which 0.7.1's and 0.11.2's carry."""
    newer = _profile(tmp_path, '">=0.9"')
    code, jax, err = _resolve(capsys, newer, *ROCM, "--rocm", "7.2", "--gfx", "gfx1151")
    assert code == 0, err
    assert (jax["version"], jax["variant"]) == ("0.10.0", "rocm7"), jax
    code, _, err = _resolve(capsys, newer, *ROCM, "--rocm", "7.2", "--gfx", "gfx906")
    assert code == 3
    assert "jax 0.9.2 to 0.10.0: rocm7 has no kernels for gfx906" in err, err
    code, jax, err = _resolve(capsys, _profile(tmp_path, '"*"'), *ROCM, "--rocm", "7.2", "--gfx", "gfx906")
    assert code == 0, err
    assert jax["version"] == "0.7.1", jax
    code, jax, err = _resolve(capsys, newer, *ROCM, "--rocm", "7.14", "--gfx", "gfx906")
    assert code == 0, err
    assert jax["version"] == "0.12.0", jax


@pytest.mark.parametrize("python", ["3.11", "3.13", "3.14t"])
def test_a_python_the_rocm_plugin_has_no_wheel_for_is_exit_3_never_the_cpu_build(
    python: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """AMD's page names the cp312 plugin wheel alone; no free-threaded one (pip would take the
    CPU jaxlib there, issue 36)."""
    code, _, err = _resolve(
        capsys, _profile(tmp_path, '">=0.7,<0.8"'), "--python", python, "--rocm", "7.1", "--gfx", "gfx942"
    )
    assert code == 3
    assert "rocm7 has no wheel for Python 3.1" in err, err


def test_the_rendered_rocm_script_installs_the_plugin_and_pjrt_from_amds_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "setup.sh"
    code = main(
        [
            "render",
            str(_profile(tmp_path, '">=0.7,<0.8"')),
            *ROCM,
            "--rocm",
            "7.1",
            "--gfx",
            "gfx942",
            "--offline",
            "-o",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    script = out.read_text(encoding="utf-8")
    for pin in ("jax==0.7.1", "jaxlib==0.7.1", "jax-rocm7-plugin==0.7.1", "jax-rocm7-pjrt==0.7.1"):
        assert f"\n    {pin}\n" in script, pin
    assert f"--find-links {ROCM_PAGE}" in script
    assert not re.findall(r"^ +nvidia-[\w-]+[=<>]", script, re.MULTILINE)  # no NVIDIA wheel pinned


def _rocm_build(extra: str) -> str:
    body = variant_entry("rocm7", cuda=None, archs=None, pins=None).rstrip("\n") + "\n"
    body += 'rocm = "7.1"\ngfx = ["gfx942"]\n' + extra
    return release_entry("0.7.1", body, default_variant=None)


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ('requires = ["jax-rocm7-plugin>=0.7.1"]\n', "is not pinned to one version"),
        ('requires = ["jax rocm7"]\n', "is not a requirement like jax-rocm7-plugin==0.7.1"),
        ('requires = "jax-rocm7-plugin==0.7.1"\n', "requires"),
        ('find_links = "http://repo.radeon.com/rocm/"\n', "find_links"),
    ],
)
def test_bad_requires_and_find_links_are_refused_with_the_key_path(
    tmp_path: Path, extra: str, words: str
) -> None:
    folder = write_catalog(tmp_path)
    jax = 'schema = 1\nframework = "jax"\ncompanions_follow_variant = false\n\n' + _rocm_build(extra)
    (folder / "jax.toml").write_text(jax, encoding="utf-8")
    with pytest.raises(CatalogError) as caught:
        load_catalog(folder)
    message = str(caught.value)
    assert words in message and "jax.toml" in message, message
    assert "variant" in message, message
