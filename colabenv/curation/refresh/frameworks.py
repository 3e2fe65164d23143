"""What ``catalog refresh`` derives for each framework (see :mod:`colabenv.curation.refresh.sources`), and
:func:`derive`, which asks the one a refresh is for and keeps what the driver table allows."""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Sequence

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv.curation.refresh.aarch64_builds import aarch64_default, aarch64_variants
from colabenv.curation.refresh.build_facts import (
    FrameworkRun,
    archs_carried_only,
    archs_of,
    kept_archs,
    pinned_version,
    public_or_none,
    python_tags,
    text_of,
)
from colabenv.curation.refresh.free_threaded import free_threaded_read, with_free_threaded
from colabenv.curation.refresh.jax_free_threaded import (
    jax_free_threaded_read,
    newest_admitted,
    with_jax_free_threaded,
)
from colabenv.curation.refresh.jax_platform_builds import (
    JAXLIB,
    JaxRelease,
    platform_variants,
    rocm_builds_not_read,
    rocm_page,
    rocm_spaces_named,
)
from colabenv.curation.refresh.rocm_builds import rocm_of_tag, rocm_variants
from colabenv.curation.refresh.selection import selected_versions
from colabenv.curation.refresh.sources import (
    PYTORCH_INDEX,
    Derived,
    History,
    IndexReader,
    Metadata,
    RefreshProblem,
    Wheel,
    by_version,
    cuda_of_pins,
    cuda_of_tag,
    narrower_python,
    nvidia_pins,
    preferred,
    proposed_toolkits,
    python_range,
    python_strings,
    requirements_of,
    stamp,
    variant_model,
)
from colabenv.curation.refresh.tensorflow_aarch64 import aarch64_note, tensorflow_aarch64
from colabenv.models import Arch, Catalog, Companion, Framework, Release, Source, Variant
from colabenv.models.frameworks import FACTS
from colabenv.models.frozen import model

_BUILD_INFO = re.compile(r"OrderedDict\((\[.*\])\)", re.DOTALL)


# ---------------------------------------------------------------------------------------------
# torch


def _torch_companion(
    reader: IndexReader, project: str, version: Version, tag: str, history: History
) -> tuple[Companion | None, str]:
    """torchvision / torchaudio for torch ``version``: the release pinning ``torch==version``;
    else the newest admitting it whose own build is ``+tag`` (``<project>/version.py``); else,
    for a companion that declares no torch pin (torchaudio 2.11.0), the previous release's."""
    wheels = by_version(reader.wheels(reader.options.index, project))
    admitting: list[tuple[Version, SpecifierSet]] = []
    for candidate in sorted(wheels, reverse=True):
        metadata = reader.metadata(preferred(wheels[candidate]))
        torch = [r for r in requirements_of(metadata) if canonicalize_name(r.name) == "torch"]
        if not torch:
            continue
        pinned = pinned_version(torch[0].specifier)
        if pinned is not None:
            if pinned == version:
                return (
                    Companion(
                        canonicalize_name(project), candidate, True, _own_python(wheels[candidate], metadata)
                    ),
                    f"{project} {candidate} METADATA requires torch=={version}{_python_said(metadata)}",
                )
            if pinned < version:
                break
            continue
        if torch[0].specifier.contains(version, prereleases=True):
            admitting.append((candidate, torch[0].specifier))
    for candidate, specifier in admitting:
        path = f"{project}/version.py"
        built = public_or_none(
            python_strings(text_of(reader.member(preferred(wheels[candidate]), path))).get("__version__")
        )
        if built is not None and built.local == tag:
            metadata = reader.metadata(preferred(wheels[candidate]))
            return (
                Companion(
                    canonicalize_name(project), candidate, True, _own_python(wheels[candidate], metadata)
                ),
                f"{project} {candidate} (METADATA requires torch{specifier}; {path}: "
                f"{built}, the build of torch {version}){_python_said(metadata)}",
            )
    for release in history.before(version):
        previous = release.companion(project)
        if previous is not None and not previous.follows_variant:
            return previous, (
                f"{project} {previous.version} carried over from torch "
                f"{release.version} (no {project} release pins torch=={version})"
            )
    return None, f"no {project} release pins torch=={version} or was built for it"


