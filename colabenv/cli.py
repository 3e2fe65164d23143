"""Command line: parse arguments, dispatch, print errors, return exit codes.

Each command lives in ``colabenv._commands.<name>`` with ``run(args) -> int`` and is imported
only when used, so ``colabenv render`` never pays for rich, requests, uv or pip-tools.
Only this module catches :class:`ColabenvError`.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from colabenv import __version__
from colabenv.errors import ColabenvError


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, as wide as :func:`shutil.get_terminal_size` says, without importing
    shutil (and with it bz2, lzma and zlib): argparse builds one for every ``add_argument``."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _terminal_columns() - 2 if width is None else width)


def _terminal_columns() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0 and sys.__stdout__ is not None:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"colabenv: error: {message}\n")
        raise SystemExit(2)


def _add_target_flags(parser: argparse.ArgumentParser, *, installed_from: bool = True) -> None:
    group = parser.add_argument_group("target (what is not given is detected)")
    group.add_argument("--driver", metavar="VERSION", help="NVIDIA driver version, e.g. 550.54.15")
    group.add_argument("--cuda", metavar="X.Y", help="newest CUDA the driver supports, e.g. 12.4")
    group.add_argument(
        "--compute-capability",
        metavar="X.Y",
        action="append",
        default=[],
        help="GPU compute capability, repeatable or comma separated, e.g. 7.5",
    )
    group.add_argument("--python", metavar="X.Y", help="target Python, e.g. 3.12")
    group.add_argument("--cpu", action="store_true", help="resolve for a host without a GPU")
    if installed_from:
        group.add_argument(
            "--installed-from",
            metavar="FREEZE",
            help="a `pip freeze` file standing for what the runtime already has",
        )


def _render_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile", help="a profile file or a golden profile name")
    p.add_argument("-o", "--output", metavar="FILE", help="write the script here (atomically)")
    p.add_argument("--lock", metavar="LOCK", help="install exactly this lockfile instead")
    _add_target_flags(p)


def _resolve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_target_flags(p)


def _lock_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile")
    p.add_argument("-o", "--output", metavar="LOCK", help="lockfile path")
    p.add_argument("--resolver", choices=("uv", "pip-tools"), default="uv")
    p.add_argument("--format", choices=("requirements", "pylock"), default="requirements")
    p.add_argument("--check", action="store_true", help="exit 1 when the lock is stale")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    _add_target_flags(p)


def _verify_args(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--profile", metavar="P")
    group.add_argument("--lock", metavar="L")
    p.add_argument("--json", action="store_true")
    p.add_argument("--timeout", type=float, metavar="S", help="bound on each smoke test")


def _detect_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true")
    _add_target_flags(p)


def _profiles_args(p: argparse.ArgumentParser) -> None:
    psub = p.add_subparsers(dest="profiles_command", metavar="ACTION", parser_class=_Parser)
    psub.required = True
    psub.add_parser("list", help="name and description of each golden profile")
    show = psub.add_parser("show", help="print a golden profile")
    show.add_argument("name")
    check = psub.add_parser("check", help="validate profile files")
    check.add_argument("files", nargs="+", metavar="FILE")


def _diff_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", metavar="A.json")
    p.add_argument("b", metavar="B.json")


def _init_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", metavar="FILE")
    p.add_argument("--name", help="profile name (default: the runtime kind)")
    _add_target_flags(p)


def _pin_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile")
    p.add_argument("--lock", required=True, metavar="LOCK")


SUBCOMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "render": ("resolve for the target and print the bootstrap script", _render_args),
    "resolve": ("show the resolution and why each choice was made", _resolve_args),
    "lock": ("write the full pinned closure with hashes", _lock_args),
    "verify": ("post-restart checks and GPU smoke tests", _verify_args),
    "detect": ("what this host is", _detect_args),
    "profiles": ("the shipped golden profiles; validate profiles", _profiles_args),
    "diff": ("what differs between two `detect --json` fingerprints", _diff_args),
    "init": ("a starter profile from the detected runtime", _init_args),
    "pin": ("rewrite framework specifiers to a lock's exact versions", _pin_args),
    "catalog": ("maintainer tools: the GPU architectures a wheel's libraries carry",
                lambda p: importlib.import_module("colabenv._commands.catalog").add_arguments(p)),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with ``command`` only the parser that command needs: building
    all nine subcommand parsers would be most of what ``colabenv render`` spends in argparse."""
    parser = _Parser(
        prog="colabenv",
        description="Declarative, reproducible GPU Python environments for notebook runtimes.",
    )
    parser.add_argument("--version", action="version", version=f"colabenv {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (summary, add_arguments) in SUBCOMMANDS.items():
        if command is None or name == command:
            add_arguments(sub.add_parser(name, help=summary))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command, with the cyclic garbage collector off meanwhile (why: ``colabenv._entry``)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(argv)
    finally:
        if collecting:
            gc.enable()


def _run(argv: Sequence[str] | None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(words[0] if words and words[0] in SUBCOMMANDS else None)
    args = parser.parse_args(words)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    module = importlib.import_module(f"colabenv._commands.{args.command}")
    try:
        code: int = module.run(args)
    except ColabenvError as error:
        sys.stdout.flush()
        sys.stderr.write(f"colabenv: {error}\n")
        return error.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("colabenv: interrupted\n")
        return 130
    except BrokenPipeError:
        return 1
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
