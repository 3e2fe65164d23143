"""The ``colabenv`` console script's module: the cyclic garbage collector stays out of the way.

A command is a short process whose imports and frozen models make no garbage cycles worth
finding. Left on, the collector makes passes over every object the imports create while they
run, and one more over all of them when the interpreter exits. So it goes off before anything
else is imported, and what exists when the command returns is frozen (:func:`gc.freeze`), which
the exit's collection skips. :func:`colabenv.cli.main.main` on its own keeps the collector off
only while it runs. What it saves: docs/decisions/0003-garbage-collector.md.
"""

from __future__ import annotations

import gc

gc.disable()

from colabenv.cli import main as command_line  # noqa: E402


def main() -> int:
    try:
        return command_line.main()
    finally:
        gc.freeze()


__all__ = ["main"]
