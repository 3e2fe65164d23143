"""The arguments of every command: one parser per command, built only for the command run.

``colabenv render`` builds the render parser alone (building all of them would be most of what
it spends in argparse); ``colabenv --help`` builds them all.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable

from colabenv import __version__


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
    group.add_argument("--python", metavar="X.Y", help="target Python, e.g. 3.12 (3.14t: free-threaded)")
    group.add_argument("--cpu", action="store_true", help="resolve for a host without a GPU")
    group.add_argument(
        "--tpu", metavar="TYPE", help="resolve for a Google TPU host of this type, e.g. v5e-1 or v6e-8"
    )
    group.add_argument("--rocm", metavar="X.Y", help="the AMD host's ROCm version, e.g. 6.4")
    group.add_argument(
        "--gfx",
        metavar="GFX",
        action="append",
        default=[],
        help="each AMD GPU's architecture, repeatable or comma separated, e.g. gfx942",
    )
    group.add_argument(
        "--platform", metavar="PLATFORM", help="linux_x86_64 or linux_aarch64 (default: this host's)"
    )
    if installed_from:
        group.add_argument(
            "--installed-from",
            metavar="FREEZE",
            help="a `pip freeze` file standing for what the runtime already has",
        )
        group.add_argument(
            "--runtime",
            metavar="ID",
            help="a Colab runtime version, e.g. colab-2026.07: its Python and what its image"
            " for the target's GPU, CPU or TPU ships installed (docs/host.md)",
        )


def _add_resolution_flags(parser: argparse.ArgumentParser) -> None:
    """What the commands that resolve a profile take: ``--allow-unconfirmed``, the target flags."""
    parser.add_argument(
        "--allow-unconfirmed",
        action="store_true",
        help="also take catalog builds marked unconfirmed (a fact carried over, "
        "not read from upstream); the profile's [catalog] allow_unconfirmed "
        "does the same",
    )
    _add_target_flags(parser)


def _add_offline(parser: argparse.ArgumentParser) -> None:
    """``--offline`` of the commands that confirm their choices against the indexes."""
    parser.add_argument(
        "--offline",
        action="store_true",
        help="do not confirm the choices against the indexes they come from (COLABENV_OFFLINE=1 "
        "and the profile's [catalog] check_index = false do the same)",
    )


def _add_quiet_and_deadline(parser: argparse.ArgumentParser, *, quiet: str, deadline: str) -> None:
    """``--quiet`` and ``--http-deadline``, of the commands that fetch from an index."""
    parser.add_argument("--quiet", action="store_true", help=quiet)
    parser.add_argument("--http-deadline", metavar="S", help=deadline)


def _add_profile_or_lock(parser: argparse.ArgumentParser, *, profile: str, lock: str) -> None:
    """``--profile`` or ``--lock`` (one at most), and ``--json``, of verify and doctor."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--profile", metavar="P", help=profile)
    group.add_argument("--lock", metavar="L", help=lock)
    parser.add_argument("--json", action="store_true", help="print one JSON object")


PROFILE_HELP = (
    "a golden profile name (colabenv profiles list) or a profile file; a bare name is the"
    " golden profile even when a file of that name is here: write ./NAME for the file"
)


def _render_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile", help=PROFILE_HELP)
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the script here (atomically); with --format dockerfile or "
        "apptainer, the build folder: Dockerfile (or apptainer.def) and setup.sh",
    )
    p.add_argument("--lock", metavar="LOCK", help="install exactly this lockfile instead")
    p.add_argument(  # wheelhouse (issue 26)
        "--wheelhouse",
        metavar="DIR",
        help="with --lock: install only from this folder of wheels on the host (colabenv "
        "bundle), with no index; every file's sha256 is checked first",
    )
    p.add_argument(
        "--target",
        metavar="NAME",
        help="the profile's [targets] entry NAME: resolve for it, and install its section of --lock",
    )
    p.add_argument(
        "--format",
        choices=("script", "dockerfile", "apptainer", "ray", "slurm", "kubernetes"),
        default="script",
        metavar="FORMAT",
        help="script (the bootstrap script, the default), dockerfile or apptainer (a "
        "container image definition that runs it), ray (a Ray runtime_env of --lock: JSON, or "
        "YAML for -o FILE.yaml), slurm (a batch job: -o DIR, --lock, -- COMMAND), "
        "kubernetes (a Job running the image)",
    )
    image = p.add_argument_group("container images", "with --format dockerfile or apptainer")
    image.add_argument(
        "--base-image",
        metavar="IMAGE",
        help="build FROM this image (default: python:X.Y-slim-bookworm of the target's Python)",
    )
    image.add_argument(
        "--colabenv-wheel",
        metavar="WHEEL",
        help="copy this colabenv wheel into the build folder and install it, instead of "
        "the wheel made from this colabenv's own installed files",
    )
    _add_job_flags(p)
    _add_resolution_flags(p)
    _add_offline(p)


