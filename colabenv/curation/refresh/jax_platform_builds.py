"""jax's builds beyond x86-64 CUDA as ``catalog refresh jax`` derives them.

linux_aarch64: for each ``cudaNN`` build derived for a release, the ``manylinux_*_aarch64``
wheels of its plugin (``jax-cudaNN-plugin``) at the release's jaxlib version and of the PJRT the
plugin pins, on the default index (the pages the x86-64 build is read from). Where both are
there, the build is listed again for linux_aarch64 (``platforms = ["linux_aarch64"]``, the same
name and extra): its pins from the aarch64 plugin's METADATA (``with-cuda``, markers read as an
aarch64 host reads them), ``requires`` pinning the plugin and the PJRT, its CUDA the x86-64
build's (no wheel states it), its arch list read from the two wheels' GPU code, else carried over
from the previous release's aarch64 build of the same name (unconfirmed), else left out with a
note. Where the plugin has no aarch64 wheel nothing is proposed: a build the file lists for
linux_aarch64 stays as it is (a note says it is still unseen).

ROCm: the ``jax-rocmN-plugin`` and ``jax-rocmN-pjrt`` wheels (the namespaces: the file's ROCm
builds', the page's path's, and those jax's own extras name), the plugin at the release's jaxlib
version, read from AMD's find-links page (``--rocm-find-links``, else the page the file's newest
ROCm build names) where it lists that plugin, else from the default index (the pages jax itself
is read from, as the package index has them from 0.9.2): a build named for the plugin's
namespace (``rocm7``) with ``requires`` (the plugin and the PJRT it pins: no extra of jax
installs them) and, from a page, ``find_links``; its ROCm from the page's path
(``rocm-rel-7.1``), else the plugin's local version (``+rocm7.1.0``), else its METADATA Summary
(``ROCm:7.1.0``, ``ROCm: Legacy ROCm 7.2.0``); a Python range where the plugin's tags leave out a
Python the release has; its gfx list what the HIP offload bundles of the plugin's and the PJRT's
shared objects name (:mod:`colabenv.curation.offload_bundles`), else carried over from the build
before, marked unconfirmed, else left out with a note. A file's ROCm build whose plugin the page
or index it is read from no longer lists at the release's jaxlib version is gone (reported as a
CUDA build is); one whose page was not read is not."""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv.curation.refresh.aarch64_builds import AARCH64, aarch64_archs, aarch64_requirements, build_key
from colabenv.curation.refresh.build_facts import (
    FrameworkRun,
    pinned_version,
    python_tags,
    read_else_carried,
    text_of,
)
from colabenv.curation.refresh.rocm_builds import rocm_of_tag, wheel_gfx
from colabenv.curation.refresh.sources import (
    Metadata,
    RefreshProblem,
    Wheel,
    narrower_python,
    preferred,
    python_range,
    requirements_of,
    stamp,
)
from colabenv.errors import IndexUnavailableError, InputError, printable
from colabenv.models import Framework, Release, Source, Variant
from colabenv.models.frameworks import FACTS
from colabenv.models.frozen import model

_PAGE_ROCM = re.compile(r"rocm-rel-(\d{1,2})\.(\d{1,2})(?:\.\d{1,3})?(?=/|$)")
"""AMD's find-links pages are per ROCm release: ``/rocm/manylinux/rocm-rel-7.1/``."""
_SUMMARY_ROCM = re.compile(
    r"^Summary:(.*\bROCm:\s*(?:Legacy\s+ROCm\s+)?(\d{1,2})\.(\d{1,2})[^\r\n]*)", re.MULTILINE
)
"""ROCm/rocm-jax ``plugin_setup.py``: ``description=f"JAX Plugin for AMD GPUs (ROCm:{...})"``; the
package index's 0.9.2 and 0.10.0 plugins say ``(ROCm: Legacy ROCm 7.2.0)``."""
_NAMESPACE = re.compile(r"rocm\d{1,2}")
_PLUGIN = re.compile(r"jax-(rocm\d{1,2})-plugin")
JAXLIB = FACTS[Framework.JAX].required_companions[0]


