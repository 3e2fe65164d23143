"""``colabenv catalog refresh FRAMEWORK [-o DIR]``: a framework's catalog file rebuilt from the
indexes; ``colabenv catalog archs WHEEL_OR_URL``: the GPU architectures a wheel's libraries carry.

Maintainer tools (CONTRIBUTING.md, "Adding a catalog entry"). ``refresh`` starts from a catalog
file (``--catalog DIR``; else ``-o DIR`` when it holds one; else the shipped file), keeps every
entry in it as it is, adds what the indexes have that it lacks, and reports where the indexes
contradict it instead of overwriting. Without ``-o`` it prints the change as a unified diff.
Exit 0; 1 when a contradiction was found (the file, if written, keeps the catalog's entries);
2 bad input; 4 an index that cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    from colabenv.curation.refresh.sources import RefreshOptions
    from colabenv.curation.refresh.writer import Outcome
    from colabenv.index.client import SimpleClient
    from colabenv.models import Arch, Catalog, CudaPackage, CudaToolkit, Framework, Release

MIB = 1024 * 1024
DRIVERS_FILE = "drivers.toml"
FRAMEWORK_NAMES = ("torch", "tensorflow", "jax")
RUNTIMES = "runtimes"
PACKAGES = "packages"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="catalog_command", metavar="ACTION", parser_class=type(parser))
    sub.required = True
    _refresh_arguments(
        sub.add_parser(
            "refresh",
            help="rebuild a framework's catalog file from the package indexes",
            description="Read the releases of FRAMEWORK from the indexes (PEP 691/503 pages, PEP 658 "
            "metadata or range requests into the wheels, arch lists read from the wheels) and add "
            "what the catalog file lacks; entries it has stay as they are, and where the index "
            "contradicts one, that is reported instead. Without -o, print the change as a diff.",
        )
    )
    archs = sub.add_parser(
        "archs",
        help="list the sm_XY cubins and compute_XY PTX in a wheel's shared objects",
        description="Read the .nv_fatbin sections of the ELF shared objects in a wheel (a file, "
        "or an http(s) URL read with range requests where the server allows them) and list "
        "the GPU architectures each carries.",
    )
    archs.add_argument("wheel", metavar="WHEEL_OR_URL")
    archs.add_argument(
        "--member",
        action="append",
        default=[],
        metavar="GLOB",
        help="read only shared objects whose file name matches (repeatable), e.g. 'libcudnn_ops*'",
    )
    archs.add_argument("--json", action="store_true", help="print one JSON object")
    archs.add_argument(
        "--max-mib",
        type=int,
        default=4096,
        metavar="N",
        help="bound on the bytes read from a URL and on each unpacked library (default 4096)",
    )
    archs.add_argument(
        "--timeout", type=float, default=60.0, metavar="S", help="bound on each HTTP request (default 60)"
    )


def _refresh_arguments(refresh: argparse.ArgumentParser) -> None:
    from colabenv.curation.refresh.sources import CUDA_RELEASE_NOTES, PYTORCH_INDEX

    refresh.add_argument(
        "framework",
        choices=(*FRAMEWORK_NAMES, RUNTIMES, PACKAGES),
        metavar="FRAMEWORK",
        help="torch, tensorflow or jax; runtimes: the Colab runtime versions (runtimes.toml); "
        "packages: the CUDA packages (cuda_packages.toml)",
    )
    refresh.add_argument(
        "--backend-info",
        metavar="URL",
        help="runtimes: where googlecolab/backend-info's files are read, as URL/COMMIT/FILE "
        "(default: GitHub's raw files)",
    )
    refresh.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="write FRAMEWORK.toml into this folder (atomically) instead of printing a diff",
    )
    refresh.add_argument(
        "--catalog",
        metavar="DIR",
        help="the folder whose FRAMEWORK.toml is refreshed (default: -o DIR when "
        "it has one, else the shipped catalog)",
    )
    refresh.add_argument("--index", metavar="URL", help="the default index (default: pip's)")
    refresh.add_argument(
        "--pytorch-index",
        metavar="URL",
        help=f"torch and packages: an index whose project pages list every +cuXYZ/+cpu wheel "
        f"(default {PYTORCH_INDEX}); the catalog still names the variant "
        f"indexes {PYTORCH_INDEX}/cuXYZ",
    )
    refresh.add_argument(
        "--no-variant-index",
        action="store_true",
        help="torch and packages: do not read the PyTorch index; only the default build is "
        "derived (torch: the cpu build is carried over, marked unconfirmed)",
    )
    refresh.add_argument(
        "--no-find-links",
        action="store_true",
        help="packages: do not read the find-links pages the file's builds name "
        "(data.pyg.org's, a release's asset page): those packages are read from the index alone",
    )
    refresh.add_argument(
        "--find-links-mirror",
        metavar="URL",
        help="packages: read each find-links page https://HOST/PATH the file names from "
        "URL/HOST/PATH instead (a mirror); the file still names the page itself",
    )
    refresh.add_argument(
        "--index-mirror",
        metavar="URL",
        help="packages: read each index https://HOST/PATH the file's builds name (other than "
        "the default and the PyTorch index) from URL/HOST/PATH instead; the file still names it",
    )
    refresh.add_argument(
        "--releases",
        metavar="SPEC",
        help="the releases to examine, e.g. '>=2.14' or '*' (default: the "
        "newest release in the file and every newer one)",
    )
    refresh.add_argument(
        "--archs",
        choices=("read", "carry"),
        default="read",
        help="read each build's arch list from its wheel (default), or carry "
        "the previous release's over, marked unconfirmed",
    )
    refresh.add_argument(
        "--max-mib",
        type=int,
        default=4096,
        metavar="N",
        help="bound on the bytes read of one wheel (default 4096)",
    )
    refresh.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="bound on each request into a wheel (default 60)",
    )
    refresh.add_argument(
        "--http-deadline",
        metavar="S",
        help="bound on each whole request for an index page, in seconds "
        "(default 60; also COLABENV_HTTP_DEADLINE)",
    )
    refresh.add_argument(
        "--cuda-notes",
        metavar="URL",
        default=CUDA_RELEASE_NOTES,
        help="NVIDIA's CUDA Toolkit Release Notes page, read only where a build's CUDA has no "
        "drivers.toml entry: its Table 3 gives the entries to add (default: NVIDIA's current page)",
    )
    refresh.add_argument("--quiet", action="store_true", help="no progress output")


def run(args: argparse.Namespace) -> int:
    if args.catalog_command == "refresh":
        if args.framework == PACKAGES:
            return _refresh_packages(args)
        return _refresh_runtimes(args) if args.framework == RUNTIMES else _refresh(args)
    return _archs(args)


def _archs(args: argparse.Namespace) -> int:
    from colabenv.curation.archs import FATBIN_SECTION, read_wheel_archs
    from colabenv.errors import UsageError

    if args.max_mib <= 0 or args.timeout <= 0:
        raise UsageError("catalog archs: --max-mib and --timeout must be positive")
    found = read_wheel_archs(
        args.wheel,
        tuple(args.member),
        max_member=args.max_mib * MIB,
        max_download=args.max_mib * MIB,
        timeout=args.timeout,
    )
    if args.json:
        sys.stdout.write(json.dumps(found.to_json(), indent=2) + "\n")
        return 0
    lines = [found.source]
    for library in found.libraries:
        archs = " ".join(str(a) for a in library.archs) or "(no entries)"
        where = f"{library.containers} fat binaries in {FATBIN_SECTION}"
        if library.elsewhere:
            where += f", {library.elsewhere} elsewhere"
        if library.nvcc:
            where += f"; built by nvcc {', '.join(library.nvcc)}"
        lines.append(f"  {library.path}: {archs} ({where})")
    if not found.libraries:
        lines.append("  no shared object with GPU code")
    else:
        common = " ".join(str(a) for a in found.common) or "(none)"
        lines.append(f"  in every library: {common}")
    if found.without_gpu_code:
        lines.append(f"  {found.without_gpu_code} shared object(s) without GPU code")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


# ---------------------------------------------------------------------------------------------
# refresh


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str], None]]:
    if not enabled:
        yield lambda _text: None
        return
    from rich.console import Console
    from rich.text import Text

    from colabenv.errors import printable

    console = Console(stderr=True)
    with console.status("refreshing") as status:
        yield lambda text: status.update(Text(printable(text)))


def _url(text: str, flag: str) -> str:
    from urllib.parse import urlsplit

    from colabenv.errors import UsageError, printable

    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"{flag}: expected an http(s) URL, got {printable(text)!r}")
    return text


def _releases(text: str | None) -> SpecifierSet | None:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    from colabenv.errors import UsageError, printable

    if text is None:
        return None
    if text.strip() == "*":
        return SpecifierSet()
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise UsageError(
            f"--releases: {printable(text)!r} is not a version specifier such as '>=2.14'"
        ) from None


def _driver_table(base: Path) -> Catalog:
    """The driver table new builds must be in: the shipped one, and the base folder's
    ``drivers.toml`` when it is an overlay with one."""
    from colabenv._util.resources import catalog_dir
    from colabenv.catalog.load import DRIVERS_FILE, load_overlay, shipped_catalog, with_overlays

    shipped = shipped_catalog(())
    if base.resolve() == catalog_dir().resolve() or not (base / DRIVERS_FILE).exists():
        return shipped
    return with_overlays(shipped, [load_overlay(base, "--catalog", ())])


def _refresh_client(
    args: argparse.Namespace, framework: Framework | None, *, variant_index: bool, cuda_notes: str | None
) -> tuple[RefreshOptions, SimpleClient]:
    """What both ``catalog refresh`` forms read with: the options their flags give (checked) and
    a client of the default index (and the PyTorch index where ``variant_index`` and the flags
    allow it) whose messages redact those indexes' credentials."""
    import os

    from colabenv.cli.lock import http_deadline
    from colabenv.curation.refresh.sources import PYTORCH_INDEX, RefreshOptions
    from colabenv.errors import UsageError
    from colabenv.index.client import SimpleClient
    from colabenv.index.urls import Redactor, default_index_url

    if args.max_mib <= 0 or not 0 < args.timeout <= 3600:
        raise UsageError("catalog refresh: --max-mib and --timeout must be positive (--timeout at most 3600)")
    deadline = http_deadline(args, os.environ)
    default = default_index_url()
    index = _url(args.index, "--index") if args.index else default
    if index is None:
        raise UsageError("catalog refresh: no default index is known here: give --index URL")
    pytorch_index = None
    if variant_index and not args.no_variant_index:
        pytorch_index = _url(args.pytorch_index, "--pytorch-index") if args.pytorch_index else PYTORCH_INDEX
    mirror = _url(args.find_links_mirror, "--find-links-mirror") if args.find_links_mirror else None
    index_mirror = _url(args.index_mirror, "--index-mirror") if args.index_mirror else None
    options = RefreshOptions(
        framework=framework,
        index=index,
        index_label="PyPI" if index == default else f"the index {index}",
        pytorch_index=pytorch_index,
        releases=_releases(args.releases),
        read_archs=args.archs == "read",
        max_wheel_bytes=args.max_mib * MIB,
        timeout_s=args.timeout,
        cuda_notes=cuda_notes,
        find_links=not args.no_find_links,
        find_links_mirror=mirror,
        index_mirror=index_mirror,
    )
    mirrors = [url for url in (mirror, index_mirror) if url]
    urls = [index] + ([pytorch_index] if pytorch_index else []) + mirrors
    return options, SimpleClient(os.environ, Redactor.for_urls(urls, os.environ), deadline_s=deadline)


