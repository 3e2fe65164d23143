"""Profile files for tests, in the profile's own layout (docs/formats.md): a ``name``, the
``[frameworks]`` asked for, ``[packages]`` requirements and ``[targets]``, each written as TOML
whatever it holds (:mod:`tests.support.toml_text`), so a case can give a target the loader must
refuse."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.support.toml_text import Value, toml_keys


def profile_text(
    frameworks: Mapping[str, str],
    *,
    requirements: Sequence[str] = (),
    targets: Mapping[str, Mapping[str, Value]] | None = None,
    name: str = "p",
) -> str:
    """A profile: ``frameworks`` (``{"torch": "*"}``), ``[packages]`` with ``requirements``
    where there are any, ``[targets]`` (``{"amd": {"rocm": "7.0", "python": "3.12"}}``, each an
    inline table) where given."""
    text = toml_keys([("name", name)]) + "[frameworks]\n" + toml_keys(list(frameworks.items()))
    if requirements:
        text += "[packages]\n" + toml_keys([("requirements", list(requirements))])
    if targets:
        text += "[targets]\n" + toml_keys(list(targets.items()))
    return text


def write_profile_file(
    folder: Path,
    frameworks: Mapping[str, str],
    *,
    requirements: Sequence[str] = (),
    targets: Mapping[str, Mapping[str, Value]] | None = None,
) -> Path:
    """:func:`profile_text` as ``folder/p.toml``; returns its path."""
    path = folder / "p.toml"
    path.write_text(profile_text(frameworks, requirements=requirements, targets=targets), encoding="utf-8")
    return path
