"""Hosts beyond x86-64 NVIDIA (issue 36), as the resolver and the commands see them: AMD GPUs
through ROCm (flags, a named target, the KFD topology of recorded hosts), Linux on aarch64 and
free-threaded Python; each held to what the catalog lists, never swapped for a CPU build, and
bad input one line with exit 2."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from packaging.version import Version

from colabenv.app.confirmation import file_target
from colabenv.cli.main import main
from colabenv.host.detect import detect
from colabenv.host.probe import HostProbe, list_dir
from colabenv.models import Accelerator, CpuTarget, RocmTarget, Target, TargetOverrides
from tests.support.index import LocalIndex
from tests.support.paths import DATA
from tests.support.profiles import write_profile_file
from tests.support.resolving import chosen, resolve_json
from tests.support.toml_text import Value

GOLDEN = Path(__file__).resolve().parents[2] / "profiles" / "golden"
AMD = DATA / "hosts" / "amd"


def _resolve(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object], str]:
    return resolve_json(capsys, str(GOLDEN / "pytorch.toml"), "--offline", *argv)


def test_amd_gpus_get_the_newest_rocm_build_the_host_reaches_with_their_kernels(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, resolution, err = _resolve(
        capsys, "--rocm", "6.4", "--gfx", "gfx942", "--python", "3.12", "--allow-unconfirmed"
    )
    assert code == 0, err
    target = resolution["target"]
    assert isinstance(target, dict)
    assert (target["accelerator"], target["rocm"], target["gfx"]) == ("rocm", "6.4", ["gfx942"])
    torch = chosen(resolution)
    # torch 2.10 and 2.11 need ROCm 7: 2.9.1's newest build the host's 6.4 reaches
    assert (torch["version"], torch["variant"]) == ("2.9.1", "rocm6.4"), torch
    assert "torch==2.9.1+rocm6.4" in torch["requirements"]
    assert "kernels for gfx942" in torch["reason"]


def test_a_gfx_no_build_has_is_exit_3_naming_each_build_never_the_cpu_build(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = _resolve(
        capsys, "--rocm", "7.2", "--gfx", "gfx1013", "--python", "3.12", "--allow-unconfirmed"
    )
    assert code == 3
    assert "rocm7.2 has no kernels for gfx1013" in err
    assert "cu128 is a CUDA build; the target's GPUs are AMD (ROCm)" in err
    assert "cpu" not in {line.split()[-1] for line in err.splitlines()}


def test_without_the_hosts_rocm_the_newest_build_with_the_kernels_is_taken_with_a_warning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, resolution, err = _resolve(capsys, "--gfx", "gfx90a", "--python", "3.12", "--allow-unconfirmed")
    assert code == 0, err
    assert chosen(resolution)["variant"] == "rocm7.2"  # torch 2.11.0's newest
    warnings = resolution["warnings"]
    assert isinstance(warnings, list)
    assert any("the host's ROCm is not known" in w for w in warnings), warnings


@pytest.mark.parametrize(
    ("rocm", "variant"),
    [
        ("7.14", "rocm7.14"),  # a ROCm 7 host: 10.0 is past its ROCm, 7.14 the newest it reaches
        ("10.0", "rocm10.0"),  # from ROCm 10.0 on the 10.0 build is the newest
    ],
)
def test_torch_2_15s_rocm_builds_are_taken_by_the_hosts_rocm_where_allowed(
    rocm: str, variant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text('name = "p"\n[frameworks]\ntorch = "==2.15.0"\n')
    argv = [str(profile), "--offline", "--rocm", rocm, "--gfx", "gfx942", "--python", "3.12"]
    code, resolution, err = resolve_json(capsys, *argv, "--allow-unconfirmed")
    assert code == 0, err
    torch = chosen(resolution)
    assert (torch["version"], torch["variant"]) == ("2.15.0", variant), torch
    assert f"torch==2.15.0+{variant}" in torch["requirements"], torch
    # read from the 2.15 cycle's nightly configuration, not release/2.15: unconfirmed
    code, _, err = resolve_json(capsys, *argv)
    assert code == 3
    assert f"{variant} is unconfirmed" in err, err


def test_a_cuda_package_on_amd_gpus_is_exit_3_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text('name = "p"\n[frameworks]\ntorch = "*"\ncudf = "*"\n')  # cudf: no ROCm build
    code = main(
        [
            "resolve",
            str(profile),
            "--offline",
            "--rocm",
            "6.4",
            "--gfx",
            "gfx942",
            "--python",
            "3.12",
            "--allow-unconfirmed",
        ]
    )
    err = capsys.readouterr().err
    assert code == 3
    assert "frameworks.cudf: cudf has no ROCm build in the catalog" in err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (
            # the aarch64 cu128 builds stand in for the x86-64 ones, and are unconfirmed (the cu130
            # ones 2.11 to 2.14 are the package index's plain aarch64 wheel, read)
            ["--platform", "linux_aarch64", "--driver", "570.86.10"],
            "cu128 is unconfirmed (the arch list is read from copies of the build scripts",
        ),
        # torch 2.9 to 2.11's free-threaded CPU wheels are known from what upstream tested alone
        (["--python", "3.14t", "--cpu"], "cpu is unconfirmed (free-threaded wheels: pytorch/test-infra"),
    ],
)
def test_aarch64_and_free_threaded_take_only_what_the_catalog_lists_for_them(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _resolve(capsys, *(argv if "--python" in argv else [*argv, "--python", "3.12"]))
    assert code == 3
    assert words in err, err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (
            ["--platform", "win_amd64"],
            "--platform: 'win_amd64' is not a platform (linux_x86_64 or linux_aarch64)",
        ),
        (["--gfx", "gfx94z"], "--gfx: 'gfx94z' is not an AMD GPU architecture like gfx942"),
        (["--rocm", "6.4a"], "--rocm: '6.4a' is not a ROCm version X.Y or X.Y.Z"),
        (["--rocm", "6.4", "--driver", "550.54.15"], "--rocm cannot be combined with --driver"),
        (["--gfx", "gfx942", "--tpu", "v5e-1"], "--gfx cannot be combined with --tpu"),
        (["--python", "3.12x"], "--python: '3.12x' is not a Python version"),
    ],
)
def test_bad_host_flags_are_one_line_and_exit_2(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["resolve", str(GOLDEN / "pytorch.toml"), "--offline", *argv])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert words in err and len(err.strip().splitlines()) == 1, err


def test_rocm_variables_beside_nvidia_ones_are_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLABENV_GFX", "gfx942")
    monkeypatch.setenv("COLABENV_DRIVER_VERSION", "550.54.15")
    code = main(["resolve", str(GOLDEN / "pytorch.toml"), "--offline", "--python", "3.12"])
    assert code == 2
    assert "COLABENV_GFX and COLABENV_DRIVER_VERSION are both set" in capsys.readouterr().err
    # a flag beats the variables of another accelerator
    code, _, err = _resolve(capsys, "--cpu", "--python", "3.12")
    assert code == 0, err


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        (
            {"rocm": "6.4", "driver": "550.54.15", "python": "3.12"},
            "targets.amd.rocm: AMD GPUs cannot have driver",
        ),
        ({"gfx": ["gfx9x"], "python": "3.12"}, "targets.amd.gfx: 'gfx9x' is not an AMD GPU architecture"),
        ({"rocm": "6.x", "python": "3.12"}, 'targets.amd.rocm: "6.x" is not a ROCm version'),
        (
            {"cpu": True, "platform": "linux_arm64", "python": "3.12"},
            'targets.amd.platform: "linux_arm64" is not a platform',
        ),
    ],
)
def test_profiles_check_refuses_a_contradicting_or_malformed_host_target(
    entry: dict[str, Value], words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = write_profile_file(tmp_path, {"torch": "*"}, targets={"amd": entry})
    code = main(["profiles", "check", str(profile)])
    assert code == 2
    assert words in capsys.readouterr().err


def test_a_named_amd_target_resolves_as_its_flags_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mi300 = {"rocm": "6.1", "gfx": "gfx942", "python": "3.11"}
    profile = write_profile_file(tmp_path, {"torch": "==2.4.1"}, targets={"mi300": mi300})
    code = main(["resolve", str(profile), "--json", "--offline", "--target", "mi300"])
    out, err = capsys.readouterr()
    assert code == 0, err
    torch = json.loads(out)["frameworks"]["torch"]
    assert torch["variant"] == "rocm6.1"  # confirmed: 2.4's gfx list read at its release commit


def _amd_probe(name: str) -> HostProbe:
    """A host with no NVIDIA GPU whose sysfs is a recorded AMD host's."""
    return HostProbe(
        environ={"PATH": "/nonexistent"},
        distributions=lambda: (),
        python_version="3.12.13",
        python_implementation="CPython",
        platform_tag="linux_x86_64",
        glibc="2.35",
        load_nvml=_no_nvml,
        read_text=_nothing,
        path_exists=lambda _path: False,
        which=lambda _name: None,
        root=AMD / name,
        list_dir=list_dir,
    )


