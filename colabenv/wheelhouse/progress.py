"""How far a download of many files is: files and bytes done, the rate, the time left.

Live (a terminal, or a notebook cell, which renders carriage returns): one line rewritten in
place with ``\\r`` at most every :data:`EVERY_S` seconds. Otherwise (a log, a pipe): nothing while
it runs, and one summary line at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

EVERY_S = 0.25
NOTEBOOK_VARIABLES = ("JPY_PARENT_PID", "COLAB_RELEASE_TAG", "KAGGLE_KERNEL_RUN_TYPE")
"""Set in a Jupyter, Colab or Kaggle kernel: a cell shows ``\\r`` lines as a terminal does."""


def size_text(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GiB"


def duration_text(seconds: float) -> str:
    whole = int(seconds + 0.5)
    return f"{whole // 60}:{whole % 60:02d}"


class Progress:
    """Counts files and bytes; ``live`` rewrites one line, else :meth:`finish` prints one."""

    def __init__(
        self,
        stream: TextIO,
        label: str,
        *,
        live: bool,
        total_bytes: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.label = label
        self.live = live
        self.total_bytes = total_bytes
        self.clock = clock
        self.files = 0
        self.present = 0
        self.done_files = 0
        self.done_bytes = 0
        self.started = clock()
        self.started_files = 0
        self.known_bytes = 0
        self.sized_files = 0
        self._shown = 0.0

    def start(self, files: int, present: int) -> None:
        self.files, self.present, self.done_files = files, present, present
        self.started = self.clock()

    def advance(self, count: int) -> None:
        self.done_bytes += count
        now = self.clock()
        if self.live and now - self._shown >= EVERY_S:
            self._shown = now
            self.stream.write("\r" + self.line(now) + "\x1b[K")
            self.stream.flush()

    def expect(self, count: int | None) -> None:
        """A download started that will be ``count`` bytes (its Content-Length), if known."""
        self.started_files += 1
        if count is not None:
            self.known_bytes += count
            self.sized_files += 1

    def estimated_total(self) -> int | None:
        """The bytes to download: those announced, and for the files not yet started the
        average announced size; None before any size is known."""
        if self.total_bytes is not None:
            return self.total_bytes
        if not self.sized_files:
            return None
        later = max(self.files - self.present - self.started_files, 0)
        return self.known_bytes + later * self.known_bytes // self.sized_files

    def back(self, count: int) -> None:
        self.done_bytes -= count

    def file_done(self) -> None:
        self.done_files += 1

    def line(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-6)
        rate = self.done_bytes / elapsed
        total = self.estimated_total()
        text = f"{self.label}: {self.done_files}/{self.files} files, {size_text(self.done_bytes)}"
        if total:
            text += f"/{size_text(total)}"
        text += f", {size_text(rate)}/s"
        if total and rate > 0:
            text += f", {duration_text(max(total - self.done_bytes, 0) / rate)} left"
        return text

    def summary(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-6)
        fetched = self.done_files - self.present
        return (
            f"{self.label}: {self.files} files ({fetched} downloaded, {self.present} already there), "
            f"{size_text(self.done_bytes)} in {duration_text(elapsed)} "
            f"({size_text(self.done_bytes / elapsed)}/s)"
        )

    def finish(self) -> None:
        now = self.clock()
        prefix = "\r" if self.live else ""
        suffix = "\x1b[K" if self.live else ""
        self.stream.write(prefix + self.summary(now) + suffix + "\n")
        self.stream.flush()
