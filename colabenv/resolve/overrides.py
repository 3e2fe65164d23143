"""Target overrides from flags and ``COLABENV_*`` variables, with the precedence written once.

Precedence: command-line flag, then environment variable, then the profile, then detection.
This module covers the first two; what it leaves unset is detected (``colabenv.host.detect``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from packaging.version import Version

from colabenv.errors import TargetError, printable
from colabenv.models import (
    PLATFORMS,
    PYTHON_FORMS,
    ROCM_FORMS,
    ColabRuntime,
    ComputeCapability,
    RocmTarget,
    RuntimeFacts,
    TargetOverrides,
    TpuFacts,
    TpuTarget,
    gfx_names,
    parse_cuda,
    parse_driver,
    parse_python,
    parse_rocm,
)
from colabenv.models.frozen import model
from colabenv.models.runtimes import LATEST
from colabenv.models.target import flag_or_key, given_problem, python_shown, taken_back

ENV_DRIVER = "COLABENV_DRIVER_VERSION"
ENV_CUDA = "COLABENV_CUDA_VERSION"
ENV_COMPUTE_CAPABILITY = "COLABENV_COMPUTE_CAPABILITY"
ENV_PYTHON = "COLABENV_PYTHON_VERSION"
ENV_TPU = "COLABENV_TPU"
ENV_PLATFORM = "COLABENV_PLATFORM"
ENV_ROCM = "COLABENV_ROCM_VERSION"
ENV_GFX = "COLABENV_GFX"


@model
class TargetFlags:
    """The raw target flags of render, resolve, lock and detect, as argparse gives them."""

    driver: str | None = None
    cuda: str | None = None
    compute_capability: Sequence[str] = ()
    python: str | None = None
    cpu: bool = False
    installed_from: str | None = None
    tpu: str | None = None
    runtime: str | None = None
    platform: str | None = None
    rocm: str | None = None
    gfx: Sequence[str] = ()


KEY_OF_VARIABLE = {
    ENV_DRIVER: "driver",
    ENV_CUDA: "cuda",
    ENV_COMPUTE_CAPABILITY: "compute_capability",
    ENV_PYTHON: "python",
    ENV_TPU: "tpu",
    ENV_PLATFORM: "platform",
    ENV_ROCM: "rocm",
    ENV_GFX: "gfx",
}
"""The target field each variable gives: a named target's key, and (:func:`flag_or_key`) the
flag the variable stands for."""
GPU_VARIABLES = (ENV_DRIVER, ENV_CUDA, ENV_COMPUTE_CAPABILITY)
ROCM_VARIABLES = (ENV_ROCM, ENV_GFX)


def _given(var: str, named: bool) -> str:
    """How the flag of ``var`` is named: itself (``--cuda``), or a named target's key (``cuda``)."""
    return flag_or_key(KEY_OF_VARIABLE[var], named)


def _pick(
    flag: str | None, environ: Mapping[str, str], var: str, named: bool = False
) -> tuple[str, str] | None:
    """The value and where it came from: the flag's own name (a named target's key), or the
    variable's."""
    if flag is not None and flag.strip():
        return flag.strip(), _given(var, named)
    value = environ.get(var, "").strip()
    if value:
        return value, var
    return None


def _parsed(
    picked: tuple[str, str] | None, parse: Callable[[str], Version | None], what: str, named: bool = False
) -> tuple[Version, str] | None:
    if picked is None:
        return None
    text, origin = picked
    version = parse(text)
    if version is None:
        raise given_problem(origin, None, f"{printable(text)[:60]!r} is not {what}", key=named)
    return version, origin