def _refresh(args: argparse.Namespace) -> int:

    from colabenv.catalog.load import FRAMEWORK_FILES
    from colabenv.curation.refresh.frameworks import derive
    from colabenv.curation.refresh.sources import IndexReader
    from colabenv.errors import printable
    from colabenv.models import Framework

    framework = Framework(args.framework)
    name = FRAMEWORK_FILES[framework]
    options, client = _refresh_client(
        args,
        framework,
        variant_index=framework is Framework.TORCH,
        cuda_notes=_url(args.cuda_notes, "--cuda-notes"),
    )
    output, base = _folders(args, name)
    start_text, known, named, follows = _starting_file(base / name, framework)
    catalog = _driver_table(base)
    with _progress(not args.quiet and sys.stderr.isatty()) as progress:
        derived = derive(IndexReader(client, options, progress), known, catalog)
    from colabenv.curation.refresh.writer import merged_text

    outcome = merged_text(
        framework, start_text, known, named, follows, derived, options.pytorch_index is not None
    )
    _check_loads(base / name, outcome.text, framework, derived.toolkits)
    drivers = _drivers_change(base, derived.toolkits)
    for note in outcome.notes:
        sys.stderr.write(f"colabenv: note: {printable(note)}\n")
    for contradiction in outcome.contradictions:
        sys.stderr.write(
            f"colabenv: contradiction: {printable(contradiction)} (the catalog's entry is kept)\n"
        )
    added = _toolkits_added(derived.toolkits)
    if output is None:
        _print_diff(start_text, outcome.text, name)
        if drivers is not None:
            _print_diff(drivers[0], drivers[1], DRIVERS_FILE)
        sys.stderr.write(f"colabenv: {_summary(outcome, base / name)}{added}\n")
    else:
        from colabenv.cli.common import write_text_atomic

        if drivers is not None:
            write_text_atomic(output / DRIVERS_FILE, drivers[1])
        written = write_text_atomic(output / name, outcome.text)
        sys.stdout.write(f"wrote {printable(written)}: {_summary(outcome, base / name)}{added}\n")
    return 1 if outcome.contradictions else 0


