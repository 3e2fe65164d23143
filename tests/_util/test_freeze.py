"""The ``pip freeze`` parser on texts: what ``--installed-from`` and ``catalog refresh runtimes``
share (the file's reading is tests/host/test_detect.py's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from colabenv._util.freeze import parse_freeze
from colabenv.errors import TargetError


def test_the_first_line_of_a_name_wins_and_names_are_canonical() -> None:
    installed = parse_freeze("Torch==2.6.0\ntorch==2.7.0\nJAX_lib===0.5.1\n", "here")
    assert [(d.name, d.version) for d in installed.dists] == [("jax-lib", "0.5.1"), ("torch", "2.6.0")]


def test_a_url_gives_its_file_names_version_and_nothing_is_read(tmp_path: Path) -> None:
    """The version comes from the file name alone: the file the URL names is never opened."""
    wheel = tmp_path / "pkg-9.9.9-py3-none-any.whl"
    text = f"pkg @ file://{tmp_path}/pkg-1.2.3-py3-none-any.whl\nother @ file://{wheel}\n"
    installed = parse_freeze(text, "here")
    assert [(d.name, d.version) for d in installed.dists] == [("other", "9.9.9"), ("pkg", "1.2.3")]
    assert not wheel.exists()


def test_a_refused_line_is_named_by_where_and_its_number() -> None:
    with pytest.raises(TargetError) as info:
        parse_freeze("ok==1.0\n\nnumpy>=1.0\n", "backend-info 2025.10")
    assert str(info.value).startswith("backend-info 2025.10: line 3: 'numpy>=1.0' is not a `pip freeze` line")
