"""`colabenv profiles ...` and the malformed-profile corpus, through the real console script."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from colabenv._util import toml
from colabenv.profile.load import load_profile
from tests.support.fixtures import Runner
from tests.support.paths import REPO

MALFORMED = REPO / "tests" / "data" / "malformed"
GOLDEN = REPO / "profiles" / "golden"
EXPECTED: dict[str, dict[str, object]] = toml.loads(
    (MALFORMED / "expected.toml").read_text(encoding="utf-8")
)["files"]
CORPUS = sorted(p.name for p in MALFORMED.glob("*.toml") if p.name != "expected.toml")
GOLDEN_NAMES = ("all-three", "cpu-only", "jax", "jax-tpu", "pytorch", "tensorflow")


def assert_refused(result: subprocess.CompletedProcess[str], name: str) -> None:
    expected = EXPECTED[name]
    key = str(expected["key"])
    named = str(expected.get("file", name))
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert name in result.stderr
    where = f"{named}: {key}: " if key else f"{named}: "
    assert where in result.stderr, result.stderr
    for word in expected["contains"]:  # type: ignore[attr-defined]
        assert word in result.stderr, result.stderr
    for word in expected.get("absent", []):  # type: ignore[attr-defined]
        assert word not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) <= 3


def test_corpus_is_large_and_every_file_has_an_expectation() -> None:
    assert len(CORPUS) >= 30
    assert sorted(EXPECTED) == CORPUS


@pytest.mark.parametrize("name", CORPUS)
def test_check_refuses_malformed_profile(runner: Runner, name: str) -> None:
    assert_refused(runner("profiles", "check", str(MALFORMED / name)), name)


@pytest.mark.parametrize("name", CORPUS)
def test_render_refuses_malformed_profile(runner: Runner, name: str) -> None:
    result = runner("render", str(MALFORMED / name), "--cpu", "--python", "3.12")
    assert_refused(result, name)


def test_check_several_files_reports_each_and_exits_2(runner: Runner) -> None:
    bad = MALFORMED / "spec-2x.toml"
    result = runner("profiles", "check", "pytorch", str(bad), str(GOLDEN / "jax.toml"))
    assert result.returncode == 2
    assert result.stdout.splitlines() == [
        "ok: pytorch (pytorch)",
        f"ok: {GOLDEN / 'jax.toml'} (jax)",
    ]
    assert "spec-2x.toml: frameworks.torch: " in result.stderr
    assert "Traceback" not in result.stderr


def test_check_several_good_files(runner: Runner) -> None:
    result = runner("profiles", "check", *GOLDEN_NAMES)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"ok: {n} ({n})" for n in GOLDEN_NAMES]
    assert result.stderr == ""


def test_check_relative_path_from_another_directory(runner: Runner, tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text('name = "base"\n[frameworks]\njax = "*"\n')
    (tmp_path / "team.toml").write_text('name = "team"\nextends = "base.toml"\n')
    result = runner("profiles", "check", "team.toml", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "ok: team.toml (team)\n", "")


@pytest.mark.parametrize("kind", ["folder", "file"])
def test_a_golden_name_beside_a_file_of_that_name_says_which_was_used(
    runner: Runner, tmp_path: Path, kind: str
) -> None:
    if kind == "folder":
        (tmp_path / "pytorch").mkdir()
    else:
        (tmp_path / "pytorch").write_text('name = "mine"\n')
    note = (
        "colabenv: note: using the golden profile pytorch, not ./pytorch in this directory"
        " (write ./pytorch for that one)\n"
    )
    result = runner("resolve", "pytorch", "--json", "--cpu", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "torch" in json.loads(result.stdout)["frameworks"]
    assert result.stderr == note
    check = runner("profiles", "check", "pytorch", cwd=tmp_path)
    assert (check.returncode, check.stdout, check.stderr) == (0, "ok: pytorch (pytorch)\n", note)
    if kind == "file":
        mine = runner("profiles", "check", "./pytorch", cwd=tmp_path)
        assert (mine.returncode, mine.stdout, mine.stderr) == (0, "ok: ./pytorch (mine)\n", "")


def test_check_unknown_name_lists_golden_profiles(runner: Runner) -> None:
    result = runner("profiles", "check", "no-such-profile")
    assert result.returncode == 2
    assert result.stdout == ""
    assert '"no-such-profile"' in result.stderr
    for name in GOLDEN_NAMES:
        assert name in result.stderr


def test_check_directory_is_refused(runner: Runner, tmp_path: Path) -> None:
    result = runner("profiles", "check", str(tmp_path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert f"{tmp_path.name}: is a directory" in result.stderr
    assert "Traceback" not in result.stderr


def test_list_shows_each_golden_profile_with_its_description(runner: Runner) -> None:
    result = runner("profiles", "list")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(GOLDEN_NAMES)
    starts = {line.index(line.split(maxsplit=1)[1]) for line in lines}
    assert len(starts) == 1, "descriptions are not aligned"
    for line in lines:
        name, description = line.split(maxsplit=1)
        text = (GOLDEN / f"{name}.toml").read_text(encoding="utf-8")
        assert f'description = "{description}"' in text


def test_show_prints_the_file_as_is(runner: Runner) -> None:
    result = runner("profiles", "show", "all-three")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (GOLDEN / "all-three.toml").read_text(encoding="utf-8")


def test_show_unknown_name(runner: Runner) -> None:
    result = runner("profiles", "show", "pytorch2")
    assert result.returncode == 2
    assert result.stdout == ""
    assert '"pytorch2"' in result.stderr and "pytorch" in result.stderr


def test_profiles_without_action_is_a_usage_error(runner: Runner) -> None:
    result = runner("profiles")
    assert result.returncode == 2
    assert result.stdout == ""


COLAB_T4 = ("--driver", "550.54.15", "--cuda", "12.4", "--compute-capability", "7.5")
KAGGLE_P100 = ("--driver", "560.35.03", "--cuda", "12.6", "--compute-capability", "6.0")
H100_580 = ("--driver", "580.65.06", "--cuda", "13.0", "--compute-capability", "9.0")


@pytest.mark.parametrize("name", GOLDEN_NAMES)
@pytest.mark.parametrize(
    "gpu", [COLAB_T4, KAGGLE_P100, H100_580], ids=["colab-t4", "kaggle-p100", "h100-driver-580"]
)
def test_golden_profile_resolves_with_the_shipped_catalog(
    runner: Runner, name: str, gpu: tuple[str, ...], tmp_path: Path
) -> None:
    """The golden pins exist in the catalog and, for all-three, share one set of NVIDIA wheels."""
    freeze = tmp_path / "empty-freeze.txt"
    freeze.write_text("")
    target = ("--cpu",) if name == "cpu-only" else gpu
    result = runner("resolve", name, "--json", "--python", "3.12", "--installed-from", str(freeze), *target)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    resolution = json.loads(result.stdout)
    wanted = {r.framework.value for r in load_profile(GOLDEN / f"{name}.toml").frameworks}
    assert set(resolution["frameworks"]) == wanted
    if name == "all-three":
        variants = {k: v["variant"] for k, v in resolution["frameworks"].items()}
        assert variants["torch"] in ("cu126", "cu128"), variants
        assert (variants["tensorflow"], variants["jax"]) == ("and-cuda", "cuda12")
    if name == "cpu-only":
        assert {v["variant"] for v in resolution["frameworks"].values()} == {"cpu"}


def test_every_mistake_of_a_profile_is_printed_and_exits_2(runner: Runner, tmp_path: Path) -> None:
    profile = tmp_path / "team.toml"
    profile.write_text(
        'name = "team"\n[frameworks]\ntorch = "2.x"\n[env]\nLD_PRELOAD = "/x.so"\n[verify]\ntimeout_s = 0\n'
    )
    lines = [
        'team.toml: frameworks.torch: "2.x" is not a version specifier (examples: ">=2.5,<2.7",'
        ' "==2.6.*", "*")',
        "team.toml: env.LD_PRELOAD: refused: the dynamic loader and the C library read it when a"
        " process starts, before Python runs: from the .pth hook it does nothing here and injects"
        " into every child process",
        "team.toml: verify.timeout_s: must be more than 0",
    ]
    for args in (("profiles", "check", profile), ("render", profile, "--cpu", "-o", tmp_path / "s.sh")):
        result = runner(*args)
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr.splitlines() == ["colabenv: " + lines[0], *lines[1:]]
    assert not (tmp_path / "s.sh").exists()


@pytest.mark.parametrize(
    ("target", "key"),
    [
        pytest.param(
            'driver = "450.80.02"\ncuda = "12.4"\npython = "3.12"',
            "targets.x.cuda: 12.4 conflicts with driver 450.80.02",
            id="driver",
        ),
        pytest.param(
            'runtime = "colab-1999.01"\ncpu = true',
            "targets.x.runtime: 'colab-1999.01' is not a known Colab runtime",
            id="runtime",
        ),
    ],
)
def test_check_refuses_a_target_that_render_and_lock_refuse(
    runner: Runner, tmp_path: Path, target: str, key: str
) -> None:
    """One validation of targets for all three (issue 35): ``check`` said ``ok`` for a driver
    that cannot run the target's CUDA and for a runtime id that does not exist."""
    profile = tmp_path / "t.toml"
    profile.write_text(f'name = "t"\n[frameworks]\ntorch = "*"\n[targets.x]\n{target}\n')
    refusals = []
    for argv in (
        ("profiles", "check", profile),
        ("render", profile, "--target", "x"),
        ("lock", profile, "--target", "x", "-o", tmp_path / "l.txt"),
    ):
        done = runner(*argv)
        assert (done.returncode, done.stdout) == (2, ""), (argv, done.stdout, done.stderr)
        refusals.append(done.stderr)
    assert key in refusals[0] and "targets.x" in refusals[0]
    assert refusals[0] == refusals[1] == refusals[2]
    assert not (tmp_path / "l.txt").exists()
