"""What resolve says on AMD GPUs where a ROCm audit found it wrong or silent (issue 36): a CUDA
package's ROCm build that loads the host's ROCm where the host's ROCm is not known (a warning
naming it, as torch's), a framework with no ROCm build at all (named as such, not as a gfx no
build has), a malformed ``--rocm`` (the accepted form named for every input) and a gfx with
target features (``gfx942:sramecc+:xnack-``, as torch's ``gcnArchName`` and ``rocminfo`` give it:
the refusal says what to give)."""

from __future__ import annotations

from pathlib import Path

import pytest

from colabenv.cli.main import main
from tests.support.profiles import write_profile_file

GOLDEN = Path(__file__).resolve().parents[2] / "profiles" / "golden"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["resolve", *argv, "--offline"])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_rocm_package_build_with_the_hosts_rocm_unknown_is_warned_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = write_profile_file(tmp_path, {"torch": "*", "cupy": "*"})
    code, out, err = _run(capsys, str(profile), "--gfx", "gfx942", "--python", "3.12")
    assert code == 0, err
    warning = next((line for line in out.splitlines() if line.startswith("warning: cupy")), "")
    assert "cupy (cupy-rocm-7-0) 14.2.0 rocm7.0: the host's ROCm is not known" in warning, out
    assert "libamdhip64.so.7" in warning and warning.endswith("give --rocm X.Y"), warning
    # with the host's ROCm given, neither torch nor cupy is warned of
    code, out, err = _run(capsys, str(profile), "--gfx", "gfx942", "--rocm", "7.0", "--python", "3.12")
    assert code == 0, err
    assert "the host's ROCm is not known" not in out, out


def test_a_framework_with_no_rocm_build_is_said_to_have_none(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(
        capsys, str(GOLDEN / "tensorflow.toml"), "--rocm", "7.2", "--gfx", "gfx942", "--python", "3.12"
    )
    assert (code, out) == (3, ""), err
    assert "  tensorflow has no ROCm build in the catalog" in err.splitlines(), err
    assert "has kernels for" not in err, err


@pytest.mark.parametrize("given", ["7", "007.1", "7.x", "6.4a", "7.2.1.0"])
def test_a_malformed_rocm_names_the_accepted_form(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, str(GOLDEN / "pytorch.toml"), "--rocm", given, "--gfx", "gfx942")
    assert (code, out) == (2, ""), err
    assert err.strip() == (
        f"colabenv: --rocm: {given!r} is not a ROCm version X.Y or X.Y.Z, e.g. 6.4 or 7.0.2"
    ), err


def test_a_malformed_rocm_in_a_profiles_target_names_the_accepted_form(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = write_profile_file(tmp_path, {"torch": "*"}, targets={"amd": {"rocm": "7", "python": "3.12"}})
    code = main(["profiles", "check", str(profile)])
    assert code == 2
    assert (
        'targets.amd.rocm: "7" is not a ROCm version X.Y or X.Y.Z, e.g. 6.4 or 7.0.2'
        in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("given", "features"),
    [("gfx942:sramecc+:xnack-", ":sramecc+:xnack-"), ("gfx90a:xnack+", ":xnack+")],
)
def test_a_gfx_with_target_features_is_told_to_drop_them(
    given: str, features: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, str(GOLDEN / "pytorch.toml"), "--rocm", "7.2", "--gfx", given)
    assert (code, out) == (2, ""), err
    assert len(err.strip().splitlines()) == 1, err
    gfx = given.split(":")[0]
    assert f"give {gfx} without its target features ({features})" in err, err
