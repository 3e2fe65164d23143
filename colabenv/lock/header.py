"""One check of a lock's header, whichever form it is read from.

Each form only reads its own syntax: the requirements form its ``# key: value`` comment lines
(:mod:`.requirements`), the PEP 751 form its ``[tool.colabenv]`` table (:mod:`.pylock`). Each
hands :func:`checked_header` a :class:`HeaderSource`: the raw value of each field by its name
(the ``[tool.colabenv]`` key; in comments, ``target-`` before a target's key and a list's key
in the singular), with the form's own error for a field that is missing, of the wrong type or
malformed in its syntax, and for where a value is. :func:`checked_header` checks every value
(:mod:`.content`'s rules) and builds the :class:`~colabenv.lock.content.LockHeader`, in one
order, so both forms refuse the same values with the same words.

The accelerator's fields of the target (``driver``, ``requires-driver``, ``cuda``,
``compute-capabilities``, ``tpu``, ``rocm``, ``gfx``, ``accelerator``) are read and checked in
:func:`_device_target` alone, with ``python-needs`` (absent from earlier locks). Where the
two forms word a refusal differently (a form shows the value, the other names the shape),
:meth:`HeaderSource.malformed` keeps each form's words.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from colabenv.accelerators.tpu import tpu_problem
from colabenv.errors import ColabenvError
from colabenv.lock.content import (
    LockHeader,
    LockTarget,
    accelerator_problem,
    check_header_text,
    checked_constraint,
    checked_cuda_package,
    checked_framework,
    checked_profile_hash,
    is_sha256,
)
from colabenv.models import LockedCudaPackage, LockedFramework, TpuTarget

SHARED_KEYS = ("colabenv-version", "profile", "profile-hash", "resolver")
"""What every section of a lock shares: ``[tool.colabenv]`` itself in PEP 751."""
TARGET_KEYS = (
    "driver",
    "requires-driver",
    "cuda",
    "compute-capabilities",
    "python",
    "platform",
    "accelerator",
    "tpu",
    "python-needs",
    "rocm",
    "gfx",
)
"""The target's fields: ``target-KEY`` comment lines, the ``target`` table in PEP 751."""
LIST_KEYS = ("frameworks", "cuda-packages", "constraints")
"""Fields given once per item: one comment line each (``framework``, ``cuda-package``,
``constraint``), an array in PEP 751."""
SHAPES = {
    "profile-hash": "sha256:<64 hex digits>",
    "pins-sha256": "64 hex digits",
    "constraints": "a requirement",
}
"""What a malformed value of these fields should have been (:meth:`HeaderSource.malformed`)."""

FrameworkFields = tuple[str, str, str, "str | None"]
"""A framework as a header records it: name, version, variant, index (None: the default)."""
CudaPackageFields = tuple[str, str, str, str, "str | None"]
"""A CUDA package as a header records it: name, distribution, version, variant, index."""


class HeaderSource(Protocol):
    """A lock's header as one form writes it: each field's raw value by its name
    (:data:`SHARED_KEYS`, :data:`TARGET_KEYS`, :data:`LIST_KEYS`, ``pins-sha256``), unchecked
    but for the form's syntax, and the form's errors, which say where the value is.

    Each value is read when it is asked for, so a lock with several faults is refused for the
    one :func:`checked_header` meets first."""

    def text(self, key: str) -> str:
        """The value of ``key`` (the form's error when it is missing or not one string)."""
        ...

    def given(self, key: str) -> str | None:
        """The value of ``key``, None when the form has no such key (earlier locks)."""
        ...

    def optional(self, key: str) -> str | None:
        """The value of a target field that may have none: None when the form says so."""
        ...

    def listed(self, key: str) -> tuple[str, ...]:
        """The values of a target field that is a list (none: empty)."""
        ...

    def kind_value(self, key: str) -> str | None:
        """The value of a target field only one kind's targets write (``rocm``): None where
        it is absent (another kind, earlier locks) or the form says there is none."""
        ...

    def kind_listed(self, key: str) -> tuple[str, ...]:
        """The values of a list field only one kind's targets write (``gfx``): empty where it
        is absent or the form says there are none."""
        ...

    def tpu(self) -> TpuTarget | None:
        """The ``tpu`` target field, its parts read but not checked (None: no TPU)."""
        ...

    def frameworks(self) -> Iterable[tuple[int, FrameworkFields]]:
        """(where, fields) of each framework, read when the iteration reaches it."""
        ...

    def cuda_packages(self) -> Iterable[tuple[int, CudaPackageFields]]:
        """(where, fields) of each CUDA package, read when the iteration reaches it."""
        ...

    def constraints(self) -> Sequence[tuple[int, str]]:
        """(where, text) of each component constraint."""
        ...

    def pins_digest(self, schema: int) -> str | None:
        """The ``pins-sha256`` a lock of ``schema`` records (None: that schema has none)."""
        ...

    def fail(self, key: str, why: str, at: int | None = None) -> ColabenvError:
        """The error for the value of ``key`` (its item ``at``, from an iteration above)."""
        ...

    def malformed(self, key: str, value: str, at: int | None = None) -> ColabenvError:
        """The error for ``value`` of ``key`` (one of :data:`SHAPES`), in the form's words."""
        ...


