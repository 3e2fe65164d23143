"""``smoke:<package>``: the CUDA packages around the frameworks (xformers, flash-attn,
flash-attn-4, bitsandbytes, CuPy, cuDF, cuML, onnxruntime-gpu, vLLM, torch-scatter, pyg-lib), each
computed on the GPU in its own child (``python .../smoke package NAME``,
``colabenv/_target/smoke/packages.py``) and compared there with a reference computed on the CPU;
this module picks which run, runs them one after another, and reads what they leave.

Which packages: those whose distribution the expectation names (the profile's resolution, the
lock's pins, the restart marker's requirements) or that are installed in the verified
interpreter. Without a GPU (or with ``--cpu``) each is SKIP with the reason: every one of them
is a GPU check.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from colabenv._util.resources import SMOKE_PROGRAM
from colabenv.models.frameworks import CUDA_PACKAGES
from colabenv.models.frozen import model
from colabenv.verification.children import (
    ChildRun,
    child_result,
    reported_count,
    reported_number,
    reported_text,
    result_object,
    run_child,
    with_tail,
)
from colabenv.verification.report import Check, Status

TEXT_LIMIT = 300
"""The most characters of any text a child reports that a detail quotes."""
SHARED_TIMEOUTS = 2
"""The package smoke tests run one after another and together take at most this many smoke
timeouts: alongside the frameworks' children (one timeout each, in parallel) verify stays
within a bound that does not grow with the number of packages."""
MIN_CHILD_S = 5.0
"""A package's child is not started with less time than this left (importing torch alone
takes seconds); it is a FAIL that says the time was spent."""


@model
class PackageSmoke:
    """One row of :data:`PACKAGES`: the check ``smoke:<name>`` (and the child's table key), and
    the distributions that carry the package (a generic name and its per-CUDA builds, from
    :data:`colabenv.models.frameworks.CUDA_PACKAGES`)."""

    name: str
    distributions: tuple[str, ...]


SMOKED = (
    "xformers",
    "flash-attn",
    "flash-attn-4",
    "bitsandbytes",
    "cupy",
    "cudf",
    "cuml",
    "onnxruntime-gpu",
    "vllm",
    "torch-scatter",
    "pyg-lib",
)
"""The CUDA packages with a smoke test, in the order the checks are reported; each is a key of
the child's ``PACKAGE_SMOKE`` (a test holds the two together) and of ``CUDA_PACKAGES``."""


def _row(name: str) -> PackageSmoke:
    return PackageSmoke(name, CUDA_PACKAGES[canonicalize_name(name)].spellings())


PACKAGES: tuple[PackageSmoke, ...] = tuple(_row(name) for name in SMOKED)
"""The package -> smoke mapping, in the order the checks are reported."""


def package_smokes(expected: Collection[str], installed: Collection[str]) -> tuple[PackageSmoke, ...]:
    """The rows whose distributions ``expected`` names or ``installed`` holds (any spelling)."""
    names = {canonicalize_name(n) for n in (*expected, *installed)}
    return tuple(row for row in PACKAGES if any(canonicalize_name(d) in names for d in row.distributions))


@model
class PackageResult:
    package: str
    stage: str
    version: str | None
    torch: str | None
    cuda: str | None
    device: str | None
    capability: str | None
    gpu_reason: str | None
    what: str | None
    against: str | None
    max_abs_diff: float | None
    tolerance: float | None
    non_finite: int
    problem: str | None
    error: str | None
    loaded: bool


def _text(value: object) -> str | None:
    return reported_text(" ".join(str(value).split()), TEXT_LIMIT) if value is not None else None


def parse_package(text: str | None) -> PackageResult | None:
    data: dict[str, Any] | None = result_object(text, "package")
    if data is None:
        return None
    return PackageResult(
        package=_text(data.get("package")) or "?",
        stage=_text(data.get("stage")) or "?",
        version=_text(data.get("version")),
        torch=_text(data.get("torch")),
        cuda=_text(data.get("cuda")),
        device=_text(data.get("device")),
        capability=_text(data.get("capability")),
        gpu_reason=_text(data.get("gpu_reason")),
        what=_text(data.get("what")),
        against=_text(data.get("against")),
        max_abs_diff=reported_number(data.get("max_abs_diff")),
        tolerance=reported_number(data.get("tolerance")),
        non_finite=reported_count(data.get("non_finite")),
        problem=_text(data.get("problem")),
        error=_text(data.get("error")),
        loaded=data.get("loaded") is True,
    )


def package_argv(name: str, python: str, result: Path) -> list[str]:
    return [python, str(SMOKE_PROGRAM), "package", name, "--result", str(result)]


@model
class PackageRun:
    """One package's child as :func:`run_packages` ran it: ``run`` None when the time the
    package smoke tests share was spent before its turn; ``limit``: the seconds it was given."""

    row: PackageSmoke
    run: ChildRun | None
    limit: float


def run_packages(
    rows: Sequence[PackageSmoke],
    timeout: float,
    *,
    python: str,
    scratch: Path,
    clock: Callable[[], float] = time.monotonic,
) -> list[PackageRun]:
    """Each package's smoke test in the interpreter ``python``, one after another (each child
    holds a CUDA context of its own: a few at once on one GPU, not eight). Together they take at
    most :data:`SHARED_TIMEOUTS` times ``timeout``: each child gets ``timeout`` or what is left
    of that, and none starts with less than :data:`MIN_CHILD_S` left. Files go in ``scratch``."""
    deadline = clock() + SHARED_TIMEOUTS * timeout
    runs = []
    for row in rows:
        limit = min(timeout, deadline - clock())
        if limit < min(MIN_CHILD_S, timeout):
            runs.append(PackageRun(row, None, 0.0))
            continue
        result = scratch / f"package-{row.name}.json"
        argv = package_argv(row.name, python, result)
        runs.append(PackageRun(row, run_child(argv, result, limit, dict(os.environ)), limit))
    return runs


def _label(row: PackageSmoke, result: PackageResult) -> str:
    return f"{row.name} {result.version or '?'}" + (f" (torch {result.torch})" if result.torch else "")


def _where(result: PackageResult) -> str:
    device = result.device or "GPU0"
    if result.capability:
        device += f" (sm_{result.capability.replace('.', '')})"
    return device


def check_package(done: PackageRun, *, timeout: float) -> Check:
    """One package's smoke test, from its child's exit and result file (``timeout``: each
    child's bound, which the children share)."""
    row, run = done.row, done.run
    name = f"smoke:{row.name}"
    if run is None:
        shared = SHARED_TIMEOUTS * timeout
        return Check(
            name,
            Status.FAIL,
            f"not run: the package smoke tests before it used the {shared:g}s they share (raise --timeout)",
        )
    result = child_result(name, run, done.limit, parse_package)
    if isinstance(result, Check):
        return result
    completed = run.completed
    label = _label(row, result)
    if result.problem is not None:
        return Check(name, Status.FAIL, with_tail(f"{label}: {result.problem}", completed))
    if result.gpu_reason is not None:
        return Check(
            name,
            Status.FAIL,
            with_tail(f"{label} sees no GPU although the host has one ({result.gpu_reason})", completed),
        )
    what = result.what or "the smoke test"
    if result.against is None:
        if not result.loaded:
            return Check(name, Status.FAIL, with_tail(f"{label}: {what}: not confirmed", completed))
        return Check(name, Status.PASS, f"{_where(result)}: {what}; {label}")
    diff, tolerance = result.max_abs_diff, result.tolerance
    if result.non_finite:
        count = result.non_finite
        plural = "value" if count == 1 else "values"
        detail = f"{label}: {what} returned {count} non-finite {plural} (NaN or infinity)"
        return Check(name, Status.FAIL, detail)
    if diff is None or tolerance is None or not diff <= tolerance:
        return Check(
            name,
            Status.FAIL,
            f"{label}: {what} on {_where(result)} differs from {result.against}"
            f" (max abs diff {diff}, tolerance {tolerance})",
        )
    return Check(
        name,
        Status.PASS,
        f"{_where(result)}: {what} agrees with {result.against}"
        f" (max abs diff {diff:.3g}, tolerance {tolerance:.3g}); {label}",
    )


def skipped(rows: Sequence[PackageSmoke], reason: str) -> list[Check]:
    """The checks of ``rows`` that do not run: SKIP with ``reason``."""
    return [Check(f"smoke:{row.name}", Status.SKIP, reason) for row in rows]
