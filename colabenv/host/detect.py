"""Read the host: its accelerator (a TPU, NVIDIA GPUs, AMD GPUs, else the CPU), Python, platform,
runtime kind, installed distributions.

:func:`detect` is the entry. The accelerator is what the kinds of
:data:`colabenv.accelerators.registry.ACCELERATORS` find, asked in that order, each reading the
host through :class:`colabenv.host.readings.ProbeReadings`, whose sources are loaded only when a
kind asks for them. Every source is bounded in time and every failure becomes a note in the
:class:`Fingerprint`, never an exception: a host without a GPU is a normal answer (driver and
CUDA ``None``). The inputs sit behind :class:`HostProbe`, so tests feed a fake NVML, recorded
``/proc`` and ``/sys`` texts and tools' outputs without patching.

The sources, each kind's in order:

- a TPU (:mod:`colabenv.host.tpu`): the PCI devices, the device nodes, the runtime's
  environment; looked for first, and a TPU host leaves the GPU sources unread;
- NVIDIA GPUs (:mod:`colabenv.host.gpu`): NVML (nvidia-ml-py), then
  ``/proc/driver/nvidia/version`` and ``/sys/module/nvidia/version`` (driver only), then
  ``nvidia-smi``;
- AMD GPUs, where no NVIDIA GPU answered: the KFD topology in sysfs (:mod:`colabenv.host.kfd`)
  for the GPUs and their gfx, the installed ROCm's version file, and where the topology has
  GPUs the amdgpu driver's version in sysfs, ``amd-smi version``'s ROCm and ``rocminfo``'s and
  ``amd-smi static --asic``'s gfx to check the topology's against (:mod:`colabenv.host.rocm`);
- the CPU: no source; it answers where no other kind did.

``--tpu``, ``--driver``/``--cuda``/``--compute-capability``, ``--rocm``/``--gfx`` and ``--cpu``
(or their ``COLABENV_*`` variables) replace what the sources would say. Nothing here imports
torch, tensorflow or jax; installed distributions are read from their metadata directories.
"""

from __future__ import annotations

import os
import platform
import re
import sys
import sysconfig
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import (
    canonicalize_name,
)
from packaging.version import Version

from colabenv.errors import InputError, StateError, printable
from colabenv.host.probe import HostProbe, list_dir, parse_version
from colabenv.models import (
    Accelerator,
    Catalog,
    ColabRuntime,
    Fingerprint,
    Framework,
    InstalledDist,
    InstalledSet,
    RuntimeImage,
    RuntimeKind,
    Target,
    TargetOverrides,
    TpuFacts,
    archs_cover,
    format_driver,
)
from colabenv.models.frameworks import is_framework_name
from colabenv.models.target import python_shown

if TYPE_CHECKING:
    from colabenv.host.interpreter import Interpreter

CUDA_DISTS = frozenset({"cuda-toolkit", "cuda-python", "cuda-bindings"})
_NOT_CUDA_WHEELS = frozenset({"nvidia-ml-py", "nvidia-ml-py3", "pynvml"})

_version = parse_version


def _glibc_version() -> str | None:
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        text = None
    if text and text.startswith("glibc "):
        return text.split(" ", 1)[1].strip()
    lib, version = platform.libc_ver()
    return version if lib == "glibc" and version else None


def platform_tag(raw: str | None = None, machine: str | None = None) -> str:
    """``sysconfig.get_platform()`` (this interpreter's, or ``raw``) as a wheel platform tag:
    ``linux_x86_64`` or ``linux_aarch64`` by :func:`~colabenv.host.interpreter.wheel_platform`
    (``machine``, ``platform.machine()`` by default, where the platform names none), else the
    platform with each run of other characters as ``_`` (``macosx_11_0_arm64``)."""
    from colabenv.host.interpreter import wheel_platform

    text = raw if raw is not None else sysconfig.get_platform()
    known = wheel_platform(text, platform.machine() if machine is None else machine)
    return known or re.sub(r"[^A-Za-z0-9]+", "_", text)


