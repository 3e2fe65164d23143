"""Read a profile (schema 1) into a frozen :class:`~colabenv.models.Profile`.

Pure apart from reading the profile file and the files it ``extends`` (:mod:`.files`); the
tables are read in :mod:`.sections` through :class:`colabenv._util.reader.Reader`, the rules for one
value (specifiers, URLs, requirements) are in :mod:`.rules`, and ``[env]``'s in :mod:`.env`.
Every problem, from an unreadable file to a misspelt key, becomes a :class:`ProfileError`
naming the file and the key path; the mistakes one read of a file finds are raised together
(:class:`~colabenv.errors.ProfileErrors`, a line each); nothing else escapes :func:`load_profile`.

Decisions worth knowing when writing a profile:

- ``extends`` names the parent as the command line does: a path is relative to the file, a
  bare name is a golden profile (else a file of that name next to it). The parent is merged key
  by key and the child wins; tables merge recursively, lists are replaced. A framework given as
  a string is short for ``{version = "..."}``, so a child may change only ``variant`` of a
  parent's framework, and ``false`` switches a parent's framework (or companion) off.
  ``[targets]`` merge by name, but a named target is replaced whole (its keys interact:
  ``cpu``, ``driver``, ``tpu``), and ``NAME = false`` drops the parent's.
- ``[packages] requirements`` are PEP 508 strings. pip options (``--index-url ...``) belong in
  ``[install]``. Frameworks and their companions (torch, torchvision, jax, jaxlib, tensorflow
  ...) belong in ``[frameworks]``, where the wheel is chosen for the GPU. A direct reference
  (``name @ URL``) must use ``https``, ``git+https`` or ``file``.
- ``[apt] packages`` follow Debian's package-name grammar, optionally ``name=version``.
- URLs may hold credentials only as ``${VAR}`` references, never literally: not in the user
  part, not as the value of a query parameter that names a secret (``?token=...``). No URL
  character that means something to a shell (quotes, backticks, ``$`` outside ``${VAR}``,
  ``;``) passes. A direct reference is sent as written, so ``${VAR}`` is refused there.
- ``[env]`` names are POSIX names; ``COLABENV_*`` names are colabenv's own settings. Values are
  set literally, but for ``${VAR}`` references, which the hook expands when an interpreter
  starts. A name that says it holds a secret (``HF_TOKEN``, ``WANDB_API_KEY``:
  :data:`.env.SECRET_NAME_PARTS`) takes its value only from references. The names the dynamic
  loader, a shell or Python itself read before the ``.pth`` hook runs are refused
  (:data:`REFUSED_ENV`). One variable, and all of them together, may take at most what a
  process's environment can hold (:mod:`.env`): a hook past it would start no process.
- A bare name (``pytorch``) is a golden profile even when a file of that name is in the current
  directory; a path (``./pytorch``, ``team.toml``, ``profiles/x``) is a file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from colabenv.models import Profile
from colabenv.profile.env import REFUSED_ENV, RefusedEnv
from colabenv.profile.files import (
    MAX_EXTENDS_DEPTH,
    MAX_PROFILE_BYTES,
    Context,
    Document,
    Layer,
    find_profile,
    golden_files,
    golden_names,
    golden_path,
    load_chain,
    looks_like_path,
    parse_text,
    read_text,
    shadowed_file,
)
from colabenv.profile.rules import CREDENTIALS_HINT, DIRECT_URL_SCHEMES, INDEX_URL_SCHEMES, SECRET_QUERY_WORDS
from colabenv.profile.sections import SCHEMA_VERSION, TOP_KEYS, build

GoldenProfile = tuple[str, str, Path]

__all__ = [
    "CREDENTIALS_HINT",
    "DIRECT_URL_SCHEMES",
    "INDEX_URL_SCHEMES",
    "MAX_EXTENDS_DEPTH",
    "MAX_PROFILE_BYTES",
    "REFUSED_ENV",
    "SCHEMA_VERSION",
    "SECRET_QUERY_WORDS",
    "TOP_KEYS",
    "GoldenProfile",
    "RefusedEnv",
    "find_profile",
    "golden_names",
    "golden_path",
    "golden_profiles",
    "load_profile",
    "load_profile_text",
    "looks_like_path",
    "read_profile_text",
    "shadowed_file",
]


UNHASHED_TABLES = ("job",)
"""Tables the profile hash leaves out: what a batch job asks of a cluster changes nothing a lock
or a marker records, so a new time limit leaves the lock fresh."""


def load_profile(path: Path) -> Profile:
    """Read ``path`` and the profiles it extends, validate, merge, and freeze the result."""
    path = Path(path)
    return _profile(load_chain(path, _check_layer), Context(path))


def load_profile_text(text: str, path: Path) -> Profile:
    """The profile ``text`` would be as the file ``path``, without reading or writing a file;
    such a profile cannot extend another."""
    context = Context(Path(path))
    document = parse_text(text, context)
    if "extends" in document:
        raise context.fail("extends", "a profile not read from a file cannot extend another")
    _check_layer(document, context)
    return _profile([(document, context.path.parent)], context)


def golden_profiles() -> tuple[GoldenProfile, ...]:
    """(name, description, path) of each shipped golden profile, sorted by name."""
    found = []
    for file in golden_files():
        profile = load_profile(file)
        found.append((file.stem, profile.description, file))
    return tuple(found)


def read_profile_text(path: Path) -> str:
    """The text of a profile file, with the same checks (size, encoding) as :func:`load_profile`."""
    return read_text(Context(Path(path)))


def _check_layer(document: Document, context: Context) -> None:
    """One file on its own, before it is merged: it may leave out what its parent gives."""
    build(document, context, partial=True)


# ---------------------------------------------------------------------------------------------
# Merging and hashing


def _profile(layers: list[Layer], context: Context) -> Profile:
    """Merge validated documents, child first, into the profile.

    ``[catalog] paths`` are not replaced by a child's but gathered from every layer, each
    relative to its own file, parents' first (so a child's overlay wins over its parent's).
    """
    merged: dict[str, object] = {}
    overlays: list[Path] = []
    for layer, directory in reversed(layers):
        merged = _merge(merged, _normalized(layer))
        catalog = layer.get("catalog")
        if isinstance(catalog, dict):
            overlays.extend(Path(os.path.normpath(directory / str(p))) for p in catalog.get("paths", []))
    merged.pop("extends", None)
    merged["schema"] = SCHEMA_VERSION
    if "name" not in merged:
        raise context.fail("name", 'missing; every profile needs a name such as "team-gpu"')
    profile = build(merged, context)
    hashed = {key: value for key, value in merged.items() if key not in UNHASHED_TABLES}
    digest = hashlib.sha256(_canonical(hashed).encode("utf-8")).hexdigest()
    return dataclasses.replace(
        profile, content_hash=f"sha256:{digest}", catalog_paths=tuple(dict.fromkeys(overlays))
    )


def _normalized(document: Mapping[str, object]) -> dict[str, object]:
    """A framework string is short for ``{version = ...}``, so that merging treats both alike."""
    out = dict(document)
    out.pop("extends", None)
    frameworks = out.get("frameworks")
    if isinstance(frameworks, dict):
        out["frameworks"] = {
            name: {"version": value} if isinstance(value, str) else value
            for name, value in frameworks.items()
        }
    return out


def _merge(
    base: Mapping[str, object], override: Mapping[str, object], path: tuple[str, ...] = ()
) -> dict[str, object]:
    merged = dict(base)
    for key, value in override.items():
        current = merged.get(key)
        if path == ("targets",):
            # a named target is replaced whole (its keys interact: cpu, driver, tpu); false drops it
            if value is False:
                merged.pop(key, None)
            else:
                merged[key] = value
        elif isinstance(value, dict) and isinstance(current, dict):
            merged[key] = _merge(current, value, (*path, key))
        else:
            merged[key] = value
    return merged


def _canonical(document: Mapping[str, object]) -> str:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
