"""``verify``'s components check on Linux aarch64 (issue 36): the installed NVIDIA component
wheels are judged by the arch lists of the host's platform's wheels."""

from __future__ import annotations

from packaging.utils import canonicalize_name

from colabenv.models import ComputeCapability
from colabenv.verification.families import shipped_component_problems

THOR = ComputeCapability.parse("11.0")


def test_verify_judges_installed_components_by_the_hosts_platform() -> None:
    """``verify``'s components check on a Thor: NCCL 2.26.2 for CUDA 12 has sm_110 code (its
    compute_90 PTX) in the x86-64 wheel only."""
    installed = {canonicalize_name("nvidia-nccl-cu12"): "2.26.2"}
    assert list(shipped_component_problems(installed, (THOR,), "linux_x86_64")) == []
    found = [str(p) for p in shipped_component_problems(installed, (THOR,), "linux_aarch64")]
    assert found == [
        "nvidia-nccl-cu12 2.26.2 has no kernels for sm_110 (GPU 11.0);"
        " 2.25.1 is the last release that covers it"
    ]
