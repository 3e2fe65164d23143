"""A ``pip freeze`` text read into an :class:`~colabenv.models.InstalledSet`: text in, frozen
values out, nothing read from anywhere. :func:`colabenv.host.detect.read_freeze` reads the file
(``--installed-from``) and hands its text here; ``catalog refresh runtimes`` hands the
``pip-freeze.txt`` upstream keeps for each Colab runtime."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from colabenv.errors import TargetError
from colabenv.models import InstalledDist, InstalledSet


def parse_freeze(text: str, where: str) -> InstalledSet:
    """The distributions of a ``pip freeze`` text: ``name==ver``, ``name===ver`` and
    ``name @ URL`` lines (``where`` names the text in errors).

    A ``name @ URL`` line takes its version from the wheel or sdist file name in the URL
    (``torch-2.6.0%2Bcu124-...whl`` -> ``2.6.0+cu124``); a URL without one (a VCS checkout,
    a directory) says nothing about the version and is left out, as are ``-e`` lines and
    comments. The first line of a name wins. Any other line is refused (:class:`TargetError`).
    """
    found: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line or line.startswith("-"):
            continue
        parsed = _freeze_line(line)
        if parsed is None:
            raise TargetError(
                f"{where}: line {number}: {line[:120]!r} is not a `pip freeze` line"
                " (expected name==version or name @ URL)"
            )
        name, version = parsed
        if version is not None:
            found.setdefault(name, version)
    return InstalledSet(tuple(InstalledDist(canonicalize_name(n), v) for n, v in sorted(found.items())))


def _freeze_line(line: str) -> tuple[str, str | None] | None:
    from packaging.requirements import InvalidRequirement, Requirement  # 20 ms: only for a freeze file

    try:
        requirement = Requirement(line)
    except InvalidRequirement:
        return None
    name = canonicalize_name(requirement.name)
    if requirement.url is not None:
        return name, _version_from_url(requirement.url)
    specs = list(requirement.specifier)
    if len(specs) != 1 or specs[0].operator not in ("==", "==="):
        return None
    version = specs[0].version
    if specs[0].operator == "==" and ("*" in version or not _is_version(version)):
        return None
    return name, version


def _is_version(text: str) -> bool:
    try:
        Version(text.strip())
    except InvalidVersion:
        return False
    return True


def _version_from_url(url: str) -> str | None:
    filename = unquote(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1])
    if filename.endswith(".whl"):
        try:
            return str(parse_wheel_filename(filename)[1])
        except InvalidWheelFilename:
            return None
    try:
        return str(parse_sdist_filename(filename)[1])
    except InvalidSdistFilename:
        return None
