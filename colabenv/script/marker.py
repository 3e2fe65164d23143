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
                "timeout_s": 120.0,
                "io": [{"path": "/content/data", "min_read_mib_s": 200, "min_write_mib_s": null}],
                "io_size_mib": 256, "min_free_ram_gib": 8, "max_other_vram_share": 0.1},
     "reproducibility": {"seed": 1234, "deterministic": true}}

``verify`` reads it back with :func:`read_marker`: only a regular file, at most
:data:`MAX_MARKER_BYTES`, every field through :class:`colabenv._util.reader.Reader` (types checked,
numbers finite and in range); anything else is a corrupted marker. A key older colabenv
releases did not write (``python``, the checklist keys of ``verify``, ``reproducibility``)
takes its default.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from colabenv._util.bounds import (
    MAX_IO_PATHS,
    MAX_IO_SIZE_MIB,
    MAX_SEED,
    MAX_THROUGHPUT_MIB_S,
    MAX_TIMEOUT_S,
    MAX_TIMESTAMP,
    MAX_VRAM_GIB,
)
from colabenv._util.files import FileProblem, read_limited
from colabenv._util.reader import Reader, path_problem
from colabenv.errors import StateError, printable
from colabenv.models import IoCheck, Reproducibility, VerifySettings
from colabenv.models.frameworks import framework_of, ordered
from colabenv.models.frozen import model
from colabenv.script.state import MARKER_NAME

MARKER_SCHEMA = 1
MAX_MARKER_BYTES = 16 * 1024 * 1024

_DEFAULTS = VerifySettings()


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
    verify: VerifySettings
    """The ``verify`` table (:func:`verify_record` writes it): its ``smoke`` None where the table
    lists none, its keys older releases did not write at their defaults."""
    python: str | None = None
    """``sys.executable`` of the interpreter the script installed into (None in old markers)."""
    reproducibility: Reproducibility = Reproducibility()


def _reader(data: dict[str, object], path: Path) -> Reader:
    def fail(key: str | None, problem: str) -> StateError:
        where = f"{path}: {key}" if key else str(path)
        return StateError(f"{where}: {problem} (corrupted marker)")

    return Reader(data, fail)


def _strings(reader: Reader, name: str, *, required: bool = True) -> tuple[str, ...]:
    if required:
        reader.require(name)
    return tuple(reader.text_list(name))


def _optional_number(reader: Reader, name: str, high: float, *, above_zero: bool = False) -> float | None:
    if reader.data.get(name) is None:
        return None
    number = reader.number(name, low=0, high=high)
    if above_zero and number == 0:
        raise reader.fail(name, f"expected a number above 0 and at most {high:g}")
    return number


def _text_map(reader: Reader, name: str) -> tuple[tuple[str, str], ...]:
    reader.require(name)
    table = reader.table(name)
    if not all(isinstance(value, str) for value in table.values()):
        raise reader.fail(name, "expected string values")
    return tuple(sorted((str(key), str(value)) for key, value in table.items()))


def _frameworks(reader: Reader) -> tuple[RestartMarkerFramework, ...]:
    reader.require("frameworks")
    found = []
    for name, item in sorted(reader.table("frameworks").items()):
        key = f"frameworks.{printable(str(name))}"
        if not isinstance(item, dict):
            raise reader.fail(key, "expected an object")
        entry = reader.child(item, key)
        found.append(
            RestartMarkerFramework(
                name=str(name),
                version=entry.text("version"),
                variant=entry.text("variant"),
                requirements=tuple(entry.text_list("requirements")),
            )
        )
    return tuple(found)


def _io_checks(verify: Reader) -> tuple[IoCheck, ...]:
    if verify.data.get("io") is None:
        return ()
    tables = verify.tables("io")
    if len(tables) > MAX_IO_PATHS:
        raise verify.fail("io", f"more than {MAX_IO_PATHS} paths")
    checks = []
    for item in tables:
        where = item.text("path")
        problem = path_problem(where)
        if problem is not None:
            raise item.fail("path", problem)
        checks.append(
            IoCheck(
                where,
                _optional_number(item, "min_read_mib_s", MAX_THROUGHPUT_MIB_S),
                _optional_number(item, "min_write_mib_s", MAX_THROUGHPUT_MIB_S),
            )
        )
    return tuple(checks)


