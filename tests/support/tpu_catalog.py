"""The shipped catalog with one TPU build opened to the running Python.

Tests of the find-links page and of torch_xla's index install pure stand-in wheels; the real
builds they stand for (jax 0.4.30, torch 2.9.0) have no wheel for the newest Pythons, so the
catalog's Python bounds for that release and its TPU build are lifted here, and only here."""

from __future__ import annotations

import dataclasses

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.catalog.load import shipped_catalog
from colabenv.models import Catalog, Framework


def tpu_catalog(framework: Framework, version: str, *, find_links: str | None = None) -> Catalog:
    """The shipped catalog, ``framework`` ``version``'s release and TPU build taking any Python,
    and the build's find-links page replaced by ``find_links`` when given."""
    catalog = shipped_catalog()
    build = catalog.tpu.build(framework, Version(version))
    assert build is not None, f"tpu.toml has no {framework.value} {version} build"
    changes: dict[str, object] = {"python": SpecifierSet()}
    if find_links is not None:
        assert build.find_links is not None, "the build has no find-links page to replace"
        changes["find_links"] = find_links
    local = dataclasses.replace(build, **changes)  # type: ignore[arg-type]
    facts = dataclasses.replace(
        catalog.tpu, builds=tuple(local if b is build else b for b in catalog.tpu.builds)
    )
    releases = tuple(
        dataclasses.replace(r, python=SpecifierSet())
        if r.framework is framework and r.version == Version(version)
        else r
        for r in catalog.releases
    )
    return dataclasses.replace(catalog, releases=releases, tpu=facts)
