"""``colabenv catalog refresh FRAMEWORK [-o DIR]``: a framework's catalog file rebuilt from the
indexes; ``colabenv catalog archs WHEEL_OR_URL``: the GPU architectures a wheel's libraries carry.

Maintainer tools (CONTRIBUTING.md, "Adding a catalog entry"). ``refresh`` starts from a catalog
file (``--catalog DIR``; else ``-o DIR`` when it holds one; else the shipped file), keeps every
entry in it as it is, adds what the indexes have that it lacks, and reports where the indexes
contradict it instead of overwriting. Without ``-o`` it prints the change as a unified diff.
Exit 0; 1 when a contradiction was found (the file, if written, keeps the catalog's entries);
2 bad input; 4 an index that cannot be read.

What both do is :mod:`colabenv.curation`'s; this module parses their arguments and prints.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from colabenv.cli.common import progress_status

if TYPE_CHECKING:
    from pathlib import Path

    from packaging.specifiers import SpecifierSet

    from colabenv.curation.refresh.run import Refreshed
    from colabenv.curation.refresh.sources import RefreshOptions
    from colabenv.models import Framework

MIB = 1024 * 1024
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
    """``catalog refresh``'s arguments, in the order its help lists them."""
    _refresh_file_arguments(refresh)
    _refresh_index_arguments(refresh)
    _refresh_reading_arguments(refresh)


def _refresh_file_arguments(refresh: argparse.ArgumentParser) -> None:
    """What is refreshed, where it starts from and where it goes."""
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


def _refresh_index_arguments(refresh: argparse.ArgumentParser) -> None:
    """Where the wheels are read: the indexes, the find-links pages and their mirrors."""
    from colabenv.curation.refresh.sources import PYTORCH_INDEX

    refresh.add_argument("--index", metavar="URL", help="the default index (default: pip's)")
    refresh.add_argument(
        "--pytorch-index",
        metavar="URL",
        help=f"torch and packages: an index whose project pages list every +cuXYZ/+rocmX.Y/+cpu wheel "
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
        help="packages and jax: do not read the find-links pages the file's builds name "
        "(data.pyg.org's, a release's asset page; AMD's ROCm page): those packages are read from "
        "the index alone, jax's ROCm builds not at all",
    )
    refresh.add_argument(
        "--find-links-mirror",
        metavar="URL",
        help="packages and jax: read each find-links page https://HOST/PATH the file names from "
        "URL/HOST/PATH instead (a mirror); the file still names the page itself",
    )
    refresh.add_argument(
        "--rocm-find-links",
        metavar="URL",
        help="jax: the find-links page of AMD's jax-rocmN-plugin and -pjrt wheels (default: the page "
        "the file's newest ROCm build names; not read with --no-find-links)",
    )
    refresh.add_argument(
        "--index-mirror",
        metavar="URL",
        help="packages: read each index https://HOST/PATH the file's builds name (other than "
        "the default and the PyTorch index) from URL/HOST/PATH instead; the file still names it",
    )


def _refresh_reading_arguments(refresh: argparse.ArgumentParser) -> None:
    """What is read and within what bounds: the releases, the arch lists, the limits on each
    request, the CUDA release notes, progress."""
    from colabenv.curation.refresh.selection import DEFAULT_RELEASES, MAX_RELEASES
    from colabenv.curation.refresh.sources import CUDA_RELEASE_NOTES

    refresh.add_argument(
        "--releases",
        metavar="N|SPEC",
        help=f"the releases to examine: a count N, the newest N of the default selection (the "
        f"newest release in the file and every newer one; default {DEFAULT_RELEASES}, at most "
        f"{MAX_RELEASES}), or those a specifier names, e.g. '>=2.14' or '*' (the newest "
        f"{MAX_RELEASES} at most); a note says which were left out",
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


def _url(text: str, flag: str) -> str:
    from urllib.parse import urlsplit

    from colabenv.errors import UsageError, printable

    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"{flag}: expected an http(s) URL, got {printable(text)!r}")
    return text


