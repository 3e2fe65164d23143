"""The catalog file ``catalog refresh`` writes: the file it starts from, kept as it is, with the
new releases and new builds of known releases inserted as TOML in the file's own layout, and
the contradictions between the file and the indexes listed instead of written; and the driver
table with the toolkit entries the CUDA release notes gave appended.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from colabenv.catalog.components import spec_boundaries
from colabenv.curation.refresh.sources import PYTHONS, Derived, stamp
from colabenv.models import (
    CATALOG_PLATFORM,
    Arch,
    Companion,
    ComputeCapability,
    CudaToolkit,
    Framework,
    PackageBuild,
    PackageRelease,
    Release,
    Variant,
    archs_cover,
    format_driver,
)
from colabenv.models.frozen import model

FOLLOWS_VARIANT = {Framework.TORCH: True, Framework.JAX: False, Framework.TENSORFLOW: False}
"""``companions_follow_variant`` of a new file: torch's companions carry its local tag."""
_ORDER = {op: n for n, op in enumerate((">=", ">", "==", "===", "~=", "!=", "<=", "<"))}


@model
class Outcome:
    """The refreshed file and what changed: releases and builds added, companion pairings the
    index has a newer release for (written), contradictions found (the file keeps its own
    entry), and notes (what could not be derived)."""

    text: str
    added_releases: tuple[Version, ...]
    added_variants: tuple[tuple[Version, str], ...]
    contradictions: tuple[str, ...]
    notes: tuple[str, ...]
    paired: tuple[str, ...] = ()
    """``VERSION NAME OLD -> NEW``: each companion pairing written anew."""


def quoted(text: str) -> str:
    """A TOML basic string (JSON's escapes, and DEL, which TOML wants escaped too)."""
    return json.dumps(text).replace("\x7f", "\\u007f")


def specifier_text(specifier: SpecifierSet) -> str:
    items = sorted(specifier, key=lambda s: (_ORDER.get(s.operator, 9), s.version))
    return ",".join(str(s) for s in items)


def _archs_value(archs: Sequence[Arch], named: Mapping[str, tuple[Arch, ...]]) -> str:
    """A named list equal to ``archs`` (the one defined last, the newest, when several are),
    else the list itself."""
    for name, listed in reversed(list(named.items())):
        if tuple(sorted(listed)) == tuple(sorted(archs)):
            return quoted(name)
    return "[" + ", ".join(quoted(str(a)) for a in sorted(archs)) + "]"


def _companion_entry(companion: Companion, follows_default: bool) -> str:
    if companion.follows_variant == follows_default and companion.python is None:
        return f"{companion.name} = {quoted(str(companion.version))}"
    parts = [f"version = {quoted(str(companion.version))}"]
    if companion.follows_variant != follows_default:
        parts.append(f"follows_variant = {'true' if companion.follows_variant else 'false'}")
    if companion.python is not None:
        parts.append(f"python = {quoted(specifier_text(companion.python))}")
    return f"{companion.name} = {{ {', '.join(parts)} }}"


def _given(*pairs: tuple[str, str | None]) -> list[str]:
    """A ``key = value`` line for each pair whose value (TOML already) is given, in order."""
    return [f"{key} = {value}" for key, value in pairs if value is not None]


def _text(value: object | None) -> str | None:
    return None if value is None else quoted(str(value))


def _texts(values: Sequence[str]) -> str:
    return "[" + ", ".join(quoted(v) for v in values) + "]"


def _range(specifier: SpecifierSet | None) -> str | None:
    return None if specifier is None else quoted(specifier_text(specifier))


def _platforms(platforms: tuple[str, ...]) -> str | None:
    """The ``platforms`` value, where they are other than the catalog's own platform alone."""
    return None if platforms == (CATALOG_PLATFORM,) else _texts(platforms)


def _unconfirmed(reason: str | None) -> list[str]:
    return [] if reason is None else ["unconfirmed = true", f"unconfirmed_reason = {quoted(reason)}"]


def _free_threaded(specifier: SpecifierSet | None, unconfirmed: str | None) -> list[str]:
    return _given(("free_threaded", _range(specifier)), ("free_threaded_unconfirmed", _text(unconfirmed)))


