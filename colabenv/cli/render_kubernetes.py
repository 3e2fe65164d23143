"""``colabenv render PROFILE --lock LOCK --format kubernetes --image REF [job flags] [-o FILE]
-- COMMAND...``: a Kubernetes Job (:mod:`colabenv.engines.kubernetes`) as YAML, or as JSON
when ``-o`` ends in ``.json``; on stdout without ``-o``.

The arguments are checked before the profile is read (:func:`check_arguments`), the rest once
the lock's section is chosen (:func:`write_job`); any problem is exit 2 with nothing written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from colabenv.errors import UsageError, printable
from colabenv.models import Accelerator, Profile, Resolution
from colabenv.script.plan import LockInput

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


def write_job(args: argparse.Namespace, profile: Profile, resolution: Resolution, lock: LockInput) -> None:
    """The Job for the lock's section ``lock``, written to ``-o`` or stdout."""
    from colabenv._util.yaml import dump
    from colabenv.catalog.gpu_products import shipped_gpu_products
    from colabenv.cli.common import job_flags, write_text_atomic
    from colabenv.engines.kubernetes import KubernetesJob, job_manifest, products_of

    flags = job_flags(args)
    settings = flags.over(profile.job)
    accelerator = resolution.target.accelerator
    products: tuple[str, ...] = ()
    if accelerator is Accelerator.CPU:
        given = [flag for flag, value in (("--gpus", flags.gpus), ("--gpu-type", flags.gpu_type)) if value]
        if given:
            raise UsageError(f"{', '.join(given)}: the lock's section {_section(lock)}is for the CPU")
    elif accelerator is Accelerator.NVIDIA:
        where = "--gpu-type" if flags.gpu_type is not None else f"{printable(profile.path)}: job.gpu_type"
        products = products_of(shipped_gpu_products(), settings.gpu_type, where)
    manifest = job_manifest(
        KubernetesJob(
            image=args.image,
            lock_text=lock.text,
            profile_name=profile.name,
            settings=settings,
            accelerator=accelerator,
            products=products,
            command=tuple(args.job_command),
        )
    )
    as_json = bool(args.output) and Path(args.output).suffix.lower() == ".json"
    text = json.dumps(manifest, indent=2) + "\n" if as_json else dump(manifest)
    if lock.section is not None:
        sys.stderr.write(
            f"colabenv: note: the image holds section {lock.section} of {printable(lock.name)}\n"
        )
    if accelerator is Accelerator.NVIDIA and not products:
        sys.stderr.write(
            "colabenv: note: no GPU type ([job] gpu_type or --gpu-type): the Job takes any node "
            "with NVIDIA GPUs\n"
        )
    if args.output:
        write_text_atomic(Path(args.output), text)
    else:
        sys.stdout.write(text)


def _section(lock: LockInput) -> str:
    return f"{lock.section} " if lock.section is not None else ""
