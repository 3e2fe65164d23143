"""``python -m colabenv.watch``: the recorder process (:mod:`colabenv.watch.recorder`)."""

from __future__ import annotations

from colabenv.watch.recorder import main

if __name__ == "__main__":
    raise SystemExit(main())