@model
class JaxRelease:
    """A jax release whose other builds are looked for: its version, the jaxlib it pins (the
    plugins are released at jaxlib's version) and its Python range."""

    version: Version
    jaxlib: Version
    python: SpecifierSet
    rocm_spaces: tuple[str, ...] = ()
    """The ROCm plugin namespaces jax's own extras name (``rocm7-local``: ``jax-rocm7-plugin``)."""


@model
class RocmPage:
    """The find-links page jax's ROCm plugins are read from, and the plugin namespaces
    (``rocm7``: ``jax-rocm7-plugin``) looked for there."""

    url: str
    namespaces: tuple[str, ...]


def platform_variants(
    run: FrameworkRun,
    release: JaxRelease,
    built: Sequence[Variant],
    page: RocmPage | None,
    offered: set[tuple[Version, str]],
) -> list[Variant]:
    """The linux_aarch64 builds of the x86-64 CUDA builds ``built``, then the ROCm builds
    ``page`` (where not None) or else the default index has; each ROCm build whose plugin is
    there, derived or left out, is added to ``offered`` (a file's build missing there is gone)."""
    found = _aarch64_variants(run, release, built)
    found.extend(_rocm_variants(run, release, page, offered))
    return found


def rocm_spaces_named(metadata: Metadata) -> tuple[str, ...]:
    """The ROCm plugin namespaces any extra of jax's METADATA names (``jax-rocm7-plugin``)."""
    named = set()
    for extra in metadata.extras:
        for requirement in requirements_of(metadata, extra):
            match = _PLUGIN.fullmatch(canonicalize_name(requirement.name))
            if match is not None:
                named.add(match.group(1))
    return tuple(sorted(named))


# ---------------------------------------------------------------------------------------------
# linux_aarch64


def _aarch64_wheels(run: FrameworkRun, project: str, version: Version) -> list[Wheel]:
    """``project``'s ``manylinux_*_aarch64`` wheels of ``version`` on the default index."""
    return [
        w
        for w in run.reader.wheels(run.reader.options.index, project, platform=AARCH64)
        if w.version == version and any(t.platform.endswith("_aarch64") for t in w.tags)
    ]


def _pinned(metadata: Metadata, project: str) -> Version | None:
    """The one version of ``project`` the wheel's own requirements pin (``==X``)."""
    for requirement in requirements_of(metadata):
        if canonicalize_name(requirement.name) == project:
            return pinned_version(requirement.specifier)
    return None


