"""``colabenv verify``: post-restart checks; exit 0 when nothing failed, 1 when a check failed."""

from __future__ import annotations

import argparse
import json
import sys

from colabenv.verification import Status, VerifyReport, verify

STYLES = {Status.PASS: "bold green", Status.WARN: "bold yellow", Status.FAIL: "bold red",
          Status.SKIP: "dim"}


def print_table(report: VerifyReport) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    table = Table(title=f"colabenv verify ({escape(report.expected_from)})",
                  title_justify="left", show_lines=False)
    table.add_column("check", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for check in report.checks:
        table.add_row(check.name, f"[{STYLES[check.status]}]{check.status.value}[/]",
                      escape(check.detail))
    console.print(table)
    failed = [c.name for c in report.checks if c.status is Status.FAIL]
    if failed:
        console.print(f"[bold red]{len(failed)} check(s) failed:[/] {', '.join(failed)}")
    else:
        console.print("[bold green]all checks passed[/]")


def run(args: argparse.Namespace) -> int:
    report = verify(profile=args.profile, lock=args.lock, timeout=args.timeout,
                    interpreter=args.interpreter)
    if args.json:
        sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n")
    else:
        print_table(report)
    return 0 if report.ok else 1
