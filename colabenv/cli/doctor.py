"""``colabenv doctor``: what went wrong and what to do; exit 0 when nothing is found, 1 when
something is.

Each finding is a few lines, the most likely cause first: what was found, its evidence, what to
do. ``--json`` prints ``{"findings": [...], "notes": [...]}`` (docs/doctor.md). Every value
shown goes through :func:`colabenv.errors.printable`; a terminal gets it through rich as
:class:`rich.text.Text`, never read as markup.
"""

from __future__ import annotations

import argparse
import sys
import time

from colabenv.cli.common import print_report, terminate_as_interrupt
from colabenv.diagnosis.run import DoctorReport, doctor
from colabenv.errors import printable
from colabenv.models import Finding

MAX_EVIDENCE_SHOWN = 8


def _clock(at: float | None) -> str:
    return "" if at is None else time.strftime("%H:%M:%S ", time.localtime(at))


def finding_lines(finding: Finding) -> list[str]:
    """One finding for people: its kind and summary, its evidence, the remedy."""
    kind = finding.kind + (f" ({finding.cause})" if finding.cause else "")
    lines = [f"{kind}: {printable(finding.summary)}"]
    for item in finding.evidence[:MAX_EVIDENCE_SHOWN]:
        lines.append(f"    {_clock(item.time)}{printable(item.text)}")
    if len(finding.evidence) > MAX_EVIDENCE_SHOWN:
        lines.append(f"    ... and {len(finding.evidence) - MAX_EVIDENCE_SHOWN} more")
    lines.append(f"  what to do: {printable(finding.remedy)}")
    return lines


def report_text(report: DoctorReport) -> str:
    if report.ok:
        lines = ["colabenv doctor: nothing wrong found"]
    else:
        count = len(report.findings)
        lines = [f"colabenv doctor: {count} problem{'' if count == 1 else 's'}, the most likely first"]
        heading = False
        for finding in report.findings:
            lines.append("")
            if finding.elsewhere and not heading:
                heading = True
                lines.extend(["elsewhere on this host (nothing ties these to this runtime):", ""])
            lines.extend(finding_lines(finding))
    if report.notes:
        lines.append("")
        lines.extend(f"note: {printable(note)}" for note in report.notes)
    return "\n".join(lines) + "\n"


def _print_rich(text: str, failed: bool) -> None:
    from rich.console import Console
    from rich.text import Text

    console = Console()
    first, _, rest = text.partition("\n")
    console.print(Text(first, style="bold red" if failed else "bold green"))
    if rest.strip():
        console.print(Text(rest.rstrip("\n")))


def _say(line: str) -> None:
    sys.stderr.write(f"colabenv doctor: {printable(line)}\n")
    sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    with terminate_as_interrupt():
        report = doctor(
            since=args.since,
            interpreter=args.interpreter,
            profile=args.profile,
            lock=args.lock,
            imports=tuple(args.imports or ()),
            kill_leftovers=args.kill_leftovers,
            say=_say,
        )
    print_report(
        args.json,
        report.to_json,
        lambda: _print_rich(report_text(report), not report.ok),
        lambda: sys.stdout.write(report_text(report)),
    )
    return 0 if report.ok else 1
