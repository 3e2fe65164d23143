"""``colabenv catalog archs WHEEL_OR_URL``: the GPU architectures a wheel's libraries carry.

A maintainer's tool for checking a fact of ``profiles/catalog/components.toml`` against the
binary instead of a table (CONTRIBUTING.md, "Adding a catalog entry").
"""

from __future__ import annotations

import argparse
import json
import sys

MIB = 1024 * 1024


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="catalog_command", metavar="ACTION", parser_class=type(parser))
    sub.required = True
    archs = sub.add_parser(
        "archs",
        help="list the sm_XY cubins and compute_XY PTX in a wheel's shared objects",
        description="Read the .nv_fatbin sections of the ELF shared objects in a wheel (a file, "
        "or an http(s) URL read with range requests where the server allows them) and list "
        "the GPU architectures each carries.",
    )
    archs.add_argument("wheel", metavar="WHEEL_OR_URL")
    archs.add_argument("--member", action="append", default=[], metavar="GLOB",
                       help="read only shared objects whose file name matches (repeatable), "
                       "e.g. 'libcudnn_ops*'")
    archs.add_argument("--json", action="store_true", help="print one JSON object")
    archs.add_argument("--max-mib", type=int, default=4096, metavar="N",
                       help="bound on the bytes read from a URL and on each unpacked library "
                       "(default 4096)")
    archs.add_argument("--timeout", type=float, default=60.0, metavar="S",
                       help="bound on each HTTP request (default 60)")


def run(args: argparse.Namespace) -> int:
    from colabenv.errors import UsageError
    from colabenv.fatbin import FATBIN_SECTION, read_wheel_archs

    if args.max_mib <= 0 or args.timeout <= 0:
        raise UsageError("catalog archs: --max-mib and --timeout must be positive")
    found = read_wheel_archs(args.wheel, tuple(args.member), max_member=args.max_mib * MIB,
                             max_download=args.max_mib * MIB, timeout=args.timeout)
    if args.json:
        sys.stdout.write(json.dumps(found.to_json(), indent=2) + "\n")
        return 0
    lines = [found.source]
    for library in found.libraries:
        archs = " ".join(str(a) for a in library.archs) or "(no entries)"
        where = f"{library.containers} fat binaries in {FATBIN_SECTION}"
        if library.elsewhere:
            where += f", {library.elsewhere} elsewhere"
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
