"""A profile's ``[job]`` table, and the rules its keys share with the flags of ``render
--format slurm|kubernetes`` (``--gpus``, ``--gpu-type``, ``--time``, ``--memory``, ``--cpus``,
``--partition``): each value is checked by one parser here, raising ValueError with what was
expected, so a key and its flag accept the same forms.

``[job] gpus = 1, gpu_type = "a100", time = "2:00:00", memory = "32G", cpus = 8``
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from colabenv._util.reader import Reader
from colabenv.models.job import JobSettings

T = TypeVar("T")

JOB_KEYS = ("gpus", "gpu_type", "time", "memory", "cpus", "partition")
MAX_GPUS = 64
MAX_CPUS = 4096
MAX_TIME_S = 366 * 24 * 3600
MAX_MEMORY_MIB = 64 * 1024 * 1024
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
"""A GPU type or a partition: letters, digits, ``.``, ``_`` and ``-``, at most 64."""
TIME_FORMS = "minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (Slurm's forms)"
MEMORY_FORMS = "a size such as 32G, 512M or 1T (K, M, G, T: binary units; no unit: M)"
_TIME_RE = re.compile(r"(?:([0-9]{1,3})-)?([0-9]{1,6})(?::([0-9]{1,2}))?(?::([0-9]{1,2}))?", re.ASCII)
_MEMORY_RE = re.compile(r"([0-9]{1,9})([KMGT]?)", re.ASCII | re.IGNORECASE)
_UNIT_KIB = {"K": 1, "M": 1024, "G": 1024**2, "T": 1024**3, "": 1024}


def parse_time(text: str) -> int:
    """A Slurm time limit (``90``, ``1:30:00``, ``2-00:00:00``) in seconds."""
    match = _TIME_RE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"expected {TIME_FORMS}")
    days, first, second, third = match.groups()
    parts: tuple[str | None, ...]
    if days is not None:  # D-HH[:MM[:SS]]
        seconds = int(days) * 86400 + int(first) * 3600 + int(second or 0) * 60 + int(third or 0)
        parts = (second, third)
        if int(first) > 23:
            raise ValueError(f"hours after the days go up to 23; expected {TIME_FORMS}")
    elif third is not None:  # HH:MM:SS
        seconds, parts = int(first) * 3600 + int(second) * 60 + int(third), (second, third)
    elif second is not None:  # MM:SS
        seconds, parts = int(first) * 60 + int(second), (second,)
    else:  # minutes
        seconds, parts = int(first) * 60, ()
    if any(part is not None and int(part) > 59 for part in parts):
        raise ValueError(f"minutes and seconds go up to 59; expected {TIME_FORMS}")
    if not 0 < seconds <= MAX_TIME_S:
        raise ValueError(f"expected a time above zero and at most 366 days, as {TIME_FORMS}")
    return seconds


def parse_memory(text: str) -> int:
    """A memory size (``32G``, ``512M``, ``64000``: MiB) in MiB, rounded up."""
    match = _MEMORY_RE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"expected {MEMORY_FORMS}")
    kib = int(match.group(1)) * _UNIT_KIB[match.group(2).upper()]
    mib = -(-kib // 1024)
    if not 0 < mib <= MAX_MEMORY_MIB:
        raise ValueError(f"expected a size above zero and at most 64T, as {MEMORY_FORMS}")
    return mib


def parse_name(text: str, what: str) -> str:
    """A GPU type or a partition name, as written."""
    if not re.fullmatch(NAME_PATTERN, text, re.ASCII):
        raise ValueError(f"expected {what}: letters, digits, '.', '_' or '-', at most 64, such as a100")
    return text


def job(table: Reader) -> JobSettings:
    """The ``[job]`` table; every problem reported with its key path."""
    table.allow(*JOB_KEYS)
    attempt = table.attempt
    return JobSettings(
        gpus=attempt(lambda: _count(table, "gpus", MAX_GPUS), None),
        gpu_type=attempt(lambda: _text(table, "gpu_type", lambda v: parse_name(v, "a GPU type")), None),
        time_s=attempt(lambda: _text(table, "time", parse_time), None),
        memory_mib=attempt(lambda: _text(table, "memory", parse_memory), None),
        cpus=attempt(lambda: _count(table, "cpus", MAX_CPUS), None),
        partition=attempt(lambda: _text(table, "partition", lambda v: parse_name(v, "a partition")), None),
    )


def _text(table: Reader, name: str, parse: Callable[[str], T]) -> T | None:
    if name not in table.data:
        return None
    try:
        return parse(table.text(name))
    except ValueError as problem:
        raise table.fail(name, str(problem)) from None


def _count(table: Reader, name: str, high: int) -> int | None:
    return table.integer(name, low=1, high=high) if name in table.data else None
