"""Two ``detect --json`` fingerprints read and compared (``colabenv diff``).

Differences are grouped: accelerator (nvidia, tpu or cpu, and the TPU's generation, type and
chips), GPU and driver, Python, runtime, frameworks (the ``installed`` key: frameworks and CUDA
wheels), other packages. Free GPU memory and notes are not compared: they change from one run to
the next on the same host. The files are input from anywhere: read bounded, every value
checked, and each shown with its control characters escaped (:class:`Change`), so a name holding
a newline cannot forge a line of the diff.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from colabenv._util.files import MAX_INPUT_BYTES, FileProblem, read_limited
from colabenv._util.reader import Fail, Reader
from colabenv.errors import InputError, printable
from colabenv.host.probe import memory_mib
from colabenv.models.frozen import model

ABSENT = "(absent)"


@model
class GpuEntry:
    name: str
    compute_capability: str
    memory_total_mib: int | None

    def __str__(self) -> str:
        memory = f", {self.memory_total_mib} MiB" if self.memory_total_mib is not None else ""
        return f"{self.name} ({self.compute_capability}{memory})"


@model
class FingerprintFile:
    """The parts of a ``detect --json`` object that ``diff`` compares."""

    path: Path
    target: tuple[tuple[str, str], ...]
    gpus: tuple[GpuEntry, ...]
    accelerator: tuple[tuple[str, str], ...]
    python: tuple[tuple[str, str], ...]
    runtime: tuple[tuple[str, str], ...]
    installed: tuple[tuple[str, str], ...]
    packages: tuple[tuple[str, str], ...] | None


@model
class Change:
    key: str
    before: str
    after: str

    def __str__(self) -> str:
        return f"  {printable(self.key)}: {printable(self.before)} -> {printable(self.after)}"


def _fail(path: Path, problem: str) -> InputError:
    return InputError(f"{printable(path)}: {problem}")


def _failing(path: Path) -> Fail:
    """A fingerprint's shape errors name the key, and ask whether it is a fingerprint."""

    def fail(key: str | None, problem: str) -> InputError:
        return _fail(path, f"{key}: {problem} (is it `colabenv detect --json` output?)")

    return fail


def _text(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value) or "none"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"(a number of about {int(value.bit_length() * 0.30103) + 1} digits)"
    if isinstance(value, dict):
        return "(an object)"
    return str(value)


def _versions(table: Reader) -> tuple[tuple[str, str], ...]:
    """``{name: version}``, every version a string."""
    return tuple(sorted((name, table.text(name, empty=True)) for name in table.data))


