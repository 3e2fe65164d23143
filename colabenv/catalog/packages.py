"""``cuda_packages.toml``: the CUDA packages around the frameworks (xformers, CuPy, cuDF ...),
read into :class:`~colabenv.models.CudaPackage` values and merged over by overlays.

The format is in docs/formats.md ("Catalog") and docs/cuda-packages.md. A package colabenv
knows by name (:data:`colabenv.models.frameworks.CUDA_PACKAGES`) takes its distribution names
from there; a package only an overlay knows gives its own ``distribution``.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol, TypedDict

from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from colabenv._util import toml
from colabenv._util.cache import parsed_toml
from colabenv._util.pep508 import is_nvidia_wheel, is_pin_text
from colabenv._util.reader import Reader
from colabenv._util.resources import catalog_dir
from colabenv.errors import CatalogError, CatalogOverlayError, printable
from colabenv.models import (
    CATALOG_PLATFORM,
    GFX_PATTERN,
    PLATFORMS,
    Arch,
    Catalog,
    CudaPackage,
    PackageBuild,
    PackageRelease,
    Profile,
    Source,
    Target,
    format_driver,
    parse_driver,
)
from colabenv.models.frameworks import CUDA_PACKAGES, package_of
from colabenv.profile.rules import CATALOG_URL_SCHEMES, url

PACKAGES_FILE = "cuda_packages.toml"
_BRANCH_RE = re.compile(r"[1-9][0-9]{2}", re.ASCII)
"""A driver branch alone (``535``), as a project's "535+" floor."""
_LOCAL_TAG = re.compile(r"[a-z0-9]+(\.[a-z0-9]+)*", re.IGNORECASE)
_EXTRA = re.compile(r"[a-z0-9]([a-z0-9._-]{0,62}[a-z0-9])?")
MAX_CUDA_MAJOR = 99
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-._")


def cuda_packages(doc: Reader, overlay: str | None = None) -> tuple[CudaPackage, ...]:
    """The packages of one ``cuda_packages.toml`` (``overlay``: its path; None: shipped)."""
    doc.allow("schema", "archs", "package")
    named = file_archs(doc)
    packages = []
    for item in doc.tables("package"):
        item.allow("name", "distribution", "release")
        packages.append(_package(item, named, overlay))
    names = [p.name for p in packages]
    if len(set(names)) != len(names):
        raise doc.fail("package", "a package is listed twice")
    return tuple(packages)


def file_archs(doc: Reader) -> dict[str, tuple[Arch, ...]]:
    """The named arch lists of a catalog file (its ``[archs]`` table): a framework file's or
    ``cuda_packages.toml``."""
    table = doc.sub("archs")
    return {name: arch_list(table, name, table.text_list(name)) for name in table.data}


def arch_list(reader: Reader, name: str, items: list[str]) -> tuple[Arch, ...]:
    """``items`` (the value of ``name`` in ``reader``) as archs; a text that is none fails there."""
    found = []
    for text in items:
        try:
            found.append(Arch.parse(text))
        except ValueError as exc:
            raise reader.fail(name, str(exc)) from None
    return tuple(found)


def entry_archs(item: Reader, named: Mapping[str, tuple[Arch, ...]]) -> tuple[Arch, ...]:
    """An entry's ``archs``: the name of one of the file's ``named`` lists, or a list of its own."""
    raw = item.data.get("archs", [])
    if isinstance(raw, str):
        if raw not in named:
            raise item.fail("archs", f"no arch list named {raw!r} in [archs]")
        return named[raw]
    return arch_list(item, "archs", item.text_list("archs"))


