"""``colabenv pin PROFILE --lock LOCK``: framework specifiers become the lock's exact versions,
and so do those of the CUDA packages ``[frameworks]`` names (``xformers = "*"``, ``cupy``: the
release of ``cupy-cuda12x`` or ``cupy-cuda13x`` the lock holds).

The profile is edited with tomlkit, so its comments, key order and layout survive: a string
specifier is replaced in place, a table keeps its other keys (variant, companions) and gets
its ``version`` (and each companion the lock holds) rewritten. A framework the lock holds but
the file does not name (it comes from an ``extends`` parent) is added to the file's
``[frameworks]`` table. The result is validated before it replaces the file. A lock of several
targets pins the profile only where its sections agree on every framework version.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import MutableMapping, Sequence
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from colabenv.cli.common import write_text_atomic
from colabenv.errors import ProfileError, UsageError, printable
from colabenv.lock.content import Lock
from colabenv.lock.file import read_lock_file
from colabenv.models.frameworks import spellings_of
from colabenv.models.packages import PackageRequest


def _public(version: str) -> str:
    try:
        return Version(version).public
    except InvalidVersion:
        return version


def _pins(lock: Lock, packages: Sequence[PackageRequest] = ()) -> dict[str, str]:
    """Framework -> exact specifier, from the lock's header (its recorded choices); then each
    CUDA package the profile names (its key as written) -> the exact release of its
    distribution the lock holds (``cupy`` -> ``cupy-cuda12x``'s)."""
    pins: dict[str, str] = {}
    for framework in lock.header.frameworks:
        locked = lock.version_of(str(framework.framework))
        version = _public(locked) if locked else framework.version
        pins[str(framework.framework)] = f"=={version}"
    for request in packages:
        found = [v for v in map(lock.version_of, spellings_of(request.name)) if v is not None]
        if found:
            pins[request.key] = f"=={_public(found[0])}"
    return pins


def _pin_table(table: MutableMapping[str, Any], pin: str, lock: Lock) -> list[str]:
    changed = []
    if str(table.get("version", "")) != pin:
        table["version"] = pin
        changed.append(f"version = {pin!r}")
    for key in list(table.keys()):
        if key in ("version", "variant"):
            continue
        value = table[key]
        if value is False:
            continue
        locked = lock.version_of(canonicalize_name(key))
        if locked is None:
            continue
        companion_pin = f"=={_public(locked)}"
        if str(value) != companion_pin:
            table[key] = companion_pin
            changed.append(f"{key} = {companion_pin!r}")
    return changed


def pin_text(
    text: str, lock: Lock, source: Path, packages: Sequence[PackageRequest] = ()
) -> tuple[str, list[str]]:
    """The profile text with the specifiers of its frameworks and of the CUDA packages
    ``packages`` pinned, and what changed (for the report)."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        document = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ProfileError(source, None, f"not valid TOML: {exc}") from None
    frameworks = document.get("frameworks")
    if frameworks is None:
        frameworks = tomlkit.table()
        document["frameworks"] = frameworks
    if not isinstance(frameworks, MutableMapping):
        raise ProfileError(source, "frameworks", "expected a table")
    changes: list[str] = []
    for name, pin in _pins(lock, packages).items():
        current = frameworks.get(name)
        if current is False:
            continue
        if isinstance(current, MutableMapping):
            changes.extend(f"frameworks.{name}: {c}" for c in _pin_table(current, pin, lock))
        elif current is None or str(current) != pin:
            frameworks[name] = pin
            changes.append(f"frameworks.{name} = {pin!r}")
    return tomlkit.dumps(document), changes


def _replace_validated(path: Path, text: str) -> Path:
    """Rename the pinned text over ``path`` (a link's target) only once it loads as a profile;
    returns the path written."""
    from colabenv.profile.load import load_profile

    def check(candidate: Path) -> None:
        try:
            load_profile(candidate)
        except ProfileError as exc:
            raise ProfileError(path, exc.key, f"pinned profile would be invalid: {exc.problem}") from None

    return write_text_atomic(path, text, validate=check)


def _one_lock(path: Path, packages: Sequence[PackageRequest] = ()) -> Lock:
    """The lock whose framework and CUDA package versions the profile is pinned to: a lock of
    one target, or of several whose sections agree on every one of those versions (pinning one
    section's versions would take the others' away); UsageError naming the sections that
    disagree."""
    lock_file = read_lock_file(path)
    first = lock_file.first
    for section in lock_file.sections[1:]:
        if _pins(section.lock, packages) != _pins(first, packages):
            theirs, mine = _pins(section.lock, packages), _pins(first, packages)
            differ = sorted(k for k in {*theirs, *mine} if theirs.get(k) != mine.get(k))
            shown = ", ".join(
                f"{k} {mine.get(k, 'none')} in {lock_file.sections[0].name}, "
                f"{theirs.get(k, 'none')} in {section.name}"
                for k in differ
            )
            raise UsageError(
                f"{printable(path)}: its targets lock different framework versions ({shown}); "
                "one pin cannot hold them all"
            )
    return first


def run(args: argparse.Namespace) -> int:
    from colabenv.profile.load import load_profile, read_profile_text

    path = Path(args.profile)
    if not path.is_file():
        raise UsageError(f"{printable(path)}: no such profile file (pin edits a file, not a golden name)")
    profile = load_profile(path)
    lock = _one_lock(Path(args.lock), profile.cuda_packages)
    if lock.header.profile_name != profile.name:
        raise UsageError(
            f"{printable(args.lock)}: made for profile "
            f"{printable(lock.header.profile_name)!r}, not {profile.name!r}"
        )
    text = read_profile_text(path)
    new_text, changes = pin_text(text, lock, path, profile.cuda_packages)
    shown = printable(path)
    if not changes:
        sys.stderr.write(f"colabenv: {shown}: frameworks already pinned to the lock\n")
        return 0
    written = _replace_validated(path, new_text)
    for change in changes:
        sys.stderr.write(f"colabenv: {shown}: {printable(change)}\n")
    target = f" (the file {printable(written)})" if written != path else ""
    sys.stderr.write(f"colabenv: {shown}{target} changed; run `colabenv lock` again to refresh the lock\n")
    return 0