def _aarch64_variants(run: FrameworkRun, release: JaxRelease, built: Sequence[Variant]) -> list[Variant]:
    found = []
    for x86 in built:
        if x86.cuda is None or x86.extra is None:
            continue
        plugin_name = f"jax-{x86.extra}-plugin"
        plugins = _aarch64_wheels(run, plugin_name, release.jaxlib)
        key = build_key(x86.name)
        if not plugins:
            if _listed_for_aarch64(run, release.version, x86.name):
                run.notes.append(
                    f"jax {release.version} {key}: no {AARCH64} wheel of {plugin_name} {release.jaxlib} on "
                    f"{run.reader.options.index_label}: the file's entry stays as it is"
                )
            continue
        plugin = preferred(plugins)
        metadata = run.reader.metadata(plugin)
        pjrt_name = f"jax-{x86.extra}-pjrt"
        pjrt_version = _pinned(metadata, pjrt_name) or release.jaxlib
        pjrts = _aarch64_wheels(run, pjrt_name, pjrt_version)
        if not pjrts:
            run.notes.append(
                f"jax {release.version} {key} left out: {plugin.file.filename} pins {pjrt_name}=="
                f"{pjrt_version}, which has no {AARCH64} wheel on {run.reader.options.index_label}"
            )
            continue
        pjrt = preferred(pjrts)
        archs = aarch64_archs(run, "jax", release.version, x86.name, (plugin, pjrt))
        if archs is None:
            continue
        listed, unconfirmed, archs_source = archs
        found.append(
            Variant(
                name=x86.name,
                cuda=x86.cuda,
                index_url=None,
                local_tag=None,
                extra=x86.extra,
                archs=listed,
                pin_texts=tuple(aarch64_requirements(metadata, "with-cuda")),
                python=None,
                source=Source(
                    f"{run.reader.options.index_label}: {plugin.file.filename} ({python_tags(plugins)}) "
                    f"and {pjrt.file.filename}; pins: the plugin's METADATA Requires-Dist extra "
                    f"with-cuda (markers read for {AARCH64}); requires: the plugin at the release's "
                    f"{JAXLIB} version and the PJRT it pins; cuda: the x86-64 build's ({x86.cuda}; no "
                    f"wheel states it); {archs_source}; {stamp()}"
                ),
                unconfirmed=unconfirmed,
                platforms=(AARCH64,),
                requires=(f"{plugin_name}=={plugin.version}", f"{pjrt_name}=={pjrt.version}"),
            )
        )
    return found


def _listed_for_aarch64(run: FrameworkRun, version: Version, name: str) -> bool:
    """Whether the file lists build ``name`` of ``version`` for linux_aarch64."""
    return any(
        v.name == name and AARCH64 in v.platforms
        for r in run.history.releases
        if r.version == version
        for v in r.variants
    )


# ---------------------------------------------------------------------------------------------
# ROCm


def rocm_page(run: FrameworkRun, known: Sequence[Release]) -> RocmPage | None:
    """The page jax's ROCm plugins are read from: ``--rocm-find-links``, else the one the file's
    newest ROCm build names; None where there is none, with ``--no-find-links``, or (noted)
    where it names no ROCm namespace or cannot be read."""
    options = run.reader.options
    named = [
        v.find_links
        for r in sorted(known, key=lambda r: r.version, reverse=True)
        for v in r.variants
        if v.rocm is not None and v.find_links
    ]
    url = options.rocm_find_links or (named[0] if named else None)
    if url is None or not options.find_links:
        return None
    spaces = {
        v.name for r in known for v in r.variants if v.rocm is not None and _NAMESPACE.fullmatch(v.name)
    }
    path = _PAGE_ROCM.search(urlsplit(url).path)
    if path is not None:
        spaces.add(f"rocm{path.group(1)}")
    if not spaces:
        run.notes.append(
            f"jax: the ROCm find-links page {printable(url)} was not read: its path names no ROCm "
            "release (rocm-rel-X.Y) and the file no ROCm build"
        )
        return None
    try:
        for space in sorted(spaces):
            run.reader.page_wheels(url, f"jax-{space}-plugin")
    except IndexUnavailableError as problem:
        run.notes.append(
            f"jax: the ROCm find-links page {printable(url)} was not read ({printable(problem)})"
        )
        return None
    return RocmPage(url, tuple(sorted(spaces)))


def rocm_builds_not_read(known: Sequence[Release], page: RocmPage | None) -> set[tuple[Version, str]]:
    """The file's ROCm builds whose files were not read: from a find-links page other than the
    one read (or with none read), or, from the default index, named for no plugin namespace.
    None of them is gone; the others are where the index or page read no longer lists them."""

    def read(build: Variant) -> bool:
        if build.find_links is None:
            return _NAMESPACE.fullmatch(build.name) is not None
        return page is not None and build.find_links == page.url

    return {(r.version, v.name) for r in known for v in r.variants if v.rocm is not None and not read(v)}


@model
class RocmOrigin:
    """Where a ROCm build's plugin and PJRT are read: a find-links page (``page``, named in the
    build's ``find_links``), or the default index (``page`` None)."""

    page: str | None
    label: str


