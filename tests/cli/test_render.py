"""``colabenv render --runtime ID``: a script for a Colab runtime version rendered on a host
that is not it (this CPU machine), keeping what the image ships."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.fixtures import Runner

PROFILE = """\
schema = 1
name = "on-colab"
description = "torch as Colab 2026.07 ships it, jax older than it ships, numpy newer"

[frameworks]
torch = { version = ">=2.11,<2.12" }
jax = { version = "==0.7.1" }

[packages]
requirements = ["numpy>=2.1"]
"""


def _profile(tmp_path: Path) -> Path:
    path = tmp_path / "on-colab.toml"
    path.write_text(PROFILE, encoding="utf-8")
    return path


def test_render_for_the_current_runtime_keeps_what_it_ships_at_the_wanted_version(
    runner: Runner, tmp_path: Path
) -> None:
    """2026.07's CPU image has torch 2.11.0+cpu (wanted: kept, not installed again), jax 0.7.2
    (the profile pins 0.7.1: installed over it) and numpy 2.0.2 (below numpy>=2.1); its Python
    is 3.12, whatever runs colabenv here."""
    done = runner("render", _profile(tmp_path), "--runtime", "colab-2026.07", "--cpu")
    assert done.returncode == 0, done.stderr
    head = done.stdout.split("set -euo pipefail", 1)[0]
    assert "# target: no GPU, Python 3.12, linux_x86_64" in head
    assert "#   torch 2.11.0 cpu (installed)\n#     why: already installed (torch 2.11.0+cpu)" in head
    assert "#   jax 0.7.1 cpu (to install)" in head
    assert "#   warning: downgrades the installed jax 0.7.2 with 0.7.1" in head
    resolved = runner("resolve", _profile(tmp_path), "--runtime", "colab-2026.07", "--cpu", "--json")
    assert resolved.returncode == 0, resolved.stderr
    frameworks = json.loads(resolved.stdout)["frameworks"]
    assert (frameworks["torch"]["installed"], frameworks["jax"]["installed"]) == (True, False)


def test_render_for_a_gpu_target_takes_the_gpu_image(runner: Runner, tmp_path: Path) -> None:
    done = runner(
        "resolve",
        _profile(tmp_path),
        "--runtime",
        "colab-2026.07",
        "--driver",
        "550.54.15",
        "--compute-capability",
        "7.5",
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"^torch 2\.11\.0 cu128 with torchvision [^ ]+\+cu128.* \(installed", done.stdout, re.M)
    assert "already installed (torch 2.11.0+cu128)" in done.stdout


def test_an_unknown_runtime_is_exit_2_one_line_nothing_on_stdout_nothing_written(
    runner: Runner, tmp_path: Path
) -> None:
    out = tmp_path / "setup.sh"
    done = runner("render", _profile(tmp_path), "--runtime", "colab-2019.01", "-o", out)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("colabenv: --runtime: 'colab-2019.01' is not a known Colab runtime")
    assert "(known: colab-latest, colab-2026.07, colab-2026.04," in done.stderr
    assert not out.exists()


def test_runtime_beside_a_freeze_file_is_exit_2(runner: Runner, tmp_path: Path) -> None:
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("torch==2.11.0\n", encoding="utf-8")
    done = runner("render", _profile(tmp_path), "--runtime", "colab-2026.07", "--installed-from", freeze)
    assert (done.returncode, done.stdout) == (2, "")
    assert "--runtime cannot be combined with --installed-from" in done.stderr


def test_resolve_takes_a_named_target_as_render_and_lock_do(runner: Runner, tmp_path: Path) -> None:
    """``resolve --target NAME`` did not exist (issue 34); it resolves for the named target,
    whatever this host is, and refuses what render refuses beside it."""
    profile = tmp_path / "t.toml"
    profile.write_text(
        'name = "t"\n[frameworks]\ntorch = "==2.8.*"\n'
        '[targets.h200]\ndriver = "570.124.06"\ncompute_capability = "9.0"\npython = "3.12"\n'
    )
    done = runner("resolve", profile, "--target", "h200", "--json")
    assert done.returncode == 0, done.stderr
    target = json.loads(done.stdout)["target"]
    assert (target["driver"], target["compute_capabilities"], target["python"]) == (
        "570.124.06",
        ["9.0"],
        "3.12",
    )
    plain = runner("resolve", profile, "--target", "h200")
    assert plain.returncode == 0 and "driver 570.124.06" in plain.stdout
    for extra, says in (
        (("--target", "nope"), "no such target"),
        (("--target", "h200", "--cpu"), "leave out"),
    ):
        refused = runner("resolve", profile, *extra)
        assert (refused.returncode, refused.stdout) == (2, ""), refused.stderr
        assert says in refused.stderr


def test_resolve_shows_the_companions_it_pins(runner: Runner, tmp_path: Path) -> None:
    """Text ``resolve`` never showed the chosen torchvision or torchaudio (issue 34)."""
    profile = tmp_path / "c.toml"
    profile.write_text('name = "c"\n[frameworks]\ntorch = { version = "==2.8.*", torchvision = "*" }\n')
    done = runner("resolve", profile, "--driver", "570.124.06", "--python", "3.12")
    assert done.returncode == 0, done.stderr
    torch = next(line for line in done.stdout.splitlines() if line.startswith("torch "))
    pinned = json.loads(
        runner("resolve", profile, "--driver", "570.124.06", "--python", "3.12", "--json").stdout
    )
    vision = next(r for r in pinned["frameworks"]["torch"]["requirements"] if r.startswith("torchvision=="))
    assert f"with {vision.replace('==', ' ')} (" in torch


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (("--gpus", "2"), "colabenv: --gpus: with --format slurm or kubernetes only\n"),
        (
            ("--time", "1:00:00", "--image", "x.sif"),
            "colabenv: --time, --image: with --format slurm or kubernetes only\n",
        ),
        (
            ("--", "python", "train.py"),
            "colabenv: unexpected argument python train.py: a command after -- goes",
        ),
    ],
)
def test_job_flags_and_a_command_go_with_a_job_format_only(
    runner: Runner, tmp_path: Path, words: tuple[str, ...], message: str
) -> None:
    out = tmp_path / "setup.sh"
    done = runner("render", _profile(tmp_path), "--cpu", "--python", "3.12", "-o", out, *words)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(message)
    assert done.stderr.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (("--gpus", "0"), "colabenv: --gpus '0': expected a whole number from 1 to 64\n"),
        (("--gpus", "²"), "colabenv: --gpus '²': expected a whole number from 1 to 64\n"),
        (("--time", "1:99"), "colabenv: --time '1:99': minutes and seconds go up to 59;"),
        (("--memory", "lots"), "colabenv: --memory 'lots': expected a size such as 32G"),
        (("--partition", "a;b"), "colabenv: --partition 'a;b': expected a partition:"),
    ],
)
def test_job_flag_values_follow_the_job_table_rules(words: tuple[str, ...], message: str) -> None:
    from colabenv.cli.common import job_flags
    from colabenv.cli.parser import build_parser
    from colabenv.errors import UsageError

    args = build_parser("render").parse_args(["render", "p.toml", *words])
    with pytest.raises(UsageError) as caught:
        job_flags(args)
    assert f"colabenv: {caught.value}\n".startswith(message)


def test_the_job_command_is_everything_after_the_first_double_dash() -> None:
    from colabenv.cli.main import split_job_command

    words, command = split_job_command(
        ["render", "p.toml", "--format", "slurm", "--", "python", "t.py", "--", "-o"]
    )
    assert (words, command) == (["render", "p.toml", "--format", "slurm"], ["python", "t.py", "--", "-o"])
    assert split_job_command(["lock", "p.toml", "--", "x"]) == (["lock", "p.toml", "--", "x"], [])
