"""Whether a TensorFlow release has a linux_aarch64 build, as ``catalog refresh tensorflow`` reads
it: the plain ``tensorflow`` wheel's ``manylinux_*_aarch64`` files of the release on the index it
reads (the page read for the x86-64 wheels: no other request). Where there are some, the plain
wheel a linux_aarch64 host installs is the release's CPU build, which the file says with
``platform_defaults = { linux_aarch64 = "cpu" }`` (a CPU build serves every platform); where
there are none, nothing. An ``and-cuda`` build is never written for linux_aarch64: TensorFlow
publishes its CUDA install for Linux x86-64 alone (tensorflow.org/install/pip), and its aarch64
wheel is a CPU build. One note per refresh says which releases have the files."""

from __future__ import annotations

from collections.abc import Sequence

from packaging.version import Version

from colabenv.curation.refresh.aarch64_builds import AARCH64, manylinux_aarch64
from colabenv.curation.refresh.build_facts import python_tags
from colabenv.curation.refresh.sources import IndexReader, Wheel, preferred
from colabenv.models import Release
from colabenv.models.frozen import model

CPU = "cpu"
"""The name of a TensorFlow release's CPU build (its plain wheel without the GPU extra)."""
NO_CUDA = (
    "no and-cuda build is written for linux_aarch64 (TensorFlow's CUDA install is for Linux x86-64 "
    "alone, tensorflow.org/install/pip; its aarch64 wheel is a CPU build)"
)


@model
class TensorflowAarch64:
    """What the plain wheel's aarch64 files of one release say: its ``platform_defaults`` (none
    without files) and the release source's words on them (their platform tags, their Python
    tags, one file's name; "" without)."""

    platform_defaults: tuple[tuple[str, str], ...]
    said: str


def tensorflow_aarch64(reader: IndexReader, version: Version) -> TensorflowAarch64:
    """The plain ``tensorflow`` wheel's ``manylinux_*_aarch64`` files of ``version`` on the
    index refresh reads, and what they make of the release."""
    files = tuple(
        wheel
        for wheel in reader.wheels(reader.options.index, "tensorflow", platform=AARCH64)
        if wheel.version == version and any(manylinux_aarch64(t.platform) for t in wheel.tags)
    )
    if not files:
        return TensorflowAarch64((), "")
    said = (
        f"; {AARCH64}: the plain wheel's {', '.join(_tags(files))} files for {python_tags(files)} "
        f"({preferred(files).file.filename}), its CPU build there ({NO_CUDA})"
    )
    return TensorflowAarch64(((AARCH64, CPU),), said)


def aarch64_note(reader: IndexReader, releases: Sequence[Release]) -> list[str]:
    """One note on the releases derived: which have the plain wheel's aarch64 files (their
    ``platform_defaults``), which have none, and that no aarch64 ``and-cuda`` is written; none
    where no release was derived."""
    if not releases:
        return []
    having = [str(r.version) for r in releases if (AARCH64, CPU) in r.platform_defaults]
    without = [str(r.version) for r in releases if (AARCH64, CPU) not in r.platform_defaults]
    parts = [
        f"{', '.join(having)}: platform_defaults.{AARCH64} = {CPU} (its CPU build)" if having else "",
        f"none for {', '.join(without)}: no {AARCH64} build" if without else "",
    ]
    listed = "; ".join(p for p in parts if p)
    return [
        f"tensorflow: the plain wheel's {AARCH64} files on {reader.options.index_label}: {listed}; {NO_CUDA}"
    ]


def _tags(files: Sequence[Wheel]) -> list[str]:
    return sorted({t.platform for w in files for t in w.tags if manylinux_aarch64(t.platform)})
