"""``gpu_products.toml``: each GPU type a profile names (``[job] gpu_type``, ``--gpu-type``)
with the values a node's label has for it, each entry with its source (docs/catalog.md): for an
NVIDIA GPU (``products``), what NVIDIA GPU Feature Discovery writes in ``nvidia.com/gpu.product``;
for an AMD GPU (``device_ids``), what AMD's node labeller writes in ``amd.com/gpu.device-id``
(the PCI device ID, lowercase hex). Pure after the bytes are read; the shipped file is read once
per process."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path

from colabenv._util.reader import Reader
from colabenv._util.resources import catalog_dir
from colabenv.errors import CatalogError, printable
from colabenv.models.frozen import model

GPU_PRODUCTS_FILE = "gpu_products.toml"
_TYPE_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,31}", re.ASCII)
_PRODUCT_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?", re.ASCII)
"""A Kubernetes label value (at most 63 characters; letters, digits, '-', '_', '.' inside)."""
_DEVICE_ID_RE = re.compile(r"[0-9a-f]{4}", re.ASCII)
"""A PCI device ID as the labeller writes it: sysfs's ``0x74a1`` without the ``0x``."""
NVIDIA = "nvidia"
AMD = "amd"


@model
class GpuType:
    """One GPU type, the label values of its GPUs (NVIDIA's product names, or AMD's device
    IDs) and whose GPUs they are (``nvidia`` or ``amd``)."""

    name: str
    products: tuple[str, ...]
    source: str
    vendor: str = NVIDIA


def _entry(item: Reader) -> GpuType:
    item.allow("type", "products", "device_ids", "source")
    name = item.text("type")
    if not _TYPE_RE.fullmatch(name):
        raise item.fail("type", "expected lowercase letters, digits and '-', at most 32")
    if "products" in item.data and "device_ids" in item.data:
        raise item.fail(None, "expected products or device_ids, not both")
    key, vendor, pattern, what = (
        ("device_ids", AMD, _DEVICE_ID_RE, "a PCI device ID: four lowercase hex digits")
        if "device_ids" in item.data
        else ("products", NVIDIA, _PRODUCT_RE, "a label value: letters, digits, '-', '_', '.'")
    )
    values = item.matching_list(key, pattern, f"expected {what}", required=True)
    if not values:
        raise item.fail(key, "expected at least one label value")
    return GpuType(name=name, products=tuple(values), source=item.text("source"), vendor=vendor)


def gpu_products(doc: Reader) -> tuple[GpuType, ...]:
    """The entries of a ``gpu_products.toml`` document, validated (each type once)."""
    doc.allow("schema", "gpu")
    entries = tuple(_entry(item) for item in doc.tables("gpu", required=True))
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        if entry.name in seen:
            raise doc.fail("gpu", f"type {entry.name} is listed twice", index=index)
        seen.add(entry.name)
    return entries


def load_gpu_products(path: Path, data: bytes) -> tuple[GpuType, ...]:
    from colabenv.catalog.document import parse_document

    return gpu_products(parse_document(path, data, CatalogError))


@functools.lru_cache(maxsize=1)
def shipped_gpu_products() -> tuple[GpuType, ...]:
    """The shipped ``gpu_products.toml``, read once per process."""
    path = catalog_dir() / GPU_PRODUCTS_FILE
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogError(path, None, f"cannot read: {exc.strerror or exc}") from None
    return load_gpu_products(path, data)


def gpu_type(types: Sequence[GpuType], name: str) -> GpuType | None:
    """The entry of ``name`` (compared lowercase); None where the table has none."""
    wanted = name.lower()
    return next((entry for entry in types if entry.name == wanted), None)


def known_types(types: Sequence[GpuType], vendor: str | None = None) -> str:
    """The table's types (of ``vendor``'s GPUs alone when given), for a message
    (``a100, h100, t4``)."""
    return ", ".join(sorted(printable(e.name) for e in types if vendor is None or e.vendor == vendor))
