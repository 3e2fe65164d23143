"""``colabenv render PROFILE [-o FILE] [--lock LOCK] [--target NAME] [--format FORMAT]``: print
the bootstrap script, or a container image definition (Dockerfile, Apptainer) that runs it.

``--target NAME`` resolves for the profile's named target NAME (no target flag beside it); a
lock of several targets installs its section NAME, or without ``--target`` the first section
that fits the host.

With ``--format dockerfile`` or ``apptainer``, ``-o DIR`` is the build folder: the colabenv
wheel the image installs (this colabenv's own, made from its installed files, or the one
``--colabenv-wheel`` names), the script (``setup.sh``) and the definition, each written whole;
the definition last, since it names the others by their SHA-256. Without ``-o`` the definition
goes to stdout, and the wheel and ``setup.sh`` must be rendered beside it with the same flags
(both are reproducible: the same colabenv and flags give the same bytes).

With ``--format ray``, ``slurm`` or ``kubernetes`` (``--lock`` required: the lock's section is
what the engine installs), the engine's files (:mod:`colabenv.engines`), each written by its own
module here (``cli.render_ray``, ``cli.render_slurm``, ``cli.render_kubernetes``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

from colabenv import __version__
from colabenv.app.install import lock_input, with_wheelhouse
from colabenv.app.resolution import TargetSource, resolve_profile
from colabenv.cli.common import build_folder, load_profile_arg, read_input, target_flags, write_text_atomic
from colabenv.errors import InputError, OutputError, UsageError, printable
from colabenv.index.check import index_check
from colabenv.script.plan import InstallPlan, install_plan
from colabenv.script.render import script_text

JOB_FORMATS = ("slurm", "kubernetes")
"""The formats of a batch job: they take the job flags, ``--image`` and a command after ``--``."""
JOB_FLAGS = ("gpus", "gpu_type", "time", "memory", "cpus", "partition", "image")


ENGINES = {
    "ray": "colabenv.cli.render_ray",
    "slurm": "colabenv.cli.render_slurm",
    "kubernetes": "colabenv.cli.render_kubernetes",
}
"""Each engine's format and the module that checks its arguments and writes its files."""


def run(args: argparse.Namespace) -> int:
    _refuse_job_flags(args)
    engine = importlib.import_module(ENGINES[args.format]) if args.format in ENGINES else None
    if engine is not None:
        engine.check_arguments(args)  # each needs --lock: the lock's section is what it installs
    image = args.format in ("dockerfile", "apptainer")
    if not image and (args.base_image or args.colabenv_wheel):
        raise UsageError("--base-image and --colabenv-wheel go with --format dockerfile or apptainer")
    if args.colabenv_wheel and not args.output:
        raise UsageError(
            "--colabenv-wheel needs -o DIR: the wheel is copied into the build folder beside the definition"
        )
    profile = load_profile_arg(args.profile)
    if args.target is not None:
        from colabenv.cli.targets import refuse_target_flags

        refuse_target_flags(args, "--target")
    source = TargetSource(target_flags(args), args.target)
    check = index_check(os.environ, offline_flag=args.offline)
    resolution = resolve_profile(profile, source, allow_unconfirmed=args.allow_unconfirmed, index=check)
    lock = lock_input(Path(args.lock), profile, resolution, args.target) if args.lock else None
    if lock is not None and lock.section is not None and engine is None:
        sys.stderr.write(f"colabenv: note: installing section {lock.section} of {printable(lock.name)}\n")
    if args.wheelhouse is not None and lock is not None and image:
        raise UsageError("--wheelhouse goes with the bootstrap script, not --format " + args.format)
    plan = install_plan(resolution, profile, __version__, with_wheelhouse(lock, profile, args.wheelhouse))
    if engine is not None and lock is not None:
        engine.write(args, plan, lock)
    elif image:
        _image(args, plan, script_text(plan))
    elif args.output:
        write_text_atomic(Path(args.output), script_text(plan), mode=0o755)
    else:
        sys.stdout.write(script_text(plan))
    for warning in resolution.warnings:
        sys.stderr.write(f"colabenv: warning: {warning}\n")
    return 0


def _refuse_job_flags(args: argparse.Namespace) -> None:
    """The job flags and a command, given with a format that has no job."""
    if args.format in JOB_FORMATS:
        return
    given = [f"--{name.replace('_', '-')}" for name in JOB_FLAGS if getattr(args, name) is not None]
    if given:
        raise UsageError(f"{', '.join(given)}: with --format slurm or kubernetes only")
    if args.job_command:
        shown = printable(" ".join(args.job_command)[:80])
        raise UsageError(
            f"unexpected argument {shown}: a command after -- goes with --format slurm or kubernetes"
        )


def _image(args: argparse.Namespace, plan: InstallPlan, script: str) -> None:
    """The definition of ``--format``, on stdout or with the script (and wheel) in ``-o DIR``."""
    import hashlib

    from colabenv.catalog.base_images import shipped_base_images
    from colabenv.script.container import (
        FILE_NAMES,
        SCRIPT_NAME,
        ColabenvWheel,
        ImageFormat,
        check_wheel_name,
        render_image,
    )

    form = ImageFormat(args.format)
    if args.colabenv_wheel:
        path = Path(args.colabenv_wheel)
        problem = check_wheel_name(path.name, __version__)
        if problem is not None:
            raise InputError(f"{printable(path)}: {problem}")
        wheel_data = read_input(path, "the colabenv wheel")
        if not wheel_data.startswith(b"PK\x03\x04"):
            raise InputError(f"{printable(path)}: not a wheel (a wheel is a zip archive)")
        wheel_file = path.name
    else:
        from colabenv._util.own_wheel import own_wheel, wheel_name

        wheel_data, wheel_file = own_wheel(__version__), wheel_name(__version__)
    wheel = ColabenvWheel(wheel_file, hashlib.sha256(wheel_data).hexdigest())
    definition = (
        "\n".join(
            render_image(
                form, plan, script, wheel=wheel, base_image=args.base_image, images=shipped_base_images()
            )
        )
        + "\n"
    )
    if not args.output:
        sys.stdout.write(definition)
        sys.stderr.write(
            f"colabenv: note: the {FILE_NAMES[form]} copies {wheel.name} and {SCRIPT_NAME}: "
            "write all three with -o DIR\n"
        )
        return
    folder = build_folder(Path(args.output), args.format)
    _write_wheel(folder / wheel.name, wheel_data)
    write_text_atomic(folder / SCRIPT_NAME, script, mode=0o755)
    write_text_atomic(folder / FILE_NAMES[form], definition)


def _write_wheel(path: Path, data: bytes) -> None:
    from colabenv._util.files import FileProblem, write_output

    try:
        write_output(path, data)
    except FileProblem as problem:
        raise OutputError(f"{printable(path)}: cannot write: {problem}") from None
    except OSError as exc:
        raise OutputError(f"{printable(path)}: cannot write: {exc.strerror or exc}") from None
