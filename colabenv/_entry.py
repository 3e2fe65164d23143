"""The ``colabenv`` console script's module.

The cyclic garbage collector goes off before anything else is imported: a command is a short
process whose imports and frozen models make no garbage cycles worth finding, and the passes
the collector would make over every object those imports create cost ``colabenv render`` about
a tenth of its run. :func:`colabenv.cli.main` turns it off as well when called on its own.
"""

from __future__ import annotations

import gc

gc.disable()

from colabenv.cli import main  # noqa: E402

__all__ = ["main"]