def _package(item: Reader, named: Mapping[str, tuple[Arch, ...]], overlay: str | None) -> CudaPackage:
    raw = item.text("name")
    name = canonicalize_name(raw)
    if not set(raw.lower()) <= _NAME_CHARS:
        raise item.fail("name", f"{raw!r} is not a package name")
    known = CUDA_PACKAGES.get(name)
    given = item.opt_text("distribution")
    if known is not None and given is not None:
        raise item.fail("distribution", f"{name}'s distributions are named in colabenv.models.frameworks")
    if known is None and given is None:
        raise item.fail("distribution", f"colabenv does not know {name}: give its distribution name")
    pattern = known.distribution if known is not None else str(given)
    if not set(pattern.replace("{major}", "").lower()) <= _NAME_CHARS:
        raise item.fail("distribution", f"{pattern!r} is not a distribution name (or one with {{major}})")
    names = _Names(name, pattern, known.rocm_distribution if known is not None else None)
    releases = [_release(names, r, named, overlay) for r in item.tables("release")]
    if not releases:
        raise item.fail("release", "a package needs at least one release")
    versions = [r.version for r in releases]
    if len(set(versions)) != len(versions):
        raise item.fail("release", "a release version is listed twice")
    return CudaPackage(name, tuple(sorted(releases, key=lambda r: r.version, reverse=True)))


class _Names(NamedTuple):
    """A package's name and its distributions' patterns: per CUDA major, and per ROCm line
    (None: colabenv names no ROCm distribution for it)."""

    name: str
    cuda: str
    rocm: str | None


def _release(
    names: _Names, item: Reader, named: Mapping[str, tuple[Arch, ...]], overlay: str | None
) -> PackageRelease:
    item.allow("version", "python", "torch", "packages", "build", "source")
    python = item.specifier("python")
    torch = item.opt_specifier("torch")
    builds = []
    for build in item.tables("build"):
        builds.append(_build(names, build, named, torch, overlay))
    if not builds:
        raise item.fail("build", "a release needs at least one build")
    check_names_per_platform(item, "build", builds)
    needs = item.sub("packages")
    pairs = tuple(sorted((canonicalize_name(other), needs.specifier(other)) for other in needs.data))
    return PackageRelease(
        canonicalize_name(names.name),
        item.version("version"),
        python,
        tuple(builds),
        Source(item.text("source")),
        overlay,
        pairs,
    )


def _build(
    names: _Names,
    item: Reader,
    named: Mapping[str, tuple[Arch, ...]],
    torch: SpecifierSet | None,
    overlay: str | None,
) -> PackageBuild:
    item.allow(
        "name",
        "cuda",
        "torch",
        "index_url",
        "find_links",
        "local_tag",
        "extra",
        "archs",
        "requires",
        "python",
        "source",
        "unconfirmed",
        "unconfirmed_reason",
        "min_driver",
        "free_threaded",
        "free_threaded_unconfirmed",
        "platforms",
        "rocm",
        "gfx",
    )
    rocm, gfx = rocm_gfx(item, "build")
    if rocm is not None:
        distribution = _rocm_distribution(item, names, rocm)
        cuda = None
    else:
        cuda = _cuda(item)
        distribution = canonicalize_name(names.cuda.format(major=cuda.major))
    archs = entry_archs(item, named)
    if rocm is None and not archs:
        raise item.fail("archs", "a build needs its arch list (the GPUs its kernels cover)")
    requires = item.text_list("requires")
    for text in requires:
        if not is_pin_text(text) or not is_nvidia_wheel(text):
            raise item.fail(
                "requires",
                f"{text!r} is not an NVIDIA wheel requirement like nvidia-nccl-cu12>=2.26 or "
                "cuda-toolkit[nvrtc]==12.*",
            )
    index_url, find_links = item.opt_text("index_url"), item.opt_text("find_links")
    if index_url is not None and find_links is not None:
        raise item.fail("find_links", "a build lives on an index or a find-links page, not both")
    for key in ("index_url", "find_links"):
        catalog_url(item, key)
    build_torch = item.specifier("torch") if "torch" in item.data else torch
    return PackageBuild(
        name=item.text("name"),
        distribution=distribution,
        cuda=cuda,
        torch=build_torch,
        index_url=index_url,
        find_links=find_links,
        archs=archs,
        requires=tuple(requires),
        source=Source(item.text("source")),
        min_driver=_min_driver(item),
        **shared_keys(item, overlay),
        rocm=rocm,
        gfx=gfx,
    )