def _no_nvml() -> object:
    raise ImportError("no NVML on an AMD host")


def _nothing(path: Path) -> str:
    raise FileNotFoundError(path)


@pytest.mark.parametrize(("host", "gfx"), [("mi300x-cpx", ("gfx942",)), ("mi210-x8", ("gfx90a",))])
def test_detect_reads_amd_gpus_from_a_recorded_kfd_topology(host: str, gfx: tuple[str, ...]) -> None:
    fingerprint = detect(probe=_amd_probe(host))
    target = fingerprint.target
    assert target.accelerator is Accelerator.ROCM
    assert target.gfx == gfx
    assert target.rocm is None  # no ROCm userspace recorded: not known, and said
    assert any("ROCm version not known" in note for note in fingerprint.notes), fingerprint.notes
    # the flags fill in what the host lacks; --cpu leaves the GPUs aside
    given = detect(TargetOverrides(rocm=RocmTarget(Version("6.4"))), probe=_amd_probe(host)).target
    assert (given.rocm, given.gfx) == (Version("6.4"), gfx)
    assert detect(TargetOverrides(cpu=True), probe=_amd_probe(host)).target.device == CpuTarget()


def test_a_free_threaded_target_takes_its_own_abi_and_never_abi3() -> None:
    plain = Target(CpuTarget(), Version("3.14"))
    threaded = dataclasses.replace(plain, free_threaded=True)
    assert "cp314-abi3-manylinux_2_28_x86_64" in file_target(plain).tags
    tags = file_target(threaded).tags
    assert "cp314-cp314t-manylinux_2_28_x86_64" in tags and "cp314-cp314-manylinux_2_28_x86_64" not in tags
    assert not any("-abi3-" in tag for tag in tags)
    assert "py3-none-any" in tags