def _origin_wheels(run: FrameworkRun, origin: RocmOrigin, project: str) -> list[Wheel]:
    if origin.page is not None:
        return run.reader.page_wheels(origin.page, project)
    return run.reader.wheels(run.reader.options.index, project)


def _rocm_spaces(run: FrameworkRun, release: JaxRelease, page: RocmPage | None) -> list[str]:
    """The namespaces looked for: the page's, the file's ROCm builds', those jax's extras name."""
    spaces = set(page.namespaces if page is not None else ()) | set(release.rocm_spaces)
    spaces.update(
        v.name
        for r in run.history.releases
        for v in r.variants
        if v.rocm is not None and _NAMESPACE.fullmatch(v.name)
    )
    return sorted(spaces)


def _release_plugins(run: FrameworkRun, origin: RocmOrigin, space: str, jaxlib: Version) -> list[Wheel]:
    """``origin``'s plugin wheels of ``space`` at ``jaxlib``'s version, of the newest local
    version there (one build per origin: its newest ROCm)."""
    plugins = [
        w for w in _origin_wheels(run, origin, f"jax-{space}-plugin") if Version(w.version.public) == jaxlib
    ]
    if not plugins:
        return []
    newest = max(w.version for w in plugins)
    return [w for w in plugins if w.version == newest]


def _rocm_variants(
    run: FrameworkRun, release: JaxRelease, page: RocmPage | None, offered: set[tuple[Version, str]]
) -> list[Variant]:
    found = []
    index = RocmOrigin(None, run.reader.options.index_label)
    for space in _rocm_spaces(run, release, page):
        plugins: list[Wheel] = []
        if page is not None and space in page.namespaces:
            origin = RocmOrigin(page.url, f"find-links page {page.url}")
            plugins = _release_plugins(run, origin, space, release.jaxlib)
        if not plugins:
            origin = index
            plugins = _release_plugins(run, origin, space, release.jaxlib)
        if not plugins:
            continue
        offered.add((release.version, space))
        variant = _rocm_variant(run, release, origin, space, plugins)
        if variant is not None:
            found.append(variant)
    return found


def _rocm_variant(
    run: FrameworkRun, release: JaxRelease, origin: RocmOrigin, space: str, plugins: list[Wheel]
) -> Variant | None:
    where = f"jax {release.version} {space}"
    plugin = preferred(plugins)
    metadata = run.reader.metadata(plugin)
    pjrt_name = f"jax-{space}-pjrt"
    pjrt_version = _pinned(metadata, pjrt_name) or plugin.version
    pjrts = [w for w in _origin_wheels(run, origin, pjrt_name) if w.version == pjrt_version]
    if not pjrts:
        run.notes.append(
            f"{where} left out: {plugin.file.filename} pins {pjrt_name}=={pjrt_version}, which "
            f"the {printable(origin.label)} does not list"
        )
        return None
    pjrt = preferred(pjrts)
    rocm = _rocm_version(run, origin.page, plugin)
    if rocm is None:
        said = "the page's path, " if origin.page is not None else ""
        run.notes.append(
            f"{where} left out: no ROCm version ({said}{plugin.file.filename}'s version and its METADATA "
            "Summary name none)"
        )
        return None
    gfx = _gfx(run, release.version, space, (plugin, pjrt))
    if gfx is None:
        return None
    listed, unconfirmed, gfx_source = gfx
    try:
        python: SpecifierSet | None = python_range(plugins, metadata.requires_python)
    except RefreshProblem:
        python = None
    if python is not None and not narrower_python(python, release.python):
        python = None
    installs = "no extra of jax installs them" if origin.page is not None else "not jax's own extras"
    return Variant(
        name=space,
        cuda=None,
        index_url=None,
        local_tag=None,
        extra=None,
        archs=(),
        pin_texts=(),
        python=python,
        source=Source(
            f"{origin.label}: {plugin.file.filename} ({python_tags(plugins)}, Requires-Python "
            f"{metadata.requires_python or 'not stated'}) and {pjrt.file.filename}; requires: the plugin "
            f"at the release's {JAXLIB} version {release.jaxlib} and the PJRT its METADATA pins "
            f"({installs}); {rocm[1]}; {gfx_source}; {stamp()}"
        ),
        unconfirmed=unconfirmed,
        rocm=rocm[0],
        gfx=listed,
        requires=(f"jax-{space}-plugin=={plugin.version}", f"{pjrt_name}=={pjrt.version}"),
        find_links=origin.page,
    )


