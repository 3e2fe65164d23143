"""torch's ROCm builds as ``catalog refresh torch`` derives them: the ``+rocmX.Y`` wheels the PyTorch
index's torch page lists, each a build named by its local tag (``rocm7.1``, ``rocm = "7.1"``), its
Python range from its wheels' tags, and its gfx list read from the HIP offload bundles of torch's
own libraries (:mod:`colabenv.curation.offload_bundles`); where that is not read, the list of the
previous release's build of the same name is carried over and the build marked unconfirmed,
and with no such build it is left out (a ROCm build without its gfx list would not load)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.curation.refresh.build_facts import FrameworkRun, python_tags, read_else_carried
from colabenv.curation.refresh.sources import (
    PYTORCH_INDEX,
    IndexReader,
    RefreshProblem,
    Wheel,
    narrower_python,
    python_range,
    stamp,
)
from colabenv.errors import IndexUnavailableError, InputError
from colabenv.models import Source, Variant

if TYPE_CHECKING:
    from colabenv.curation.offload_bundles import WheelGfx

_ROCM_TAG = re.compile(r"rocm(\d{1,2}\.\d{1,2}(?:\.\d{1,3})?)")
TORCH_OWN_LIBRARIES = ("libtorch*", "libc10*", "libcaffe2*")
"""torch's own shared objects: the ROCm libraries bundled beside them (hipBLASLt, MIOpen)
carry their own, narrower gfx lists, which are not ``PYTORCH_ROCM_ARCH``."""


def rocm_of_tag(tag: str) -> Version | None:
    """``rocm7.1`` -> 7.1, ``rocm6.2.4`` -> 6.2.4; None for any other tag."""
    match = _ROCM_TAG.fullmatch(tag)
    return Version(match.group(1)) if match else None


def project_page(index: str) -> str:
    """The torch page of ``index``, where the ROCm wheels are listed (the source names it)."""
    return f"{index.rstrip('/')}/torch/"


def rocm_variants(
    run: FrameworkRun,
    version: Version,
    on_index: dict[tuple[Version, str], list[Wheel]],
    release_python: SpecifierSet,
) -> list[Variant]:
    """The ROCm builds of torch ``version`` on the PyTorch index, oldest ROCm first; a build
    with no gfx list is left out (noted)."""
    tags = sorted(
        (tag for v, tag in on_index if v == version and rocm_of_tag(tag) is not None),
        key=lambda tag: rocm_of_tag(tag) or Version("0"),
    )
    found = []
    for tag in tags:
        variant = _rocm_variant(run, version, tag, on_index[(version, tag)], release_python)
        if variant is not None:
            found.append(variant)
    return found


def _rocm_variant(
    run: FrameworkRun, version: Version, tag: str, wheels: Sequence[Wheel], release_python: SpecifierSet
) -> Variant | None:
    options = run.reader.options
    wheel, metadata = run.main_wheel(wheels)
    gfx = _gfx(run, version, tag, wheel)
    if gfx is None:
        return None
    listed, unconfirmed, gfx_source = gfx
    try:
        python: SpecifierSet | None = python_range(wheels, metadata.requires_python)
    except RefreshProblem:
        python = None
    if python is not None and not narrower_python(python, release_python):
        python = None
    page = project_page(options.pytorch_index or PYTORCH_INDEX)
    return Variant(
        name=tag,
        cuda=None,
        index_url=f"{PYTORCH_INDEX}/{tag}",
        local_tag=tag,
        extra=None,
        archs=(),
        pin_texts=(),
        python=python,
        source=Source(
            f"PyTorch index page {page}: {wheel.file.filename} ({python_tags(wheels)}, Requires-Python "
            f"{metadata.requires_python or 'not stated'}); rocm: the local tag {tag}; {gfx_source}; {stamp()}"
        ),
        unconfirmed=unconfirmed,
        rocm=rocm_of_tag(tag),
        gfx=listed,
    )


def _gfx(
    run: FrameworkRun, version: Version, tag: str, wheel: Wheel
) -> tuple[tuple[str, ...], str | None, str] | None:
    """(the gfx list, the unconfirmed reason or None, where it comes from) of build ``tag``;
    None, noted, where it was neither read nor can be carried over."""

    def carried(why: str) -> tuple[tuple[str, ...], str] | None:
        previous = run.history.variant_before(version, tag)
        if previous is None or not previous[1].gfx:
            return None
        return previous[1].gfx, f"gfx carried over from {previous[0].version} {tag}: {why}"

    def left_out(why: str) -> str:
        return f"torch {version} {tag} left out: no gfx list ({why}; no earlier {tag} build to carry it from)"

    return read_else_carried(run, (version, tag), lambda: _read_gfx(run, wheel), carried, left_out)


def wheel_gfx(reader: IndexReader, wheel: Wheel, libraries: Sequence[str] = ()) -> WheelGfx:
    """What the HIP offload bundles of ``wheel``'s shared objects (those named ``libraries``,
    else all) say, read within the refresh's bounds, its progress said; InputError where the
    wheel cannot be read. The one reader of torch's, jax's and the CUDA packages' ROCm wheels."""
    from colabenv.curation.offload_bundles import read_wheel_gfx

    options = reader.options
    reader.progress(f"reading the GPU code of {wheel.file.filename}")
    return read_wheel_gfx(
        wheel.file.url,
        libraries,
        max_member=options.max_wheel_bytes,
        max_download=options.max_wheel_bytes,
        timeout=options.timeout_s,
    )


def _read_gfx(run: FrameworkRun, wheel: Wheel) -> tuple[tuple[str, ...], str]:
    """The gfx every one of torch's own libraries with offload bundles carries in ``wheel``, and
    where it was read (empty, and why: nothing could be read)."""
    try:
        found = wheel_gfx(run.reader, wheel, TORCH_OWN_LIBRARIES)
    except InputError as problem:
        raise IndexUnavailableError(str(problem)) from None
    if found.common:
        names = ", ".join(library.path.rsplit("/", 1)[-1] for library in found.libraries)
        return found.common, (
            f"gfx: the targets every HIP offload bundle names in {names} of {wheel.file.filename}"
        )
    if found.unread:
        return (), f"{found.unread} compressed HIP offload bundle(s) in the wheel cannot be unpacked here"
    return (), "no HIP offload bundle found in torch's libraries in the wheel"
