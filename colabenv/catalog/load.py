"""Load and validate the curated catalog (``profiles/catalog/*.toml``) into frozen models, and
merge catalog overlays over it.

The shipped catalog is colabenv's own data: anything wrong in it is a bug, reported as
:class:`CatalogError` with the file and key path, and caught by the catalog tests. An overlay
is a folder of catalog files a team keeps beside its profiles (``COLABENV_CATALOG``, a
profile's ``[catalog] paths``): the same formats, user input, so a problem in it is a
:class:`CatalogOverlayError` (exit 2) naming the file by its path. File formats are documented
in docs/catalog.md (the catalog files, "Catalog overlays").
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import field
from pathlib import Path

from packaging.utils import canonicalize_name

from colabenv._util.reader import Reader
from colabenv._util.resources import catalog_dir
from colabenv.catalog.components import components_from
from colabenv.catalog.document import parse_document
from colabenv.catalog.packages import (
    PACKAGES_FILE,
    catalog_url,
    check_drivers,
    check_names_per_platform,
    cuda_packages,
    entry_archs,
    file_archs,
    merged,
    pin_texts,
    rocm_gfx,
    shared_keys,
    with_shipped_packages,
)
from colabenv.errors import CatalogError, CatalogOverlayError, printable
from colabenv.models import (
    CATALOG_PLATFORM,
    PLATFORMS,
    Arch,
    Catalog,
    CatalogParts,
    Companion,
    ComponentFacts,
    CudaMajorLine,
    CudaPackage,
    CudaToolkit,
    Framework,
    Profile,
    Release,
    Source,
    Target,
    TpuFacts,
    Variant,
    parsed_pin,
)
from colabenv.models.frozen import model

ALL_PARTS = CatalogParts()
"""Every part of the shipped catalog: what a caller without a target reads."""

FRAMEWORK_FILES = {
    Framework.TORCH: "torch.toml",
    Framework.TENSORFLOW: "tensorflow.toml",
    Framework.JAX: "jax.toml",
}
DRIVERS_FILE = "drivers.toml"
COMPONENTS_FILE = "components.toml"


MAX_OVERLAY_BYTES = 16 * 1024 * 1024
"""The most read of one overlay file: the shipped torch.toml, the largest, is about 100 KiB."""
MAX_OVERLAY_FOLDERS = 32
OVERLAY_VARIABLE = "COLABENV_CATALOG"


def _source(reader: Reader) -> Source:
    return Source(reader.text("source"))


def _read(path: Path) -> Reader:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogError(path, None, f"cannot read: {exc.strerror or exc}") from None
    return parse_document(path, data, CatalogError)


def _load_drivers(path: Path) -> tuple[tuple[CudaToolkit, ...], tuple[CudaMajorLine, ...]]:
    return _drivers(_read(path))


def _drivers(doc: Reader) -> tuple[tuple[CudaToolkit, ...], tuple[CudaMajorLine, ...]]:
    doc.allow("schema", "major_line", "toolkit")
    lines = []
    for item in doc.tables("major_line"):
        item.allow("cuda_major", "floor_driver", "source")
        lines.append(CudaMajorLine(item.integer("cuda_major"), item.version("floor_driver"), _source(item)))
    toolkits = []
    for item in doc.tables("toolkit"):
        item.allow("version", "label", "driver", "source")
        toolkits.append(
            CudaToolkit(item.version("version"), item.text("label"), item.version("driver"), _source(item))
        )
    majors = [line.major for line in lines]
    if len(set(majors)) != len(majors):
        raise doc.fail("major_line", "a CUDA major line is listed twice")
    return tuple(toolkits), tuple(lines)


def _load_framework(path: Path, framework: Framework) -> list[Release]:
    return framework_releases(_read(path), framework)


def framework_releases(doc: Reader, framework: Framework, overlay: str | None = None) -> list[Release]:
    """The releases of one framework file; ``overlay``: the overlay file it is (None: shipped)."""
    doc.allow("schema", "framework", "companions_follow_variant", "archs", "release")
    if doc.text("framework") != framework.value:
        raise doc.fail("framework", f"expected {framework.value!r}")
    follow = doc.flag("companions_follow_variant", False)
    named_archs = file_archs(doc)

    releases = []
    for item in doc.tables("release"):
        item.allow(
            "version", "python", "default_variant", "platform_defaults", "companions", "variant", "source"
        )
        release_python = item.specifier("python")
        variants = tuple(_load_variant(v, named_archs, overlay) for v in item.tables("variant"))
        if not variants:
            raise item.fail("variant", "a release needs at least one variant")
        names = [v.name for v in variants]
        check_names_per_platform(item, "variant", variants)
        default = item.opt_text("default_variant")
        if default is not None and default not in names:
            raise item.fail("default_variant", f"{default!r} is not one of the variants")
        comp_reader = item.sub("companions")
        companions = tuple(_load_companion(comp_reader, name, follow) for name in comp_reader.data)
        releases.append(
            Release(
                framework,
                item.version("version"),
                release_python,
                variants,
                default,
                companions,
                _source(item),
                overlay,
                _platform_defaults(item, variants),
            )
        )
    versions = [r.version for r in releases]
    if len(set(versions)) != len(versions):
        raise doc.fail("release", "a release version is listed twice")
    return releases


def _platform_defaults(item: Reader, variants: tuple[Variant, ...]) -> tuple[tuple[str, str], ...]:
    """``platform_defaults = { linux_aarch64 = "cpu" }``: the build the default index serves as
    the plain wheel on each platform other than the catalog's, one listed for that platform (a
    CPU build serves every platform)."""
    reader = item.sub("platform_defaults")
    found = []
    for platform in reader.data:
        if platform not in PLATFORMS or platform == CATALOG_PLATFORM:
            others = ", ".join(p for p in PLATFORMS if p != CATALOG_PLATFORM)
            raise reader.fail(platform, f"expected a platform other than the catalog's ({others})")
        name = reader.text(platform)
        if not any(v.name == name and (v.is_cpu or platform in v.platforms) for v in variants):
            raise reader.fail(platform, f"{printable(name)[:30]!r} is not a variant listed for {platform}")
        found.append((platform, name))
    return tuple(found)


def _load_companion(reader: Reader, name: str, follow: bool) -> Companion:
    """``name = "0.21.0"``, or ``name = { version = "2.11.0", follows_variant = false }`` for a
    companion without the framework's local tag (torchaudio 2.11.0 beside torch 2.12 and later);
    ``python = ">=3.11,!=3.14.1"`` where that release of it has wheels for fewer Pythons than
    its framework."""
    if not isinstance(reader.data[name], dict):
        return Companion(canonicalize_name(name), reader.version(name), follow)
    item = reader.child(reader.data[name], name)
    item.allow("version", "follows_variant", "python")
    return Companion(
        canonicalize_name(name),
        item.version("version"),
        item.flag("follows_variant", follow),
        item.opt_specifier("python"),
    )


def _load_variant(
    item: Reader, named_archs: Mapping[str, tuple[Arch, ...]], overlay: str | None = None
) -> Variant:
    item.allow(
        "name",
        "cuda",
        "index_url",
        "local_tag",
        "extra",
        "archs",
        "pins",
        "python",
        "source",
        "unconfirmed",
        "unconfirmed_reason",
        "rocm",
        "gfx",
        "platforms",
        "free_threaded",
        "free_threaded_unconfirmed",
        "requires",
        "find_links",
    )
    cuda = item.opt_version("cuda")
    archs = entry_archs(item, named_archs)
    rocm, gfx = rocm_gfx(item, "variant")
    if rocm is not None and (cuda is not None or archs):
        raise item.fail("rocm", "a ROCm variant has no cuda or archs (its GPUs are in gfx)")
    if cuda is not None and not archs:
        raise item.fail("archs", "a CUDA variant needs its arch list")
    if cuda is None and archs:
        raise item.fail("archs", "a CPU variant has no arch list")
    pins = pin_texts(item, "pins", "nvidia-cudnn-cu12==9.1.0.70")
    index_url = catalog_url(item, "index_url")
    return Variant(
        name=item.text("name"),
        cuda=cuda,
        index_url=index_url,
        archs=archs,
        pin_texts=tuple(pins),
        source=_source(item),
        rocm=rocm,
        gfx=gfx,
        requires=_requires(item),
        find_links=catalog_url(item, "find_links"),
        **shared_keys(item, overlay),
    )


def _requires(item: Reader) -> tuple[str, ...]:
    """``requires = ["jax-rocm7-plugin==0.7.1", ...]``: what the build installs beside the
    framework, each pinned to one version (``==``), since no extra of the framework names it."""
    if "requires" not in item.data:
        return ()
    texts = pin_texts(item, "requires", "jax-rocm7-plugin==0.7.1")
    for text in texts:
        specifier = parsed_pin(text).specifier
        if len(specifier) != 1 or next(iter(specifier)).operator != "==":
            raise item.fail("requires", f"{text!r} is not pinned to one version (name==X.Y.Z)")
    return tuple(texts)


def load_catalog(
    directory: Path | None = None,
    frameworks: Iterable[Framework] | None = None,
    *,
    components: bool = False,
) -> Catalog:
    """Read the catalog in ``directory`` (the shipped catalog by default) and validate it.

    ``frameworks`` limits which framework files are read (the driver table always is): a
    profile that wants torch alone need not parse the jax and tensorflow files.
    ``components``: read the NVIDIA component facts too (what a resolution for GPUs needs).
    """
    root = directory if directory is not None else catalog_dir()
    wanted = _wanted(frameworks)
    releases = {f: tuple(_load_framework(root / FRAMEWORK_FILES[f], f)) for f in wanted}
    facts = load_components(root) if components else ComponentFacts()
    return _assemble(root, _load_drivers(root / DRIVERS_FILE), releases, facts)


def shipped_catalog(
    frameworks: Iterable[Framework] | None = None, *, parts: CatalogParts = ALL_PARTS
) -> Catalog:
    """The shipped catalog, or the part of it ``frameworks`` need; each file read once per
    process (detection wants the driver table alone, the resolver then adds a framework,
    and with any framework the NVIDIA component facts its GPU wheels pull in and the TPU
    builds). The facts outside ``parts`` (what the target's kind can use) are left out:
    render's start pays for no file it ignores."""
    wanted = frozenset(_wanted(frameworks))
    return _shipped(wanted, components=bool(wanted) and parts.components, tpu=bool(wanted) and parts.tpu)


def load_components(directory: Path | None = None) -> ComponentFacts:
    """The NVIDIA component facts (``components.toml``) in ``directory`` (shipped by default)."""
    root = directory if directory is not None else catalog_dir()
    return components_from(_read(root / COMPONENTS_FILE))


def shipped_driver_table() -> Catalog:
    """The shipped catalog without framework files: the driver table is all detection needs."""
    return shipped_catalog(())


def shipped_components() -> ComponentFacts:
    """The shipped component facts, read once per process (what ``verify`` checks against)."""
    return _shipped_components()


def _wanted(frameworks: Iterable[Framework] | None) -> tuple[Framework, ...]:
    chosen = set(FRAMEWORK_FILES) if frameworks is None else set(frameworks)
    return tuple(f for f in FRAMEWORK_FILES if f in chosen)


@functools.lru_cache(maxsize=16)
def _shipped(frameworks: frozenset[Framework], *, components: bool, tpu: bool) -> Catalog:
    releases = {f: _shipped_releases(f) for f in _wanted(frameworks)}
    facts = _shipped_components() if components else ComponentFacts()
    return _assemble(catalog_dir(), _shipped_drivers(), releases, facts, tpu=tpu)


@functools.lru_cache(maxsize=1)
def _shipped_components() -> ComponentFacts:
    return components_from(_read(catalog_dir() / COMPONENTS_FILE))


@functools.lru_cache(maxsize=1)
def _shipped_drivers() -> tuple[tuple[CudaToolkit, ...], tuple[CudaMajorLine, ...]]:
    return _load_drivers(catalog_dir() / DRIVERS_FILE)


@functools.lru_cache(maxsize=len(FRAMEWORK_FILES))
def _shipped_releases(framework: Framework) -> tuple[Release, ...]:
    return tuple(_load_framework(catalog_dir() / FRAMEWORK_FILES[framework], framework))


def _assemble(
    root: Path,
    drivers: tuple[tuple[CudaToolkit, ...], tuple[CudaMajorLine, ...]],
    releases: Mapping[Framework, tuple[Release, ...]],
    components: ComponentFacts,
    *,
    tpu: bool = True,
) -> Catalog:
    toolkits, lines = drivers
    catalog = Catalog(
        toolkits,
        lines,
        tuple(r for f in releases for r in releases[f]),
        components,
        tpu_facts_for(root, releases) if tpu else TpuFacts(),
    )
    _check_consistency(catalog, root)
    return catalog


def _check_consistency(catalog: Catalog, root: Path) -> None:
    """Every CUDA variant must have a driver floor and a toolkit driver in the driver table;
    every CUDA package build a driver floor."""
    check_drivers(catalog, root / PACKAGES_FILE)
    for release in catalog.releases:
        for variant in release.variants:
            if variant.cuda is None:
                continue
            problem = None
            if catalog.floor_driver(variant.cuda) is None:
                problem = f"no driver floor for CUDA {variant.cuda.major}"
            elif catalog.toolkit_driver(variant.cuda) is None:
                problem = f"no toolkit driver for CUDA {variant.cuda}"
            if problem is None:
                continue
            key = f"release {release.version} variant {variant.name}"
            if variant.overlay is not None:
                raise CatalogOverlayError(
                    variant.overlay, key, f"{problem} (add it to a {DRIVERS_FILE} beside it)"
                )
            raise CatalogError(root / FRAMEWORK_FILES[release.framework], key, problem)


# ---------------------------------------------------------------------------------------------
# Overlays: folders of catalog files merged over the shipped catalog


@model
class Overlay:
    """The catalog files of one overlay folder (what it does not have is empty)."""

    folder: Path
    releases: tuple[Release, ...] = ()
    toolkits: tuple[CudaToolkit, ...] = ()
    major_lines: tuple[CudaMajorLine, ...] = ()
    components: ComponentFacts = field(default_factory=ComponentFacts)
    packages: tuple[CudaPackage, ...] = ()


def overlay_folders(profile: Profile | None, environ: Mapping[str, str]) -> list[tuple[Path, str]]:
    """The overlay folders to merge, in the order they apply (a later one wins), each with
    where it was named: the profile's ``[catalog] paths`` (a parent's before its child's, each
    file's in the order listed), then ``COLABENV_CATALOG`` (``:``-separated; like ``PATH``, the
    first folder wins). The variable beats the profile, as flags and variables do."""
    found: list[tuple[Path, str]] = []
    if profile is not None:
        named = f"{printable(profile.path.name)} [catalog] paths"
        found.extend((path, named) for path in profile.catalog_paths)
    text = environ.get(OVERLAY_VARIABLE, "")
    folders = [part for part in text.split(":") if part.strip()]
    if len(folders) > MAX_OVERLAY_FOLDERS:
        raise CatalogOverlayError(OVERLAY_VARIABLE, None, f"more than {MAX_OVERLAY_FOLDERS} folders")
    found.extend((Path(part), OVERLAY_VARIABLE) for part in reversed(folders))
    return found


def read_overlay_file(path: Path) -> bytes:
    """An overlay file's bytes: a regular file of at most :data:`MAX_OVERLAY_BYTES`."""
    from colabenv._util.files import FileProblem, read_limited

    try:
        return read_limited(path, MAX_OVERLAY_BYTES)
    except FileProblem as problem:
        raise CatalogOverlayError(path, None, f"cannot read: {problem}") from None


def load_overlay(folder: Path, named_by: str, frameworks: Iterable[Framework] | None = None) -> Overlay:
    """The catalog files in ``folder`` (``frameworks`` limits which framework files are read,
    as for the shipped catalog). A folder that is missing or holds no catalog file is refused:
    a path that names nothing is a mistake."""
    if not folder.is_dir():
        raise CatalogOverlayError(folder, None, f"not a folder (named by {named_by})")
    names = (*FRAMEWORK_FILES.values(), DRIVERS_FILE, COMPONENTS_FILE, PACKAGES_FILE)
    if not any((folder / name).exists() for name in names):
        raise CatalogOverlayError(
            folder, None, f"no catalog file in it (named by {named_by}; expected one of {', '.join(names)})"
        )
    releases: list[Release] = []
    for framework in _wanted(frameworks):
        path = folder / FRAMEWORK_FILES[framework]
        if path.exists() or path.is_symlink():
            doc = parse_document(path, read_overlay_file(path), CatalogOverlayError)
            releases.extend(framework_releases(doc, framework, str(path)))
    toolkits: tuple[CudaToolkit, ...] = ()
    lines: tuple[CudaMajorLine, ...] = ()
    path = folder / DRIVERS_FILE
    if path.exists() or path.is_symlink():
        toolkits, lines = _drivers(parse_document(path, read_overlay_file(path), CatalogOverlayError))
    components = ComponentFacts()
    path = folder / COMPONENTS_FILE
    if path.exists() or path.is_symlink():
        components = components_from(parse_document(path, read_overlay_file(path), CatalogOverlayError))
    packages: tuple[CudaPackage, ...] = ()
    path = folder / PACKAGES_FILE
    if path.exists() or path.is_symlink():
        packages = cuda_packages(
            parse_document(path, read_overlay_file(path), CatalogOverlayError), str(path)
        )
    return Overlay(folder, tuple(releases), toolkits, lines, components, packages)


def _merged_release(old: Release, new: Release) -> Release:
    """``new`` over ``old`` (same framework and version): the overlay's release facts, and the
    variants and companions of both, the overlay's winning by name (a variant's by name and
    platforms)."""
    variants = {(v.name, v.platforms): v for v in old.variants}
    variants.update(((v.name, v.platforms), v) for v in new.variants)
    companions = {c.name: c for c in old.companions}
    companions.update((c.name, c) for c in new.companions)
    return Release(
        new.framework,
        new.version,
        new.python,
        tuple(variants.values()),
        new.default_variant or old.default_variant,
        tuple(companions.values()),
        new.source,
        new.overlay,
        tuple({**dict(old.platform_defaults), **dict(new.platform_defaults)}.items()),
    )


def with_overlays(catalog: Catalog, overlays: Iterable[Overlay]) -> Catalog:
    """``catalog`` with each overlay merged over it in turn (a later one wins): releases by
    framework and version, variants by name, driver entries by version and major line,
    components by name, cuda-toolkit pins by version; then checked as a whole. The TPU facts
    are the catalog's (an overlay has no ``tpu.toml``)."""
    releases = {(r.framework, r.version): r for r in catalog.releases}
    toolkits = {t.version: t for t in catalog.toolkits}
    lines = {line.major: line for line in catalog.major_lines}
    components = {c.name: c for c in catalog.components.components}
    metas = {m.version: m for m in catalog.components.toolkit_metas}
    for overlay in overlays:
        for release in overlay.releases:
            key = (release.framework, release.version)
            old = releases.get(key)
            releases[key] = release if old is None else _merged_release(old, release)
        toolkits.update((t.version, t) for t in overlay.toolkits)
        lines.update((line.major, line) for line in overlay.major_lines)
        components.update((c.name, c) for c in overlay.components.components)
        metas.update((m.version, m) for m in overlay.components.toolkit_metas)
    facts = catalog.components
    if components != {c.name: c for c in facts.components} or metas != {
        m.version: m for m in facts.toolkit_metas
    }:
        facts = ComponentFacts(tuple(components.values()), tuple(metas.values()))
    packages = merged([catalog.packages, *(overlay.packages for overlay in overlays)])
    result = Catalog(
        tuple(toolkits.values()),
        tuple(lines.values()),
        tuple(releases.values()),
        facts,
        catalog.tpu,
        packages,
    )
    _check_consistency(result, catalog_dir())
    return result


def catalog_for(
    profile: Profile | None,
    environ: Mapping[str, str],
    frameworks: Iterable[Framework] | None = None,
    *,
    target: Target | None = None,
    parts: CatalogParts = ALL_PARTS,
) -> Catalog:
    """The catalog a resolution of ``profile`` uses: the shipped one (the part its frameworks
    need, and the ``parts`` its ``target`` can use), with the overlays of its ``[catalog]
    paths`` and of ``COLABENV_CATALOG`` merged over it. Without a profile (``verify`` from the
    marker, ``detect``), the whole catalog with the variable's overlays. Without overlays this
    is :func:`shipped_catalog`, read once per process."""
    if frameworks is not None:
        wanted = tuple(frameworks)
    elif profile is not None:
        wanted = tuple(r.framework for r in profile.frameworks)
    else:
        wanted = tuple(Framework)
    base = shipped_catalog(wanted, parts=parts)
    base = with_shipped_packages(base, profile, target)
    folders = overlay_folders(profile, environ)
    if not folders:
        return base
    return with_overlays(base, [load_overlay(folder, named, wanted) for folder, named in folders])


# ---------------------------------------------------------------------------------------------
# TPU facts (tpu.toml)

TPU_FILE = "tpu.toml"


def tpu_facts_for(root: Path, releases: Mapping[Framework, tuple[Release, ...]]) -> TpuFacts:
    """The TPU facts a catalog of ``releases`` carries: those of ``root``'s ``tpu.toml`` when
    a framework is read (detection needs none), each build checked against its release."""
    if not releases:
        return TpuFacts()
    if root == catalog_dir():
        facts = shipped_tpu()
    elif (root / TPU_FILE).is_file():
        facts = load_tpu(root)
    else:
        return TpuFacts()
    for build in facts.builds:
        if build.framework not in releases:
            continue
        release = next((r for r in releases[build.framework] if r.version == build.release), None)
        key = f"build {build.framework} {build.release}"
        if release is None:
            raise CatalogError(
                root / TPU_FILE, key, f"{FRAMEWORK_FILES[build.framework]} has no release {build.release}"
            )
        if build.base_variant is not None and release.variant(build.base_variant) is None:
            raise CatalogError(
                root / TPU_FILE, key, f"release {build.release} has no variant {build.base_variant!r}"
            )
    return facts


def load_tpu(directory: Path | None = None) -> TpuFacts:
    """``tpu.toml`` in ``directory`` (the shipped catalog by default), validated."""
    root = directory if directory is not None else catalog_dir()
    return _load_tpu(root / TPU_FILE)


def shipped_tpu() -> TpuFacts:
    """The shipped TPU facts, read once per process (``--tpu`` checks its type against them)."""
    return _shipped_tpu()


@functools.lru_cache(maxsize=1)
def _shipped_tpu() -> TpuFacts:
    return _load_tpu(catalog_dir() / TPU_FILE)


def _load_tpu(path: Path) -> TpuFacts:
    from colabenv.catalog.tpu import tpu_facts

    return tpu_facts(_read(path))
