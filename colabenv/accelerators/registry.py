"""The one list of accelerator kinds, the kind of a target, and the device ``detect`` finds.
A new kind is one line here."""

from __future__ import annotations

from colabenv.accelerators.base import AcceleratorKind, Detected, HostReadings
from colabenv.accelerators.cpu import CPU
from colabenv.accelerators.nvidia import NVIDIA
from colabenv.accelerators.rocm import ROCM
from colabenv.accelerators.tpu import TPU
from colabenv.models import Accelerator, Target, TargetOverrides

ACCELERATORS: tuple[AcceleratorKind, ...] = (TPU, NVIDIA, ROCM, CPU)
"""Every kind, in the order ``detect`` tries them: the TPU first (a TPU host leaves the NVIDIA
sources unread), the CPU last (it answers on every host)."""

_BY_KIND = {kind.kind: kind for kind in ACCELERATORS}


def accelerator(kind: Accelerator) -> AcceleratorKind:
    """The kind named ``kind``."""
    return _BY_KIND[kind]


def accelerator_of(target: Target) -> AcceleratorKind:
    """The kind ``target`` computes on."""
    return _BY_KIND[target.accelerator]


def detected(wanted: TargetOverrides, host: HostReadings, notes: list[str]) -> Detected:
    """The first answer of the kinds in :data:`ACCELERATORS`' order (each appends what it saw
    to ``notes``); the CPU, last, answers on every host."""
    for kind in ACCELERATORS:
        found = kind.detected(wanted, host, notes)
        if found is not None:
            return found
    raise AssertionError("the last kind of ACCELERATORS answers on every host")
