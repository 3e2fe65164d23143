"""``colabenv render PROFILE [-o FILE] [--lock LOCK]``: print the bootstrap script."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from colabenv import __version__
from colabenv._commands._common import load_profile_arg, target_from_args, write_text_atomic
from colabenv._data import helper_source
from colabenv.catalog import catalog_for
from colabenv.errors import LockError, printable
from colabenv.models import Profile, Resolution
from colabenv.render import LockInput, render_script
from colabenv.resolver import resolve


def _lock_input(path: Path, profile: Profile, resolution: Resolution) -> LockInput:
    """The lock to install exactly: read strictly, and refused unless it was made from this
    profile for this target (the rules of ``lock --check``) and holds every requirement of the
    profile. The script's header and marker then describe the lock, not a new resolution."""
    from colabenv.lockfile import (
        LockTarget,
        check_satisfies,
        read_lock,
        render_lock,
        stale_reasons,
    )

    lock = read_lock(path)
    name = printable(path.name)
    target = LockTarget.from_target(resolution.target, resolution.required_driver)
    reasons = stale_reasons(lock, profile, target, resolution.constraint_lines)
    if reasons:
        raise LockError(f"{name}: does not fit this script: {'; '.join(reasons)}; make a new "
                        "lock for this target with colabenv lock (the same target flags)")
    check_satisfies(lock, profile, name)
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


def run(args: argparse.Namespace) -> int:
    profile = load_profile_arg(args.profile)
    target = target_from_args(args)
    resolution = resolve(profile, target, catalog_for(profile, os.environ),
                         allow_unconfirmed=args.allow_unconfirmed)
    lock = _lock_input(Path(args.lock), profile, resolution) if args.lock else None
    lines = render_script(
        resolution,
        profile,
        colabenv_version=__version__,
        helper_source=helper_source(),
        lock=lock,
    )
    text = "\n".join(lines) + "\n"
    if args.output:
        write_text_atomic(Path(args.output), text, mode=0o755)
    else:
        sys.stdout.write(text)
    for warning in resolution.warnings:
        sys.stderr.write(f"colabenv: warning: {warning}\n")
    return 0
