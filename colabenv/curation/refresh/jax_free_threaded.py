"""The free-threaded Pythons of jax's builds, as ``catalog refresh jax`` reads them from the file
lists alone (no wheel is opened): the ``cp313t``/``cp314t`` files (``cp313-cp313t``, an ABI tag
``cp3XYt``) of what a build installs that has Python tags: jaxlib at the release's version and,
for a GPU build, its plugin (the PJRTs are ``py3-none``). A build's ``free_threaded`` is the
Pythons all of them have such files for on its platform:

- the CPU build: jaxlib's, on each Linux platform jaxlib has wheels of that version for (the
  CPU build serves linux_aarch64 too);
- an x86-64 CUDA build: jaxlib's and those of the newest plugin its ``cudaNN`` extra admits;
- a linux_aarch64 CUDA build: the ``manylinux_*_aarch64`` files of jaxlib and of the plugin it
  requires;
- a ROCm build: jaxlib's and those of the plugin it requires, where it was read (its find-links
  page, else the default index).

Every build of a release derived is read, and held to the file's as torch's are
(:func:`colabenv.curation.refresh.free_threaded.compare_framework_free_threaded`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv.curation.refresh.aarch64_builds import AARCH64
from colabenv.curation.refresh.build_facts import FrameworkRun
from colabenv.curation.refresh.free_threaded import free_threaded_minors
from colabenv.curation.refresh.jax_platform_builds import JAXLIB, JaxRelease
from colabenv.curation.refresh.sources import IndexReader, Metadata, Wheel, by_version, requirements_of
from colabenv.curation.refresh.writer import build_name
from colabenv.models import CATALOG_PLATFORM, Release, Source, Variant


def newest_admitted(reader: IndexReader, project: str, specifier: SpecifierSet) -> list[Wheel]:
    """The default index's x86-64 wheels of the newest release of ``project`` (a plugin) that
    ``specifier`` admits (the plugin may lag jax by a patch release); empty where none."""
    wheels = by_version(reader.wheels(reader.options.index, project))
    admitted = [v for v in wheels if specifier.contains(v, prereleases=True)]
    return wheels[max(admitted)] if admitted else []


def with_jax_free_threaded(
    run: FrameworkRun, release: JaxRelease, metadata: Metadata, builds: Iterable[Variant]
) -> tuple[Variant, ...]:
    """``builds`` of jax ``release`` (whose METADATA is ``metadata``), each with
    ``free_threaded`` the Pythons its files serve (none where they serve none), its source saying
    which files."""
    found = []
    for build in builds:
        installed = _installed(run.reader, release, metadata, build)
        ranged = _common_range([wheels for _label, wheels in installed])
        if ranged is not None:
            said = " and ".join(label for label, _wheels in installed)
            build = dataclasses.replace(
                build, source=Source(f"{build.source.text}; free-threaded wheels: the cp3XYt files of {said}")
            )
        found.append(dataclasses.replace(build, free_threaded=ranged, free_threaded_unconfirmed=None))
    return tuple(found)


def jax_free_threaded_read(releases: Iterable[Release]) -> frozenset[tuple[Version, str]]:
    """Every build of ``releases`` (version, the name as the summary gives it): their cpXYt
    files were all read."""
    return frozenset((r.version, build_name(v)) for r in releases for v in r.variants)


def _common_range(installed: Sequence[Sequence[Wheel]]) -> SpecifierSet | None:
    """The range of the free-threaded Pythons every one of ``installed`` has cpXYt files for
    (``>=3.13,<3.15``); None where they share none."""
    common: set[int] | None = None
    for wheels in installed:
        minors = set(free_threaded_minors(wheels))
        common = minors if common is None else common & minors
    if not common:
        return None
    return SpecifierSet(f">=3.{min(common)},<3.{max(common) + 1}")


def _installed(
    reader: IndexReader, release: JaxRelease, metadata: Metadata, build: Variant
) -> list[tuple[str, list[Wheel]]]:
    """The distributions with Python tags ``build`` installs (jaxlib, its plugin), each named
    (``jaxlib 0.7.1 (linux_x86_64)``) with its wheels of the version installed on the build's
    platform (the CPU build's: jaxlib's on each platform it has wheels of that version for)."""
    platforms = [AARCH64 if AARCH64 in build.platforms else CATALOG_PLATFORM]
    if build.is_cpu:
        platforms = [p for p in (CATALOG_PLATFORM, AARCH64) if _jaxlib(reader, release, p)] or platforms
    found = [(f"{JAXLIB} {release.jaxlib} ({p})", _jaxlib(reader, release, p)) for p in platforms]
    if not build.is_cpu:
        found.extend(_plugin(reader, metadata, build, platforms[0]))
    return found


def _jaxlib(reader: IndexReader, release: JaxRelease, platform: str) -> list[Wheel]:
    return _of_version(reader.wheels(reader.options.index, JAXLIB, platform=platform), release.jaxlib)


def _plugin(
    reader: IndexReader, metadata: Metadata, build: Variant, platform: str
) -> list[tuple[str, list[Wheel]]]:
    """The plugin ``build`` installs, named, with its wheels: the one it ``requires`` (an aarch64
    or ROCm build; read where the build was), else the newest its extra admits; none without."""
    for required in build.requires:
        name, _, pinned = required.partition("==")
        if canonicalize_name(name).endswith("-plugin"):
            version = Version(pinned)
            if build.find_links is not None:
                wheels = reader.page_wheels(build.find_links, name, platform=platform)
            else:
                wheels = reader.wheels(reader.options.index, name, platform=platform)
            return [(f"{name} {version} ({platform})", _of_version(wheels, version))]
    for requirement in requirements_of(metadata, build.extra) if build.extra else []:
        name = canonicalize_name(requirement.name)
        if name.startswith("jax-cuda") and name.endswith("-plugin"):
            wheels = newest_admitted(reader, name, requirement.specifier)
            shown = f"{name} {wheels[0].version}" if wheels else name
            return [(f"{shown} ({platform})", wheels)]
    return []


def _of_version(wheels: Iterable[Wheel], version: Version) -> list[Wheel]:
    """The wheels of ``version`` that are built for a platform (not pure Python)."""
    return [w for w in wheels if w.version == version and all(t.platform != "any" for t in w.tags)]
