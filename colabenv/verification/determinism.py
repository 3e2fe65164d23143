"""The ``determinism`` check: the profile's ``[reproducibility]`` is in effect in a fresh
interpreter of the verified environment (the ``.pth`` hook set the seed and the switches), and,
when ``deterministic = true``, each framework's small computation, seeded and run twice in its
own child (``colabenv/_target/smoke/__main__.py determinism``), gives bit-identical results.

A framework whose smoke test died or could not import is not run again here: its failure is
the smoke check's, and a hang would cost the timeout a second time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from colabenv._util.resources import SMOKE_PROGRAM
from colabenv.errors import printable
from colabenv.index.urls import reference_names
from colabenv.models import Framework, Reproducibility
from colabenv.models.frozen import model
from colabenv.seeding import APPEND_PREFIX, environment_problems, hook_environment
from colabenv.verification.children import (
    ChildRun,
    child_failure,
    parse_smoke,
    result_object,
    run_child,
    smoke_env,
    with_tail,
)
from colabenv.verification.report import Check, Status, join_limited

HOOK_HINT = (
    "the setup script's .pth hook sets them when Python starts: run the script for this profile, then restart"
)
MAX_NAME = 120
VARIABLE_NEEDED = re.compile(r"needs [A-Za-z_][A-Za-z0-9_]*")


@model
class DeterminismResult:
    framework: str
    version: str | None
    device: str | None
    digests: tuple[str, ...]
    error: str | None


def hook_names(reproducibility: Reproducibility) -> tuple[str, ...]:
    """The variables the hook sets for ``reproducibility`` (a ``+NAME`` flag pair is ``NAME``)."""
    return tuple(
        dict.fromkeys(name.removeprefix(APPEND_PREFIX) for name, _ in hook_environment(reproducibility))
    )


def run_environ(
    names: Sequence[str], timeout: float, *, python: str, scratch: Path, own: bool = True
) -> ChildRun:
    """The values of ``names`` in a new interpreter ``python``, after its ``.pth`` hooks ran; of
    a ``NAME=TEMPLATE`` (``${VAR}`` references), whether it holds (the child never reports the
    value, which may be a secret, so it is in no file).

    ``own``: ``python`` is the interpreter colabenv runs in, whose environment this process's is;
    otherwise the names are taken out of the child's environment, so what it reports is what
    that interpreter sets itself when it starts, never what colabenv's shell had; but for the
    variables a template refers to, which the hook reads from that environment."""
    result = scratch / "environ.json"
    environ = dict(os.environ)
    if not own:
        referred = {ref for word in names for ref in reference_names(word.partition("=")[2])}
        for word in names:
            name = word.partition("=")[0]
            if name not in referred:
                environ.pop(name, None)
    return run_child(
        [python, str(SMOKE_PROGRAM), "environ", "--result", str(result), *names],
        result,
        timeout,
        environ,
    )


def run_determinism(
    framework: Framework, seed: int, timeout: float, *, python: str, scratch: Path
) -> ChildRun:
    result = scratch / f"determinism-{framework.value}.json"
    argv = [
        python,
        str(SMOKE_PROGRAM),
        "determinism",
        framework.value,
        "--seed",
        str(seed),
        "--result",
        str(result),
    ]
    return run_child(argv, result, timeout, smoke_env(framework))


def smoke_ran(run: ChildRun) -> bool:
    """Whether the smoke child lived to import its framework: only then is the determinism
    child worth starting."""
    result = parse_smoke(run.result)
    return (
        not run.completed.timed_out
        and run.completed.returncode >= 0
        and result is not None
        and result.version is not None
    )


def parse_environ(text: str | None) -> dict[str, str | None] | None:
    data = result_object(text, "environ")
    values = data.get("environ") if data is not None else None
    if not isinstance(values, dict):
        return None
    return {str(k): v if isinstance(v, str) else None for k, v in values.items()}


def parse_resolved(text: str | None) -> dict[str, str]:
    """What the environ child reported of each ``NAME=TEMPLATE``: ``same``, ``differs``,
    ``unset`` or ``needs VAR`` (anything else is taken as ``differs``)."""
    data = result_object(text, "environ")
    values = data.get("resolved") if data is not None else None
    if not isinstance(values, dict):
        return {}
    known = ("same", "differs", "unset")
    return {
        str(name): status
        if isinstance(status, str) and (status in known or VARIABLE_NEEDED.fullmatch(status))
        else "differs"
        for name, status in values.items()
    }


def parse_determinism(text: str | None) -> DeterminismResult | None:
    data = result_object(text, "determinism")
    if data is None:
        return None
    digests = data.get("digests")

    def text_of(key: str) -> str | None:
        value = data.get(key)
        return printable(str(value))[:MAX_NAME] if value is not None else None

    return DeterminismResult(
        framework=str(data.get("framework", "?")),
        version=text_of("version"),
        device=text_of("device"),
        digests=tuple(str(d) for d in digests) if isinstance(digests, list) else (),
        error=text_of("error"),
    )


def _framework_problem(framework: Framework, run: ChildRun | None, timeout: float) -> tuple[str | None, str]:
    """(what is wrong, or None; what ran) for one framework's determinism child."""
    name = framework.value
    if run is None:
        return f"{name}: not run (smoke:{name} failed)", name
    died = child_failure(run.completed, timeout)
    if died is not None:
        return with_tail(f"{name}: {died}", run.completed), name
    result = parse_determinism(run.result)
    if result is None:
        return with_tail(f"{name}: exited {run.completed.returncode} without a result", run.completed), name
    where = f"{name} {result.version or '?'} on {result.device or '?'}"
    if result.error is not None:
        return f"{where}: failed: {result.error}", where
    if len(result.digests) != 2:
        return f"{where}: no results to compare", where
    first, second = result.digests
    if first != second:
        return (
            f"{where}: two seeded runs differ (sha256 {first[:12]} and {second[:12]}): not deterministic"
        ), where
    return None, where