def _add_job_flags(p: argparse.ArgumentParser) -> None:
    """What a Slurm or Kubernetes job asks of the cluster, over the profile's ``[job]`` table
    (issue 37); the command the job runs follows ``--`` (taken by ``cli.main`` before argparse)."""
    job = p.add_argument_group(
        "cluster jobs", "with --format slurm or kubernetes; each over the profile's [job]"
    )
    job.add_argument("--gpus", metavar="N", help="GPUs per node (1-64)")
    job.add_argument("--gpu-type", metavar="TYPE", help="the GPU type as the cluster names it (a100, h100)")
    job.add_argument(
        "--time", metavar="LIMIT", help="the time limit, in Slurm's forms (90, 1:30:00, 2-00:00:00)"
    )
    job.add_argument("--memory", metavar="SIZE", help="host memory (32G, 512M)")
    job.add_argument("--cpus", metavar="N", help="CPU cores per task")
    job.add_argument("--partition", metavar="NAME", help="the Slurm partition")
    job.add_argument(
        "--image",
        metavar="IMAGE",
        help="the image the job runs in: an Apptainer image file (slurm) or the reference of the "
        "image built from --format dockerfile (kubernetes)",
    )


def _resolve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile", help=PROFILE_HELP)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--target", metavar="NAME", help="resolve for the profile's [targets] entry NAME")
    _add_resolution_flags(p)
    _add_offline(p)


def _lock_args(p: argparse.ArgumentParser) -> None:
    from colabenv.lock.resolvers import RESOLVERS

    p.add_argument("profile")
    p.add_argument("-o", "--output", metavar="LOCK", help="lockfile path")
    p.add_argument("--resolver", choices=RESOLVERS, default=RESOLVERS[0])
    p.add_argument("--format", choices=("requirements", "pylock"), default="requirements")
    p.add_argument(
        "--check",
        nargs="?",
        const=True,
        default=False,
        metavar="LOCK",
        help="check LOCK (or -o LOCK) against the profile: exit 1 when it is stale, 2 when it is not whole",
    )
    p.add_argument(
        "--target",
        metavar="NAME",
        action="append",
        default=[],
        help="lock the profile's [targets] entry NAME, one section each (repeatable)",
    )
    p.add_argument(
        "--all-targets",
        action="store_true",
        help="lock every [targets] entry of the profile, one section each",
    )
    _add_quiet_and_deadline(
        p,
        quiet="no progress output",
        deadline="bound on each whole request to an index, in seconds, and uv's and pip-tools' read "
        "timeout (default 60; also COLABENV_HTTP_DEADLINE)",
    )
    _add_resolution_flags(p)


def _verify_args(p: argparse.ArgumentParser) -> None:
    _add_profile_or_lock(
        p, profile="check against this profile, resolved here", lock="check against this lockfile's pins"
    )
    p.add_argument("--timeout", metavar="S", help="bound on each smoke test, in seconds (at most a day)")
    p.add_argument(
        "--cpu",
        action="store_true",
        help="skip the GPU checks (cuda:, components, vram's GPU part) and ask the smoke tests for"
        " no GPU; every other check runs: a GPU profile's CPU checks in CI",
    )
    p.add_argument(
        "--interpreter",
        metavar="PYTHON",
        help="verify this Python (a venv's bin/python, the kernel's interpreter)"
        " instead of the one colabenv runs in: its sys.path is scanned, its version"
        " and the restart marker's interpreter compared, and the smoke tests run in"
        " it; it needs Python 3.8+ and nothing of colabenv",
    )


def _detect_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--interpreter",
        metavar="PYTHON",
        help="read Python's version and the installed distributions from this"
        " interpreter (a venv's bin/python) instead of the one colabenv runs in",
    )
    _add_target_flags(p)


def _profiles_args(p: argparse.ArgumentParser) -> None:
    psub = p.add_subparsers(dest="profiles_command", metavar="ACTION", parser_class=_Parser)
    psub.required = True
    psub.add_parser("list", help="name and description of each golden profile")
    show = psub.add_parser("show", help="print a golden profile")
    show.add_argument("name")
    check = psub.add_parser("check", help="validate profile files")
    check.add_argument("files", nargs="+", metavar="FILE", help=PROFILE_HELP)


