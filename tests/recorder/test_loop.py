"""The recorder's loop: a failing sample is a line in the log, and the recording goes on."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from colabenv.models import RingHeader, Sample
from colabenv.recorder.loop import MAX_LOGGED_ERRORS, _loop
from colabenv.recorder.ring import RingWriter, read_ring


def _sample(moment: float) -> Sample:
    return Sample(moment, None, None, (), None, (), (), None, None)


def test_a_failing_sample_is_logged_and_the_recording_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    writer = RingWriter.create(tmp_path / "ring", RingHeader(1, 1, 1, 0.5, time.time(), 16))
    calls = itertools.count()

    def sample() -> Sample:
        if next(calls) == 1:
            raise OSError("a reader's bug")
        return _sample(time.time())

    failed = _loop(writer, sample, 0.5, 1.2 / 3600, time.monotonic)
    writer.close()
    assert failed == 1
    assert capsys.readouterr().err == "colabenv watch: a sample failed: OSError: a reader's bug\n"
    assert 2 <= len(read_ring(tmp_path / "ring").samples) <= 3


def test_a_sample_that_always_fails_fills_no_disk(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    writer = RingWriter.create(tmp_path / "ring", RingHeader(1, 1, 1, 0.5, time.time(), 16))
    clock = itertools.count(0, 0.5)  # a clock that runs ahead: no real waiting

    def sample() -> Sample:
        raise RuntimeError("always")

    failed = _loop(writer, sample, 0.5, 20 / 3600, lambda: float(next(clock)))
    writer.close()
    assert failed > MAX_LOGGED_ERRORS
    assert capsys.readouterr().err.count("\n") == MAX_LOGGED_ERRORS
    assert read_ring(tmp_path / "ring").samples == ()