def _python(
    flags: TargetFlags, env: Mapping[str, str], runtime: ColabRuntime | None, named: bool
) -> tuple[tuple[Version, str] | None, bool | None]:
    """The target Python ``--python`` (or its variable) gives, with where it came from, and
    whether it is free-threaded (None: not given); :func:`parse_python`'s forms, no ``3.12t``.
    ``--runtime`` gives its own Python, which has the GIL (:func:`_runtime_python`)."""
    picked = _pick(flags.python, env, ENV_PYTHON, named)
    parsed = parse_python(picked[0]) if picked is not None else None
    if picked is not None and parsed is None:
        raise given_problem(
            picked[1], None, f"{printable(picked[0])[:60]!r} is not {PYTHON_FORMS}", key=named
        )
    python = (parsed[0], picked[1]) if parsed is not None and picked is not None else None
    free_threaded = parsed[1] if parsed is not None else None
    if runtime is not None:
        return _runtime_python(runtime, python, bool(free_threaded), named), None
    return python, free_threaded


def parse_gfx(items: Sequence[str], origin: str, named: bool = False) -> tuple[str, ...]:
    """AMD GPU architectures (``gfx942,gfx90a``), each once, in order; a malformed one is an
    error naming the accepted form."""
    try:
        return gfx_names(items)
    except ValueError as error:
        raise given_problem(origin, None, str(error), key=named) from None


def parse_platform(text: str, origin: str, named: bool = False) -> str:
    if text not in PLATFORMS:
        shown = f"{printable(text)[:40]!r} is not a platform ({' or '.join(PLATFORMS)})"
        raise given_problem(origin, None, shown, key=named)
    return text


def parse_capabilities(
    items: Sequence[str], origin: str, named: bool = False
) -> tuple[ComputeCapability, ...]:
    """Compute capabilities (``7.5,8.0`` items, comma lists allowed), each once, sorted; a
    TargetError naming ``origin`` for one that is none, an empty item too (``7.5,,``), as
    :func:`~colabenv.models.target.gfx_names` refuses an empty gfx."""
    caps: set[ComputeCapability] = set()
    for item in items:
        for part in item.split(","):
            if not part.strip():
                empty = "an empty item is not a compute capability like 7.5 (no empty item in a comma list)"
                raise given_problem(origin, None, empty, key=named)
            try:
                caps.add(ComputeCapability.parse(part))
            except ValueError as exc:
                raise given_problem(origin, None, printable(exc), key=named) from None
    return tuple(sorted(caps))


def resolve_overrides(
    flags: TargetFlags,
    environ: Mapping[str, str] | None = None,
    *,
    tpu_facts: Callable[[], TpuFacts],
    runtime_facts: Callable[[], RuntimeFacts] | None = None,
    named: bool = False,
) -> TargetOverrides:
    """The overrides the flags and ``COLABENV_*`` variables give, each value checked and named
    by where it came from. ``--cpu`` is a flag, so it beats the GPU variables (which it leaves
    out); beside a GPU flag it is an error. ``--tpu`` likewise (see :func:`_tpu`). ``named``:
    the flags are a profile's named target's keys, each named by its key (a problem is a
    TargetError carrying it), and ``environ`` is to be empty.

    ``tpu_facts``: loads the TPU generations a ``--tpu`` type is checked against (the caller's
    catalog: this module reads none); called only when a TPU type is named. ``runtime_facts``
    likewise loads the runtime versions ``--runtime`` names one of (see :func:`_runtime`)."""
    env = os.environ if environ is None else environ
    amd, env = _rocm(flags, env, named)
    tpu, env = _tpu(flags, env, tpu_facts, named)
    if flags.cpu:
        given = [
            flag
            for flag, value in (
                ("--driver", flags.driver),
                ("--cuda", flags.cuda),
                ("--compute-capability", flags.compute_capability),
            )
            if value
        ]
        if given:
            raise TargetError(f"--cpu cannot be combined with {' or '.join(given)}")
        env = {k: v for k, v in env.items() if k not in GPU_VARIABLES}
    driver = _parsed(
        _pick(flags.driver, env, ENV_DRIVER, named),
        parse_driver,
        "an NVIDIA driver version like 550.54.15 (a three-digit branch, then one or two numbers)",
        named,
    )
    cuda = _parsed(_pick(flags.cuda, env, ENV_CUDA, named), parse_cuda, "a CUDA version like 12.4", named)
    picked_platform = _pick(flags.platform, env, ENV_PLATFORM, named)
    platform = parse_platform(*picked_platform, named) if picked_platform is not None else None
    runtime = _runtime(flags, runtime_facts, named)
    python, free_threaded = _python(flags, env, runtime, named)
    origins = [
        (field, picked[1])
        for field, picked in (("driver", driver), ("cuda", cuda), ("python", python))
        if picked is not None
    ]
    if flags.compute_capability:
        caps = parse_capabilities(flags.compute_capability, _given(ENV_COMPUTE_CAPABILITY, named), named)
    else:
        raw = env.get(ENV_COMPUTE_CAPABILITY, "")
        caps = parse_capabilities([raw], ENV_COMPUTE_CAPABILITY) if raw.strip() else ()
        if caps:
            origins.append(("compute_capability", ENV_COMPUTE_CAPABILITY))
    installed_from = Path(flags.installed_from) if flags.installed_from else None
    if tpu is not None:
        origins.append(("tpu", tpu[1]))
    if amd is not None:
        origins.extend(amd[1])
    if picked_platform is not None:
        origins.append(("platform", picked_platform[1]))
    return TargetOverrides(
        driver=driver[0] if driver else None,
        cuda=cuda[0] if cuda else None,
        compute_capabilities=caps,
        python=python[0] if python else None,
        cpu=flags.cpu,
        installed_from=installed_from,
        origins=tuple(origins),
        tpu=tpu[0] if tpu is not None else None,
        runtime=runtime,
        platform=platform,
        rocm=amd[0] if amd is not None else None,
        free_threaded=free_threaded,
        named=named,
    )


