"""``colabenv init [-o FILE] [--name NAME] [--installed-from FREEZE]``: a starter profile of
the Python it runs in.

The frameworks installed there become ``==`` pins (with their companions), the Python its
``major.minor``; the other distributions installed there that nothing else installed depends on
(the ones a user asked for) become ``[packages]`` requirements, less what the runtime image
ships (``--installed-from``: the image's ``pip freeze``). Every section carries a comment saying
what it is for. The text is validated as a profile before it is written; an existing file is
never overwritten.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path

from colabenv.app.starter import make_starter
from colabenv.cli.common import overrides_from_args, write_text_atomic
from colabenv.errors import OutputError, printable


def run(args: argparse.Namespace) -> int:
    output = Path(args.output) if args.output else None
    if output is not None and _taken(output):
        raise OutputError(f"{printable(output)}: already exists; init never overwrites a file")
    starter = make_starter(overrides_from_args(args), args.name, output or Path("starter.toml"))
    if output is None:
        sys.stdout.write(starter.text)
    else:
        write_text_atomic(output, starter.text, exclusive=True)
        sys.stderr.write(f"colabenv: wrote {printable(output)} ({starter.name})\n")
    if starter.image is None and starter.packages:
        sys.stderr.write(
            f"colabenv: note: [packages] lists all {len(starter.packages)} top-level distributions"
            " installed here; give --installed-from with the runtime image's `pip freeze` to"
            " leave out what it ships\n"
        )
    return 0


def _taken(path: Path) -> bool:
    """Something ``-o`` would replace: a file, a link, a directory (a device or a FIFO is
    written through, see :func:`colabenv._util.files.write_output`)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return os.path.islink(path)
    except OSError:
        return False
    return not (stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode))