def test_a_lock_for_a_free_threaded_python_is_refused_before_anything_is_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """uv's pip compile --python-version does not take 3.14t (uv 0.13): the lock is refused,
    saying so, before any index is asked (ROCm and aarch64 targets are locked:
    tests/integration/test_lock_hosts.py)."""
    profile = tmp_path / "p.toml"
    profile.write_text(
        'name = "p"\n[packages]\nrequirements = ["six"]\n[install]\nindex_url = "http://127.0.0.1:9/simple/"\n'
    )
    out = tmp_path / "requirements.lock"
    code = main(["lock", str(profile), "-o", str(out), "--cpu", "--python", "3.14t"])
    captured = capsys.readouterr()
    assert code == 2 and not out.exists() and captured.out == ""
    assert "lock: a free-threaded Python (3.14t) cannot be locked yet: uv's pip compile" in captured.err
    assert "does not take 3.14t" in captured.err and len(captured.err.splitlines()) == 1


@pytest.mark.parametrize("unconfirmed", [True, False])
def test_a_free_threaded_lock_of_a_framework_asks_no_index_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], unconfirmed: bool
) -> None:
    """With a framework to confirm against its index (torch's CPU build from a PyTorch index on
    127.0.0.1), the refusal still comes first: no request reaches the index, no "not checked
    against the index" warning, no resolution error (without --allow-unconfirmed) in its place."""
    with LocalIndex(tmp_path) as index:
        profile = tmp_path / "p.toml"
        profile.write_text(
            'name = "p"\n[frameworks]\ntorch = { version = "*", variant = "cpu" }\n'
            f'[install]\nindex_url = "{index.url}"\npytorch_index_url = "{index.base_url}"\n'
        )
        out = tmp_path / "requirements.lock"
        flags = ["--allow-unconfirmed"] if unconfirmed else []
        code = main(["lock", str(profile), "-o", str(out), "--cpu", "--python", "3.14t", *flags])
        asked = list(index.requests)
    captured = capsys.readouterr()
    assert (code, captured.out, asked, out.exists()) == (2, "", [], False), captured.err
    assert captured.err.splitlines() == [
        "colabenv: lock: a free-threaded Python (3.14t) cannot be locked yet: uv's pip compile "
        "--python-version does not take 3.14t (uv 0.13), and pins resolved for the GIL build would "
        "not load; render without --lock installs for it"
    ]


