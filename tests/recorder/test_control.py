"""Starting the recorder: what a start that fails says."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from colabenv.errors import ProcessError, StateError
from colabenv.recorder.control import start, status


def test_a_recorder_that_does_not_start_is_one_line_with_its_log(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with pytest.raises(StateError) as caught:
        start(state, kernel_pid=os.getpid(), python="/bin/false")
    assert str(caught.value) == "watch start: the recorder did not start (nothing in watch.log)"
    assert not status(state).running
    with pytest.raises(ProcessError) as missing:
        start(state, kernel_pid=os.getpid(), python=str(tmp_path / "no-python"))
    assert str(missing.value) == f"{tmp_path / 'no-python'}: cannot start: No such file or directory"