def _own_python(wheels: Sequence[Wheel], metadata: Metadata) -> SpecifierSet | None:
    """A companion release's own Python range (its cpXY tags and Requires-Python), or None
    where neither says anything."""
    try:
        return python_range(wheels, metadata.requires_python)
    except RefreshProblem:
        return None


def _python_said(metadata: Metadata) -> str:
    return f", Requires-Python {metadata.requires_python}" if metadata.requires_python else ""


def torch_releases(reader: IndexReader, history: History, known: Sequence[Release]) -> Derived:
    options = reader.options
    run = FrameworkRun(reader, history, set(), [])
    default_wheels = by_version(reader.wheels(options.index, "torch", required=True))
    versions = selected_versions(default_wheels, known, options, run.notes, "torch")
    on_index = _pytorch_index_builds(reader)
    releases = []
    for version in versions:
        release = _torch_release(run, version, default_wheels[version], on_index)
        if release is not None:
            history.add(release)
            releases.append(release)
    cuda_read = frozenset((r.version, v.name) for r in releases for v in r.variants if v.cuda)
    offered = {key for key in on_index} | {(r.version, r.default_variant or "") for r in releases}
    return Derived(
        tuple(releases),
        tuple(run.notes),
        frozenset(run.read),
        cuda_read,
        frozenset(offered),
        free_threaded_read=free_threaded_read(releases, options.pytorch_index is not None),
    )


def _pytorch_index_builds(reader: IndexReader) -> dict[tuple[Version, str], list[Wheel]]:
    """The ``+cuXYZ``, ``+rocmX.Y`` and ``+cpu`` torch wheels on the PyTorch index, by public
    version and local tag (none without ``--pytorch-index``)."""
    on_index: dict[tuple[Version, str], list[Wheel]] = {}
    if reader.options.pytorch_index is not None:
        for wheel in reader.wheels(reader.options.pytorch_index, "torch", required=True):
            local = wheel.version.local
            if local is not None and (
                local == "cpu" or cuda_of_tag(local) is not None or rocm_of_tag(local) is not None
            ):
                on_index.setdefault((Version(wheel.version.public), local), []).append(wheel)
    return on_index


def _torch_release(
    run: FrameworkRun,
    version: Version,
    wheels: Sequence[Wheel],
    on_index: dict[tuple[Version, str], list[Wheel]],
) -> Release | None:
    """Torch ``version`` from its default build's ``wheels``, with the PyTorch index's builds of
    it (``on_index``) or the cpu build carried over; None: left out (noted)."""
    options = run.reader.options
    main, metadata = run.main_wheel(wheels)
    default = _torch_default(run, version, main, metadata)
    if default is None:
        return None
    variants: dict[str, Variant] = {default.name: default}
    release_python = python_range(wheels, metadata.requires_python)
    if options.pytorch_index is not None:
        _index_variants(run, version, default.name, on_index, variants)
        variants.update((v.name, v) for v in rocm_variants(run, version, on_index, release_python))
    else:
        _carried_cpu(run.history, version, variants, run.notes)
    for name, variant in variants.items():
        files = on_index.get((version, name), [])
        variants[name] = with_free_threaded(variant, [*wheels, *files] if name == default.name else files)
    aarch64 = tuple(aarch64_variants(run, version))
    platform_defaults, plain_said = aarch64_default(run, version, (*variants.values(), *aarch64))
    companions, said = _torch_companions(run, version, default.name, release_python)
    return Release(
        Framework.TORCH,
        version,
        release_python,
        (*variants.values(), *aarch64),
        default.name,
        companions,
        Source(
            f"{options.index_label} torch {version}: manylinux x86_64 wheels for {python_tags(wheels)}, "
            f"Requires-Python {metadata.requires_python or 'not stated'}; companions: "
            f"{'; '.join(said)}; variants: "
            f"{'the PyTorch index' if options.pytorch_index else 'the default build only'}"
            f"{plain_said}; {stamp()}"
        ),
        platform_defaults=platform_defaults,
    )


