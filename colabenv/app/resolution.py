"""A profile and a target source to a ``Resolution``: the one pipeline from profile to catalog to
resolution, and the one place the catalog is loaded with its overlays (:func:`load_catalog`).

A target comes from one of two sources (:class:`TargetSource`): the target flags and
``COLABENV_*`` variables over what this host is (:func:`host_fingerprint`), or a profile's named
target (``[targets]``), made on no host at all (:mod:`colabenv.host.named`) so every machine
renders and locks the same for it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from colabenv.errors import TargetError, UsageError
from colabenv.models import (
    Catalog,
    Fingerprint,
    Framework,
    Profile,
    Resolution,
    RuntimeFacts,
    Target,
    TargetOverrides,
    TargetSpec,
)
from colabenv.models.frozen import model
from colabenv.resolve.overrides import TargetFlags

if TYPE_CHECKING:
    from colabenv.app.confirmation import IndexReader
    from colabenv.host.interpreter import Interpreter


@model
class TargetSource:
    """Where the target of a resolution comes from: the flags (``COLABENV_*`` variables beside
    them) over this host's detection, or ``name``, a target of the profile's ``[targets]``, which
    stands for the flags (none may be given beside it)."""

    flags: TargetFlags = TargetFlags()
    name: str | None = None
    asked_by: str = "--target"
    """What gave ``name``, for messages: the flag, or ``target=`` of the Python API."""


@model
class Resolved:
    """A resolution and the catalog it was made from (``lock`` reads the newest releases)."""

    resolution: Resolution
    catalog: Catalog


def _shipped_runtimes() -> RuntimeFacts:
    """``runtimes.toml``, its module imported only when a runtime is named."""
    from colabenv.catalog.runtimes import shipped_runtimes

    return shipped_runtimes()


def overrides_of(flags: TargetFlags) -> TargetOverrides:
    """The overrides the flags and ``COLABENV_*`` variables give, checked against the shipped
    TPU and runtime facts."""
    from colabenv.host.detect import shipped_tpu_facts
    from colabenv.resolve.overrides import resolve_overrides

    return resolve_overrides(flags, tpu_facts=shipped_tpu_facts, runtime_facts=_shipped_runtimes)


def host_fingerprint(
    flags: TargetFlags | None = None, interpreter: Interpreter | None = None, *, cross_check: bool = False
) -> Fingerprint:
    """This host (or ``interpreter``'s Python on it), with the flags and variables over what
    they give; ``cross_check``: the ROCm tools check what the files say (``detect``)."""
    from colabenv.host.detect import detect

    return detect(overrides_of(flags or TargetFlags()), interpreter=interpreter, cross_check=cross_check)


def spec_target(profile: Profile, spec: TargetSpec) -> Target:
    """The target ``spec`` names, made on no host; a value the flags' rules refuse is a
    ProfileError naming ``targets.NAME``."""
    from colabenv.host.detect import shipped_tpu_facts
    from colabenv.host.named import named_target
    from colabenv.resolve.targets import spec_overrides, target_problem

    overrides = spec_overrides(profile, spec, tpu_facts=shipped_tpu_facts, runtime_facts=_shipped_runtimes)
    try:
        return named_target(overrides)
    except TargetError as error:
        raise target_problem(profile, spec, error) from None


def named_targets(profile: Profile) -> tuple[Target, ...]:
    """Every target of the profile's ``[targets]``, each made as ``render`` and ``lock`` make it
    (:func:`spec_target`): the one validation of named targets, ``profiles check``'s too."""
    return tuple(spec_target(profile, spec) for spec in profile.targets)


def target_of(profile: Profile, source: TargetSource) -> Target:
    """The target ``source`` says; a named target beside target flags is a UsageError."""
    if source.name is None:
        return host_fingerprint(source.flags).target
    from colabenv.resolve.targets import named_spec

    if source.flags != TargetFlags():
        raise UsageError(f"target {source.name!r} says what the target is; leave out the target flags")
    return spec_target(profile, named_spec(profile, source.name, source.asked_by))


def load_catalog(
    profile: Profile | None, target: Target | None = None, frameworks: Iterable[Framework] | None = None
) -> Catalog:
    """The catalog a resolution of ``profile`` uses: the shipped one (the part its frameworks,
    or ``frameworks``, need, and with a ``target`` the part it can use) with the overlays of
    its ``[catalog] paths`` and of ``COLABENV_CATALOG`` merged over it; without a profile, the
    whole catalog with the variable's overlays."""
    from colabenv.accelerators.registry import accelerator_of
    from colabenv.catalog.load import ALL_PARTS, catalog_for

    parts = accelerator_of(target).traits.catalog_parts if target is not None else ALL_PARTS
    return catalog_for(profile, os.environ, frameworks, target=target, parts=parts)


def resolve_for(
    profile: Profile, target: Target, *, allow_unconfirmed: bool = False, index: IndexReader | None = None
) -> Resolved:
    """``profile`` resolved for ``target`` with its catalog; with ``index`` (and unless the
    profile's ``[catalog] check_index = false``), its choices confirmed against the indexes
    they come from (:mod:`colabenv.app.confirmation`)."""
    catalog = load_catalog(profile, target)
    if index is not None and profile.check_index:
        from colabenv.app.confirmation import confirmed_resolution

        resolution = confirmed_resolution(
            profile, target, catalog, index, allow_unconfirmed=allow_unconfirmed
        )
        return Resolved(resolution, catalog)
    from colabenv.resolve.resolver import resolve

    return Resolved(resolve(profile, target, catalog, allow_unconfirmed=allow_unconfirmed), catalog)


def resolve_profile(
    profile: Profile,
    source: TargetSource,
    *,
    allow_unconfirmed: bool = False,
    index: IndexReader | None = None,
) -> Resolution:
    """``profile`` resolved for the target ``source`` says (confirmed by ``index``, where given)."""
    target = target_of(profile, source)
    return resolve_for(profile, target, allow_unconfirmed=allow_unconfirmed, index=index).resolution
