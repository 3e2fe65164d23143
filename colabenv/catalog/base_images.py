"""``base_images.toml``: the base image of a container definition per target (platform,
accelerator kind, ROCm, Python), each entry with its source (docs/containers.md, "The base").
Pure after the bytes are read; the shipped file is read once per process."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from colabenv._util.reader import Reader
from colabenv._util.resources import catalog_dir
from colabenv.errors import CatalogError, printable
from colabenv.models import Accelerator, BaseImage

BASE_IMAGES_FILE = "base_images.toml"
PLATFORMS = ("linux_x86_64", "linux_aarch64")
ACCELERATORS = tuple(kind.value for kind in Accelerator)
"""The accelerator kinds, as a target names them (``nvidia``, ``rocm``, ``tpu``, ``cpu``)."""
_ROCM_RE = re.compile(r"[0-9]{1,2}\.[0-9]{1,2}", re.ASCII)
_PYTHON_RE = re.compile(r"3\.[0-9]{1,2}t?", re.ASCII)


def _words(item: Reader, name: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    found = item.text_list(name, required=True)
    for index, word in enumerate(found):
        if word not in allowed:
            raise item.fail(name, f"{printable(word)[:40]!r} is not one of {', '.join(allowed)}", index=index)
    return tuple(found)


def _image(item: Reader) -> BaseImage:
    item.allow(
        "platforms", "accelerators", "rocm", "pythons", "image", "externally_managed", "note", "source"
    )
    accelerators = _words(item, "accelerators", ACCELERATORS)
    rocm = item.text("rocm") if "rocm" in item.data else None
    if (rocm is not None) != (accelerators == ("rocm",)):
        raise item.fail("rocm", 'expected rocm = "X.Y" on an entry for the rocm accelerator alone')
    if rocm is not None and not _ROCM_RE.fullmatch(rocm):
        raise item.fail("rocm", "expected a ROCm version X.Y")
    pythons = tuple(item.matching_list("pythons", _PYTHON_RE, "expected a Python X.Y"))
    return BaseImage(
        platforms=_words(item, "platforms", PLATFORMS),
        accelerators=accelerators,
        image=item.text("image"),
        source=item.text("source"),
        rocm=rocm,
        pythons=pythons,
        externally_managed=item.flag("externally_managed", False),
        note=item.text("note", "", empty=True),
    )


def base_images(doc: Reader) -> tuple[BaseImage, ...]:
    """The entries of a ``base_images.toml`` document, validated."""
    doc.allow("schema", "image")
    return tuple(_image(item) for item in doc.tables("image", required=True))


def load_base_images(path: Path, data: bytes) -> tuple[BaseImage, ...]:
    from colabenv.catalog.document import parse_document

    return base_images(parse_document(path, data, CatalogError))


@functools.lru_cache(maxsize=1)
def shipped_base_images() -> tuple[BaseImage, ...]:
    """The shipped ``base_images.toml``, read once per process."""
    path = catalog_dir() / BASE_IMAGES_FILE
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogError(path, None, f"cannot read: {exc.strerror or exc}") from None
    return load_base_images(path, data)