def _diff_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", metavar="A.json")
    p.add_argument("b", metavar="B.json")


def _init_args(p: argparse.ArgumentParser) -> None:
    p.description = (
        "A starter profile of the Python colabenv runs in: its frameworks pinned, and in"
        " [packages] the distributions installed there that nothing else installed depends on,"
        " less what the runtime image ships (--installed-from)."
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write it here (never overwritten)")
    p.add_argument("--name", help="profile name (default: the runtime kind)")
    _add_target_flags(p, installed_from=False)
    p.add_argument(
        "--installed-from",
        metavar="FREEZE",
        help="the runtime image's `pip freeze`: what it ships is left out of [packages]",
    )


def _pin_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile")
    p.add_argument("--lock", required=True, metavar="LOCK")


def _doctor_args(p: argparse.ArgumentParser) -> None:
    _add_profile_or_lock(p, profile="import what this profile names", lock="import what this lockfile pins")
    p.add_argument(
        "--since", metavar="DURATION", help="the window to look back over: 2h, 30m or 90s (at most a week)"
    )
    p.add_argument(
        "--interpreter",
        metavar="PYTHON",
        help="check imports in this Python (a venv's bin/python) instead of the one colabenv runs in",
    )
    p.add_argument(
        "--import",
        dest="imports",
        metavar="MODULE",
        action="append",
        default=[],
        help="also import this module, repeatable",
    )
    p.add_argument(
        "--kill-leftovers",
        action="store_true",
        help="end the processes of this user left holding a GPU (SIGTERM, then SIGKILL), after naming them",
    )


def _watch_args(p: argparse.ArgumentParser) -> None:
    wsub = p.add_subparsers(dest="watch_command", metavar="ACTION", parser_class=_Parser)
    wsub.required = True
    start = wsub.add_parser("start", help="start the recorder of this state directory (one at a time)")
    start.add_argument("--interval", metavar="S", help="seconds between samples (default 2; 0.5 to 600)")
    start.add_argument(
        "--max-hours", metavar="H", help="stop by itself after this many hours (default 24; at most 168)"
    )
    start.add_argument(
        "--path",
        metavar="DIR",
        action="append",
        default=[],
        help="a folder whose filesystem's free space is recorded, repeatable (default: /content,"
        " else the current directory; /tmp and the state directory always)",
    )
    wsub.add_parser("stop", help="stop the recorder")
    status = wsub.add_parser("status", help="whether a recorder runs, and which")
    status.add_argument("--json", action="store_true", help="print one JSON object")


def _bundle_args(p: argparse.ArgumentParser) -> None:  # wheelhouse (issue 26)
    p.add_argument("lock", metavar="LOCK")
    p.add_argument("-o", "--output", metavar="DIR", required=True, help="the wheelhouse folder")
    p.add_argument(
        "--target",
        metavar="NAME",
        help="only this section of a lock with named targets (a lock of one target has none)",
    )
    _add_quiet_and_deadline(
        p,
        quiet="no progress line, only the summary",
        deadline="bound on each whole request for a project page, in seconds (default 60; also "
        "COLABENV_HTTP_DEADLINE)",
    )


SUBCOMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "render": ("resolve for the target and print the bootstrap script", _render_args),
    "resolve": ("show the resolution and why each choice was made", _resolve_args),
    "lock": ("write the full pinned closure with hashes", _lock_args),
    "verify": ("post-restart checks and GPU smoke tests", _verify_args),
    "detect": ("what this host is", _detect_args),
    "doctor": ("what went wrong and what to do: GPU leftovers, imports that fail", _doctor_args),
    "profiles": ("the shipped golden profiles; validate profiles", _profiles_args),
    "diff": ("what differs between two `detect --json` fingerprints", _diff_args),
    "init": ("a starter profile from the detected runtime", _init_args),
    "pin": ("rewrite framework specifiers to a lock's exact versions", _pin_args),
    "watch": ("the recorder that outlives the kernel: start, stop, status", _watch_args),
    "bundle": ("download a lock's wheels into a folder, for installs with no index", _bundle_args),
    "catalog": (
        "maintainer tools: refresh a framework's catalog file from the indexes; the GPU "
        "architectures a wheel's libraries carry",
        lambda p: importlib.import_module("colabenv.cli.catalog").add_arguments(p),
    ),
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