def _releases(text: str | None) -> tuple[SpecifierSet | None, int]:
    """``--releases``: a version specifier (its releases, at most the bound) or a count N (the
    default selection's newest N), each within :data:`MAX_RELEASES`."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    from colabenv.curation.refresh.selection import DEFAULT_RELEASES, MAX_RELEASES
    from colabenv.errors import UsageError, printable

    if text is None:
        return None, DEFAULT_RELEASES
    count = text.strip().lstrip("+-")
    if count.isdigit() and count.isascii():
        if not text.strip().isdigit() or not 1 <= int(count) <= MAX_RELEASES:
            raise UsageError(
                f"--releases: expected a count from 1 to {MAX_RELEASES}, got {printable(text)!r}"
            )
        return None, int(count)
    if text.strip() == "*":
        return SpecifierSet(), MAX_RELEASES
    try:
        return SpecifierSet(text), MAX_RELEASES
    except InvalidSpecifier:
        raise UsageError(
            f"--releases: {printable(text)!r} is not a version specifier such as '>=2.14' nor "
            f"a count from 1 to {MAX_RELEASES}"
        ) from None


def _options(
    args: argparse.Namespace, framework: Framework | None, *, variant_index: bool, cuda_notes: str | None
) -> tuple[RefreshOptions, float]:
    """What both ``catalog refresh`` forms read with: the options their flags give (checked),
    the default index and the PyTorch index where ``variant_index`` and the flags allow it, and
    the deadline of each request for an index page."""
    import os

    from colabenv.cli.lock import http_deadline
    from colabenv.curation.refresh.sources import PYTORCH_INDEX, RefreshOptions
    from colabenv.errors import UsageError
    from colabenv.index.urls import default_index_url
    from colabenv.models import Framework

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
    releases, release_count = _releases(args.releases)
    rocm_links = _url(args.rocm_find_links, "--rocm-find-links") if args.rocm_find_links else None
    if rocm_links is not None and framework is not Framework.JAX:
        raise UsageError("--rocm-find-links is for catalog refresh jax (its ROCm plugin's page)")
    options = RefreshOptions(
        framework=framework,
        index=index,
        index_label="PyPI" if index == default else f"the index {index}",
        pytorch_index=pytorch_index,
        releases=releases,
        release_count=release_count,
        read_archs=args.archs == "read",
        max_wheel_bytes=args.max_mib * MIB,
        timeout_s=args.timeout,
        cuda_notes=cuda_notes,
        find_links=not args.no_find_links,
        find_links_mirror=mirror,
        index_mirror=index_mirror,
        rocm_find_links=rocm_links,
    )
    return options, deadline


def _refresh(args: argparse.Namespace) -> int:
    """``catalog refresh FRAMEWORK``: a framework's file and the driver entries it needs."""
    from colabenv.catalog.load import FRAMEWORK_FILES
    from colabenv.curation.refresh.run import index_client, refresh_framework, start_folders
    from colabenv.models import Framework

    framework = Framework(args.framework)
    options, deadline = _options(
        args,
        framework,
        variant_index=framework is Framework.TORCH,
        cuda_notes=_url(args.cuda_notes, "--cuda-notes"),
    )
    client = index_client(options, deadline)
    output, base = start_folders(args.output, args.catalog, FRAMEWORK_FILES[framework])
    with progress_status(not args.quiet and sys.stderr.isatty(), "refreshing") as progress:
        refreshed = refresh_framework(framework, options, client, base, progress)
    return _report(refreshed, output)


def _refresh_packages(args: argparse.Namespace) -> int:
    """``catalog refresh packages``: the releases of the CUDA packages cuda_packages.toml lacks."""
    from colabenv.catalog.packages import PACKAGES_FILE
    from colabenv.curation.refresh.run import index_client, refresh_packages, start_folders

    options, deadline = _options(args, None, variant_index=True, cuda_notes=None)
    client = index_client(options, deadline)
    output, base = start_folders(args.output, args.catalog, PACKAGES_FILE)
    with progress_status(not args.quiet and sys.stderr.isatty(), "refreshing") as progress:
        refreshed = refresh_packages(options, client, base, progress)
    return _report(refreshed, output)


def _refresh_runtimes(args: argparse.Namespace) -> int:
    """``catalog refresh runtimes``: the versions backend-info lists that runtimes.toml lacks."""
    import os

    from colabenv.catalog.runtimes import RUNTIMES_FILE
    from colabenv.cli.lock import http_deadline
    from colabenv.curation.refresh.run import refresh_runtimes_file, runtimes_start, start_folders
    from colabenv.curation.refresh.runtimes import BACKEND_INFO

    upstream = _url(args.backend_info, "--backend-info").rstrip("/") if args.backend_info else BACKEND_INFO
    output, base = start_folders(args.output, args.catalog, RUNTIMES_FILE)
    start = runtimes_start(base)
    refreshed = refresh_runtimes_file(start, upstream, http_deadline(args, os.environ))
    return _report(refreshed, output)


def _report(refreshed: Refreshed, output: Path | None) -> int:
    """Notes and contradictions on stderr; the change as a diff on stdout and the summary on
    stderr, or (``-o``) the files written, the refreshed one last, and the summary on stdout.
    Exit 1 when a contradiction was found."""
    from colabenv.errors import printable

    for note in refreshed.notes:
        sys.stderr.write(f"colabenv: note: {printable(note)}\n")
    kept = " (the catalog's entry is kept)" if refreshed.entries_kept else ""
    for contradiction in refreshed.contradictions:
        sys.stderr.write(f"colabenv: contradiction: {printable(contradiction)}{kept}\n")
    if output is None:
        for change in refreshed.changes:
            _print_diff(change.before, change.after, change.name)
        sys.stderr.write(f"colabenv: {refreshed.summary}\n")
    else:
        from colabenv.cli.common import write_text_atomic

        refreshed_file, *with_it = refreshed.changes
        for change in with_it:
            write_text_atomic(output / change.name, change.after)
        written = write_text_atomic(output / refreshed_file.name, refreshed_file.after)
        sys.stdout.write(f"wrote {printable(written)}: {refreshed.summary}\n")
    return 1 if refreshed.contradictions else 0


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