def _folders(args: argparse.Namespace, name: str) -> tuple[Path | None, Path]:
    """The folder ``-o`` names (None: print a diff) and the one whose ``name`` refresh starts
    from: ``--catalog DIR``, else the ``-o`` folder when it has the file, else the shipped one."""
    from pathlib import Path

    from colabenv._util.resources import catalog_dir
    from colabenv.errors import OutputError, UsageError, printable

    output = Path(args.output) if args.output else None
    if output is not None and not output.is_dir():
        raise OutputError(f"{printable(output)}: not a folder (-o names the folder {name} is written into)")
    if args.catalog:
        base = Path(args.catalog)
        if not base.is_dir():
            raise UsageError(f"--catalog: {printable(base)}: not a folder")
        return output, base
    if output is not None and (output / name).exists():
        return output, output
    return output, catalog_dir()


def _drivers_change(base: Path, toolkits: tuple[CudaToolkit, ...]) -> tuple[str, str] | None:
    """``drivers.toml`` before and after the toolkit entries a refresh found (None: none): the
    base folder's file where it has one, else a new file holding those entries alone (an
    overlay's driver entries are merged over the shipped table)."""
    from colabenv.catalog.load import DRIVERS_FILE, read_overlay_file
    from colabenv.curation.refresh.writer import drivers_text

    if not toolkits:
        return None
    path = base / DRIVERS_FILE
    start = read_overlay_file(path).decode("utf-8") if path.exists() else ""
    return start, drivers_text(start, toolkits)


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
    from colabenv.catalog.load import framework_releases, parse_document, read_overlay_file
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
    from colabenv.catalog.load import (
        Overlay,
        framework_releases,
        parse_document,
        shipped_catalog,
        with_overlays,
    )
    from colabenv.errors import CatalogOverlayError

    doc = parse_document(path, text.encode("utf-8"), CatalogOverlayError)
    releases = framework_releases(doc, framework, str(path))
    with_overlays(shipped_catalog([framework]), [Overlay(path.parent, tuple(releases), toolkits)])


