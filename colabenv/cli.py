"""Command line: parse arguments, dispatch, print errors, return exit codes.

Each command lives in ``colabenv._commands.<name>`` with ``run(args) -> int`` and is imported
only when used, so ``colabenv render`` never pays for rich, requests, uv or pip-tools.
Only this module catches :class:`ColabenvError`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from colabenv import __version__
from colabenv.errors import ColabenvError

COMMANDS: dict[str, str] = {
    "render": "render",
    "resolve": "resolve",
    "lock": "lock",
    "verify": "verify",
    "detect": "detect",
    "profiles": "profiles",
    "diff": "diff",
    "init": "init",
    "pin": "pin",
}


class _Parser(argparse.ArgumentParser):
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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="colabenv",
        description="Declarative, reproducible GPU Python environments for notebook runtimes.",
    )
    parser.add_argument("--version", action="version", version=f"colabenv {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("render", help="resolve for the target and print the bootstrap script")
    p.add_argument("profile", help="a profile file or a golden profile name")
    p.add_argument("-o", "--output", metavar="FILE", help="write the script here (atomically)")
    p.add_argument("--lock", metavar="LOCK", help="install exactly this lockfile instead")
    _add_target_flags(p)

    p = sub.add_parser("resolve", help="show the resolution and why each choice was made")
    p.add_argument("profile")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_target_flags(p)

    p = sub.add_parser("lock", help="write the full pinned closure with hashes")
    p.add_argument("profile")
    p.add_argument("-o", "--output", metavar="LOCK", help="lockfile path")
    p.add_argument("--resolver", choices=("uv", "pip-tools"), default="uv")
    p.add_argument("--format", choices=("requirements", "pylock"), default="requirements")
    p.add_argument("--check", action="store_true", help="exit 1 when the lock is stale")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    _add_target_flags(p)

    p = sub.add_parser("verify", help="post-restart checks and GPU smoke tests")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--profile", metavar="P")
    group.add_argument("--lock", metavar="L")
    p.add_argument("--json", action="store_true")
    p.add_argument("--timeout", type=float, metavar="S", help="bound on each smoke test")

    p = sub.add_parser("detect", help="what this host is")
    p.add_argument("--json", action="store_true")
    _add_target_flags(p)

    p = sub.add_parser("profiles", help="the shipped golden profiles; validate profiles")
    psub = p.add_subparsers(dest="profiles_command", metavar="ACTION", parser_class=_Parser)
    psub.required = True
    psub.add_parser("list", help="name and description of each golden profile")
    show = psub.add_parser("show", help="print a golden profile")
    show.add_argument("name")
    check = psub.add_parser("check", help="validate profile files")
    check.add_argument("files", nargs="+", metavar="FILE")

    p = sub.add_parser("diff", help="what differs between two `detect --json` fingerprints")
    p.add_argument("a", metavar="A.json")
    p.add_argument("b", metavar="B.json")

    p = sub.add_parser("init", help="a starter profile from the detected runtime")
    p.add_argument("-o", "--output", metavar="FILE")
    p.add_argument("--name", help="profile name (default: the runtime kind)")
    _add_target_flags(p)

    p = sub.add_parser("pin", help="rewrite framework specifiers to a lock's exact versions")
    p.add_argument("profile")
    p.add_argument("--lock", required=True, metavar="LOCK")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    module = importlib.import_module(f"colabenv._commands.{COMMANDS[args.command]}")
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
