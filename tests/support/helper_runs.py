"""The script's helper program (``colabenv/_target/helper.py`` as the script embeds it), written
into a test's folder and run by this interpreter in a subprocess, as the script runs it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from colabenv._util.resources import helper_source
from colabenv.script.render import helper_program


def run_helper(
    folder: Path, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python helper.py ARGS``, the embedded helper written to ``folder/helper.py`` where it is
    not yet, in ``env`` (``PATH=/usr/bin:/bin`` alone unless given): the finished process, both
    streams captured as text."""
    program = folder / "helper.py"
    if not program.exists():
        program.write_text(helper_program(helper_source()))
    return subprocess.run(
        [sys.executable, str(program), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env or {"PATH": "/usr/bin:/bin"},
    )
