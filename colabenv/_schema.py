"""The one typed reader of parsed documents (TOML tables, JSON objects) colabenv is given.

A :class:`Reader` wraps one mapping and the key path that leads to it. Each accessor checks the
type (and, for numbers, that the value is finite and within bounds) and raises the caller's own
error with the full key path (``release[3].variant[0].archs``), so every file format keeps its
error type (CatalogError, ProfileError, StateError, LockError ...) and its one-line messages.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from colabenv.errors import ColabenvError, printable

Fail = Callable[[str | None, str], ColabenvError]
"""``fail(key_path, problem)``: the error to raise (key_path None: the whole document)."""


@functools.cache
def cached_version(text: str) -> Version:
    """One :class:`Version` per distinct string: a catalog repeats a few hundred of them."""
    return Version(text)


class Reader:
    """Typed access to one table of a parsed document, failing with its key path."""

    def __init__(self, data: Mapping[str, Any], fail: Fail, prefix: str = "") -> None:
        self.data = data
        self._fail = fail
        self.prefix = prefix

    def key(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def fail(self, name: str | None, problem: str) -> ColabenvError:
        return self._fail(self.key(name) if name else self.prefix or None, problem)

    def child(self, data: Mapping[str, Any], name: str) -> Reader:
        """A reader of ``data`` found under ``name`` (a key, or ``key[3]``) of this table."""
        return Reader(data, self._fail, self.key(name))

    def allow(self, *names: str) -> None:
        for name in self.data:
            if name not in names:
                raise self.fail(printable(name), f"unknown key (expected one of {', '.join(names)})")

    def require(self, *names: str) -> None:
        for name in names:
            if name not in self.data:
                raise self.fail(name, "missing")

    def text(self, name: str, default: str | None = None) -> str:
        value = self.data.get(name, default)
        if not isinstance(value, str) or not value:
            raise self.fail(name, "expected a non-empty string")
        return value

    def opt_text(self, name: str) -> str | None:
        if name not in self.data:
            return None
        return self.text(name)

    def version(self, name: str) -> Version:
        text = self.text(name)
        try:
            return cached_version(text)
        except InvalidVersion:
            raise self.fail(name, f"{printable(text)[:80]!r} is not a version") from None

    def opt_version(self, name: str) -> Version | None:
        return self.version(name) if name in self.data else None

    def specifier(self, name: str) -> SpecifierSet:
        text = self.text(name)
        try:
            return SpecifierSet(text)
        except InvalidSpecifier:
            raise self.fail(name, f"{printable(text)[:80]!r} is not a version specifier") from None

    def integer(self, name: str, *, low: int | None = None, high: int | None = None,
                default: int | None = None) -> int:
        value = self.data.get(name, default)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(name, "expected a whole number")
        if (low is not None and value < low) or (high is not None and value > high):
            raise self.fail(name, f"expected a whole number from {low} to {high}")
        return value

    def number(self, name: str, *, low: float, high: float, default: float | None = None) -> float:
        """A finite int or float within ``[low, high]`` (a 400-digit integer is refused by its
        size before it is turned into a float)."""
        value = self.data.get(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(name, "expected a number")
        if isinstance(value, int) and value.bit_length() > 64:
            raise self.fail(name, f"expected a number from {low:g} to {high:g}")
        number = float(value)
        if not math.isfinite(number) or not low <= number <= high:
            raise self.fail(name, f"expected a number from {low:g} to {high:g}")
        return number

    def flag(self, name: str, default: bool) -> bool:
        value = self.data.get(name, default)
        if not isinstance(value, bool):
            raise self.fail(name, "expected true or false")
        return value

    def text_list(self, name: str) -> list[str]:
        value = self.data.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(name, "expected a list of strings")
        return list(value)

    def table(self, name: str) -> Mapping[str, Any]:
        value = self.data.get(name, {})
        if not isinstance(value, dict):
            raise self.fail(name, "expected a table")
        return value

    def sub(self, name: str) -> Reader:
        """The table under ``name`` (empty when absent), as a reader."""
        return self.child(self.table(name), name)

    def tables(self, name: str) -> list[Reader]:
        value = self.data.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self.fail(name, "expected an array of tables")
        return [self.child(v, f"{name}[{i}]") for i, v in enumerate(value)]
