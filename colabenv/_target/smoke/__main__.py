"""The child side of ``colabenv verify``: one framework per process, its result in a file.

Run by its folder's path, in the interpreter being verified, which need not have colabenv
installed::

    python /path/to/smoke smoke FRAMEWORK --result FILE
    python /path/to/smoke smoke-tpu FRAMEWORK --result FILE
    python /path/to/smoke package PACKAGE --result FILE
    python /path/to/smoke vram FRAMEWORK --go FILE --deadline S --search S --result FILE
    python /path/to/smoke determinism FRAMEWORK --seed N --result FILE
    python /path/to/smoke environ --result FILE NAME|NAME=TEMPLATE...

It imports only the standard library (and runs on Python 3.8 and newer) and the framework, so a
crash, hang or import error stays in this process. The result is a JSON object written to
``--result``, whatever the framework prints; stdout and stderr are left for the parent to quote.
Environ: the values of the named variables in a fresh interpreter of the verified environment,
after its ``.pth`` hooks ran; for a ``NAME=TEMPLATE`` (an ``[env]`` value with ``${VAR}``
references, which may stand for a secret) only whether ``NAME`` holds the template expanded
from this environment, never the value.

This file is the command line and the process discipline: no process the child starts outlives
it (on Linux it makes itself a child subreaper, does the work in a forked child, and when that
child ends, or the parent sends SIGTERM at the timeout, stops and kills every process left below
it, however it was detached: ``setsid``, a double fork). The work is in the files beside it,
which import each other by their plain names: the smoke tests in ``gpu.py`` and ``tpu.py`` with
what they share in ``base.py``, those of the CUDA packages around the frameworks in
``packages.py``, the VRAM probe in ``vram.py``, the determinism child in
``determinism.py`` with the seeding calls in ``seeds.py`` (which ``colabenv.seeding`` imports too).
Once they are imported, the folder leaves ``sys.path`` and their names leave ``sys.modules``,
so a framework importing a module of the same name finds its own. Every standard-library
module the files use is imported before that, so a file in the working directory named like one
(``ctypes.py``) never runs in this program (issue 35).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import os
import re
import resource
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence

sys.dont_write_bytecode = True  # nothing is written into colabenv's folder

from base import emit, smoke  # noqa: E402
from determinism import DETERMINISM, determinism  # noqa: E402
from gpu import SMOKE  # noqa: E402
from packages import PACKAGE_SMOKE, package_smoke  # noqa: E402
from tpu import SMOKE_TPU  # noqa: E402
from vram import vram  # noqa: E402

SIBLINGS = ("base", "determinism", "gpu", "packages", "seeds", "tpu", "vram")
"""This folder's modules, imported above by their plain names (the folder is first on
``sys.path`` when it runs); :func:`leave_the_path` takes them back out of sight."""

EXIT_TERMINATED = 143
PR_SET_CHILD_SUBREAPER = 36
REAP_SECONDS = 5.0


VARIABLE_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A ``${VAR}`` reference: the helper's rule (``colabenv/_target/helper.py``, a test holds the
two equal), which the ``.pth`` hook applies."""


def template_status(name: str, template: str, env: dict[str, str]) -> str:
    """``same`` when ``name`` holds ``template`` expanded from ``env`` (each ``${VAR}`` replaced
    by its value as it is), ``differs``, ``unset``, or ``needs VAR`` for a reference not set."""
    missing = [ref for ref in VARIABLE_REFERENCE.findall(template) if ref not in env]
    if missing:
        return f"needs {missing[0]}"
    actual = env.get(name)
    if actual is None:
        return "unset"
    wanted = VARIABLE_REFERENCE.sub(lambda match: env[match.group(1)], template)
    return "same" if actual == wanted else "differs"


def environ(words: Sequence[str], result_path: str) -> int:
    """The values of the ``NAME`` words in this interpreter's environment, as its ``.pth`` hooks
    left it; of each ``NAME=TEMPLATE``, its :func:`template_status` only."""
    env = dict(os.environ)
    values = {word: env.get(word) for word in words if "=" not in word}
    resolved = {}
    for word in words:
        name, equals, template = word.partition("=")
        if equals:
            resolved[name] = template_status(name, template, env)
    emit({"mode": "environ", "environ": values, "resolved": resolved}, result_path)
    return 0


# ---------------------------------------------------------------------------------------------
# No process outlives this one


