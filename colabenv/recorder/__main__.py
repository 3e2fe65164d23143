"""``python -m colabenv.recorder``: the recorder process (:mod:`colabenv.recorder.loop`)."""

from __future__ import annotations

from colabenv.recorder.loop import main

if __name__ == "__main__":
    raise SystemExit(main())
