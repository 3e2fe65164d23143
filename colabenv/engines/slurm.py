"""A Slurm batch script (``render --format slurm``): ``#SBATCH`` lines from the job settings,
then the lock's section installed into an environment by the bootstrap script (``setup.sh``
beside it), ``colabenv verify`` in it, then the user's command; or, with an Apptainer image,
verify and the command inside the image.

The environment is the job's own (under ``$TMPDIR``, removed when the job ends), or, when
``COLABENV_ENV_ROOT`` names a folder at submit time, a shared one there named by the lock
section's content hash: jobs take turns on it with ``flock``, the first builds it in a folder of
its own and links it into place only when the install is complete, so a job cancelled mid-install
leaves nothing a later job would use (that job removes the unfinished folder first). Pure: the
job in, the script's lines out.
"""

from __future__ import annotations

import hashlib
import shlex

from colabenv.accelerators.registry import accelerator_of
from colabenv.models.frozen import model
from colabenv.models.job import JobSettings
from colabenv.models.job import command_problem as job_command_problem
from colabenv.script.plan import InstallPlan, LockInput, installed_target

SCRIPT_NAME = "setup.sh"
JOB_NAME = "job.sbatch"
IMAGE_SUFFIX = ".sif"
KEY_LENGTH = 16
"""Hex digits of the lock section's SHA-256 that name a shared environment."""


@model
class SlurmJob:
    """What the batch script is made from.

    ``script_sha256``: of the ``setup.sh`` written beside it (the job checks it before running
    it); ``lock_text``: the lock section installed, whose hash names a shared environment;
    ``python``: the lock's Python (``3.12``), the interpreter a new environment is made with;
    ``image``: an Apptainer image to run in instead (``--image``); ``command``: the user's words.
    """

    settings: JobSettings
    command: tuple[str, ...]
    script_sha256: str
    lock_name: str
    lock_text: str
    python: str | None = None
    image: str | None = None
    devices: str = "--nv"
    """How ``apptainer exec`` hands the image the target's devices (the kind's
    ``apptainer_devices``: ``--nv`` for NVIDIA GPUs, ``--rocm`` for AMD's)."""


def slurm_job(
    plan: InstallPlan,
    lock: LockInput,
    settings: JobSettings,
    command: tuple[str, ...],
    image: str | None,
    script: str,
) -> SlurmJob:
    """The job that installs ``lock`` (the plan's section) with ``script`` (its ``setup.sh``),
    or runs in ``image``, then ``command``; the image is handed the devices of the lock's
    target's kind."""
    target = installed_target(plan.resolution, lock)
    return SlurmJob(
        settings=settings,
        command=command,
        script_sha256=hashlib.sha256(script.encode("utf-8")).hexdigest(),
        lock_name=lock.name,
        lock_text=lock.text,
        python=lock.python,
        image=image,
        devices=accelerator_of(target).traits.apptainer_devices,
    )


def command_problem(words: tuple[str, ...]) -> str | None:
    """Why ``words`` cannot be the job's command (None: they can)."""
    if not words:
        return "--format slurm needs the job's command after --: colabenv render ... -- python train.py"
    return job_command_problem(words)


def image_problem(image: str) -> str | None:
    """Why ``image`` cannot be the Apptainer image a job runs in (None: it can)."""
    if "\n" in image or "\r" in image or "\0" in image:
        return "expected a file name with no line break or NUL"
    name = image.rsplit("/", 1)[-1]
    if not name.endswith(IMAGE_SUFFIX) or name == IMAGE_SUFFIX:
        return f"expected an Apptainer image file, a name ending {IMAGE_SUFFIX} (from --format apptainer)"
    return None


def environment_key(lock_text: str) -> str:
    """The name of the shared environment of a lock section: its content hash, shortened."""
    return hashlib.sha256(lock_text.encode("utf-8")).hexdigest()[:KEY_LENGTH]


def sbatch_options(settings: JobSettings) -> list[str]:
    """The ``#SBATCH`` lines of the settings given (none for those not given)."""
    lines = []
    if settings.gpus is not None or settings.gpu_type is not None:
        kind = f"gpu:{settings.gpu_type}" if settings.gpu_type is not None else "gpu"
        lines.append(f"#SBATCH --gres={kind}:{settings.gpus or 1}")
    if settings.time_s is not None:
        lines.append(f"#SBATCH --time={slurm_time(settings.time_s)}")
    if settings.memory_mib is not None:
        lines.append(f"#SBATCH --mem={settings.memory_mib}M")
    if settings.cpus is not None:
        lines.append(f"#SBATCH --cpus-per-task={settings.cpus}")
    if settings.partition is not None:
        lines.append(f"#SBATCH --partition={settings.partition}")
    return lines


def slurm_time(seconds: int) -> str:
    """Seconds as Slurm's ``D-HH:MM:SS``."""
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"


