"""`colabenv profiles list | show NAME | check FILE...`."""

from __future__ import annotations

import argparse
import sys

from colabenv._commands._common import locate_profile
from colabenv.errors import ColabenvError
from colabenv.profile import golden_path, golden_profiles, load_profile, read_profile_text


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


def _check(files: list[str]) -> int:
    """One file: its error goes up to the CLI. Several: every file is checked, errors listed."""
    if len(files) == 1:
        profile = load_profile(locate_profile(files[0]))
        print(f"ok: {files[0]} ({profile.name})")
        return 0
    failed = 0
    for file in files:
        try:
            profile = load_profile(locate_profile(file))
        except ColabenvError as error:
            sys.stdout.flush()
            sys.stderr.write(f"colabenv: {error}\n")
            failed += 1
            continue
        print(f"ok: {file} ({profile.name})")
    return 2 if failed else 0
