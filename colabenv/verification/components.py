"""The ``components`` check (issue 13): every installed NVIDIA component wheel (cuDNN, cuBLAS,
NCCL ...) has kernels for every GPU here.

The facts (which versions of which component carry which architectures) are the catalog's; this
module only asks and reports. ``find_problems`` is the catalog's pure function: given the
installed distributions (name -> version) and the GPUs' compute capabilities, it returns one
problem per component version that misses a GPU, each of which reads as one sentence naming the
library, its version, the GPU and the last version that covers it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from packaging.utils import NormalizedName

from colabenv.models import ComputeCapability
from colabenv.verification.report import Check, Status, join_limited

ComponentProblems = Callable[[Mapping[NormalizedName, str], tuple[ComputeCapability, ...]], Iterable[object]]
"""``(installed, capabilities) -> problems``; ``str(problem)`` is what the check shows."""

NAME = "components"


def check_components(
    installed: Mapping[NormalizedName, str],
    capabilities: Sequence[ComputeCapability],
    find_problems: ComponentProblems,
) -> Check:
    if not capabilities:
        return Check(NAME, Status.SKIP, "no GPU compute capability known on this host")
    caps = tuple(sorted(set(capabilities)))
    problems = [str(problem) for problem in find_problems(installed, caps)]
    if problems:
        return Check(NAME, Status.FAIL, join_limited(problems))
    components = sorted(name for name in installed if name.startswith("nvidia-"))
    if not components:
        return Check(NAME, Status.SKIP, "no NVIDIA component wheel installed")
    sms = ", ".join(cap.sm for cap in caps)
    return Check(NAME, Status.PASS, f"{len(components)} NVIDIA component wheel(s) checked, kernels for {sms}")