def _become_subreaper() -> bool:
    """Orphans below this process are given to it instead of to init (Linux 3.4 and newer)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def descendants(root: int, proc: str = "/proc") -> set[int]:
    """Every process below ``root``, found through the parent ids in ``/proc/PID/stat``."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir(proc)
    except OSError:
        return set()
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc, name, "stat"), encoding="ascii", errors="replace") as f:
                text = f.read()
            parent = int(text[text.rindex(")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(name))
    found: set[int] = set()
    queue = [root]
    while queue:
        for child in children.get(queue.pop(), ()):
            if child not in found:
                found.add(child)
                queue.append(child)
    return found


def _signal_all(pids: set[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)


def kill_descendants() -> None:
    """Stop every process below this one until no new one appears (a stopped process cannot
    fork), kill them all, and reap what is handed to this subreaper."""
    me = os.getpid()
    stopped: set[int] = set()
    for _ in range(100):
        new = descendants(me) - stopped
        if not new:
            break
        _signal_all(new, signal.SIGSTOP)
        stopped |= new
    _signal_all(stopped, signal.SIGKILL)
    deadline = time.monotonic() + REAP_SECONDS
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.01)


def _terminated(signum: int, frame: object) -> None:
    kill_descendants()
    os._exit(EXIT_TERMINATED)


def reaped(work: Callable[[], int]) -> int:
    """``work()`` in a forked child, this process waiting as its subreaper; afterwards (or on
    SIGTERM, SIGINT, SIGHUP) every process left below is killed. The child's exit status is
    passed on, a signal that killed it by dying of the same signal."""
    if not _become_subreaper():
        return work()
    stops = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    for stop in stops:
        signal.signal(stop, _terminated)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        for stop in stops:
            signal.signal(stop, signal.SIG_DFL)
        code = 1
        try:
            code = work()
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    kill_descendants()
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.kill(os.getpid(), signum)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1


USAGE = (
    "usage: python smoke smoke torch|jax|tensorflow --result FILE\n"
    "       python smoke smoke-tpu torch|jax --result FILE\n"
    "       python smoke package PACKAGE --result FILE\n"
    "       python smoke vram FRAMEWORK --go FILE --deadline S --search S --result FILE\n"
    "       python smoke determinism torch|jax|tensorflow --seed N --result FILE\n"
    "       python smoke environ --result FILE NAME|NAME=TEMPLATE...\n"
)


def main(argv: Sequence[str]) -> int:
    words = list(argv)
    options = dict(zip(words[2::2], words[3::2]))  # noqa: B905
    result = options.get("--result")
    if len(words) == 4 and words[0] == "smoke" and words[1] in SMOKE and result:
        return reaped(functools.partial(smoke, words[1], result, SMOKE))
    if len(words) == 4 and words[0] == "smoke-tpu" and words[1] in SMOKE_TPU and result:
        return reaped(functools.partial(smoke, words[1], result, SMOKE_TPU, tpu=True))
    if len(words) == 4 and words[0] == "package" and words[1] in PACKAGE_SMOKE and result:
        return reaped(functools.partial(package_smoke, words[1], result))
    if (
        len(words) == 10
        and words[0] == "vram"
        and set(options) == {"--go", "--deadline", "--search", "--result"}
    ):
        try:
            deadline, search = float(options["--deadline"]), float(options["--search"])
        except ValueError:
            deadline = search = math.nan
        if math.isfinite(deadline) and math.isfinite(search) and result:
            return reaped(functools.partial(vram, words[1], options["--go"], deadline, search, result))
    checked = _checklist_mode(words)
    if checked is not None:
        return checked
    sys.stderr.write(USAGE)
    return 2


def _checklist_mode(words: list[str]) -> int | None:
    """The determinism child and the environment report; None for any other command line."""
    options = dict(zip(words[2::2], words[3::2]))  # noqa: B905
    if (
        len(words) == 6
        and words[0] == "determinism"
        and words[1] in DETERMINISM
        and set(options) == {"--seed", "--result"}
        and options["--seed"].isdigit()
    ):
        return reaped(functools.partial(determinism, words[1], int(options["--seed"]), options["--result"]))
    if len(words) >= 3 and words[0] == "environ" and words[1] == "--result":
        return environ(words[3:], words[2])
    return None


def leave_the_path() -> None:
    """This folder off ``sys.path`` (the working directory takes its place, as with ``python
    -m``) and its modules' names out of ``sys.modules``: what they define stays reachable
    through the functions imported above."""
    here = os.path.dirname(os.path.realpath(__file__))
    if sys.path and os.path.realpath(sys.path[0] or ".") == here:
        sys.path[0] = os.getcwd()
    for name in SIBLINGS:
        module = sys.modules.get(name)
        if (
            module is not None
            and os.path.dirname(os.path.realpath(getattr(module, "__file__", "") or "")) == here
        ):
            del sys.modules[name]


if __name__ == "__main__":
    leave_the_path()
    sys.exit(main(sys.argv[1:]))
