"""``python -m colabenv``: the console script, run as a module."""

from __future__ import annotations

from colabenv.cli.entry import main

if __name__ == "__main__":
    raise SystemExit(main())
