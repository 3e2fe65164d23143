"""torch's linux_aarch64 CUDA builds as ``catalog refresh torch`` derives them: where the PyTorch
index's torch page has ``manylinux_2_28_aarch64`` wheels of a ``+cuXYZ`` build of a release, the
build is listed again for that platform (``platforms = ["linux_aarch64"]``), as the catalog lists
it: its CUDA from the tag, its pins from that wheel's METADATA (markers read as an aarch64 Linux
host reads them), its arch list read from that wheel's GPU code, else carried over from the
previous release's aarch64 build of the same name (unconfirmed), else left out with a note.

And which build the default index's plain ``manylinux_*_aarch64`` wheel of a release is (its
``platform_defaults``): read as the x86-64 default is, from its ``torch/version.py`` (its local
version, ``2.12.0+cu130``; its CUDA) and else its METADATA's NVIDIA pins (markers read for
aarch64); a wheel that names neither is the CPU build."""

from __future__ import annotations

from collections.abc import Sequence

from packaging.markers import Marker
from packaging.version import Version

from colabenv.curation.refresh.build_facts import (
    FrameworkRun,
    public_or_none,
    python_tags,
    read_else_carried,
    text_of,
)
from colabenv.curation.refresh.free_threaded import with_free_threaded
from colabenv.curation.refresh.sources import (
    PYTHONS,
    PYTORCH_INDEX,
    Metadata,
    Wheel,
    cuda_of_pins,
    cuda_of_tag,
    nvidia_pins,
    preferred,
    python_strings,
    stamp,
)
from colabenv.errors import IndexUnavailableError, printable
from colabenv.models import Arch, Source, Variant

