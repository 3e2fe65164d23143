"""One error tree for everything colabenv refuses.

Only :mod:`colabenv.cli.main` catches these; it prints ``str(error)`` to stderr and exits with
``error.exit_code``. Messages name the file and the key path where one applies, so the first
line a user sees says what to fix and where.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def printable(text: object) -> str:
    """``text`` for a one-line message: control characters shown escaped, so a file name or a
    value from input can neither break the line nor send escape sequences to the terminal."""
    value = str(text)
    if value.isprintable():
        return value
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in value)


SHOWN_LENGTH = 500
"""The most characters of a value read from a file that a message shows (:func:`shown`)."""


def shown(value: str) -> str:
    """A value read from a file (a lock's) for a message: quoted, control characters escaped,
    cut short."""
    return repr(printable(value[:SHOWN_LENGTH]))


class ColabenvError(Exception):
    """Base of every error colabenv reports to a user (never a bug)."""

    exit_code: int = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(ColabenvError):
    """Bad command-line input: an unknown golden profile, a malformed flag value."""


class ProfileError(ColabenvError):
    """A profile that cannot be read or does not match schema 1."""

    def __init__(self, path: Path | str, key: str | None, problem: str) -> None:
        self.path = Path(path)
        self.key = key
        self.problem = problem
        where = f"{self.path.name}: {key}: " if key else f"{self.path.name}: "
        super().__init__(where + problem)


class ProfileErrors(ProfileError):
    """Several problems one read of a profile found, one line each (``FILE: key.path: problem``),
    and how many more were left out; ``path``, ``key`` and ``problem`` are the first's."""

    def __init__(self, errors: Sequence[ProfileError], more: int = 0) -> None:
        first = errors[0]
        super().__init__(first.path, first.key, first.problem)
        self.errors = tuple(errors)
        lines = [error.message for error in errors]
        if more:
            lines.append(f"... and {more} more")
        self.message = "\n".join(lines)
        self.args = (self.message,)


class CatalogError(ColabenvError):
    """The shipped catalog is inconsistent. This is a bug in colabenv's data, not user input."""

    exit_code = 70

    def __init__(self, path: Path | str, key: str | None, problem: str) -> None:
        self.path = Path(path)
        self.key = key
        where = f"catalog {self.path.name}: {key}: " if key else f"catalog {self.path.name}: "
        super().__init__(where + problem)


class CatalogOverlayError(ColabenvError):
    """A catalog overlay (``COLABENV_CATALOG``, a profile's ``[catalog] paths``, the file
    ``catalog refresh`` starts from) that cannot be read or does not hold together: user input,
    named by its full path."""

    def __init__(self, path: Path | str, key: str | None, problem: str) -> None:
        self.path = Path(path)
        self.key = key
        shown = printable(str(path))
        where = f"catalog overlay {shown}: {key}: " if key else f"catalog overlay {shown}: "
        super().__init__(where + problem)


class TargetError(ColabenvError):
    """A target override (flag, environment variable, freeze file) that cannot be understood.

    ``key``: the key of a profile's named target the problem is with (``cuda``); the message is
    then what follows the key path (``13.0 conflicts with driver ...``), which the profile's
    error puts after ``targets.NAME.cuda``."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class ResolutionError(ColabenvError):
    """No set of framework wheels satisfies the profile on the target."""

    exit_code = 3


class IndexUnavailableError(ColabenvError):
    """A package index could not be reached, or does not serve a file the resolution needs."""

    exit_code = 4


class IndexUnreachableError(IndexUnavailableError):
    """A package index gave no answer: its host could not be reached (refused, not found, the
    connection failed) or did not answer within the deadline. An index that answered badly (a
    refused credential, a malformed page, an HTTP error) is an :class:`IndexUnavailableError`."""


class LockError(ColabenvError):
    """A lockfile that cannot be read, or a resolver (uv, pip-tools) that failed."""


class LockResolverError(ColabenvError):
    """uv or pip-compile could not produce a closure for the requirements."""

    exit_code = 3


class InputError(ColabenvError):
    """A file colabenv was given that cannot be read: missing, not a regular file, too large."""


class OutputError(ColabenvError):
    """A place colabenv was told to write that cannot take the file (a directory, a missing
    directory, a read-only place, a full disk)."""


class StateError(ColabenvError):
    """The state directory or restart marker cannot be read or written."""


class ProcessError(ColabenvError):
    """A child process could not be started or did not finish in time."""

    def __init__(self, argv: list[str] | tuple[str, ...], problem: str) -> None:
        self.argv = tuple(argv)
        super().__init__(f"{argv[0] if argv else '?'}: {problem}")