def _print_diff(before: str, after: str, name: str) -> None:
    import difflib

    from colabenv.errors import printable

    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    sys.stdout.write("".join(printable(line.rstrip("\n")) + "\n" for line in lines))


def _summary(outcome: Outcome, path: Path) -> str:
    from colabenv.errors import printable

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
    if outcome.contradictions:
        parts.append(f"{len(outcome.contradictions)} contradiction(s) reported")
    if not parts:
        parts.append("nothing to add")
    return f"{'; '.join(parts)} (starting from {printable(path)})"


def _refresh_packages(args: argparse.Namespace) -> int:
    """``catalog refresh packages``: the releases of the CUDA packages cuda_packages.toml lacks."""

    from colabenv.catalog.load import read_overlay_file
    from colabenv.catalog.packages import PACKAGES_FILE
    from colabenv.curation.refresh.packages import derive_packages
    from colabenv.curation.refresh.sources import IndexReader
    from colabenv.curation.refresh.writer import packages_merged_text
    from colabenv.errors import CatalogError, CatalogOverlayError, printable

    options, client = _refresh_client(args, None, variant_index=True, cuda_notes=None)
    output, base = _folders(args, PACKAGES_FILE)
    path = base / PACKAGES_FILE
    start_text = read_overlay_file(path).decode("utf-8")
    packages, named = _packages_file(path, start_text)
    with _progress(not args.quiet and sys.stderr.isatty()) as progress:
        derived = derive_packages(IndexReader(client, options, progress), packages, _torch_builds())
    text = packages_merged_text(start_text, derived.releases, named, derived.builds)
    try:
        _packages_file(path, text)  # the refreshed file loads
    except CatalogOverlayError as problem:
        made = "catalog refresh packages made a file that does not load, so nothing is written"
        raise CatalogError(path, None, f"{made}: {problem}") from None
    for note in derived.notes:
        sys.stderr.write(f"colabenv: note: {printable(note)}\n")
    for contradiction in derived.contradictions:
        sys.stderr.write(
            f"colabenv: contradiction: {printable(contradiction)} (the catalog's entry is kept)\n"
        )
    added = ", ".join(f"{r.package} {r.version}" for r in derived.releases) or "none"
    builds = [f"{r.package} {r.version} {b.name}" for r in derived.builds for b in r.builds]
    summary = (
        f"{len(derived.releases)} release(s) added ({added}); "
        f"{len(builds)} build(s) added to releases the file has ({', '.join(builds) or 'none'}); "
        f"{len(derived.contradictions)} contradiction(s) reported (starting from {printable(path)})"
    )
    if output is None:
        _print_diff(start_text, text, PACKAGES_FILE)
        sys.stderr.write(f"colabenv: {summary}\n")
    else:
        from colabenv.cli.common import write_text_atomic

        written = write_text_atomic(output / PACKAGES_FILE, text)
        sys.stdout.write(f"wrote {printable(written)}: {summary}\n")
    return 1 if derived.contradictions else 0