def _torch_default(run: FrameworkRun, version: Version, main: Wheel, metadata: Metadata) -> Variant | None:
    """The build of torch ``version`` on the default index (``main``, whose METADATA is
    ``metadata``): its CUDA from ``torch/version.py``, else its pins; None: left out (noted)."""
    pins = nvidia_pins(requirements_of(metadata))
    info = python_strings(text_of(run.reader.member(main, "torch/version.py")))
    built = public_or_none(info.get("__version__"))
    cuda = public_or_none(info.get("cuda")) or cuda_of_pins(pins)
    if cuda is None:
        run.notes.append(
            f"torch {version} left out: its default wheel names no CUDA (torch/version.py, pins)"
        )
        return None
    cuda = Version(f"{cuda.major}.{cuda.minor}")
    name = built.local if built is not None and built.local else f"cu{cuda.major}{cuda.minor}"
    found = archs_of(run.reader, [main], run.history, version, name)
    kept = kept_archs(found, run, (version, name), f"torch {version} left out: no arch list for {name}")
    if kept is None:
        return None
    archs, unconfirmed, archs_source = kept
    return variant_model(
        name,
        cuda=cuda,
        index_url=f"{PYTORCH_INDEX}/{name}",
        local_tag=name,
        archs=archs,
        pins=pins,
        unconfirmed=unconfirmed,
        source=f"{run.reader.options.index_label} default build: {main.file.filename} METADATA "
        f"Requires-Dist (markers dropped) and torch/version.py ({built or 'no __version__'}, CUDA "
        f"{cuda}); {archs_source}; {stamp()}",
    )


def _torch_companions(
    run: FrameworkRun, version: Version, tag: str, release_python: SpecifierSet
) -> tuple[tuple[Companion, ...], list[str]]:
    """torchvision and torchaudio for torch ``version`` (build ``tag``), each without its own
    Python range where that is not narrower than the release's; and what was said of each."""
    companions, said = [], []
    for project in FACTS[Framework.TORCH].companions:
        companion, why = _torch_companion(run.reader, project, version, tag, run.history)
        said.append(why)
        if companion is None:
            run.notes.append(f"torch {version}: {why}")
        elif companion.python is not None and not narrower_python(companion.python, release_python):
            companions.append(Companion(companion.name, companion.version, companion.follows_variant))
        else:
            companions.append(companion)
    return tuple(companions), said


def _index_variants(
    run: FrameworkRun,
    version: Version,
    default: str,
    on_index: dict[tuple[Version, str], list[Wheel]],
    variants: dict[str, Variant],
) -> None:
    """The ``+cuXYZ`` and ``+cpu`` builds of ``version`` on the PyTorch index (the ``+rocmX.Y``
    ones: :func:`rocm_variants`)."""
    tags = sorted(
        (tag for v, tag in on_index if v == version and rocm_of_tag(tag) is None),
        key=lambda tag: (tag == "cpu", cuda_of_tag(tag) or Version("0")),
    )
    if not tags:
        run.notes.append(f"torch {version}: no build on the PyTorch index")
    for tag in tags:
        if tag == default:
            continue
        url = f"{PYTORCH_INDEX}/{tag}"
        wheel = preferred(on_index[(version, tag)])
        if tag == "cpu":
            variants["cpu"] = variant_model(
                "cpu",
                index_url=url,
                local_tag="cpu",
                source=f"PyTorch index: {wheel.file.filename}; {stamp()}",
            )
            continue
        cuda = cuda_of_tag(tag)
        found = archs_of(run.reader, [wheel], run.history, version, tag)
        kept = kept_archs(found, run, (version, tag), f"torch {version} {tag} left out: no arch list")
        if kept is None:
            continue
        archs, unconfirmed, archs_source = kept
        metadata = run.reader.metadata(wheel)
        variants[tag] = variant_model(
            tag,
            cuda=cuda,
            index_url=url,
            local_tag=tag,
            archs=archs,
            pins=nvidia_pins(requirements_of(metadata)),
            unconfirmed=unconfirmed,
            source=f"PyTorch index: {wheel.file.filename} METADATA Requires-Dist (markers "
            f"dropped); {archs_source}; {stamp()}",
        )


