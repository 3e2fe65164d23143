"""``colabenv resolve PROFILE [--json]``: the resolution and why each choice was made."""

from __future__ import annotations

import argparse
import json
import sys

from colabenv._commands._common import load_profile_arg, target_from_args
from colabenv.catalog import shipped_catalog
from colabenv.models import Resolution, format_driver
from colabenv.resolver import resolve


def _table(resolution: Resolution) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    target = resolution.target
    caps = ", ".join(str(c) for c in target.compute_capabilities) or "unknown"
    gpu = (
        f"driver {format_driver(target.driver) if target.driver else 'unknown'}, "
        f"CUDA {target.cuda or 'unknown'}, "
        f"compute capability {caps}"
        if target.has_gpu
        else "no GPU"
    )
    console.print(f"[bold]{resolution.profile_name}[/] for {gpu}, Python {target.python_minor}")
    table = Table(show_lines=True)
    for column in ("framework", "version", "variant", "index", "installed?", "reason"):
        table.add_column(column, overflow="fold")
    for choice in resolution.choices:
        table.add_row(
            choice.framework.value,
            str(choice.release),
            choice.variant,
            choice.index_url or "default",
            "yes" if choice.installed else "no",
            choice.reason,
        )
    console.print(table)
    if resolution.packages:
        console.print("packages: " + ", ".join(resolution.packages), markup=False)
    if resolution.apt:
        console.print("apt: " + ", ".join(resolution.apt), markup=False)
    for warning in resolution.warnings:
        console.print(f"[yellow]warning:[/] {warning}")


def run(args: argparse.Namespace) -> int:
    profile = load_profile_arg(args.profile)
    catalog = shipped_catalog(r.framework for r in profile.frameworks)
    resolution = resolve(profile, target_from_args(args), catalog)
    if args.json:
        sys.stdout.write(json.dumps(resolution.to_json(), indent=2) + "\n")
    else:
        _table(resolution)
    return 0
