"""``colabenv init [-o FILE] [--name NAME]``: a starter profile from the detected runtime.

The frameworks the runtime has become ``==`` pins (with their companions), the Python its
``major.minor``; every section carries a comment saying what it is for. The text is validated
as a profile before it is written; an existing file is never overwritten.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from packaging.version import InvalidVersion, Version

from colabenv._commands._common import overrides_from_args, write_text_atomic
from colabenv.errors import ProfileError, UsageError
from colabenv.frameworks import FACTS
from colabenv.models import Fingerprint, Framework, InstalledSet, format_driver

_NAME_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")


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
        yield '# torch = { version = ">=2.8", torchvision = "*" }'
        yield '# jax = ">=0.7"'


def _describe(fingerprint: Fingerprint) -> str:
    target = fingerprint.target
    gpus = sorted({gpu.name for gpu in fingerprint.gpus})
    if target.has_gpu:
        driver = format_driver(target.driver) if target.driver else "unknown driver"
        where = f"{', '.join(gpus) or 'GPU'}, driver {driver}"
    else:
        where = "no GPU"
    text = f"captured from a {fingerprint.runtime} runtime (Python {target.python_minor}, {where})"
    return text[:200]


def starter_profile(fingerprint: Fingerprint, name: str) -> str:
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
        "# (\">=2.8,<2.11\") to let colabenv pick newer releases. colabenv chooses the CUDA build",
        "# (variant) for the GPU and driver; force one with variant = \"cu126\" or \"cpu\".",
        *_framework_lines(fingerprint),
        "",
        "[packages]",
        "# Everything else your code imports, as PEP 508 requirements (\"numpy>=1.26\").",
        "requirements = []",
        "",
        "[apt]",
        "# Debian packages installed before the pip step (\"libsndfile1\").",
        "packages = []",
        "",
        "[env]",
        "# Variables the restarted runtime must have, for example:",
        '# PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True"',
        '# XLA_PYTHON_CLIENT_PREALLOCATE = "false"',
        "",
        "[install]",
        "# \"auto\" uses uv when the runtime has it, else pip. Mirrors and extra indexes take",
        "# credentials only as ${VAR} references, e.g.",
        '# index_url = "https://${PYPI_USER}:${PYPI_TOKEN}@pypi.example.internal/simple"',
        'installer = "auto"',
        "",
        "[verify]",
        "# What `colabenv verify` checks after the restart: a smoke test per framework, and",
        "# whether a GPU must be visible.",
        f"smoke = [{smoke}]",
        f"require_gpu = {'true' if target.has_gpu else 'false'}",
        "",
    ]
    return "\n".join(lines)


def _validate(text: str, directory: Path) -> None:
    from colabenv.profile import load_profile

    fd, tmp_name = tempfile.mkstemp(prefix=".colabenv-init.", suffix=".toml", dir=directory)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        load_profile(tmp)
    except ProfileError as exc:
        raise UsageError(f"the starter profile would be invalid: {exc.problem}") from None
    finally:
        tmp.unlink(missing_ok=True)


def run(args: argparse.Namespace) -> int:
    from colabenv.detect import detect

    output = Path(args.output) if args.output else None
    if output is not None and (output.exists() or output.is_symlink()):
        raise UsageError(f"{output}: already exists; init never overwrites a file")
    fingerprint = detect(overrides_from_args(args))
    name = args.name or fingerprint.runtime.value
    if not _NAME_RE.fullmatch(name):
        raise UsageError(f"--name: {name!r} is not a profile name "
                         "(letters, digits, '.', '_', '-'; at most 64)")
    text = starter_profile(fingerprint, name)
    directory = output.parent if output is not None and str(output.parent) else Path(".")
    _validate(text, directory if output is not None else Path(tempfile.gettempdir()))
    if output is None:
        sys.stdout.write(text)
        return 0
    write_text_atomic(output, text, exclusive=True)
    sys.stderr.write(f"colabenv: wrote {output} ({name})\n")
    return 0
