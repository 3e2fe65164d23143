"""``colabenv catalog refresh`` run against the stand-in indexes of the ``refresh_*_standins``
modules, each served on 127.0.0.1 for the one run: the one place that spells out which stand-in
folder is which flag's index, and how the indexes' addresses read in what refresh says."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from tests.support.fixtures import Runner
from tests.support.index import LocalIndex


@dataclass(frozen=True)
class Served:
    """The stand-in indexes served for one refresh: ``default`` always, ``pytorch`` and ``amd``
    where the refresh reads them (None where not)."""

    default: LocalIndex
    pytorch: LocalIndex | None
    amd: LocalIndex | None


def refresh_standins(
    runner: Runner,
    name: str,
    standins: Path,
    out: Path,
    *args: str | Path,
    catalog: Path | None = None,
    pytorch: bool = False,
    cuda_notes: str | None = None,
    amd: bool = False,
    before: Callable[[Served], None] | None = None,
) -> tuple[int, str, str]:
    """``colabenv catalog refresh NAME`` of the stand-ins under ``standins``, over the catalog
    folder ``catalog`` (``standins/base`` unless given), written to ``out`` (made here), with
    ``args`` after the rest. ``standins/default`` is served as ``--index``; with ``pytorch``,
    ``standins/pytorch`` as ``--pytorch-index`` (and ``cuda_notes``, a path under its files, as
    ``--cuda-notes``); with ``amd``, the flat-links pages of ``standins/amd`` as
    ``--find-links-mirror``. ``before`` is handed the indexes once they serve, ahead of the run
    (to yank a file, say). Returns the exit code, stdout, and stderr with the served indexes'
    addresses as ``DEFAULT``, ``PYTORCH`` and ``AMD``."""
    out.mkdir(exist_ok=True)
    with ExitStack() as stack:
        served = Served(
            default=stack.enter_context(LocalIndex(standins / "default")),
            pytorch=stack.enter_context(LocalIndex(standins / "pytorch")) if pytorch else None,
            amd=stack.enter_context(LocalIndex(standins / "amd")) if amd else None,
        )
        flags: list[str | Path] = ["--index", served.default.url]
        if served.pytorch is not None:
            flags += ["--pytorch-index", served.pytorch.url]
            if cuda_notes is not None:
                flags += ["--cuda-notes", f"{served.pytorch.base_url}/files/{cuda_notes}"]
        if served.amd is not None:
            flags += ["--find-links-mirror", f"{served.amd.base_url}/flat-links/"]
        if before is not None:
            before(served)
        done = runner(
            "catalog",
            "refresh",
            name,
            *flags,
            "--catalog",
            standins / "base" if catalog is None else catalog,
            "-o",
            out,
            *args,
            timeout=300,
        )
        stderr = done.stderr
        for index, shown in ((served.default, "DEFAULT"), (served.pytorch, "PYTORCH"), (served.amd, "AMD")):
            if index is not None:
                stderr = stderr.replace(index.base_url, shown)
    return done.returncode, done.stdout, stderr