def variant_block(variant: Variant, named: Mapping[str, tuple[Arch, ...]]) -> str:
    lines = ["[[release.variant]]", f"name = {quoted(variant.name)}"]
    lines += _given(
        ("cuda", _text(variant.cuda)),
        ("index_url", _text(variant.index_url)),
        ("local_tag", _text(variant.local_tag)),
        ("extra", _text(variant.extra)),
        ("platforms", _platforms(variant.platforms)),
        ("archs", _archs_value(variant.archs, named) if variant.archs else None),
    )
    if variant.rocm is not None:
        lines += [f"rocm = {quoted(str(variant.rocm))}", f"gfx = {_texts(variant.gfx)}"]
    lines += _given(("python", _range(variant.python)))
    one_line = f"pins = {_texts(variant.pin_texts)}"
    if len(one_line) > 100:
        lines += ["pins = [", *(f"    {quoted(pin)}," for pin in variant.pin_texts), "]"]
    elif variant.pin_texts or variant.cuda is not None:
        lines.append(one_line)
    lines += _given(
        ("requires", _texts(variant.requires) if variant.requires else None),
        ("find_links", _text(variant.find_links)),
    )
    lines += _unconfirmed(variant.unconfirmed)
    lines += _free_threaded(variant.free_threaded, variant.free_threaded_unconfirmed)
    lines.append(f"source = {quoted(variant.source.text)}")
    return "\n".join(lines) + "\n"


def release_block(release: Release, follows_default: bool, named: Mapping[str, tuple[Arch, ...]]) -> str:
    lines = [
        "[[release]]",
        f"version = {quoted(str(release.version))}",
        f"python = {quoted(specifier_text(release.python))}",
    ]
    if release.default_variant is not None:
        lines.append(f"default_variant = {quoted(release.default_variant)}")
    if release.platform_defaults:
        entries = ", ".join(f"{platform} = {quoted(name)}" for platform, name in release.platform_defaults)
        lines.append(f"platform_defaults = {{ {entries} }}")
    if release.companions:
        entries = ", ".join(_companion_entry(c, follows_default) for c in release.companions)
        lines.append(f"companions = {{ {entries} }}")
    lines.append(f"source = {quoted(release.source.text)}")
    text = "\n".join(lines) + "\n"
    for variant in release.variants:
        text += "\n" + variant_block(variant, named)
    return text


def drivers_text(start: str, toolkits: Sequence[CudaToolkit]) -> str:
    """``drivers.toml`` as it was (``start``; a new file: ``schema = 1`` alone) with a
    ``[[toolkit]]`` entry for each of ``toolkits`` appended, in the file's own layout."""
    text = (
        start
        if start.strip()
        else "# NVIDIA driver facts, written by colabenv catalog refresh.\nschema = 1\n"
    )
    text = text.rstrip("\n") + "\n"
    for toolkit in toolkits:
        text += (
            f"\n[[toolkit]]\nversion = {quoted(str(toolkit.version))}\nlabel = {quoted(toolkit.label)}\n"
            f"driver = {quoted(format_driver(toolkit.toolkit_driver))}\n"
            f"source = {quoted(toolkit.source.text)}\n"
        )
    return text


def header(framework: Framework) -> str:
    return (
        f"# {framework} releases for Linux x86_64, written by colabenv catalog refresh.\n"
        f'# See CONTRIBUTING.md, "Adding a catalog entry".\nschema = 1\n'
        f"framework = {quoted(framework.value)}\n"
        f"companions_follow_variant = {'true' if FOLLOWS_VARIANT[framework] else 'false'}\n"
    )


# ---------------------------------------------------------------------------------------------
# Where things go in the file


def _release_blocks(lines: Sequence[str]) -> list[tuple[int, int, Version | None]]:
    """(first line, end, version) of each ``[[release]]`` block: from its header, or the
    comment lines right above it, to where the next block begins."""
    starts = [i for i, line in enumerate(lines) if line.strip() == "[[release]]"]
    begins = []
    for start in starts:
        begin = start
        while begin > 0 and lines[begin - 1].lstrip().startswith("#"):
            begin -= 1
        begins.append(begin)
    blocks = []
    for n, start in enumerate(starts):
        end = begins[n + 1] if n + 1 < len(starts) else len(lines)
        version = None
        for line in lines[start:end]:
            key, _, value = line.partition("=")
            if key.strip() == "version":
                try:
                    version = Version(json.loads(value.strip()))
                except (ValueError, TypeError, InvalidVersion):
                    version = None
                break
        blocks.append((begins[n], end, version))
    return blocks


