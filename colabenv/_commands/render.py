"""``colabenv render PROFILE [-o FILE] [--lock LOCK]``: print the bootstrap script."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from colabenv import __version__
from colabenv._commands._common import load_profile_arg, target_from_args, write_text_atomic
from colabenv.catalog import shipped_catalog
from colabenv.render import render_script
from colabenv.resolver import resolve


def helper_source() -> str:
    return (Path(__file__).resolve().parent.parent / "script_helper.py").read_text(
        encoding="utf-8"
    )


def run(args: argparse.Namespace) -> int:
    profile = load_profile_arg(args.profile)
    lock = None
    if args.lock:
        from colabenv._commands._lock_input import lock_input

        lock = lock_input(Path(args.lock))
    target = target_from_args(args)
    resolution = resolve(profile, target, shipped_catalog())
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
