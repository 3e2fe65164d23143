"""``deaths.toml``: how long each runtime's session may live, and what to do about each of the
silent-death findings of ``colabenv doctor`` (docs/doctor.md, "Silent kernel deaths"); each entry
with its source. Pure after the bytes are read; the shipped file is read once per process."""

from __future__ import annotations

import functools
from pathlib import Path

from colabenv._util.reader import Reader
from colabenv._util.resources import catalog_dir
from colabenv.errors import CatalogError, printable
from colabenv.models import Accelerator, DeathFacts, Remedy, RuntimeKind, SessionLimit, Source

DEATHS_FILE = "deaths.toml"
DEATH_KINDS = ("oom-kill", "shm-full", "disk-full", "vram-full", "session-limit")
"""The finding kinds the file gives remedies for, each of which must have one."""
MAX_SESSION_HOURS = 24 * 7
"""A session limit past a week is no runtime's."""
_RUNTIMES = {kind.value: kind for kind in (RuntimeKind.COLAB, RuntimeKind.KAGGLE)}
_ACCELERATORS = {kind.value: kind for kind in Accelerator}


def death_facts(doc: Reader) -> DeathFacts:
    """The session limits and remedies of a ``deaths.toml`` document, validated."""
    doc.allow("schema", "session_limit", "remedy")
    limits = tuple(_limit(item) for item in doc.tables("session_limit", required=True))
    remedies = tuple(_remedy(item) for item in doc.tables("remedy", required=True))
    missing = [kind for kind in DEATH_KINDS if not any(r.kind == kind for r in remedies)]
    if missing:
        raise doc.fail("remedy", f"no remedy for {', '.join(missing)}")
    return DeathFacts(limits, remedies)


def _limit(item: Reader) -> SessionLimit:
    item.allow("runtime", "hours", "plan", "accelerators", "source")
    runtime = item.text("runtime")
    if runtime not in _RUNTIMES:
        raise item.fail("runtime", f"{printable(runtime)[:40]!r} is not one of {', '.join(_RUNTIMES)}")
    hours = item.number("hours", low=0, high=MAX_SESSION_HOURS, above_low=True, unit=" h")
    accelerators = []
    for index, text in enumerate(item.text_list("accelerators")):
        if text not in _ACCELERATORS:
            known = ", ".join(_ACCELERATORS)
            raise item.fail("accelerators", f"{printable(text)[:40]!r} is not one of {known}", index=index)
        accelerators.append(_ACCELERATORS[text])
    return SessionLimit(
        _RUNTIMES[runtime], hours, item.text("plan"), tuple(accelerators), Source(item.text("source"))
    )


def _remedy(item: Reader) -> Remedy:
    item.allow("kind", "text", "source")
    kind = item.text("kind")
    if kind not in DEATH_KINDS:
        raise item.fail("kind", f"{printable(kind)[:40]!r} is not one of {', '.join(DEATH_KINDS)}")
    return Remedy(kind, item.text("text"), Source(item.text("source")))


def load_death_facts(path: Path, data: bytes) -> DeathFacts:
    """The facts of ``data``, read from ``path``."""
    from colabenv.catalog.document import parse_document

    return death_facts(parse_document(path, data, CatalogError))


@functools.lru_cache(maxsize=1)
def shipped_death_facts() -> DeathFacts:
    """The shipped ``deaths.toml``, read once per process."""
    path = catalog_dir() / DEATHS_FILE
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogError(path, None, f"cannot read: {exc.strerror or exc}") from None
    return load_death_facts(path, data)
