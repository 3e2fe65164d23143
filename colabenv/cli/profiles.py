"""`colabenv profiles list | show NAME | check FILE...`.

``check`` validates each profile, its named targets as ``render`` and ``lock`` make them, and
the catalog overlays it names (its ``[catalog] paths`` and ``COLABENV_CATALOG``): every catalog
file in them, merged over the shipped catalog.
"""

from __future__ import annotations

import argparse
import os
import sys

from colabenv.cli.common import locate_profile
from colabenv.errors import ColabenvError
from colabenv.models import Profile
from colabenv.profile.files import golden_path
from colabenv.profile.load import golden_profiles, load_profile, read_profile_text


def run(args: argparse.Namespace) -> int:
    action: str = args.profiles_command
    if action == "list":
        return _list()
    if action == "show":
        return _show(args.name)
    return _check(list(args.files))


def _list() -> int:
    rows = golden_profiles()
    width = max((len(name) for name, _, _ in rows), default=0)
    for name, description, _ in rows:
        print(f"{name:<{width}}  {description}".rstrip())
    return 0


def _show(name: str) -> int:
    text = read_profile_text(golden_path(name))
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def _checked(file: str) -> str:
    """The ``ok:`` line for one profile whose named targets and overlays hold together too."""
    from colabenv.app.resolution import named_targets
    from colabenv.catalog.load import load_overlay, overlay_folders, shipped_catalog, with_overlays

    profile: Profile = load_profile(locate_profile(file))
    named_targets(profile)
    folders = overlay_folders(profile, os.environ)
    with_overlays(shipped_catalog(), [load_overlay(folder, named) for folder, named in folders])
    overlays = ""
    if folders:
        overlays = f"; {len(folders)} catalog overlay{'s' if len(folders) > 1 else ''}"
    return f"ok: {file} ({profile.name}{overlays})"


def _check(files: list[str]) -> int:
    """One file: its error goes up to the CLI. Several: every file is checked, errors listed."""
    if len(files) == 1:
        print(_checked(files[0]))
        return 0
    failed = 0
    for file in files:
        try:
            line = _checked(file)
        except ColabenvError as error:
            sys.stdout.flush()
            sys.stderr.write(f"colabenv: {error}\n")
            failed += 1
            continue
        print(line)
    return 2 if failed else 0
