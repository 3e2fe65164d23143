"""The AMD driver and ROCm versions of a host, and what ``rocminfo`` and ``amd-smi`` say.

- The amdgpu driver's version: ``sys/module/amdgpu/version``, the file ``rocminfo`` reads for
  its "ROCk module version X is loaded" line (rocminfo ``rocminfo.cc`` line 1206). Only the
  out-of-tree (DKMS) driver AMD ships writes it; the driver inside a distribution's kernel has
  none, and then the version is None with that reason.
- The ROCm version: ``<ROCM_PATH or /opt/rocm>/.info/version``, the 12-byte file the
  ``rocm-core`` package installs (``6.4.0-15158``: ROCm/rocm-systems
  ``projects/rocm-core/README.md``), as ROCm's own CMake modules read it
  (``projects/rocprofiler-sdk/cmake/Modules/Findrocm_version.cmake``).
- ``rocminfo`` and ``amd-smi`` where installed, run through :class:`HostProbe` (argv lists, its
  ``rocm_tool_timeout`` per run, :mod:`colabenv._util.processes` underneath): each GPU agent's
  gfx name and node, ``amd-smi version``'s ROCm version and ``amd-smi static --asic``'s
  ``TARGET_GRAPHICS_VERSION``. Detection (:mod:`colabenv.accelerators.rocm`, through
  :class:`colabenv.host.readings.ProbeReadings`) runs them only where the KFD topology has AMD
  GPUs, and only for what ``--rocm``/``--gfx`` do not give.

A version with letters, a file past its bound, a tool that fails or hangs: a reason in the
reading or a note, never an exception.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from packaging.version import Version

from colabenv._util.files import FileProblem, read_limited
from colabenv.errors import ProcessError
from colabenv.host.probe import HostProbe
from colabenv.models import AmdSmiReport, RocmAgent, RocminfoReport, RocmToolsReport, VersionReading

AMDGPU_VERSION_FILE = Path("sys/module/amdgpu/version")
DEFAULT_ROCM_PATH = "/opt/rocm"
ROCM_VERSION_FILE = Path(".info/version")
MAX_VERSION_BYTES = 256
ROCMINFO_ARGS: tuple[str, ...] = ()
AMD_SMI_VERSION_ARGS = ("version",)
AMD_SMI_ASIC_ARGS = ("static", "--asic")
MAX_AGENTS = 1024

_DRIVER_RE = re.compile(r"[0-9]{1,4}(\.[0-9]{1,6}){1,3}", re.ASCII)
_ROCM_RE = re.compile(r"([0-9]{1,3}\.[0-9]{1,3}(?:\.[0-9]{1,4})?)(?:-[0-9]{1,9})?", re.ASCII)
_GFX_RE = re.compile(r"gfx[0-9]{1,2}[0-9a-f]{2}", re.ASCII)


def _read_text(path: Path, shown: str) -> tuple[str | None, str | None]:
    try:
        data = read_limited(path, MAX_VERSION_BYTES)
    except FileProblem as problem:
        return None, f"{shown}: {problem}"
    return data.decode("utf-8", errors="replace").strip(), None


def parse_driver_version(text: str) -> Version | None:
    """``6.12.12`` (the DKMS driver's ``version`` file); None for text with letters or no version."""
    return Version(text) if _DRIVER_RE.fullmatch(text.strip()) else None


def parse_rocm_version(text: str) -> Version | None:
    """``6.4.0-15158`` (``.info/version``) or ``6.1.0`` as ``6.4.0``; None for anything else."""
    match = _ROCM_RE.fullmatch(text.strip())
    return Version(match.group(1)) if match else None


def read_amdgpu_version(root: Path = Path("/")) -> VersionReading:
    """The amdgpu kernel driver's version, or None: no such file (the kernel's own driver), or
    one that holds no version."""
    shown = "/" + str(AMDGPU_VERSION_FILE)
    text, reason = _read_text(root / AMDGPU_VERSION_FILE, shown)
    if text is None:
        if (root / "sys/module/amdgpu").is_dir():
            reason = f"{shown}: absent (the amdgpu driver built into the kernel states no version)"
        return VersionReading(None, reason or f"{shown}: unreadable", shown)
    version = parse_driver_version(text)
    if version is None:
        return VersionReading(
            None, f"{shown}: {text[:40]!r} is not a driver version (digits and dots)", shown
        )
    return VersionReading(version, None, shown)


def read_rocm_version(root: Path = Path("/"), environ: Mapping[str, str] | None = None) -> VersionReading:
    """The installed ROCm's version from ``$ROCM_PATH/.info/version`` (``/opt/rocm`` without
    ``ROCM_PATH``), or None with the reason (no ROCm installed, a version with letters)."""
    base = (environ or {}).get("ROCM_PATH", "").strip() or DEFAULT_ROCM_PATH
    shown = str(Path(base) / ROCM_VERSION_FILE)
    text, reason = _read_text(root / shown.lstrip("/"), shown)
    if text is None:
        return VersionReading(None, reason, shown)
    version = parse_rocm_version(text)
    if version is None:
        return VersionReading(None, f"{shown}: {text[:40]!r} is not a ROCm version (X.Y.Z-build)", shown)
    return VersionReading(version, None, shown)


# ---------------------------------------------------------------------------------------------
# rocminfo and amd-smi


_AGENT_FIELD_RE = re.compile(r"^  ([A-Za-z][A-Za-z .]*?):\s*(.*?)\s*$")
_ROCK_RE = re.compile(r"ROCk module version (\S+) is loaded")


def parse_rocminfo(text: str) -> RocminfoReport:
    """The GPU agents of ``rocminfo``'s output (CPU agents left out), in its order."""
    problems: list[str] = []
    rock = _ROCK_RE.search(text[:4096])
    driver = parse_driver_version(rock.group(1)) if rock else None
    agents: list[RocmAgent] = []
    for number, block in enumerate(re.split(r"\n\*{7}\s*\nAgent [0-9]+\s*\n\*{7}\s*\n", text)[1:], start=1):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            match = _AGENT_FIELD_RE.match(line)
            if match and match.group(1) not in fields:
                fields[match.group(1)] = match.group(2)
        if fields.get("Device Type") != "GPU":
            continue
        name = fields.get("Name", "")
        if not _GFX_RE.fullmatch(name):
            problems.append(f"agent {number}: name {name[:40]!r} is not a gfx architecture")
            continue
        node = fields.get("Node", "")
        agents.append(
            RocmAgent(
                name,
                int(node) if node.isascii() and node.isdigit() else None,
                fields.get("Marketing Name", ""),
                fields.get("Uuid") or None,
            )
        )
        if len(agents) >= MAX_AGENTS:
            break
    return RocminfoReport(tuple(agents), driver, tuple(problems))


def parse_amd_smi_version(text: str) -> tuple[Version | None, str | None]:
    """``AMDSMI Tool: ... | ROCm version: 6.1.0`` to the ROCm version (None for ``N/A``)."""
    match = re.search(r"ROCm version:\s*([^|\s]+)", text)
    if match is None:
        return None, "no 'ROCm version' in amd-smi version's output"
    version = parse_rocm_version(match.group(1))
    if version is None and match.group(1) != "N/A":
        return None, f"ROCm version {match.group(1)[:40]!r} is not a version"
    return version, None


def parse_amd_smi_asic(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Each GPU's ``TARGET_GRAPHICS_VERSION`` (``gfx942``) from ``amd-smi static --asic``."""
    found: list[str] = []
    problems: list[str] = []
    for value in re.findall(r"^\s*TARGET_GRAPHICS_VERSION:\s*(\S+)\s*$", text, re.MULTILINE)[:MAX_AGENTS]:
        if _GFX_RE.fullmatch(value):
            found.append(value)
        else:
            problems.append(f"TARGET_GRAPHICS_VERSION {value[:40]!r} is not a gfx architecture")
    return tuple(found), tuple(problems)


def _run_tool(
    probe: HostProbe, exe: str, args: Sequence[str], notes: list[str], timeout: float
) -> str | None:
    name = Path(exe).name
    label = " ".join([name, *args])
    try:
        done = probe.run([exe, *args], timeout)
    except ProcessError as error:
        notes.append(f"{name}: {error.message.split(': ', 1)[-1]}")
        return None
    except OSError as error:
        notes.append(f"{name}: cannot start ({error.strerror or error})")
        return None
    if done.timed_out:
        notes.append(f"{label}: did not answer within {timeout:g}s (killed)")
        return None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["no output"])[-1]
        notes.append(f"{label}: exited {done.returncode}: {last[:200]}")
        return None
    return done.stdout


def probe_rocm_tools(
    probe: HostProbe, timeout: float | None = None, *, gfx: bool = True, rocm: bool = True
) -> RocmToolsReport:
    """Run ``rocminfo`` and ``amd-smi`` where they are on ``PATH`` (or under
    ``$ROCM_PATH/bin``), each run within ``timeout`` seconds (the probe's
    ``rocm_tool_timeout`` by default), for what is asked: ``gfx``, each GPU's architecture
    (``rocminfo``, ``amd-smi static --asic``); ``rocm``, the ROCm version (``amd-smi version``).
    An ``amd-smi version`` that fails or hangs is not asked again for the gfx."""
    limit = probe.rocm_tool_timeout if timeout is None else timeout
    rocminfo_notes: list[str] = []
    amd_smi_notes: list[str] = []
    rocminfo: RocminfoReport | None = None
    amd_smi: AmdSmiReport | None = None
    if gfx:
        exe = _find(probe, "rocminfo")
        if exe is None:
            rocminfo_notes.append("rocminfo: not installed")
        elif (out := _run_tool(probe, exe, ROCMINFO_ARGS, rocminfo_notes, limit)) is not None:
            rocminfo = parse_rocminfo(out)
            rocminfo_notes.extend(f"rocminfo: {p}" for p in rocminfo.problems)
    if gfx or rocm:
        exe = _find(probe, "amd-smi")
        if exe is None:
            amd_smi_notes.append("amd-smi: not installed")
        else:
            amd_smi = _amd_smi(probe, exe, amd_smi_notes, limit, gfx=gfx, rocm=rocm)
    return RocmToolsReport(rocminfo, amd_smi, tuple(rocminfo_notes), tuple(amd_smi_notes))


def _amd_smi(
    probe: HostProbe, exe: str, notes: list[str], timeout: float, *, gfx: bool, rocm: bool
) -> AmdSmiReport | None:
    version_out = _run_tool(probe, exe, AMD_SMI_VERSION_ARGS, notes, timeout) if rocm else None
    asic_out = None
    if gfx and (version_out is not None or not rocm):
        asic_out = _run_tool(probe, exe, AMD_SMI_ASIC_ARGS, notes, timeout)
    if version_out is None and asic_out is None:
        return None
    problems: list[str] = []
    version, problem = parse_amd_smi_version(version_out) if version_out is not None else (None, None)
    if problem:
        problems.append(problem)
    found: tuple[str, ...] | None = None
    if asic_out is not None:
        found, asic_problems = parse_amd_smi_asic(asic_out)
        problems.extend(asic_problems)
    notes.extend(f"amd-smi: {p}" for p in problems)
    return AmdSmiReport(version, found, tuple(problems))


def _find(probe: HostProbe, name: str) -> str | None:
    found = probe.find_executable(name)
    if found is None:
        base = probe.environ.get("ROCM_PATH", "").strip() or DEFAULT_ROCM_PATH
        candidate = probe.root / base.lstrip("/") / "bin" / name
        if probe.path_exists(candidate):
            return str(candidate)
    return found
