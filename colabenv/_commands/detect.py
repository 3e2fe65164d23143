"""``colabenv detect [--json]``: what this host is, for people (a table) or machines (JSON)."""

from __future__ import annotations

import argparse
import json
import sys

from colabenv._commands._common import overrides_from_args
from colabenv.models import Catalog, Fingerprint, format_driver


def run(args: argparse.Namespace) -> int:
    from colabenv._host_python import probe_interpreter
    from colabenv.detect import detect, fingerprint_to_json

    python = probe_interpreter(args.interpreter) if args.interpreter else None
    fingerprint = detect(overrides_from_args(args), interpreter=python)
    if args.json:
        sys.stdout.write(json.dumps(fingerprint_to_json(fingerprint), indent=2) + "\n")
        return 0
    _print_table(fingerprint)
    return 0


def _catalog_or_none(notes: list[str]) -> Catalog | None:
    from colabenv.catalog import shipped_catalog
    from colabenv.errors import CatalogError

    try:
        return shipped_catalog()
    except CatalogError as error:
        notes.append(f"catalog unavailable, no build warnings: {error}")
        return None


def _print_table(fingerprint: Fingerprint) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from colabenv.detect import build_warnings, framework_builds, shown_installed

    notes = list(fingerprint.notes)
    catalog = _catalog_or_none(notes)
    target = fingerprint.target
    console = Console()

    host = Table(title="colabenv detect", show_header=False, title_justify="left")
    host.add_column("what", style="bold")
    host.add_column("value")
    driver = format_driver(target.driver) if target.driver else "none (no NVIDIA GPU)"
    host.add_row("driver", driver)
    host.add_row("max CUDA", str(target.cuda) if target.cuda else "-")
    caps = ", ".join(str(c) for c in target.compute_capabilities)
    host.add_row("compute capabilities", caps or "-")
    host.add_row(
        "Python",
        f"{fingerprint.python_full} ({fingerprint.python_implementation})"
        f", target {target.python_minor}",
    )
    glibc = f", glibc {fingerprint.glibc}" if fingerprint.glibc else ""
    host.add_row("platform", target.platform + glibc)
    host.add_row("runtime", fingerprint.runtime.value)
    host.add_row("state dir", str(fingerprint.state_dir))
    console.print(host)

    if fingerprint.gpus:
        gpus = Table(title="GPUs", title_justify="left")
        for column in ("#", "name", "capability", "memory total", "memory free"):
            gpus.add_column(column)
        for index, gpu in enumerate(fingerprint.gpus):
            gpus.add_row(
                str(index),
                gpu.name,
                f"{gpu.compute_capability} ({gpu.compute_capability.sm})",
                _mib(gpu.memory_total_mib),
                _mib(gpu.memory_free_mib),
            )
        console.print(gpus)

    builds = framework_builds(target.installed, catalog)
    if builds:
        frameworks = Table(title="frameworks", title_justify="left")
        for column in ("name", "version", "built for"):
            frameworks.add_column(column)
        for build in builds:
            frameworks.add_row(build.name, build.version, build.build)
        console.print(frameworks)
    build_names = {b.name for b in builds}
    wheels = [d for d in shown_installed(target.installed) if d.name not in build_names]
    if wheels:
        listing = ", ".join(f"{d.name} {d.version}" for d in wheels)
        console.print(Text.assemble(("also installed: ", "bold"), listing))

    for warning in build_warnings(target, catalog):
        console.print(Text.assemble(("warning: ", "bold yellow"), warning))
    for note in notes:
        console.print(Text.assemble(("note: ", "dim"), note))


def _mib(value: int | None) -> str:
    return f"{value} MiB" if value is not None else "-"