def _carried_cpu(history: History, version: Version, variants: dict[str, Variant], notes: list[str]) -> None:
    """Without the PyTorch index: the previous release's cpu build, marked unconfirmed; its
    CUDA builds are not carried (their pins change with every release)."""
    previous = history.before(version)
    if not previous:
        return
    others = sorted(v.name for v in previous[0].variants if v.name not in variants and v.name != "cpu")
    if others:
        notes.append(
            f"torch {version}: the PyTorch index was not read, so the builds "
            f"{previous[0].version} has besides ({', '.join(others)}) are not listed"
        )
    cpu = previous[0].variant("cpu")
    if cpu is not None:
        variants["cpu"] = variant_model(
            "cpu",
            index_url=cpu.index_url,
            local_tag=cpu.local_tag,
            unconfirmed=f"the PyTorch cpu index was not read; carried over from {previous[0].version}",
            source=f"carried over from torch {previous[0].version} by colabenv catalog refresh "
            f"(--no-variant-index); {stamp()}",
        )


# ---------------------------------------------------------------------------------------------
# jax


def jax_releases(reader: IndexReader, history: History, known: Sequence[Release]) -> Derived:
    options = reader.options
    notes: list[str] = []
    read: set[tuple[Version, str]] = set()
    run = FrameworkRun(reader, history, read, notes)
    wheels = by_version(reader.wheels(options.index, "jax", required=True))
    page = rocm_page(run, known)
    offered: set[tuple[Version, str]] = rocm_builds_not_read(known, page)
    releases = []
    for version in selected_versions(wheels, known, options, notes, "jax"):
        wheel = preferred(wheels[version])
        metadata = reader.metadata(wheel)
        jaxlib = None
        for extra in ("cuda12", "cuda", "cuda13", None):
            for requirement in requirements_of(metadata, extra):
                if canonicalize_name(requirement.name) == JAXLIB and jaxlib is None:
                    jaxlib = pinned_version(requirement.specifier)
        if jaxlib is None:
            notes.append(f"jax {version} left out: no extra pins one {JAXLIB}")
            continue
        jaxlib_wheels = by_version(reader.wheels(options.index, JAXLIB)).get(jaxlib, [])
        if not jaxlib_wheels:
            notes.append(f"jax {version} left out: no Linux x86_64 wheel of {JAXLIB} {jaxlib}")
            continue
        try:
            python = python_range(jaxlib_wheels, metadata.requires_python)
        except RefreshProblem as problem:
            notes.append(f"jax {version} left out: {problem}")
            continue
        variants, default = _jax_cuda_variants(run, version, metadata, offered)
        if not variants:
            notes.append(f"jax {version} left out: no cudaNN extra with a build that could be read")
            continue
        jax_release = JaxRelease(version, jaxlib, python, rocm_spaces_named(metadata))
        beyond = platform_variants(run, jax_release, variants, page, offered)
        cpu = variant_model(
            "cpu",
            source=f"{options.index_label} jax {version} with {JAXLIB} {jaxlib} and no GPU "
            f"extra (pip install jax is the CPU-only install); {stamp()}",
        )
        release = Release(
            Framework.JAX,
            version,
            python,
            with_jax_free_threaded(run, jax_release, metadata, (*variants, *beyond, cpu)),
            default,
            (Companion(JAXLIB, jaxlib, False),),
            Source(
                f"{options.index_label} jax {version} METADATA (Requires-Python "
                f"{metadata.requires_python or 'not stated'}; its cuda extras pin {JAXLIB} "
                f"{jaxlib}); {JAXLIB} {jaxlib} manylinux x86_64 wheels for "
                f"{python_tags(jaxlib_wheels)}; {stamp()}"
            ),
        )
        history.add(release)
        releases.append(release)
    derived = Derived(tuple(releases), tuple(notes), frozenset(read), offered=frozenset(offered))
    return dataclasses.replace(derived, free_threaded_read=jax_free_threaded_read(releases))