def _rocm(
    flags: TargetFlags, env: Mapping[str, str], named: bool
) -> tuple[tuple[RocmTarget, list[tuple[str, str]]] | None, Mapping[str, str]]:
    """The AMD GPUs ``--rocm`` and ``--gfx`` (or their variables) describe, with where each came
    from, and the environment the other values are read from. Beside ``--cpu``, ``--tpu`` or an
    NVIDIA flag they are an error; a ROCm flag leaves the NVIDIA and TPU variables out (a flag
    beats a variable); the ROCm variables beside the NVIDIA or TPU ones are an error."""
    given = [flag for flag, value in (("--rocm", flags.rocm), ("--gfx", flags.gfx)) if value]
    if given:
        other = [*_nvidia_flags(flags), *(["--tpu"] if flags.tpu else [])]
        if other:
            raise TargetError(
                f"{' and '.join(given)} cannot be combined with {' or '.join(other)}: they describe"
                " another target than AMD GPUs"
            )
        env = {k: v for k, v in env.items() if k not in (*GPU_VARIABLES, ENV_TPU)}
    elif _nvidia_flags(flags) or flags.tpu:
        return None, {k: v for k, v in env.items() if k not in ROCM_VARIABLES}
    set_here = [name for name in ROCM_VARIABLES if env.get(name, "").strip()]
    if not given and set_here:
        others = [name for name in (*GPU_VARIABLES, ENV_TPU) if env.get(name, "").strip()]
        if others:
            raise TargetError(
                f"{' and '.join(set_here)} and {' and '.join(others)} are both set: they describe"
                " different accelerators; unset one of them"
            )
    rocm = _parsed(_pick(flags.rocm, env, ENV_ROCM, named), parse_rocm, ROCM_FORMS, named)
    gfx_origin = _given(ENV_GFX, named) if flags.gfx else ENV_GFX
    variable = env.get(ENV_GFX, "")
    gfx = parse_gfx(flags.gfx or ([variable] if variable.strip() else []), gfx_origin, named)
    if rocm is None and not gfx:
        return None, env
    origins = [("rocm", rocm[1])] if rocm is not None else []
    if gfx:
        origins.append(("gfx", gfx_origin))
    return (RocmTarget(rocm[0] if rocm else None, gfx), origins), env


