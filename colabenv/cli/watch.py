"""``colabenv watch start|stop|status``: the recorder of this state directory.

``start`` prints one line with the recorder's pid (a second start names the running one and
starts nothing); ``stop`` ends it; ``status --json`` prints ``{"running": ..., "pid": ...}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from colabenv.errors import UsageError, printable
from colabenv.models.watch import WatchStatus
from colabenv.recorder import control
from colabenv.script.state import state_dir

UNKNOWN = "a recorder holds the lock, but which is not known (starting or stopping: try again)"


def _number(text: str | None, default: float, flag: str) -> float:
    if text is None:
        return default
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"watch start: {flag}: {printable(text)[:40]!r} is not a number") from None


def _since(found: WatchStatus) -> str:
    if found.since is None:
        return "?"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(found.since))


def _line(found: WatchStatus) -> str:
    if not found.running:
        return "no recorder running"
    if found.pid is None:
        return UNKNOWN
    return (
        f"recorder running: pid {found.pid}, since {_since(found)}, every {found.interval_s:g} s, "
        f"ring {printable(found.ring)}"
    )


def run(args: argparse.Namespace) -> int:
    state = state_dir()
    if args.watch_command == "start":
        interval = _number(args.interval, control.DEFAULT_INTERVAL_S, "--interval")
        hours = _number(args.max_hours, control.DEFAULT_MAX_HOURS, "--max-hours")
        note = control.cwd_note(args.path)
        found, started = control.start(
            state,
            kernel_pid=control.kernel_pid(from_command=True),
            interval_s=interval,
            max_hours=hours,
            paths=args.path,
        )
        if started and note is not None:
            sys.stderr.write(f"colabenv: note: {note}\n")
        if found.pid is None:
            sys.stdout.write(f"colabenv watch: {UNKNOWN}\n")
        else:
            verb = "started" if started else "already running"
            sys.stdout.write(f"colabenv watch: recorder {verb}: pid {found.pid}\n")
        return 0
    if args.watch_command == "stop":
        found = control.stop_recorder(state)
        if not found.running:
            sys.stdout.write("colabenv watch: no recorder running\n")
        elif found.pid is None:
            sys.stdout.write(f"colabenv watch: {UNKNOWN}; nothing stopped\n")
        else:
            sys.stdout.write(f"colabenv watch: recorder stopped: pid {found.pid}\n")
        return 0
    found = control.status(state)
    if args.json:
        sys.stdout.write(json.dumps(found.to_json()) + "\n")
    else:
        sys.stdout.write(f"colabenv watch: {_line(found)}\n")
    return 0