def _jax_cuda_variants(
    run: FrameworkRun, version: Version, metadata: Metadata, offered: set[tuple[Version, str]]
) -> tuple[tuple[Variant, ...], str]:
    """The x86-64 builds of jax ``version``'s ``cudaNN`` extras (each offered), and the one
    its ``cuda`` extra installs (else cuda12, else the first)."""
    variants: dict[str, Variant] = {}
    default = None
    for extra in sorted(metadata.extras):
        match = re.fullmatch(r"cuda(\d+)", extra)
        if match is None:
            continue
        offered.add((version, extra))
        build = _JaxBuild(version, extra, int(match.group(1)))
        variant = _jax_variant(run, build, requirements_of(metadata, extra))
        if variant is not None:
            variants[extra] = variant
    for requirement in requirements_of(metadata, "cuda"):
        plugin = re.fullmatch(r"jax-(cuda\d+)-plugin", canonicalize_name(requirement.name))
        if plugin and plugin.group(1) in variants:
            default = plugin.group(1)
    if not variants:
        return (), ""
    return tuple(variants.values()), default or ("cuda12" if "cuda12" in variants else sorted(variants)[0])


@model
class _JaxBuild:
    """The ``cudaNN`` extra ``extra`` of jax ``version``, for CUDA ``major``."""

    version: Version
    extra: str
    major: int


@model
class _JaxPins:
    """The NVIDIA wheels a jax build pins, where they are stated, and the wheels of its GPU code
    (the plugin's and its PJRT's; none without a plugin)."""

    pins: tuple[str, ...]
    source: str
    wheels: tuple[Wheel, ...]


def _jax_variant(run: FrameworkRun, build: _JaxBuild, requirements: list[Requirement]) -> Variant | None:
    """The variant of ``build``, whose extra requires ``requirements``; None: left out (noted)."""
    version, extra = build.version, build.extra
    pinned = _jax_pins(run, build, requirements)
    if pinned is None:
        return None
    if not pinned.pins:
        run.notes.append(f"jax {version} {extra} left out: it pins no NVIDIA wheel")
        return None
    found_archs = (
        archs_of(run.reader, pinned.wheels, run.history, version, extra)
        if pinned.wheels
        else archs_carried_only(run.history, version, extra)
    )
    kept = kept_archs(found_archs, run, (version, extra), f"jax {version} {extra} left out: no arch list")
    if kept is None:
        return None
    archs, unconfirmed, archs_source = kept
    cuda, cuda_source = _jax_cuda(run.history, build, pinned.pins)
    return variant_model(
        extra,
        cuda=cuda,
        extra=extra,
        archs=archs,
        pins=pinned.pins,
        unconfirmed=unconfirmed,
        source=f"pins: {pinned.source}; {archs_source}; {cuda_source}; {stamp()}",
    )


def _jax_pins(run: FrameworkRun, build: _JaxBuild, requirements: list[Requirement]) -> _JaxPins | None:
    """What ``build`` pins: its extra's NVIDIA wheels and, where the extra requires a
    ``jax-cudaNN-plugin``, the plugin's (``with-cuda``); None: no plugin wheel it admits (noted)."""
    version, extra = build.version, build.extra
    plugin_name = f"jax-cuda{build.major}-plugin"
    plugin = [r for r in requirements if canonicalize_name(r.name) == plugin_name]
    own_pins = nvidia_pins(requirements)
    if not plugin:
        return _JaxPins(own_pins, f"jax {version} METADATA Requires-Dist extra {extra}", ())
    plugins = newest_admitted(run.reader, plugin_name, plugin[0].specifier)
    if not plugins:
        run.notes.append(
            f"jax {version} {extra} left out: no Linux x86_64 wheel of {plugin_name}{plugin[0].specifier}"
        )
        return None
    plugin_wheel = preferred(plugins)
    plugin_metadata = run.reader.metadata(plugin_wheel)
    plugin_pins = nvidia_pins(requirements_of(plugin_metadata, "with-cuda"))
    pins_source = (
        " and ".join(
            ([f"jax {version} METADATA Requires-Dist extra {extra}"] if own_pins else [])
            + (
                [f"{plugin_wheel.file.filename} METADATA Requires-Dist extra with-cuda"]
                if plugin_pins
                else []
            )
        )
        or f"{plugin_wheel.file.filename} METADATA"
    )
    return _JaxPins(
        tuple(dict.fromkeys((*own_pins, *plugin_pins))),
        pins_source,
        (plugin_wheel, *_pjrt_wheels(run.reader, build.major, plugin_metadata)),
    )


