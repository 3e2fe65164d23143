"""``colabenv lock PROFILE [-o LOCK] [--resolver uv|pip-tools] [--format F] [--check]``.

Without ``-o`` the lock goes to stdout; progress and notes always go to stderr, and only on a
terminal without ``--quiet``. ``--check`` reads the lock named by ``-o`` and exits 1 when the
profile or the target changed since it was made; the target is the one recorded in the lock
with whatever target flags (or ``COLABENV_*`` variables) are given, so CI needs no GPU.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from colabenv import __version__
from colabenv._commands._common import (
    load_profile_arg,
    overrides_from_args,
    target_from_args,
    write_text_atomic,
)
from colabenv.errors import UsageError

_PYLOCK_NAME = re.compile(r"^pylock(\.[^.]+)?\.toml$")


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str], None]]:
    if not enabled:
        yield lambda _text: None
        return
    from rich.console import Console

    console = Console(stderr=True)
    with console.status("locking") as status:
        yield lambda text: status.update(text)


def _note(args: argparse.Namespace, text: str) -> None:
    if not args.quiet:
        sys.stderr.write(f"colabenv: {text}\n")


def _check(args: argparse.Namespace) -> int:
    from colabenv.lock import current_target, stale_reasons
    from colabenv.lockfile import read_lock

    if not args.output:
        raise UsageError("lock --check needs -o LOCK, the lock to check")
    profile = load_profile_arg(args.profile)
    path = Path(args.output)
    lock = read_lock(path)
    reasons = stale_reasons(lock, profile, current_target(lock.header.target,
                                                          overrides_from_args(args)))
    if reasons:
        for reason in reasons:
            sys.stdout.write(f"{path}: stale: {reason}\n")
        return 1
    sys.stdout.write(f"{path}: up to date with {profile.path.name}\n")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.check:
        return _check(args)
    from colabenv.catalog import shipped_catalog
    from colabenv.lock import make_lock
    from colabenv.lockfile import render_lock
    from colabenv.resolver import resolve

    pylock = args.format == "pylock"
    output = Path(args.output) if args.output else None
    if pylock and output is not None and not _PYLOCK_NAME.match(output.name):
        _note(args, f"warning: PEP 751 names lock files pylock.toml or pylock.NAME.toml, "
                    f"not {output.name}")
    profile = load_profile_arg(args.profile)
    target = target_from_args(args)
    resolution = resolve(profile, target, shipped_catalog(r.framework for r in profile.frameworks))
    for warning in resolution.warnings:
        _note(args, f"warning: {warning}")
    show_progress = not args.quiet and sys.stderr.isatty()
    with _progress(show_progress) as progress:
        lock = make_lock(resolution, resolver=args.resolver, colabenv_version=__version__,
                         progress=progress, with_files=pylock)
    text = render_lock(lock, pylock=pylock)
    if output is None:
        sys.stdout.write(text)
    else:
        write_text_atomic(output, text)
    frameworks = ", ".join(f"{f.framework} {f.version} ({f.variant})"
                           for f in lock.header.frameworks)
    where = output if output is not None else "stdout"
    _note(args, f"locked {len(lock.packages)} packages for {profile.name}"
                f"{': ' + frameworks if frameworks else ''} with {lock.header.resolver} "
                f"-> {where}")
    return 0
