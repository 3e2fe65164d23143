"""AMD GPUs through ROCm: a build runs where the host's ROCm reaches the build's (as the driver's
CUDA caps a CUDA build) and its gfx list has every GPU's architecture; where only the kernel
driver is known (no ROCm userspace), the newest build with the GPUs' kernels is taken with a
warning. A CUDA build never runs here, and a CPU build is taken only when the profile names it:
a framework with no ROCm build is exit 3, naming it, never swapped for its CPU build
(docs/rocm.md). On the host: the GPUs of the KFD topology and the installed ROCm, each replaced
by ``--rocm`` and ``--gfx``; where the topology has GPUs, the amdgpu driver's version, ``amd-smi
version``'s ROCm where the installed ROCm states none (a note where the two differ: the file's is
taken), and ``rocminfo``'s and ``amd-smi``'s GPUs against the topology's (a note for each GPU one
lists and the other does not: the topology's are kept)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from colabenv.accelerators import base
from colabenv.models import (
    Accelerator,
    Catalog,
    FrameworkRequest,
    KfdReport,
    PackageBuild,
    Profile,
    Release,
    RocmAgent,
    RocmTarget,
    RocmToolsReport,
    Target,
    TargetOverrides,
    Variant,
    VersionReading,
)

if TYPE_CHECKING:
    from packaging.requirements import Requirement


class Rocm(base.OwnBuilds):
    """AMD GPUs as an :class:`~colabenv.accelerators.base.AcceleratorKind`."""

    kind = Accelerator.ROCM
    traits = base.Traits(
        named="AMD GPUs",
        hip=True,
        docker_devices="--device=/dev/kfd --device=/dev/dri --group-add video --group-add render",
        apptainer_devices="--rocm",
        # AMD's device plugin's resource, and its node labeller's label of a node's GPUs (their
        # PCI device ID in lowercase hex): ROCm/k8s-device-plugin, README.md and
        # cmd/k8s-node-labeller/main.go
        cluster_gpus=base.ClusterGpus("amd", "amd.com/gpu", "amd.com/gpu.device-id"),
    )

    def detected(
        self, wanted: TargetOverrides, host: base.HostReadings, notes: list[str]
    ) -> base.Detected | None:
        if wanted.cpu:
            return None
        return _amd_gpus(wanted, host, notes)

    def offered_variants(self, release: Release, target: Target, catalog: Catalog) -> tuple[Variant, ...]:
        """The release's builds, its ROCm builds first, newest ROCm first: of those the host's
        ROCm reaches, the newest is taken."""
        own = sorted((v for v in release.variants if v.rocm is not None), key=_line, reverse=True)
        return (*own, *(v for v in release.variants if v.rocm is None))

    def rejection(
        self, variant: Variant, request: FrameworkRequest, target: Target, catalog: Catalog
    ) -> str | None:
        if variant.is_cpu:
            return None if request.variant == variant.name else base.NOT_ASKED
        if variant.rocm is None:
            return f"{variant.name} is a CUDA build; the target's GPUs are AMD (ROCm)"
        if target.rocm is not None and _line(variant) > (target.rocm.major, target.rocm.minor):
            return f"{variant.name} needs ROCm >= {_shown(variant)} (host ROCm {target.rocm})"
        missing = [gfx for gfx in target.gfx if gfx not in variant.gfx]
        if missing:
            return f"{variant.name} has no kernels for {', '.join(missing)}"
        return None

    def fully_supported(self, variant: Variant, target: Target, catalog: Catalog) -> bool:
        return variant.is_cpu or target.rocm is not None

    def why(self, variant: Variant, fully_supported: bool, target: Target, catalog: Catalog) -> str:
        if variant.is_cpu:
            return "CPU build requested"
        host = f"host ROCm {target.rocm}" if target.rocm is not None else "host ROCm not known"
        kernels = f"; kernels for {', '.join(target.gfx)}" if target.gfx else ""
        return f"{variant.name}: ROCm {_shown(variant)} ({host}){kernels}"

    def warnings(
        self, chosen: Sequence[base.ChosenBuild], profile: Profile, target: Target, catalog: Catalog
    ) -> list[str]:
        if not target.gfx and any(not build.variant.is_cpu for build in chosen):
            return ["AMD GPU architecture (gfx) unknown: gfx lists were not checked"]
        return []

    def build_warnings(self, build: base.ChosenBuild, target: Target, catalog: Catalog) -> list[str]:
        if build.variant.is_cpu or target.rocm is not None:
            return []
        return [_rocm_unknown(f"{build.label} {build.variant.name}")]

    def package_warnings(self, label: str, build: PackageBuild, target: Target) -> list[str]:
        """A ROCm build that loads the host's ROCm libraries (no torch of its own: the rule of
        :meth:`package_rejection`) where the host's ROCm is not known; one built against torch
        loads torch's, which torch's own warning covers."""
        if build.rocm is None or build.torch is not None or target.rocm is not None:
            return []
        loads = f"it loads the host's ROCm {build.rocm.major} libraries (libamdhip64.so.{build.rocm.major})"
        return [_rocm_unknown(f"{label} {build.name}", loads)]

    def describe(self, target: Target) -> str:
        rocm = f"ROCm {target.rocm}" if target.rocm is not None else "ROCm unknown"
        return f"AMD GPU, {rocm}, {', '.join(target.gfx) or 'gfx unknown'}"

    def shown(self, target: Target) -> str:
        return f"{self.kind} ({self.describe(target)})"

    def lacks(self, target: Target) -> str:
        return ""

    def package_rejection(self, build: PackageBuild, target: Target, catalog: Catalog) -> str | None:
        """A ROCm build, by a framework's rules: the host's ROCm reaches the build's, and its
        gfx list has every GPU's. A build that requires no torch loads the host's own ROCm
        libraries (``cupy-rocm-7-0``'s wheel needs ``libamdhip64.so.7``), so the host's ROCm
        major must be the build's too; one built against torch loads torch's (the resolver holds
        it to torch's ROCm build). A CUDA build is passed over unlisted."""
        if build.rocm is None:
            return base.NOT_ASKED
        line = (build.rocm.major, build.rocm.minor)
        host = target.rocm
        if host is not None and line > (host.major, host.minor):
            return f"{build.name} needs ROCm >= {line[0]}.{line[1]} (host ROCm {host})"
        if host is not None and build.torch is None and host.major != line[0]:
            return (
                f"{build.name} loads the host's ROCm {line[0]} libraries (libamdhip64.so.{line[0]});"
                f" host ROCm {host}"
            )
        missing = [gfx for gfx in target.gfx if gfx not in build.gfx]
        if missing:
            return f"{build.name} has no kernels for {', '.join(missing)}"
        return None

    def no_package_build(self, name: str, target: Target) -> str:
        return (
            f"{name} has no ROCm build in the catalog (a CUDA package; the target has AMD GPUs"
            f" ({self.describe(target)})): leave it out of the profile for this target"
        )

    def refused_requirements(
        self, requirements: Sequence[Requirement], target: Target, catalog: Catalog
    ) -> str | None:
        """Each requirement naming a CUDA package's CUDA build (``cupy-cuda12x``, ``cudf-cu12``,
        ``onnxruntime-gpu``; ``xformers``, whose default-index wheel is a CUDA one): the script
        would install the CUDA wheel on AMD GPUs (docs/rocm.md). Where the package has a ROCm
        build in the catalog, the line says to name it in ``[frameworks]`` instead, where it is
        chosen; a ROCm build's own distribution (``cupy-rocm-7-0``) is taken as written. And
        NVIDIA's CUDA wheels (``nvidia-cudnn-cu12``, ``cuda-bindings``: :func:`is_nvidia_wheel`),
        which a ROCm environment never installs: the rule the script's plan keeps for a lock's
        pins (:mod:`colabenv.script.plan`)."""
        from colabenv._util.pep508 import is_nvidia_wheel  # the requirement grammar: where it is used

        builds, rocm = _cuda_builds(catalog), _rocm_builds(catalog)
        named: list[str] = []
        moved: list[str] = []
        nvidia = [str(r) for r in requirements if is_nvidia_wheel(r.name)]
        if nvidia:
            one = len(nvidia) == 1
            wheels = "is an NVIDIA CUDA wheel" if one else "are NVIDIA CUDA wheels"
            moved.append(
                f"{', '.join(nvidia)} {wheels}; an AMD GPU (ROCm) environment installs none (nvidia-*,"
                f" cuda-*; the target has AMD GPUs ({self.describe(target)})): leave"
                f" {'it' if one else 'them'} out of the profile for this target"
            )
        for requirement in requirements:
            name = canonicalize_name(requirement.name)
            package = builds.get(name)
            if package is None:
                continue
            shown = f"{requirement} ({package})" if package != name else str(requirement)
            if package not in rocm:
                named.append(shown)
                continue
            spec = str(requirement.specifier) or "*"
            moved.append(
                f"{shown} is a CUDA build; {package} has ROCm builds in the catalog"
                f' ({", ".join(rocm[package])}): move it to [frameworks] as {package} = "{spec}"'
            )
        if named:
            moved.insert(
                0,
                f"{', '.join(named)} {'has' if len(named) == 1 else 'have'} no ROCm build in the catalog"
                f" (a CUDA package's build; the target has AMD GPUs ({self.describe(target)})): leave"
                f" {'it' if len(named) == 1 else 'them'} out of the profile for this target",
            )
        return "; ".join(moved) or None

    # A lock header's device fields

    def recorded_problem(self, recorded: base.RecordedDevice) -> str | None:
        if recorded.compute_capabilities:
            return f"compute-capabilities: {base.AMD_BESIDE_A_DRIVER}"
        return f"tpu: {base.TPU_BESIDE_A_DRIVER}" if recorded.tpu is not None else None

    def contradiction(self, written: Accelerator) -> str | None:
        return None if written is self.kind else "the target has AMD GPUs (ROCm)"

    def difference(self, recorded: base.RecordedDevice, now: base.RecordedDevice) -> str | None:
        if now.kind is not self.kind:
            return base.kind_changed(recorded, now)
        if recorded.rocm != now.rocm:
            return f"ROCm {recorded.rocm or 'unknown'} in the lock, {now.rocm or 'unknown'} now"
        if recorded.gfx != now.gfx:
            was, now_gfx = ", ".join(recorded.gfx) or "unknown", ", ".join(now.gfx) or "unknown"
            return f"gfx {was} in the lock, {now_gfx} now"
        return None

    def recorded_table(self, recorded: base.RecordedDevice) -> dict[str, object]:
        return (
            {"rocm": recorded.rocm, "gfx": list(recorded.gfx)}
            if recorded.rocm
            else {"gfx": list(recorded.gfx)}
        )

    # What the script's preflight and verify check

    def package_said(self, build: PackageBuild, target: Target, catalog: Catalog) -> tuple[str, ...]:
        host = f"host ROCm {target.rocm}" if target.rocm is not None else "host ROCm not known"
        gfx = [f"kernels for {', '.join(target.gfx)}"] if target.gfx else []
        return (f"{build.name}: ROCm {build.rocm} ({host})", *gfx)

    def device_checks(
        self, choices: Sequence[base.BuiltFor], required_driver: str | None
    ) -> base.DeviceChecks:
        """The gfx every ROCm build chosen (a framework's or a CUDA package's) has kernels for,
        in the first build's order, and the newest ROCm they were built with; no NVIDIA driver.
        Nothing without a ROCm build (a CPU build named by the profile)."""
        builds = [(choice.rocm, choice.gfx) for choice in choices if choice.rocm is not None]
        if not builds:
            return base.NO_DEVICE_CHECKS
        gfx = tuple(g for g in builds[0][1] if all(g in kernels for _, kernels in builds))
        newest = max(rocm for rocm, _ in builds)
        return base.DeviceChecks(gfx=gfx, rocm=f"{newest.major}.{newest.minor}")

    verify_checks = base.VerifyChecks(base.DeviceSmoke.HIP)


def _rocm_unknown(named: str, loads: str = "") -> str:
    """The warning of a build ``named`` taken where the host's ROCm is not known, a framework's
    and a package's alike (``loads``: what of the host's ROCm it needs)."""
    needs = f"; {loads}" if loads else ""
    return (
        f"{named}: the host's ROCm is not known (the kernel driver alone): took the newest build"
        f" with the GPUs' kernels{needs}; give --rocm X.Y"
    )


def _cuda_builds(catalog: Catalog) -> dict[NormalizedName, NormalizedName]:
    """Each distribution the catalog's CUDA packages' CUDA builds are (``cupy-cuda12x``) -> the
    package (``cupy``)."""
    return {
        build.distribution: package.name
        for package in catalog.packages
        for release in package.releases
        for build in release.builds
        if build.rocm is None
    }


def _rocm_builds(catalog: Catalog) -> dict[NormalizedName, list[str]]:
    """Each package with ROCm builds -> their distributions and places (``cupy-rocm-7-0``)."""
    found: dict[NormalizedName, list[str]] = {}
    for package in catalog.packages:
        for release in package.releases:
            for build in release.builds:
                if build.rocm is not None:
                    where = (
                        f"{build.distribution}+{build.local_tag}" if build.local_tag else build.distribution
                    )
                    listed = found.setdefault(package.name, [])
                    if where not in listed:
                        listed.append(where)
    return found


def _amd_gpus(wanted: TargetOverrides, host: base.HostReadings, notes: list[str]) -> base.Detected | None:
    """AMD GPUs: what ``--rocm``/``--gfx`` give, the rest read from the host (the KFD topology,
    the installed ROCm, and where the topology has GPUs the amdgpu driver and the ROCm tools,
    each run only for what is not given); None where neither names any."""
    given = wanted.rocm
    if given is not None and given.rocm is not None and given.gfx:
        return base.Detected(given)
    found = host.amd_gpus()
    if found is None:
        return base.Detected(given) if given is not None else None
    if given is None and not found.gpus:
        return None
    notes.extend(found.notes)
    reading = host.rocm_version() if given is None or given.rocm is None else None
    # the tools take seconds: detect runs them to check what the files say; every other
    # command asks amd-smi only for a ROCm version the installed ROCm does not state
    ask_rocm = reading is not None and bool(found.gpus) and (host.cross_check or reading.version is None)
    ask_gfx = (given is None or not given.gfx) and bool(found.gpus) and host.cross_check
    tools = host.rocm_tools(gfx=ask_gfx, rocm=ask_rocm) if ask_rocm or ask_gfx else None
    driver = host.amdgpu_version() if found.gpus else None
    if tools is not None:  # amd-smi's are said beside the ROCm version where it was asked for
        notes.extend(tools.rocminfo_notes if reading is not None else tools.notes)
    if reading is None:
        assert given is not None and given.rocm is not None
        rocm: Version | None = given.rocm
    else:
        rocm = _rocm_version(reading, tools, notes)
    gfx = found.gfx
    if given is not None and given.gfx:
        gfx = given.gfx
    elif found.gpus:
        checked, agreeing = _cross_checked(found, tools)
        notes.extend(checked)
        if gfx:
            agree = (
                f" ({' and '.join(agreeing)} agree{'s' if len(agreeing) == 1 else ''})" if agreeing else ""
            )
            notes.append(f"AMD GPUs read from the KFD topology: {', '.join(gfx)}{agree}")
    if driver is not None and driver.version is None:
        notes.append(f"amdgpu driver version not known: {driver.reason}")
    return base.Detected(RocmTarget(rocm, gfx), amdgpu_driver=driver)


def _rocm_version(reading: VersionReading, tools: RocmToolsReport | None, notes: list[str]) -> Version | None:
    """The installed ROCm's version: its ``.info/version`` (``reading``) first, else ``amd-smi
    version``'s; the note names the source, and where both answer and differ says so (the
    file's taken)."""
    smi = tools.amd_smi if tools is not None else None
    smi_rocm = smi.rocm if smi is not None else None
    smi_notes = tools.amd_smi_notes if tools is not None else ()
    if reading.version is not None or smi is not None:  # else they say why it is not known
        notes.extend(smi_notes)
    if reading.version is not None:
        said = ""
        if smi_rocm is not None:
            said = (
                " (amd-smi version agrees)"
                if smi_rocm == reading.version
                else f"; amd-smi version says ROCm {smi_rocm}: the file's is taken"
            )
        notes.append(f"ROCm {reading.version} from {reading.source}{said}")
        return reading.version
    if smi_rocm is not None:
        notes.append(f"ROCm {smi_rocm} from amd-smi version ({reading.reason})")
        return smi_rocm
    why = reading.reason or "not readable"
    if tools is not None:
        why += "; " + ("; ".join(smi_notes) if smi is None else "amd-smi version states none")
    notes.append(f"ROCm version not known: {why}")
    return None


def _cross_checked(found: KfdReport, tools: RocmToolsReport | None) -> tuple[list[str], list[str]]:
    """What ``rocminfo`` and ``amd-smi static --asic`` list that the KFD topology does not, and
    the reverse, one note each (the topology's GPUs and gfx are kept); and the tools that
    answered and agree."""
    notes: list[str] = []
    agreeing: list[str] = []
    if tools is not None and tools.rocminfo is not None:
        differences = _rocminfo_differences(found, tools.rocminfo.agents)
        notes.extend(differences)
        if not differences:
            agreeing.append("rocminfo")
    smi = tools.amd_smi if tools is not None else None
    if smi is not None and smi.gfx is not None:
        extra = sorted(set(smi.gfx) - set(found.gfx))
        missing = [g for g in found.gfx if g not in smi.gfx]
        if extra:
            notes.append(f"amd-smi lists {', '.join(extra)}, which the KFD topology does not: left out")
        if missing:
            notes.append(f"the KFD topology has {', '.join(missing)}, which amd-smi does not list")
        if not extra and not missing:
            agreeing.append("amd-smi")
    return notes, agreeing


def _rocminfo_differences(found: KfdReport, agents: Sequence[RocmAgent]) -> list[str]:
    """rocminfo's GPU agents against the KFD topology's GPU nodes, node by node (an agent that
    names no node by its gfx alone)."""
    topology = {gpu.node: gpu.gfx for gpu in found.gpus}
    listed = {agent.node: agent.gfx for agent in agents if agent.node is not None}
    notes: list[str] = []
    extra = sorted(node for node in listed if node not in topology)
    if extra:
        names = ", ".join(sorted({listed[node] for node in extra}))
        notes.append(
            f"rocminfo lists GPUs at {_nodes(extra)} ({names}) where the KFD topology has none: left out"
        )
    missing = sorted(node for node in topology if node not in listed)
    if missing:
        count = f"{len(missing)} GPU node{'s' if len(missing) != 1 else ''}"
        notes.append(f"the KFD topology has {count} rocminfo does not list ({_nodes(missing)})")
    pairs: dict[tuple[str, str | None], list[int]] = {}
    for node in sorted(set(listed) & set(topology)):
        if listed[node] != topology[node]:
            pairs.setdefault((listed[node], topology[node]), []).append(node)
    for (named, kept), nodes in pairs.items():
        if kept is None:
            notes.append(
                f"the KFD topology states no gfx at {_nodes(nodes)}; rocminfo names {named}:"
                f" give --gfx {named} to use it"
            )
        else:
            notes.append(f"rocminfo names {_nodes(nodes)} {named}, the KFD topology {kept}: {kept} is kept")
    unplaced = sorted({agent.gfx for agent in agents if agent.node is None} - set(found.gfx))
    if unplaced:
        notes.append(f"rocminfo lists {', '.join(unplaced)}, which the KFD topology does not: left out")
    return notes


MAX_SPANS = 8
"""Runs of node numbers a note names before it says how many more."""


def _nodes(numbers: Sequence[int]) -> str:
    """``node 1``, ``nodes 2-5``, ``nodes 2, 4-6``: sorted numbers as runs, at most
    :data:`MAX_SPANS` of them."""
    spans: list[list[int]] = []
    for number in numbers:
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    shown = [str(a) if a == b else f"{a}-{b}" for a, b in spans[:MAX_SPANS]]
    more = f" and {len(spans) - MAX_SPANS} more runs" if len(spans) > MAX_SPANS else ""
    return f"node{'s' if len(numbers) != 1 else ''} {', '.join(shown)}{more}"


def _line(variant: Variant) -> tuple[int, int]:
    assert variant.rocm is not None
    return variant.rocm.major, variant.rocm.minor


def _shown(variant: Variant) -> str:
    major, minor = _line(variant)
    return f"{major}.{minor}"


ROCM = Rocm()