def check_determinism(
    reproducibility: Reproducibility,
    environ_run: ChildRun | None,
    runs: Mapping[Framework, ChildRun | None],
    *,
    timeout: float,
    not_run: tuple[str, ...] = (),
) -> Check:
    """SKIP without ``[reproducibility]``; FAIL when a variable of the hook is missing or wrong,
    or a framework's two runs differ (or fail); PASS naming what was compared, and ``not_run``:
    the frameworks no determinism child follows on their device (a TPU), named, not failed."""
    if reproducibility.seed is None and not reproducibility.deterministic:
        return Check("determinism", Status.SKIP, "no [reproducibility] asked for")
    seed_text = f"seed {reproducibility.seed}" if reproducibility.seed is not None else "no seed"
    if environ_run is None:
        return Check("determinism", Status.FAIL, "the environment was not read")
    died = child_failure(environ_run.completed, timeout)
    environ = parse_environ(environ_run.result) if died is None else None
    if environ is None:
        why = died or f"exited {environ_run.completed.returncode} without a result"
        return Check(
            "determinism",
            Status.FAIL,
            with_tail(f"the environment could not be read: {why}", environ_run.completed),
        )
    present = {k: v for k, v in environ.items() if v is not None}
    problems = environment_problems(reproducibility, present)
    if problems:
        return Check("determinism", Status.FAIL, join_limited(problems) + f" ({HOOK_HINT})")
    names = ", ".join(hook_names(reproducibility))
    if not reproducibility.deterministic:
        return Check(
            "determinism",
            Status.PASS,
            f"{seed_text}: {names} set; deterministic not asked for, runs not compared",
        )
    failures, compared = [], []
    for framework, run in runs.items():
        problem, where = _framework_problem(framework, run, timeout)
        if problem is not None:
            failures.append(problem)
        else:
            compared.append(where)
    if failures:
        return Check("determinism", Status.FAIL, join_limited(failures))
    untried = f"; not run twice: {', '.join(not_run)}" if not_run else ""
    if not compared:
        return Check(
            "determinism",
            Status.PASS,
            f"{seed_text}, deterministic: {names} set; no framework to run twice{untried}",
        )
    return Check(
        "determinism",
        Status.PASS,
        f"{seed_text}, deterministic: two seeded runs bit-identical ({'; '.join(compared)}); "
        f"{names} set{untried}",
    )
