"""The ``duplicates`` check: a distribution installed twice, a module shadowed on ``sys.path``.

A dist-info and an egg-info of one distribution in one folder are one distribution (the
dist-info is read); only when their versions differ is it said which one is read."""

from __future__ import annotations

from collections.abc import Iterable

from packaging.utils import canonicalize_name

from colabenv.host.installed import PathScan
from colabenv.verification.report import Check, Status, join_limited


def check_duplicates(
    scan: PathScan, relevant_dists: Iterable[str] = (), relevant_modules: Iterable[str] = ()
) -> Check:
    """FAIL when a duplicate or shadow touches what this run expects; WARN for the rest."""
    dists = {canonicalize_name(n) for n in relevant_dists}
    modules = set(relevant_modules)
    findings: list[tuple[bool, str]] = []
    for name, found in scan.duplicates:
        where = ", ".join(f"{d.version or '?'} in {d.entry}" for d in found)
        findings.append((name in dists, f"{name} installed {len(found)} times ({where})"))
    for pair in scan.second_metadata:
        used, ignored = pair.used, pair.ignored
        if used.version != ignored.version:
            findings.append(
                (
                    False,
                    f"{used.name} {used.version} in {used.entry}: its {used.metadata_dir.name} is read,"
                    f" not the {ignored.metadata_dir.name} beside it (which says {ignored.version})",
                )
            )
    for shadow in scan.shadows:
        findings.append(
            (
                shadow.module in modules,
                f"module {shadow.module} in {shadow.hidden} is shadowed by {shadow.used}",
            )
        )
    if not findings:
        return Check(
            "duplicates", Status.PASS, f"{len(scan.dists)} distributions, none twice, no module shadowed"
        )
    findings.sort(key=lambda f: not f[0])
    status = Status.FAIL if findings[0][0] else Status.WARN
    return Check("duplicates", status, join_limited([text for _, text in findings]))
