"""``runtimes.toml``: the Colab runtime versions a notebook can pin (``colab-2026.07``), each
with its Python and what its GPU, CPU and TPU images ship installed, as googlecolab/backend-info
publishes them; ``--runtime ID`` renders for one of them from anywhere. The file format is in
docs/catalog.md ("Colab runtime versions"); ``colabenv catalog refresh runtimes`` adds the
versions upstream lists that the file lacks."""

from __future__ import annotations

import datetime
import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import VERSION_PATTERN, Version

from colabenv._util.reader import Reader
from colabenv._util.resources import catalog_dir
from colabenv.errors import CatalogError, ColabenvError, printable
from colabenv.models import (
    Accelerator,
    ColabRuntime,
    RuntimeFacts,
    RuntimeImage,
    Source,
)
from colabenv.models.runtimes import LATEST

if TYPE_CHECKING:
    from colabenv.catalog.document import ErrorType

RUNTIMES_FILE = "runtimes.toml"
RUNTIME_ID_RE = re.compile(r"colab-(20[0-9]{2})\.(0[1-9]|1[0-2])|colab-latest", re.ASCII)
"""A runtime id: ``colab-`` and the version upstream names (``2026.07``), or ``colab-latest``."""
STALE_DAYS = 90
"""How old upstream's head (``colab-latest``) may be before a render for it says so."""
_DATE_RE = re.compile(r"(20[0-9]{2})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])", re.ASCII)
IMAGE_KEYS = {"gpu": Accelerator.NVIDIA, "cpu": Accelerator.CPU, "tpu": Accelerator.TPU}
"""The table of each image in a ``[[runtime]]``, and the accelerator it is for."""
_COMMIT_RE = re.compile(r"[0-9a-f]{40}", re.ASCII)
_PYTHON_RE = re.compile(r"3\.[0-9]{1,2}\.[0-9]{1,3}", re.ASCII)
_CUDA_RE = re.compile(r"[0-9]{2}\.[0-9]{1,2}", re.ASCII)
_GLIBC_RE = re.compile(r"2\.[0-9]{1,3}", re.ASCII)
_PIN_RE = re.compile(
    rf"[A-Za-z0-9](?:[A-Za-z0-9._-]{{0,200}}[A-Za-z0-9])?=={VERSION_PATTERN}", re.VERBOSE | re.IGNORECASE
)
_APT_RE = re.compile(r"[a-z0-9][a-z0-9.+-]{0,100}=[A-Za-z0-9.+:~-]{1,100}", re.ASCII)


def runtime_facts(doc: Reader) -> RuntimeFacts:
    """The runtime versions of a ``runtimes.toml`` document, validated, newest first."""
    doc.allow("schema", "runtime")
    runtimes = tuple(_runtime(item) for item in doc.tables("runtime"))
    ids = [r.id for r in runtimes]
    if len(set(ids)) != len(ids):
        raise doc.fail("runtime", "a runtime id is listed twice")
    if ids != sorted(ids, reverse=True):
        raise doc.fail("runtime", "expected the runtimes newest first")
    return RuntimeFacts(runtimes)


def _runtime(item: Reader) -> ColabRuntime:
    item.allow("id", "date", "python", "os", "glibc", "commit", "source", *IMAGE_KEYS)
    runtime_id = item.text("id")
    if not RUNTIME_ID_RE.fullmatch(runtime_id):
        raise item.fail(
            "id", f"{printable(runtime_id)[:60]!r} is not a runtime id like colab-2026.07 or {LATEST}"
        )
    date = item.opt_text("date")
    if date is not None and not _valid_date(date):
        raise item.fail("date", f"{printable(date)[:40]!r} is not a date like 2026-08-19")
    if runtime_id == LATEST and date is None:
        raise item.fail("date", f"{LATEST} needs the date of its upstream commit")
    python = item.text("python")
    if not _PYTHON_RE.fullmatch(python):
        raise item.fail("python", "expected a full Python version like 3.12.13")
    glibc = item.opt_text("glibc")
    if glibc is not None and not _GLIBC_RE.fullmatch(glibc):
        raise item.fail("glibc", "expected the glibc of the image like 2.35")
    commit = item.text("commit")
    if not _COMMIT_RE.fullmatch(commit):
        raise item.fail("commit", "expected the upstream commit, 40 hex digits")
    source = item.text("source")
    if commit not in source:
        raise item.fail("source", f"expected the URL of commit {commit}")
    item.require(*IMAGE_KEYS)
    images: dict[str, RuntimeImage] = {}
    for key in ("gpu", "cpu", "tpu"):
        sub = item.sub(key, required=True)
        same = sub.opt_text("same_as")
        if same is not None:
            sub.allow("same_as")
            if same not in images:
                raise sub.fail("same_as", f"expected an image listed before it ({', '.join(images)})")
            images[key] = RuntimeImage(IMAGE_KEYS[key], *_rest(images[same]))
        else:
            images[key] = _image(sub, IMAGE_KEYS[key])
    return ColabRuntime(
        runtime_id,
        Version(python),
        item.text("os"),
        commit,
        Source(source),
        tuple(images.values()),
        date,
        Version(glibc) if glibc is not None else None,
    )


