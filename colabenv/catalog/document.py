"""A catalog file's bytes to its document, read through :class:`~colabenv._util.reader.Reader`:
valid TOML (parsed through the cache), ``schema = 1``, each problem failing as a
:class:`~colabenv.errors.CatalogError` (the shipped catalog) or a
:class:`~colabenv.errors.CatalogOverlayError` (a team's overlay) naming the file and key.

Apart from :mod:`colabenv.catalog.load`, so that the small files read without the catalog
(``deaths.toml`` for ``doctor``, ``runtimes.toml``, ``base_images.toml``, ``gpu_products.toml``)
do not import the loader of the releases and components."""

from __future__ import annotations

from pathlib import Path

from colabenv._util import toml
from colabenv._util.cache import parsed_toml
from colabenv._util.reader import Fail, Reader
from colabenv.errors import CatalogError, CatalogOverlayError, ColabenvError, printable

ErrorType = type[CatalogError] | type[CatalogOverlayError]


def _failing(path: Path, error: ErrorType = CatalogError) -> Fail:
    def fail(key: str | None, problem: str) -> ColabenvError:
        return error(path, key, problem)

    return fail


def parse_document(path: Path, data: bytes, error: ErrorType) -> Reader:
    """The catalog document in ``data`` (read from ``path``), failing with ``error``."""
    try:
        document = parsed_toml(data, toml.loads_utf8)
    except (UnicodeDecodeError, toml.TOMLDecodeError) as exc:
        raise error(path, None, f"invalid TOML: {printable(exc)}") from None
    except RecursionError:
        raise error(path, None, "invalid TOML: nested too deeply") from None
    reader = Reader(document, _failing(path, error))
    if document.get("schema") != 1:
        raise reader.fail("schema", "expected schema = 1")
    return reader
