"""The restart marker: what the bootstrap script installed, written last and atomically.

The script writes ``<state dir>/restart-marker.json`` (schema 1)::

    {"schema": 1, "colabenv": "0.1.0", "profile": "pytorch", "profile_hash": "sha256:...",
     "written_at": 1763800000.25, "changed": true,
     "installed": ["torch==2.6.0+cu124", ...],      # what this run installed
     "requirements": ["torch==2.6.0+cu124", ...],   # everything the resolution asked for
     "frameworks": {"torch": {"version": "2.6.0", "variant": "cu124", ...}},
     "target": {...}, "env": {"NAME": "value"},
     "python": "/usr/bin/python3",                   # sys.executable of the target
     "verify": {"smoke": ["torch"], "require_gpu": true, "min_free_vram_gib": null,
                "timeout_s": 120.0}}

``verify`` reads it back with :func:`read_marker`: only a regular file, at most
:data:`MAX_MARKER_BYTES`, every number range-checked; anything else is a corrupted marker.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from colabenv._bounds import MAX_TIMEOUT_S, MAX_TIMESTAMP, MAX_VRAM_GIB, finite_number
from colabenv._files import FileProblem, read_limited
from colabenv._model import model
from colabenv.errors import StateError, printable
from colabenv.state import MARKER_NAME

MARKER_SCHEMA = 1
MAX_MARKER_BYTES = 16 * 1024 * 1024


def marker_path(state_dir: Path) -> Path:
    return state_dir / MARKER_NAME


@model
class RestartMarkerFramework:
    name: str
    version: str
    variant: str
    requirements: tuple[str, ...]


@model
class RestartMarker:
    path: Path
    colabenv_version: str
    profile: str
    profile_hash: str
    written_at: float
    changed: bool
    installed: tuple[str, ...]
    requirements: tuple[str, ...]
    frameworks: tuple[RestartMarkerFramework, ...]
    env: tuple[tuple[str, str], ...]
    smoke: tuple[str, ...]
    require_gpu: bool
    min_free_vram_gib: float | None
    timeout_s: float | None
    python: str | None = None
    """``sys.executable`` of the interpreter the script installed into (None in old markers)."""


def _field(data: dict[str, Any], key: str, kind: type | tuple[type, ...], path: Path) -> Any:
    value = data.get(key)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise StateError(f"{path}: {key}: missing or of the wrong type (corrupted marker)")
    return value


def _str_list(value: Any, key: str, path: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise StateError(f"{path}: {key}: expected a list of strings (corrupted marker)")
    return tuple(value)


def _number(data: dict[str, Any], key: str, low: float, high: float, where: str,
            *, optional: bool = False, above_low: bool = False) -> float | None:
    """A finite number in [low, high] (above ``low`` if asked); None when optional and absent."""
    value = data.get(key)
    if value is None and optional:
        return None
    number = finite_number(value)
    if number is None or number > high or number < low or (above_low and number == low):
        shown = printable(json.dumps(value))[:40]
        raise StateError(f"{where}: {key}: {shown} is not a number between {low:g} and {high:g}"
                         " (corrupted marker)")
    return number


def parse_marker(text: str, path: Path) -> RestartMarker:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise StateError(f"{path}: not valid JSON (corrupted or truncated marker): {exc}") from None
    if not isinstance(data, dict):
        raise StateError(f"{path}: expected a JSON object (corrupted marker)")
    if data.get("schema") != MARKER_SCHEMA:
        raise StateError(f"{path}: schema: expected {MARKER_SCHEMA}")
    frameworks_raw = _field(data, "frameworks", dict, path)
    frameworks = []
    for name, item in sorted(frameworks_raw.items()):
        if not isinstance(item, dict):
            raise StateError(f"{path}: frameworks.{name}: expected an object")
        frameworks.append(
            RestartMarkerFramework(
                name=name,
                version=str(_field(item, "version", str, path)),
                variant=str(_field(item, "variant", str, path)),
                requirements=_str_list(item.get("requirements", []), f"frameworks.{name}", path),
            )
        )
    env_raw = _field(data, "env", dict, path)
    if not all(isinstance(v, str) for v in env_raw.values()):
        raise StateError(f"{path}: env: expected string values")
    verify_raw = _field(data, "verify", dict, path)
    python = data.get("python")
    if python is not None and not isinstance(python, str):
        raise StateError(f"{path}: python: expected a string (corrupted marker)")
    require_gpu = verify_raw.get("require_gpu", False)
    if not isinstance(require_gpu, bool):
        raise StateError(f"{path}: verify.require_gpu: expected true or false (corrupted marker)")
    written_at = _number(data, "written_at", 0, MAX_TIMESTAMP, str(path))
    assert written_at is not None
    return RestartMarker(
        path=path,
        colabenv_version=str(_field(data, "colabenv", str, path)),
        profile=str(_field(data, "profile", str, path)),
        profile_hash=str(_field(data, "profile_hash", str, path)),
        written_at=written_at,
        changed=bool(_field(data, "changed", bool, path)),
        installed=_str_list(data.get("installed"), "installed", path),
        requirements=_str_list(data.get("requirements"), "requirements", path),
        frameworks=tuple(frameworks),
        env=tuple(sorted(env_raw.items())),
        smoke=_str_list(verify_raw.get("smoke", []), "verify.smoke", path),
        require_gpu=require_gpu,
        min_free_vram_gib=_number(verify_raw, "min_free_vram_gib", 0, MAX_VRAM_GIB,
                                  f"{path}: verify", optional=True),
        timeout_s=_number(verify_raw, "timeout_s", 0, MAX_TIMEOUT_S, f"{path}: verify",
                          optional=True, above_low=True),
        python=python,
    )


def read_marker(state_dir: Path) -> RestartMarker | None:
    """The marker in ``state_dir``; None when there is none; StateError when it is corrupted or
    is not a regular file (a FIFO or ``/dev/zero`` is refused at once, never read)."""
    path = marker_path(state_dir)
    try:
        data = read_limited(path, MAX_MARKER_BYTES)
    except FileProblem as problem:
        if not os.path.lexists(path):
            return None
        raise StateError(f"{printable(path)}: cannot read the restart marker: {problem}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StateError(f"{printable(path)}: not UTF-8 (corrupted marker): {exc}") from None
    return parse_marker(text, path)
