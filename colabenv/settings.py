"""Target overrides from flags and ``COLABENV_*`` variables, with the precedence written once.

Precedence: command-line flag, then environment variable, then the profile, then detection.
This module covers the first two; what it leaves unset is detected (``colabenv.detect``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from packaging.version import InvalidVersion, Version

from colabenv._model import model
from colabenv.errors import TargetError
from colabenv.models import ComputeCapability, TargetOverrides

ENV_DRIVER = "COLABENV_DRIVER_VERSION"
ENV_CUDA = "COLABENV_CUDA_VERSION"
ENV_COMPUTE_CAPABILITY = "COLABENV_COMPUTE_CAPABILITY"
ENV_PYTHON = "COLABENV_PYTHON_VERSION"
ENV_CACHE_DIR = "COLABENV_CACHE_DIR"


@model
class TargetFlags:
    """The raw target flags of render, resolve, lock and detect, as argparse gives them."""

    driver: str | None = None
    cuda: str | None = None
    compute_capability: Sequence[str] = ()
    python: str | None = None
    cpu: bool = False
    installed_from: str | None = None


FLAG_OF_VARIABLE = {
    ENV_DRIVER: "--driver",
    ENV_CUDA: "--cuda",
    ENV_COMPUTE_CAPABILITY: "--compute-capability",
    ENV_PYTHON: "--python",
}


def _pick(flag: str | None, environ: Mapping[str, str], var: str) -> tuple[str, str] | None:
    """The value and where it came from: the flag's own name, or the variable's."""
    if flag is not None and flag.strip():
        return flag.strip(), FLAG_OF_VARIABLE[var]
    value = environ.get(var, "").strip()
    if value:
        return value, var
    return None


def _version(picked: tuple[str, str] | None, what: str) -> Version | None:
    if picked is None:
        return None
    text, origin = picked
    try:
        return Version(text)
    except InvalidVersion:
        raise TargetError(f"{origin}: {text!r} is not a {what}") from None


def parse_capabilities(items: Sequence[str], origin: str) -> tuple[ComputeCapability, ...]:
    caps: set[ComputeCapability] = set()
    for item in items:
        for part in item.split(","):
            if not part.strip():
                continue
            try:
                caps.add(ComputeCapability.parse(part))
            except ValueError as exc:
                raise TargetError(f"{origin}: {exc}") from None
    return tuple(sorted(caps))


def resolve_overrides(
    flags: TargetFlags, environ: Mapping[str, str] | None = None
) -> TargetOverrides:
    env = os.environ if environ is None else environ
    driver = _version(_pick(flags.driver, env, ENV_DRIVER), "driver version like 550.54.15")
    cuda = _version(_pick(flags.cuda, env, ENV_CUDA), "CUDA version like 12.4")
    if flags.compute_capability:
        caps = parse_capabilities(flags.compute_capability, "--compute-capability")
    else:
        raw = env.get(ENV_COMPUTE_CAPABILITY, "")
        caps = parse_capabilities([raw], ENV_COMPUTE_CAPABILITY) if raw.strip() else ()
    python = _version(_pick(flags.python, env, ENV_PYTHON), "Python version like 3.12")
    if python is not None and len(python.release) < 2:
        raise TargetError(f"--python: {flags.python or env.get(ENV_PYTHON)!r} needs major.minor")
    if flags.cpu and (driver is not None or cuda is not None or caps):
        raise TargetError("--cpu cannot be combined with --driver, --cuda or --compute-capability")
    installed_from = Path(flags.installed_from) if flags.installed_from else None
    return TargetOverrides(
        driver=driver,
        cuda=cuda,
        compute_capabilities=caps,
        python=python,
        cpu=flags.cpu,
        installed_from=installed_from,
    )


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``COLABENV_CACHE_DIR``, else ``$XDG_CACHE_HOME/colabenv`` (``~/.cache/colabenv``): where
    derived data that can be rebuilt at any time is kept (see :mod:`colabenv._cache`)."""
    env = os.environ if environ is None else environ
    explicit = env.get(ENV_CACHE_DIR, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    return _user_cache(env)


def _user_cache(env: Mapping[str, str]) -> Path:
    cache = env.get("XDG_CACHE_HOME", "").strip()
    base = Path(cache).expanduser() if cache else Path.home() / ".cache"
    return base / "colabenv"