def _trimmed_end(lines: Sequence[str], start: int, end: int) -> int:
    while end > start and not lines[end - 1].strip():
        end -= 1
    return end


def merged_text(
    framework: Framework,
    base_text: str,
    known: Sequence[Release],
    named: Mapping[str, tuple[Arch, ...]],
    follows_default: bool,
    derived: Derived,
    variant_index_read: bool,
) -> Outcome:
    """``base_text`` with what ``derived`` adds, and the contradictions with ``known`` (the
    releases ``base_text`` holds)."""
    text = base_text if base_text.strip() else header(framework)
    lines = text.splitlines()
    by_version = {r.version: r for r in known}
    inserts: list[tuple[int, str]] = []
    added_releases: list[Version] = []
    added_variants: list[tuple[Version, str]] = []
    contradictions: list[str] = []
    paired: list[str] = []
    notes = list(derived.notes)
    blocks = _release_blocks(lines)
    for release in sorted(derived.releases, key=lambda r: r.version):
        old = by_version.get(release.version)
        if old is None:
            later = [b for b in blocks if b[2] is not None and b[2] > release.version]
            at = later[0][0] if later else len(lines)
            inserts.append((at, release_block(release, follows_default, named)))
            added_releases.append(release.version)
            continue
        found, confirmed = compare(old, release, derived, variant_index_read)
        contradictions.extend(found)
        notes.extend(confirmed)
        newer = newer_companions(old, release)
        if newer:
            block = next(b for b in blocks if b[2] == release.version)
            _write_pairing(lines, block[0], block[1], old, newer, follows_default)
            paired.extend(f"{release.version} {c.name} {_had(old, c)} -> {c.version}" for c in newer)
        new = [v for v in release.variants if listed_as(old, v) is None]
        if not new:
            continue
        block = next(b for b in blocks if b[2] == release.version)
        at = _trimmed_end(lines, block[0], block[1])
        inserts.append((at, "\n".join(variant_block(v, named) for v in new)))
        added_variants.extend((release.version, build_name(v)) for v in new)
    ordered = sorted(enumerate(inserts), key=lambda item: (item[1][0], item[0]), reverse=True)
    for _, (at, block_text) in ordered:
        before = [""] if at > 0 and lines[at - 1].strip() else []
        after = [""] if at < len(lines) and lines[at].strip() else []
        lines[at:at] = [*before, *block_text.strip("\n").splitlines(), *after]
    return Outcome(
        "\n".join(lines).rstrip("\n") + "\n",
        tuple(added_releases),
        tuple(added_variants),
        tuple(contradictions),
        tuple(notes),
        tuple(paired),
    )


def listed_as(release: Release, variant: Variant) -> Variant | None:
    """The build of ``release`` that ``variant`` is: the same name, for one of its platforms."""
    return next(
        (v for v in release.variants if v.name == variant.name and set(v.platforms) & set(variant.platforms)),
        None,
    )


def build_name(variant: Variant | PackageBuild) -> str:
    """``cu130``, or ``cu130 (linux_aarch64)`` for a build listed for another platform (a
    framework's variant, a CUDA package's build)."""
    others = [p for p in variant.platforms if p != CATALOG_PLATFORM]
    return f"{variant.name} ({', '.join(others)})" if others else variant.name


def newer_companions(old: Release, new: Release) -> tuple[Companion, ...]:
    """The companions the index pairs with ``new`` in a newer release than the catalog's
    ``old`` pairs (2.11.1 where the catalog has 2.11.0), each as the catalog writes it: the index's
    version and Python range, the catalog's ``follows_variant`` (a judgement, kept)."""
    found = []
    for companion in new.companions:
        had = old.companion(companion.name)
        if had is not None and companion.version > had.version:
            found.append(Companion(companion.name, companion.version, had.follows_variant, companion.python))
    return tuple(found)


def _had(old: Release, companion: Companion) -> str:
    had = old.companion(companion.name)
    return str(had.version) if had is not None else "none"