def load_fingerprint(path: Path) -> FingerprintFile:
    try:
        raw = read_limited(path, MAX_INPUT_BYTES)
    except FileProblem as problem:
        raise _fail(path, f"cannot read: {problem}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(path, f"not UTF-8 text (byte {exc.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(path, f"not JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise _fail(path, "not a fingerprint: JSON nested too deeply") from None
    except ValueError as exc:  # an integer of thousands of digits
        raise _fail(path, f"not a fingerprint: {printable(exc)[:120]}") from None
    if not isinstance(data, dict):
        raise _fail(path, "expected a JSON object from `colabenv detect --json`")
    document = Reader(data, _failing(path), json_words=True)
    target = document.sub("target", required=True)
    target.require("driver", "cuda", "compute_capabilities", "python", "platform")
    target.items("compute_capabilities")
    gpus: list[GpuEntry] = []
    for gpu in document.tables("gpus", required=True):
        total = gpu.data.get("memory_total_mib")
        gpus.append(
            GpuEntry(
                gpu.text("name", empty=True),
                _text(gpu.data.get("compute_capability")),
                memory_mib(total) if isinstance(total, int) else None,
            )
        )
    runtime = document.text("runtime", empty=True)
    packages = _versions(document.sub("packages")) if "packages" in data else None
    return FingerprintFile(
        path=path,
        target=tuple((key, _text(target.data[key])) for key in ("driver", "cuda", "compute_capabilities")),
        gpus=tuple(gpus),
        accelerator=_accelerator(target.data, path),
        python=(
            ("python", _text(target.data["python"])),
            ("python_full", _text(data.get("python_full"))),
            ("implementation", _text(data.get("python_implementation"))),
        ),
        runtime=(
            ("runtime", runtime),
            ("platform", _text(target.data["platform"])),
            ("glibc", _text(data.get("glibc"))),
        ),
        installed=_versions(document.sub("installed", required=True)),
        packages=packages,
    )


def _accelerator(target: Mapping[str, object], path: Path) -> tuple[tuple[str, str], ...]:
    """``accelerator`` and the TPU's facts. A fingerprint from before colabenv knew TPUs has
    no ``accelerator``: its host was an NVIDIA one when it recorded a driver or CUDA, else CPU."""
    kind = target.get("accelerator")
    if kind is None:
        kind = "nvidia" if target.get("driver") is not None or target.get("cuda") is not None else "cpu"
    elif not isinstance(kind, str):
        raise _fail(path, "target.accelerator: expected a string (nvidia, tpu or cpu)")
    tpu = target.get("tpu")
    if tpu is not None and not isinstance(tpu, dict):
        raise _fail(path, "target.tpu: expected an object or null")
    facts = tpu or {}
    return (
        ("accelerator", kind),
        *(
            (f"tpu {key.replace('_', ' ')}", _text(facts.get(key)))
            for key in ("generation", "accelerator_type", "chips")
            if tpu is not None
        ),
    )


def _pairs(a: tuple[tuple[str, str], ...], b: tuple[tuple[str, str], ...]) -> list[Change]:
    right = dict(b)
    return [
        Change(key, before, right.get(key, ABSENT)) for key, before in a if before != right.get(key, ABSENT)
    ]


def _versions_diff(a: tuple[tuple[str, str], ...], b: tuple[tuple[str, str], ...]) -> list[Change]:
    left, right = dict(a), dict(b)
    return [
        Change(name, left.get(name, ABSENT), right.get(name, ABSENT))
        for name in sorted(set(left) | set(right))
        if left.get(name) != right.get(name)
    ]


def _gpu_changes(a: tuple[GpuEntry, ...], b: tuple[GpuEntry, ...]) -> list[Change]:
    changes = []
    for index in range(max(len(a), len(b))):
        before = str(a[index]) if index < len(a) else ABSENT
        after = str(b[index]) if index < len(b) else ABSENT
        if before != after:
            changes.append(Change(f"gpu {index}", before, after))
    return changes


def compare(a: FingerprintFile, b: FingerprintFile) -> list[tuple[str, list[Change]]]:
    others: list[Change] = []
    if a.packages is not None and b.packages is not None:
        others = _versions_diff(a.packages, b.packages)
    return [
        ("accelerator", _pairs(a.accelerator, b.accelerator) + _absent_tpu(a, b)),
        ("GPU and driver", _pairs(a.target, b.target) + _gpu_changes(a.gpus, b.gpus)),
        ("Python", _pairs(a.python, b.python)),
        ("runtime", _pairs(a.runtime, b.runtime)),
        ("frameworks", _versions_diff(a.installed, b.installed)),
        ("other packages", others),
    ]


def _absent_tpu(a: FingerprintFile, b: FingerprintFile) -> list[Change]:
    """The TPU facts ``b`` has and ``a`` lacks (``_pairs`` walks ``a``'s keys only)."""
    left = dict(a.accelerator)
    return [Change(key, ABSENT, value) for key, value in b.accelerator if key not in left]


def unrecorded_packages(a: FingerprintFile, b: FingerprintFile) -> list[Path]:
    """Files without a ``packages`` key, whose other packages cannot be compared."""
    return [f.path for f in (a, b) if f.packages is None]
