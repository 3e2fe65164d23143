"""The variables of the notebook's environment that change what the GPU runtime sees, read and
judged against the installed build (docs/doctor.md, "GPU variables"). Pure: the environment, the
installed distributions and the catalog are handed in.

``HSA_OVERRIDE_GFX_VERSION=major.minor.stepping`` makes ROCm report every AMD GPU as that gfx
(libhsakmt's ``topology.c`` reads it with ``sscanf("%u.%u.%u")`` and refuses anything else), so
ROCm loads that gfx's kernels: where the installed torch's ROCm build has none for it, every
kernel fails with "HIP error: invalid device function". The gfx is spelled as the KFD's
``gfx_target_version`` is (:func:`colabenv.host.kfd.gfx_name`: ``11.0.0`` is ``gfx1100``,
``9.0.10`` is ``gfx90a``). The installed torch's gfx list is the catalog's for its ROCm build
(the local tag ``+rocm6.1`` of its version), where the catalog has that build."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from packaging.version import InvalidVersion, Version

from colabenv.diagnosis.signatures import GpuVariable
from colabenv.errors import printable
from colabenv.host.installed import PathScan
from colabenv.host.kfd import gfx_name
from colabenv.models import CATALOG_PLATFORM, Catalog, Evidence, Finding, Framework
from colabenv.models.frozen import model

HSA_OVERRIDE = "HSA_OVERRIDE_GFX_VERSION"
KIND = "gpu-variable"
_OVERRIDE_RE = re.compile(r"([0-9]{1,2})\.([0-9]{1,3})\.([0-9]{1,3})", re.ASCII)
_ROCM_TAG_RE = re.compile(r"rocm[0-9]+(?:\.[0-9]+)*", re.ASCII)


@model
class InstalledGfx:
    """The installed torch (``label``: ``torch 2.4.1+rocm6.1``) and the gfx list its build has
    kernels for (None: not known, ``why`` says why; else ``why`` says where it comes from)."""

    label: str
    gfx: tuple[str, ...] | None
    why: str


def override_gfx(value: str) -> str | None:
    """``11.0.0`` -> ``gfx1100``, ``9.4.2`` -> ``gfx942``, ``9.0.10`` -> ``gfx90a``; None for a
    value that is not ``major.minor.stepping`` or that no gfx name spells."""
    match = _OVERRIDE_RE.fullmatch(value.strip())
    if match is None:
        return None
    major, minor, stepping = (int(part) for part in match.groups())
    return gfx_name(major * 10000 + minor * 100 + stepping)


def installed_torch_gfx(
    scan: PathScan, catalog: Catalog, platform: str = CATALOG_PLATFORM
) -> InstalledGfx | None:
    """The gfx list of the torch first on the path (None: no torch installed), as the catalog
    lists its build for ``platform`` (:meth:`Release.on_platform`)."""
    dist = next((d for d in scan.dists if d.name == "torch"), None)
    if dist is None:
        return None
    label = f"torch {printable(dist.version)[:60]}"
    try:
        version = Version(dist.version)
    except InvalidVersion:
        return InstalledGfx(label, None, "its version is not one the catalog reads")
    local = version.local or ""
    if not _ROCM_TAG_RE.fullmatch(local):
        return InstalledGfx(label, None, "it is not a ROCm build (no +rocmX.Y local tag)")
    release = catalog.release(Framework.TORCH, Version(version.public))
    seen = release.on_platform(platform) if release is not None else None
    variant = next((v for v in seen.variants if v.local_tag == local), None) if seen else None
    if variant is None or not variant.gfx:
        return InstalledGfx(label, None, f"the catalog has no gfx list for torch {version.public} +{local}")
    return InstalledGfx(label, variant.gfx, f"the catalog's {variant.name} build of torch {version.public}")


def _remedy(entry: GpuVariable, installed: InstalledGfx | None) -> str:
    known = installed.gfx if installed is not None else None
    shown = ", ".join(known) if known else "colabenv resolve names them"
    return printable(entry.remedy.replace("{gfx_list}", shown))


def _override(
    entry: GpuVariable, value: str, installed: InstalledGfx | None
) -> tuple[tuple[Finding, ...], tuple[str, ...]]:
    shown = printable(value)[:60]
    setting = Evidence(f"{HSA_OVERRIDE}={shown} in this process's environment (the notebook's)")
    gfx = override_gfx(value)
    if gfx is None:
        summary = (
            f"{HSA_OVERRIDE}={shown!r} is not major.minor.stepping (such as 11.0.0): ROCm refuses it"
            " and sees no AMD GPU"
        )
        finding = Finding(KIND, summary, (setting,), _remedy(entry, installed), cause=entry.cause)
        return (finding,), ()
    said = f"{HSA_OVERRIDE}={shown} makes ROCm report every AMD GPU as {gfx}"
    if installed is None or installed.gfx is None:
        why = "no torch is installed" if installed is None else f"{installed.label}: {installed.why}"
        return (), (f"GPU variables: {said}; the installed build's gfx list is not known ({why})",)
    listed = f"{installed.label} has kernels for {', '.join(installed.gfx)} ({installed.why})"
    if gfx in installed.gfx:
        return (), (f"GPU variables: {said}, which {installed.label} has kernels for",)
    finding = Finding(
        KIND,
        f"{said}, and {installed.label} has no kernels for {gfx}: its GPU kernels fail with"
        " 'HIP error: invalid device function'",
        (setting, Evidence(listed)),
        _remedy(entry, installed),
        cause=entry.cause,
    )
    return (finding,), ()


def gpu_variable_findings(
    environ: Mapping[str, str], installed: InstalledGfx | None, entries: Sequence[GpuVariable]
) -> tuple[tuple[Finding, ...], tuple[str, ...]]:
    """The findings and notes of the GPU variables set in ``environ``: each set one is said
    (a note where it does no harm the installed build shows), a finding where it does."""
    findings: list[Finding] = []
    notes: list[str] = []
    for entry in entries:
        value = environ.get(entry.name)
        if value is None or entry.name != HSA_OVERRIDE:
            continue
        found, said = _override(entry, value, installed)
        findings.extend(found)
        notes.extend(said)
    return tuple(findings), tuple(notes)
