"""``render --format slurm``: the batch script's lines (``colabenv.engines.slurm``), the build
folder ``-o DIR`` gets, and the bad input that writes nothing. The jobs themselves run on a
real Slurm cluster in ``test_slurm_cluster.py``."""

from __future__ import annotations

import hashlib
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from colabenv.engines.slurm import (
    SlurmJob,
    environment_key,
    image_problem,
    render_sbatch,
    sbatch_options,
    slurm_time,
)
from colabenv.models import JobSettings
from tests.support.fixtures import Runner, console_script
from tests.support.index import LocalIndex
from tests.support.isolation import clean_env
from tests.support.wheels import build_wheel

SHELLCHECK = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
OTHER_PY = "3.12" if PY != "3.12" else "3.13"
PROFILE = """\
schema = 1
name = "team-cpu"
description = "a small CPU job"

[packages]
requirements = ["tinyjob"]

[install]
index_url = "{index}"

[targets]
ci = {{ cpu = true, python = "{py}" }}
other = {{ cpu = true, python = "{other}" }}

[job]
cpus = 4
time = "90"
memory = "8G"
partition = "short"
"""
COMMAND = ("python", "train.py", "--name", 'it\'s a $HOME `x` "run"', "")


def _job(**changes: object) -> SlurmJob:
    base: dict[str, object] = {
        "settings": JobSettings(
            gpus=2, gpu_type="a100", time_s=93784, memory_mib=32768, cpus=8, partition="gpu"
        ),
        "command": COMMAND,
        "script_sha256": "0" * 64,
        "lock_name": "team.lock",
        "lock_text": "lock text\n",
        "python": "3.12",
    }
    base.update(changes)
    return SlurmJob(**base)  # type: ignore[arg-type]


