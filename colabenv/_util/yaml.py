"""JSON-shaped values written as block YAML, for the files cluster engines read (a Ray
``runtime_env``, a Kubernetes manifest), with no YAML library.

Mappings and lists are written in block style; every string is a double-quoted scalar with
JSON's escapes (which YAML's double-quoted style shares), so no value is read back as another
type (``"on"``, ``"1.10"``) and none can start a document, a comment or an alias. A key is
written plain only where it is a plain word of letters, digits, ``_``, ``.``, ``/`` and ``-``
that YAML 1.1 reads as no other type.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*", re.ASCII)
_OTHER_TYPES = frozenset({"y", "n", "yes", "no", "true", "false", "on", "off", "null"})


def dump(value: object) -> str:
    """``value`` (mappings with string keys, lists, strings, numbers, booleans, None) as a
    YAML document."""
    return "".join(line + "\n" for line in _lines(value, 0))


def _scalar(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return json.dumps(value)
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def _key(key: object) -> str:
    if not isinstance(key, str):
        raise TypeError(f"a mapping key is a string, not {type(key).__name__}")
    plain = _PLAIN_KEY.fullmatch(key) and key.lower() not in _OTHER_TYPES
    return key if plain else json.dumps(key)


def _lines(value: object, indent: int) -> Iterator[str]:
    pad = " " * indent
    if isinstance(value, Mapping):
        if not value:
            yield pad + "{}"
        for key, item in value.items():
            yield from _entry(pad + _key(key) + ":", item, indent)
    elif isinstance(value, Sequence) and not isinstance(value, str):
        if not value:
            yield pad + "[]"
        for item in value:
            yield from _entry(pad + "-", item, indent)
    else:
        yield pad + _scalar(value)


def _entry(head: str, item: object, indent: int) -> Iterator[str]:
    nested = isinstance(item, (Mapping, list, tuple)) and len(item) > 0
    if not nested:
        empty = "{}" if isinstance(item, Mapping) else "[]" if isinstance(item, (list, tuple)) else None
        yield f"{head} {empty if empty is not None else _scalar(item)}"
        return
    if head.endswith("-") and isinstance(item, Mapping):
        # A mapping in a list: its first key on the dash's line, the rest under it.
        inner = list(_lines(item, indent + 2))
        yield head + " " + inner[0].lstrip()
        yield from inner[1:]
        return
    yield head
    yield from _lines(item, indent + 2)
