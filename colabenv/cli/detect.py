"""``colabenv detect [--json]``: what this host is, for people or for machines (JSON).

For a terminal, tables; for a pipe or a file, plain lines (one per fact, full width). Every value
comes from the host (a GPU name, a path, a freeze file) and is shown as text, never as rich
markup, with control characters escaped.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from colabenv.cli.common import stdout_is_terminal, target_flags
from colabenv.errors import printable
from colabenv.models import Catalog, Fingerprint, Target, format_driver
from colabenv.models.frozen import model

if TYPE_CHECKING:
    from colabenv.accelerators.base import AcceleratorKind


@model
class Report:
    """What ``detect`` shows people, in rows of text."""

    host: tuple[tuple[str, str], ...]
    gpus: tuple[tuple[str, str, str, str, str], ...]
    frameworks: tuple[tuple[str, str, str], ...]
    also_installed: str
    warnings: tuple[str, ...]
    notes: tuple[str, ...]


def run(args: argparse.Namespace) -> int:
    from colabenv.app.resolution import host_fingerprint
    from colabenv.host.detect import fingerprint_to_json
    from colabenv.host.interpreter import probe_interpreter

    python = probe_interpreter(args.interpreter) if args.interpreter else None
    fingerprint = host_fingerprint(target_flags(args), interpreter=python, cross_check=True)
    if args.json:
        sys.stdout.write(json.dumps(fingerprint_to_json(fingerprint), indent=2) + "\n")
        return 0
    report = _report(fingerprint)
    if stdout_is_terminal():
        _tables(report)
    else:
        _plain(report)
    return 0


def _catalog_or_none(notes: list[str]) -> Catalog | None:
    from colabenv.app.resolution import load_catalog
    from colabenv.errors import CatalogError, CatalogOverlayError

    try:
        return load_catalog(None)
    except (CatalogError, CatalogOverlayError) as error:
        notes.append(f"catalog unavailable, no build warnings: {error}")
        return None


def _report(fingerprint: Fingerprint) -> Report:
    from colabenv.host.detect import build_warnings, shown_installed
    from colabenv.host.framework_builds import framework_builds

    notes = list(fingerprint.notes)
    catalog = _catalog_or_none(notes)
    notes.extend(_home_notes())
    target = fingerprint.target
    kind = _kind(target)
    glibc = f", glibc {fingerprint.glibc}" if fingerprint.glibc else ""
    if fingerprint.glibc is None and fingerprint.read_platform not in (None, target.platform):
        glibc = ", glibc: not known (another platform)"
    host = (
        ("driver", format_driver(target.driver) if target.driver else "none (no NVIDIA GPU)"),
        ("max CUDA", str(target.cuda) if target.cuda else "-"),
        ("compute capabilities", ", ".join(str(c) for c in target.compute_capabilities) or "-"),
        ("accelerator", kind.shown(target)),
        *_amdgpu_row(fingerprint),
        (
            "Python",
            f"{fingerprint.python_full} ({fingerprint.python_implementation}), target {target.python_shown}",
        ),
        ("platform", target.platform + glibc),
        ("runtime", fingerprint.runtime.value),
        ("state dir", "-" if fingerprint.state_dir is None else str(fingerprint.state_dir)),
    )
    gpus = tuple(
        (
            str(index),
            gpu.name,
            f"{gpu.compute_capability} ({gpu.compute_capability.sm})",
            _mib(gpu.memory_total_mib),
            _mib(gpu.memory_free_mib),
        )
        for index, gpu in enumerate(fingerprint.gpus)
    )
    builds = framework_builds(target.installed, catalog, platform=target.platform)
    names = {b.name for b in builds}
    wheels = [d for d in shown_installed(target.installed) if d.name not in names]
    return Report(
        host=host,
        gpus=gpus,
        frameworks=tuple(
            (b.name, b.version, kind.installed_build(target, b.framework) or b.build) for b in builds
        ),
        also_installed=", ".join(f"{d.name} {d.version}" for d in wheels),
        warnings=build_warnings(target, catalog),
        notes=tuple(notes),
    )


def _amdgpu_row(fingerprint: Fingerprint) -> tuple[tuple[str, str], ...]:
    """The amdgpu driver's row where the host's AMD GPUs were read (its reason is a note)."""
    reading = fingerprint.amdgpu_driver
    if reading is None:
        return ()
    return (("amdgpu driver", "not known" if reading.version is None else str(reading.version)),)


def _kind(target: Target) -> AcceleratorKind:
    """The target's kind, which names its device and the builds of its own runtime (the kinds
    import the requirement grammar, which ``detect --json`` does without)."""
    from colabenv.accelerators.registry import accelerator_of

    return accelerator_of(target)


def _plain(report: Report) -> None:
    lines = [f"{what}: {value}" for what, value in report.host]
    lines.extend(
        f"gpu {index}: {name}, {capability}, {total} total, {free} free"
        for index, name, capability, total, free in report.gpus
    )
    lines.extend(
        f"framework: {name} {version}, built for {build}" for name, version, build in report.frameworks
    )
    if report.also_installed:
        lines.append(f"also installed: {report.also_installed}")
    lines.extend(f"warning: {warning}" for warning in report.warnings)
    lines.extend(f"note: {note}" for note in report.notes)
    sys.stdout.write("".join(printable(line) + "\n" for line in lines))


def _tables(report: Report) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    def text(value: str) -> Text:
        return Text(printable(value))

    console = Console()
    host = Table(title="colabenv detect", show_header=False, title_justify="left")
    host.add_column("what", style="bold")
    host.add_column("value")
    for what, value in report.host:
        host.add_row(what, text(value))
    console.print(host)
    if report.gpus:
        gpus = Table(title="GPUs", title_justify="left")
        for column in ("#", "name", "capability", "memory total", "memory free"):
            gpus.add_column(column)
        for gpu in report.gpus:
            gpus.add_row(*(text(cell) for cell in gpu))
        console.print(gpus)
    if report.frameworks:
        frameworks = Table(title="frameworks", title_justify="left")
        for column in ("name", "version", "built for"):
            frameworks.add_column(column)
        for build in report.frameworks:
            frameworks.add_row(*(text(cell) for cell in build))
        console.print(frameworks)
    if report.also_installed:
        console.print(Text.assemble(("also installed: ", "bold"), text(report.also_installed)))
    for warning in report.warnings:
        console.print(Text.assemble(("warning: ", "bold yellow"), text(warning)))
    for note in report.notes:
        console.print(Text.assemble(("note: ", "dim"), text(note)))


def _home_notes() -> list[str]:
    from colabenv._util.cache import cache_dir

    try:
        cache_dir()
    except RuntimeError:
        return [
            "no home directory (HOME is unset and this user is not in the password"
            " database): the parse cache is off; set HOME or COLABENV_CACHE_DIR"
        ]
    return []


def _mib(value: int | None) -> str:
    return f"{value} MiB" if value is not None else "-"