def _rocm_version(run: FrameworkRun, page: str | None, plugin: Wheel) -> tuple[Version, str] | None:
    """The ROCm the plugin is built for, and where that is said: the page's path (a page's),
    else the plugin's local version, else its METADATA Summary; None where none says."""
    path = _PAGE_ROCM.search(urlsplit(page).path) if page is not None else None
    if path is not None:
        return Version(f"{path.group(1)}.{path.group(2)}"), f"rocm: the page's path ({path.group(0)})"
    tagged = rocm_of_tag(plugin.version.local or "")
    if tagged is not None:
        return Version(f"{tagged.major}.{tagged.minor}"), f"rocm: the plugin's version {plugin.version}"
    name, version = plugin.file.filename.split("-")[:2]
    summary = _SUMMARY_ROCM.search(text_of(run.reader.member(plugin, f"{name}-{version}.dist-info/METADATA")))
    if summary is not None:
        said = printable(summary.group(1).strip())
        return (
            Version(f"{summary.group(2)}.{summary.group(3)}"),
            f"rocm: {plugin.file.filename} METADATA Summary '{said}'",
        )
    return None


def _gfx(
    run: FrameworkRun, version: Version, space: str, wheels: tuple[Wheel, ...]
) -> tuple[tuple[str, ...], str | None, str] | None:
    """(the gfx list, the unconfirmed reason or None, where it comes from) of build ``space``;
    None, noted, where it was neither read nor can be carried over."""

    def carried(why: str) -> tuple[tuple[str, ...], str] | None:
        previous = run.history.variant_before(version, space)
        if previous is None or not previous[1].gfx:
            return None
        return previous[1].gfx, f"gfx carried over from {previous[0].version} {space}: {why}"

    def left_out(why: str) -> str:
        return (
            f"jax {version} {space} left out: no gfx list ({why}; no earlier {space} build to carry it from)"
        )

    return read_else_carried(run, (version, space), lambda: _read_gfx(run, wheels), carried, left_out)


def _read_gfx(run: FrameworkRun, wheels: tuple[Wheel, ...]) -> tuple[tuple[str, ...], str]:
    """The gfx every library with offload bundles in ``wheels`` carries, and where it was read
    (empty, and why: nothing could be read)."""
    from colabenv.curation.offload_bundles import gfx_key

    common: set[str] | None = None
    libraries: list[str] = []
    unread = 0
    for wheel in wheels:
        try:
            found = wheel_gfx(run.reader, wheel)
        except InputError as problem:
            raise IndexUnavailableError(str(problem)) from None
        unread += found.unread
        if found.libraries:
            common = set(found.common) if common is None else common & set(found.common)
            libraries.extend(library.path.rsplit("/", 1)[-1] for library in found.libraries)
    names = " and ".join(w.file.filename for w in wheels)
    if common:
        return tuple(sorted(common, key=gfx_key)), (
            f"gfx: the targets every HIP offload bundle names in {', '.join(libraries)} of {names}"
        )
    if unread:
        return (), f"{unread} compressed HIP offload bundle(s) in the wheels cannot be unpacked here"
    if common is not None:
        return (), f"the HIP offload bundles of {names} name no gfx in common"
    return (), "no HIP offload bundle found in the plugin's and PJRT's libraries"
