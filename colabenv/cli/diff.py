"""``colabenv diff A.json B.json``: what differs between two ``detect --json`` fingerprints.

Differences are grouped: accelerator (nvidia, tpu or cpu, and the TPU's generation, type and
chips), GPU and driver, Python, runtime, frameworks (the ``installed`` key:
frameworks and CUDA wheels), other packages. Free GPU memory and notes are not compared: they
change from one run to the next on the same host. Exit 0 same, 1 different, 2 bad input.

The files are input from anywhere: read bounded, and every value shown with its control
characters escaped, so a name holding a newline cannot forge a line of the diff.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from colabenv.app.fingerprints import compare, load_fingerprint, unrecorded_packages
from colabenv.errors import printable


def run(args: argparse.Namespace) -> int:
    a = load_fingerprint(Path(args.a))
    b = load_fingerprint(Path(args.b))
    groups = compare(a, b)
    skipped = unrecorded_packages(a, b)
    if skipped:
        names = ", ".join(printable(p) for p in skipped)
        sys.stderr.write(f"colabenv: other packages not compared: not recorded in {names}\n")
    if not any(changes for _, changes in groups):
        sys.stdout.write(f"no differences between {printable(a.path)} and {printable(b.path)}\n")
        return 0
    sys.stdout.write(f"--- {printable(a.path)}\n+++ {printable(b.path)}\n")
    for title, changes in groups:
        if not changes:
            continue
        sys.stdout.write(f"{title}\n")
        for change in changes:
            sys.stdout.write(f"{change}\n")
    return 1
