"""``@model``: the frozen dataclass every colabenv value is, with its value semantics written once.

``@dataclass(frozen=True)`` compiles six methods from generated source when a module is
imported (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``,
``__delattr__``). ``@model`` lets dataclasses generate the three that are written out per class
and gives every model the equality, hash and repr dataclasses would, from the methods of one
shared class that read the fields through one :func:`operator.attrgetter` per model. A model
that must be ordered defines ``__lt__`` under :func:`functools.total_ordering`.

What it saves, measured: ``colabenv render pytorch`` for a T4 (44 models on its path) in a
fresh process, ``colabenv._frozen.model`` replaced by ``dataclass(frozen=True)`` before any other
colabenv import in one of each pair, the two run in turn 41 times on a 2-core machine: median
111 ms with ``@model``, 118 ms without: about 5 % of render's run (3 to 6 % over repeated
measurements; of importing render's modules alone, 7 to 10 ms). Worth keeping, no more.

``@model`` is for values only: immutable data compared and hashed by what it holds (tuples,
versions, enums, other models). Something holding a live or mutable thing (a mapping such as
``os.environ``, a callable, a file) is a plain ``@dataclass(frozen=True, eq=False)``, as
:class:`colabenv._host.HostProbe` is; ``tests/test_layout.py`` holds models to this.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: object) -> Callable[[Any], Any]:
        return lambda decorated: decorated


T = TypeVar("T")


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def model(cls: type[T]) -> type[T]:
    """``@dataclass(frozen=True)``: fields, ``__init__``, immutability, equality, hash, repr."""
    made = dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)
    fields = dataclasses.fields(made)  # type: ignore[arg-type]
    shared: dict[str, object] = {
        "__model_values__": staticmethod(_getter(tuple(f.name for f in fields if f.compare))),
        "__model_shown__": tuple(f.name for f in fields if f.repr),
    }
    if "__eq__" not in cls.__dict__:
        shared.update(__eq__=_Value.__eq__, __hash__=_Value.__hash__)
    if "__repr__" not in cls.__dict__:
        shared["__repr__"] = _Value.__repr__
    for name, value in shared.items():
        setattr(made, name, value)
    return made


def _getter(names: tuple[str, ...]) -> Callable[[object], tuple[object, ...]]:
    if not names:
        return lambda _instance: ()
    if len(names) == 1:
        single = operator.attrgetter(names[0])
        return lambda instance: (single(instance),)
    getter: Callable[[object], tuple[object, ...]] = operator.attrgetter(*names)
    return getter


class _Value:
    """Where :func:`model` takes equality, hash and repr from (it does not subclass it)."""

    __model_values__: Callable[[object], tuple[object, ...]]
    __model_shown__: tuple[str, ...]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.__model_values__(self) == self.__model_values__(other)

    def __hash__(self) -> int:
        return hash(self.__model_values__(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__model_shown__)
        return f"{self.__class__.__qualname__}({shown})"
