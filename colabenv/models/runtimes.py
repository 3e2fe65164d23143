"""Colab runtime versions a notebook can pin (``colab-2026.07``): the Python of each, and what
each of its images (GPU, CPU, TPU) ships installed, as ``runtimes.toml`` records them from
googlecolab/backend-info."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from packaging.version import Version

from colabenv.models.base import Accelerator
from colabenv.models.catalog import Source
from colabenv.models.frozen import model
from colabenv.models.installed import InstalledDist, InstalledSet

if TYPE_CHECKING:  # annotations only, canonicalize_name imported where used: see colabenv.models.catalog
    from packaging.utils import NormalizedName

LATEST = "colab-latest"
"""The runtime id of the image a fresh notebook gets (googlecolab/backend-info's head, dated):
``--runtime colab-latest`` names the newest runtime the catalog knows."""


@model
class RuntimeImage:
    """One image of a runtime version: for ``accelerator``, the distributions its ``pip
    freeze`` lists (``pins``: ``name==version`` lines, checked when the file is read), the file
    they were read from, and for a GPU image the CUDA toolkit its apt packages install
    (``cuda-cudart-12-8`` is 12.8) and those apt packages (name=version)."""

    accelerator: Accelerator
    freeze_file: str
    pins: str
    cuda_toolkit: Version | None = None
    apt: tuple[str, ...] = ()

    @functools.cached_property
    def installed(self) -> InstalledSet:
        """Parsed on first use: a command uses one image of one runtime version."""
        from packaging.utils import canonicalize_name

        found: dict[NormalizedName, str] = {}
        for line in self.pins.split():
            name, _, version = line.partition("==")
            found.setdefault(canonicalize_name(name), version)
        return InstalledSet(tuple(InstalledDist(n, v) for n, v in sorted(found.items())))


@model
class ColabRuntime:
    """A runtime version: its id (``colab-2026.07``, or ``colab-latest`` for upstream's head),
    the Python of its images, the upstream commit its facts were read at, its images (one per
    accelerator), and the date of that commit where it is recorded (the head's)."""

    id: str
    python: Version
    os: str
    commit: str
    source: Source
    images: tuple[RuntimeImage, ...]
    date: str | None = None
    """``2026-08-19``: the day of the upstream commit (recorded for ``colab-latest``)."""
    glibc: Version | None = None
    """The glibc of its images (``2.35``: their ``libc6`` package), where recorded: the newest
    ``manylinux_2_N`` wheel they install."""

    @property
    def dated(self) -> str:
        """The runtime's date: its commit's day, else the version its id names (``2026.07``)."""
        return self.date or self.id.removeprefix("colab-")

    @property
    def kinds(self) -> tuple[Accelerator, ...]:
        """The accelerators it has an image for (every runtime the shipped table lists: the
        GPU's, the CPU's and the TPU's; Colab has no AMD GPUs)."""
        return tuple(image.accelerator for image in self.images)

    def image(self, accelerator: Accelerator) -> RuntimeImage:
        """The image of ``accelerator``, one of :attr:`kinds` (a caller checks that first)."""
        found = {image.accelerator: image for image in self.images}.get(accelerator)
        if found is None:
            raise LookupError(f"{self.id} has no {accelerator} image")
        return found


@model
class RuntimeFacts:
    """The runtime versions colabenv knows, newest first."""

    runtimes: tuple[ColabRuntime, ...] = ()

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(runtime.id for runtime in self.runtimes)

    def get(self, runtime_id: str) -> ColabRuntime | None:
        """The runtime of ``runtime_id``; ``colab-latest``: the newest one known (upstream's head
        where the file has it, else the newest version)."""
        if runtime_id == LATEST:
            return self.runtimes[0] if self.runtimes else None
        for runtime in self.runtimes:
            if runtime.id == runtime_id:
                return runtime
        return None
