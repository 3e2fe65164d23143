"""``colabenv render PROFILE --lock LOCK --format slurm -o DIR [job flags] [--image X.sif] --
COMMAND...``: the build folder of a Slurm batch job (:mod:`colabenv.engines.slurm`):
``setup.sh``, then ``job.sbatch`` (last: it names the script by its SHA-256).

The arguments are checked before the profile is read (:func:`check_arguments`), so a refusal is
exit 2 with nothing resolved or written.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from colabenv.cli.common import build_folder, job_flags, write_text_atomic
from colabenv.errors import OutputError, UsageError, printable
from colabenv.script.plan import InstallPlan, LockInput


def check_arguments(args: argparse.Namespace) -> None:
    """``--format slurm``'s own refusals, before anything is resolved or written."""
    from colabenv.engines.slurm import command_problem, image_problem

    problem = command_problem(tuple(args.job_command))
    if problem is not None:
        raise UsageError(printable(problem))
    if args.image is not None:
        problem = image_problem(args.image)
        if problem is not None:
            raise UsageError(f"--image {printable(args.image)}: {problem}")
    if not args.lock:
        raise UsageError("--format slurm needs --lock LOCK: the lock's section is what each job installs")
    if not args.output:
        raise UsageError(
            "--format slurm needs -o DIR: the build folder of the job (job.sbatch) "
            "and the script it runs (setup.sh)"
        )
    job_flags(args)  # each flag's refusal, before the lock is read
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        raise OutputError(
            f"{printable(args.output)}: -o names the build folder with --format slurm, "
            "and this is not a directory"
        )
    if os.path.islink(args.output):
        raise OutputError(
            f"{printable(args.output)}: -o names the build folder with --format slurm, not a link"
        )


def write(args: argparse.Namespace, plan: InstallPlan, lock: LockInput) -> None:
    """``setup.sh``, then ``job.sbatch``, into ``-o DIR``."""
    from colabenv.engines.slurm import JOB_NAME, SCRIPT_NAME, render_sbatch, slurm_job
    from colabenv.script.render import script_text

    script = script_text(plan)
    settings = job_flags(args).over(plan.profile.job)
    job = slurm_job(plan, lock, settings, tuple(args.job_command), args.image, script)
    text = "\n".join(render_sbatch(job)) + "\n"
    folder = build_folder(Path(args.output), args.format)
    write_text_atomic(folder / SCRIPT_NAME, script, mode=0o755)
    write_text_atomic(folder / JOB_NAME, text, mode=0o755)
