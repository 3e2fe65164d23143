"""The restart marker: what the bootstrap script installed, written last and atomically.

The script writes ``<state dir>/restart-marker.json`` (schema 1)::

    {"schema": 1, "colabenv": "0.1.0", "profile": "pytorch", "profile_hash": "sha256:...",
     "written_at": 1763800000.25, "changed": true,
     "installed": ["torch==2.6.0+cu124", ...],      # what this run installed
     "requirements": ["torch==2.6.0+cu124", ...],   # everything the resolution asked for
     "frameworks": {"torch": {"version": "2.6.0", "variant": "cu124", ...}},
     "target": {...}, "env": {"NAME": "value"},
     "verify": {"smoke": ["torch"], "require_gpu": true, "min_free_vram_gib": null,
                "timeout_s": 120.0}}

``verify`` reads it back with :func:`read_marker`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from colabenv._model import model
from colabenv.errors import StateError
from colabenv.state import MARKER_NAME

MARKER_SCHEMA = 1


def marker_path(state_dir: Path) -> Path:
    return state_dir / MARKER_NAME


@model
class MarkerFramework:
    name: str
    version: str
    variant: str
    requirements: tuple[str, ...]


@model
class Marker:
    path: Path
    colabenv_version: str
    profile: str
    profile_hash: str
    written_at: float
    changed: bool
    installed: tuple[str, ...]
    requirements: tuple[str, ...]
    frameworks: tuple[MarkerFramework, ...]
    env: tuple[tuple[str, str], ...]
    smoke: tuple[str, ...]
    require_gpu: bool
    min_free_vram_gib: float | None
    timeout_s: float | None


def _field(data: dict[str, Any], key: str, kind: type | tuple[type, ...], path: Path) -> Any:
    value = data.get(key)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise StateError(f"{path}: {key}: missing or of the wrong type (corrupted marker)")
    return value


def _str_list(value: Any, key: str, path: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise StateError(f"{path}: {key}: expected a list of strings (corrupted marker)")
    return tuple(value)


def parse_marker(text: str, path: Path) -> Marker:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
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
            MarkerFramework(
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
    vram = verify_raw.get("min_free_vram_gib")
    timeout = verify_raw.get("timeout_s")
    return Marker(
        path=path,
        colabenv_version=str(_field(data, "colabenv", str, path)),
        profile=str(_field(data, "profile", str, path)),
        profile_hash=str(_field(data, "profile_hash", str, path)),
        written_at=float(_field(data, "written_at", (int, float), path)),
        changed=bool(_field(data, "changed", bool, path)),
        installed=_str_list(data.get("installed"), "installed", path),
        requirements=_str_list(data.get("requirements"), "requirements", path),
        frameworks=tuple(frameworks),
        env=tuple(sorted(env_raw.items())),
        smoke=_str_list(verify_raw.get("smoke", []), "verify.smoke", path),
        require_gpu=bool(verify_raw.get("require_gpu", False)),
        min_free_vram_gib=float(vram) if isinstance(vram, (int, float)) else None,
        timeout_s=float(timeout) if isinstance(timeout, (int, float)) else None,
    )


def read_marker(state_dir: Path) -> Marker | None:
    """The marker in ``state_dir``; None when there is none; StateError when it is corrupted."""
    path = marker_path(state_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise StateError(f"{path}: cannot read the restart marker: {exc}") from None
    return parse_marker(text, path)