def _installed_distributions(
    paths: Sequence[str] | None = None,
) -> Iterator[tuple[str, str]]:
    """``(name, version)`` of each distribution on ``sys.path`` (or ``paths``), the first
    occurrence winning; read by the host layer's one reader, nothing imported."""
    from colabenv.host.installed import installed_distributions

    yield from installed_distributions(sys.path if paths is None else paths)


def _looking_into(host: HostProbe, interpreter: Interpreter) -> HostProbe:
    """``host`` with the Python facts and installed distributions of ``interpreter``."""
    import dataclasses

    from colabenv.host.installed import installed_distributions

    return dataclasses.replace(
        host,
        distributions=lambda: installed_distributions(interpreter.path),
        python_version=interpreter.version,
        python_implementation=interpreter.implementation,
        platform_tag=platform_tag(interpreter.platform, interpreter.machine),
        free_threaded=interpreter.free_threaded,
    )


def live_probe(environ: Mapping[str, str] | None = None) -> HostProbe:
    """The probe of the machine this runs on."""
    return HostProbe(
        environ=os.environ if environ is None else environ,
        distributions=_installed_distributions,
        python_version=platform.python_version(),
        python_implementation=platform.python_implementation(),
        platform_tag=platform_tag(),
        glibc=_glibc_version(),
        list_dir=list_dir,
        free_threaded=bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
    )


# ---------------------------------------------------------------------------------------------
# Installed distributions


