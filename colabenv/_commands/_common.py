"""What several commands share: target flags to a Target, a profile argument to a Profile."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from colabenv._files import write_atomic
from colabenv.errors import UsageError
from colabenv.models import Profile, Target, TargetOverrides
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


def load_profile_arg(name_or_path: str) -> Profile:
    """A profile file, or the name of a shipped golden profile."""
    from colabenv.profile import find_profile, load_profile

    return load_profile(find_profile(name_or_path))


def write_text_atomic(
    path: Path,
    text: str,
    *,
    mode: int | None = None,
    exclusive: bool = False,
    validate: Callable[[Path], None] | None = None,
) -> None:
    """:func:`colabenv._files.write_atomic` for text; a failure is one UsageError naming ``path``."""
    try:
        write_atomic(path, text.encode("utf-8"), mode=mode, exclusive=exclusive,
                     validate=validate)
    except FileExistsError:
        raise UsageError(f"{path}: already exists; not overwritten") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None
