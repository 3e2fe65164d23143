"""``colabenv lock PROFILE [-o LOCK] [--resolver uv|pip-tools] [--format F] [--check]``.

Without ``-o`` the lock goes to stdout; progress and notes always go to stderr, and only on a
terminal without ``--quiet``. ``--check`` reads the lock named by ``-o`` and exits 1 when the
profile, the target or the component constraints changed since it was made; the target is the
one recorded in the lock with whatever target flags (or ``COLABENV_*`` variables) are given,
so CI needs no GPU. A lock that is not whole (truncated, edited, missing a requirement of its
own profile) is exit 2. ``--http-deadline S`` (or ``COLABENV_HTTP_DEADLINE``) bounds each
request to an index, whole (default 60 s), and uv's and pip-tools' requests the same way;
``COLABENV_LOCK_MEMORY_MIB`` bounds their memory. SIGTERM ends the lock as Ctrl-C does: the
resolver and what it started are killed, the work folder removed, exit 130. When a
framework's page on its index lists a newer release than the catalog's that the profile
admits, one line says so and names the refresh command (``render`` and ``resolve`` never ask
an index).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from colabenv import __version__
from colabenv.cli.common import (
    load_profile_arg,
    overrides_from_args,
    target_from_args,
    terminate_as_interrupt,
    write_text_atomic,
)
from colabenv.errors import UsageError, printable

_PYLOCK_NAME = re.compile(r"^pylock(\.[^.]+)?\.toml$")
DEADLINE_VARIABLE = "COLABENV_HTTP_DEADLINE"
MEMORY_VARIABLE = "COLABENV_LOCK_MEMORY_MIB"
MAX_MEMORY_MIB = 1 << 20
MIN_MEMORY_MIB = 256


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str], None]]:
    if not enabled:
        yield lambda _text: None
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(stderr=True)
    with console.status("locking") as status:
        yield lambda text: status.update(Text(printable(text)))


def _note(args: argparse.Namespace, text: str) -> None:
    if not args.quiet:
        sys.stderr.write(f"colabenv: {text}\n")


def http_deadline(args: argparse.Namespace, environ: Mapping[str, str]) -> float:
    """``--http-deadline``, else ``COLABENV_HTTP_DEADLINE``, else the default; checked."""
    from colabenv.index.client import HTTP_DEADLINE_S, check_deadline

    flag = getattr(args, "http_deadline", None)
    where, text = (
        ("--http-deadline", flag) if flag is not None else (DEADLINE_VARIABLE, environ.get(DEADLINE_VARIABLE))
    )
    if text is None or text == "":
        return HTTP_DEADLINE_S
    try:
        seconds = float(text) if len(text) <= 32 else math.inf
    except ValueError:
        raise UsageError(f"{where}: expected seconds (a number), got {printable(text)!r}") from None
    return check_deadline(seconds, where)


def resolver_memory(environ: Mapping[str, str]) -> int:
    """``COLABENV_LOCK_MEMORY_MIB``, else the default; checked."""
    from colabenv.lock.resolvers import RESOLVER_MEMORY_MIB

    text = environ.get(MEMORY_VARIABLE, "")
    if text == "":
        return RESOLVER_MEMORY_MIB
    if not (text.isascii() and text.isdigit() and len(text) <= 8) or not (
        MIN_MEMORY_MIB <= int(text) <= MAX_MEMORY_MIB
    ):
        raise UsageError(
            f"{MEMORY_VARIABLE}: expected MiB between {MIN_MEMORY_MIB} and {MAX_MEMORY_MIB}, "
            f"got {printable(text[:40])!r}"
        )
    return int(text)


def _check(args: argparse.Namespace) -> int:
    from colabenv.catalog.load import catalog_for
    from colabenv.lock.file import read_lock
    from colabenv.lock.fit import check_satisfies, current_target, stale_reasons
    from colabenv.resolve.resolver import resolve

    if not args.output:
        raise UsageError("lock --check needs -o LOCK, the lock to check")
    profile = load_profile_arg(args.profile)
    path = Path(args.output)
    lock = read_lock(path)
    target = current_target(lock.header.target, overrides_from_args(args))
    same_profile = (lock.header.profile_name, lock.header.profile_hash) == (
        profile.name,
        profile.content_hash,
    )
    if same_profile:
        check_satisfies(lock, profile, printable(path.name))
    reasons = stale_reasons(lock, profile, target)
    if not reasons:
        now_target = target.to_target()
        now = resolve(
            profile,
            now_target,
            catalog_for(profile, os.environ, target=now_target),
            allow_unconfirmed=args.allow_unconfirmed,
        )
        reasons = stale_reasons(lock, profile, target, now.constraint_lines)
    if reasons:
        for reason in reasons:
            sys.stdout.write(f"{printable(path)}: stale: {reason}\n")
        return 1
    sys.stdout.write(f"{printable(path)}: up to date with {printable(profile.path.name)}\n")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.check:
        return _check(args)
    from colabenv.catalog.load import catalog_for
    from colabenv.lock.file import render_lock
    from colabenv.lock.make import KnownRelease, make_lock
    from colabenv.resolve.resolver import resolve

    deadline = http_deadline(args, os.environ)
    memory_mib = resolver_memory(os.environ)
    pylock = args.format == "pylock"
    output = Path(args.output) if args.output else None
    if pylock and output is not None and not _PYLOCK_NAME.match(output.name):
        _note(
            args,
            f"warning: PEP 751 names lock files pylock.toml or pylock.NAME.toml, "
            f"not {printable(output.name)}",
        )
    profile = load_profile_arg(args.profile)
    target = target_from_args(args)
    catalog = catalog_for(profile, os.environ, target=target)
    resolution = resolve(profile, target, catalog, allow_unconfirmed=args.allow_unconfirmed)
    for warning in resolution.warnings:
        _note(args, f"warning: {warning}")
    known = [
        KnownRelease(r.framework, r.specifier, catalog.releases_of(r.framework)[0].version)
        for r in profile.frameworks
        if catalog.releases_of(r.framework)
    ]
    show_progress = not args.quiet and sys.stderr.isatty()
    with terminate_as_interrupt(), _progress(show_progress) as progress:
        lock = make_lock(
            resolution,
            resolver=args.resolver,
            colabenv_version=__version__,
            progress=progress,
            with_files=pylock,
            http_deadline_s=deadline,
            known=known,
            notice=lambda text: _note(args, text),
            memory_mib=memory_mib,
        )
    text = render_lock(lock, pylock=pylock)
    if output is None:
        sys.stdout.write(text)
    else:
        write_text_atomic(output, text)
    frameworks = ", ".join(f"{f.framework} {f.version} ({f.variant})" for f in lock.header.frameworks)
    where = printable(output) if output is not None else "stdout"
    _note(
        args,
        f"locked {len(lock.packages)} packages for {profile.name}"
        f"{': ' + frameworks if frameworks else ''} with {lock.header.resolver} "
        f"-> {where}",
    )
    return 0