def _valid_date(text: str) -> bool:
    if not _DATE_RE.fullmatch(text):
        return False
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def latest_note(runtime: ColabRuntime, today: datetime.date) -> str:
    """What ``--runtime colab-latest`` stands for (``runtime``, the newest the catalog knows) and
    its date; with how old it is on ``today`` where that is more than :data:`STALE_DAYS`."""
    what = "googlecolab/backend-info's head" if runtime.id == LATEST else runtime.id
    text = (
        f"--runtime {LATEST} is {what} as of {runtime.dated} (commit {runtime.commit[:12]}, "
        f"Python {runtime.python}), the newest Colab image the catalog knows"
    )
    day = runtime.date or f"{runtime.dated.replace('.', '-')}-01"
    try:
        age = (today - datetime.date.fromisoformat(day)).days
    except ValueError:
        return text
    if age > STALE_DAYS:
        text += (
            f"; that is {age} days old, and Colab may run a newer image: "
            "colabenv catalog refresh runtimes says which"
        )
    return text


def _rest(image: RuntimeImage) -> tuple[str, str, Version | None, tuple[str, ...]]:
    return image.freeze_file, image.pins, image.cuda_toolkit, image.apt


def _image(sub: Reader, accelerator: Accelerator) -> RuntimeImage:
    sub.allow("freeze_file", "freeze", "cuda_toolkit", "apt")
    cuda = sub.opt_text("cuda_toolkit")
    if cuda is not None and not _CUDA_RE.fullmatch(cuda):
        raise sub.fail("cuda_toolkit", "expected a CUDA version like 12.8")
    apt = tuple(sub.matching_list("apt", _APT_RE, "expected an apt package as name=version"))
    pins = sub.text("freeze")
    check_pins(pins, sub.at("freeze"))
    return RuntimeImage(
        accelerator,
        sub.text("freeze_file"),
        pins,
        Version(cuda) if cuda is not None else None,
        apt,
    )


def check_pins(text: str, refuse: Callable[[str], ColabenvError]) -> None:
    """Every line of ``text`` is ``name==version`` (a PEP 440 version), the form the file keeps a
    ``pip freeze`` in; ``refuse(problem)`` makes the error for the first that is not. They are
    parsed when an image is used (:attr:`RuntimeImage.installed`)."""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line and not _PIN_RE.fullmatch(line):
            raise refuse(f"line {number}: {printable(line)[:80]!r} is not name==version")


def load_runtimes(path: Path, data: bytes, error: ErrorType = CatalogError) -> RuntimeFacts:
    """The runtime versions of ``data``, read from ``path`` (the shipped file; a file ``catalog
    refresh`` starts from or writes fails with :class:`CatalogOverlayError`)."""
    from colabenv.catalog.document import parse_document

    return runtime_facts(parse_document(path, data, error))


@functools.lru_cache(maxsize=1)
def shipped_runtimes() -> RuntimeFacts:
    """The shipped runtime versions, read once per process (only when ``--runtime`` is given)."""
    path = catalog_dir() / RUNTIMES_FILE
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogError(path, None, f"cannot read: {exc.strerror or exc}") from None
    return load_runtimes(path, data)
