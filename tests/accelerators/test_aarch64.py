"""torch on Linux aarch64 (issue 36): the catalog's aarch64 CUDA builds and the build the
package index serves as the plain wheel there, as the resolver takes them; Grace hosts (GH200
sm_90), the DGX Spark (GB10, sm_121) and Jetson Thor (sm_110) held to NVIDIA's rule for a
major; a release whose only aarch64 build is its CPU one named, never taken unasked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from colabenv.catalog.load import load_catalog
from colabenv.cli.main import main
from colabenv.errors import CatalogError
from colabenv.models import Framework
from tests.support.catalogs import release_entry, torch_variant, write_catalog

GOLDEN = Path(__file__).resolve().parents[2] / "profiles" / "golden"
AARCH64 = ("--platform", "linux_aarch64", "--python", "3.12", "--offline")


def _resolve(
    capsys: pytest.CaptureFixture[str], profile: Path, *argv: str
) -> tuple[int, dict[str, str], str]:
    code = main(["resolve", str(profile), "--json", *AARCH64, *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out)["frameworks"]["torch"] if code == 0 else {}), err


def _profile(tmp_path: Path, torch: str) -> Path:
    path = tmp_path / "p.toml"
    path.write_text(f'name = "p"\n[frameworks]\ntorch = {torch}\n', encoding="utf-8")
    return path


def test_a_gh200_gets_the_aarch64_cuda_13_build(capsys: pytest.CaptureFixture[str]) -> None:
    code, torch, err = _resolve(
        capsys,
        GOLDEN / "pytorch.toml",
        "--cuda",
        "13.0",
        "--compute-capability",
        "9.0",
        "--allow-unconfirmed",
    )
    assert code == 0, err
    assert (torch["version"], torch["variant"]) == ("2.11.0", "cu130"), torch
    assert "torch==2.11.0+cu130" in torch["requirements"]


def test_the_aarch64_cuda_13_builds_read_from_the_wheels_need_no_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, torch, err = _resolve(
        capsys, GOLDEN / "pytorch.toml", "--cuda", "13.0", "--compute-capability", "9.0"
    )
    assert code == 0, err
    assert (torch["version"], torch["variant"]) == ("2.11.0", "cu130"), torch


def test_the_aarch64_builds_not_read_are_unconfirmed_without_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, '"==2.10.0"')
    code, _, err = _resolve(capsys, profile, "--cuda", "13.0", "--compute-capability", "9.0")
    assert code == 3
    assert "cu130 is unconfirmed" in err, err


@pytest.mark.parametrize(
    ("cap", "variant"),
    [
        ("9.0", "cu132"),  # GH200
        ("10.0", "cu132"),  # GB200
        ("12.1", "cu132"),  # DGX Spark (GB10): sm_120 machine code runs on 12.1
        ("11.0", "cu132"),  # Jetson Thor
    ],
)
def test_grace_hosts_get_torch_2_15s_aarch64_cu132_build(
    cap: str, variant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, '"==2.15.0"')
    code, torch, err = _resolve(capsys, profile, "--cuda", "13.2", "--compute-capability", cap)
    assert code == 0, err
    assert (torch["version"], torch["variant"]) == ("2.15.0", variant), torch
    assert "torch==2.15.0+cu132" in torch["requirements"], torch


@pytest.mark.parametrize(
    ("cap", "variant"),
    [
        ("12.1", "cu130"),  # DGX Spark (GB10): sm_120 machine code runs on 12.1
        ("11.0", "cu130"),  # Jetson Thor: the aarch64 cu130 build lists sm_110
        ("10.3", "cu130"),  # GB300: sm_100 machine code runs on 10.3
    ],
)
def test_sm_121_and_sm_110_follow_nvidias_rule_for_their_major(
    cap: str, variant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, torch, err = _resolve(
        capsys, GOLDEN / "pytorch.toml", "--cuda", "13.0", "--compute-capability", cap, "--allow-unconfirmed"
    )
    assert code == 0, err
    assert torch["variant"] == variant, torch


def test_a_spark_runs_the_cu128_aarch64_build_but_a_thor_does_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, '{ version = "==2.10.0", variant = "cu128" }')
    code, torch, err = _resolve(
        capsys, profile, "--cuda", "12.8", "--compute-capability", "12.1", "--allow-unconfirmed"
    )
    assert code == 0, err
    assert torch["variant"] == "cu128"
    code, _, err = _resolve(
        capsys, profile, "--cuda", "12.8", "--compute-capability", "11.0", "--allow-unconfirmed"
    )
    assert code == 3
    assert "cu128 has no kernels for sm_110" in err, err


def test_a_release_whose_only_aarch64_build_is_cpu_is_exit_3_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, '"==2.8.0"')
    code, _, err = _resolve(capsys, profile, "--cuda", "12.9", "--compute-capability", "9.0")
    assert code == 3
    assert "cpu is the only linux_aarch64 build of torch 2.8.0 in the catalog" in err, err
    asked = _profile(tmp_path, '{ version = "==2.8.0", variant = "cpu" }')
    code, torch, err = _resolve(capsys, asked, "--cuda", "12.9", "--compute-capability", "9.0")
    assert code == 0, err
    assert torch["variant"] == "cpu"


@pytest.mark.parametrize(
    ("version", "default"),
    [
        ("2.4.1", None),
        ("2.5.0", "cpu"),  # torch/version.py of the plain aarch64 wheel: 2.5.0, no CUDA
        ("2.6.0", "cpu"),
        ("2.7.0", "cpu"),
        ("2.10.0", "cpu"),
        ("2.11.0", "cu130"),  # 2.11.0+cu130, whatever release/2.11's promote script said
        ("2.12.0", "cu130"),
        ("2.14.1", "cu130"),
        ("2.15.0", "cu132"),
    ],
)
def test_the_plain_aarch64_wheel_per_release(version: str, default: str | None) -> None:
    release = load_catalog().release(Framework.TORCH, Version(version))
    assert release is not None
    assert release.on_platform("linux_aarch64").default_variant == default
    assert release.on_platform("linux_x86_64").default_variant == release.default_variant


def test_an_aarch64_build_has_its_own_arch_list_beside_the_x86_one() -> None:
    release = load_catalog().release(Framework.TORCH, Version("2.9.0"))
    assert release is not None
    arm = release.on_platform("linux_aarch64").variant("cu130")
    x86 = release.on_platform("linux_x86_64").variant("cu130")
    assert arm is not None and x86 is not None
    assert [str(a) for a in arm.archs] == ["sm_80", "sm_90", "sm_100", "sm_110", "sm_120", "compute_120"]
    assert "linux_aarch64" not in x86.platforms and "sm_110" not in {str(a) for a in x86.archs}


@pytest.mark.parametrize(("version", "name"), [("2.11.0", "cu130"), ("2.14.1", "cu130"), ("2.15.0", "cu132")])
def test_the_aarch64_builds_read_from_the_wheel_have_no_ptx(version: str, name: str) -> None:
    # what every library with GPU code carries in the plain aarch64 wheel: libtorch_cuda.so has
    # no PTX, so no compute_120 (the build scripts' 12.0+PTX)
    release = load_catalog().release(Framework.TORCH, Version(version))
    assert release is not None
    arm = release.on_platform("linux_aarch64").variant(name)
    assert arm is not None and arm.unconfirmed is None
    assert [str(a) for a in arm.archs] == ["sm_80", "sm_90", "sm_100", "sm_110", "sm_120"]


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (
            torch_variant("cu124", archs=["sm_90"]),
            "a variant name is listed twice for one platform",
        ),
        (
            'platform_defaults = { linux_aarch64 = "cu124" }\n',
            "'cu124' is not a variant listed for linux_aarch64",
        ),
        ('platform_defaults = { linux_x86_64 = "cpu" }\n', "expected a platform other than the catalog's"),
    ],
)
def test_bad_platform_entries_name_the_key(tmp_path: Path, extra: str, words: str) -> None:
    if extra.startswith("platform_defaults"):
        release = release_entry("2.0.0", python=">=3.10").replace("[[release]]\n", "[[release]]\n" + extra)
        text = release + torch_variant("cu124") + torch_variant("cpu")
    else:
        text = release_entry("2.0.0", torch_variant("cu124"), extra)
    folder = write_catalog(
        tmp_path, torch='schema = 1\nframework = "torch"\n\n[archs]\nmodern = ["sm_90"]\n' + text
    )
    with pytest.raises(CatalogError) as caught:
        load_catalog(folder)
    assert words in str(caught.value)


def test_tensorflow_has_no_cuda_build_for_aarch64_and_is_exit_3_naming_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """tensorflow.org: the aarch64 builds are CPU builds (AWS's tensorflow-cpu-aws)."""
    code = main(
        [
            "resolve",
            str(GOLDEN / "tensorflow.toml"),
            *AARCH64,
            "--cuda",
            "12.8",
            "--compute-capability",
            "9.0",
        ]
    )
    err = capsys.readouterr().err
    assert code == 3
    assert "and-cuda has no linux_aarch64 wheel in the catalog (linux_x86_64 only)" in err, err
    assert "cpu is the only linux_aarch64 build of tensorflow 2.21.0 in the catalog" in err, err


def test_every_tensorflow_release_names_its_cpu_wheel_as_the_aarch64_one() -> None:
    releases = load_catalog().releases_of(Framework.TENSORFLOW)
    assert releases
    assert {r.on_platform("linux_aarch64").default_variant for r in releases} == {"cpu"}