def _reproducibility(reader: Reader) -> Reproducibility:
    if reader.data.get("reproducibility") is None:
        return Reproducibility()
    table = reader.sub("reproducibility")
    seed = None
    if table.data.get("seed") is not None:
        seed = table.integer("seed", low=0, high=MAX_SEED)
    return Reproducibility(seed, table.flag("deterministic", False))


def verify_record(settings: VerifySettings) -> dict[str, object]:
    """``settings`` as the marker's ``verify`` table, which :func:`parse_marker` reads back (its
    ``smoke`` as listed: the script writes the smoke tests that run)."""
    return {
        "smoke": [f.value for f in settings.smoke or ()],
        "require_gpu": settings.require_gpu,
        "min_free_vram_gib": settings.min_free_vram_gib,
        "timeout_s": settings.timeout_s,
        "io": [
            {"path": c.path, "min_read_mib_s": c.min_read_mib_s, "min_write_mib_s": c.min_write_mib_s}
            for c in settings.io
        ],
        "io_size_mib": settings.io_size_mib,
        "min_free_ram_gib": settings.min_free_ram_gib,
        "max_other_vram_share": settings.max_other_vram_share,
    }


def _verify_settings(verify: Reader) -> VerifySettings:
    """The ``verify`` table :func:`verify_record` wrote: ``smoke`` None where it lists none (a
    name this release does not know left out), a key an older release did not write (or a
    ``timeout_s`` of null) at its default."""
    io_size = verify.integer("io_size_mib", low=1, high=MAX_IO_SIZE_MIB, default=_DEFAULTS.io_size_mib)
    share = _optional_number(verify, "max_other_vram_share", 1.0)
    smoke = _strings(verify, "smoke", required=False)
    timeout = _optional_number(verify, "timeout_s", MAX_TIMEOUT_S, above_zero=True)
    return VerifySettings(
        smoke=ordered(f for f in map(framework_of, smoke) if f is not None) if smoke else None,
        require_gpu=verify.flag("require_gpu", False),
        min_free_vram_gib=_optional_number(verify, "min_free_vram_gib", MAX_VRAM_GIB),
        timeout_s=_DEFAULTS.timeout_s if timeout is None else timeout,
        io=_io_checks(verify),
        io_size_mib=io_size,
        min_free_ram_gib=_optional_number(verify, "min_free_ram_gib", MAX_VRAM_GIB),
        max_other_vram_share=_DEFAULTS.max_other_vram_share if share is None else share,
    )


def parse_marker(text: str, path: Path) -> RestartMarker:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise StateError(f"{path}: not valid JSON (corrupted or truncated marker): {exc}") from None
    if not isinstance(data, dict):
        raise StateError(f"{path}: expected a JSON object (corrupted marker)")
    if data.get("schema") != MARKER_SCHEMA:
        raise StateError(f"{path}: schema: expected {MARKER_SCHEMA}")
    marker = _reader(data, path)
    marker.require("verify", "written_at", "changed")
    python = marker.opt_text("python") if marker.data.get("python") is not None else None
    verify = _verify_settings(marker.sub("verify"))
    return RestartMarker(
        path=path,
        colabenv_version=marker.text("colabenv"),
        profile=marker.text("profile"),
        profile_hash=marker.text("profile_hash"),
        written_at=marker.number("written_at", low=0, high=MAX_TIMESTAMP),
        changed=marker.flag("changed", False),
        installed=_strings(marker, "installed"),
        requirements=_strings(marker, "requirements"),
        frameworks=_frameworks(marker),
        env=_text_map(marker, "env"),
        verify=verify,
        python=python,
        reproducibility=_reproducibility(marker),
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
