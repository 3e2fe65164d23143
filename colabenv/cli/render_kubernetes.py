"""``colabenv render PROFILE --lock LOCK --format kubernetes --image REF [job flags] [-o FILE]
-- COMMAND...``: a Kubernetes Job (:mod:`colabenv.engines.kubernetes`) as YAML, or as JSON
when ``-o`` ends in ``.json``; on stdout without ``-o``.

The arguments are checked before the profile is read (:func:`check_arguments`), the rest once
the lock's section is chosen (:func:`write`); any problem is exit 2 with nothing written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from colabenv.cli.common import job_flags
from colabenv.errors import UsageError, printable
from colabenv.script.plan import InstallPlan, LockInput

SUFFIXES = (".yaml", ".yml", ".json")


def check_arguments(args: argparse.Namespace) -> None:
    """What ``--format kubernetes`` needs and refuses, from the arguments alone."""
    from colabenv.engines.kubernetes import check_command, check_image

    if not args.lock:
        raise UsageError(
            "--format kubernetes needs --lock LOCK: the lock the image was built from, which "
            "the Job's init container verifies"
        )
    check_image(args.image)
    check_command(args.job_command)
    if args.partition is not None:
        raise UsageError(
            "--partition names a Slurm partition; a Kubernetes Job has none (--gpu-type chooses nodes)"
        )
    if args.wheelhouse is not None:
        raise UsageError("--wheelhouse goes with the bootstrap script, not --format kubernetes")
    if args.output and Path(args.output).suffix.lower() not in SUFFIXES:
        raise UsageError("-o with --format kubernetes names a .yaml, .yml or .json file")
    job_flags(args)  # each flag's refusal, before the lock is read


def write(args: argparse.Namespace, plan: InstallPlan, lock: LockInput) -> None:
    """The Job for the lock's section ``lock`` (what it is: :func:`requested_job`), written to
    ``-o`` or stdout."""
    from colabenv._util.yaml import dump
    from colabenv.catalog.gpu_products import shipped_gpu_products
    from colabenv.cli.common import write_text_atomic
    from colabenv.engines.kubernetes import JobRequest, job_manifest, requested_job
    from colabenv.script.plan import installed_target

    profile = plan.profile
    target = installed_target(plan.resolution, lock)
    request = JobRequest(
        image=args.image,
        lock_text=lock.text,
        lock_section=lock.section,
        lock_name=printable(lock.name),
        profile_name=profile.name,
        profile_where=printable(profile.path),
        profile_job=profile.job,
        flags=job_flags(args),
        accelerator=target.accelerator,
        command=tuple(args.job_command),
        platform=target.platform,
    )
    job, notes = requested_job(request, shipped_gpu_products())
    manifest = job_manifest(job)
    as_json = bool(args.output) and Path(args.output).suffix.lower() == ".json"
    text = json.dumps(manifest, indent=2) + "\n" if as_json else dump(manifest)
    for note in notes:
        sys.stderr.write(f"colabenv: note: {note}\n")
    if args.output:
        write_text_atomic(Path(args.output), text)
    else:
        sys.stdout.write(text)