def _shellcheck(path: Path) -> None:
    done = subprocess.run(
        [SHELLCHECK, "--severity=style", str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0


def test_sbatch_lines_say_each_setting_in_slurms_form() -> None:
    assert sbatch_options(_job().settings) == [
        "#SBATCH --gres=gpu:a100:2",
        "#SBATCH --time=1-02:03:04",
        "#SBATCH --mem=32768M",
        "#SBATCH --cpus-per-task=8",
        "#SBATCH --partition=gpu",
    ]
    assert sbatch_options(JobSettings(gpus=1)) == ["#SBATCH --gres=gpu:1"]
    assert sbatch_options(JobSettings(gpu_type="h100")) == ["#SBATCH --gres=gpu:h100:1"]
    assert sbatch_options(JobSettings()) == []
    assert slurm_time(59) == "0-00:00:59" and slurm_time(366 * 86400) == "366-00:00:00"


@pytest.mark.parametrize("image", [None, "/shared/images/team.sif"])
def test_the_batch_script_passes_shellcheck_and_runs_the_command_word_for_word(
    image: str | None, tmp_path: Path
) -> None:
    lines = render_sbatch(_job(image=image))
    script = tmp_path / "job.sbatch"
    script.write_text("\n".join(lines) + "\n")
    _shellcheck(script)
    last = lines[-1]
    words = shlex.split(last)
    if image is None:
        assert tuple(words) == COMMAND
        assert "  flock 9" in lines and "  key=" + environment_key("lock text\n") in lines
    else:
        assert words[:4] == ["apptainer", "exec", "--nv", "$image"] and tuple(words[4:]) == COMMAND
        assert 'apptainer exec --nv "$image" colabenv verify' in lines
        assert not any("setup" in line for line in lines)
    # the echo of the command expands nothing
    echo = next(line for line in lines if line.startswith('echo "COLABENV: running '))
    shown = subprocess.run(["bash", "-c", echo], capture_output=True, text=True, env={"HOME": "/nowhere"})
    assert shown.stdout == f"COLABENV: running {shlex.join(COMMAND)}\n"


def test_an_image_of_amd_gpus_is_handed_them_as_rocm_devices() -> None:
    """The kind's ``apptainer_devices``: ``--rocm`` for a ROCm section, never NVIDIA's ``--nv``."""
    from colabenv.accelerators.registry import accelerator
    from colabenv.models import Accelerator

    devices = accelerator(Accelerator.ROCM).traits.apptainer_devices
    lines = render_sbatch(_job(image="team.sif", devices=devices))
    assert 'apptainer exec --rocm "$image" colabenv verify' in lines
    assert not any("--nv" in line for line in lines)


@pytest.mark.parametrize(("rocm", "devices"), [(True, "--rocm"), (False, "--nv")])
def test_the_job_takes_the_devices_of_the_locks_target(rocm: bool, devices: str) -> None:
    """``slurm_job`` asks the kind of the target the lock installs for (its recorded target;
    here the resolution's, the lock recording none) how the image is handed the devices."""
    from packaging.version import Version

    from colabenv import __version__
    from colabenv.catalog.load import shipped_catalog
    from colabenv.engines.slurm import slurm_job
    from colabenv.models import CpuTarget, RocmTarget, Target
    from colabenv.profile.load import load_profile
    from colabenv.resolve.resolver import resolve
    from colabenv.script.plan import LockInput, install_plan
    from tests.support.paths import REPO

    profile = load_profile(REPO / "profiles" / "golden" / "cpu-only.toml")
    device = RocmTarget(Version("6.4"), ("gfx942",)) if rocm else CpuTarget()
    resolution = resolve(profile, Target(device, Version("3.12")), shipped_catalog())
    lock = LockInput("team.lock", "lock text\n", "3.12", None, (), ())
    plan = install_plan(resolution, profile, __version__)
    job = slurm_job(plan, lock, JobSettings(), COMMAND, "team.sif", "script\n")
    assert job.devices == devices
    assert f'apptainer exec {devices} "$image" colabenv verify' in render_sbatch(job)


def test_an_image_is_a_sif_file_name() -> None:
    assert image_problem("team.sif") is None and image_problem("/a/b/c.sif") is None
    for bad in ("team.img", "docker://team:1", ".sif", "dir/.sif", "a\nb.sif", "team.sif/"):
        assert image_problem(bad) is not None, bad


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A profile of two CPU targets and its lock of two sections (two pure-Python wheels)."""
    work = tmp_path_factory.mktemp("slurm-render")
    wheels = work / "wheels"
    build_wheel(wheels, "tinyjob", "1.0", requires=["tinydep>=1"])
    build_wheel(wheels, "tinydep", "2.0")
    with LocalIndex(wheels) as index:
        profile = work / "team.toml"
        profile.write_text(PROFILE.format(index=index.url, py=PY, other=OTHER_PY))
        done = Runner(console_script(), work)(
            "lock", profile, "-o", work / "team.lock", "--all-targets", base=clean_env(), timeout=300
        )
        assert done.returncode == 0, done.stderr
    return profile, work / "team.lock"


def test_the_build_folder_holds_the_script_of_the_section_and_the_job(
    runner: Runner, locked: tuple[Path, Path], tmp_path: Path
) -> None:
    profile, lock = locked
    out = tmp_path / "job"
    done = runner(
        "render", profile, "--lock", lock, "--target", "ci", "--format", "slurm", "-o", out,
        "--gpus", "1", "--time", "2-00", "--", *COMMAND,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert sorted(path.name for path in out.iterdir()) == ["job.sbatch", "setup.sh"]
    plain = runner("render", profile, "--lock", lock, "--target", "ci")
    assert plain.returncode == 0, plain.stderr
    setup = (out / "setup.sh").read_text()
    assert setup == plain.stdout
    job = (out / "job.sbatch").read_text()
    assert hashlib.sha256(setup.encode()).hexdigest() in job
    options = [line for line in job.splitlines() if line.startswith("#SBATCH")]
    assert options == [
        "#SBATCH --gres=gpu:1",
        "#SBATCH --time=2-00:00:00",
        "#SBATCH --mem=8192M",
        "#SBATCH --cpus-per-task=4",
        "#SBATCH --partition=short",
    ]
    assert f'"${{COLABENV_BASE_PYTHON:-python{PY}}}" -m venv' in job
    _shellcheck(out / "job.sbatch")
    again = runner(
        "render", profile, "--lock", lock, "--target", "other", "--format", "slurm", "-o", tmp_path / "other",
        "--", "true",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    key = re.compile(r"^  key=([0-9a-f]+)$", re.MULTILINE)
    first, second = key.search(job), key.search((tmp_path / "other" / "job.sbatch").read_text())
    assert first and second and first.group(1) != second.group(1)  # one environment per section


BAD = {
    "a lock with no section for the target": (
        ["--cpu", "--python", "3.9", "--", "true"],
        "team.lock: no section fits this host (ci: target: Python",
    ),
    "a command with a newline": (["--target", "ci", "--", "echo", "a\nb"], "line break"),
    "a command with a tab (the rule Kubernetes Jobs have)": (
        ["--target", "ci", "--", "echo", "a\tb"],
        "has a word with a line break or a control character ('a\\tb')",
    ),
    "no command": (["--target", "ci"], "needs the job's command after --"),
    "no command after --": (["--target", "ci", "--"], "needs the job's command after --"),
    "an image that is no .sif": (
        ["--target", "ci", "--image", "team.img", "--", "true"],
        "--image team.img:",
    ),
    "a job flag out of range": (["--target", "ci", "--gpus", "65", "--", "true"], "--gpus '65':"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_exit_2_and_nothing_written(
    case: str, runner: Runner, locked: tuple[Path, Path], tmp_path: Path
) -> None:
    profile, lock = locked
    flags, said = BAD[case]
    out = tmp_path / "job"
    done = runner("render", profile, "--lock", lock, "--format", "slurm", "-o", out, *flags)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert said in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert not out.exists()


def test_without_o_or_lock_it_is_exit_2(runner: Runner, locked: tuple[Path, Path], tmp_path: Path) -> None:
    profile, lock = locked
    done = runner("render", profile, "--lock", lock, "--target", "ci", "--format", "slurm", "--", "true")
    assert (done.returncode, done.stdout) == (2, "")
    assert "needs -o DIR" in done.stderr
    done = runner(
        "render", profile, "--target", "ci", "--format", "slurm", "-o", tmp_path / "o", "--", "true"
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert "needs --lock LOCK" in done.stderr
    assert not (tmp_path / "o").exists()


def test_o_over_a_file_or_a_link_is_refused(
    runner: Runner, locked: tuple[Path, Path], tmp_path: Path
) -> None:
    profile, lock = locked
    file = tmp_path / "file"
    file.write_text("kept\n")
    folder = tmp_path / "folder"
    folder.mkdir()
    link = tmp_path / "link"
    link.symlink_to(folder)
    for target, said in ((file, "not a directory"), (link, "not a link")):
        done = runner(
            "render",
            profile,
            "--lock",
            lock,
            "--target",
            "ci",
            "--format",
            "slurm",
            "-o",
            target,
            "--",
            "true",
        )
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert said in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert file.read_text() == "kept\n"
    assert list(folder.iterdir()) == []


def test_the_cluster_tests_say_why_they_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support import slurm

    monkeypatch.setattr(slurm.os, "geteuid", lambda: 1000)
    assert "needs root" in (slurm.slurm_problem() or "")
    monkeypatch.setattr(slurm.os, "geteuid", lambda: 0)
    monkeypatch.setattr(slurm.shutil, "which", lambda name: None)
    monkeypatch.setattr(slurm, "SBIN", Path("/nonexistent"))
    problem = slurm.slurm_problem() or ""
    assert "slurmctld" in problem and "apt-get install -y slurm-wlm munge" in problem
