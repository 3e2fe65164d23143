"""A named target (a profile's ``[targets]`` entry) as the resolver sees it: what its overrides
give, and nothing read from this host.

Detection runs over a blank host (no GPU, no TPU, nothing installed, ``linux_x86_64``), so a
named target resolves to the same wheels on every machine that locks it: a driver without
compute capabilities means every architecture (as ``--driver`` alone on a host without a
GPU), a driver's CUDA comes from the catalog's driver table, and what is installed is the
runtime image's when ``runtime`` names one, else nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from colabenv.host.detect import detect
from colabenv.host.probe import HostProbe, Nvml
from colabenv.models import Catalog, Target, TargetOverrides, TpuFacts

NAMED_PLATFORM = "linux_x86_64"
"""The platform of every named target (the flags have none either)."""


def _nothing(path: Path) -> str:
    raise FileNotFoundError(path)


def _no_nvml() -> Nvml:
    raise ImportError("a named target has no NVML")


def blank_probe() -> HostProbe:
    """A host with nothing on it: every source detection reads answers nothing."""
    return HostProbe(
        environ={},
        distributions=lambda: (),
        python_version="3.0.0",
        python_implementation="CPython",
        platform_tag=NAMED_PLATFORM,
        glibc=None,
        load_nvml=_no_nvml,
        read_text=_nothing,
        path_exists=lambda _path: False,
        which=lambda _name: None,
    )


def named_target(
    overrides: TargetOverrides,
    *,
    catalog_loader: Callable[[], Catalog] | None = None,
    tpu_facts: Callable[[], TpuFacts] | None = None,
) -> Target:
    """The target ``overrides`` (from a named target's keys) describe, on no host at all: the
    blank host's installed distributions (none) are its own, never compared with this host's."""
    found = detect(
        overrides, probe=blank_probe(), catalog_loader=catalog_loader, tpu_facts=tpu_facts, own_installed=True
    )
    return found.target
