"""The command line's main: parse arguments, dispatch, print errors, return exit codes.

Each command lives in ``colabenv.cli.<name>`` with ``run(args) -> int`` and is imported
only when used, so ``colabenv render`` never pays for rich, requests, uv or pip-tools.
Only this module catches :class:`ColabenvError`.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from colabenv.cli.parser import SUBCOMMANDS, build_parser
from colabenv.errors import ColabenvError, OutputError


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command, with the cyclic garbage collector off meanwhile (why: ``colabenv.cli.entry``),
    standard output watched (a write to it that fails is one line on stderr, not a traceback) and
    standard error best effort (what it cannot take is dropped: the exit code never depends on
    it)."""
    collecting = gc.isenabled()
    gc.disable()
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout = _Stdout(stdout)
    sys.stderr = _Stderr(stderr)
    try:
        return _report(argv, stdout)
    finally:
        sys.stdout, sys.stderr = stdout, stderr
        if collecting:
            gc.enable()


def _report(argv: Sequence[str] | None, stdout: TextIO | None) -> int:
    """The command's exit code; what it raised, as colabenv reports it."""
    try:
        try:
            return _run(argv)
        except SystemExit:
            sys.stdout.flush()
            raise
    except _StdoutFailed as error:
        _discard_output(stdout)
        sys.stderr.write(f"colabenv: {error}\n")
        return error.exit_code
    except ColabenvError as error:
        try:
            sys.stdout.flush()
        except _StdoutFailed:
            _discard_output(stdout)
        sys.stderr.write(f"colabenv: {error}\n")
        return error.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("colabenv: interrupted\n")
        return 130
    except BrokenPipeError:
        _discard_output(stdout)
        return 1


def _run(argv: Sequence[str] | None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    words, tail = split_job_command(words)
    parser = build_parser(words[0] if words and words[0] in SUBCOMMANDS else None)
    args = parser.parse_args(words)
    if args.command == "render":
        args.job_command = tail
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    module = importlib.import_module(f"colabenv.cli.{args.command}")
    code: int = module.run(args)
    sys.stdout.flush()
    return code


def split_job_command(words: list[str]) -> tuple[list[str], list[str]]:
    """``render``'s words, and the job's command: all that follows its first ``--``, taken whole
    before argparse (whose subcommands do not pass ``--`` on as a separator)."""
    if words and words[0] == "render" and "--" in words:
        cut = words.index("--")
        return words[:cut], words[cut + 1 :]
    return words, []


class _StdoutFailed(OutputError):
    """Standard output cannot take what the command prints (a full disk, a closed stream)."""


class _Stdout:
    """``sys.stdout`` while a command runs: a write or flush that fails (other than a closed
    pipe, which stays quiet) raises :class:`_StdoutFailed`; everything else is the stream's."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._open().write(text)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise _failed(error) from None

    def flush(self) -> None:
        try:
            self._open().flush()
        except BrokenPipeError:
            raise
        except OSError as error:
            raise _failed(error) from None

    def _open(self) -> TextIO:
        if self._stream is None or self._stream.closed:
            raise _StdoutFailed("cannot write to standard output: it is closed")
        return self._stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self._open(), name)


class _Stderr:
    """``sys.stderr`` while a command runs: a stream that cannot take a write (closed, a full
    disk, a pipe closed by its reader) loses it and the rest quietly, its descriptor pointed at
    /dev/null so the interpreter's flush at exit cannot fail either; the command's exit code is
    the same as with a stderr that works."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if self._stream is not None:
            try:
                return self._stream.write(text)
            except (OSError, ValueError):
                self._lose()
        return len(text)

    def flush(self) -> None:
        if self._stream is not None:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self._lose()

    def isatty(self) -> bool:
        try:
            return self._stream is not None and self._stream.isatty()
        except (OSError, ValueError):
            return False

    def _lose(self) -> None:
        _discard_output(self._stream, 2)
        self._stream = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _failed(error: OSError) -> _StdoutFailed:
    return _StdoutFailed(f"cannot write to standard output: {error.strerror or error}")


def _discard_output(stream: TextIO | None, fd: int = 1) -> None:
    """Point file descriptor ``fd`` at /dev/null when ``stream`` writes to it, so what is still
    in the buffer goes nowhere when the interpreter flushes it at exit (instead of failing
    again)."""
    try:
        if stream is None or stream.fileno() != fd:
            return
        null = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError, AttributeError):
        return
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
