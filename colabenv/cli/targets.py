"""What commands share about a profile's named targets (``[targets]``, ``--target NAME``).

A named target stands for target flags: beside any of them it is a usage error (the profile
already says what the target is). The target itself is made by
:func:`colabenv.app.resolution.spec_target`.
"""

from __future__ import annotations

import argparse

from colabenv.errors import UsageError

TARGET_FLAGS = (
    ("driver", "--driver"),
    ("cuda", "--cuda"),
    ("compute_capability", "--compute-capability"),
    ("python", "--python"),
    ("cpu", "--cpu"),
    ("tpu", "--tpu"),
    ("runtime", "--runtime"),
    ("platform", "--platform"),
    ("rocm", "--rocm"),
    ("gfx", "--gfx"),
    ("installed_from", "--installed-from"),
)


def refuse_target_flags(args: argparse.Namespace, what: str) -> None:
    """UsageError when a target flag is given beside ``what`` (``--target``, a sectioned lock)."""
    given = [flag for attribute, flag in TARGET_FLAGS if getattr(args, attribute, None)]
    if given:
        raise UsageError(f"{what} says what the target is; leave out {', '.join(given)}")
