"""What a target's image already has, held in its lock as the script holds it (issue 34).

A target that names its image (a Colab runtime, ``--installed-from``) has packages installed;
the script installs nothing that already satisfies the profile. Its lock keeps the same
versions: each installed distribution goes to the resolver as a constraint of its installed
version (``numpy==2.0.2``), unless the resolution asks for a version it excludes (a profile's
``numpy>=2.3``, a framework pinned to another release, a component bound): that one is
replaced, and a note says so. A constraint names no package the closure does not pull in, so
the image's other packages add nothing to the lock. No I/O.
"""

from __future__ import annotations

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name

from colabenv.models import Resolution
from colabenv.models.frozen import model

REPLACED_NAMED = 8
"""The most replaced distributions named one a line (then how many more)."""


@model
class ImagePins:
    """The image's versions the resolver is held to, and one line per version replaced."""

    constraints: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def _asked(resolution: Resolution) -> dict[NormalizedName, list[Requirement]]:
    """What the resolution asks of each distribution: its requirements and component bounds."""
    asked: dict[NormalizedName, list[Requirement]] = {}
    for text in (*resolution.requirements, *resolution.constraint_lines):
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        asked.setdefault(canonicalize_name(requirement.name), []).append(requirement)
    return asked


def image_pins(resolution: Resolution) -> ImagePins:
    """The constraints that keep the image's versions (none for a target without an image) and
    the notes naming each installed version the resolution asks to replace, and why."""
    asked = _asked(resolution)
    constraints: list[str] = []
    replaced: list[str] = []
    for dist in resolution.target.installed.dists:
        version = dist.parsed_version
        if version is None:
            continue
        refused = [r for r in asked.get(dist.name, []) if not r.specifier.contains(version, prereleases=True)]
        if refused:
            replaced.append(
                f"the image's {dist.name} {dist.version} is replaced: the profile asks {refused[0]}"
            )
        else:
            constraints.append(f"{dist.name}=={dist.version}")
    notes = replaced[:REPLACED_NAMED]
    if len(replaced) > REPLACED_NAMED:
        notes.append(f"... and {len(replaced) - REPLACED_NAMED} more of the image's versions replaced")
    return ImagePins(tuple(constraints), tuple(notes))
