"""What several commands share: target flags to a Target, a profile argument to a Profile."""

from __future__ import annotations

import argparse

from colabenv.models import Target, TargetOverrides
from colabenv.settings import TargetFlags, resolve_overrides


def target_flags(args: argparse.Namespace) -> TargetFlags:
    return TargetFlags(
        driver=getattr(args, "driver", None),
        cuda=getattr(args, "cuda", None),
        compute_capability=tuple(getattr(args, "compute_capability", None) or ()),
        python=getattr(args, "python", None),
        cpu=bool(getattr(args, "cpu", False)),
        installed_from=getattr(args, "installed_from", None),
    )


def overrides_from_args(args: argparse.Namespace) -> TargetOverrides:
    return resolve_overrides(target_flags(args))


def target_from_args(args: argparse.Namespace) -> Target:
    """Flags and COLABENV_* variables first; whatever they leave open is detected."""
    from colabenv.detect import detect

    return detect(overrides_from_args(args)).target
