"""``colabenv render PROFILE [-o FILE] [--lock LOCK]``: print the bootstrap script."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from colabenv import __version__
from colabenv._commands._common import load_profile_arg, target_from_args, write_text_atomic
from colabenv._data import helper_source
from colabenv.catalog import shipped_catalog
from colabenv.errors import LockError
from colabenv.models import Profile
from colabenv.render import LockInput, render_script
from colabenv.resolver import resolve


def _lock_input(path: Path, profile: Profile) -> LockInput:
    """The lock to install exactly; refused when it was made from another profile."""
    from colabenv.lockfile import read_lock, render_lock

    lock = read_lock(path)
    if lock.header.profile_hash != profile.content_hash:
        raise LockError(
            f"{path.name}: profile_hash: made from {lock.header.profile_name} "
            f"({lock.header.profile_hash}), not from this profile ({profile.content_hash}); "
            "run colabenv lock again"
        )
    target = lock.header.target
    return LockInput(
        name=path.name,
        text=render_lock(lock),
        python=target.python,
        required_driver=target.required_driver,
        index_urls=lock.index_urls,
        pins=tuple(f"{name}=={version}" for name, version in lock.pins),
        target=target,
        frameworks=lock.header.frameworks,
    )


def run(args: argparse.Namespace) -> int:
    profile = load_profile_arg(args.profile)
    lock = _lock_input(Path(args.lock), profile) if args.lock else None
    target = target_from_args(args)
    resolution = resolve(profile, target, shipped_catalog(r.framework for r in profile.frameworks))
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
