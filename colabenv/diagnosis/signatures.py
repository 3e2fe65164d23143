"""``import_failures.toml``: the signatures of the errors imports raise after installs, the
wheels that ship the shared libraries a failed import names (docs/doctor.md, "Imports that fail
after installs"), and the variables of the environment that change what the GPU runtime sees
(``HSA_OVERRIDE_GFX_VERSION``). :func:`classify` reads an error's lines against the signatures,
first match winning.

Patterns are data, so they are held to what keeps them cheap: each starts with ``^`` (matched
at the start of one line, never searched through a text), is at most :data:`MAX_PATTERN`
characters, and the lines they are matched against are bounded (:data:`MAX_LINES` lines of
:data:`MAX_LINE` characters)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from colabenv._util.resources import catalog_dir
from colabenv.errors import CatalogError, printable
from colabenv.models.frozen import model

if TYPE_CHECKING:
    from colabenv._util.reader import Reader

IMPORT_FAILURES_FILE = "import_failures.toml"
MAX_PATTERN = 300
MAX_LINES = 200
MAX_LINE = 2000
MATCHED_CAUSES = (
    "numpy-abi",
    "undefined-symbol",
    "missing-library",
    "no-kernel-image",
    "invalid-device-function",
    "driver-too-old",
    "no-gpu",
    "not-installed",
    "unsupported-gpu",
    "duplicate",
)
"""The causes a signature may name; ``restart-needed``, ``shadowed`` and ``unknown`` are found
otherwise (times, paths; nothing matched), ``duplicate`` also from metadata (one distribution
twice) where a signature names two builds of one package (CuPy's warning)."""
VARIABLE_CAUSES = ("hsa-override",)
"""The causes a ``[[variable]]`` entry may name (docs/doctor.md, "GPU variables")."""
UNKNOWN_WHEEL = "the package that ships it"


@model
class PatternEntry:
    """What an entry of the file matches (``pattern``), where what it matches was seen
    (``source``), and ``example``: a line that ``pattern`` matches ("" where none is given)."""

    pattern: re.Pattern[str]
    source: str
    example: str


@model
class Signature(PatternEntry):
    """An error line's ``cause`` and its ``remedy``; ``example``: a line of the error as it was seen."""

    cause: str
    remedy: str


@model
class LibraryWheel(PatternEntry):
    """The ``wheel`` that ships the libraries whose file names ``pattern`` matches."""

    wheel: str


@model
class GpuVariable:
    """A variable of the environment that changes what the GPU runtime sees: its ``name``, the
    finding's ``cause``, the ``remedy`` (``{gfx_list}`` filled in), where its harm was seen
    (``source``) and ``example``: ``NAME=VALUE`` as it was set there."""

    name: str
    cause: str
    remedy: str
    source: str
    example: str


@model
class Signatures:
    signatures: tuple[Signature, ...]
    libraries: tuple[LibraryWheel, ...] = ()
    variables: tuple[GpuVariable, ...] = ()


@model
class Classified:
    """What an error is: its cause, the remedy with the names filled in, the line that said so,
    and the entry's ``source`` (where the error was seen upstream)."""

    cause: str
    remedy: str
    line: str
    source: str = ""

    @property
    def thread(self) -> str:
        """The first place ``source`` names (the upstream thread, an address), "" where none."""
        first = self.source.split(maxsplit=1)[0] if self.source.strip() else ""
        return first.rstrip(";,") if "://" in first else ""


def _compile(text: str, where: str, path: Path) -> re.Pattern[str]:
    if not text.startswith("^") or len(text) > MAX_PATTERN:
        raise CatalogError(
            path, where, f"expected a pattern starting with ^, at most {MAX_PATTERN} characters"
        )
    try:
        return re.compile(text)
    except re.error as exc:
        raise CatalogError(path, where, f"not a regular expression: {printable(exc)}") from None


def _example(item: Reader, pattern: re.Pattern[str], where: str, path: Path) -> str:
    """The entry's optional ``example``, which its pattern must match (checked where it is read)."""
    if "example" not in item.data:
        return ""
    example: str = item.text("example")
    if len(example) > MAX_LINE or pattern.match(example) is None:
        raise CatalogError(
            path, where, f"expected a line of at most {MAX_LINE} characters that the entry's pattern matches"
        )
    return example


def parse_signatures(data: bytes, path: Path) -> Signatures:
    """The signatures of an ``import_failures.toml`` document, validated."""
    from colabenv._util import toml
    from colabenv._util.reader import Reader

    def fail(key: str | None, problem: str) -> CatalogError:
        return CatalogError(path, key, problem)

    try:
        doc = Reader(toml.loads_utf8(data), fail)
    except (UnicodeDecodeError, toml.TOMLDecodeError) as exc:
        raise CatalogError(path, None, f"invalid TOML: {printable(exc)}") from None
    if doc.data.get("schema") != 1:
        raise doc.fail("schema", "expected schema = 1")
    doc.allow("schema", "signature", "library", "variable")
    found: list[Signature] = []
    for index, item in enumerate(doc.tables("signature", required=True)):
        item.allow("cause", "pattern", "remedy", "source", "example")
        cause = item.text("cause")
        if cause not in MATCHED_CAUSES:
            raise item.fail("cause", f"expected one of {', '.join(MATCHED_CAUSES)}")
        pattern = _compile(item.text("pattern"), f"signature[{index}].pattern", path)
        remedy, source = item.text("remedy"), item.text("source")
        example = _example(item, pattern, f"signature[{index}].example", path)
        found.append(Signature(pattern, source, example, cause=cause, remedy=remedy))
    libraries = []
    for index, item in enumerate(doc.tables("library")):
        item.allow("pattern", "wheel", "source", "example")
        pattern = _compile(item.text("pattern"), f"library[{index}].pattern", path)
        wheel, source = item.text("wheel"), item.text("source")
        example = _example(item, pattern, f"library[{index}].example", path)
        libraries.append(LibraryWheel(pattern, source, example, wheel=wheel))
    variables = tuple(_variable(item) for item in doc.tables("variable"))
    return Signatures(tuple(found), tuple(libraries), variables)


_VARIABLE_NAME_RE = re.compile(r"[A-Z][A-Z0-9_]{0,99}", re.ASCII)


def _variable(item: Reader) -> GpuVariable:
    item.allow("name", "cause", "remedy", "source", "example")
    name, cause = item.text("name"), item.text("cause")
    if not _VARIABLE_NAME_RE.fullmatch(name):
        raise item.fail("name", "expected an environment variable's name like HSA_OVERRIDE_GFX_VERSION")
    if cause not in VARIABLE_CAUSES:
        raise item.fail("cause", f"expected one of {', '.join(VARIABLE_CAUSES)}")
    example = item.text("example")
    if not example.startswith(f"{name}=") or len(example) > MAX_LINE:
        raise item.fail("example", f"expected {name}=VALUE as it was set at the entry's source")
    return GpuVariable(name, cause, item.text("remedy"), item.text("source"), example)


@functools.lru_cache(maxsize=1)
def shipped_signatures() -> Signatures:
    """The shipped ``import_failures.toml``, read once per process."""
    path = catalog_dir() / IMPORT_FAILURES_FILE
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogError(path, None, f"cannot read: {exc.strerror or exc}") from None
    return parse_signatures(data, path)


def error_lines(texts: Iterable[str]) -> list[str]:
    """The lines of ``texts``, stripped, each at most :data:`MAX_LINE` characters, at most
    :data:`MAX_LINES` of them (the last ones: an error's cause is said last)."""
    lines: list[str] = []
    for text in texts:
        lines.extend(line.strip()[:MAX_LINE] for line in text.splitlines() if line.strip())
    return lines[-MAX_LINES:]


def wheel_for(library: str, signatures: Signatures) -> str:
    for entry in signatures.libraries:
        if entry.pattern.match(library):
            return entry.wheel
    return UNKNOWN_WHEEL


def classify(lines: Iterable[str], signatures: Signatures) -> Classified | None:
    """The first signature any of ``lines`` matches (signatures in their order), or None."""
    kept = list(lines)
    for signature in signatures.signatures:
        for line in kept:
            match = signature.pattern.match(line)
            if match is None:
                continue
            groups = {k: v for k, v in match.groupdict().items() if v is not None}
            remedy = signature.remedy
            library = groups.get("library")
            if library is not None:
                remedy = remedy.replace("{library}", library).replace(
                    "{wheel}", wheel_for(library, signatures)
                )
            if "symbol" in groups:
                remedy = remedy.replace("{symbol}", groups["symbol"])
            return Classified(signature.cause, printable(remedy), printable(line), signature.source)
    return None
