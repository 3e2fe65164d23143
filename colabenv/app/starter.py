"""A starter profile of the Python it runs in (``colabenv init``).

The frameworks installed there become ``==`` pins (with their companions), the Python its
``major.minor``; the other distributions installed there that nothing else installed depends on
(the ones a user asked for) become ``[packages]`` requirements, less what the runtime image
ships (its ``pip freeze``). Every section carries a comment saying what it is for, and the text
is validated as a profile.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from colabenv.accelerators.registry import accelerator_of
from colabenv.errors import ProfileError, UsageError, printable
from colabenv.models import Fingerprint, Framework, InstalledSet, TargetOverrides, format_driver
from colabenv.models.frameworks import FACTS, OWNED
from colabenv.models.frozen import model

_NAME_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")
TOOLING = frozenset({"pip", "setuptools", "wheel", "colabenv"})
"""Installed everywhere, or colabenv itself: never a requirement of a user's project."""


@model
class Package:
    """A distribution installed here that nothing else installed depends on."""

    name: str
    version: str
    direct: bool
    """Installed from a URL or a local path (PEP 610 ``direct_url.json``): no index serves it."""


def top_level_packages() -> tuple[Package, ...]:
    """The distributions on ``sys.path`` (first of each name) that no other one requires, not
    counting requirements behind an extra or a marker false here."""
    from importlib.metadata import distributions

    found: dict[str, Package] = {}
    required: set[str] = set()
    for dist in distributions():
        name = dist.metadata["Name"]
        version = dist.metadata["Version"]
        if not name or not version:
            continue
        key = canonicalize_name(name)
        if key in found:
            continue
        found[key] = Package(key, version, dist.read_text("direct_url.json") is not None)
        required.update(_requirement_names(dist.requires or ()))
    return tuple(p for key, p in sorted(found.items()) if key not in required)


def _requirement_names(lines: Iterable[str]) -> Iterator[str]:
    for line in lines:
        try:
            requirement = Requirement(line)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
        except (InvalidRequirement, InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
            continue
        yield canonicalize_name(requirement.name)


def user_packages(packages: Iterable[Package], image: InstalledSet | None) -> tuple[Package, ...]:
    """``packages`` less colabenv's own choices (frameworks, their companions and CUDA wheels),
    tooling, and what the runtime image ships at the same version."""
    from colabenv.host.detect import is_cuda_wheel

    kept = []
    for package in packages:
        if package.name in OWNED or package.name in TOOLING or is_cuda_wheel(package.name):
            continue
        shipped = image.get(package.name) if image is not None else None
        if shipped is not None and _same_version(shipped.version, package.version):
            continue
        kept.append(package)
    return tuple(kept)


def _same_version(a: str, b: str) -> bool:
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def _toml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=True).replace("\x7f", "\\u007f")


def _public(installed: InstalledSet, name: str) -> str | None:
    dist = installed.get(name)
    if dist is None:
        return None
    try:
        return Version(dist.version).public
    except InvalidVersion:
        return None


def _framework_lines(fingerprint: Fingerprint) -> Iterator[str]:
    installed = fingerprint.target.installed
    found = False
    for framework in Framework:
        version = _public(installed, framework.value)
        if version is None:
            continue
        found = True
        dist = installed.get(framework.value)
        build = dist.version if dist is not None else version
        companions = [(name, _public(installed, name)) for name in FACTS[framework].companions]
        present = [(name, v) for name, v in companions if v is not None]
        yield f"# {framework} {build} is installed in this runtime."
        if present:
            parts = [f"version = {_toml_str('==' + version)}"]
            parts.extend(f"{name} = {_toml_str('==' + v)}" for name, v in present)
            yield f"{framework} = {{ {', '.join(parts)} }}"
        else:
            yield f"{framework} = {_toml_str('==' + version)}"
    if not found:
        yield "# No framework was found in this runtime. For example:"
        yield f'# torch = {{ version = ">=2.8", {FACTS[Framework.TORCH].companions[0]} = "*" }}'
        yield '# jax = ">=0.7"'


def _describe(fingerprint: Fingerprint) -> str:
    target = fingerprint.target
    gpus = sorted({gpu.name for gpu in fingerprint.gpus})
    if accelerator_of(target).traits.gpu:
        driver = format_driver(target.driver) if target.driver else "unknown driver"
        where = f"{', '.join(gpus) or 'GPU'}, driver {driver}"
    else:
        where = "no GPU"
    text = f"captured from a {fingerprint.runtime} runtime (Python {target.python_shown}, {where})"
    return printable(text)[:200]