def _rocm_distribution(item: Reader, names: _Names, rocm: Version) -> NormalizedName:
    """The distribution of a ROCm build (``cupy-rocm-7-0``); a ROCm build beside ``cuda``,
    ``archs``, NVIDIA wheels or a driver floor is refused, as one of a package colabenv names
    no ROCm distribution for (a package only an overlay knows among them)."""
    for key, what in (
        ("cuda", "cuda"),
        ("archs", "archs"),
        ("requires", "NVIDIA wheels"),
        ("min_driver", "driver"),
    ):
        if key in item.data:
            raise item.fail(key, f"a ROCm build has no {what} (its GPUs are in gfx)")
    if names.rocm is None:
        raise item.fail("rocm", f"colabenv names no ROCm distribution for {names.name}")
    return canonicalize_name(names.rocm.format(major=rocm.major, minor=rocm.minor))


class SharedKeys(TypedDict):
    """What a framework's variant and a package's build both hold, read the same way."""

    local_tag: str | None
    extra: str | None
    python: SpecifierSet | None
    unconfirmed: str | None
    overlay: str | None
    free_threaded: SpecifierSet | None
    free_threaded_unconfirmed: str | None
    platforms: tuple[str, ...]


def shared_keys(item: Reader, overlay: str | None) -> SharedKeys:
    """The keys of :class:`SharedKeys` in a variant's or a build's table (``overlay``: the
    overlay it comes from, None for the shipped catalog)."""
    return SharedKeys(
        local_tag=local_tag(item),
        extra=extra_name(item),
        python=item.opt_specifier("python"),
        unconfirmed=unconfirmed_reason(item),
        overlay=overlay,
        free_threaded=item.opt_specifier("free_threaded"),
        free_threaded_unconfirmed=free_threaded_unconfirmed(item),
        platforms=build_platforms(item),
    )


MAX_CATALOG_GFX = 64
"""The most AMD GPU architectures one ROCm build lists."""


def rocm_gfx(item: Reader, what: str) -> tuple[Version | None, tuple[str, ...]]:
    """``rocm = "6.4"`` and ``gfx = ["gfx90a", "gfx942"]`` of a ROCm build (``what``: a
    framework's ``variant`` or a package's ``build``): each gfx an AMD GPU architecture, in
    order, each once; a ROCm build names at least one."""
    rocm = item.opt_version("rocm")
    if "gfx" not in item.data:
        if rocm is not None:
            raise item.fail("gfx", f"a ROCm {what} needs its gfx list")
        return None, ()
    if rocm is None:
        raise item.fail("gfx", f"only a ROCm {what} (rocm = X.Y) has a gfx list")
    names = item.text_list("gfx")
    bad = [name for name in names if not re.fullmatch(GFX_PATTERN, name)]
    if bad or not names or len(names) > MAX_CATALOG_GFX:
        shown = f"{printable(bad[0])[:20]!r} is not" if bad else "expected"
        raise item.fail(
            "gfx", f"{shown} a list of AMD GPU architectures like gfx942 (1 to {MAX_CATALOG_GFX})"
        )
    return rocm, tuple(dict.fromkeys(names))


def build_platforms(item: Reader) -> tuple[str, ...]:
    """``platforms = ["linux_aarch64"]`` of a framework's variant or a package's build: the
    platforms it has wheels for (the catalog's own, ``linux_x86_64``, when not given)."""
    if "platforms" not in item.data:
        return (CATALOG_PLATFORM,)
    names = item.text_list("platforms")
    bad = [name for name in names if name not in PLATFORMS]
    if bad or not names:
        what = f"{printable(bad[0])[:30]!r} is not" if bad else "expected"
        raise item.fail("platforms", f"{what} a list of platforms ({', '.join(PLATFORMS)})")
    return tuple(dict.fromkeys(names))


