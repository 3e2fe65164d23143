"""TOML text for the test builders of catalog files (:mod:`tests.support.catalogs`,
:mod:`tests.support.package_entries`): a value written as TOML whatever it holds, so a case can
give a value the loader must refuse, and an array-of-tables entry whose None keys are left out."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

Value = str | bool | int | Sequence[str] | Mapping[str, "Value"] | None


def toml_value(value: str | bool | int | Sequence[str] | Mapping[str, Value]) -> str:
    """``value`` as TOML: a string, true or false, an integer, an array of strings, or an
    inline table of these (``{ torchvision = "0.1.0" }``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        items = ", ".join(f"{key} = {toml_value(item)}" for key, item in value.items() if item is not None)
        return "{ " + items + " }"
    return "[" + ", ".join(json.dumps(item) for item in value) + "]"


def toml_keys(fields: Sequence[tuple[str, Value]]) -> str:
    """One ``key = value`` line a field, the None ones left out."""
    return "".join(f"{key} = {toml_value(value)}\n" for key, value in fields if value is not None)


def toml_entry(header: str, fields: Sequence[tuple[str, Value]]) -> str:
    """A ``[[header]]`` entry after a blank line, with the fields that are not None."""
    return f"\n[[{header}]]\n" + toml_keys(fields)
