"""The wheel tags a CPython of a target installs: the one rule, with each use's glibc ceiling.

A Linux target takes ``manylinux_2_N`` wheels for every glibc 2.N up to a ceiling, the legacy
``manylinux2014``/``2010``/``1`` names of those within it, and its own platform; any other
platform takes its own tag alone. Each use names its ceiling here:

- :data:`LOCK_GLIBC_MINOR`: what a lock is made for. The resolver is told this platform (uv's
  ``--python-platform``), and the framework files are checked against it before the resolver
  runs (:mod:`colabenv.lock.make`), so that a framework whose wheels all need a newer glibc is
  refused naming its index, not met as the resolver's "no set of pins".
- :data:`WHEELHOUSE_GLIBC_MINOR`: what a wheelhouse may bundle (:mod:`colabenv.wheelhouse`):
  of the files a lock records for a pin, the one with the most specific tag up to this
  ceiling. The host that installs it decides by its own glibc (``_target/helper.py``).

Wheel-variant file names (:func:`variant_wheel`, the WheelNext draft) are no wheel names to
``packaging``: the lock's file check and ``catalog refresh`` name those they leave aside in a
note (:func:`variant_note`), one line per project.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import InvalidWheelFilename, NormalizedName, parse_wheel_filename
from packaging.version import InvalidVersion, Version

LOCK_GLIBC_MINOR = 28
"""The glibc (2.28) a lock is made for: the resolver's platform and the framework file check."""
WHEELHOUSE_GLIBC_MINOR = 40
"""The newest glibc (2.40) whose wheels a wheelhouse ranks for a target."""
_OLDEST_GLIBC_MINOR = 5
_LEGACY_MANYLINUX = (("manylinux2014", 17), ("manylinux2010", 12), ("manylinux1", 5))
"""The names of manylinux before PEP 600, each with the glibc 2.N it means."""


def platform_tags(platform: str, glibc_minor: int) -> tuple[str, ...]:
    """The platform tags a target of ``platform`` (``linux_x86_64``) installs, most specific
    first: manylinux from glibc 2.``glibc_minor`` down, then the platform itself."""
    system, _, machine = platform.partition("_")
    if system != "linux" or not machine:
        return (platform,)
    return (
        *(f"manylinux_2_{minor}_{machine}" for minor in range(glibc_minor, _OLDEST_GLIBC_MINOR - 1, -1)),
        *(f"{name}_{machine}" for name, minor in _LEGACY_MANYLINUX if minor <= glibc_minor),
        platform,
    )


def interpreter_tags(
    python: tuple[int, int], platform: str, glibc_minor: int, *, free_threaded: bool = False
) -> tuple[Tag, ...]:
    """Every wheel tag CPython ``python`` (major, minor) installs on ``platform``, most specific
    first, each once: its own ABI, the stable ABI of it and earlier releases, then pure Python.
    The ABI is the target's build (``cp312``; ``cp37m`` before 3.8; ``cp314t`` free-threaded,
    whose stable ABI is ``abi3t``, never ``abi3``), never that of the interpreter running
    colabenv."""
    major, minor = python
    interpreter = f"cp{major}{minor}"
    abi = f"{interpreter}m" if python < (3, 8) else interpreter
    if free_threaded:
        abi = f"{interpreter}t"
    platforms = platform_tags(platform, glibc_minor)
    found = [
        *cpython_tags(python, abis=[abi], platforms=platforms),
        *compatible_tags(python, interpreter, platforms),
    ]
    return tuple(dict.fromkeys(found))


# ---------------------------------------------------------------------------------------------
# Wheel-variant file names (the WheelNext draft)

_VARIANT_LABEL = re.compile(r"[0-9a-z._]{1,16}")
VARIANTS_NAMED = 3
"""The most wheel-variant file names a note names (then how many more)."""


def variant_wheel(filename: str) -> tuple[NormalizedName, Version, str] | None:
    """(name, version, label) of a wheel-variant file name: the WheelNext draft's wheel name with
    one more dash-separated label (``torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64-cu128.whl``),
    which no installer colabenv drives takes yet; None for anything else (a plain wheel's name,
    build tag and all, included)."""
    if not filename.endswith(".whl"):
        return None
    try:
        parse_wheel_filename(filename)
        return None
    except (InvalidWheelFilename, InvalidVersion, ValueError):
        pass
    stem, _, label = filename[:-4].rpartition("-")
    if not _VARIANT_LABEL.fullmatch(label):
        return None
    try:
        name, version, _build, _tags = parse_wheel_filename(stem + ".whl")
    except (InvalidWheelFilename, InvalidVersion, ValueError):
        return None
    return name, version, label


def variant_note(project: str, filenames: Iterable[str]) -> str | None:
    """One line naming the wheel-variant files of ``project`` left aside (at most
    VARIANTS_NAMED, then how many more); None when there are none."""
    names = sorted(dict.fromkeys(filenames))
    if not names:
        return None
    more = f" (and {len(names) - VARIANTS_NAMED} more)" if len(names) > VARIANTS_NAMED else ""
    return (
        f"{project}: {len(names)} wheel-variant file(s) left aside (a WheelNext draft name, "
        f"which pip and uv do not install yet): {', '.join(names[:VARIANTS_NAMED])}{more}"
    )


class VariantFiles:
    """The wheel-variant files met while reading pages, by project, for one note each."""

    def __init__(self) -> None:
        self._found: dict[str, set[str]] = {}

    def took(self, filename: str) -> bool:
        """Whether ``filename`` is a wheel-variant file's name (then kept for the note)."""
        variant = variant_wheel(filename)
        if variant is not None:
            self._found.setdefault(str(variant[0]), set()).add(filename)
        return variant is not None

    def notes(self) -> list[str]:
        """One line per project (:func:`variant_note`), in the order of their names."""
        return [n for p, names in sorted(self._found.items()) if (n := variant_note(p, names))]
