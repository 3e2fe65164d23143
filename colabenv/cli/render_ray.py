"""``colabenv render PROFILE --lock LOCK --format ray [-o FILE.json|FILE.yaml] [--wheelhouse
DIR]``: a Ray ``runtime_env`` of the lock's section (:mod:`colabenv.engines.ray`): JSON on
stdout, or ``-o FILE`` as JSON or YAML by its extension."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from colabenv.cli.common import write_text_atomic
from colabenv.errors import UsageError, printable
from colabenv.script.plan import InstallPlan, LockInput

FORMS = {".json": "json", ".yaml": "yaml", ".yml": "yaml"}


def check_arguments(args: argparse.Namespace) -> None:
    """``--lock`` required; ``-o`` a ``.json``, ``.yaml`` or ``.yml`` file."""
    _output_form(args)


def _output_form(args: argparse.Namespace) -> str:
    if not args.lock:
        raise UsageError("--format ray needs --lock LOCK: the lock's section is what every node installs")
    if not args.output:
        return "json"
    form = FORMS.get(Path(args.output).suffix.lower())
    if form is None:
        raise UsageError(f"-o {printable(args.output)}: with --format ray, a .json, .yaml or .yml file")
    return form


def write(args: argparse.Namespace, plan: InstallPlan, lock: LockInput) -> None:
    """The ``runtime_env`` of the plan's lock section, to ``-o`` or stdout."""
    import json

    from colabenv._util.yaml import dump
    from colabenv.engines.ray import runtime_env

    value = runtime_env(plan)
    text = dump(value) if _output_form(args) == "yaml" else json.dumps(value, indent=2) + "\n"
    if args.output:
        write_text_atomic(Path(args.output), text)
    else:
        sys.stdout.write(text)
