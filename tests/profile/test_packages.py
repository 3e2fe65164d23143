"""CUDA packages named in ``[frameworks]`` beside the frameworks: the forms accepted, what is
refused (one line each, with the key path), and ``extends`` dropping one."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from colabenv.errors import ProfileError
from colabenv.models import Framework, PackageRequest
from colabenv.profile.load import load_profile
from colabenv.profile.packages import misplaced


def test_the_forms_the_issue_names(tmp_path: Path) -> None:
    profile = load_profile(
        _write(tmp_path, 'torch = "*"\nxformers = "*"\ncudf = ">=26"\nbitsandbytes = { version = "*" }')
    )
    assert [r.framework for r in profile.frameworks] == [Framework.TORCH]
    assert profile.cuda_packages == (
        PackageRequest("xformers", "xformers", SpecifierSet()),
        PackageRequest("cudf", "cudf", SpecifierSet(">=26")),
        PackageRequest("bitsandbytes", "bitsandbytes", SpecifierSet()),
    )


def test_a_build_by_name_an_unknown_package_and_false(tmp_path: Path) -> None:
    profile = load_profile(
        _write(
            tmp_path, 'cupy = { version = "<15", variant = "cuda12" }\nTeam_Ext = "==1.*"\nxformers = false'
        )
    )
    assert profile.cuda_packages == (
        PackageRequest("cupy", "cupy", SpecifierSet("<15"), "cuda12"),
        PackageRequest("team-ext", "Team_Ext", SpecifierSet("==1.*")),
    )


REFUSED = [
    ('pytorch = "*"', "frameworks.pytorch", "unknown framework or CUDA package (did you mean 'torch'?)"),
    ('Torch = "*"', "frameworks.Torch", "did you mean 'torch'?"),
    ('cupyy = "*"', "frameworks.cupyy", "did you mean 'cupy'?"),
    ("xformers = true", "frameworks.xformers", 'true is not a version; use "*"'),
    ("xformers = 2", "frameworks.xformers", "expected a version specifier"),
    ('xformers = "2.x"', "frameworks.xformers", "not a version specifier"),
    ('cupy = { versoin = "*" }', "frameworks.cupy.versoin", "did you mean 'version'?"),
    ('cupy = { variant = "cu 12" }', "frameworks.cupy.variant", "is not a build name"),
    ('cupy = "*"\nCuPy = "*"', "frameworks.CuPy", "cupy is also given as 'cupy'"),
    (
        'torchvision = "*"',
        "frameworks.torchvision",
        "torchvision belongs to a framework: set frameworks.torch.torchvision",
    ),
    ('tf-keras = "*"', "frameworks.tf-keras", "tf-keras belongs to a framework"),
]


@pytest.mark.parametrize(("text", "key", "problem"), REFUSED)
def test_refused_with_the_key_path(tmp_path: Path, text: str, key: str, problem: str) -> None:
    with pytest.raises(ProfileError) as caught:
        load_profile(_write(tmp_path, text))
    message = str(caught.value)
    assert f"team.toml: {key}: " in message and problem in message
    assert caught.value.exit_code == 2


def test_a_child_drops_a_parents_package(tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text(
        'name = "base"\n[frameworks]\ntorch = "*"\nxformers = "*"\ncupy = "*"\n'
    )
    path = tmp_path / "team.toml"
    path.write_text('name = "team"\nextends = "base.toml"\n[frameworks]\nxformers = false\n')
    assert [p.name for p in load_profile(path).cuda_packages] == ["cupy"]


def test_misplaced_requirements_are_named_with_where_to_move_them() -> None:
    requirements = [Requirement(t) for t in ("cupy-cuda13x==14.2.0", "xformers", "cudf-cu12>=26", "rich")]
    warnings = misplaced(requirements, "team.toml")
    assert len(warnings) == 3
    assert warnings[0].endswith('move it to [frameworks] as cupy = "==14.2.0"')
    assert warnings[1].endswith('move it to [frameworks] as xformers = "*"')
    assert "cudf-cu12 is a CUDA package" in warnings[2]


def _write(tmp_path: Path, frameworks: str) -> Path:
    path = tmp_path / "team.toml"
    path.write_text(f'name = "team"\n[frameworks]\n{frameworks}\n')
    return path