AARCH64 = "linux_aarch64"
"""The platform these builds are listed for."""
_AARCH64_LINUX = {
    "platform_system": "Linux",
    "sys_platform": "linux",
    "platform_machine": "aarch64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}


def build_key(name: str) -> str:
    """How an aarch64 build is named where builds are keyed by name alone (the summary, the
    builds whose arch list was read): ``cu130 (linux_aarch64)``."""
    return f"{name} ({AARCH64})"


def aarch64_requirements(metadata: Metadata, extra: str | None = None) -> list[str]:
    """The NVIDIA pins of ``metadata`` that apply on an aarch64 Linux host for some Python: the
    wheel's own (``extra`` None), or those only ``extra`` adds (jax's plugin's ``with-cuda``)."""

    def applies(marker: Marker | None, asked: str) -> bool:
        return marker is None or any(
            marker.evaluate(
                {**_AARCH64_LINUX, "python_version": py, "python_full_version": f"{py}.0", "extra": asked}
            )
            for py in PYTHONS
        )

    def wanted(marker: Marker | None) -> bool:
        base = applies(marker, "")
        return base if extra is None else not base and applies(marker, extra)

    kept = [r for r in metadata.requires if wanted(r.marker)]
    return list(nvidia_pins(kept))


def aarch64_variants(run: FrameworkRun, version: Version) -> list[Variant]:
    """The linux_aarch64 ``+cuXYZ`` builds of torch ``version`` on the PyTorch index, newest CUDA
    first; a build with no arch list is left out (noted)."""
    index = run.reader.options.pytorch_index
    if index is None:
        return []
    by_tag: dict[str, list[Wheel]] = {}
    for wheel in run.reader.wheels(index, "torch", platform=AARCH64):
        local = wheel.version.local
        if Version(wheel.version.public) == version and local is not None and cuda_of_tag(local) is not None:
            by_tag.setdefault(local, []).append(wheel)
    found = []
    for tag in sorted(by_tag, key=lambda t: cuda_of_tag(t) or Version("0"), reverse=True):
        variant = _aarch64_variant(run, version, tag, by_tag[tag])
        if variant is not None:
            found.append(with_free_threaded(variant, by_tag[tag]))
    return found


def _aarch64_variant(run: FrameworkRun, version: Version, tag: str, wheels: list[Wheel]) -> Variant | None:
    wheel, metadata = run.main_wheel(wheels)
    archs = aarch64_archs(run, "torch", version, tag, (wheel,))
    if archs is None:
        return None
    listed, unconfirmed, archs_source = archs
    return Variant(
        name=tag,
        cuda=cuda_of_tag(tag),
        index_url=f"{PYTORCH_INDEX}/{tag}",
        local_tag=tag,
        extra=None,
        archs=listed,
        pin_texts=tuple(aarch64_requirements(metadata)),
        python=None,
        source=Source(
            f"PyTorch index: {wheel.file.filename} ({python_tags(wheels)}) METADATA Requires-Dist "
            f"(markers read for linux_aarch64); {archs_source}; {stamp()}"
        ),
        unconfirmed=unconfirmed,
        platforms=(AARCH64,),
    )


def aarch64_archs(
    run: FrameworkRun, framework: str, version: Version, name: str, wheels: Sequence[Wheel]
) -> tuple[tuple[Arch, ...], str | None, str] | None:
    """The arch list of ``framework``'s ``name`` build for linux_aarch64: (the list, the
    unconfirmed reason or None, where it comes from), read from what every library with GPU code
    in ``wheels`` carries, else carried over from the last release's aarch64 build of the same
    name; None, noted, where it is neither. Torch's builds and jax's plugins alike."""
    names = " and ".join(w.file.filename for w in wheels)
    key = build_key(name)

    def read() -> tuple[tuple[Arch, ...], str]:
        archs = run.reader.archs(list(wheels))
        if archs:
            return archs, f"archs: what every library with GPU code carries in {names}"
        return (), f"no library with GPU code found in {names}"

    def carried(why: str) -> tuple[tuple[Arch, ...], str] | None:
        for release in run.history.before(version):
            earlier = [v for v in release.variants if v.name == name and AARCH64 in v.platforms and v.archs]
            if earlier:
                return earlier[0].archs, f"archs carried over from {release.version} {key}: {why}"
        return None

    def left_out(why: str) -> str:
        return (
            f"{framework} {version} {key} left out: no arch list ({why}; no earlier build to carry it from)"
        )

    return read_else_carried(run, (version, key), read, carried, left_out)


def aarch64_default(
    run: FrameworkRun, version: Version, variants: Sequence[Variant]
) -> tuple[tuple[tuple[str, str], ...], str]:
    """torch ``version``'s ``platform_defaults`` (``(("linux_aarch64", "cu130"),)``) from the
    default index's plain aarch64 wheel, and what the release's source says of it; nothing where
    the index has no such wheel, or (noted) where it cannot be read or names a build ``variants``
    does not list for linux_aarch64."""
    wheels = [
        w
        for w in run.reader.wheels(run.reader.options.index, "torch", platform=AARCH64)
        if w.version == version and any(t.platform.endswith("_aarch64") for t in w.tags)
    ]
    if not wheels:
        return (), ""
    plain = preferred(wheels)
    try:
        pins = aarch64_requirements(run.reader.metadata(plain))
        info = python_strings(text_of(run.reader.member(plain, "torch/version.py")))
    except IndexUnavailableError as problem:
        run.notes.append(
            f"torch {version}: the plain {AARCH64} wheel {printable(plain.file.url)} was not read "
            f"({printable(problem)}): platform_defaults not proposed"
        )
        return (), ""
    built = public_or_none(info.get("__version__"))
    cuda = public_or_none(info.get("cuda")) or cuda_of_pins(pins)
    cpu = next((v.name for v in variants if v.is_cpu), "cpu")
    if built is not None and built.local:
        name, how = built.local, f"torch/version.py {built}"
    elif cuda is not None:
        name = f"cu{cuda.major}{cuda.minor}"
        how = f"CUDA {cuda.major}.{cuda.minor} (torch/version.py, else its NVIDIA pins)"
    else:
        name, how = cpu, "no CUDA in torch/version.py nor NVIDIA pins: the CPU build"
    if not any(v.name == name and (v.is_cpu or AARCH64 in v.platforms) for v in variants):
        run.notes.append(
            f"torch {version}: the plain {AARCH64} wheel ({plain.file.filename}) is {name}, a build "
            f"not listed for {AARCH64}: platform_defaults not proposed"
        )
        return (), ""
    return ((AARCH64, name),), f"; {AARCH64} plain wheel ({name}): {plain.file.filename} ({how})"


def manylinux_aarch64(platform: str) -> bool:
    """Whether a wheel's platform tag is a manylinux one for aarch64 (``manylinux_2_28_aarch64``)."""
    return platform.startswith("manylinux") and platform.endswith("_aarch64")