class _Built(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def platforms(self) -> tuple[str, ...]: ...


def check_names_per_platform(item: Reader, key: str, built: Sequence[_Built]) -> None:
    """Refuses ``key`` (a release's ``variant`` or ``build`` list) where one name stands twice
    for one platform: the name is how a profile and a lock pick one."""
    if any(
        set(a.platforms) & set(b.platforms)
        for i, a in enumerate(built)
        for b in built[i + 1 :]
        if a.name == b.name
    ):
        raise item.fail(key, f"a {key} name is listed twice for one platform")


def _min_driver(item: Reader) -> Version | None:
    """``min_driver = "595.45.04"``: a driver version as NVIDIA writes them, or a branch
    (``"535"``: any driver of it, as a project writing "535+" means), held to be above its CUDA
    major's floor by :func:`check_drivers`."""
    text = item.opt_text("min_driver")
    if text is None:
        return None
    driver = parse_driver(text) or (Version(text) if _BRANCH_RE.fullmatch(text) else None)
    if driver is None:
        raise item.fail(
            "min_driver",
            f"{printable(text)[:40]!r} is not a driver version like 580.65.06 or a branch like 535",
        )
    return driver


def unconfirmed_reason(item: Reader) -> str | None:
    """``unconfirmed = true`` with ``unconfirmed_reason``: a build with a fact upstream could
    not confirm (an arch list carried over from the previous release, say)."""
    marked = item.flag("unconfirmed", False)
    reason = item.opt_text("unconfirmed_reason")
    if marked and reason is None:
        raise item.fail("unconfirmed_reason", "an unconfirmed entry needs the reason")
    if reason is not None and not marked:
        raise item.fail("unconfirmed_reason", "only with unconfirmed = true")
    return reason


def free_threaded_unconfirmed(item: Reader) -> str | None:
    """``free_threaded_unconfirmed = "..."`` of a framework's variant or a package's build: why
    the Pythons in its ``free_threaded`` are known from what upstream tested (a validation
    matrix) rather than from the files."""
    reason = item.opt_text("free_threaded_unconfirmed")
    if reason is not None and "free_threaded" not in item.data:
        raise item.fail("free_threaded_unconfirmed", "only with free_threaded")
    if reason is not None and not reason.strip():
        raise item.fail("free_threaded_unconfirmed", "expected the reason")
    return reason


def pin_texts(item: Reader, key: str, like: str) -> list[str]:
    """``key``: a list of requirements, each pinned the way a catalog pins one (``like`` is an
    example of one, for the message)."""
    texts = item.text_list(key)
    for text in texts:
        if not is_pin_text(text):
            raise item.fail(key, f"{text!r} is not a requirement like {like}")
    return texts


def catalog_url(item: Reader, key: str) -> str | None:
    """``key``: an index URL or a find-links page of a catalog entry (https only), when given."""
    given = item.opt_text(key)
    if given is not None:
        url(given, item.at(key), CATALOG_URL_SCHEMES)
    return given


def local_tag(item: Reader) -> str | None:
    """``local_tag``: a PEP 440 local version label as the indexes write it (``cu128``,
    ``pt28cu126``), the part after ``+`` of each wheel's version."""
    tag = item.opt_text("local_tag")
    if tag is not None and (len(tag) > 64 or not _LOCAL_TAG.fullmatch(tag)):
        raise item.fail("local_tag", f"{printable(tag)!r} is not a local version label like cu128")
    return tag


def extra_name(item: Reader) -> str | None:
    """``extra``: the extra a build is installed with (``and-cuda``, ``cu13``), a normalized
    extra name (PEP 685)."""
    extra = item.opt_text("extra")
    if extra is not None and not _EXTRA.fullmatch(extra):
        raise item.fail("extra", f"{printable(extra)!r} is not an extra name like cu13 (lowercase, PEP 685)")
    return extra


def _cuda(item: Reader) -> Version:
    """``cuda = "12.8"`` (the toolkit it was built with) or ``"12"`` (one wheel for the line)."""
    cuda = item.version("cuda")
    if cuda.local or cuda.pre or cuda.epoch or not 0 < cuda.major <= MAX_CUDA_MAJOR or len(cuda.release) > 3:
        raise item.fail("cuda", f"{cuda} is not a CUDA version like 12.8 or a major like 13")
    return cuda


def merged(layers: Iterable[tuple[CudaPackage, ...]]) -> tuple[CudaPackage, ...]:
    """Each layer over the ones before (shipped first, then each overlay): a package the
    earlier ones lack is added; for the same package and release, the builds of both, the
    later one's winning by name and platforms, and the later release facts."""
    found: dict[str, dict[Version, PackageRelease]] = {}
    for layer in layers:
        for package in layer:
            releases = found.setdefault(package.name, {})
            for release in package.releases:
                old = releases.get(release.version)
                if old is not None:
                    builds = {(b.name, b.platforms): b for b in old.builds}
                    builds.update(((b.name, b.platforms), b) for b in release.builds)
                    release = PackageRelease(
                        release.package,
                        release.version,
                        release.python,
                        tuple(builds.values()),
                        release.source,
                        release.overlay,
                        release.needs,
                    )
                releases[release.version] = release
    return tuple(
        CudaPackage(
            canonicalize_name(name), tuple(sorted(rs.values(), key=lambda r: r.version, reverse=True))
        )
        for name, rs in found.items()
    )


def check_drivers(catalog: Catalog, shipped: Path) -> None:
    """Every build's CUDA major has a driver floor in the driver table (else colabenv could not
    hold it to the driver): the shipped file's problem is :class:`CatalogError`, an overlay's
    :class:`CatalogOverlayError` (exit 2)."""
    for package in catalog.packages:
        for release in package.releases:
            for build in release.builds:
                if build.cuda is None:  # a ROCm build: no driver floor
                    continue
                floor = catalog.floor_driver(build.cuda)
                key = f"package {package.name} release {release.version} build {build.name}"
                if floor is not None and (build.min_driver is None or build.min_driver > floor):
                    continue
                problem = f"no driver floor for CUDA {build.cuda.major} (drivers.toml)"
                if floor is not None:
                    key += ".min_driver"
                    problem = (
                        f"{build.min_driver} is not above CUDA {build.cuda.major}'s floor "
                        f"{format_driver(floor)}: leave it out"
                    )
                if build.overlay is not None:
                    raise CatalogOverlayError(build.overlay, key, problem)
                raise CatalogError(shipped, key, problem)


def with_shipped_packages(catalog: Catalog, profile: Profile | None, target: Target | None) -> Catalog:
    """``catalog`` with the shipped CUDA packages, where a resolution needs them: the profile
    names one (in ``[frameworks]``, or a build's distribution in ``[packages]``, which AMD GPUs
    refuse), or the target already has one (the image's cuDF, say: ``resolve`` says when the
    chosen frameworks leave it without a fitting build)."""
    has = target is not None and any(package_of(d.name) is not None for d in target.installed.dists)
    named = profile is not None and (
        bool(profile.cuda_packages) or any(package_of(r.name) is not None for r in profile.requirements)
    )
    if not (named or has):
        return catalog
    result = dataclasses.replace(catalog, packages=shipped_packages())
    check_drivers(result, catalog_dir() / PACKAGES_FILE)
    return result


@functools.lru_cache(maxsize=1)
def shipped_packages() -> tuple[CudaPackage, ...]:
    """The shipped ``cuda_packages.toml``, read once per process."""
    path = catalog_dir() / PACKAGES_FILE
    try:
        document = parsed_toml(path.read_bytes(), toml.loads_utf8)
    except (OSError, UnicodeDecodeError, toml.TOMLDecodeError) as exc:
        raise CatalogError(path, None, f"cannot read: {printable(exc)}") from None
    reader = Reader(document, lambda key, problem: CatalogError(path, key, problem))
    if document.get("schema") != 1:
        raise reader.fail("schema", "expected schema = 1")
    return cuda_packages(reader)
