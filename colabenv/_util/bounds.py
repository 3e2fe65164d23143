"""Bounds on the numbers colabenv reads (a flag, the restart marker, a profile's ``[verify]``
and ``[reproducibility]``), written once so each reader checks the same range."""

from __future__ import annotations

import math

MAX_TIMEOUT_S = 24 * 3600.0
"""The longest a smoke test may be given: a day."""

MAX_VRAM_GIB = 4096.0
"""The most free memory (GPU or host) a profile may ask for: 4 TiB, beyond any one machine."""

MAX_IO_PATHS = 32
"""The most ``[verify] io_paths`` a profile may name."""

MAX_IO_SIZE_MIB = 65536
"""The largest test file an ``io:`` check may write: 64 GiB."""

MAX_THROUGHPUT_MIB_S = 1e7
"""The highest ``min_read_mib_s`` / ``min_write_mib_s``: 10 TiB/s, beyond any storage."""

MAX_SEED = 2**32 - 1
"""The largest seed: NumPy's legacy seeding takes at most 32 bits."""

MAX_DOCTOR_SINCE_S = 7 * 24 * 3600
"""The longest window ``doctor --since`` asks about: a week, past any notebook session."""

MAX_TIMESTAMP = 1e11
"""Seconds since the epoch past any real clock (the year 5138)."""

MAX_FILE_BYTES = 1 << 40
"""The largest ``size`` an index's page or a lock may give one file: 1 TiB, past any wheel."""


def file_size(value: object) -> int | None:
    """``value`` as a file's size in bytes, None when it is not an integer (a bool is not)
    in [0, MAX_FILE_BYTES]."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_FILE_BYTES:
        return None
    return value


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


# ---------------------------------------------------------------------------------------------
# colabenv watch: the recorder's interval, lifetime and watched paths

MIN_WATCH_INTERVAL_S = 0.5
"""The shortest interval between two samples of the recorder (its cost is measured there)."""

MAX_WATCH_INTERVAL_S = 600.0
"""The longest interval: ten minutes (a longer one records nothing a death can be read from)."""

MAX_WATCH_HOURS = 168.0
"""The longest a recorder runs before it stops by itself: a week."""

MAX_WATCH_PATHS = 16
"""The most paths one recorder watches (``--path``, repeatable)."""
