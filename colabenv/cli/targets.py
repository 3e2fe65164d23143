"""What commands share about a profile's named targets (``[targets]``, ``--target NAME``).

A named target stands for target flags: beside any of them it is a usage error (the profile
already says what the target is). Its overrides are checked with the flags' rules, and the
target is made on no host at all (:mod:`colabenv.host.named`), so every machine locks and
renders the same section for it.
"""

from __future__ import annotations

import argparse

from colabenv.errors import ProfileError, TargetError, UsageError
from colabenv.models import Profile, Target, TargetSpec

TARGET_FLAGS = (
    ("driver", "--driver"),
    ("cuda", "--cuda"),
    ("compute_capability", "--compute-capability"),
    ("python", "--python"),
    ("cpu", "--cpu"),
    ("tpu", "--tpu"),
    ("runtime", "--runtime"),
    ("installed_from", "--installed-from"),
)


def refuse_target_flags(args: argparse.Namespace, what: str) -> None:
    """UsageError when a target flag is given beside ``what`` (``--target``, a sectioned lock)."""
    given = [flag for attribute, flag in TARGET_FLAGS if getattr(args, attribute, None)]
    if given:
        raise UsageError(f"{what} says what the target is; leave out {', '.join(given)}")


def spec_target(profile: Profile, spec: TargetSpec) -> Target:
    """The target ``spec`` names, made on no host; a value the flags' rules refuse is a
    ProfileError naming ``targets.NAME``."""
    from colabenv.catalog.runtimes import shipped_runtimes
    from colabenv.host.detect import shipped_tpu_facts
    from colabenv.host.named import named_target
    from colabenv.resolve.targets import spec_overrides

    overrides = spec_overrides(profile, spec, tpu_facts=shipped_tpu_facts, runtime_facts=shipped_runtimes)
    try:
        return named_target(overrides)
    except TargetError as error:
        raise ProfileError(profile.path, f"targets.{spec.name}", error.message) from None
