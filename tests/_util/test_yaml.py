"""``colabenv._util.yaml``: what it writes reads back, with a real YAML parser, as the same value."""

from __future__ import annotations

import pytest
import yaml

from colabenv._util.yaml import dump

TRICKY = [
    "on",
    "yes",
    "No",
    "null",
    "~",
    "1.10",
    "0o17",
    "- a",
    "#c",
    "a: b",
    "&x",
    "*x",
    "!t",
    "'",
    '"',
    "\\",
    "é",
    "\t",
    "a\nb",
    "",
]


def test_tricky_strings_read_back_as_strings() -> None:
    value = {"values": TRICKY, **{key: key for key in TRICKY}}
    assert yaml.safe_load(dump(value)) == value


def test_nested_shapes_read_back() -> None:
    value = {
        "spec": {"containers": [{"name": "a", "args": ["x"], "limits": {"nvidia.com/gpu": 2}}, {"env": []}]},
        "empty": {},
        "lists": [[1, 2], [], {"k": None}, True, 1.5],
    }
    text = dump(value)
    assert yaml.safe_load(text) == value
    assert "nvidia.com/gpu: 2" in text  # a plain key stays plain


@pytest.mark.parametrize("bad", [{1: "x"}, {"a": object()}])
def test_what_json_cannot_hold_is_refused(bad: object) -> None:
    with pytest.raises(TypeError):
        dump(bad)