def _torch_builds() -> tuple[tuple[Version, str], ...]:
    """The shipped catalog's torch releases and GPU builds (``2.9.0``, ``cu128``): the pages of
    data.pyg.org's kind that refresh looks for beside those the file names."""
    from colabenv.catalog.load import shipped_catalog
    from colabenv.models import Framework

    catalog = shipped_catalog([Framework.TORCH])
    releases = catalog.releases_of(Framework.TORCH)
    return tuple((r.version, v.name) for r in releases for v in r.variants if v.cuda is not None)


def _packages_file(path: Path, text: str) -> tuple[tuple[CudaPackage, ...], dict[str, tuple[Arch, ...]]]:
    """The packages and named arch lists of a ``cuda_packages.toml`` text."""
    from colabenv.catalog.load import parse_document
    from colabenv.catalog.packages import cuda_packages, file_archs
    from colabenv.errors import CatalogOverlayError

    doc = parse_document(path, text.encode("utf-8"), CatalogOverlayError)
    if doc.data.get("schema") != 1:
        raise doc.fail("schema", "expected schema = 1")
    return cuda_packages(doc, str(path)), dict(file_archs(doc))


def _refresh_runtimes(args: argparse.Namespace) -> int:
    """``catalog refresh runtimes``: the versions backend-info lists that runtimes.toml lacks."""
    import os

    from colabenv.catalog.load import read_overlay_file
    from colabenv.catalog.runtimes import RUNTIMES_FILE, load_runtimes
    from colabenv.cli.lock import http_deadline
    from colabenv.curation.refresh.runtimes import BACKEND_INFO, RuntimeRefreshProblem, refresh_runtimes
    from colabenv.errors import CatalogOverlayError, IndexUnavailableError, printable
    from colabenv.index.client import SimpleClient
    from colabenv.index.urls import Redactor

    upstream = _url(args.backend_info, "--backend-info").rstrip("/") if args.backend_info else BACKEND_INFO
    output, base = _folders(args, RUNTIMES_FILE)
    start = base / RUNTIMES_FILE
    start_text = read_overlay_file(start).decode("utf-8") if start.exists() else "schema = 1\n"
    load_runtimes(start, start_text.encode("utf-8"), CatalogOverlayError)
    client = SimpleClient(
        os.environ, Redactor.for_urls([upstream], os.environ), deadline_s=http_deadline(args, os.environ)
    )

    def get(ref: str, name: str) -> str | None:
        body = client.file_bytes(upstream, f"{upstream}/{ref}/{name}")
        try:
            return None if body is None else body.decode("utf-8")
        except UnicodeDecodeError:
            raise RuntimeRefreshProblem(f"{name} at {ref}: not UTF-8 text") from None

    try:
        outcome = refresh_runtimes(start_text, get)
    except RuntimeRefreshProblem as problem:
        raise IndexUnavailableError(f"backend-info at {printable(upstream)}: {printable(problem)}") from None
    load_runtimes(start, outcome.text.encode("utf-8"), CatalogOverlayError)
    for contradiction in outcome.contradictions:
        sys.stderr.write(f"colabenv: contradiction: {printable(contradiction)}\n")
    added = f"{len(outcome.added)} runtime version(s) added ({', '.join(outcome.added)})"
    summary = f"{added if outcome.added else 'nothing to add'} (starting from {printable(start)})"
    if output is None:
        _print_diff(start_text, outcome.text, RUNTIMES_FILE)
        sys.stderr.write(f"colabenv: {summary}\n")
    else:
        from colabenv.cli.common import write_text_atomic

        written = write_text_atomic(output / RUNTIMES_FILE, outcome.text)
        sys.stdout.write(f"wrote {printable(written)}: {summary}\n")
    return 1 if outcome.contradictions else 0