def _package_lines(packages: tuple[Package, ...], image: Path | None) -> Iterator[str]:
    if image is not None:
        yield f"# What is installed here that nothing else needs, less what {_comment(image.name)}"
        yield "# lists (the runtime image); loosen the pins you do not need exactly."
    elif packages:
        yield "# What is installed here that nothing else needs; loosen the pins you do not need."
    pinned = [p for p in packages if not p.direct and _public_or_none(p.version) is not None]
    if pinned:
        yield "requirements = ["
        yield from (f"    {_toml_str(p.name + '==' + p.version)}," for p in pinned)
        yield "]"
    else:
        yield "requirements = []"
    for package in packages:
        if package not in pinned:
            yield (
                f"# {package.name} {_comment(package.version)}: installed from a URL or a"
                " local path, or not a PEP 440 version; add it by hand."
            )


def _comment(text: str) -> str:
    return printable(text)[:80]


def _public_or_none(version: str) -> str | None:
    try:
        return Version(version).public
    except InvalidVersion:
        return None


def starter_profile(
    fingerprint: Fingerprint,
    name: str,
    packages: tuple[Package, ...] = (),
    image: Path | None = None,
) -> str:
    target = fingerprint.target
    frameworks = [f for f in Framework if target.installed.get(f.value) is not None]
    smoke = ", ".join(_toml_str(f.value) for f in frameworks)
    lines = [
        "# A starter profile, written by `colabenv init` from the runtime it ran on.",
        "# Check it with `colabenv profiles check FILE`; see which wheels it picks with",
        "# `colabenv resolve FILE`; lock it with `colabenv lock FILE -o FILE.lock`.",
        "",
        "# Profile format version.",
        "schema = 1",
        "# Letters, digits, '.', '_' and '-'; shows up in locks and the restart marker.",
        f"name = {_toml_str(name)}",
        f"description = {_toml_str(_describe(fingerprint))}",
        "",
        "# The Python the runtime must have (colabenv never installs Python).",
        f"python = {_toml_str('==' + target.python_minor + '.*')}",
        "",
        "[frameworks]",
        "# Exact versions of what this runtime has, so the profile reproduces it. Widen them",
        '# (">=2.8,<2.11") to let colabenv pick newer releases. colabenv chooses the CUDA build',
        '# (variant) for the GPU and driver; force one with variant = "cu126" or "cpu".',
        *_framework_lines(fingerprint),
        "",
        "[packages]",
        '# Everything else your code imports, as PEP 508 requirements ("numpy>=1.26").',
        *_package_lines(packages, image),
        "",
        "[apt]",
        '# Debian packages installed before the pip step ("libsndfile1").',
        "packages = []",
        "",
        "[env]",
        "# Variables the restarted runtime must have, for example:",
        '# PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True"',
        '# XLA_PYTHON_CLIENT_PREALLOCATE = "false"',
        "",
        "[install]",
        '# "auto" uses uv when the runtime has it, else pip. Mirrors and extra indexes take',
        "# credentials only as ${VAR} references, e.g.",
        '# index_url = "https://${PYPI_USER}:${PYPI_TOKEN}@pypi.example.internal/simple"',
        'installer = "auto"',
        "",
        "[verify]",
        "# What `colabenv verify` checks after the restart: a smoke test per framework, and",
        "# whether a GPU must be visible.",
        f"smoke = [{smoke}]",
        f"require_gpu = {'true' if accelerator_of(target).traits.gpu else 'false'}",
        "",
    ]
    return "\n".join(lines)


def _validate(text: str, path: Path) -> None:
    """The starter profile is read back as a profile; one that is not valid is colabenv's bug."""
    from colabenv.profile.load import load_profile_text

    try:
        load_profile_text(text, path)
    except ProfileError as exc:
        raise RuntimeError(f"colabenv init wrote an invalid profile: {exc}") from exc


@model
class Starter:
    """A starter profile's text, and what went into it."""

    text: str
    name: str
    packages: tuple[Package, ...]
    image: Path | None
    """The runtime image's ``pip freeze`` whose distributions were left out."""


def make_starter(overrides: TargetOverrides, name: str | None, where: Path) -> Starter:
    """The starter profile of this host (the overrides over it), named ``name`` (by default
    the runtime kind), validated as a profile read from ``where``."""
    from colabenv.host.detect import detect, read_freeze

    image_path = overrides.installed_from
    # the frameworks installed here, whatever Python or platform the flags name
    fingerprint = detect(dataclasses.replace(overrides, installed_from=None), own_installed=True)
    name = name or fingerprint.runtime.value
    if not _NAME_RE.fullmatch(name):
        raise UsageError(
            f"--name: {printable(name)!r} is not a profile name (letters, digits, '.', '_', '-'; at most 64)"
        )
    image = read_freeze(image_path) if image_path is not None else None
    packages = user_packages(top_level_packages(), image)
    text = starter_profile(fingerprint, name, packages, image_path)
    _validate(text, where)
    return Starter(text, name, packages, image_path)
