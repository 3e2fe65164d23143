"""A profile's ``[targets]``: named targets whose keys are the target flags, validated like every
other table (every problem, one line each, with its key path), merged along ``extends`` by name,
and made into targets on no host at all."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from colabenv.app.resolution import spec_target
from colabenv.errors import ProfileError
from colabenv.models import Accelerator, ComputeCapability, TargetSpec
from colabenv.profile.load import load_profile
from colabenv.profile.targets import MAX_TARGETS
from tests.support.fixtures import Runner

GOOD = """\
name = "team"

[frameworks]
torch = "*"

[targets]
nb = { driver = "550.54.15", compute_capability = ["7.5"], python = "3.12" }
cluster = { driver = "580.65.06", compute_capability = "9.0,8.0", python = "3.12.3" }
ci = { cpu = true, python = "3.12" }
pod = { tpu = "v5e-8", python = "3.11" }
"""


def _write(directory: Path, text: str, name: str = "team.toml") -> Path:
    path = directory / name
    path.write_text(text)
    return path


def test_targets_are_read_in_order(tmp_path: Path) -> None:
    profile = load_profile(_write(tmp_path, GOOD))
    assert [t.name for t in profile.targets] == ["nb", "cluster", "ci", "pod"]
    assert profile.target("nb") == TargetSpec(
        "nb", driver="550.54.15", compute_capability=("7.5",), python="3.12"
    )
    assert profile.target("cluster").compute_capability == ("9.0", "8.0")  # type: ignore[union-attr]
    assert profile.target("ci") == TargetSpec("ci", cpu=True, python="3.12")
    assert profile.target("pod") == TargetSpec("pod", tpu="v5e-8", python="3.11")


def test_named_targets_read_nothing_of_this_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLABENV_DRIVER_VERSION", "535.104.05")
    monkeypatch.setenv("COLABENV_PYTHON_VERSION", "3.10")
    profile = load_profile(_write(tmp_path, GOOD))
    nb = spec_target(profile, profile.targets[0])
    assert (nb.driver, nb.cuda, nb.compute_capabilities) == (
        Version("550.54.15"),
        Version("12.4"),
        (ComputeCapability(7, 5),),
    )
    assert nb.python == Version("3.12") and nb.platform == "linux_x86_64" and len(nb.installed) == 0
    ci = spec_target(profile, profile.targets[2])
    assert ci.accelerator is Accelerator.CPU and ci.driver is None
    pod = spec_target(profile, profile.targets[3])
    assert pod.accelerator is Accelerator.TPU and pod.tpu is not None and pod.tpu.generation == "v5e"


def test_a_tpu_type_the_catalog_does_not_know_names_the_key(tmp_path: Path) -> None:
    profile = load_profile(_write(tmp_path, GOOD.replace('"v5e-8"', '"v99-8"')))
    with pytest.raises(ProfileError) as caught:
        spec_target(profile, profile.targets[3])
    assert str(caught.value).startswith("team.toml: targets.pod.tpu: 'v99-8': "), str(caught.value)


BAD = """\
name = "bad"

[targets]
nb = { driver = "55x", compute_capability = ["7.5"], python = "3.12" }
ci = { cpu = true, driver = "550.54.15", python = "3" }
Gpu = { cpu = true, python = "3.12" }
vague = { python = "3.12" }
typo = { cpu = true, pyton = "3.12" }
caps = { compute_capability = ["7.x"], python = "3.12" }
pod = { tpu = "v5e-8", cpu = true, python = "3.12" }
str = "cpu"
"""


def test_bad_targets_are_exit_2_one_line_each_with_the_key_path(runner: Runner, tmp_path: Path) -> None:
    path = _write(tmp_path, BAD, "bad.toml")
    result = runner("profiles", "check", path)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.removeprefix("colabenv: ").splitlines()
    expected = [
        'bad.toml: targets.nb.driver: "55x" is not an NVIDIA driver version like 550.54.15',
        'bad.toml: targets.ci.python: "3" is not a Python version like 3.12',
        "bad.toml: targets.ci.cpu: cpu = true cannot be combined with driver",
        'bad.toml: targets.Gpu: "Gpu" is not a target name',
        "bad.toml: targets.vague: says nothing of its accelerator",
        "bad.toml: targets.typo.pyton: unknown key (did you mean 'python'?)",
        "bad.toml: targets.typo: no python",
        'bad.toml: targets.caps.compute_capability[0]: "7.x" is not a compute capability like 7.5',
        "bad.toml: targets.pod.tpu: a TPU target cannot have cpu",
        "bad.toml: targets.str: expected a table of target flags",
    ]
    for want in expected:
        assert any(line.startswith(want) for line in lines), (want, lines)
    lock = runner("lock", path, "--all-targets")
    assert lock.returncode == 2 and lock.stdout == ""


def test_the_number_of_targets_is_bounded(tmp_path: Path) -> None:
    entries = "\n".join(f't{i} = {{ cpu = true, python = "3.12" }}' for i in range(MAX_TARGETS + 1))
    with pytest.raises(ProfileError, match=f"{MAX_TARGETS + 1} targets; at most {MAX_TARGETS}"):
        load_profile(_write(tmp_path, f'name = "many"\n[targets]\n{entries}\n'))


def test_extends_replaces_a_target_whole_and_false_drops_one(tmp_path: Path) -> None:
    _write(tmp_path, GOOD)
    child = _write(
        tmp_path,
        'extends = "team.toml"\nname = "child"\n[targets]\n'
        'nb = { cpu = true, python = "3.11" }\nci = false\nedge = { cuda = "12.4", python = "3.12" }\n',
        "child.toml",
    )
    profile = load_profile(child)
    assert [t.name for t in profile.targets] == ["nb", "cluster", "pod", "edge"]
    assert profile.target("nb") == TargetSpec("nb", cpu=True, python="3.11")
    assert profile.content_hash != load_profile(tmp_path / "team.toml").content_hash


def test_target_flags_beside_target_are_refused(runner: Runner, tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD)
    both = runner("render", path, "--target", "ci", "--python", "3.12")
    assert both.returncode == 2 and both.stdout == ""
    assert "--target says what the target is; leave out --python" in both.stderr
    unknown = runner("render", path, "--target", "gpu")
    assert unknown.returncode == 2
    assert "no such target (targets: nb, cluster, ci, pod)" in unknown.stderr
    named = runner("resolve", path, "--cpu", "--python", "3.12")
    assert named.returncode in (0, 3)