def render_sbatch(job: SlurmJob) -> list[str]:
    """The batch script's lines."""
    head = [
        "#!/usr/bin/env bash",
        "# shellcheck disable=SC2016  # the command's words are single-quoted on purpose: never expanded",
        f"# A Slurm batch job written by colabenv for the lock {_comment(job.lock_name)}.",
        "# Submit it from its build folder: cd DIR && sbatch " + JOB_NAME,
        *sbatch_options(job.settings),
        "set -euo pipefail",
        'echo "COLABENV: job ${SLURM_JOB_ID:-none} on $(hostname)"',
    ]
    if job.image is not None:
        return [*head, *_in_image(job.image, job.command, job.devices)]
    return [*head, *_build_environment(job), *_verify_and_run(job.command)]


def _in_image(image: str, command: tuple[str, ...], devices: str) -> list[str]:
    return [
        f"image={shlex.quote(image)}",
        'if [ ! -f "$image" ]; then',
        '  echo "COLABENV: the image $image is not a file on $(hostname)" >&2',
        "  exit 2",
        "fi",
        'echo "COLABENV: verifying the image $image"',
        f'apptainer exec {devices} "$image" colabenv verify',
        f'echo "COLABENV: running {_echoed(command)}"',
        f'apptainer exec {devices} "$image" ' + _quoted(command),
    ]


def _build_environment(job: SlurmJob) -> list[str]:
    python = f"python{job.python}" if job.python is not None else "python3"
    return [
        'here="${COLABENV_JOB_DIR:-${SLURM_SUBMIT_DIR:-$PWD}}"',
        f'setup="$here/{SCRIPT_NAME}"',
        f"if ! printf '%s  %s\\n' {job.script_sha256} \"$setup\" | sha256sum --check --status; then",
        f'  echo "COLABENV: $setup is not the {SCRIPT_NAME} this job was written with: submit the job from '
        f'its build folder (cd DIR && sbatch {JOB_NAME})" >&2',
        "  exit 2",
        "fi",
        "build_env() {",
        "  # build_env DIR: a new virtual environment at DIR with the lock's section installed",
        f'  "${{COLABENV_BASE_PYTHON:-{python}}}" -m venv "$1"',
        '  COLABENV_PYTHON="$1/bin/python" COLABENV_STATE_DIR="$1/.colabenv-state" bash "$setup"',
        "}",
        'if [ -n "${COLABENV_ENV_ROOT:-}" ]; then',
        '  mkdir -p "$COLABENV_ENV_ROOT"',
        f"  key={environment_key(job.lock_text)}",
        '  env="$COLABENV_ENV_ROOT/$key"',
        '  exec 9>>"$COLABENV_ENV_ROOT/$key.lock"',
        '  echo "COLABENV: waiting for the lock of $env"',
        "  flock 9",
        '  if [ -L "$env" ] && [ -d "$env/" ]; then',
        '    echo "COLABENV: reusing the environment $env (no install)"',
        "  else",
        '    for old in "$env".env-*; do',
        '      if [ -e "$old" ]; then',
        '        echo "COLABENV: removing the unfinished environment $old"',
        '        rm -rf -- "$old"',
        "      fi",
        "    done",
        '    rm -f -- "$env"',
        '    build="$env.env-${SLURM_JOB_ID:-$$}"',
        "    trap 'rm -rf -- \"$build\"' EXIT",
        "    trap 'exit 143' TERM",
        '    echo "COLABENV: building the environment $env"',
        '    build_env "$build"',
        '    ln -s -- "${build##*/}" "$env.link-$$"',
        '    mv -T -- "$env.link-$$" "$env"',
        "    trap - EXIT",
        '    echo "COLABENV: built the environment $env"',
        "  fi",
        "  exec 9>&-",
        "else",
        '  env="${TMPDIR:-/tmp}/colabenv-job-${SLURM_JOB_ID:-$$}"',
        "  trap 'rm -rf -- \"$env\"' EXIT",
        "  trap 'exit 143' TERM",
        '  echo "COLABENV: building the environment $env (this job\'s own)"',
        '  build_env "$env"',
        "fi",
    ]


def _verify_and_run(command: tuple[str, ...]) -> list[str]:
    return [
        'colabenv="${COLABENV:-colabenv}"',
        'COLABENV_STATE_DIR="$env/.colabenv-state" "$colabenv" verify --interpreter "$env/bin/python"',
        'export PATH="$env/bin:$PATH" VIRTUAL_ENV="$env"',
        f'echo "COLABENV: running {_echoed(command)}"',
        _quoted(command),
    ]


def _quoted(command: tuple[str, ...]) -> str:
    return " ".join(shlex.quote(word) for word in command)


def _echoed(command: tuple[str, ...]) -> str:
    """The command as the ``echo`` line shows it: in double quotes, so nothing expands."""
    text = _quoted(command)
    for special in ("\\", '"', "$", "`"):
        text = text.replace(special, "\\" + special)
    return text


def _comment(text: str) -> str:
    return "".join(char if char.isprintable() else "?" for char in text)
