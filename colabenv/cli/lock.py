"""``colabenv lock PROFILE [-o LOCK] [--resolver uv|pip-tools] [--format F] [--check]
[--target NAME]... [--all-targets]``.

``--all-targets`` (or ``--target NAME``, repeatable) locks the profile's named targets, each
its own resolution, into one lock with a section per target (schema 3); ``--check`` of such a
lock checks each section against the profile's target of its name, one line each.

Without ``-o`` the lock goes to stdout; progress and notes always go to stderr, and only on a
terminal without ``--quiet``. ``--check`` reads the lock named by ``-o`` and exits 1 when the
profile, the target or the component constraints changed since it was made; the target is the
one recorded in the lock with whatever target flags (or ``COLABENV_*`` variables) are given,
so CI needs no GPU. A lock that is not whole (truncated, edited, missing a requirement of its
own profile) is exit 2. Each target's choices are confirmed against the indexes as
``render``'s are (:mod:`colabenv.app.confirmation`): a build the catalog marks unconfirmed
whose files the index serves (jax's aarch64 plugin) is locked without ``--allow-unconfirmed``,
and a lock chooses the build a ``render`` of it does. ``--http-deadline S`` (or
``COLABENV_HTTP_DEADLINE``) bounds each request to an index, whole (default 60 s), and uv's
and pip-tools' requests the same way; ``COLABENV_LOCK_MEMORY_MIB`` bounds their memory.
SIGTERM ends the lock as Ctrl-C does: the resolver and what it started are killed, the work
folder removed, exit 130. When a framework's page on its index lists a newer release than the
catalog's that the profile admits, one line says so and names the refresh command.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from colabenv import __version__
from colabenv.cli.common import (
    load_profile_arg,
    overrides_from_args,
    progress_status,
    target_from_args,
    terminate_as_interrupt,
    write_text_atomic,
)
from colabenv.errors import ColabenvError, ProfileError, UsageError, printable
from colabenv.models import Profile, Target

if TYPE_CHECKING:
    from colabenv.lock.content import Lock, LockFile, LockTarget

_PYLOCK_NAME = re.compile(r"^pylock(\.[^.]+)?\.toml$")
DEADLINE_VARIABLE = "COLABENV_HTTP_DEADLINE"
MEMORY_VARIABLE = "COLABENV_LOCK_MEMORY_MIB"
MAX_MEMORY_MIB = 1 << 20
MIN_MEMORY_MIB = 256


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
    from colabenv.lock.file import read_lock_file
    from colabenv.lock.fit import current_target

    given = args.check if isinstance(args.check, str) else None
    if given is not None and args.output and Path(args.output) != Path(given):
        raise UsageError("lock --check LOCK: -o names another lock; give the lock to check once")
    if given is None and not args.output:
        raise UsageError("lock --check needs the lock to check: --check LOCK or -o LOCK")
    profile = load_profile_arg(args.profile)
    path = Path(given or args.output)
    lock_file = read_lock_file(path)
    if lock_file.sectioned:
        return _check_sections(args, profile, lock_file, path)
    lock = lock_file.first
    target = current_target(lock.header.target, overrides_from_args(args))
    reasons = _stale(args, profile, lock, path.name, target, None)
    if reasons:
        for reason in reasons:
            sys.stdout.write(f"{printable(path)}: stale: {reason}\n")
        return 1
    sys.stdout.write(f"{printable(path)}: up to date with {printable(profile.path.name)}\n")
    return 0


def _stale(
    args: argparse.Namespace,
    profile: Profile,
    lock: Lock,
    where: str,
    target: LockTarget,
    now_target: Target | None,
) -> list[str]:
    """Why ``lock`` is stale for ``target`` (the resolution for ``now_target``, else for
    ``target`` itself, gives the component constraints); LockError when it is not whole."""
    from colabenv.app.resolution import resolve_for
    from colabenv.lock.fit import check_satisfies, stale_reasons

    same_profile = (lock.header.profile_name, lock.header.profile_hash) == (
        profile.name,
        profile.content_hash,
    )
    if same_profile:
        check_satisfies(lock, profile, printable(where))
    reasons = stale_reasons(lock, profile, target)
    if not reasons:
        now = resolve_for(profile, now_target or target.to_target(), allow_unconfirmed=args.allow_unconfirmed)
        reasons = stale_reasons(lock, profile, target, now.resolution.constraint_lines)
    return reasons


def _check_sections(args: argparse.Namespace, profile: Profile, lock_file: LockFile, path: Path) -> int:
    """``--check`` of a lock of several targets: each section against the profile's target of
    its name as the profile says it now; one line per section, exit 1 when one is stale."""
    from colabenv.app.resolution import spec_target
    from colabenv.cli.targets import refuse_target_flags
    from colabenv.lock.content import LockTarget

    refuse_target_flags(args, f"{printable(path.name)}, a lock of several targets,")
    for wanted in args.target:
        if lock_file.section(wanted) is None:
            raise UsageError(
                f"--target {printable(wanted)[:40]!r}: {printable(path.name)} has no such section "
                f"(sections: {', '.join(lock_file.names)})"
            )
    stale = False
    for section in lock_file.sections:
        name = str(section.name)
        if args.target and name not in args.target:
            continue
        lock = section.lock
        spec = profile.target(name)
        if spec is None:
            reasons = [f"profile {profile.name!r} has no target {name!r} any more"]
        else:
            now_target = spec_target(profile, spec)
            target = LockTarget.current(now_target, None)
            reasons = _stale(args, profile, lock, f"{path.name}: section {name}", target, now_target)
        for reason in reasons:
            sys.stdout.write(f"{printable(path)}: {name}: stale: {reason}\n")
        if not reasons:
            sys.stdout.write(f"{printable(path)}: {name}: up to date with {printable(profile.path.name)}\n")
        stale = stale or bool(reasons)
    return 1 if stale else 0


def run(args: argparse.Namespace) -> int:
    if args.check:
        return _check(args)
    from colabenv.lock.content import LockFile, LockSection
    from colabenv.lock.file import render_lock_file
    from colabenv.resolve.targets import chosen_specs

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
    named = bool(args.target) or args.all_targets
    targets: list[tuple[str | None, Target]]
    if named:
        from colabenv.app.resolution import spec_target
        from colabenv.cli.targets import refuse_target_flags

        refuse_target_flags(args, "--all-targets" if args.all_targets else "--target")
        specs = chosen_specs(profile, tuple(args.target), args.all_targets)
        targets = [(spec.name, spec_target(profile, spec)) for spec in specs]
    else:
        targets = [(None, target_from_args(args))]
    _refuse_unlockable(targets)  # every target, before any is resolved or any index read
    show_progress = not args.quiet and sys.stderr.isatty()
    sections = []
    with terminate_as_interrupt(), progress_status(show_progress, "locking") as progress:
        for name, target in targets:
            if name is not None:
                progress(f"target {name}")
            try:
                lock = _one_lock(args, profile, target, progress, deadline, memory_mib, pylock)
            except ColabenvError as error:
                if name is not None and not isinstance(error, ProfileError):
                    error.message = f"target {name}: {error.message}"
                raise
            sections.append(LockSection(name, lock))
    lock_file = LockFile(tuple(sections), output)
    text = render_lock_file(lock_file, pylock=pylock)
    if output is None:
        sys.stdout.write(text)
    else:
        write_text_atomic(output, text)
    if pylock and lock_file.sectioned and output is not None:
        _write_target_pylocks(args, lock_file, output)
    where = printable(output) if output is not None else "stdout"
    for section in sections:
        lock = section.lock
        frameworks = ", ".join(
            [f"{f.framework} {f.version} ({f.variant})" for f in lock.header.frameworks]
            + [f"{p.distribution} {p.version} ({p.variant})" for p in lock.header.cuda_packages]
        )
        target_name = f" (target {section.name})" if section.name else ""
        _note(
            args,
            f"locked {len(lock.packages)} packages for {profile.name}{target_name}"
            f"{': ' + frameworks if frameworks else ''} with {lock.header.resolver} "
            f"-> {where}",
        )
    return 0


def _refuse_unlockable(targets: list[tuple[str | None, Target]]) -> None:
    from colabenv.lock.make import refuse_unlockable

    for name, target in targets:
        try:
            refuse_unlockable(target)
        except ColabenvError as error:
            if name is not None:
                error.message = f"target {name}: {error.message}"
            raise


def _write_target_pylocks(args: argparse.Namespace, lock_file: LockFile, output: Path) -> None:
    """Beside a PEP 751 lock of several targets, one ``pylock.NAME.toml`` per target: a lock
    of that one target, which pip (26.1 or later) and uv install as it is (the file of all
    targets is a multi-use lock, of which a plain install installs the first target alone)."""
    from colabenv.lock.file import render_lock

    for section in lock_file.sections:
        path = output.parent / f"pylock.{section.name}.toml"
        if path.resolve() == output.resolve():
            continue
        write_text_atomic(path, render_lock(section.lock, pylock=True))
        _note(args, f"target {section.name}: {printable(path)}, a lock of that target alone")


def _one_lock(
    args: argparse.Namespace,
    profile: Profile,
    target: Target,
    progress: Callable[[str], None],
    deadline: float,
    memory_mib: int,
    pylock: bool,
) -> Lock:
    """The lock of ``profile`` for one target (one section)."""
    from colabenv.app.resolution import resolve_for
    from colabenv.index.check import index_check
    from colabenv.lock.make import known_releases, make_lock

    check = index_check(os.environ)
    resolved = resolve_for(profile, target, allow_unconfirmed=args.allow_unconfirmed, index=check)
    resolution = resolved.resolution
    for warning in resolution.warnings:
        _note(args, f"warning: {warning}")
    lock = make_lock(
        resolution,
        resolver=args.resolver,
        colabenv_version=__version__,
        progress=progress,
        with_files=pylock,
        http_deadline_s=deadline,
        known=known_releases(profile, resolved.catalog),
        notice=lambda text: _note(args, text),
        memory_mib=memory_mib,
    )
    for note in resolution.notes:  # after the lock is made: a refusal is its one line
        _note(args, note)
    return lock
