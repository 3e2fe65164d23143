"""The CUDA packages a profile names in ``[frameworks]`` beside torch, tensorflow and jax
(``xformers = "*"``, ``cudf = ">=26"``, ``bitsandbytes = { version = "*" }``), and the
``[packages] requirements`` that should be there instead (docs/cuda-packages.md).

A key that is neither a framework nor a package colabenv knows by name is taken as a package a
catalog overlay adds (the resolver refuses it when no catalog has it), unless it looks like a
misspelling of a known name (``pytorch``, ``cupyy``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name

from colabenv._util.reader import Reader, close_match, shown, unknown
from colabenv.models import Framework, PackageRequest
from colabenv.models.frameworks import ALL_FRAMEWORK_NAMES, CUDA_PACKAGES, OWNED, package_of
from colabenv.profile import rules

PACKAGE_TABLE_KEYS = ("version", "variant")
MISSPELLING_CUTOFF = 0.75
"""How close an unknown key must be to a known name to be refused as its misspelling."""
_NAME_RE = re.compile(r"[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]")
_VARIANT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}")


def requests(table: Reader) -> tuple[PackageRequest, ...]:
    """The package keys of ``[frameworks]`` (every key that is not a framework), checked."""
    frameworks = {f.value for f in Framework}
    found: dict[NormalizedName, PackageRequest] = {}
    for key in table.data:
        if key in frameworks:
            continue
        request = table.attempt(functools.partial(_request, table, key), None)
        if request is None:
            continue
        if request.name in found:
            table.report(table.fail(key, f"{request.name} is also given as {found[request.name].key!r}"))
            continue
        found[request.name] = request
    return tuple(found.values())


def _request(table: Reader, key: str) -> PackageRequest | None:
    known = [*(f.value for f in Framework), *CUDA_PACKAGES]
    if not _NAME_RE.fullmatch(key):
        raise table.fail(key, unknown(key, known, "framework or CUDA package"))
    name = canonicalize_name(key)
    if name not in known and (name in OWNED or name in ALL_FRAMEWORK_NAMES):
        where = OWNED.get(name)
        raise table.fail(key, f"{name} belongs to a framework" + (f": set {where}" if where else ""))
    if name not in CUDA_PACKAGES and (
        name in known or close_match(name, known, cutoff=MISSPELLING_CUTOFF) is not None
    ):
        raise table.fail(key, unknown(key, known, "framework or CUDA package"))
    value = rules.version_or_table(table.data[key], table.at(key))
    if value is None:
        return None
    if isinstance(value, SpecifierSet):
        return PackageRequest(name, key, value)
    item = table.child(value, key)
    item.allow(*PACKAGE_TABLE_KEYS)
    specifier = item.attempt(
        lambda: rules.specifier(value.get("version", "*"), item.at("version")), SpecifierSet()
    )
    variant = item.opt_text("variant")
    if variant is not None and not _VARIANT_RE.fullmatch(variant):
        raise item.fail("variant", f"{shown(variant)} is not a build name (such as cu128 or cuda12)")
    return PackageRequest(name, key, specifier, variant)


def misplaced(requirements: Iterable[Requirement], profile_name: str) -> list[str]:
    """A warning for each ``[packages]`` requirement that is a CUDA package colabenv chooses
    per GPU (``cupy-cuda12x``): it belongs in ``[frameworks]``."""
    warnings = []
    for requirement in requirements:
        names = package_of(requirement.name)
        if names is None:
            continue
        spec = str(requirement.specifier) or "*"
        warnings.append(
            f"{profile_name}: packages.requirements: {requirement.name} is a CUDA package colabenv "
            f'chooses for the GPU and the frameworks; move it to [frameworks] as {names.name} = "{spec}"'
        )
    return warnings
