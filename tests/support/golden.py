"""The golden profiles that do not resolve for a host without a GPU, listed by name so that the
tests over every golden profile assert exactly these refusals: a new refusal fails them, as
does one of these that starts to resolve."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from colabenv.errors import ResolutionError

GPU_ONLY = frozenset({"all-three", "tensorflow"})
"""TensorFlow's ``and-cuda`` variant, which these two ask for, has no build for such a host."""


def refused(name: str, target: str) -> bool:
    """Whether the golden profile ``name`` is expected to refuse the test target ``target``
    (the tests name their host without a GPU ``cpu``)."""
    return target == "cpu" and name in GPU_ONLY


@contextmanager
def expected_refusal() -> Iterator[None]:
    """The block raises the resolver's refusal of TensorFlow's and-cuda build, exit code 3."""
    with pytest.raises(ResolutionError, match=r"frameworks\.tensorflow: no release satisfying") as raised:
        yield
    assert raised.value.exit_code == 3