def _runtime(
    flags: TargetFlags, facts: Callable[[], RuntimeFacts] | None, named: bool
) -> ColabRuntime | None:
    """The runtime version ``--runtime`` names: it gives the target's Python and what is
    installed (its image for the target's accelerator), so beside ``--installed-from`` it is an
    error; an id the facts lack is an error listing the known ones."""
    text = flags.runtime.strip() if flags.runtime is not None else ""
    if not text:
        return None
    if flags.installed_from:
        raise TargetError(
            "--runtime cannot be combined with --installed-from: the runtime version already"
            " says what is installed; give one of them"
        )
    known = facts() if facts is not None else RuntimeFacts()
    runtime = known.get(text)
    if runtime is None:
        listed = ", ".join(dict.fromkeys((*known.ids, LATEST))) if known.ids else "none"
        shown = f"{printable(text)[:60]!r} is not a known Colab runtime version (known: {listed})"
        raise given_problem(flag_or_key("runtime", named), None, shown, key=named)
    return runtime


def _runtime_python(
    runtime: ColabRuntime, python: tuple[Version, str] | None, free_threaded: bool, named: bool
) -> tuple[Version, str]:
    """The runtime's Python (its full version, with the GIL: Colab's images are no free-threaded
    builds). ``--python`` (a named target's ``python``) naming another X.Y, or a free-threaded
    one, is an error, named as it was given; ``COLABENV_PYTHON_VERSION`` is a variable, so the
    flag ``--runtime`` beats it."""
    by = flag_or_key("runtime", named)
    if python is not None and python[1] != ENV_PYTHON:
        given, wanted, origin = python[0], runtime.python, python[1]
        shown = python_shown(given.release, free_threaded)
        back = taken_back(origin, key=named)
        if (given.major, given.minor) != (wanted.major, wanted.minor) or (
            len(given.release) > 2 and given != wanted
        ):
            detail = f"contradicts {by} {runtime.id}, whose Python is {wanted}; {back}"
            raise given_problem(origin, shown, detail, key=named)
        if free_threaded:
            detail = (
                f"contradicts {by} {runtime.id}, whose Python {wanted} is not free-threaded (it has"
                f" the GIL); {back}"
            )
            raise given_problem(origin, shown, detail, key=named)
    return runtime.python, by


def _nvidia_flags(flags: TargetFlags) -> list[str]:
    return [
        flag
        for flag, value in (
            ("--cpu", flags.cpu),
            ("--driver", flags.driver),
            ("--cuda", flags.cuda),
            ("--compute-capability", flags.compute_capability),
        )
        if value
    ]


def _tpu(
    flags: TargetFlags, env: Mapping[str, str], facts: Callable[[], TpuFacts], named: bool
) -> tuple[tuple[TpuTarget, str] | None, Mapping[str, str]]:
    """The TPU target ``--tpu`` or ``COLABENV_TPU`` names, with where it came from, and the
    environment the other target values are read from. ``--tpu`` beside ``--cpu`` or an
    NVIDIA flag is an error; ``--tpu`` leaves the NVIDIA variables out (a flag beats a
    variable), and so does an NVIDIA flag or ``--cpu`` with ``COLABENV_TPU``. The variable beside
    an NVIDIA variable is an error: neither is a flag, so neither wins."""
    given = _nvidia_flags(flags)
    flag = (flags.tpu or "").strip()
    if flag:
        if given:
            raise TargetError(
                f"--tpu cannot be combined with {' or '.join(given)}: they"
                " describe another target than a TPU host"
            )
        picked = (flag, _given(ENV_TPU, named))
        env = {k: v for k, v in env.items() if k not in GPU_VARIABLES}
    elif given or not env.get(ENV_TPU, "").strip():
        return None, env
    else:
        gpu = [name for name in GPU_VARIABLES if env.get(name, "").strip()]
        if gpu:
            raise TargetError(
                f"{ENV_TPU} and {' and '.join(gpu)} are both set: one target is"
                " a TPU host, the other an NVIDIA one; unset one of them"
            )
        picked = (env[ENV_TPU].strip(), ENV_TPU)
    from colabenv.catalog.tpu import parse_accelerator_type

    try:
        return (parse_accelerator_type(picked[0], facts()), picked[1]), env
    except ValueError as error:
        raise given_problem(picked[1], None, str(error), key=named) from None
