"""The ``marker`` and ``env`` checks: the setup script finished before this interpreter started,
and the ``[env]`` variables it set are there."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from colabenv.errors import StateError
from colabenv.restart_marker import RestartMarker
from colabenv.verification.report import Check, Status, join_limited


def _clock(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def check_marker(
    marker: RestartMarker | None,
    error: StateError | None,
    location: Path,
    started_at: float | None,
    who: str,
    *,
    explicit: bool,
) -> Check:
    if error is not None:
        return Check("marker", Status.FAIL, f"corrupted restart marker: {error}")
    if marker is None:
        text = f"no restart marker at {location}: the setup script has not finished here"
        if explicit:
            return Check("marker", Status.WARN, text)
        return Check("marker", Status.FAIL, text + " (or pass --profile/--lock)")
    if started_at is None:
        return Check("marker", Status.WARN,
                     f"marker of {_clock(marker.written_at)} found, but when this {who} started "
                     "cannot be told (no /proc)")
    if started_at >= marker.written_at:
        return Check("marker", Status.PASS,
                     f"{marker.profile}: setup finished {_clock(marker.written_at)}, "
                     f"this {who} started {_clock(started_at)}")
    if not marker.changed:
        return Check("marker", Status.PASS,
                     f"{marker.profile}: the last setup run changed nothing, no restart needed")
    return Check("marker", Status.FAIL,
                 f"restart required: setup finished {_clock(marker.written_at)}, after this "
                 f"{who} started ({_clock(started_at)})")


def check_env(expected: Sequence[tuple[str, str]], environ: Mapping[str, str] | None = None
              ) -> Check:
    env = os.environ if environ is None else environ
    if not expected:
        return Check("env", Status.SKIP, "no [env] variables asked for")
    problems = []
    for name, value in expected:
        actual = env.get(name)
        if actual is None:
            problems.append(f"{name} is not set (expected {value!r})")
        elif actual != value:
            problems.append(f"{name}={actual!r}, expected {value!r}")
    if problems:
        return Check("env", Status.FAIL, join_limited(problems) + " (restart after setup)")
    return Check("env", Status.PASS, f"{', '.join(n for n, _ in expected)} set as asked")