def _write_pairing(
    lines: list[str],
    start: int,
    end: int,
    old: Release,
    newer: Sequence[Companion],
    follows_default: bool,
) -> None:
    """The ``companions`` and ``source`` lines of the release whose block is ``lines[start:end]``
    with the ``newer`` companions in place of the catalog's, and the source saying so."""
    own_end = next((n for n in range(start, end) if lines[n].strip() == "[[release.variant]]"), end)
    replaced = {c.name: c for c in newer}
    companions = [replaced.get(c.name, c) for c in old.companions]
    entries = ", ".join(_companion_entry(c, follows_default) for c in companions)
    said = "; ".join(
        f"companions.{c.name} {c.version} (was {_had(old, c)}): the index's pairing, {stamp()}" for c in newer
    )
    for number in range(start, own_end):
        key, _, value = lines[number].partition("=")
        if key.strip() == "companions":
            lines[number] = f"companions = {{ {entries} }}"
        elif key.strip() == "source":
            try:
                text = json.loads(value.strip())
            except ValueError:
                text = None
            if isinstance(text, str):
                lines[number] = f"source = {quoted(f'{text}; {said}')}"


# ---------------------------------------------------------------------------------------------
# Contradictions


def _pin_key(text: str) -> tuple[str, tuple[str, ...], SpecifierSet]:
    requirement = Requirement(text)
    return (canonicalize_name(requirement.name), tuple(sorted(requirement.extras)), requirement.specifier)


