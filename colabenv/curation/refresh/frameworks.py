"""What ``catalog refresh`` derives for each framework (see :mod:`colabenv.curation.refresh.sources`), and
:func:`derive`, which asks the one a refresh is for and keeps what the driver table allows."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from colabenv.curation.refresh.sources import (
    PYTORCH_INDEX,
    Derived,
    History,
    IndexReader,
    Metadata,
    RefreshProblem,
    Wheel,
    by_version,
    carried_archs,
    cuda_of_pins,
    cuda_of_tag,
    narrower_python,
    nvidia_pins,
    preferred,
    proposed_toolkits,
    python_range,
    python_strings,
    requirements_of,
    selected_versions,
    stamp,
    variant_model,
)
from colabenv.models import Arch, Catalog, Companion, Framework, Release, Source, Variant
from colabenv.models.frameworks import FACTS

JAXLIB = FACTS[Framework.JAX].required_companions[0]
_BUILD_INFO = re.compile(r"OrderedDict\((\[.*\])\)", re.DOTALL)


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", "replace")


def _public_or_none(text: str | None) -> Version | None:
    if not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _pythons(wheels: Sequence[Wheel]) -> str:
    minors = sorted({p for w in wheels for p in w.pythons}, key=lambda p: int(p.split(".")[1]))
    return f"cp{minors[0].replace('.', '')} to cp{minors[-1].replace('.', '')}" if minors else "no cpXY tag"


def _pinned(specifier: SpecifierSet) -> Version | None:
    """The one version ``==X`` or ``<=X,>=X`` admits."""
    exact = [s.version for s in specifier if s.operator in ("==", "===")]
    if exact and "*" not in exact[0]:
        return _public_or_none(exact[0])
    lows = {s.version for s in specifier if s.operator == ">="}
    highs = {s.version for s in specifier if s.operator == "<="}
    if len(lows) == 1 and lows == highs:
        return _public_or_none(lows.pop())
    return None


def _archs(
    reader: IndexReader,
    wheels: Sequence[Wheel],
    history: History,
    version: Version,
    name: str,
    members: Sequence[str] = (),
) -> tuple[tuple[Arch, ...], str | None, str] | None:
    """(archs, the unconfirmed reason or None, where they come from); None when there is
    neither a wheel with GPU code to read nor a previous build to carry them from."""
    if reader.options.read_archs:
        archs = reader.archs(wheels, members)
        if archs:
            names = " and ".join(w.file.filename for w in wheels)
            return archs, None, f"archs: what every library with GPU code carries in {names}"
        why = "no library with GPU code found in the wheel"
    else:
        why = "the wheels were not read (--archs carry)"
    carried = carried_archs(history, version, name, why)
    if carried is None:
        return None
    return carried[0], carried[1], carried[1]


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
        pinned = _pinned(torch[0].specifier)
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
        built = _public_or_none(
            python_strings(_text(reader.member(preferred(wheels[candidate]), path))).get("__version__")
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
    label = options.index_label
    notes: list[str] = []
    read: set[tuple[Version, str]] = set()
    default_wheels = by_version(reader.wheels(options.index, "torch", required=True))
    versions = selected_versions(default_wheels, known, options.releases)
    on_index: dict[tuple[Version, str], list[Wheel]] = {}
    if options.pytorch_index is not None:
        for wheel in reader.wheels(options.pytorch_index, "torch", required=True):
            local = wheel.version.local
            if local is not None and (local == "cpu" or cuda_of_tag(local) is not None):
                on_index.setdefault((Version(wheel.version.public), local), []).append(wheel)
    releases = []
    for version in versions:
        wheels = default_wheels[version]
        main = preferred(wheels)
        metadata = reader.metadata(main)
        pins = nvidia_pins(requirements_of(metadata))
        info = python_strings(_text(reader.member(main, "torch/version.py")))
        built = _public_or_none(info.get("__version__"))
        cuda = _public_or_none(info.get("cuda")) or cuda_of_pins(pins)
        if cuda is None:
            notes.append(
                f"torch {version} left out: its default wheel names no CUDA (torch/version.py, pins)"
            )
            continue
        cuda = Version(f"{cuda.major}.{cuda.minor}")
        name = built.local if built is not None and built.local else f"cu{cuda.major}{cuda.minor}"
        variants: dict[str, Variant] = {}
        found = _archs(reader, [main], history, version, name)
        if found is None:
            notes.append(
                f"torch {version} left out: no arch list for {name} (no GPU code read, "
                "no previous build to carry it from)"
            )
            continue
        archs, unconfirmed, archs_source = found
        if unconfirmed is None:
            read.add((version, name))
        variants[name] = variant_model(
            name,
            cuda=cuda,
            index_url=f"{PYTORCH_INDEX}/{name}",
            local_tag=name,
            archs=archs,
            pins=pins,
            unconfirmed=unconfirmed,
            source=f"{label} default build: {main.file.filename} METADATA Requires-Dist (markers "
            f"dropped) and torch/version.py ({built or 'no __version__'}, CUDA {cuda}); "
            f"{archs_source}; {stamp()}",
        )
        if options.pytorch_index is not None:
            _index_variants(reader, history, version, name, on_index, variants, read, notes)
        else:
            _carried_cpu(history, version, variants, notes)
        companions, said = [], []
        release_python = python_range(wheels, metadata.requires_python)
        for project in FACTS[Framework.TORCH].companions:
            companion, why = _torch_companion(reader, project, version, name, history)
            said.append(why)
            if companion is None:
                notes.append(f"torch {version}: {why}")
            elif companion.python is not None and not narrower_python(companion.python, release_python):
                companions.append(Companion(companion.name, companion.version, companion.follows_variant))
            else:
                companions.append(companion)
        release = Release(
            Framework.TORCH,
            version,
            release_python,
            tuple(variants.values()),
            name,
            tuple(companions),
            Source(
                f"{label} torch {version}: manylinux x86_64 wheels for {_pythons(wheels)}, "
                f"Requires-Python {metadata.requires_python or 'not stated'}; companions: "
                f"{'; '.join(said)}; variants: "
                f"{'the PyTorch index' if options.pytorch_index else 'the default build only'}"
                f"; {stamp()}"
            ),
        )
        history.add(release)
        releases.append(release)
    cuda_read = frozenset((r.version, v.name) for r in releases for v in r.variants if v.cuda)
    offered = {key for key in on_index} | {(r.version, r.default_variant or "") for r in releases}
    return Derived(tuple(releases), tuple(notes), frozenset(read), cuda_read, frozenset(offered))


def _index_variants(
    reader: IndexReader,
    history: History,
    version: Version,
    default: str,
    on_index: dict[tuple[Version, str], list[Wheel]],
    variants: dict[str, Variant],
    read: set[tuple[Version, str]],
    notes: list[str],
) -> None:
    """The ``+cuXYZ`` and ``+cpu`` builds of ``version`` on the PyTorch index."""
    tags = sorted(
        (tag for v, tag in on_index if v == version),
        key=lambda tag: (tag == "cpu", cuda_of_tag(tag) or Version("0")),
    )
    if not tags:
        notes.append(f"torch {version}: no build on the PyTorch index")
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
        found = _archs(reader, [wheel], history, version, tag)
        if found is None:
            notes.append(
                f"torch {version} {tag} left out: no arch list (no GPU code read, no "
                "previous build to carry it from)"
            )
            continue
        archs, unconfirmed, archs_source = found
        if unconfirmed is None:
            read.add((version, tag))
        metadata = reader.metadata(wheel)
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
    wheels = by_version(reader.wheels(options.index, "jax", required=True))
    offered: set[tuple[Version, str]] = set()
    releases = []
    for version in selected_versions(wheels, known, options.releases):
        wheel = preferred(wheels[version])
        metadata = reader.metadata(wheel)
        jaxlib = None
        for extra in ("cuda12", "cuda", "cuda13", None):
            for requirement in requirements_of(metadata, extra):
                if canonicalize_name(requirement.name) == JAXLIB and jaxlib is None:
                    jaxlib = _pinned(requirement.specifier)
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
        variants: dict[str, Variant] = {}
        default = None
        for extra in sorted(metadata.extras):
            match = re.fullmatch(r"cuda(\d+)", extra)
            if match is None:
                continue
            offered.add((version, extra))
            variant = _jax_variant(
                reader,
                history,
                version,
                extra,
                int(match.group(1)),
                requirements_of(metadata, extra),
                read,
                notes,
            )
            if variant is not None:
                variants[extra] = variant
        for requirement in requirements_of(metadata, "cuda"):
            plugin = re.fullmatch(r"jax-(cuda\d+)-plugin", canonicalize_name(requirement.name))
            if plugin and plugin.group(1) in variants:
                default = plugin.group(1)
        if not variants:
            notes.append(f"jax {version} left out: no cudaNN extra with a build that could be read")
            continue
        default = default or ("cuda12" if "cuda12" in variants else sorted(variants)[0])
        variants["cpu"] = variant_model(
            "cpu",
            source=f"{options.index_label} jax {version} with {JAXLIB} {jaxlib} and no GPU "
            f"extra (pip install jax is the CPU-only install); {stamp()}",
        )
        release = Release(
            Framework.JAX,
            version,
            python,
            tuple(variants.values()),
            default,
            (Companion(JAXLIB, jaxlib, False),),
            Source(
                f"{options.index_label} jax {version} METADATA (Requires-Python "
                f"{metadata.requires_python or 'not stated'}; its cuda extras pin {JAXLIB} "
                f"{jaxlib}); {JAXLIB} {jaxlib} manylinux x86_64 wheels for "
                f"{_pythons(jaxlib_wheels)}; {stamp()}"
            ),
        )
        history.add(release)
        releases.append(release)
    return Derived(tuple(releases), tuple(notes), frozenset(read), offered=frozenset(offered))


def _jax_variant(
    reader: IndexReader,
    history: History,
    version: Version,
    extra: str,
    major: int,
    requirements: list[Requirement],
    read: set[tuple[Version, str]],
    notes: list[str],
) -> Variant | None:
    options = reader.options
    plugin_name = f"jax-cuda{major}-plugin"
    plugin = [r for r in requirements if canonicalize_name(r.name) == plugin_name]
    own_pins = nvidia_pins(requirements)
    archs_wheels: list[Wheel] = []
    if plugin:
        # the plugin may lag jax by a patch release: the newest one the extra admits
        plugins = by_version(reader.wheels(options.index, plugin_name))
        admitted = [v for v in plugins if plugin[0].specifier.contains(v, prereleases=True)]
        if not admitted:
            notes.append(
                f"jax {version} {extra} left out: no Linux x86_64 wheel of {plugin_name}{plugin[0].specifier}"
            )
            return None
        plugin_wheel = preferred(plugins[max(admitted)])
        plugin_metadata = reader.metadata(plugin_wheel)
        plugin_pins = nvidia_pins(requirements_of(plugin_metadata, "with-cuda"))
        pins = tuple(dict.fromkeys((*own_pins, *plugin_pins)))
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
        archs_wheels.append(plugin_wheel)
        pjrt_name = f"jax-cuda{major}-pjrt"
        for requirement in requirements_of(plugin_metadata):
            pjrt = _pinned(requirement.specifier)
            if canonicalize_name(requirement.name) == pjrt_name and pjrt is not None:
                pjrt_wheels = by_version(reader.wheels(options.index, pjrt_name)).get(pjrt)
                if pjrt_wheels:
                    archs_wheels.append(preferred(pjrt_wheels))
    else:
        pins = own_pins
        pins_source = f"jax {version} METADATA Requires-Dist extra {extra}"
    if not pins:
        notes.append(f"jax {version} {extra} left out: it pins no NVIDIA wheel")
        return None
    previous = history.variant_before(version, extra)
    if previous is not None and previous[1].cuda is not None:
        cuda = previous[1].cuda
        cuda_source = (
            f"cuda: carried over from {previous[0].version} (no index states the CUDA the build used)"
        )
    else:
        cuda = cuda_of_pins(pins) or Version(f"{major}.0")
        cuda_source = "cuda: the CUDA runtime the pins ask for at least"
    found_archs = (
        _archs(reader, archs_wheels, history, version, extra)
        if archs_wheels
        else _archs_carried_only(history, version, extra)
    )
    if found_archs is None:
        notes.append(
            f"jax {version} {extra} left out: no arch list (no GPU code read, no "
            "previous build to carry it from)"
        )
        return None
    archs, unconfirmed, archs_source = found_archs
    if unconfirmed is None:
        read.add((version, extra))
    return variant_model(
        extra,
        cuda=cuda,
        extra=extra,
        archs=archs,
        pins=pins,
        unconfirmed=unconfirmed,
        source=f"pins: {pins_source}; {archs_source}; {cuda_source}; {stamp()}",
    )


def _archs_carried_only(
    history: History, version: Version, name: str
) -> tuple[tuple[Arch, ...], str | None, str] | None:
    carried = carried_archs(history, version, name, "the build has no plugin wheel to read")
    return None if carried is None else (carried[0], carried[1], carried[1])


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
    for version in selected_versions(wheels, known, options.releases):
        main = preferred(wheels[version])
        metadata = reader.metadata(main)
        info = build_info(_text(reader.member(main, "tensorflow/python/platform/build_info.py")))
        extra = "and-cuda" if "and-cuda" in metadata.extras else None
        name = extra or "cuda"
        pins = nvidia_pins(requirements_of(metadata, extra)) if extra else ()
        cuda = _public_or_none(str(info.get("cuda_version") or ""))
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
            found = _archs(reader, [main], history, version, name, ("libtensorflow*",))
        elif isinstance(capabilities, list) and capabilities:
            try:
                listed = tuple(sorted(Arch.parse(str(c)) for c in capabilities))
            except ValueError:
                listed = ()
            if listed:
                found = (listed, None, "archs: build_info.py cuda_compute_capabilities")
        if found is None:
            found = _archs_carried_only(history, version, name)
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
        release = Release(
            Framework.TENSORFLOW,
            version,
            python_range(wheels[version], metadata.requires_python),
            (gpu, cpu),
            name,
            (),
            Source(
                f"{options.index_label} tensorflow {version}: manylinux x86_64 wheels for "
                f"{_pythons(wheels[version])}, METADATA Requires-Python "
                f"{metadata.requires_python or 'not stated'}; {stamp()}"
            ),
        )
        history.add(release)
        releases.append(release)
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
    return Derived(tuple(kept), tuple(notes), found.archs_read, found.cuda_read, found.offered, proposed)


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
    return Release(
        release.framework,
        release.version,
        release.python,
        tuple(kept),
        release.default_variant,
        release.companions,
        release.source,
    ), notes
