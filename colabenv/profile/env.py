"""``[env]``: the variables the ``.pth`` hook sets, and the names it must not set."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from colabenv._util.reader import Reader, expected


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
    "it is read before Python starts and by every child process, and the .pth hook"
    " sets it literally (no ${...}): it cannot work from there"
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

_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def variables(table: Reader) -> tuple[tuple[str, str], ...]:
    """``[env]`` as ``(name, value)`` pairs: POSIX names that are neither colabenv's own nor
    read before the hook runs, with literal values."""
    found = []
    for name, text in table.data.items():
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
        if "${" in text:
            raise refuse("refused: values are set literally, so ${...} would not be expanded")
        found.append((name, text))
    return tuple(found)