def read_freeze(path: Path) -> InstalledSet:
    """Read a ``pip freeze`` file: ``name==ver``, ``name===ver`` and ``name @ URL`` lines, as
    :func:`colabenv._util.freeze.parse_freeze` reads its text. Only a regular file (or a link to
    one) of at most 64 MiB is read: a FIFO or a device is refused at once.
    """
    from colabenv._util.files import FileProblem, read_limited
    from colabenv._util.freeze import parse_freeze

    try:
        data = read_limited(path)
    except FileProblem as problem:
        raise InputError(f"{printable(path)}: cannot read: {problem}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(f"{printable(path)}: not UTF-8 text (byte {error.start})") from None
    return parse_freeze(text, printable(path))


def _python_release(text: str) -> Version:
    """An interpreter's version as the resolver sees it: its release numbers (``3.14.1``), as
    full as they are known (a pre-release ``3.14.0rc1`` is ``3.14.0``); ``3`` when unreadable."""
    version = _version(text)
    if version is None:
        return _version(".".join(text.split(".")[:2])) or Version("3")
    return Version(".".join(str(n) for n in version.release[:3]))


def _installed_set(pairs: Iterable[tuple[str, str]]) -> InstalledSet:
    found: dict[str, str] = {}
    for name, version in pairs:
        found.setdefault(canonicalize_name(name), version)
    return InstalledSet(tuple(InstalledDist(canonicalize_name(n), v) for n, v in sorted(found.items())))


def is_framework_dist(name: str) -> bool:
    return is_framework_name(name)


def is_cuda_wheel(name: str) -> bool:
    """NVIDIA's CUDA library wheels (nvidia-*-cu12, nvidia-*-cu13 ...) and the toolkit metas."""
    key = canonicalize_name(name)
    if key in CUDA_DISTS:
        return True
    return key.startswith("nvidia-") and key not in _NOT_CUDA_WHEELS


def shown_installed(installed: InstalledSet) -> tuple[InstalledDist, ...]:
    """The distributions ``detect`` reports under ``installed``: frameworks and CUDA wheels."""
    return tuple(d for d in installed.dists if is_framework_dist(d.name) or is_cuda_wheel(d.name))


# ---------------------------------------------------------------------------------------------
# Runtime kind


def runtime_kind(
    environ: Mapping[str, str] | None = None, path_exists: Callable[[Path], bool] = os.path.exists
) -> RuntimeKind:
    """The runtime kind from the variables (``os.environ`` when None) and one folder alone, the
    one place the runtimes are recognised; what ``doctor`` asks, with no probe of the host.

    Colab by its variables alone, the rule the state directory and the script use
    (:func:`colabenv.script.state.on_colab`): a ``/content`` folder or an installed google-colab
    does not make a host Colab, so ``runtime`` and ``state_dir`` never disagree. Kaggle by its
    variables or ``/kaggle/input``."""
    from colabenv.script.state import on_colab

    env = os.environ if environ is None else environ
    if on_colab(env):
        return RuntimeKind.COLAB
    if env.get("KAGGLE_KERNEL_RUN_TYPE") or env.get("KAGGLE_URL_BASE"):
        return RuntimeKind.KAGGLE
    if path_exists(Path("/kaggle/input")):
        return RuntimeKind.KAGGLE
    return RuntimeKind.GENERIC


def detect_runtime(probe: HostProbe) -> RuntimeKind:
    """:func:`runtime_kind` of the probe's variables and files."""
    return runtime_kind(probe.environ, probe.path_exists)


# ---------------------------------------------------------------------------------------------
# The fingerprint


def detect(
    overrides: TargetOverrides | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    probe: HostProbe | None = None,
    catalog_loader: Callable[[], Catalog] | None = None,
    interpreter: Interpreter | None = None,
    tpu_facts: Callable[[], TpuFacts] | None = None,
    cross_check: bool = False,
    own_installed: bool = False,
) -> Fingerprint:
    """Detect the host, then let ``overrides`` (flags, ``COLABENV_*``) replace what they give.

    ``interpreter``: read Python and the installed distributions from that interpreter
    (``--interpreter``) instead of the one colabenv runs in. ``catalog_loader``: called when
    the driver table is needed (a driver given without its CUDA); the shipped one by default.
    ``tpu_facts``: the TPU generations (the shipped ``tpu.toml`` by default).
    ``cross_check``: run the ROCm tools on an AMD host to check what the files say
    (:attr:`HostProbe.cross_check`: ``detect``'s own run).
    ``own_installed``: the installed distributions are the interpreter's own even where the
    target is another platform or Python (``init``: a starter profile of this Python); else
    none is read for such a target (:func:`_elsewhere`).
    """
    from colabenv.accelerators.registry import detected
    from colabenv.host.readings import ProbeReadings
    from colabenv.script.state import state_dir

    wanted = overrides or TargetOverrides()
    host = probe or live_probe(environ)
    if cross_check:
        import dataclasses

        host = dataclasses.replace(host, cross_check=True)
    notes: list[str] = []
    if interpreter is not None:
        host = _looking_into(host, interpreter)
        notes.append(f"Python and installed distributions read from {interpreter.executable}")

    # a file given is read first: a bad one is refused before any flag's conflict
    frozen = read_freeze(wanted.installed_from) if wanted.installed_from is not None else None
    readings = ProbeReadings(host, catalog_loader or _driver_table, tpu_facts or shipped_tpu_facts)
    found = detected(wanted, readings, notes)
    device = found.device

    python_full = host.python_version
    python = _python_release(python_full)
    if wanted.python is not None:
        python = wanted.python
        python_full = str(wanted.python)
    free_threaded = _free_threaded(wanted, host, interpreter)

    runtime = detect_runtime(host)
    platform = wanted.platform or host.platform_tag
    given = frozen is not None or wanted.runtime is not None  # they say what is installed
    elsewhere = None if own_installed or given else _elsewhere(wanted, host, platform, free_threaded)
    unread = f"installed versions: none read ({elsewhere})" if elsewhere is not None else None
    installed = _installed(wanted, host, frozen, device.kind, notes, unread)
    glibc = _glibc_of(wanted, host)
    target = Target(device, python, platform, installed, glibc, free_threaded, installed_note=unread)
    try:
        state: Path | None = state_dir(host.environ)
    except StateError as error:
        state = None
        notes.append(f"no state directory: {error}")
    return Fingerprint(
        target=target,
        gpus=found.gpus,
        runtime=runtime,
        python_implementation=host.python_implementation,
        python_full=python_full,
        glibc=_host_glibc(wanted, host, platform),
        state_dir=state,
        notes=tuple(notes),
        amdgpu_driver=found.amdgpu_driver,
        read_platform=host.platform_tag,
    )


def _installed(
    wanted: TargetOverrides,
    host: HostProbe,
    frozen: InstalledSet | None,
    kind: Accelerator,
    notes: list[str],
    unread: str | None,
) -> InstalledSet:
    """What the target has installed: the ``--installed-from`` file's, the ``--runtime`` image's
    for the target's accelerator, else the host's distributions; none where ``unread`` says why
    the host's are not the target's."""
    if frozen is not None:
        notes.append(f"installed distributions read from {wanted.installed_from}")
    if wanted.runtime is not None:
        image = _runtime_image(wanted, wanted.runtime, kind)
        notes.append(
            f"{wanted.origin('runtime')} {wanted.runtime.id}: Python {wanted.runtime.python} and the"
            f" installed distributions of its {kind} image ({image.freeze_file})"
        )
        return image.installed
    if frozen is not None:
        return frozen
    if unread is not None:
        notes.append(unread)
        return InstalledSet()
    return _installed_set(host.distributions())


def _runtime_image(wanted: TargetOverrides, runtime: ColabRuntime, kind: Accelerator) -> RuntimeImage:
    """The image of ``runtime`` (``wanted``'s) for the target's accelerator; TargetError where it
    has none (no Colab runtime has one for AMD GPUs), naming the kinds it has."""
    from colabenv.accelerators.registry import accelerator

    if kind not in runtime.kinds:
        images = ", ".join(accelerator(each).traits.named for each in runtime.kinds) or "none"
        raise wanted.problem(
            "runtime",
            runtime.id,
            f"has no image for {accelerator(kind).traits.named} (its images: {images});"
            f" {wanted.taken_back('runtime')}",
        )
    return runtime.image(kind)


def _elsewhere(wanted: TargetOverrides, host: HostProbe, platform: str, free_threaded: bool) -> str | None:
    """Why this interpreter's installed distributions are not the target's, or None where they
    may be: decisive facts only, the target's platform or its Python (major.minor, free-threaded
    or not) other than the interpreter's. A driver, a GPU or the CPU given say nothing: they
    describe this host as often as another (``init``, a ``--driver`` where NVML failed)."""
    if platform != host.platform_tag:
        return f"the target is {platform}, this host {host.platform_tag}"
    here = _python_release(host.python_version).release[:2]
    wanted_release = here if wanted.python is None else wanted.python.release[:2]
    if wanted_release != here or free_threaded != host.free_threaded:
        return (
            f"the target's Python is {python_shown(wanted_release, free_threaded)},"
            f" this interpreter's {python_shown(here, host.free_threaded)}"
        )
    return None


def _host_glibc(wanted: TargetOverrides, host: HostProbe, platform: str) -> str | None:
    """The glibc ``detect`` shows beside the target's platform: this host's, unless the target
    is another platform (then the ``--runtime`` image's, else not known: None)."""
    if platform == host.platform_tag:
        return host.glibc
    glibc = wanted.runtime.glibc if wanted.runtime is not None else None
    return None if glibc is None else str(glibc)


def _glibc_of(wanted: TargetOverrides, host: HostProbe) -> Version | None:
    """The target's glibc: its runtime image's (``--runtime``); this host's where no flag
    describes another one (a Python, a driver, CUDA, a GPU or a TPU given); else not known."""
    if wanted.runtime is not None:
        return wanted.runtime.glibc
    described = (
        wanted.python,
        wanted.driver,
        wanted.cuda,
        wanted.tpu,
        wanted.installed_from,
        wanted.platform,
        wanted.rocm,
    )
    if any(value is not None for value in described) or wanted.compute_capabilities:
        return None
    found = re.match(r"([0-9]{1,3})\.([0-9]{1,3})", host.glibc or "")
    return Version(f"{found.group(1)}.{found.group(2)}") if found else None


def _free_threaded(wanted: TargetOverrides, host: HostProbe, interpreter: Interpreter | None) -> bool:
    """Whether the target's Python is free-threaded: ``--python 3.14t`` says so; else the host's
    interpreter's. A ``3.14t`` (or a plain ``3.14``) that contradicts the ``--interpreter`` read
    is an error."""
    if wanted.free_threaded is None:
        return host.free_threaded if wanted.python is None else False
    if interpreter is not None and wanted.free_threaded != interpreter.free_threaded:
        built = "is" if interpreter.free_threaded else "is not"
        own = python_shown(_python_release(interpreter.version).release, interpreter.free_threaded)
        given = python_shown(wanted.python.release, wanted.free_threaded) if wanted.python else "-"
        raise wanted.problem(
            "python",
            f"{given}:",
            f"the interpreter {interpreter.executable} {built} free-threaded (Py_GIL_DISABLED);"
            f" give its own version, {own}, or {wanted.taken_back('python')}",
        )
    return wanted.free_threaded


def _driver_table() -> Catalog:
    """The shipped driver table; :mod:`colabenv.catalog.load` is imported only when a driver's CUDA
    is looked up (``detect`` on a host without an NVIDIA driver reads no catalog file)."""
    from colabenv.catalog.load import shipped_driver_table

    return shipped_driver_table()


def shipped_tpu_facts() -> TpuFacts:
    """The shipped TPU facts (``tpu.toml``), :mod:`colabenv.catalog.load` imported only when a TPU
    is named or seen."""
    from colabenv.catalog.load import shipped_tpu

    return shipped_tpu()


def fingerprint_to_json(fingerprint: Fingerprint) -> dict[str, object]:
    """The ``detect --json`` object (docs/formats.md), plus the details ``diff`` compares."""
    target = fingerprint.target
    shown = shown_installed(target.installed)
    shown_names = {d.name for d in shown}
    return {
        "target": target.to_json(),
        "gpus": [
            {
                "name": gpu.name,
                "compute_capability": str(gpu.compute_capability),
                "memory_total_mib": gpu.memory_total_mib,
                "memory_free_mib": gpu.memory_free_mib,
            }
            for gpu in fingerprint.gpus
        ],
        "runtime": fingerprint.runtime.value,
        "installed": {d.name: d.version for d in shown},
        "packages": {d.name: d.version for d in target.installed.dists if d.name not in shown_names},
        "notes": list(fingerprint.notes),
        "python_implementation": fingerprint.python_implementation,
        "python_full": fingerprint.python_full,
        "glibc": fingerprint.glibc,
        "state_dir": None if fingerprint.state_dir is None else str(fingerprint.state_dir),
        **_amdgpu_driver(fingerprint),
    }


def _amdgpu_driver(fingerprint: Fingerprint) -> dict[str, object]:
    """``amdgpu_driver`` (its version, or null where it states none: the notes say why), only
    where the host's AMD GPUs were read, so that every other host reads as it always has."""
    reading = fingerprint.amdgpu_driver
    if reading is None:
        return {}
    return {"amdgpu_driver": None if reading.version is None else str(reading.version)}


# ---------------------------------------------------------------------------------------------
# What the installed frameworks were built for (pure: installed set + catalog)


def build_warnings(target: Target, catalog: Catalog | None) -> tuple[str, ...]:
    """Installed torch builds without kernels for a GPU here, CUDA majors the driver can't load."""
    warnings: list[str] = []
    if catalog is None:
        return ()
    torch = target.installed.get("torch")
    parsed = torch.parsed_version if torch is not None else None
    if torch is not None and parsed is not None and parsed.local:
        release = catalog.release(Framework.TORCH, Version(parsed.public))
        variant = None
        if release is not None:  # the build of this host's platform (cu130 on aarch64 is its own)
            seen = release.on_platform(target.platform)
            variant = next((v for v in seen.variants if v.local_tag == parsed.local), None)
        if variant is not None and variant.archs:
            for cap in target.compute_capabilities:
                if not archs_cover(variant.archs, cap):
                    warnings.append(f"torch {torch.version} has no kernels for {cap.sm}")
    if target.driver is not None:
        from colabenv.host.framework_builds import framework_builds

        for build in framework_builds(target.installed, catalog, platform=target.platform):
            if build.cuda is None:
                continue
            floor = catalog.floor_driver(build.cuda)
            if floor is not None and target.driver < floor:
                warnings.append(
                    f"{build.name} {build.version} is built for CUDA {build.cuda.major}, which"
                    f" needs driver >= {format_driver(floor)};"
                    f" this driver is {format_driver(target.driver)}"
                )
    return tuple(warnings)
