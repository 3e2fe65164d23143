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
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from colabenv import __version__
from colabenv._util.resources import helper_source, wheelhouse_source
from colabenv.catalog.load import catalog_for
from colabenv.cli.common import load_profile_arg, read_input, target_from_args, write_text_atomic
from colabenv.errors import InputError, LockError, OutputError, UsageError, printable
from colabenv.models import Profile, Resolution
from colabenv.resolve.resolver import resolve
from colabenv.script.render import LockInput, render_script


def _lock_input(
    path: Path, profile: Profile, resolution: Resolution, section_name: str | None = None
) -> LockInput:
    """The lock to install exactly: read strictly, and refused unless it was made from this
    profile for this target (the rules of ``lock --check``) and holds every requirement of the
    profile. Of a lock of several targets, the section ``--target`` names, else the first that
    fits this target (none: every section named with why it does not fit). The script's
    header and marker then describe the lock, not a new resolution."""
    from colabenv.lock.content import LockTarget
    from colabenv.lock.file import read_lock_file, render_lock
    from colabenv.lock.fit import check_satisfies, fitting_section, named_section, stale_reasons

    lock_file = read_lock_file(path)
    name = printable(path.name)
    target = LockTarget.from_target(resolution.target, resolution.required_driver)
    if section_name is not None:
        section = named_section(lock_file, section_name, name)
    elif lock_file.sectioned:
        section = fitting_section(lock_file, target, name, profile, resolution.constraint_lines)
    else:
        section = lock_file.sections[0]
    lock = section.lock
    reasons = stale_reasons(lock, profile, target, resolution.constraint_lines)
    if reasons:
        raise LockError(
            f"{name}: does not fit this script: {'; '.join(reasons)}; make a new "
            "lock for this target with colabenv lock (the same target flags)"
        )
    check_satisfies(lock, profile, name)
    if section.name is not None:
        sys.stderr.write(f"colabenv: note: installing section {section.name} of {name}\n")
    recorded = lock.header.target
    return LockInput(
        name=path.name,
        text=render_lock(lock),
        python=recorded.python,
        required_driver=recorded.required_driver,
        index_urls=lock.index_urls,
        pins=tuple(f"{name}=={version}" for name, version in lock.pins),
        target=recorded,
        frameworks=lock.header.frameworks,
        constraints=lock.header.constraints,
    )


def _with_wheelhouse(args: argparse.Namespace, profile: Profile, lock: LockInput | None) -> LockInput | None:
    """``--wheelhouse DIR`` (offline) or the profile's ``[install] wheelhouse`` (a cache) on the
    lock; each needs ``--lock``, and the flag a script (issue 26)."""
    from dataclasses import replace

    from colabenv._util.reader import path_problem

    given, kept = args.wheelhouse, profile.install.wheelhouse
    if given is None and kept is None:
        return lock
    if given is not None:
        if lock is None:
            raise UsageError("--wheelhouse DIR needs --lock LOCK: a wheelhouse holds a lock's wheels")
        if args.format != "script":
            raise UsageError("--wheelhouse goes with the bootstrap script, not --format " + args.format)
        problem = path_problem(given) if len(given) <= 1024 else "is longer than 1024 characters"
        if problem is not None:
            raise UsageError(
                f"--wheelhouse: {problem}; name the folder as the host the script runs on sees it"
            )
        return replace(lock, wheelhouse=given, offline=True)
    if lock is None:
        return None  # the resolution's install groups use it (script.wheelhouse.resolved_install)
    return replace(lock, wheelhouse=kept, offline=False)


def run(args: argparse.Namespace) -> int:
    image = args.format != "script"
    if not image and (args.base_image or args.colabenv_wheel):
        raise UsageError("--base-image and --colabenv-wheel go with --format dockerfile or apptainer")
    if args.colabenv_wheel and not args.output:
        raise UsageError(
            "--colabenv-wheel needs -o DIR: the wheel is copied into the build folder beside the definition"
        )
    profile = load_profile_arg(args.profile)
    if args.target is not None:
        from colabenv.cli.targets import refuse_target_flags, spec_target
        from colabenv.resolve.targets import named_spec

        refuse_target_flags(args, "--target")
        target = spec_target(profile, named_spec(profile, args.target))
    else:
        target = target_from_args(args)
    catalog = catalog_for(profile, os.environ, target=target)
    resolution = resolve(profile, target, catalog, allow_unconfirmed=args.allow_unconfirmed)
    lock = _lock_input(Path(args.lock), profile, resolution, args.target) if args.lock else None
    lock = _with_wheelhouse(args, profile, lock)  # wheelhouse (issue 26)
    lines = render_script(
        resolution,
        profile,
        colabenv_version=__version__,
        helper_source=helper_source(),
        lock=lock,
        wheelhouse_source=wheelhouse_source(),
    )
    text = "\n".join(lines) + "\n"
    if image:
        _image(args, resolution, profile, lock, text)
    elif args.output:
        write_text_atomic(Path(args.output), text, mode=0o755)
    else:
        sys.stdout.write(text)
    for warning in resolution.warnings:
        sys.stderr.write(f"colabenv: warning: {warning}\n")
    return 0


def _image(
    args: argparse.Namespace, resolution: Resolution, profile: Profile, lock: LockInput | None, script: str
) -> None:
    """The definition of ``--format``, on stdout or with the script (and wheel) in ``-o DIR``."""
    import hashlib

    from colabenv.script.container import (
        FILE_NAMES,
        SCRIPT_NAME,
        ColabenvWheel,
        ImageFormat,
        check_wheel_name,
        render_apptainer,
        render_dockerfile,
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
    render = render_dockerfile if form is ImageFormat.DOCKERFILE else render_apptainer
    definition = (
        "\n".join(
            render(
                resolution,
                profile,
                script,
                colabenv_version=__version__,
                lock=lock,
                wheel=wheel,
                base_image=args.base_image,
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
    folder = _build_folder(Path(args.output), args.format)
    _write_wheel(folder / wheel.name, wheel_data)
    write_text_atomic(folder / SCRIPT_NAME, script, mode=0o755)
    write_text_atomic(folder / FILE_NAMES[form], definition)


def _build_folder(folder: Path, form: str) -> Path:
    """``-o DIR`` for an image: an existing directory, or a new one in an existing directory."""
    where = f"{printable(folder)}: -o names the build folder with --format {form}"
    try:
        folder.mkdir(exist_ok=True)
    except FileExistsError:
        raise OutputError(f"{where}, and this is not a directory") from None
    except OSError as exc:
        raise OutputError(f"{where}, which cannot be made: {exc.strerror or exc}") from None
    if not folder.is_dir():
        raise OutputError(f"{where}, and this is not a directory")
    return folder


def _write_wheel(path: Path, data: bytes) -> None:
    from colabenv._util.files import FileProblem, write_output

    try:
        write_output(path, data)
    except FileProblem as problem:
        raise OutputError(f"{printable(path)}: cannot write: {problem}") from None
    except OSError as exc:
        raise OutputError(f"{printable(path)}: cannot write: {exc.strerror or exc}") from None
