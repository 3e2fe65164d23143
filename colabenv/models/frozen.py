"""``@model``: the frozen dataclass every colabenv value is, with its value semantics written once.

``@dataclass(frozen=True)`` compiles six methods from generated source when a module is
imported (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``,
``__delattr__``), each with its own ``exec`` on Python 3.12 and older. ``@model`` has
dataclasses collect the fields only (``init=False``: nothing compiled), makes ``__init__`` a
closure over the fields (the frozen kind: it sets each field with ``object.__setattr__``, then
calls ``__post_init__`` where there is one; nothing compiled either), and takes the rest from
one shared class: immutability (``__setattr__`` and ``__delattr__`` raise
:class:`dataclasses.FrozenInstanceError`) and the equality, hash and repr dataclasses would
give, reading the fields through one :func:`operator.attrgetter` per model. A model that must be
ordered defines ``__lt__`` under :func:`functools.total_ordering`. ``dataclasses.fields``,
``replace`` and ``astuple`` work on models as on any dataclass (``tests/test_startup.py`` holds
``@model`` to a frozen dataclass).

What it saves is measured in docs/decisions/0001-model.md (``bench/mechanisms.py``): render's
path makes about 60 model classes.

``@model`` is for values only: immutable data compared and hashed by what it holds (tuples,
versions, enums, other models). Something holding a live or mutable thing (a mapping such as
``os.environ``, a callable, a file) is a ``@record``: the same fields, ``__init__`` and
immutability, compared and hashed by identity and shown by ``object``'s repr (nothing it holds,
``os.environ`` included, is printed by accident), as :class:`colabenv.host.probe.HostProbe` is;
``tests/test_layout.py`` holds models to this.
"""

from __future__ import annotations

import dataclasses
import inspect
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


def _init(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., None]:
    """The ``__init__`` ``@dataclass(frozen=True)`` writes for ``fields``, as one closure rather
    than compiled source: the same parameters (shown by :func:`inspect.signature`), defaults,
    factories, fields left out of ``__init__``, and ``__post_init__``. The values go into the
    instance's ``__dict__`` in one update, in field order (what ``object.__setattr__`` per field
    would leave).

    Compiling a generated ``__init__`` per class cost about 7% of ``colabenv render``'s
    instructions (50 classes, 31.5M of 423M, callgrind); binding the arguments here costs about
    as much per instance as the generated one, and render makes some 800
    (docs/decisions/0001-model.md)."""
    taken = [f for f in fields if f.init]
    positional = [f.name for f in taken if not f.kw_only]
    accepted = frozenset(f.name for f in taken)
    never = len(fields)
    # (name, its place among the positional parameters or `never`, default, factory, in __init__)
    specs = tuple(
        (
            f.name,
            positional.index(f.name) if f.init and not f.kw_only else never,
            f.default,
            _factory(f),
            f.init,
        )
        for f in fields
        if f.init or f.default is not _MISSING or f.default_factory is not _MISSING
    )
    most = len(positional)
    post_init = hasattr(cls, "__post_init__")
    name = f"{cls.__qualname__}.__init__()"

    def __init__(self: object, *args: object, **kwargs: object) -> None:
        given = len(args)
        if given > most:
            raise TypeError(f"{name} takes {most + 1} positional arguments but {given + 1} were given")
        for key in kwargs:
            if key not in accepted:
                raise TypeError(f"{name} got an unexpected keyword argument {key!r}")
        values: dict[str, object] = {}
        for field_name, position, default, factory, in_init in specs:
            if position < given:
                if field_name in kwargs:
                    raise TypeError(f"{name} got multiple values for argument {field_name!r}")
                values[field_name] = args[position]
            elif in_init and field_name in kwargs:
                values[field_name] = kwargs[field_name]
            elif default is not _MISSING:
                values[field_name] = default
            elif factory is not None:
                values[field_name] = factory()
            else:
                raise TypeError(f"{name} missing required argument: {field_name!r}")
        self.__dict__.update(values)
        if post_init:
            self.__post_init__()  # type: ignore[attr-defined]

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__module__ = cls.__module__
    __init__.__signature__ = _signature(taken)  # type: ignore[attr-defined]
    return __init__


_MISSING: Any = dataclasses.MISSING


def _factory(f: dataclasses.Field[Any]) -> Callable[[], object] | None:
    factory = f.default_factory
    return None if factory is _MISSING else factory  # type: ignore[return-value]


def _signature(taken: list[dataclasses.Field[Any]]) -> inspect.Signature:
    """What :func:`inspect.signature` shows for the ``__init__`` of these fields (the ``self``
    parameter included, as for any function)."""
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for f in taken:
        kind = inspect.Parameter.KEYWORD_ONLY if f.kw_only else inspect.Parameter.POSITIONAL_OR_KEYWORD
        default: object = inspect.Parameter.empty
        if f.default is not _MISSING:
            default = f.default
        elif f.default_factory is not _MISSING:
            default = _FACTORY
        parameters.append(inspect.Parameter(f.name, kind, default=default, annotation=f.type))
    return inspect.Signature(parameters, return_annotation="None", __validate_parameters__=False)


class _Factory:
    """What the signature shows as the default of a field with a ``default_factory``."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


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