def _pjrt_wheels(reader: IndexReader, major: int, plugin_metadata: Metadata) -> list[Wheel]:
    """The ``jax-cudaNN-pjrt`` wheel the plugin pins, where the index has it."""
    found = []
    pjrt_name = f"jax-cuda{major}-pjrt"
    for requirement in requirements_of(plugin_metadata):
        pjrt = pinned_version(requirement.specifier)
        if canonicalize_name(requirement.name) == pjrt_name and pjrt is not None:
            pjrt_wheels = by_version(reader.wheels(reader.options.index, pjrt_name)).get(pjrt)
            if pjrt_wheels:
                found.append(preferred(pjrt_wheels))
    return found


def _jax_cuda(history: History, build: _JaxBuild, pins: tuple[str, ...]) -> tuple[Version, str]:
    """The CUDA of ``build`` (no index states the one it used) and where it comes from: the
    previous release's build, else the CUDA runtime ``pins`` ask for, else the extra's major."""
    previous = history.variant_before(build.version, build.extra)
    if previous is not None and previous[1].cuda is not None:
        return (
            previous[1].cuda,
            f"cuda: carried over from {previous[0].version} (no index states the CUDA the build used)",
        )
    return cuda_of_pins(pins) or Version(
        f"{build.major}.0"
    ), "cuda: the CUDA runtime the pins ask for at least"


# ---------------------------------------------------------------------------------------------
# tensorflow


def build_info(text: str) -> dict[str, object]:
    """The ``build_info`` OrderedDict of ``tensorflow/python/platform/build_info.py``."""
    match = _BUILD_INFO.search(text)
    if match is None:
        return {}
    try:
        pairs = ast.literal_eval(match.group(1))
    except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
        return {}
    if not isinstance(pairs, list):
        return {}
    return {str(p[0]): p[1] for p in pairs if isinstance(p, tuple) and len(p) == 2}


def tensorflow_releases(reader: IndexReader, history: History, known: Sequence[Release]) -> Derived:
    options = reader.options
    notes: list[str] = []
    read: set[tuple[Version, str]] = set()
    wheels = by_version(reader.wheels(options.index, "tensorflow", required=True))
    cuda_read: set[tuple[Version, str]] = set()
    offered: set[tuple[Version, str]] = set()
    releases = []
    for version in selected_versions(wheels, known, options, notes, "tensorflow"):
        main = preferred(wheels[version])
        metadata = reader.metadata(main)
        info = build_info(text_of(reader.member(main, "tensorflow/python/platform/build_info.py")))
        extra = "and-cuda" if "and-cuda" in metadata.extras else None
        name = extra or "cuda"
        pins = nvidia_pins(requirements_of(metadata, extra)) if extra else ()
        cuda = public_or_none(str(info.get("cuda_version") or ""))
        cuda_source = "cuda: build_info.py cuda_version"
        if cuda is not None:
            cuda_read.add((version, name))
        else:
            previous = history.variant_before(version, name)
            if previous is None or previous[1].cuda is None:
                notes.append(f"tensorflow {version} left out: build_info.py names no CUDA")
                continue
            cuda, cuda_source = previous[1].cuda, f"cuda: carried over from {previous[0].version}"
        cuda = Version(f"{cuda.major}.{cuda.minor}")
        capabilities = info.get("cuda_compute_capabilities")
        found = None
        if options.read_archs:
            found = archs_of(reader, [main], history, version, name, ("libtensorflow*",))
        elif isinstance(capabilities, list) and capabilities:
            try:
                listed = tuple(sorted(Arch.parse(str(c)) for c in capabilities))
            except ValueError:
                listed = ()
            if listed:
                found = (listed, None, "archs: build_info.py cuda_compute_capabilities")
        if found is None:
            found = archs_carried_only(history, version, name)
        if found is None:
            notes.append(f"tensorflow {version} left out: no arch list")
            continue
        archs, unconfirmed, archs_source = found
        if unconfirmed is None and options.read_archs:
            read.add((version, name))
        offered.add((version, name))
        gpu = variant_model(
            name,
            cuda=cuda,
            extra=extra,
            archs=archs,
            pins=pins,
            unconfirmed=unconfirmed,
            source=f"{main.file.filename} ({options.index_label}): METADATA Requires-Dist extra "
            f"{extra or '(none: a system CUDA)'}; {cuda_source}; {archs_source}; {stamp()}",
        )
        cpu = variant_model(
            "cpu",
            source=f"{options.index_label} tensorflow {version} wheel "
            f"installed without the GPU extra; {stamp()}",
        )
        arm = tensorflow_aarch64(reader, version)
        release = Release(
            Framework.TENSORFLOW,
            version,
            python_range(wheels[version], metadata.requires_python),
            (gpu, cpu),
            name,
            (),
            Source(
                f"{options.index_label} tensorflow {version}: manylinux x86_64 wheels for "
                f"{python_tags(wheels[version])}, METADATA Requires-Python "
                f"{metadata.requires_python or 'not stated'}{arm.said}; {stamp()}"
            ),
            platform_defaults=arm.platform_defaults,
        )
        history.add(release)
        releases.append(release)
    notes.extend(aarch64_note(reader, releases))
    return Derived(tuple(releases), tuple(notes), frozenset(read), frozenset(cuda_read), frozenset(offered))


