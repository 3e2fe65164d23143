"""`colabenv lock`'s own settings: the resolvers' memory bound (``COLABENV_LOCK_MEMORY_MIB``)."""

from __future__ import annotations

import pytest

from colabenv.cli.lock import resolver_memory
from colabenv.cli.main import main
from colabenv.errors import UsageError
from colabenv.lock.resolvers import RESOLVER_MEMORY_MIB


def test_memory_bound_default_and_given() -> None:
    assert resolver_memory({}) == RESOLVER_MEMORY_MIB == 400
    assert resolver_memory({"COLABENV_LOCK_MEMORY_MIB": ""}) == RESOLVER_MEMORY_MIB
    assert resolver_memory({"COLABENV_LOCK_MEMORY_MIB": "768"}) == 768


@pytest.mark.parametrize(
    "bad", ["0", "255", "1048577", "-1", "1e3", "2048.0", "\u0663\u0660\u0660", "9" * 5000, "lots"]
)
def test_a_bad_memory_bound_is_a_usage_error_naming_the_variable(bad: str) -> None:
    with pytest.raises(UsageError, match=r"^COLABENV_LOCK_MEMORY_MIB: expected MiB between 256 and 1048576"):
        resolver_memory({"COLABENV_LOCK_MEMORY_MIB": bad})


def test_a_bad_memory_bound_is_exit_2_before_anything_else(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLABENV_LOCK_MEMORY_MIB", "lots")
    assert main(["lock", "no-such-profile.toml"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        captured.err
        == "colabenv: COLABENV_LOCK_MEMORY_MIB: expected MiB between 256 and 1048576, got 'lots'\n"
    )