def pins_differ(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether two lists of pins name other requirements (order, spelling and the order of
    a specifier's clauses aside)."""
    left = sorted((_pin_key(t) for t in a), key=str)
    right = sorted((_pin_key(t) for t in b), key=str)
    return left != right


KNOWN_GPUS = tuple(
    ComputeCapability.parse(c)
    for c in (
        "3.5",
        "3.7",
        "5.0",
        "5.2",
        "5.3",
        "6.0",
        "6.1",
        "6.2",
        "7.0",
        "7.2",
        "7.5",
        "8.0",
        "8.6",
        "8.7",
        "8.9",
        "9.0",
        "10.0",
        "10.1",
        "10.3",
        "11.0",
        "12.0",
        "12.1",
    )
)
"""The compute capabilities of GPUs that exist, on which two arch lists are compared."""


def coverage_difference(catalog: Sequence[Arch], wheel: Sequence[Arch]) -> str:
    """Which GPUs one arch list covers and the other does not ("" when they cover the same)."""
    only_catalog = [g.sm for g in KNOWN_GPUS if archs_cover(catalog, g) and not archs_cover(wheel, g)]
    only_wheel = [g.sm for g in KNOWN_GPUS if archs_cover(wheel, g) and not archs_cover(catalog, g)]
    parts = []
    if only_catalog:
        parts.append(f"no kernels for {', '.join(only_catalog)} in every library")
    if only_wheel:
        parts.append(f"kernels the catalog does not list for {', '.join(only_wheel)}")
    return "; ".join(parts)


def _same_pythons(catalog: SpecifierSet, index: SpecifierSet, release: SpecifierSet) -> bool:
    """Whether two companion ranges admit the same Pythons among the release's own: each X.Y and
    each version either range names (``!=3.14.1``); an upper bound the release's range already
    sets (``<3.15``) is no difference."""
    tried = {Version(p) for p in PYTHONS} | {*spec_boundaries(catalog), *spec_boundaries(index)}
    return all(
        catalog.contains(v, prereleases=True) == index.contains(v, prereleases=True)
        for v in tried
        if release.contains(v, prereleases=True)
    )


def compare(
    old: Release, new: Release, derived: Derived, variant_index_read: bool
) -> tuple[list[str], list[str]]:
    """Where the catalog's ``old`` and the index's ``new`` disagree (contradictions), and the
    catalog's unconfirmed builds the wheels now confirm (notes)."""
    where = f"{old.framework} {old.version}"
    found: list[str] = []
    confirmed: list[str] = []
    if old.python != new.python:
        found.append(
            f"{where}: python: the catalog has {specifier_text(old.python)}, the index "
            f"says {specifier_text(new.python)}"
        )
    if old.default_variant != new.default_variant:
        found.append(
            f"{where}: default_variant: the catalog has {old.default_variant}, the index "
            f"says {new.default_variant}"
        )
    found.extend(_platform_defaults_differ(old, new))
    for companion in new.companions:
        had = old.companion(companion.name)
        if had is not None and had.version > companion.version:  # a newer one is written
            found.append(
                f"{where}: companions.{companion.name}: the catalog has {had.version}, "
                f"the index says {companion.version}"
            )
        elif (
            had is not None
            and had.version == companion.version
            and companion.python is not None
            and not _same_pythons(had.python or old.python, companion.python, old.python)
        ):
            shown = specifier_text(had.python) if had.python is not None else "the release's"
            found.append(
                f"{where}: companions.{companion.name}.python: the catalog has {shown}, "
                f"the index says {specifier_text(companion.python)}"
            )
    for variant in new.variants:
        had_variant = listed_as(old, variant)
        if had_variant is None:
            continue
        label = f"{where} {build_name(variant)}"
        read = (new.version, build_name(variant)) in derived.archs_read
        if (new.version, variant.name) in derived.cuda_read and had_variant.cuda != variant.cuda:
            found.append(f"{label}: cuda: the catalog has {had_variant.cuda}, the index says {variant.cuda}")
        if pins_differ(had_variant.pin_texts, variant.pin_texts):
            found.append(
                f"{label}: pins: the catalog has [{', '.join(had_variant.pin_texts)}], "
                f"the index says [{', '.join(variant.pin_texts)}]"
            )
        found.extend(_installs_differ(label, had_variant, variant))
        if read:
            carriers = (
                "torch's libraries in the wheel"
                if old.framework is Framework.TORCH
                else "the plugin's and PJRT's libraries"
            )
            _compare_read(label, had_variant, variant, found, confirmed, carriers)
    gone = [
        v.name
        for v in old.variants
        if not v.is_cpu and new.variant(v.name) is None and (old.version, v.name) not in derived.offered
    ]
    if gone and (old.framework is not Framework.TORCH or variant_index_read):
        found.append(f"{where}: the catalog lists {', '.join(gone)}, which the index does not have")
    return found, confirmed


def _platform_defaults_differ(old: Release, new: Release) -> list[str]:
    """Where the build the default index serves as the plain wheel of a platform is not the one
    the catalog's ``platform_defaults`` names (or it names none); for TensorFlow, whose plain
    wheel's files for each platform are always read, also an entry for a platform the index has
    no plain wheel for."""
    had, read = dict(old.platform_defaults), dict(new.platform_defaults)
    found = [
        f"{old.framework} {old.version}: platform_defaults.{platform}: the catalog has "
        f"{had.get(platform, 'none')}, the index's plain {platform} wheel is {name}"
        for platform, name in new.platform_defaults
        if had.get(platform) != name
    ]
    if old.framework is Framework.TENSORFLOW:
        found += [
            f"{old.framework} {old.version}: platform_defaults.{platform}: the catalog has {name}, "
            f"the index has no plain {platform} wheel of it"
            for platform, name in old.platform_defaults
            if platform not in read
        ]
    return found


def _installs_differ(label: str, had: Variant, derived: Variant) -> list[str]:
    """Where what installing a build adds (``requires``), the page it comes from
    (``find_links``) or the ROCm it is built for differ between the catalog's build ``had`` and
    the one the index or page states (a build refresh reads none of these from has none)."""
    found = []
    if derived.requires and pins_differ(had.requires, derived.requires):
        found.append(
            f"{label}: requires: the catalog has [{', '.join(had.requires)}], "
            f"the index says [{', '.join(derived.requires)}]"
        )
    if derived.find_links is not None and had.find_links != derived.find_links:
        found.append(
            f"{label}: find_links: the catalog has {had.find_links or 'none'}, the build was read "
            f"from {derived.find_links}"
        )
    if derived.rocm is not None and had.rocm != derived.rocm:
        found.append(f"{label}: rocm: the catalog has {had.rocm}, the files read say {derived.rocm}")
    return found


def _compare_read(
    label: str, had: Variant, read: Variant, found: list[str], confirmed: list[str], carriers: str
) -> None:
    """Where the GPU list read from a build's wheel (gfx for ROCm, else archs) and the catalog's
    build ``had`` disagree (into ``found``), or agree in a way worth a note (``confirmed``);
    ``carriers``: what the gfx list was read from, as the contradiction says it."""
    if read.rocm is not None:
        if set(had.gfx) != set(read.gfx):
            found.append(
                f"{label}: gfx: the catalog has {' '.join(had.gfx)}, {carriers} carry {' '.join(read.gfx)}"
            )
        elif had.unconfirmed is not None:
            confirmed.append(
                f"{label}: the wheels confirm the gfx list marked unconfirmed (unconfirmed can go)"
            )
        return
    shown = " ".join(str(a) for a in sorted(had.archs))
    wheel = " ".join(str(a) for a in sorted(read.archs))
    differ = coverage_difference(had.archs, read.archs)
    if differ:
        found.append(
            f"{label}: archs: the catalog has {shown}, the wheel's libraries all "
            f"carry only {wheel} ({differ})"
        )
    elif set(had.archs) != set(read.archs):
        confirmed.append(
            f"{label}: the catalog's arch list ({shown}) and the wheel's "
            f"({wheel}) differ but cover the same GPUs"
        )
    elif had.unconfirmed is not None:
        confirmed.append(f"{label}: the wheel confirms the arch list marked unconfirmed (unconfirmed can go)")


# ---------------------------------------------------------------------------------------------
# cuda_packages.toml (catalog refresh packages)


def package_build_block(build: PackageBuild, named: Mapping[str, tuple[Arch, ...]]) -> str:
    lines = ["[[package.release.build]]", f"name = {quoted(build.name)}"]
    if build.rocm is not None:
        lines += [f"rocm = {quoted(str(build.rocm))}", f"gfx = {_texts(build.gfx)}"]
    else:
        lines.append(f"cuda = {quoted(str(build.cuda))}")
    lines += _given(
        ("torch", _range(build.torch) if build.torch is not None and str(build.torch) else None),
        ("index_url", _text(build.index_url)),
        ("find_links", _text(build.find_links)),
        ("local_tag", _text(build.local_tag)),
        ("extra", _text(build.extra)),
        ("platforms", _platforms(build.platforms)),
        ("archs", _archs_value(build.archs, named) if build.rocm is None else None),  # ROCm: gfx
        ("requires", _texts(build.requires) if build.requires else None),
        ("python", _range(build.python)),
        ("min_driver", _text(None if build.min_driver is None else format_driver(build.min_driver))),
    )
    lines += _free_threaded(build.free_threaded, build.free_threaded_unconfirmed)
    lines += _unconfirmed(build.unconfirmed)
    lines.append(f"source = {quoted(build.source.text)}")
    return "\n".join(lines) + "\n"


def package_release_block(release: PackageRelease, named: Mapping[str, tuple[Arch, ...]]) -> str:
    lines = [
        "[[package.release]]",
        f"version = {quoted(str(release.version))}",
        f"python = {quoted(specifier_text(release.python))}",
        f"source = {quoted(release.source.text)}",
    ]
    if release.needs:
        needs = ", ".join(f"{name} = {quoted(specifier_text(spec))}" for name, spec in release.needs)
        lines.insert(2, f"packages = {{ {needs} }}")
    text = "\n".join(lines) + "\n"
    for build in release.builds:
        text += "\n" + package_build_block(build, named)
    return text


def packages_merged_text(
    start: str,
    releases: Sequence[PackageRelease],
    named: Mapping[str, tuple[Arch, ...]],
    builds: Sequence[PackageRelease] = (),
) -> str:
    """``start`` with each new release written right under its package's ``name`` line (the
    file lists releases newest first), and the new builds of each release it has (``builds``:
    a release holding only those) written at the end of that release's entry; everything else
    stays as it was."""
    lines = start.splitlines(keepends=True)
    for release in sorted(releases, key=lambda r: r.version):
        at = _entry_line(lines, "[[package]]", "name", release.package)
        if at is not None:
            lines.insert(at + 2, "\n" + package_release_block(release, named))
    for release in builds:
        at = _entry_line(lines, "[[package]]", "name", release.package)
        if at is None:
            continue
        found = _entry_line(lines, "[[package.release]]", "version", str(release.version), at + 1)
        if found is None:
            continue
        end = found + 1
        while end < len(lines) and lines[end].strip() not in ("[[package]]", "[[package.release]]"):
            end += 1
        while end > found and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
            end -= 1  # a comment above the next entry is that entry's
        lines[end:end] = ["\n" + package_build_block(build, named) for build in release.builds]
    return "".join(lines)


def _entry_line(lines: Sequence[str], header: str, key: str, wanted: str, start: int = 0) -> int | None:
    """The line of the first ``header`` at or after ``start`` whose next line is ``key =
    "wanted"`` (a name compared normalized); a ``[[package]]`` past ``start`` ends the search
    for a release."""
    for number in range(start, len(lines) - 1):
        if number > start and header != "[[package]]" and lines[number].strip() == "[[package]]":
            return None
        if lines[number].strip() != header:
            continue
        name, _, value = lines[number + 1].partition("=")
        value = value.strip().strip('"')
        if name.strip() == key and (canonicalize_name(value) if key == "name" else value) == wanted:
            return number
    return None