def derive(reader: IndexReader, known: Sequence[Release], catalog: Catalog) -> Derived:
    """The releases of ``reader.options.framework`` the selection names, as the indexes state
    them; ``known``: the releases of the file being refreshed; ``catalog``: the driver table
    every CUDA build must be in."""
    framework = reader.options.framework
    if framework is None:
        raise ValueError("derive is for a framework: the CUDA packages have derive_packages")
    derive_one = {
        Framework.TORCH: torch_releases,
        Framework.JAX: jax_releases,
        Framework.TENSORFLOW: tensorflow_releases,
    }[framework]
    found = derive_one(reader, History(known), known)
    notes = list(found.notes)
    proposed = proposed_toolkits(reader, found.releases, catalog, notes)
    if proposed:
        catalog = Catalog(catalog.toolkits + proposed, catalog.major_lines, catalog.releases)
    kept: list[Release] = []
    for release in found.releases:
        checked, dropped = _within_driver_table(release, catalog)
        notes.extend(dropped)
        if checked is not None:
            kept.append(checked)
    return dataclasses.replace(found, releases=tuple(kept), notes=tuple(notes), toolkits=proposed)


def _within_driver_table(release: Release, catalog: Catalog) -> tuple[Release | None, list[str]]:
    """``release`` less the CUDA builds the driver table has no entry for (a catalog that
    names them would not load), with a note for each; None when its default build goes."""
    kept, notes = [], []
    for variant in release.variants:
        if variant.cuda is not None and (
            catalog.floor_driver(variant.cuda) is None or catalog.toolkit_driver(variant.cuda) is None
        ):
            notes.append(
                f"{release.framework} {release.version} {variant.name} left out: "
                f"drivers.toml has no driver for CUDA {variant.cuda} (add a [[toolkit]] "
                "entry, then refresh again)"
            )
            continue
        kept.append(variant)
    if release.default_variant is not None and release.default_variant not in {v.name for v in kept}:
        notes.append(
            f"{release.framework} {release.version} left out: its default build {release.default_variant} is"
        )
        return None, notes
    defaults = tuple((p, n) for p, n in release.platform_defaults if any(v.name == n for v in kept))
    notes.extend(
        f"{release.framework} {release.version}: platform_defaults.{p} not proposed: its build {n} is "
        "left out"
        for p, n in release.platform_defaults
        if (p, n) not in defaults
    )
    return dataclasses.replace(release, variants=tuple(kept), platform_defaults=defaults), notes
