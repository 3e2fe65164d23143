"""``cuda_packages.toml`` entries for tests, in the file's own layout (docs/formats.md): one
builder each for a ``[[package]]``, a ``[[package.release]]`` and a
``[[package.release.build]]``, and :func:`packages_file` / :func:`write_packages` for the file.

A key left None is left out, so a test writes only what its case is about; a value is written
as TOML (a string, a list of strings, true or false) whatever it holds, so a case can give a
value the loader must refuse (``archs=["sm_8"]``, ``cuda="12.8+x"``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from colabenv.catalog.packages import PACKAGES_FILE
from tests.support.toml_text import toml_entry, toml_value


def build_entry(
    name: str,
    *,
    cuda: str | None = None,
    archs: str | Sequence[str] | None = None,
    rocm: str | None = None,
    gfx: Sequence[str] | None = None,
    source: str = "https://example.org/build",
    torch: str | None = None,
    index_url: str | None = None,
    find_links: str | None = None,
    local_tag: str | None = None,
    extra: str | None = None,
    requires: Sequence[str] | None = None,
    unconfirmed: bool | None = None,
    unconfirmed_reason: str | None = None,
    min_driver: str | None = None,
    free_threaded: str | None = None,
    free_threaded_unconfirmed: str | None = None,
    platforms: Sequence[str] | None = None,
) -> str:
    """A ``[[package.release.build]]``: a CUDA build's ``cuda`` and ``archs`` (a list, or the name
    of an ``[archs]`` list), a ROCm build's ``rocm`` and ``gfx``; an ``unconfirmed_reason`` marks
    it unconfirmed unless ``unconfirmed`` says otherwise."""
    return toml_entry(
        "package.release.build",
        [
            ("name", name),
            ("cuda", cuda),
            ("rocm", rocm),
            ("gfx", gfx),
            ("torch", torch),
            ("index_url", index_url),
            ("find_links", find_links),
            ("local_tag", local_tag),
            ("extra", extra),
            ("archs", archs),
            ("requires", requires),
            ("unconfirmed", True if unconfirmed_reason is not None and unconfirmed is None else unconfirmed),
            ("unconfirmed_reason", unconfirmed_reason),
            ("min_driver", min_driver),
            ("free_threaded", free_threaded),
            ("free_threaded_unconfirmed", free_threaded_unconfirmed),
            ("platforms", platforms),
            ("source", source),
        ],
    )


def release_entry(
    version: str,
    *builds: str,
    python: str = ">=3.9",
    torch: str | None = None,
    source: str = "https://example.org/release",
    packages: Mapping[str, str] | None = None,
) -> str:
    """A ``[[package.release]]`` followed by its builds (:func:`build_entry`); ``packages``:
    the other CUDA packages it requires (``{"cupy": ">=14"}``)."""
    head = toml_entry(
        "package.release", [("version", version), ("python", python), ("torch", torch), ("source", source)]
    )
    if packages:
        needs = ", ".join(f"{name} = {json.dumps(spec)}" for name, spec in packages.items())
        head += f"packages = {{ {needs} }}\n"
    return head + "".join(builds)


def package_entry(name: str, *releases: str, distribution: str | None = None) -> str:
    """A ``[[package]]`` followed by its releases (:func:`release_entry`)."""
    return toml_entry("package", [("name", name), ("distribution", distribution)]) + "".join(releases)


def packages_file(
    *packages: str, archs: Mapping[str, Sequence[str]] | None = None, comment: str | None = None
) -> str:
    """The whole file: ``comment`` as its first line, ``schema = 1``, the named arch lists, the
    packages (:func:`package_entry`)."""
    text = f"# {comment}\n" if comment is not None else ""
    text += "schema = 1\n"
    if archs:
        text += "\n[archs]\n" + "".join(f"{name} = {toml_value(items)}\n" for name, items in archs.items())
    return text + "".join(packages)


def write_packages(folder: Path, text: str) -> Path:
    """``text`` as ``folder/cuda_packages.toml`` (a catalog overlay folder); returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / PACKAGES_FILE).write_text(text, encoding="utf-8")
    return folder
