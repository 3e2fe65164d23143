"""``tpu.toml``: the TPU generations (accelerator type prefixes, PCI device ids, TensorCores
per chip), the TPU build of each framework release, and why a framework has none; and what an
accelerator type (``v5e-8``, ``v3-8``) names, checked against those generations. The file format
is in docs/catalog.md ("TPU builds"); :mod:`colabenv.catalog.load` reads the file and checks
each build against its release."""

from __future__ import annotations

import re
from collections.abc import Mapping

from colabenv._util.reader import Reader
from colabenv.catalog.packages import catalog_url, pin_texts
from colabenv.errors import printable
from colabenv.models import (
    TPU_NAME_PATTERN,
    TPU_TYPE_PATTERN,
    Framework,
    Source,
    TpuBuild,
    TpuFacts,
    TpuGeneration,
    TpuTarget,
)
from colabenv.models.frameworks import FACTS

_PCI_ID_RE = re.compile(r"0x[0-9a-f]{4}")
_TPU_NAME_RE = re.compile(TPU_NAME_PATTERN)
_RUNTIME = FACTS[Framework.JAX].tpu_runtime[0]
"""The TPU runtime a build's requirements name, for messages."""
MAX_TYPE_LENGTH = 40
_TYPE_RE = re.compile(TPU_TYPE_PATTERN, re.ASCII)


def tpu_facts(doc: Reader) -> TpuFacts:
    """The TPU facts of a ``tpu.toml`` document, validated (not yet against the releases: see
    :func:`colabenv.catalog.load.tpu_facts_for`)."""
    doc.allow("schema", "generation_sets", "generation", "build", "unsupported")
    generations = tuple(_load_generation(item) for item in doc.tables("generation"))
    names = [g.name for g in generations]
    spelled = [*names, *(p for g in generations for p in g.type_prefixes if p != g.name)]
    if len(set(spelled)) != len(spelled):
        raise doc.fail("generation", "a generation name or type prefix is listed twice")
    sets_reader = doc.sub("generation_sets")
    sets: dict[str, tuple[str, ...]] = {}
    for name in sets_reader.data:
        sets[name] = _generation_list(sets_reader, name, sets_reader.text_list(name), names)
    builds = tuple(_load_build(item, sets, names) for item in doc.tables("build"))
    keys = [(b.framework, b.release) for b in builds]
    if len(set(keys)) != len(keys):
        raise doc.fail("build", "a framework release has two TPU builds")
    unsupported = []
    for item in doc.tables("unsupported"):
        item.allow("framework", "reason", "source")
        framework = _framework(item)
        if any(b.framework is framework for b in builds):
            raise item.fail("framework", f"{framework} has TPU builds; it is not unsupported")
        item.text("source")
        unsupported.append((framework, item.text("reason")))
    return TpuFacts(generations, builds, tuple(unsupported))


def _framework(item: Reader) -> Framework:
    text = item.text("framework")
    try:
        return Framework(text)
    except ValueError:
        known = ", ".join(f.value for f in Framework)
        raise item.fail("framework", f"{text!r} is not a framework ({known})") from None


def _load_generation(item: Reader) -> TpuGeneration:
    item.allow("name", "type_prefixes", "pci_device_ids", "tensorcores_per_chip", "source")
    name = item.text("name")
    prefixes = tuple(item.text_list("type_prefixes"))
    for text in (name, *prefixes):
        if not _TPU_NAME_RE.fullmatch(text):
            raise item.fail("name", f"{text!r} is not a lower-case name like v5e or tpu7x")
    if name not in prefixes:
        raise item.fail("type_prefixes", f"expected {name!r} among them")
    ids = tuple(item.text_list("pci_device_ids"))
    if not ids or not all(_PCI_ID_RE.fullmatch(i) for i in ids):
        raise item.fail("pci_device_ids", "expected PCI device ids like 0x0063")
    cores = item.integer("tensorcores_per_chip", low=1, high=8)
    return TpuGeneration(name, prefixes, ids, cores, Source(item.text("source")))


def _generation_list(reader: Reader, key: str, items: list[str], known: list[str]) -> tuple[str, ...]:
    if not items:
        raise reader.fail(key, "expected at least one TPU generation")
    for item in items:
        if item not in known:
            raise reader.fail(key, f"{item!r} is not a [[generation]] name")
    return tuple(items)


def _load_build(item: Reader, sets: Mapping[str, tuple[str, ...]], known: list[str]) -> TpuBuild:
    item.allow(
        "framework",
        "release",
        "extra",
        "variant",
        "requires",
        "find_links",
        "python",
        "generations",
        "source",
    )
    framework = _framework(item)
    raw = item.data.get("generations")
    if isinstance(raw, str):
        if raw not in sets:
            raise item.fail("generations", f"no list named {raw!r} in [generation_sets]")
        generations = sets[raw]
    else:
        generations = _generation_list(item, "generations", item.text_list("generations"), known)
    requires = tuple(pin_texts(item, "requires", f"{_RUNTIME}==0.0.17.*"))
    if not requires:
        raise item.fail("requires", f"expected the requirements the TPU build adds ({_RUNTIME} ...)")
    find_links = catalog_url(item, "find_links")
    extra, variant = item.opt_text("extra"), item.opt_text("variant")
    if (extra is None) == (variant is None):
        raise item.fail("extra", "give the extra (jax[tpu]) or the variant whose wheel it takes")
    return TpuBuild(
        framework=framework,
        release=item.version("release"),
        requires=requires,
        generations=generations,
        python=item.opt_specifier("python"),
        find_links=find_links,
        base_variant=variant,
        extra=extra,
        source=Source(item.text("source")),
    )


def _known(facts: TpuFacts) -> str:
    return ", ".join(g.name for g in facts.generations)


def parse_accelerator_type(text: str, facts: TpuFacts) -> TpuTarget:
    """A TPU named by an accelerator type (``v5e-1``, ``v5litepod-8``, ``v3-8``, ``v6e``),
    checked against the catalog's generations; ValueError says what is wrong.

    The count of a type is TensorCores (``v3-8`` is four chips of two cores); a lite chip has
    one, so ``v5litepod-8`` is eight chips."""
    shown = printable(text.strip())[:MAX_TYPE_LENGTH]
    example = "a TPU type like v5e-1 or v6e-8"
    cleaned = text.strip().lower()
    match = _TYPE_RE.fullmatch(cleaned) if len(cleaned) <= MAX_TYPE_LENGTH else None
    if match is None:
        raise ValueError(f"{shown!r} is not {example} (known generations: {_known(facts)})")
    generation = facts.generation(match.group(1))
    if generation is None:
        raise ValueError(
            f"{shown!r}: {match.group(1)!r} is not a TPU generation colabenv knows (known: {_known(facts)})"
        )
    chips: int | None = None
    if match.group(2) is not None:
        cores = int(match.group(2))
        if cores % generation.tensorcores_per_chip:
            raise ValueError(
                f"{shown!r}: a {generation.name} type counts TensorCores,"
                f" {generation.tensorcores_per_chip} per chip; {cores} is not a whole number of"
                f" chips"
            )
        chips = cores // generation.tensorcores_per_chip
    return TpuTarget(generation.name, cleaned, chips)
