"""``@model``: the frozen dataclass every colabenv value is, with its value semantics written once.

``@dataclass(frozen=True)`` compiles six methods from generated source when a module is
imported (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``,
``__delattr__``), each with its own ``exec`` on Python 3.12 and older. ``@model`` has
dataclasses collect the fields only (``init=False``: nothing compiled), compiles the one method
that is written out per class, ``__init__`` (the frozen kind: it sets each field with
``object.__setattr__``, then calls ``__post_init__`` where there is one), and takes the rest from
one shared class: immutability (``__setattr__`` and ``__delattr__`` raise
:class:`dataclasses.FrozenInstanceError`) and the equality, hash and repr dataclasses would
give, reading the fields through one :func:`operator.attrgetter` per model. A model that must be
ordered defines ``__lt__`` under :func:`functools.total_ordering`. ``dataclasses.fields``,
``replace`` and ``astuple`` work on models as on any dataclass (``tests/test_startup.py`` holds
``@model`` to a frozen dataclass).

What it saves, measured on a 2-core machine under Python 3.11 (five fields, median of seven
rounds of 200 classes): a model class is made in about 86 us where ``@dataclass(frozen=True)``
takes about 356 us; render's path makes about 50 of them (the decision record:
docs/decisions/0001-model.md).

``@model`` is for values only: immutable data compared and hashed by what it holds (tuples,
versions, enums, other models). Something holding a live or mutable thing (a mapping such as
``os.environ``, a callable, a file) is a ``@record``: the same fields, ``__init__`` and
immutability, compared and hashed by identity and shown by ``object``'s repr (nothing it holds,
``os.environ`` included, is printed by accident), as :class:`colabenv.host.probe.HostProbe` is;
``tests/test_layout.py`` holds models to this.
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
    made, fields = _frozen_fields(cls)
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


@dataclass_transform(frozen_default=True, eq_default=False, field_specifiers=(dataclasses.field,))
def record(cls: type[T]) -> type[T]:
    """``@dataclass(frozen=True, eq=False, repr=False)``: fields, ``__init__`` and immutability,
    for a class holding live things (compared by identity)."""
    made, _ = _frozen_fields(cls)
    return made


def _frozen_fields(cls: type[T]) -> tuple[type[T], tuple[dataclasses.Field[Any], ...]]:
    """``cls`` as a dataclass (the fields collected, nothing compiled) given the frozen
    ``__init__``, ``__setattr__`` and ``__delattr__``; and its fields."""
    undocumented = not cls.__doc__
    if undocumented:
        cls.__doc__ = _PENDING_DOC
    made = dataclasses.dataclass(init=False, eq=False, repr=False)(cls)
    fields = dataclasses.fields(made)  # type: ignore[arg-type]
    if undocumented:
        made.__doc__ = f"{cls.__name__}({', '.join(f.name for f in fields if f.init)})"
    methods: dict[str, object] = {"__setattr__": _Value.__setattr__, "__delattr__": _Value.__delattr__}
    if "__init__" not in cls.__dict__:
        methods["__init__"] = _init(made, fields)
    for name, method in methods.items():
        setattr(made, name, method)
    return made, fields


_PENDING_DOC = "(written by model once the fields are known)"
"""What an undocumented class holds while dataclasses runs: dataclasses writes the doc of a class
without one from ``inspect.signature``, which for a class with ``init=False`` means tokenizing
``object.__init__``'s text signature (about 1.5 ms on render's path, most of it compiling
tokenize's patterns)."""


class _Factory:
    """The default of a parameter whose field has a ``default_factory``."""

    def __repr__(self) -> str:
        return "<factory>"


_HAS_FACTORY = _Factory()


def _init(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., None]:
    """The ``__init__`` ``@dataclass(frozen=True)`` writes for ``fields``, compiled once."""
    params: list[str] = []
    lines: list[str] = []
    names: dict[str, object] = {"_set": object.__setattr__, "_HAS_FACTORY": _HAS_FACTORY}
    keyword_only = False
    for f in fields:
        default, factory = f"_default_{f.name}", f"_factory_{f.name}"
        if f.default is not dataclasses.MISSING:
            names[default] = f.default
        if f.default_factory is not dataclasses.MISSING:
            names[factory] = f.default_factory
        if f.init:
            if f.kw_only and not keyword_only:
                params.append("*")
                keyword_only = True
            if f.default is not dataclasses.MISSING:
                params.append(f"{f.name}={default}")
            elif f.default_factory is not dataclasses.MISSING:
                params.append(f"{f.name}=_HAS_FACTORY")
            else:
                params.append(f.name)
            value = f.name
            if f.default_factory is not dataclasses.MISSING:
                value = f"{factory}() if {f.name} is _HAS_FACTORY else {f.name}"
        elif f.default is not dataclasses.MISSING:
            value = default
        elif f.default_factory is not dataclasses.MISSING:
            value = f"{factory}()"
        else:
            continue
        lines.append(f"    _set(self, {f.name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        lines.append("    self.__post_init__()")
    source = f"def __init__(self{''.join(', ' + p for p in params)}) -> None:\n"
    source += "\n".join(lines or ["    pass"]) + "\n"
    exec(compile(source, f"<model {cls.__module__}.{cls.__qualname__}>", "exec"), names)
    init: Callable[..., None] = names["__init__"]  # type: ignore[assignment]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    return init


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

    def __setattr__(self, name: str, value: object) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
