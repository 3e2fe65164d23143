"""The cause of a failed smoke test, as ``doctor`` names it: the failure signatures of
``import_failures.toml`` (:mod:`colabenv.diagnosis.signatures`) read in what the smoke child
said, for every accelerator's smoke checks alike."""

from __future__ import annotations

from colabenv.diagnosis.signatures import Signatures, classify, error_lines, shipped_signatures
from colabenv.verification.children import ChildRun, parse_smoke
from colabenv.verification.report import Check, Status


def with_cause(check: Check, run: ChildRun, signatures: Signatures | None = None) -> Check:
    """A FAIL with the cause the failure signatures of ``doctor`` read in what the smoke child
    reported (its error, each GPU's, why it saw none), else in its stderr (the traceback it
    printed) where it failed at the import, at the device's start or at a kernel (it left no
    result, or one with an error or why it saw no device); a FAIL for another reason (a matmul
    that disagrees) takes no cause from what else the child logged. ROCm's "HIP error: invalid
    device function" at the first kernel, "No HIP GPUs are available" at the GPU's first use, a
    missing ``libamdhip64.so``; CUDA's "no kernel image is available for execution on the
    device", a driver too old for the runtime; the cause, the upstream thread it was seen in and
    the remedy are added to the detail. Any other check as it is."""
    if check.status is not Status.FAIL:
        return check
    table = signatures if signatures is not None else shipped_signatures()
    result = parse_smoke(run.result)
    said: list[str] = []
    if result is not None:
        said = [result.error or "", *(d.error or "" for d in result.devices), result.gpu_reason or ""]
    found = classify(error_lines(said), table)
    if found is None and (result is None or any(said)):
        found = classify(error_lines([run.completed.stderr]), table)
    if found is None:
        return check
    seen = f" ({found.thread})" if found.thread else ""
    return Check(check.name, check.status, f"{check.detail}; cause: {found.cause}{seen}: {found.remedy}")
