"""``colabenv resolve PROFILE [--json]``: the resolution and why each choice was made.

For a terminal, a table; for a pipe or a file, plain lines (one per framework, full width);
``--json`` for programs. Values from the profile, the catalog or the host are shown as text,
never as rich markup, and with control characters escaped.
"""

from __future__ import annotations

import argparse
import os
import sys

from packaging.utils import canonicalize_name

from colabenv.accelerators.registry import accelerator_of
from colabenv.app.resolution import TargetSource, resolve_profile
from colabenv.cli.common import load_profile_arg, print_report, target_flags
from colabenv.errors import printable
from colabenv.index.check import index_check
from colabenv.models import CATALOG_PLATFORM, FrameworkChoice, Resolution
from colabenv.models.frameworks import FACTS

COLUMNS = ("framework", "version", "variant", "index", "installed?", "reason")


def _heading(resolution: Resolution) -> str:
    """What the resolution is for: the device and the Python, and the platform where it is not
    the catalog's own (linux_x86_64, which every heading before aarch64 left unsaid)."""
    target = resolution.target
    gpu = accelerator_of(target).describe(target)
    platform = f", {target.platform}" if target.platform != CATALOG_PLATFORM else ""
    return f"{resolution.profile_name} for {gpu}, Python {target.python_given}{platform}"


def _companions(choice: FrameworkChoice) -> str:
    """`` with torchvision 0.23.0+cu128, torchaudio 2.8.0+cu128``: the companions the choice
    pins (its requirements beside the framework's own), or nothing."""
    pinned = []
    for requirement in choice.requirements:
        name, _, version = requirement.partition("==")
        if canonicalize_name(name.partition("[")[0]) in FACTS[choice.framework].companions:
            pinned.append(f"{name} {version}")
    return f" with {', '.join(pinned)}" if pinned else ""


def _rows(resolution: Resolution) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    rows.extend(
        (
            choice.framework.value,
            str(choice.release),
            choice.variant,
            choice.index_url or "default",
            "yes" if choice.installed else "no",
            choice.reason,
            _companions(choice),
        )
        for choice in resolution.choices
    )
    rows.extend(
        (
            f"{package.name} ({package.distribution})",
            str(package.release),
            package.variant,
            package.index_url or (f"find-links {package.find_links}" if package.find_links else "default"),
            "yes" if package.installed else "no",
            package.reason,
            "",
        )
        for package in resolution.cuda_packages
    )
    return rows


def _tails(resolution: Resolution) -> list[tuple[str, str]]:
    """What follows the frameworks: (label, text)."""
    lines = []
    if resolution.packages:
        lines.append(("packages", ", ".join(resolution.packages)))
    if resolution.apt:
        lines.append(("apt", ", ".join(resolution.apt)))
    lines.extend(("warning", warning) for warning in resolution.warnings)
    lines.extend(("note", note) for note in resolution.notes)
    return lines


def _plain(resolution: Resolution) -> None:
    out = [printable(_heading(resolution))]
    for framework, version, variant, index, installed, reason, companions in _rows(resolution):
        state = "installed" if installed == "yes" else "to install"
        line = f"{framework} {version} {variant}{companions} ({state}, index {index}): {reason}"
        out.append(printable(line))
    out.extend(printable(f"{label}: {text}") for label, text in _tails(resolution))
    sys.stdout.write("\n".join(out) + "\n")


def _table(resolution: Resolution) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    console.print(Text(printable(_heading(resolution)), style="bold"))
    table = Table(show_lines=True)
    for column in COLUMNS:
        table.add_column(column, overflow="fold")
    for *row, companions in _rows(resolution):
        row[1] += companions
        table.add_row(*(Text(printable(cell)) for cell in row))
    console.print(table)
    for label, text in _tails(resolution):
        style = "yellow" if label == "warning" else "bold"
        console.print(Text.assemble((f"{label}: ", style), printable(text)))


def run(args: argparse.Namespace) -> int:
    profile = load_profile_arg(args.profile)
    source = TargetSource(target_flags(args), args.target)
    check = index_check(os.environ, offline_flag=args.offline)
    resolution = resolve_profile(profile, source, allow_unconfirmed=args.allow_unconfirmed, index=check)
    print_report(args.json, resolution.to_json, lambda: _table(resolution), lambda: _plain(resolution))
    return 0