def checked_header(source: HeaderSource, schema: int) -> tuple[LockHeader, str | None]:
    """The header ``source`` records, every value checked, for a lock whose ``lock-schema``
    (read and checked by the form) is ``schema``; and the ``pins-sha256`` it records."""
    profile_name = source.text("profile")
    profile_hash = source.text("profile-hash")
    if checked_profile_hash(profile_hash) is None:
        raise source.malformed("profile-hash", profile_hash)
    for key in ("colabenv-version", "resolver"):
        problem = check_header_text(key, source.text(key))
        if problem:
            raise source.fail(key, problem)
    target = _device_target(source, source.text("python"), source.text("platform"))
    frameworks = tuple(_framework(source, at, fields) for at, fields in source.frameworks())
    cuda_packages = tuple(_cuda_package(source, at, fields) for at, fields in source.cuda_packages())
    constraints = []
    for at, text in source.constraints():
        constraint = checked_constraint(text)
        if constraint is None:
            raise source.malformed("constraints", text, at)
        constraints.append(constraint)
    digest = source.pins_digest(schema)
    if digest is not None and not is_sha256(digest):
        raise source.malformed("pins-sha256", digest)
    header = LockHeader(
        colabenv_version=source.text("colabenv-version"),
        profile_name=profile_name,
        profile_hash=profile_hash,
        target=target,
        frameworks=frameworks,
        resolver=source.text("resolver"),
        schema=schema,
        constraints=tuple(constraints),
        cuda_packages=cuda_packages,
    )
    return header, digest


def _framework(source: HeaderSource, at: int, fields: FrameworkFields) -> LockedFramework:
    found = checked_framework(*fields)
    if isinstance(found, str):
        raise source.fail("frameworks", found, at)
    return found


def _cuda_package(source: HeaderSource, at: int, fields: CudaPackageFields) -> LockedCudaPackage:
    found = checked_cuda_package(*fields)
    if isinstance(found, str):
        raise source.fail("cuda-packages", found, at)
    return found


# ---------------------------------------------------------------------------------------------
# The accelerator's fields of the target


def _device_target(source: HeaderSource, python: str, platform: str) -> LockTarget:
    """The target, of ``python`` and ``platform`` and the accelerator fields ``source`` holds:
    each read (a TPU's parts checked as it is read), then the whole target checked, then
    ``accelerator`` (absent from earlier locks) held to what the rest says."""
    capabilities = source.listed("compute-capabilities")
    tpu = source.tpu()
    if tpu is not None:
        problem = tpu_problem(tpu)
        if problem is not None:
            raise source.fail("tpu", problem)
    target = LockTarget(
        driver=source.optional("driver"),
        required_driver=source.optional("requires-driver"),
        cuda=source.optional("cuda"),
        compute_capabilities=capabilities,
        python=python,
        platform=platform,
        tpu=tpu,
        python_needs=source.given("python-needs"),
        rocm=source.kind_value("rocm"),
        gfx=source.kind_listed("gfx"),
    )
    problem = target.problem()
    if problem:
        key, _, why = problem.partition(": ")
        raise source.fail(key, why)
    written = source.given("accelerator")
    if written is not None:
        problem = accelerator_problem(written, target)
        if problem:
            raise source.fail("accelerator", problem)
    return target
