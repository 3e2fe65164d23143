"""The one list of accelerator kinds, and the kind of a target. A new kind is one line here."""

from __future__ import annotations

from colabenv.accelerators.base import AcceleratorKind
from colabenv.accelerators.cpu import CPU
from colabenv.accelerators.nvidia import NVIDIA
from colabenv.accelerators.rocm import ROCM
from colabenv.accelerators.tpu import TPU
from colabenv.models import Accelerator, Target

ACCELERATORS: tuple[AcceleratorKind, ...] = (NVIDIA, ROCM, TPU, CPU)
"""Every kind, in the order ``detect`` tries them."""

_BY_KIND = {kind.kind: kind for kind in ACCELERATORS}


def accelerator(kind: Accelerator) -> AcceleratorKind:
    """The kind named ``kind``."""
    return _BY_KIND[kind]


def accelerator_of(target: Target) -> AcceleratorKind:
    """The kind ``target`` computes on."""
    return _BY_KIND[target.accelerator]
