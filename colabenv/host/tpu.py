"""A Google TPU host, for :func:`colabenv.host.detect.detect`: PCI devices, device nodes, the
runtime's environment. Nothing is imported or loaded (no libtpu, no framework).

Sources, in the order they are believed:

- the PCI devices under Google's vendor id ``0x1ae0`` whose device id is a TPU chip's
  (``sys/bus/pci/devices/*/vendor`` and ``device``): what JAX itself reads to decide whether a
  host has TPU chips (``jax/_src/hardware_utils.py``), so a chip it lists is one JAX will use.
  They give the generation and the chip count;
- the device nodes: ``/dev/accelN`` (one per chip) and ``/dev/vfio/N`` (the vfio-pci groups of
  newer TPU VMs; other vfio devices exist, so these count only beside a TPU PCI device or an
  accelerator type);
- ``TPU_ACCELERATOR_TYPE`` (``v5litepod-8``, ``v6e-1``, ``v3-8``: the slice, set on TPU VMs and
  in Kaggle's TPU image): the generation where PCI cannot tell (v2 and v3 share a device id),
  never on its own (an image can carry it onto a machine without a TPU);
- ``COLAB_TPU_ADDR`` and ``TPU_NAME`` without a local chip: a TPU reached over the network
  (Colab's and Kaggle's former TPU Node runtimes), which JAX 0.4 and newer cannot use: a note,
  not a TPU target.

Everything is read through :class:`colabenv.host.probe.HostProbe` (``root``, ``list_dir``,
``read_text``, ``environ``), so tests feed a folder of recorded device nodes and an environment.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from colabenv.host.probe import HostProbe
from colabenv.models import MAX_TPU_CHIPS, TpuFacts, TpuGeneration, TpuReport, TpuTarget

GOOGLE_PCI_VENDOR = "0x1ae0"
PCI_DEVICES = Path("sys/bus/pci/devices")
ENV_ACCELERATOR_TYPE = "TPU_ACCELERATOR_TYPE"
REMOTE_TPU_VARIABLES = ("COLAB_TPU_ADDR", "TPU_NAME")
_ACCEL_RE = re.compile(r"accel[0-9]{1,4}", re.ASCII)
_GROUP_RE = re.compile(r"[0-9]{1,6}", re.ASCII)


def _read_id(probe: HostProbe, path: Path) -> str | None:
    try:
        text = probe.read_text(path)
    except (OSError, UnicodeError):
        return None
    value = text.strip().lower()
    return value if re.fullmatch(r"0x[0-9a-f]{4}", value) else None


def _listed(probe: HostProbe, folder: Path) -> Sequence[str]:
    return probe.list_dir(probe.root / folder) if probe.list_dir is not None else ()


def _pci_chips(probe: HostProbe, facts: Callable[[], TpuFacts]) -> tuple[int, list[str]]:
    """(TPU chips on the PCI bus, their device ids in the order found)."""
    ids: list[str] = []
    for name in _listed(probe, PCI_DEVICES):
        folder = probe.root / PCI_DEVICES / name
        if _read_id(probe, folder / "vendor") != GOOGLE_PCI_VENDOR:
            continue
        device = _read_id(probe, folder / "device")
        if device is not None and _generations_of(facts(), device):
            ids.append(device)
    return len(ids), ids


def _generations_of(facts: TpuFacts, device_id: str) -> tuple[TpuGeneration, ...]:
    return tuple(g for g in facts.generations if device_id in g.pci_device_ids)


def _device_nodes(probe: HostProbe) -> tuple[int, int]:
    """(``/dev/accelN`` nodes, ``/dev/vfio/N`` groups)."""
    accel = sum(1 for name in _listed(probe, Path("dev")) if _ACCEL_RE.fullmatch(name))
    vfio = sum(1 for name in _listed(probe, Path("dev/vfio")) if _GROUP_RE.fullmatch(name))
    return accel, vfio


def _from_environment(probe: HostProbe, facts: Callable[[], TpuFacts], notes: list[str]) -> TpuTarget | None:
    raw = probe.environ.get(ENV_ACCELERATOR_TYPE, "")
    if not raw.strip():
        return None
    from colabenv.catalog.tpu import parse_accelerator_type

    try:
        named = parse_accelerator_type(raw, facts())
    except ValueError as error:
        notes.append(f"{ENV_ACCELERATOR_TYPE}: {error}")
        return None
    notes.append(f"{ENV_ACCELERATOR_TYPE}={named.accelerator_type}")
    return named


def _generation(
    pci_ids: list[str], named: TpuTarget | None, facts: Callable[[], TpuFacts], notes: list[str]
) -> str | None:
    """The generation: the PCI device id's, the accelerator type's where the id is shared by
    several (v2, v3) or no PCI device was readable."""
    if not pci_ids:
        return named.generation if named is not None else None
    if len(set(pci_ids)) > 1:
        notes.append(f"TPU chips of several kinds on the PCI bus ({', '.join(sorted(set(pci_ids)))})")
    candidates = [g.name for g in _generations_of(facts(), pci_ids[0])]
    if named is not None and named.generation in candidates:
        return named.generation
    if named is not None and named.generation is not None:
        notes.append(
            f"{ENV_ACCELERATOR_TYPE} says {named.generation}, the PCI device"
            f" {pci_ids[0]} is {' or '.join(candidates)}: the PCI device is believed"
        )
    if len(candidates) == 1:
        return candidates[0]
    notes.append(
        f"TPU generation unknown: PCI device {pci_ids[0]} is {' or '.join(candidates)}"
        f" and {ENV_ACCELERATOR_TYPE} does not say which"
    )
    return None


def probe_tpu(probe: HostProbe, load_facts: Callable[[], TpuFacts]) -> TpuReport:
    """The TPU of this host, or None with notes saying what was seen instead.

    ``load_facts`` (``tpu.toml``) is called only for a Google PCI device or an accelerator type
    in the environment: most hosts show neither, and every ``detect`` and ``render`` probes."""
    notes: list[str] = []
    facts = functools.cache(load_facts)
    pci_count, pci_ids = _pci_chips(probe, facts)
    accel, vfio = _device_nodes(probe)
    named = _from_environment(probe, facts, notes)
    confirmed = pci_count > 0 or named is not None
    chips = pci_count or accel or (vfio if confirmed else 0)
    if pci_count:
        notes.append(
            f"TPU: {pci_count} chip{'' if pci_count == 1 else 's'} on the PCI bus"
            f" (vendor {GOOGLE_PCI_VENDOR}, device {pci_ids[0]})"
        )
    elif accel:
        notes.append(f"TPU: {accel} /dev/accel device node{'' if accel == 1 else 's'}")
    elif vfio and confirmed:
        notes.append(f"TPU: {vfio} /dev/vfio group{'' if vfio == 1 else 's'}")
    elif vfio:
        notes.append(
            f"{vfio} /dev/vfio group{'' if vfio == 1 else 's'} but no TPU PCI device or"
            f" {ENV_ACCELERATOR_TYPE}: not taken for a TPU"
        )
    if not chips:
        if named is not None:
            notes.append(
                f"{ENV_ACCELERATOR_TYPE} is set but this host has no TPU device"
                " (an image made for a TPU VM, on a machine without one?)"
            )
        notes.extend(_remote_notes(probe))
        return TpuReport(None, tuple(notes))
    generation = _generation(pci_ids, named, facts, notes)
    return TpuReport(
        TpuTarget(
            generation, named.accelerator_type if named is not None else None, min(chips, MAX_TPU_CHIPS)
        ),
        tuple(notes),
    )


def _remote_notes(probe: HostProbe) -> list[str]:
    found = [name for name in REMOTE_TPU_VARIABLES if probe.environ.get(name, "").strip()]
    if not found:
        return []
    return [
        f"{' and '.join(found)} set: a TPU reached over the network (a TPU Node runtime),"
        " which JAX 0.4 and newer cannot use; ask for a TPU VM runtime (TPU v2, v5e, v6e)"
    ]
