"""The profile's ``[watch]`` table: the recorder ``bootstrap()`` and ``verify()`` start."""

from __future__ import annotations

from pathlib import Path

import pytest

from colabenv.errors import ProfileError
from colabenv.models import WatchSettings
from colabenv.profile.load import load_profile


def _load(tmp_path: Path, table: str) -> WatchSettings:
    path = tmp_path / "team.toml"
    path.write_text(f'name = "team"\n[watch]\n{table}\n', encoding="utf-8")
    return load_profile(path).watch


def test_defaults_when_absent(tmp_path: Path) -> None:
    assert _load(tmp_path, "") == WatchSettings(enabled=False, interval_s=2.0, max_hours=24.0)


def test_values_are_read(tmp_path: Path) -> None:
    found = _load(tmp_path, "enabled = true\ninterval_s = 0.5\nmax_hours = 12")
    assert found == WatchSettings(enabled=True, interval_s=0.5, max_hours=12.0)


def test_a_child_profile_enables_what_its_parent_set(tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text('name = "base"\n[watch]\ninterval_s = 5\n', encoding="utf-8")
    child = tmp_path / "child.toml"
    child.write_text('name = "child"\nextends = "./base.toml"\n[watch]\nenabled = true\n', encoding="utf-8")
    assert load_profile(child).watch == WatchSettings(enabled=True, interval_s=5.0)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('enabled = "yes"', "team.toml: watch.enabled: expected true or false, got a string"),
        ("interval_s = 0.25", "team.toml: watch.interval_s: must be 0.5 or more"),
        ("interval_s = 601", "team.toml: watch.interval_s: 601 is too large (at most 600 s)"),
        ("max_hours = 0", "team.toml: watch.max_hours: must be more than 0"),
        ("max_hours = 169", "team.toml: watch.max_hours: 169 is too large (at most 168 h, a week)"),
        ("max_hours = nan", "team.toml: watch.max_hours: expected a finite number"),
        ("every = 3", "team.toml: watch.every: unknown key"),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, table: str, message: str) -> None:
    with pytest.raises(ProfileError) as caught:
        _load(tmp_path, table)
    assert str(caught.value).startswith(message)
