"""``colabenv bundle LOCK -o DIR [--target NAME]``: a folder of every wheel the lock installs,
each checked against the lock's sha256, with a manifest and a README on installing offline."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from colabenv.errors import OutputError, UsageError, printable
from colabenv.wheelhouse.plan import MANIFEST_NAME


def _folder(path: Path) -> Path:
    """``-o DIR``: an existing directory, or a new one in an existing directory."""
    try:
        path.mkdir(exist_ok=True)
    except FileExistsError:
        raise OutputError(
            f"{printable(path)}: -o names the wheelhouse folder, and this is not a directory"
        ) from None
    except OSError as exc:
        raise OutputError(
            f"{printable(path)}: the wheelhouse folder cannot be made: {exc.strerror or exc}"
        ) from None
    if not path.is_dir():
        raise OutputError(f"{printable(path)}: -o names the wheelhouse folder, and this is not a directory")
    return path


def _deadline(args: argparse.Namespace) -> float:
    from colabenv.index.client import HTTP_DEADLINE_S, check_deadline

    given = args.http_deadline or os.environ.get("COLABENV_HTTP_DEADLINE")
    if not given:
        return HTTP_DEADLINE_S
    where = "--http-deadline" if args.http_deadline else "COLABENV_HTTP_DEADLINE"
    try:
        seconds = float(given)
    except ValueError:
        raise UsageError(f"{where}: expected seconds, got {printable(given)}") from None
    return check_deadline(seconds, where)


def _live(stream: object) -> bool:
    from colabenv.wheelhouse.progress import NOTEBOOK_VARIABLES

    isatty = getattr(stream, "isatty", None)
    tty = bool(isatty()) if callable(isatty) else False
    return tty or any(os.environ.get(name) for name in NOTEBOOK_VARIABLES)


def run(args: argparse.Namespace) -> int:
    from colabenv.cli.common import terminate_as_interrupt
    from colabenv.lock.file import read_lock_file
    from colabenv.wheelhouse.fetch import bundle
    from colabenv.wheelhouse.progress import Progress

    lock_file = read_lock_file(Path(args.lock))
    deadline = _deadline(args)
    folder = _folder(Path(args.output))
    progress = Progress(sys.stderr, "colabenv: bundle", live=_live(sys.stderr) and not args.quiet)
    with terminate_as_interrupt():  # a part file is removed on SIGTERM as on Ctrl-C (exit 130)
        result = bundle(
            lock_file, folder, target=args.target, environ=os.environ, progress=progress, deadline_s=deadline
        )
    sys.stdout.write(
        f"{result.files} wheels in {printable(folder)} ({MANIFEST_NAME}); to install with no index "
        f"(a Kaggle Dataset): see {printable(folder / 'README.md')}\n"
    )
    return 0
