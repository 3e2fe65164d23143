"""A ``catalog refresh`` from the file it starts from to the file it makes: which folder it
starts from, the file read and checked, the derivation (:mod:`.frameworks`, :mod:`.packages`,
:mod:`.runtimes`), the merged text (:mod:`.writer`) checked to load over the shipped catalog,
and what changed, said in one summary line.

Nothing here prints or writes: a :class:`Refreshed` holds each file's text before and after,
and :mod:`colabenv.cli.catalog` shows the change as a diff or writes it (``-o``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from colabenv.catalog.load import DRIVERS_FILE
from colabenv.errors import printable
from colabenv.models.frozen import model

if TYPE_CHECKING:
    from packaging.version import Version

    from colabenv.curation.refresh.sources import RefreshOptions
    from colabenv.curation.refresh.writer import Outcome
    from colabenv.index.client import SimpleClient
    from colabenv.models import Arch, Catalog, CudaPackage, CudaToolkit, Framework, Release

Progress = Callable[[str], None]
"""Told what a refresh is reading now (a status line; a no-op when none is shown)."""


@model
class FileChange:
    """One file a refresh changes: its name in the folder, its text before and after."""

    name: str
    before: str
    after: str


@model
class Refreshed:
    """What a refresh made: the file it refreshed (first) and the files that must change with
    it (``drivers.toml``, when a new build's CUDA needs driver entries), what could not be
    derived (notes), where the indexes or upstream contradict the file (its entry is kept), and
    one line that says what changed."""

    start: Path
    """The file it started from."""
    changes: tuple[FileChange, ...]
    notes: tuple[str, ...]
    contradictions: tuple[str, ...]
    summary: str
    entries_kept: bool = True
    """Whether a contradiction is said with "(the catalog's entry is kept)"."""


def index_client(options: RefreshOptions, deadline_s: float) -> SimpleClient:
    """A client of the indexes ``options`` name (the default, the PyTorch index, the mirrors)
    whose messages redact those indexes' credentials."""
    import os

    from colabenv.index.client import SimpleClient
    from colabenv.index.urls import Redactor

    mirrors = [url for url in (options.find_links_mirror, options.index_mirror) if url]
    urls = [options.index] + ([options.pytorch_index] if options.pytorch_index else []) + mirrors
    return SimpleClient(os.environ, Redactor.for_urls(urls, os.environ), deadline_s=deadline_s)


def start_folders(output: str | None, catalog: str | None, name: str) -> tuple[Path | None, Path]:
    """The folder ``-o`` names (None: print a diff) and the one whose ``name`` refresh starts
    from: ``--catalog DIR``, else the ``-o`` folder when it has the file, else the shipped one."""
    from colabenv._util.resources import catalog_dir
    from colabenv.errors import OutputError, UsageError

    out = Path(output) if output else None
    if out is not None and not out.is_dir():
        raise OutputError(f"{printable(out)}: not a folder (-o names the folder {name} is written into)")
    if catalog:
        base = Path(catalog)
        if not base.is_dir():
            raise UsageError(f"--catalog: {printable(base)}: not a folder")
        return out, base
    if out is not None and (out / name).exists():
        return out, out
    return out, catalog_dir()


# ---------------------------------------------------------------------------------------------
# A framework's file (torch.toml, jax.toml, tensorflow.toml)


def refresh_framework(
    framework: Framework, options: RefreshOptions, client: SimpleClient, base: Path, progress: Progress
) -> Refreshed:
    """``base``'s file of ``framework`` with what the indexes have that it lacks, and the
    ``drivers.toml`` entries a new build's CUDA needs."""
    from colabenv.catalog.load import FRAMEWORK_FILES
    from colabenv.curation.refresh.frameworks import derive
    from colabenv.curation.refresh.free_threaded import compare_framework_free_threaded, free_threaded_said
    from colabenv.curation.refresh.sources import IndexReader
    from colabenv.curation.refresh.writer import merged_text

    name = FRAMEWORK_FILES[framework]
    start_text, known, named, follows = _starting_file(base / name, framework)
    catalog = _driver_table(base)
    reader = IndexReader(client, options, progress)
    derived = derive(reader, known, catalog)
    outcome = merged_text(
        framework, start_text, known, named, follows, derived, options.pytorch_index is not None
    )
    differing, confirmed = compare_framework_free_threaded(known, derived)
    outcome = dataclasses.replace(
        outcome,
        contradictions=(*outcome.contradictions, *differing),
        notes=(*outcome.notes, *confirmed),
    )
    _check_loads(base / name, outcome.text, framework, derived.toolkits)
    changes = [FileChange(name, start_text, outcome.text)]
    drivers = _drivers_change(base, derived.toolkits)
    if drivers is not None:
        changes.append(drivers)
    return Refreshed(
        start=base / name,
        changes=tuple(changes),
        notes=(
            *outcome.notes,
            *reader.yanked.notes(framework.value, [framework.value], (r.version for r in known), options),
            *reader.variants.notes(),
            *reader.unreadable.notes(),
        ),
        contradictions=outcome.contradictions,
        summary=_summary(outcome, base / name)
        + _toolkits_added(derived.toolkits)
        + free_threaded_said(derived.releases, outcome.added_releases, outcome.added_variants),
    )


def _driver_table(base: Path) -> Catalog:
    """The driver table new builds must be in: the shipped one, and the base folder's
    ``drivers.toml`` when it is an overlay with one."""
    from colabenv._util.resources import catalog_dir
    from colabenv.catalog.load import load_overlay, shipped_catalog, with_overlays

    shipped = shipped_catalog(())
    if base.resolve() == catalog_dir().resolve() or not (base / DRIVERS_FILE).exists():
        return shipped
    return with_overlays(shipped, [load_overlay(base, "--catalog", ())])


def _drivers_change(base: Path, toolkits: tuple[CudaToolkit, ...]) -> FileChange | None:
    """``drivers.toml`` before and after the toolkit entries a refresh found (None: none): the
    base folder's file where it has one, else a new file holding those entries alone (an
    overlay's driver entries are merged over the shipped table)."""
    from colabenv.catalog.load import read_overlay_file
    from colabenv.curation.refresh.writer import drivers_text

    if not toolkits:
        return None
    path = base / DRIVERS_FILE
    start = read_overlay_file(path).decode("utf-8") if path.exists() else ""
    return FileChange(DRIVERS_FILE, start, drivers_text(start, toolkits))


def _toolkits_added(toolkits: tuple[CudaToolkit, ...]) -> str:
    if not toolkits:
        return ""
    return (
        f"; {len(toolkits)} driver entr{'y' if len(toolkits) == 1 else 'ies'} added to "
        f"{DRIVERS_FILE} ({', '.join(t.label for t in toolkits)})"
    )


def _starting_file(
    path: Path, framework: Framework
) -> tuple[str, list[Release], dict[str, tuple[Arch, ...]], bool]:
    """The text, releases, named arch lists and companions_follow_variant of the file refresh
    starts from (empty when there is none)."""
    from colabenv.catalog.document import parse_document
    from colabenv.catalog.load import framework_releases, read_overlay_file
    from colabenv.catalog.packages import file_archs
    from colabenv.curation.refresh.writer import FOLLOWS_VARIANT
    from colabenv.errors import CatalogOverlayError

    if not (path.exists() or path.is_symlink()):
        return "", [], {}, FOLLOWS_VARIANT[framework]
    data = read_overlay_file(path)
    doc = parse_document(path, data, CatalogOverlayError)
    known = framework_releases(doc, framework)
    return (
        data.decode("utf-8"),
        list(known),
        dict(file_archs(doc)),
        doc.flag("companions_follow_variant", False),
    )


def _check_loads(path: Path, text: str, framework: Framework, toolkits: tuple[CudaToolkit, ...] = ()) -> None:
    """The refreshed file loads, and merges over the shipped catalog (a bug otherwise)."""
    from colabenv.catalog.document import parse_document
    from colabenv.catalog.load import Overlay, framework_releases, shipped_catalog, with_overlays
    from colabenv.errors import CatalogOverlayError

    doc = parse_document(path, text.encode("utf-8"), CatalogOverlayError)
    releases = framework_releases(doc, framework, str(path))
    with_overlays(shipped_catalog([framework]), [Overlay(path.parent, tuple(releases), toolkits)])


def _summary(outcome: Outcome, path: Path) -> str:
    parts = []
    if outcome.added_releases:
        parts.append(
            f"{len(outcome.added_releases)} release(s) added "
            f"({', '.join(str(v) for v in outcome.added_releases)})"
        )
    if outcome.added_variants:
        parts.append(
            f"{len(outcome.added_variants)} build(s) added to known releases "
            f"({', '.join(f'{v} {n}' for v, n in outcome.added_variants)})"
        )
    if outcome.paired:
        parts.append(f"{len(outcome.paired)} companion pairing(s) written anew ({', '.join(outcome.paired)})")
    if outcome.contradictions:
        parts.append(f"{len(outcome.contradictions)} contradiction(s) reported")
    if not parts:
        parts.append("nothing to add")
    return f"{'; '.join(parts)} (starting from {printable(path)})"


# ---------------------------------------------------------------------------------------------
# cuda_packages.toml


def refresh_packages(
    options: RefreshOptions, client: SimpleClient, base: Path, progress: Progress
) -> Refreshed:
    """``base``'s ``cuda_packages.toml`` with the releases of its packages it lacks, and the
    builds the indexes have of releases it has."""
    from colabenv.catalog.load import read_overlay_file
    from colabenv.catalog.packages import PACKAGES_FILE
    from colabenv.curation.refresh.free_threaded import packages_free_threaded_said
    from colabenv.curation.refresh.package_pythons import python_written
    from colabenv.curation.refresh.packages import derive_packages
    from colabenv.curation.refresh.sources import IndexReader
    from colabenv.curation.refresh.writer import build_name, packages_merged_text
    from colabenv.errors import CatalogError, CatalogOverlayError

    path = base / PACKAGES_FILE
    start_text = read_overlay_file(path).decode("utf-8")
    packages, named = _packages_file(path, start_text)
    reader = IndexReader(client, options, progress)
    derived = derive_packages(reader, packages, _torch_builds())
    text = python_written(
        packages_merged_text(start_text, derived.releases, named, derived.builds), derived.pythons
    )
    try:
        _packages_file(path, text)  # the refreshed file loads
    except CatalogOverlayError as problem:
        made = "catalog refresh packages made a file that does not load, so nothing is written"
        raise CatalogError(path, None, f"{made}: {problem}") from None
    added = ", ".join(f"{r.package} {r.version}" for r in derived.releases) or "none"
    builds = [f"{r.package} {r.version} {build_name(b)}" for r in derived.builds for b in r.builds]
    narrowed = [r.label for r in derived.pythons]
    summary = (
        f"{len(derived.releases)} release(s) added ({added}); "
        f"{len(builds)} build(s) added to releases the file has ({', '.join(builds) or 'none'}); "
        + (
            f"{len(narrowed)} Python range(s) narrowed to the wheels' tags ({', '.join(narrowed)}); "
            if narrowed
            else ""
        )
        + f"{len(derived.contradictions)} contradiction(s) reported (starting from {printable(path)})"
        + packages_free_threaded_said([*derived.releases, *derived.builds])
    )
    return Refreshed(
        start=path,
        changes=(FileChange(PACKAGES_FILE, start_text, text),),
        notes=(
            *derived.notes,
            *(r.said for r in derived.pythons),
            *reader.variants.notes(),
            *reader.unreadable.notes(),
        ),
        contradictions=derived.contradictions,
        summary=summary,
    )


def _torch_builds() -> tuple[tuple[Version, str], ...]:
    """The shipped catalog's torch releases and GPU builds (``2.9.0``, ``cu128``; a name once,
    whichever platforms list it): the pages of data.pyg.org's kind that refresh looks for beside
    those the file names."""
    from colabenv.catalog.load import shipped_catalog
    from colabenv.models import Framework

    catalog = shipped_catalog([Framework.TORCH])
    releases = catalog.releases_of(Framework.TORCH)
    builds = ((r.version, v.name) for r in releases for v in r.variants if v.cuda is not None)
    return tuple(dict.fromkeys(builds))


def _packages_file(path: Path, text: str) -> tuple[tuple[CudaPackage, ...], dict[str, tuple[Arch, ...]]]:
    """The packages and named arch lists of a ``cuda_packages.toml`` text."""
    from colabenv.catalog.document import parse_document
    from colabenv.catalog.packages import cuda_packages, file_archs
    from colabenv.errors import CatalogOverlayError

    doc = parse_document(path, text.encode("utf-8"), CatalogOverlayError)
    if doc.data.get("schema") != 1:
        raise doc.fail("schema", "expected schema = 1")
    return cuda_packages(doc, str(path)), dict(file_archs(doc))


# ---------------------------------------------------------------------------------------------
# runtimes.toml


@model
class RuntimesStart:
    """The ``runtimes.toml`` a refresh starts from, read and checked to load."""

    path: Path
    text: str


def runtimes_start(base: Path) -> RuntimesStart:
    """``base``'s ``runtimes.toml`` (a file with no entries when it has none), checked."""
    from colabenv.catalog.load import read_overlay_file
    from colabenv.catalog.runtimes import RUNTIMES_FILE, load_runtimes
    from colabenv.errors import CatalogOverlayError

    path = base / RUNTIMES_FILE
    text = read_overlay_file(path).decode("utf-8") if path.exists() else "schema = 1\n"
    load_runtimes(path, text.encode("utf-8"), CatalogOverlayError)
    return RuntimesStart(path, text)


def refresh_runtimes_file(start: RuntimesStart, upstream: str, deadline_s: float) -> Refreshed:
    """``start`` with the Colab runtime versions upstream (googlecolab/backend-info's files, as
    ``upstream/COMMIT/FILE``) lists that it lacks, and its head's image (``colab-latest``), the
    head read from GitHub's API (a copy elsewhere: ``upstream/api/commits``)."""
    import os

    from colabenv.catalog.runtimes import RUNTIMES_FILE, load_runtimes
    from colabenv.curation.refresh.runtimes import (
        BACKEND_INFO,
        GITHUB_API,
        README_REF,
        RuntimeRefreshProblem,
        head_of,
        refresh_runtimes,
    )
    from colabenv.errors import CatalogOverlayError, IndexUnavailableError
    from colabenv.index.client import SimpleClient
    from colabenv.index.urls import Redactor

    api = GITHUB_API if upstream == BACKEND_INFO else f"{upstream}/api"
    client = SimpleClient(os.environ, Redactor.for_urls([upstream, api], os.environ), deadline_s=deadline_s)

    def get(ref: str, name: str) -> str | None:
        body = client.file_bytes(upstream, f"{upstream}/{ref}/{name}")
        try:
            return None if body is None else body.decode("utf-8")
        except UnicodeDecodeError:
            raise RuntimeRefreshProblem(f"{name} at {ref}: not UTF-8 text") from None

    def head() -> tuple[str, str]:
        body = client.file_bytes(api, f"{api}/commits?sha={README_REF}&per_page=1")
        if body is None:
            raise RuntimeRefreshProblem(f"{api}/commits: not found")
        return head_of(body)

    try:
        outcome = refresh_runtimes(start.text, get, head)
    except RuntimeRefreshProblem as problem:
        raise IndexUnavailableError(f"backend-info at {printable(upstream)}: {printable(problem)}") from None
    load_runtimes(start.path, outcome.text.encode("utf-8"), CatalogOverlayError)
    added = f"{len(outcome.added)} runtime version(s) added ({', '.join(outcome.added)})"
    nothing = "nothing to add" if not outcome.rewritten else "no version to add"
    summary = f"{added if outcome.added else nothing} (starting from {printable(start.path)})"
    return Refreshed(
        start=start.path,
        changes=(FileChange(RUNTIMES_FILE, start.text, outcome.text),),
        notes=outcome.rewritten,
        contradictions=outcome.contradictions,
        summary=summary,
        entries_kept=False,
    )
