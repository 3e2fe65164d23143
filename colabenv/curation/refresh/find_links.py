"""What a find-links page's name and its wheels' local tags say of the builds ``catalog refresh
packages`` reads there (torch-scatter's and pyg-lib's data.pyg.org pages, flash-attn's release
asset page): the torch and the CUDA each is for, the releases and builds a page holds, and the
pages for newer torch releases looked for beside the named ones
(:mod:`colabenv.curation.refresh.packages`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.curation.refresh.sources import Wheel, cuda_of_tag
from colabenv.models import CudaPackage, PackageBuild

_PAGE_NAME = re.compile(r"torch-(\d+\.\d+\.\d+)\+(cu\d{3}|cpu)\.html$")
"""A data.pyg.org find-links page: the torch release and CUDA build its wheels are built for."""
_TAG_CUDA = re.compile(r"cu(\d{2})(\d)(?!\d)")
"""``pt28cu126`` -> CUDA 12.6 (a ``cuNNN`` inside a local tag)."""
_TAG_TORCH = re.compile(r"^pt(\d)(\d{1,2})cu|torch(\d+)\.(\d+)")
"""``pt28cu126``, ``pt211cu128`` (torch 2.8, 2.11) and ``cu12torch2.8cxx11abiTRUE``."""


def page_cuda(page: str, tag: str | None) -> tuple[Version | None, str]:
    """The CUDA a find-links build is for: the page's name (``torch-2.8.0+cu126.html``), else a
    ``cuNNN`` in its local tag; None when neither says."""
    named = _PAGE_NAME.search(page)
    if named is not None and named.group(2) != "cpu":
        return cuda_of_tag(named.group(2)), f"cuda: the find-links page's name (+{named.group(2)})"
    found = _TAG_CUDA.search(tag or "")
    if found is not None:
        return Version(f"{found.group(1)}.{found.group(2)}"), f"cuda: the local tag +{tag}"
    return None, ""


def page_torch(page: str, tag: str | None, previous: PackageBuild | None) -> tuple[SpecifierSet | None, str]:
    """The torch a find-links build is for, where its METADATA names none (or any): the page's
    name (``torch-2.9.0+cu128.html``: ==2.9.*, as data.pyg.org serves the binaries of a torch
    minor's every patch release from its .0 page), else its local tag (``pt28cu126``,
    ``cu12torch2.8``: ==2.8.*), else the build before's."""
    named = _PAGE_NAME.search(page)
    if named is not None:
        minor = ".".join(named.group(1).split(".")[:2])  # a page serves every patch release
        return SpecifierSet(f"=={minor}.*"), "torch: the find-links page's name; "
    found = _TAG_TORCH.search(tag or "")
    if found is not None:
        major, minor = (
            (found.group(1), found.group(2)) if found.group(1) else (found.group(3), found.group(4))
        )
        return SpecifierSet(f"=={major}.{minor}.*"), f"torch: the local tag +{tag}; "
    if previous is not None and previous.torch is not None:
        return previous.torch, f"torch: carried over from the build {previous.name} before; "
    return None, ""


def find_links_pages(package: CudaPackage) -> tuple[str, ...]:
    """The find-links pages the file's builds of ``package`` name, newest release first."""
    ordered = sorted(package.releases, key=lambda r: r.version, reverse=True)
    return tuple(dict.fromkeys(b.find_links for r in ordered for b in r.builds if b.find_links))


def by_local_tag(wheels: Sequence[Wheel]) -> list[tuple[Version, list[Wheel]]]:
    """A find-links page's wheels by public version and local tag (one build each)."""
    found: dict[tuple[Version, str], list[Wheel]] = {}
    for wheel in wheels:
        found.setdefault((Version(wheel.version.public), wheel.version.local or ""), []).append(wheel)
    return [(version, found[(version, tag)]) for version, tag in sorted(found)]


def guessed_pages(pages: Sequence[str], torch_builds: Sequence[tuple[Version, str]]) -> tuple[str, ...]:
    """The pages data.pyg.org would have for the torch releases newer than any the named pages
    are for: ``torch-X.Y.0+cuNNN.html`` beside them, for each such X.Y.0 release and CUDA build
    of ``torch_builds`` (a site names one page per torch minor, by its .0 release)."""
    named = [(m, page) for page in pages if (m := _PAGE_NAME.search(page)) is not None]
    if not named:
        return ()
    newest = max(Version(m.group(1)) for m, _ in named)
    folders = dict.fromkeys(page[: m.start()] for m, page in named)
    return tuple(
        page
        for folder in folders
        for version, tag in sorted(torch_builds)
        if version > newest and version.micro == 0 and cuda_of_tag(tag) is not None
        if (page := f"{folder}torch-{version}+{tag}.html") not in pages
    )
