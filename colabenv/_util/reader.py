"""The one typed reader of parsed documents (TOML tables, JSON objects) colabenv is given.

A :class:`Reader` wraps one mapping and the key path that leads to it. Each accessor checks the
type (and, for numbers, that the value is finite and within bounds) and raises the caller's own
error with the full key path (``release[3].variant[0].archs``, ``env."A B"``), so every file
format keeps its error type (CatalogError, ProfileError, StateError, LockError ...) and its
one-line messages. The messages are the same for every format: a wrong type says what was
expected and what was found (``expected a string, got an integer``), an unknown key names the
likely one it misspells or else the keys there are, and a key or value from the document is
shown escaped (:func:`quoted`, :func:`shown`), so it can neither break the line nor send escape
sequences to a terminal.

A reader given :class:`Problems` reports every mistake of one read, not only the first: each
check it runs through :meth:`Reader.attempt` (and each unknown key :meth:`Reader.allow` finds)
is recorded and the read goes on; the caller raises them together at the end
(:meth:`Problems.raise_found`), at most :data:`MAX_PROBLEMS` of them shown. Without one, the
first mistake raises, as before.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from colabenv.errors import ColabenvError, printable

Fail = Callable[[str | None, str], ColabenvError]
"""``fail(key_path, problem)``: the error to raise (key_path None: the whole document)."""

E = TypeVar("E", bound=ColabenvError)
T = TypeVar("T")

MAX_PROBLEMS = 20
"""The most problems one read reports; past them, how many more there are."""

_BARE_KEY_PATTERN = r"[A-Za-z0-9_-]+"
"""TOML's bare keys; compiled by re's own cache when a key is first shown, not on import."""


@functools.cache
def cached_version(text: str) -> Version:
    """One :class:`Version` per distinct string: a catalog repeats a few hundred of them."""
    return Version(text)


def quoted(key: str, limit: int = 80) -> str:
    """``key`` as one segment of a key path: bare where TOML allows it, else a JSON string
    (``"A B"``, ``"X\\u001b"``), so every character outside printable ASCII is escaped; at
    most ``limit`` characters."""
    text = key if re.fullmatch(_BARE_KEY_PATTERN, key) else json.dumps(key, ensure_ascii=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def shown(value: object, limit: int = 80) -> str:
    """A value from a document for a message: quoted, escaped, one line, at most ``limit``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and value.bit_length() > 256:
        return "a very large integer"
    if isinstance(value, (int, float)):
        text = str(value)
    elif isinstance(value, str):
        text = json.dumps(value, ensure_ascii=True)
    else:
        return type_name(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def type_name(value: object, json_words: bool = False) -> str:
    """What a parsed value is, in the words of the document's format (TOML's, or JSON's)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object" if json_words else "a table"
    return "a date or time"


def expected(what: str, value: object, json_words: bool = False) -> str:
    return f"expected {what}, got {type_name(value, json_words)}"


def close_match(word: str, options: Iterable[str], cutoff: float) -> str | None:
    """``difflib.get_close_matches(word, options, n=1, cutoff=cutoff)``, importing difflib only
    for an option that passes its cheap upper bound (shared letters): a companion key such as
    torchvision is checked against "version" on every load, and is nothing like it."""
    letters = Counter(word)
    likely = [
        option
        for option in options
        if not (word or option)
        or 2.0 * sum((letters & Counter(option)).values()) / (len(word) + len(option)) >= cutoff
    ]
    if not likely:
        return None
    import difflib

    close = difflib.get_close_matches(word, likely, n=1, cutoff=cutoff)
    return close[0] if close else None


def unknown(word: str, known: Iterable[str], what: str = "key") -> str:
    """The problem with an unknown ``word``: the known one it likely misspells (ignoring case),
    else every known one."""
    options = list(known)
    by_lower = {option.lower(): option for option in options}
    close = close_match(word.lower(), list(by_lower), cutoff=0.6)
    if close is not None:
        return f"unknown {what} (did you mean {by_lower[close]!r}?)"
    return f"unknown {what} (expected one of: {', '.join(options)})"


_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")
"""What ``str.splitlines`` breaks a line at."""


def path_problem(text: str) -> str | None:
    """What is wrong with ``text`` as an absolute path on the host (one printable line that
    starts with ``/``), None when nothing is: the first character that cannot be in one is
    named (a line break, a NUL, a control character), else the missing leading ``/``."""
    for char in text:
        if char.isprintable():
            continue
        code = f"U+{ord(char):04X}"
        if char in _LINE_BREAKS:
            return f"{shown(text)} contains a line break ({code}): a path is one line"
        if char == "\0":
            return f"{shown(text)} contains a NUL character"
        if ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0:
            return f"{shown(text)} contains a control character ({code})"
        return f"{shown(text)} contains a character that cannot be shown ({code})"
    if not text.startswith("/"):
        return f"{shown(text)} is not an absolute path (it does not start with /)"
    return None


class Problems(Generic[E]):
    """The errors of kind ``kind`` one read of a document found, each once, in the order found.

    :meth:`raise_found` raises nothing when there are none, the error itself when there is one
    (its message as if nothing were gathered), else ``join(shown, more)``: one error made of the
    first :data:`MAX_PROBLEMS` and the number left out. An error of another kind is not
    gathered: it is raised where it happens.
    """

    def __init__(
        self, kind: type[E], join: Callable[[Sequence[E], int], E], limit: int = MAX_PROBLEMS
    ) -> None:
        self.kind = kind
        self.join = join
        self.limit = limit
        self.shown: list[E] = []
        self.count = 0
        self._messages: set[str] = set()

    @property
    def full(self) -> bool:
        """Whether as many are kept as are shown: more are only counted."""
        return len(self.shown) >= self.limit

    def tally(self) -> None:
        """Count one more problem, past the limit, without making its message."""
        self.count += 1

    def report(self, error: ColabenvError) -> None:
        """Record ``error`` (one already recorded with the same message is left out)."""
        if not isinstance(error, self.kind):
            raise error
        if error.message in self._messages:
            return
        self._messages.add(error.message)
        self.count += 1
        if len(self.shown) < self.limit:
            self.shown.append(error)

    def attempt(self, check: Callable[[], T], default: T) -> T:
        """``check()``, or ``default`` once the error it raised is recorded."""
        try:
            return check()
        except self.kind as error:
            self.report(error)
            return default

    def raise_found(self) -> None:
        if not self.shown:
            return
        if self.count == 1:
            raise self.shown[0]
        raise self.join(self.shown, self.count - len(self.shown))


class Reader:
    """Typed access to one table of a parsed document, failing with its key path.

    ``json_words``: the document is JSON, whose tables are objects. A child reader writes its
    key path only when it is asked for (in an error): a catalog load makes hundreds of readers
    and fails in none of them. ``problems``: gather this read's errors there (its children too)
    rather than raise the first.
    """

    def __init__(
        self,
        data: Mapping[str, Any],
        fail: Fail,
        prefix: str = "",
        *,
        json_words: bool = False,
        problems: Problems[Any] | None = None,
    ) -> None:
        self.data = data
        self._fail = fail
        self._prefix: str | None = prefix
        self._parent: Reader | None = None
        self._name = ""
        self._index: int | None = None
        self.json_words = json_words
        self.problems = problems

    @property
    def prefix(self) -> str:
        """The key path of this table (``""``: the document itself)."""
        if self._prefix is None:
            assert self._parent is not None
            self._prefix = self._parent.key(self._name, self._index)
        return self._prefix

    @property
    def _table(self) -> str:
        return "object" if self.json_words else "table"

    @property
    def _a_table(self) -> str:
        return "an object" if self.json_words else "a table"

    def expected(self, what: str, value: object) -> str:
        return expected(what, value, self.json_words)

    def key(self, name: str, index: int | None = None) -> str:
        """The key path of ``name`` in this table (of its item ``index`` when given)."""
        path = f"{self.prefix}.{quoted(name)}" if self.prefix else quoted(name)
        return path if index is None else f"{path}[{index}]"

    def fail(self, name: str | None, problem: str, *, index: int | None = None) -> ColabenvError:
        """The caller's error for ``name`` (None: this table itself)."""
        return self._fail(self.key(name, index) if name is not None else self.prefix or None, problem)

    def at(self, name: str, index: int | None = None) -> Callable[[str], ColabenvError]:
        """``refuse(problem)``: the error for ``name`` (its item ``index``), for a rule that
        checks one value and knows nothing of where it is."""
        return lambda problem: self.fail(name, problem, index=index)

    def child(self, data: Mapping[str, Any], name: str, index: int | None = None) -> Reader:
        """A reader of ``data`` found under ``name`` (its item ``index``) of this table."""
        reader = Reader(data, self._fail, json_words=self.json_words, problems=self.problems)
        reader._prefix, reader._parent, reader._name, reader._index = None, self, name, index
        return reader

    def report(self, error: ColabenvError) -> None:
        """Gather ``error`` when this read gathers its problems, else raise it."""
        if self.problems is None:
            raise error
        self.problems.report(error)

    def attempt(self, check: Callable[[], T], default: T) -> T:
        """``check()``; when this read gathers its problems, ``default`` once the error it
        raised is gathered (without, the error goes on up)."""
        if self.problems is None:
            return check()
        return self.problems.attempt(check, default)

    def allow(self, *names: str, what: str = "key") -> None:
        """Every key of the table is one of ``names`` (each one that is not is reported)."""
        for name in self.data:
            if name in names:
                continue
            if self.problems is not None and self.problems.full:
                self.problems.tally()  # its message (a misspelling looked for) would not be shown
            else:
                self.report(self.fail(name, unknown(name, names, what)))

    def require(self, *names: str) -> None:
        for name in names:
            if name not in self.data:
                raise self.fail(name, "missing")

    def _get(self, name: str, default: object) -> object:
        if name not in self.data and default is None:
            raise self.fail(name, "missing")
        return self.data.get(name, default)

    def text(self, name: str, default: str | None = None, *, empty: bool = False) -> str:
        """A string, non-empty unless ``empty``."""
        value = self._get(name, default)
        if not isinstance(value, str):
            what = "a string" if empty else "a non-empty string"
            raise self.fail(name, self.expected(what, value))
        if not value and not empty:
            raise self.fail(name, "expected a non-empty string")
        return value

    def opt_text(self, name: str, *, empty: bool = False) -> str | None:
        if name not in self.data:
            return None
        return self.text(name, empty=empty)

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

    def opt_specifier(self, name: str) -> SpecifierSet | None:
        return self.specifier(name) if name in self.data else None

    def integer(
        self, name: str, *, low: int | None = None, high: int | None = None, default: int | None = None
    ) -> int:
        value = self._get(name, default)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(name, self.expected("a whole number", value))
        if (low is not None and value < low) or (high is not None and value > high):
            raise self.fail(name, f"expected a whole number from {low} to {high}")
        return value

    def number(
        self,
        name: str,
        *,
        low: float,
        high: float,
        default: float | None = None,
        above_low: bool = False,
        unit: str = "",
    ) -> float:
        """A finite int or float from ``low`` (more than ``low`` when ``above_low``) to
        ``high``; ``unit`` follows ``high`` in the message (" GiB"). A 400-digit integer is
        refused by its size before it is turned into a float."""
        value = self._get(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(name, self.expected("a number", value))
        if isinstance(value, int) and value.bit_length() > 64:
            raise self.fail(name, f"number too large (at most {high:g}{unit})")
        number = float(value)
        if not math.isfinite(number):
            raise self.fail(name, "expected a finite number")
        if above_low and number <= low:
            raise self.fail(name, f"must be more than {low:g}")
        if number < low:
            raise self.fail(name, f"must be {low:g} or more")
        if number > high:
            raise self.fail(name, f"{number:g} is too large (at most {high:g}{unit})")
        return number

    def flag(self, name: str, default: bool | None = None) -> bool:
        value = self._get(name, default)
        if not isinstance(value, bool):
            raise self.fail(name, self.expected("true or false", value))
        return value

    def text_list(self, name: str, *, required: bool = False) -> list[str]:
        """An array of strings (empty when absent); a wrong item is named by its index."""
        value = self._get(name, None if required else [])
        if not isinstance(value, list):
            raise self.fail(name, self.expected("an array of strings", value))
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise self.fail(name, self.expected("a string", item), index=index)
        return list(value)

    def matching_list(
        self, name: str, pattern: re.Pattern[str], expected: str, *, required: bool = False
    ) -> list[str]:
        """An array of strings (empty when absent), each matching ``pattern`` in full; one that
        does not fails with ``expected``, named by its index."""
        found = self.text_list(name, required=required)
        for index, item in enumerate(found):
            if not pattern.fullmatch(item):
                raise self.fail(name, expected, index=index)
        return found

    def items(self, name: str, *, required: bool = False) -> list[Any]:
        """An array of anything (empty when absent)."""
        value = self._get(name, None if required else [])
        if not isinstance(value, list):
            raise self.fail(name, self.expected("an array", value))
        return value

    def table(self, name: str, *, required: bool = False) -> Mapping[str, Any]:
        value = self._get(name, None if required else {})
        if not isinstance(value, dict):
            raise self.fail(name, self.expected(self._a_table, value))
        return value

    def sub(self, name: str, *, required: bool = False) -> Reader:
        """The table under ``name`` (empty when absent), as a reader."""
        return self.child(self.table(name, required=required), name)

    def tables(self, name: str, *, required: bool = False) -> list[Reader]:
        """The array of tables under ``name`` (empty when absent), one reader each."""
        value = self._get(name, None if required else [])
        if not isinstance(value, list):
            raise self.fail(name, self.expected(f"an array of {self._table}s", value))
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                raise self.fail(name, self.expected(self._a_table, item), index=index)
        return [self.child(v, name, i) for i, v in enumerate(value)]
