"""``colabenv verify``: post-restart checks; exit 0 when nothing failed, 1 when a check failed.

A table for a terminal, plain lines (one per check, full width) for a pipe or a file, and
``--json`` for machines. Every value shown goes to rich as :class:`rich.text.Text`, so a ``[/]``
or ``[bold]`` in a GPU name, a path or a version is shown as it is, never read as markup.
"""

from __future__ import annotations

import argparse
import sys

from colabenv.cli.common import print_report, terminate_as_interrupt
from colabenv.errors import printable
from colabenv.verification.report import Status, VerifyReport
from colabenv.verification.run import verify

STYLES = {Status.PASS: "bold green", Status.WARN: "bold yellow", Status.FAIL: "bold red", Status.SKIP: "dim"}


def print_table(report: VerifyReport) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    table = Table(
        title=Text(f"colabenv verify ({printable(report.expected_from)})"),
        title_justify="left",
        show_lines=False,
    )
    table.add_column("check", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for check in report.checks:
        table.add_row(
            Text(check.name),
            Text(check.status.value, style=STYLES[check.status]),
            Text(printable(check.detail)),
        )
    console.print(table)
    style = "bold red" if report.failed else "bold green"
    console.print(Text(report.summary, style=style))


def run(args: argparse.Namespace) -> int:
    with terminate_as_interrupt():
        report = verify(
            profile=args.profile,
            lock=args.lock,
            timeout=args.timeout,
            interpreter=args.interpreter,
            cpu=args.cpu,
        )
    print_report(
        args.json, report.to_json, lambda: print_table(report), lambda: sys.stdout.write(str(report) + "\n")
    )
    return 0 if report.ok else 1
