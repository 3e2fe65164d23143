"""A profile's named targets as target overrides, each value checked with its flag's rules.

:func:`spec_flags` turns a ``[targets]`` entry into the flags it stands for;
:func:`spec_overrides` checks them as the flags are checked (no environment variable takes
part: a named target is the same on every machine), a problem named by the profile file and
the key path, the values named by their keys (``team.toml: targets.nv.cuda: 13.0 conflicts with
driver 535.54.03 ...``: :func:`target_problem`). :func:`named_spec` finds a target by name, or
says which the profile has.
"""

from __future__ import annotations

from collections.abc import Callable

from colabenv.errors import ProfileError, TargetError, UsageError, printable
from colabenv.models import Profile, RuntimeFacts, TargetOverrides, TargetSpec, TpuFacts
from colabenv.resolve.overrides import TargetFlags, resolve_overrides


def spec_flags(spec: TargetSpec) -> TargetFlags:
    """The target flags a named target's keys stand for."""
    return TargetFlags(
        driver=spec.driver,
        cuda=spec.cuda,
        compute_capability=spec.compute_capability,
        python=spec.python,
        cpu=spec.cpu,
        tpu=spec.tpu,
        runtime=spec.runtime,
        platform=spec.platform,
        rocm=spec.rocm,
        gfx=spec.gfx,
    )


def spec_overrides(
    profile: Profile,
    spec: TargetSpec,
    *,
    tpu_facts: Callable[[], TpuFacts],
    runtime_facts: Callable[[], RuntimeFacts] | None = None,
) -> TargetOverrides:
    """The overrides of ``spec``, each value named by its key; ProfileError naming
    ``targets.NAME.KEY`` when a value the catalog must confirm (a TPU type, a runtime id) is not
    one."""
    try:
        return resolve_overrides(
            spec_flags(spec), {}, tpu_facts=tpu_facts, runtime_facts=runtime_facts, named=True
        )
    except TargetError as error:
        raise target_problem(profile, spec, error) from None


def target_problem(profile: Profile, spec: TargetSpec, error: TargetError) -> ProfileError:
    """``error`` of the named target ``spec`` as the profile's: its key path ``targets.NAME``,
    and the key the error is with where it names one (``targets.nv.cuda``)."""
    key = f"targets.{spec.name}" + (f".{error.key}" if error.key else "")
    return ProfileError(profile.path, key, error.message)


def named_spec(profile: Profile, name: str, asked_by: str = "--target") -> TargetSpec:
    """The target ``name`` of ``profile``; UsageError listing the targets it has, naming what
    asked for it (``--target``, ``target=`` of the Python API)."""
    spec = profile.target(name)
    if spec is None:
        known = ", ".join(s.name for s in profile.targets) or "none: it has no [targets] table"
        raise UsageError(
            f"{asked_by} {printable(name)[:40]!r}: profile {profile.name!r} has no such target "
            f"(targets: {known})"
        )
    return spec


def chosen_specs(profile: Profile, names: tuple[str, ...], every: bool) -> tuple[TargetSpec, ...]:
    """The targets ``--target NAME`` (repeatable) or ``--all-targets`` name, in the profile's
    order, each once; none when neither is given."""
    if every:
        if not profile.targets:
            raise UsageError(f"--all-targets: profile {profile.name!r} has no [targets] table")
        return profile.targets
    wanted = {named_spec(profile, name).name for name in names}
    return tuple(spec for spec in profile.targets if spec.name in wanted)
