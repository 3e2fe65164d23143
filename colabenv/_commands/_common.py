"""What several commands share: target flags to a Target, a profile argument to a Profile."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

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
    """Write ``text`` to ``path`` via a temporary file beside it: never half-written.

    ``validate`` sees the temporary file before it takes the name (an error leaves ``path`` as it
    was); ``exclusive`` refuses to replace an existing file; ``mode`` defaults to the existing
    file's, else 0o644.
    """
    try:
        fd, tmp = _create_beside(path)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        if validate is not None:
            validate(tmp)
        if mode is None:
            mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
        os.chmod(tmp, mode)
        if exclusive:
            os.link(tmp, path)
        else:
            os.replace(tmp, path)
    except FileExistsError:
        raise UsageError(f"{path}: already exists; not overwritten") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def _create_beside(path: Path) -> tuple[int, Path]:
    """A new, empty, private file next to ``path``, named after it and this process.

    What :func:`tempfile.mkstemp` does, without importing tempfile (and with it shutil, random
    and the compression modules) on the path of ``colabenv render -o``.
    """
    directory = path.parent if str(path.parent) else Path(".")
    for attempt in range(100):
        candidate = directory / f".{path.stem}.{os.getpid()}.{attempt}{path.suffix}"
        try:
            return os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), candidate
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path.name}")