def test_a_free_threaded_named_target_is_refused_before_the_targets_before_it_are_locked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``lock --all-targets`` checks every target first: the target with the GIL listed before
    the free-threaded one is not resolved, no index is asked, nothing is written."""
    with LocalIndex(tmp_path) as index:
        profile = tmp_path / "p.toml"
        profile.write_text(
            'name = "p"\n[packages]\nrequirements = ["six"]\n'
            f'[install]\nindex_url = "{index.url}"\n'
            '[targets]\nok = { cpu = true, python = "3.12" }\nft = { cpu = true, python = "3.14t" }\n'
        )
        out = tmp_path / "requirements.lock"
        code = main(["lock", str(profile), "--all-targets", "-o", str(out)])
        asked = list(index.requests)
    captured = capsys.readouterr()
    assert (code, captured.out, asked, out.exists()) == (2, "", [], False), captured.err
    assert captured.err.startswith(
        "colabenv: target ft: lock: a free-threaded Python (3.14t) cannot be locked"
    )
    assert len(captured.err.splitlines()) == 1, captured.err


T4 = ("--driver", "580.65.06", "--compute-capability", "7.5")


@pytest.mark.parametrize("python", ["3.13t", "3.14t"])
def test_a_free_threaded_python_gets_the_build_whose_t_wheels_a_source_lists(
    python: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, resolution, err = _resolve(capsys, *T4, "--python", python)
    assert code == 0, err
    target = resolution["target"]
    assert isinstance(target, dict) and target["free_threaded"] is True
    # torch 2.10 and 2.11 (and 2.9.1 cu128) are known to have t wheels from the release
    # matrices alone: 2.9.1 cu126's files are listed (nixpkgs' binary hashes)
    assert (chosen(resolution)["version"], chosen(resolution)["variant"]) == ("2.9.1", "cu126")


def test_a_free_threaded_python_takes_a_tested_build_only_where_unconfirmed_builds_are_allowed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, resolution, err = _resolve(capsys, *T4, "--python", "3.14t", "--allow-unconfirmed")
    assert code == 0, err
    assert chosen(resolution)["version"] == "2.11.0"
    warnings = resolution["warnings"]
    assert isinstance(warnings, list)
    assert any("is unconfirmed: free-threaded wheels" in w for w in warnings), warnings
    # a Python with the GIL is not held to the free-threaded facts
    code, resolution, err = _resolve(capsys, *T4, "--python", "3.14")
    assert code == 0, err
    assert chosen(resolution)["version"] == "2.11.0"
    assert not any("free-threaded" in w for w in resolution["warnings"])  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("frameworks", "python", "words"),
    [
        ('torch = "==2.6.*"', "3.13t", "frameworks.torch: no release satisfying ==2.6.* runs on the target"),
        ('torch = "==2.6.*"', "3.13t", "cu126 has no free-threaded wheel (cp313t) in the catalog"),
        ('torch = "==2.12.*"', "3.13t", "cu126 has no free-threaded wheel (cp313t) in the catalog"),
        ('jax = "==0.4.35"', "3.13t", "cuda12 has no free-threaded wheel (cp313t) in the catalog"),
    ],
)
def test_a_build_without_t_wheels_is_exit_3_naming_it(
    frameworks: str, python: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(f'name = "p"\n[frameworks]\n{frameworks}\n')
    code = main(["resolve", str(profile), "--offline", *T4, "--python", python, "--allow-unconfirmed"])
    out, err = capsys.readouterr()
    assert (code, out) == (3, "")
    assert words in err, err
