"""The ``marker`` and ``env`` checks: the setup script finished before this interpreter started,
and the ``[env]`` variables it set are there."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from colabenv.errors import StateError, printable
from colabenv.host.interpreter import same_environment
from colabenv.models.frozen import model
from colabenv.profile.env import is_secret_name, references
from colabenv.script.marker import RestartMarker
from colabenv.verification.children import ChildRun, child_failure, with_tail
from colabenv.verification.determinism import parse_environ, parse_resolved
from colabenv.verification.expectation import ProfileIdentity
from colabenv.verification.report import Check, Status, join_limited

STARTED_SLACK_S = 1.0
"""A marker written this little after the interpreter started is not "after": the start time
comes from /proc (clock ticks against the uptime, each to 10 ms) and the marker's from the wall
clock, and a setup script takes seconds, so no kernel that ran it started this close to its end
(doctor's restart finding keeps the same slack, ``diagnosis.imports.INSTALL_SLACK_S``)."""


def _clock(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


@model
class MarkerFit:
    """Whether the restart marker was written for what is verified: ``problem`` says what
    does not fit (another profile, another interpreter) and what to do; ``hint`` is the same
    advice in a few words, for the checks a foreign marker explains (env)."""

    problem: str | None = None
    hint: str = "restart after setup"
    unknown_interpreter: bool = False


def marker_fit(marker: RestartMarker | None, profile: ProfileIdentity | None, interpreter: str) -> MarkerFit:
    """The marker against this profile (when one was named) and this interpreter."""
    if marker is None:
        return MarkerFit()
    written_by = ProfileIdentity(marker.profile, marker.profile_hash)
    if profile is not None and profile.content_hash != marker.profile_hash:
        advice = f"run this profile's setup script (colabenv render {printable(profile.name)}), then restart"
        return MarkerFit(
            f"the restart marker was written by profile {written_by}, not by this profile "
            f"{profile}: {advice}",
            f"the restart marker is profile {written_by}'s: {advice}",
        )
    if marker.python is None:
        return MarkerFit(unknown_interpreter=True)
    if not same_environment(marker.python, interpreter):
        here = printable(interpreter)
        return MarkerFit(
            f"the restart marker was written for the interpreter {printable(marker.python)}, not "
            f"for this one ({here}): run the setup script with COLABENV_PYTHON={here}, or "
            f"verify that interpreter with --interpreter {printable(marker.python)}",
            f"the restart marker is another interpreter's ({printable(marker.python)})",
        )
    return MarkerFit()


def check_marker(
    marker: RestartMarker | None,
    error: StateError | None,
    location: Path,
    started_at: float | None,
    who: str,
    *,
    explicit: bool,
    fit: MarkerFit | None = None,
) -> Check:
    """PASS only for a marker of this profile and this interpreter, written before this
    ``who`` (kernel or interpreter) started, or by a run that changed nothing."""
    fits = fit or MarkerFit()
    if error is not None:
        return Check("marker", Status.FAIL, f"corrupted restart marker: {error}")
    if marker is None:
        text = f"no restart marker at {printable(location)}: the setup script has not finished here"
        if explicit:
            return Check("marker", Status.WARN, text)
        return Check("marker", Status.FAIL, text + " (or pass --profile/--lock)")
    if fits.problem is not None:
        return Check("marker", Status.FAIL, fits.problem)
    unknown = (
        " (the marker does not say which interpreter it was written for: written by an older colabenv)"
        if fits.unknown_interpreter
        else ""
    )
    name = printable(marker.profile)
    if started_at is None:
        return Check(
            "marker",
            Status.WARN,
            f"marker of {_clock(marker.written_at)} found, but when this {who} started "
            "cannot be told (no /proc)" + unknown,
        )
    passed = Status.WARN if fits.unknown_interpreter else Status.PASS
    if started_at + STARTED_SLACK_S >= marker.written_at:
        return Check(
            "marker",
            passed,
            f"{name}: setup finished {_clock(marker.written_at)}, "
            f"this {who} started {_clock(started_at)}" + unknown,
        )
    if not marker.changed:
        return Check(
            "marker", passed, f"{name}: the last setup run changed nothing, no restart needed" + unknown
        )
    return Check(
        "marker",
        Status.FAIL,
        f"restart required: setup finished {_clock(marker.written_at)}, after this "
        f"{who} started ({_clock(started_at)})",
    )


MISSING_REFERENCE = ", which is not set"


def template_status(name: str, template: str, environ: Mapping[str, str]) -> str:
    """Of an ``[env]`` value with ``${VAR}`` references: ``same`` when ``name`` holds it as the
    ``.pth`` hook expands it from ``environ``, ``differs``, ``unset``, or ``needs VAR`` for a
    reference not set (what the smoke child's ``environ`` reports of a ``NAME=TEMPLATE``)."""
    from colabenv._target.helper import UnsetVariable, expand_value

    try:
        wanted = expand_value(template, environ)
    except UnsetVariable as missing:
        return f"needs {missing.name}"
    actual = environ.get(name)
    if actual is None:
        return "unset"
    return "same" if actual == wanted else "differs"


def _shown(name: str, value: str) -> str:
    """A value as the check may print it: ``****`` for a literal one of a secret-like name (a
    marker written before such values were refused)."""
    return "****" if is_secret_name(name) and not references(value) else repr(value)


def _problem(name: str, value: str, environ: Mapping[str, str], resolved: Mapping[str, str]) -> str | None:
    """What is wrong with ``name`` against ``value``; a template's value is never shown, only the
    template (``resolved``: statuses the smoke child reported, else worked out here)."""
    if references(value):
        status = resolved.get(name) or template_status(name, value, environ)
        if status == "same":
            return None
        if status.startswith("needs "):
            variable = status.removeprefix("needs ")
            return (
                f"{name}={value} needs ${variable}{MISSING_REFERENCE}: set it in the environment"
                " (on Colab, in Colab's secrets, and run colabenv.bootstrap() again)"
            )
        if status == "unset":
            return f"{name} is not set (expected {value})"
        return f"{name} is not {value} as expanded from the environment (its value is not shown)"
    actual = environ.get(name)
    if actual is None:
        return f"{name} is not set (expected {_shown(name, value)})"
    if actual != value:
        return f"{name}={_shown(name, actual)}, expected {_shown(name, value)}"
    return None


def check_env(
    expected: Sequence[tuple[str, str]],
    environ: Mapping[str, str] | None = None,
    *,
    hint: str = "restart after setup",
    known: bool = True,
    resolved: Mapping[str, str] | None = None,
) -> Check:
    """PASS when each of ``expected`` has its value in ``environ`` (a value with ``${VAR}``
    references: as the hook expands it, never printed); FAIL when one has not, or when what is
    expected cannot be ``known`` (a lock's profile, the marker another's)."""
    env = os.environ if environ is None else environ
    if not known:
        return Check("env", Status.FAIL, f"the [env] of the lock's profile is not known ({hint})")
    if not expected:
        return Check("env", Status.SKIP, "no [env] variables asked for")
    problems = [
        problem
        for name, value in expected
        if (problem := _problem(name, value, env, resolved or {})) is not None
    ]
    if problems:
        # a reference whose variable is not set is the environment's to fix, not the hook's
        hinted = any(MISSING_REFERENCE not in problem for problem in problems)
        return Check("env", Status.FAIL, join_limited(problems) + (f" ({hint})" if hinted else ""))
    return Check("env", Status.PASS, f"{', '.join(n for n, _ in expected)} set as asked")


def environ_words(expected: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """What the smoke child's ``environ`` is asked of ``expected``: ``NAME``, or
    ``NAME=TEMPLATE`` for a value with ``${VAR}`` references (the child then reports whether it
    holds, never the value)."""
    return tuple(f"{name}={value}" if references(value) else name for name, value in expected)


def check_env_of(
    expected: Sequence[tuple[str, str]],
    run: ChildRun | None,
    interpreter: str,
    *,
    timeout: float,
    fit: MarkerFit | None = None,
) -> Check:
    """``env`` for another interpreter: the values a new ``interpreter`` has when it starts (its
    ``.pth`` hook ran; the names taken out of the environment it was started with), never
    colabenv's own environment."""
    if not expected:
        return check_env(expected)
    where = printable(interpreter)
    if run is None:
        return Check("env", Status.FAIL, f"the environment of {where} was not read")
    died = child_failure(run.completed, timeout)
    values = parse_environ(run.result) if died is None else None
    resolved = parse_resolved(run.result) if died is None else {}
    if values is None:
        why = died or f"exited {run.completed.returncode} without a result"
        text = f"the environment of {where} could not be read: {why}"
        return Check("env", Status.FAIL, with_tail(text, run.completed))
    fits = fit or MarkerFit()
    hint = (
        fits.hint
        if fits.problem is not None
        else f"not set by {where} when it starts: the setup script's .pth hook sets them, "
        f"run the script with COLABENV_PYTHON={where}"
    )
    present = {k: v for k, v in values.items() if v is not None}
    check = check_env(expected, present, hint=hint, resolved=resolved)
    if check.status is Status.PASS:
        return Check("env", Status.PASS, f"{check.detail} in a new {where}")
    return check
