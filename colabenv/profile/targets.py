"""A profile's ``[targets]`` table: named targets, their keys the target flags.

``[targets] nb = { driver = "550.54.15", compute_capability = ["7.5"], python = "3.12" }``
names a target as ``--driver 550.54.15 --compute-capability 7.5 --python 3.12`` would give it.
Each key is checked for its shape here, with the rules of its flag (the same parsers), and the
combinations the flags refuse are refused here too (``cpu`` beside an NVIDIA key, ``tpu``
beside either); what needs the catalog (a TPU type's generation, a runtime id, a driver's
CUDA) is checked where the target is used (:mod:`colabenv.resolve.targets`), still naming the
key path. A named target is never detected, so it says what it runs on (``cpu = true``,
``tpu``, ``driver`` or ``cuda``) and its Python (``python``, or a ``runtime`` that gives it).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from colabenv._util.reader import Reader, expected, shown
from colabenv.models import (
    PLATFORMS,
    PYTHON_FORMS,
    ROCM_FORMS,
    TPU_TYPE_PATTERN,
    ComputeCapability,
    TargetSpec,
    gfx_names,
    parse_cuda,
    parse_driver,
    parse_python,
    parse_rocm,
)

MAX_TARGETS = 16
"""Named targets a profile may list (after ``extends``): each is one resolution and one lock
section."""
TARGET_NAME_PATTERN = r"[a-z][a-z0-9-]{0,31}"
"""A target's name: lowercase, as a PEP 751 dependency group's name is compared."""
TARGET_KEYS = (
    "driver",
    "cuda",
    "compute_capability",
    "python",
    "cpu",
    "tpu",
    "runtime",
    "platform",
    "rocm",
    "gfx",
)
MAX_CAPABILITIES = 16
_RUNTIME_RE = re.compile(r"[A-Za-z0-9._-]{1,64}", re.ASCII)


def targets(table: Reader) -> tuple[TargetSpec, ...]:
    """Every entry of ``[targets]``; ``false`` (a child switching off its parent's target) is
    left out here, and taken out by the merge."""
    names = list(table.data)
    if len(names) > MAX_TARGETS:
        table.report(table.fail(None, f"{len(names)} targets; at most {MAX_TARGETS}"))
        names = names[:MAX_TARGETS]
    found = []
    for name in names:
        spec = table.attempt(functools.partial(_target, table, name), None)
        if spec is not None:
            found.append(spec)
    return tuple(found)


def _target(table: Reader, name: str) -> TargetSpec | None:
    if not re.fullmatch(TARGET_NAME_PATTERN, name):
        raise table.fail(
            name,
            f"{shown(name)} is not a target name (a lowercase letter, then letters, digits, '-'; at most 32)",
        )
    value = table.data[name]
    if value is False:
        return None
    if not isinstance(value, dict):
        raise table.fail(
            name, expected("a table of target flags (driver, compute_capability, python ...)", value)
        )
    entry = table.child(value, name)
    entry.allow(*TARGET_KEYS)
    attempt = entry.attempt
    driver = attempt(
        lambda: _checked(entry, "driver", _is_driver, "an NVIDIA driver version like 550.54.15"), None
    )
    cuda = attempt(lambda: _checked(entry, "cuda", _is_cuda, "a CUDA version like 12.4"), None)
    python = attempt(lambda: _checked(entry, "python", _is_python, PYTHON_FORMS), None)
    tpu = attempt(lambda: _checked(entry, "tpu", _is_tpu, "a TPU type like v5e-1"), None)
    runtime = attempt(lambda: _checked(entry, "runtime", _is_runtime, "a Colab runtime version id"), None)
    capabilities: tuple[str, ...] = attempt(lambda: _capabilities(entry), ())
    cpu = attempt(lambda: entry.flag("cpu", False), False)
    platform = attempt(
        lambda: _checked(entry, "platform", _is_platform, f"a platform ({' or '.join(PLATFORMS)})"), None
    )
    rocm = attempt(lambda: _checked(entry, "rocm", _is_rocm, ROCM_FORMS), None)
    gfx: tuple[str, ...] = attempt(lambda: _gfx(entry), ())
    nvidia = [key for key in ("driver", "cuda", "compute_capability") if key in value]
    amd = [key for key in ("rocm", "gfx") if key in value]
    if cpu and nvidia:
        entry.report(entry.fail("cpu", f"cpu = true cannot be combined with {' or '.join(nvidia)}"))
    if amd and (nvidia or cpu or "tpu" in value):
        given = [*(["cpu"] if cpu else []), *nvidia, *(["tpu"] if "tpu" in value else [])]
        entry.report(
            entry.fail(amd[0], f"AMD GPUs cannot have {' or '.join(given)}: they describe another host")
        )
    if "tpu" in value and (nvidia or cpu):
        given = [*(["cpu"] if cpu else []), *nvidia]
        entry.report(
            entry.fail("tpu", f"a TPU target cannot have {' or '.join(given)}: they describe another host")
        )
    if "compute_capability" in value and not ({"driver", "cuda"} & value.keys()):
        entry.report(
            entry.fail("compute_capability", "given without driver or cuda (a target is not detected)")
        )
    if not (cpu or nvidia or amd or "tpu" in value):
        entry.report(
            table.fail(
                name,
                "says nothing of its accelerator: give cpu = true, tpu = TYPE, driver (or cuda),"
                " or rocm (or gfx)",
            )
        )
    if "python" not in value and "runtime" not in value:
        entry.report(
            table.fail(name, "no python (a target is not detected; give python, or a runtime that has one)")
        )
    return TargetSpec(
        name=name,
        driver=driver,
        cuda=cuda,
        compute_capability=capabilities,
        python=python,
        cpu=cpu,
        tpu=tpu,
        runtime=runtime,
        platform=platform,
        rocm=rocm,
        gfx=gfx,
    )


def _checked(entry: Reader, key: str, good: Callable[[str], bool], what: str) -> str | None:
    if key not in entry.data:
        return None
    text = entry.text(key, empty=True).strip()
    if not good(text):
        raise entry.fail(key, f"{shown(text)} is not {what}")
    return text


def _is_driver(text: str) -> bool:
    return parse_driver(text) is not None


def _is_cuda(text: str) -> bool:
    return parse_cuda(text) is not None


def _is_python(text: str) -> bool:
    return parse_python(text) is not None


def _is_tpu(text: str) -> bool:
    return len(text) <= 32 and re.fullmatch(TPU_TYPE_PATTERN, text) is not None


def _is_platform(text: str) -> bool:
    return text in PLATFORMS


def _is_rocm(text: str) -> bool:
    return parse_rocm(text) is not None


def _gfx(entry: Reader) -> tuple[str, ...]:
    """``gfx``: a string (``"gfx942"``, ``"gfx942,gfx90a"``) or an array of them, as ``--gfx``
    takes them."""
    if "gfx" not in entry.data:
        return ()
    value = entry.data["gfx"]
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise entry.fail("gfx", "expected a string or an array of strings like gfx942")
    if not items:  # not "gfx unknown": that is gfx left out
        raise entry.fail(
            "gfx", 'an empty array (name each AMD GPU\'s architecture, e.g. ["gfx942"], or leave gfx out)'
        )
    try:
        return gfx_names(items)
    except ValueError as error:
        raise entry.fail("gfx", str(error)) from None


def _is_runtime(text: str) -> bool:
    return _RUNTIME_RE.fullmatch(text) is not None


def _capabilities(entry: Reader) -> tuple[str, ...]:
    """``compute_capability``: a string (``"7.5"``, ``"7.5,8.0"``) or an array of them, as the
    flag takes them; each capability once, in order."""
    if "compute_capability" not in entry.data:
        return ()
    value = entry.data["compute_capability"]
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or len(items) > MAX_CAPABILITIES:
        raise entry.fail(
            "compute_capability", f"expected a string or an array of at most {MAX_CAPABILITIES} strings"
        )
    found: list[str] = []
    for index, item in enumerate(items):
        where = None if isinstance(value, str) else index
        if not isinstance(item, str):
            raise entry.fail("compute_capability", expected("a string", item), index=where)
        for part in item.split(","):
            try:
                capability = str(ComputeCapability.parse(part.strip()))
            except ValueError:
                raise entry.fail(
                    "compute_capability",
                    f"{shown(part.strip())} is not a compute capability like 7.5",
                    index=where,
                ) from None
            if capability not in found:
                found.append(capability)
    return tuple(found)
