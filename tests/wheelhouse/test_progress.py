"""The progress line: files and bytes done, rate, time left; one summary line when not live."""

from __future__ import annotations

import io

from colabenv.wheelhouse.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_live_progress_rewrites_one_line_with_rate_and_time_left() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = Progress(stream, "bundle", live=True, clock=clock)
    progress.start(4, 1)
    progress.expect(10 << 20)
    clock.now += 1
    progress.advance(5 << 20)
    text = stream.getvalue()
    assert text.startswith("\rbundle: 1/4 files, 5.0 MiB/")
    assert "5.0 MiB/s" in text
    # three files to fetch, one announced at 10 MiB: 30 MiB expected, 25 MiB left at 5 MiB/s
    assert "30.0 MiB" in text and "0:05 left" in text
    progress.file_done()
    progress.finish()
    assert stream.getvalue().endswith("\n")
    assert "bundle: 4 files (1 downloaded, 1 already there)" in stream.getvalue()


def test_not_live_is_one_summary_line() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = Progress(stream, "bundle", live=False, clock=clock)
    progress.start(2, 0)
    progress.expect(1024)
    progress.advance(1024)
    progress.file_done()
    assert stream.getvalue() == ""
    clock.now += 2
    progress.finish()
    assert stream.getvalue() == "bundle: 2 files (1 downloaded, 0 already there), 1.0 KiB in 0:02 (512 B/s)\n"
