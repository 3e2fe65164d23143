"""``[env]``: the variables the ``.pth`` hook sets, the names it must not set, and the names
that hold secrets, whose values must be ``${VAR}`` references (resolved by the hook when an
interpreter starts), never literal."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from colabenv._util.reader import Reader, expected
from colabenv.index.urls import reference_names
from colabenv.seeding import APPEND_PREFIX


class RefusedEnv(NamedTuple):
    """``[env]`` names refused, with why: the hook that sets ``[env]`` runs inside Python, after
    the dynamic loader, the shell that started it and Python itself have read their variables,
    so these cannot work from there, and set for every child process they are an injection
    vector. Names compare case-insensitively."""

    names: Mapping[str, str]
    prefixes: Mapping[str, str]

    def reason(self, name: str) -> str | None:
        upper = name.upper()
        if upper in self.names:
            return self.names[upper]
        return next((why for prefix, why in self.prefixes.items() if upper.startswith(prefix)), None)


_LOADER = (
    "the dynamic loader and the C library read it when a process starts, before Python"
    " runs: from the .pth hook it does nothing here and injects into every child process"
)
_SHELL = (
    "shells read it when they start: an injection vector for every script and tool run from this environment"
)
_PYTHON = "Python reads it at startup, before the .pth hook that would set it runs"
_PROCESS = (
    "it is read before Python starts and by every child process: set by the .pth hook,"
    " it cannot work from there"
)
REFUSED_ENV = RefusedEnv(
    names={
        **dict.fromkeys(("PATH", "HOME", "SHELL"), _PROCESS),
        **dict.fromkeys(
            (
                "BASH_ENV",
                "ENV",
                "IFS",
                "CDPATH",
                "PS4",
                "PROMPT_COMMAND",
                "SHELLOPTS",
                "BASHOPTS",
                "GLOBIGNORE",
                "BASH_XTRACEFD",
            ),
            _SHELL,
        ),
        **dict.fromkeys(("GCONV_PATH", "LOCPATH", "NLSPATH", "HOSTALIASES", "RESOLV_HOST_CONF"), _LOADER),
    },
    prefixes={"LD_": _LOADER, "DYLD_": _LOADER, "BASH_FUNC_": _SHELL, "PYTHON": _PYTHON},
)

SECRET_NAME_PARTS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "API_KEY",
    "APIKEY",
    "ACCESS_KEY",
    "PRIVATE_KEY",
    "CREDENTIAL",
    "AUTH",
    "KEY",
)
"""What in a variable's name says it holds a secret: its value in ``[env]`` must come from
``${VAR}`` references, since every file colabenv writes (the script, the restart marker, the
hook, a container definition) would hold a literal one in clear. A part matches whole
``_``-separated words of the name, compared upper-case, a plural ``S`` allowed (``HF_TOKEN``,
``WANDB_API_KEY``, ``KAGGLE_KEY``, ``GH_TOKENS``), so that ``TOKENIZERS_PARALLELISM`` or
``AUTHOR`` is no secret; nor is a name whose last word says it names a place
(:data:`PLACE_WORDS`: ``HF_TOKEN_PATH``)."""

PLACE_WORDS = ("PATH", "FILE", "DIR")


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    if upper.rpartition("_")[2] in PLACE_WORDS:
        return False
    words = f"_{upper}_"
    return any(f"_{part}_" in words or f"_{part}S_" in words for part in SECRET_NAME_PARTS)


def references(value: str) -> list[str]:
    """The ``${VAR}`` references in an ``[env]`` value (the index URLs' rule,
    :func:`colabenv.index.urls.reference_names`), in order."""
    return reference_names(value)


_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

MAX_VARIABLE_BYTES = 131072
"""The most one variable may take in a process's environment, ``NAME=value`` in UTF-8 and its
NUL: Linux's ``MAX_ARG_STRLEN`` (32 pages of 4 KiB). A process whose environment holds a longer
one cannot be started ("Argument list too long"), so a hook that set it would break every
process started from the environment."""

MAX_TOTAL_BYTES = 131072
"""The most all of ``[env]`` may take together, counted the same way: a sixteenth of
``ARG_MAX``'s usual 2 MiB, which the runtime's own environment and every command line share;
and the ``.pth`` hook and the restart marker that hold the values (a byte written as at most 6
characters there) stay under the 1 MiB the helper reads back of either."""


def variables(table: Reader) -> tuple[tuple[str, str], ...]:
    """``[env]`` as ``(name, value)`` pairs: POSIX names that are neither colabenv's own nor
    read before the hook runs, with values that are literal or hold ``${VAR}`` references (kept
    as written: the hook expands them when an interpreter starts), a secret-like name's only
    from references, each and all together of a size a process's environment can hold."""
    found = []
    for name, text in table.data.items():
        pair = table.attempt(functools.partial(_variable, table, name, text), None)
        if pair is not None:
            found.append(pair)
    total = sum(environment_bytes(name, text) for name, text in found)
    if total > MAX_TOTAL_BYTES:
        table.report(
            table.fail(
                None,
                f"the variables take {total} bytes together (NAME=value and a NUL each);"
                f" at most {MAX_TOTAL_BYTES} (128 KiB): they are set in every process started from"
                " this environment",
            )
        )
    return tuple(found)


