"""Where the bootstrap script leaves its state, and every name the script and Python share.

Defined once here and used on both sides: :func:`state_dir` is the rule in Python (``verify``,
``detect``); :mod:`colabenv.script.render` renders the same rule into the script's bash, and hands
the names to the embedded helper (:func:`shared_names`), which has no colabenv to import.

The state directory, first match wins:

1. ``COLABENV_STATE_DIR`` when set and not empty, with a leading ``~`` or ``~user`` expanded
   exactly as :func:`os.path.expanduser` does (taken as given otherwise: a relative path is
   taken from the current directory, and the script fixes it there when it starts);
2. ``/content/.colabenv`` when one of Colab's variables (``COLAB_RELEASE_TAG``, ``COLAB_GPU``)
   is set and not empty: an empty value does not make a host Colab;
3. ``$XDG_CACHE_HOME/colabenv`` when ``XDG_CACHE_HOME`` is an absolute path (the XDG rule:
   a relative one is ignored);
4. ``~/.cache/colabenv``, the home directory being ``HOME`` when it is set, else the user's
   entry in the password database; with neither, there is no state directory (an error that
   says to set ``COLABENV_STATE_DIR``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from colabenv.errors import StateError, printable

STATE_DIR_VARIABLE = "COLABENV_STATE_DIR"
COLAB_VARIABLES = ("COLAB_RELEASE_TAG", "COLAB_GPU")
COLAB_STATE_DIR = "/content/.colabenv"
CACHE_VARIABLE = "XDG_CACHE_HOME"
HOME_CACHE = "~/.cache"
LEAF = "colabenv"
RULE_VARIABLES = frozenset((STATE_DIR_VARIABLE, *COLAB_VARIABLES, CACHE_VARIABLE, "HOME"))
"""The variables the rule reads: a profile's ``[env]`` that sets one gets ``COLABENV_STATE_DIR``
in its ``.pth`` hook too, naming the directory the run used, so ``verify`` in the restarted
runtime finds the marker there."""
NO_HOME = f"no home directory (HOME is unset and the user has no password entry); set {STATE_DIR_VARIABLE}"

MARKER_NAME = "restart-marker.json"
"""The restart marker in the state directory, written last by the script (``verify`` reads it)."""
ENV_HOOK_NAME = "colabenv_env.pth"
"""The ``.pth`` file in the target's site-packages that sets the profile's ``[env]``."""
LOCK_NAME = "run.lock"
"""The lock file in the state directory: runs that share it run one at a time."""
PENDING_NAME = "pending.{interpreter}.{profile}.txt"
"""What runs of one profile against one interpreter changed that no marker reports yet: kept
across a killed run, so that the next run of the same profile and interpreter still reports
the restart; never read by another profile's run."""
WORK_PREFIX = "colabenv."
"""A run's work folder is ``$TMPDIR/colabenv.PID.XXXXXX``."""
WORK_MARK = ".colabenv-run"
"""The file a run writes into its work folder at creation: ``PID START PIDNS BOOT``, so that a
later run removes the folder only when that process is gone (start time from /proc/PID/stat)."""
WAITING_LINE = "COLABENV: waiting for another colabenv run (pid {pid})"
"""What a run prints while another process holds the run lock (the helper's ``hold-lock``)."""


def shared_names() -> dict[str, str]:
    """The names the embedded helper needs, as :mod:`colabenv.script.render` substitutes them."""
    return {
        "marker": MARKER_NAME,
        "env_hook": ENV_HOOK_NAME,
        "pending": PENDING_NAME,
        "waiting": WAITING_LINE,
    }


def expand_home(path: str, environ: Mapping[str, str]) -> str:
    """:func:`os.path.expanduser` (POSIX) reading ``HOME`` from ``environ``."""
    if not path.startswith("~"):
        return path
    end = path.find("/", 1)
    if end < 0:
        end = len(path)
    home: str | None
    if end == 1:
        home = environ["HOME"] if "HOME" in environ else _password_home(None)
    else:
        home = _password_home(path[1:end])
    if home is None:
        return path
    home = home.rstrip("/")
    return (home + path[end:]) or "/"


def _password_home(user: str | None) -> str | None:
    try:
        import pwd

        entry = pwd.getpwuid(os.getuid()) if user is None else pwd.getpwnam(user)
    except (ImportError, KeyError):
        return None
    return entry.pw_dir


def on_colab(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` is a Colab runtime's: one of :data:`COLAB_VARIABLES` set and not
    empty (``"0"`` and ``" "`` are set; an empty value is not). ``detect``, ``bootstrap()`` and
    the state directory take it from here; the script's bash renders it from the same names."""
    return any(environ.get(name) for name in COLAB_VARIABLES)


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The state directory by the rule above, absolute (a relative one is taken from the current
    directory, as the script fixes it when it starts); StateError when there is no home to put
    it in, or a relative one and no working directory (deleted)."""
    found = _rule(os.environ if environ is None else environ)
    if found.is_absolute():
        return found
    try:
        return Path.cwd() / found
    except FileNotFoundError:
        raise StateError(
            f"{STATE_DIR_VARIABLE}={printable(str(found))} is relative and the working directory was"
            " deleted; give an absolute path or start from a directory that exists"
        ) from None


def _rule(env: Mapping[str, str]) -> Path:
    explicit = env.get(STATE_DIR_VARIABLE, "")
    if explicit:
        return Path(expand_home(explicit, env))
    if on_colab(env):
        return Path(COLAB_STATE_DIR)
    cache = env.get(CACHE_VARIABLE, "")
    if cache.startswith("/"):
        return Path(cache) / LEAF
    home_cache = expand_home(HOME_CACHE, env)
    if home_cache.startswith("~"):
        raise StateError(NO_HOME)
    return Path(home_cache) / LEAF
