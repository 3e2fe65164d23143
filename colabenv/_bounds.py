"""Bounds on the numbers verify reads (a flag, the restart marker, a profile's ``[verify]``),
written once so each reader checks the same range."""

from __future__ import annotations

import math

MAX_TIMEOUT_S = 24 * 3600.0
"""The longest a smoke test may be given: a day."""

MAX_VRAM_GIB = 1024.0 * 1024.0
"""The most free GPU memory a profile may ask for: a PiB, far beyond any GPU."""

MAX_TIMESTAMP = 1e11
"""Seconds since the epoch past any real clock (the year 5138)."""


def finite_number(value: object) -> float | None:
    """``value`` as a finite float, None when it is not a number (a bool is not) or is NaN,
    infinite, or an integer too large for a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None