def _variable(table: Reader, name: str, text: object) -> tuple[str, str]:
    refuse = table.at(name)
    if not _ENV_NAME_RE.fullmatch(name):
        raise refuse("not an environment variable name (letters, digits, '_'; no leading digit)")
    if name.upper().startswith("COLABENV_"):
        raise refuse("COLABENV_* variables are colabenv's own settings")
    reason = REFUSED_ENV.reason(name)
    if reason is not None:
        raise refuse(f"refused: {reason}")
    if not isinstance(text, str):
        raise refuse(expected("a string (quote numbers and booleans)", text))
    if "\x00" in text:
        raise refuse("value contains a NUL character")
    found = references(text)
    if text.count("${") != len(found):
        raise refuse(
            "holds a ${ that is not a ${VAR} reference (a name of letters, digits and '_',"
            " no leading digit, in braces): write the value without it"
        )
    if text and not found and is_secret_name(name):
        raise refuse(
            f"refused: a literal value for a secret would be written in clear into the script,"
            f' the restart marker and the .pth hook: use "${{{name}}}" and set {name} in the'
            " environment or Colab's secrets"
        )
    size = environment_bytes(name, text)
    if size > MAX_VARIABLE_BYTES:
        raise refuse(
            f"{name}=... takes {size} bytes in the environment (NAME=value and its NUL);"
            f" Linux allows one variable at most {MAX_VARIABLE_BYTES} (MAX_ARG_STRLEN), and no"
            ' process could be started with it ("Argument list too long")'
        )
    return name, text


def leave_room_for_flags(
    table: Reader, found: Sequence[tuple[str, str]], hook: Sequence[tuple[str, str]]
) -> None:
    """The hook puts a flag of its own (a ``+NAME`` pair of ``hook``,
    :func:`colabenv.seeding.hook_environment`) into ``NAME`` after ``[env]`` is set: an ``[env]``
    ``NAME`` must leave room for it (a space and the flag) within :data:`MAX_VARIABLE_BYTES`."""
    values = dict(found)
    for key, flag in hook:
        name = key[len(APPEND_PREFIX) :]
        if not key.startswith(APPEND_PREFIX) or name not in values:
            continue
        size = environment_bytes(name, values[name]) + 1 + len(flag.encode("utf-8"))
        if size > MAX_VARIABLE_BYTES:
            table.report(
                table.fail(
                    name,
                    f"{name}=... takes {size} bytes in the environment with the {flag} that"
                    f" [reproducibility] deterministic adds; Linux allows one variable at most"
                    f" {MAX_VARIABLE_BYTES} (MAX_ARG_STRLEN)",
                )
            )


def environment_bytes(name: str, value: str) -> int:
    """What ``NAME=value`` takes in a process's environment: its UTF-8 bytes and a NUL."""
    return len(name.encode("utf-8")) + 1 + len(value.encode("utf-8")) + 1
