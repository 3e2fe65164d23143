"""Targets for tests, one builder a kind of host: the one place that spells out how a
:class:`~colabenv.models.Target` is made, so a change to its fields changes only this file."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from packaging.version import Version

from colabenv.models import ComputeCapability, CpuTarget, InstalledSet, Target, TpuTarget, device_of

Installed = InstalledSet | Mapping[str, str] | None
"""What the target has installed: a set read from a freeze, ``{name: version}``, or nothing."""


def _installed(installed: Installed) -> InstalledSet:
    if installed is None:
        return InstalledSet()
    if isinstance(installed, InstalledSet):
        return installed
    return InstalledSet.from_mapping(installed)


def nvidia_target(
    driver: str | None,
    cuda: str | None,
    caps: Iterable[str] = (),
    python: str = "3.12",
    installed: Installed = None,
) -> Target:
    """An NVIDIA host: its driver, the CUDA it runs (either may be unknown), the compute
    capabilities of its GPUs (``"7.5"``; a repeated one counts once, none: unknown)."""
    device = device_of(
        Version(driver) if driver else None,
        Version(cuda) if cuda else None,
        tuple(sorted({ComputeCapability.parse(c) for c in caps})),
        None,
    )
    return Target(device, Version(python), installed=_installed(installed))


def cpu_target(python: str = "3.12", installed: Installed = None) -> Target:
    """A host without an accelerator."""
    return Target(CpuTarget(), Version(python), installed=_installed(installed))


def tpu_target(
    generation: str | None,
    accelerator_type: str | None = None,
    chips: int | None = None,
    python: str = "3.12",
    installed: Installed = None,
) -> Target:
    """A TPU host: its generation (``v5e``), the accelerator type that named it, its chips."""
    tpu = TpuTarget(generation, accelerator_type, chips)
    return Target(tpu, Version(python), installed=_installed(installed))
