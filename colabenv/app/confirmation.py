"""A resolution confirmed against the indexes its choices come from: resolve, ask the indexes
(through the :class:`IndexReader` the caller hands in, :class:`colabenv.index.check.IndexCheck`
for the commands) for the project pages of what was chosen, resolve again with what they serve,
until every chosen file has been asked about. The resolver stays pure: it is handed the answers
as one frozen :class:`~colabenv.models.availability.IndexFacts`.

An unconfirmed catalog build is not chosen until the index confirms it, so the pages of what
would be chosen with unconfirmed builds allowed are asked too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Protocol

from packaging.utils import canonicalize_name

from colabenv.errors import ResolutionError
from colabenv.models import Catalog, InstallSettings, Profile, Resolution, Target
from colabenv.models.availability import NO_FACTS, FileTarget, IndexFacts, find_links_key, index_key

MAX_ROUNDS = 4
"""How many times the pages of a new choice are asked for before its resolution is taken."""

PageKey = tuple[str | None, str]
"""(the index as the resolution writes it, None for the default one; the project)."""
RequiresKey = tuple[str | None, str, str]
"""(the index, the project, the version pinned): a wheel whose metadata file is asked for."""


class IndexReader(Protocol):
    """What reads project pages for a resolution: ``facts`` with the pages of ``wanted`` added,
    and the requirements of the metadata files of ``requires`` (on pages read), a note for each
    that could not be read, never an error."""

    def read(
        self,
        facts: IndexFacts,
        wanted: Sequence[PageKey],
        target: FileTarget,
        install: InstallSettings,
        requires: Sequence[RequiresKey] = (),
    ) -> IndexFacts: ...


def file_target(target: Target) -> FileTarget:
    """The wheel tags the target's CPython installs on its platform (the one rule,
    :mod:`colabenv.lock.wheel_tags`), up to its glibc where that is known (this host, a Colab
    runtime's image), else up to the newest manylinux a wheelhouse ranks: then a file is
    missing only where no glibc a wheelhouse takes could install it."""
    from colabenv.lock.wheel_tags import WHEELHOUSE_GLIBC_MINOR, interpreter_tags

    python = (target.python.major, target.python.minor)
    glibc = target.glibc
    minor = glibc.minor if glibc is not None and glibc.major == 2 else WHEELHOUSE_GLIBC_MINOR
    tags = interpreter_tags(python, target.platform, minor, free_threaded=target.free_threaded)
    on = f" with glibc {glibc.major}.{glibc.minor}" if glibc is not None else ""
    shown = f"cp{python[0]}{python[1]}{'t' if target.free_threaded else ''} on {target.platform}{on}"
    ranked = tuple(str(tag) for tag in tags)
    machine = target.platform.partition("_")[2]
    return FileTarget(target.python, frozenset(ranked), shown, ranked, machine)


def pages_of(resolution: Resolution) -> list[PageKey]:
    """The project pages that say whether every file the resolution installs exists: each
    exact pin of a framework, companion, CUDA package or plain requirement, on its index."""
    from colabenv.resolve.confirm import exact_pins

    wanted: list[tuple[str | None, tuple[str, ...]]] = []
    for choice in resolution.choices:
        if not choice.installed:
            wanted.append((choice.index_url, choice.requirements))
            if choice.find_links is not None:  # the page the installer is given beside the index
                wanted.append((find_links_key(choice.find_links), choice.requirements))
    for package in resolution.cuda_packages:
        if not package.installed and package.find_links is None:
            wanted.append((package.index_url, package.requirements))
    wanted.append((None, resolution.packages))
    return [(index, canonicalize_name(name)) for index, texts in wanted for name, _ in exact_pins(texts)]


def requires_of(resolution: Resolution) -> list[RequiresKey]:
    """The wheels whose metadata says whether the choice's companions agree with it: each exact
    pin of a framework choice beyond the framework's own distribution, on its index."""
    from colabenv.resolve.confirm import exact_pins

    wanted: list[RequiresKey] = []
    for choice in resolution.choices:
        if choice.installed:
            continue
        own = canonicalize_name(choice.framework.value)
        for name, version in exact_pins(choice.requirements):
            if canonicalize_name(name) != own:
                wanted.append((choice.index_url, canonicalize_name(name), version))
    return wanted


def _unconfirmed_in(catalog: Catalog) -> bool:
    return any(v.unconfirmed is not None for r in catalog.releases for v in r.variants) or any(
        b.unconfirmed is not None for p in catalog.packages for r in p.releases for b in r.builds
    )


def confirmed_resolution(
    profile: Profile, target: Target, catalog: Catalog, reader: IndexReader, *, allow_unconfirmed: bool
) -> Resolution:
    """``profile`` resolved for ``target``, its choices confirmed by ``reader``'s pages: a
    build an index lacks passed over for the next, an unconfirmed one an index serves taken.
    Exit 3 (ResolutionError) where nothing is left."""
    from colabenv.resolve.resolver import resolve

    explore = not (allow_unconfirmed or profile.allow_unconfirmed) and _unconfirmed_in(catalog)
    facts = NO_FACTS
    files = file_target(target)
    asked: set[tuple[str | None, str]] = set()
    asked_requires: set[tuple[str | None, str, str]] = set()
    for round_ in range(MAX_ROUNDS + 1):
        error: ResolutionError | None = None
        resolution: Resolution | None = None
        try:
            resolution = resolve(profile, target, catalog, allow_unconfirmed=allow_unconfirmed, facts=facts)
        except ResolutionError as refused:
            error = refused
        resolutions = [resolution] if resolution is not None else []
        if explore:
            with contextlib.suppress(ResolutionError):
                resolutions.append(resolve(profile, target, catalog, allow_unconfirmed=True, facts=facts))
        wanted = [key for r in resolutions for key in pages_of(r)]
        new = [key for key in dict.fromkeys(wanted) if (index_key(key[0]), key[1]) not in asked]
        requires = [key for r in resolutions for key in requires_of(r)]
        new_requires = [
            k for k in dict.fromkeys(requires) if (index_key(k[0]), k[1], k[2]) not in asked_requires
        ]
        if not (new or new_requires) or round_ == MAX_ROUNDS:
            if resolution is None:
                assert error is not None
                raise error
            return resolution
        asked.update((index_key(index), project) for index, project in new)
        asked_requires.update((index_key(index), name, version) for index, name, version in new_requires)
        facts = reader.read(facts, new, files, profile.install, new_requires)
    raise AssertionError("unreachable")
