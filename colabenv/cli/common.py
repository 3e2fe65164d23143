"""What several commands share: target flags to a Target, a profile argument to a Profile."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from colabenv._util.files import MAX_INPUT_BYTES, FileProblem, read_limited, write_output
from colabenv.errors import InputError, OutputError, UsageError, printable, shown
from colabenv.models import JobSettings, Profile, Target, TargetOverrides
from colabenv.models.runtimes import LATEST
from colabenv.resolve.overrides import TargetFlags

T = TypeVar("T")


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM is a KeyboardInterrupt where the main thread is: the
    command ends its children and removes its work folders as on Ctrl-C, then exits 130."""
    import signal

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stdout_is_terminal() -> bool:
    """Whether people read standard output as it comes (tables) or it goes to a pipe or a
    file (plain lines)."""
    import sys

    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def print_report(
    as_json: bool, to_json: Callable[[], object], table: Callable[[], object], plain: Callable[[], object]
) -> None:
    """A command's report: one JSON object (``--json``: ``to_json()``), else ``table()`` for a
    terminal, ``plain()`` for a pipe or a file."""
    import json
    import sys

    if as_json:
        sys.stdout.write(json.dumps(to_json(), indent=2) + "\n")
    elif stdout_is_terminal():
        table()
    else:
        plain()


@contextmanager
def progress_status(enabled: bool, doing: str) -> Iterator[Callable[[str], None]]:
    """A status line on stderr that says ``doing``, then each text given; nothing when not
    ``enabled``."""
    if not enabled:
        yield lambda _text: None
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(stderr=True)
    with console.status(doing) as status:
        yield lambda text: status.update(Text(printable(text)))


def target_flags(args: argparse.Namespace) -> TargetFlags:
    runtime = getattr(args, "runtime", None)
    if isinstance(runtime, str) and runtime.strip() == LATEST:
        _say_latest()
    return TargetFlags(
        driver=getattr(args, "driver", None),
        cuda=getattr(args, "cuda", None),
        compute_capability=tuple(getattr(args, "compute_capability", None) or ()),
        python=getattr(args, "python", None),
        cpu=bool(getattr(args, "cpu", False)),
        installed_from=getattr(args, "installed_from", None),
        tpu=getattr(args, "tpu", None),
        runtime=getattr(args, "runtime", None),
        platform=getattr(args, "platform", None),
        rocm=getattr(args, "rocm", None),
        gfx=tuple(getattr(args, "gfx", None) or ()),
    )


def job_flags(args: argparse.Namespace) -> JobSettings:
    """The job flags of ``render`` (``--gpus``, ``--time`` ...), each by the rule of its
    ``[job]`` key; the ones not given are None."""
    from colabenv.profile.job import MAX_CPUS, MAX_GPUS, parse_memory, parse_name, parse_time

    def value(flag: str, given: str | None, parse: Callable[[str], T]) -> T | None:
        if given is None:
            return None
        try:
            return parse(given)
        except ValueError as problem:
            raise UsageError(f"{flag} {shown(given)}: {problem}") from None

    def count(high: int) -> Callable[[str], int]:
        def parse(text: str) -> int:
            if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= high:
                raise ValueError(f"expected a whole number from 1 to {high}")
            return int(text)

        return parse

    return JobSettings(
        gpus=value("--gpus", args.gpus, count(MAX_GPUS)),
        gpu_type=value("--gpu-type", args.gpu_type, lambda text: parse_name(text, "a GPU type")),
        time_s=value("--time", args.time, parse_time),
        memory_mib=value("--memory", args.memory, parse_memory),
        cpus=value("--cpus", args.cpus, count(MAX_CPUS)),
        partition=value("--partition", args.partition, lambda text: parse_name(text, "a partition")),
    )


def _say_latest() -> None:
    """``--runtime colab-latest``: which image it is, of when, and whether that is old (stderr)."""
    import datetime

    from colabenv.catalog.runtimes import latest_note, shipped_runtimes

    runtime = shipped_runtimes().get(LATEST)
    if runtime is not None:
        sys.stderr.write(f"colabenv: note: {printable(latest_note(runtime, datetime.date.today()))}\n")


def overrides_from_args(args: argparse.Namespace) -> TargetOverrides:
    from colabenv.app.resolution import overrides_of  # not for doctor and watch, which take no target

    return overrides_of(target_flags(args))


def target_from_args(args: argparse.Namespace) -> Target:
    """Flags and COLABENV_* variables first; whatever they leave open is detected."""
    from colabenv.app.resolution import host_fingerprint

    return host_fingerprint(target_flags(args)).target


def load_profile_arg(name_or_path: str) -> Profile:
    """A profile file, or the name of a shipped golden profile."""
    from colabenv.profile.load import load_profile

    return load_profile(locate_profile(name_or_path))


def locate_profile(name_or_path: str) -> Path:
    """:func:`colabenv.profile.files.find_profile`, saying on stderr when a bare golden name passed
    over a file or folder of that name in the current directory."""
    import sys

    from colabenv.profile.files import find_profile, shadowed_file

    path = find_profile(name_or_path)
    shadowed = shadowed_file(name_or_path)
    if shadowed is not None:
        shown = printable(name_or_path)
        sys.stderr.write(
            f"colabenv: note: using the golden profile {shown}, not ./{shown} in"
            f" this directory (write ./{shown} for that one)\n"
        )
    return path


def read_input(path: Path, what: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a file given on the command line; a problem is one InputError naming it."""
    try:
        return read_limited(path, limit)
    except FileProblem as problem:
        raise InputError(f"{printable(path)}: {what}: {problem}") from None


def write_text_atomic(
    path: Path,
    text: str,
    *,
    mode: int | None = None,
    exclusive: bool = False,
    validate: Callable[[Path], None] | None = None,
) -> Path:
    """``-o``: :func:`colabenv._util.files.write_output` for text; a failure is one OutputError
    naming ``path``. Returns the path written (a link's target)."""
    try:
        return write_output(path, text.encode("utf-8"), mode=mode, exclusive=exclusive, validate=validate)
    except FileExistsError:
        raise OutputError(f"{printable(path)}: already exists; not overwritten") from None
    except FileProblem as problem:
        raise OutputError(f"{printable(path)}: cannot write: {problem}") from None
    except OSError as exc:
        raise OutputError(f"{printable(path)}: cannot write: {exc.strerror or exc}") from None


def build_folder(folder: Path, form: str) -> Path:
    """``-o DIR`` for an image: an existing directory, or a new one in an existing directory."""
    where = f"{printable(folder)}: -o names the build folder with --format {form}"
    try:
        folder.mkdir(exist_ok=True)
    except FileExistsError:
        raise OutputError(f"{where}, and this is not a directory") from None
    except OSError as exc:
        raise OutputError(f"{where}, which cannot be made: {exc.strerror or exc}") from None
    if not folder.is_dir():
        raise OutputError(f"{where}, and this is not a directory")
    return folder
