"""Small readings of PEP 508 requirements (markers that apply, exact pins, pin text) shared by
the resolver, the catalog, the host and the checks."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from packaging.markers import UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement


def valid_requirements(texts: Iterable[str]) -> Iterator[Requirement]:
    """Each of ``texts`` that parses as a requirement, in order; the others are passed over."""
    for text in texts:
        try:
            yield Requirement(text)
        except InvalidRequirement:
            continue


def marker_applies(req: Requirement, extras: Iterable[str]) -> bool:
    if req.marker is None:
        return True
    try:
        return any(req.marker.evaluate({"extra": extra}) for extra in ("", *extras))
    except (UndefinedComparison, UndefinedEnvironmentName):
        return True


def exact_pin(req: Requirement) -> str | None:
    specs = list(req.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        return specs[0].version
    return None


_OPERATOR = r"(===|==|~=|!=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+"
_PIN_RE = re.compile(
    rf"[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9_,.-]+\])?\s*({_OPERATOR}(\s*,\s*{_OPERATOR})*)?"
)


NVIDIA_PREFIXES = ("nvidia-", "cuda-")
"""The names of NVIDIA's CUDA wheels (``nvidia-cudnn-cu12``, ``cuda-toolkit``, ``cuda-bindings``):
what a catalog build's ``requires`` and refresh's pins hold."""
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def distribution_name(text: str) -> str | None:
    """The distribution a requirement or pin names, normalized (``nvidia-cudnn-cu12`` of
    ``nvidia_cudnn_cu12>=9``); None where ``text`` starts with no name."""
    match = _NAME_RE.match(text.strip())
    return None if match is None else re.sub(r"[-_.]+", "-", match.group(0)).lower()


def is_nvidia_wheel(text: str) -> bool:
    """Whether the requirement ``text`` names one of NVIDIA's CUDA wheels."""
    name = distribution_name(text)
    return name is not None and name.startswith(NVIDIA_PREFIXES)


def is_pin_text(text: str) -> bool:
    """Whether ``text`` looks like a catalog pin (a name, extras, version clauses); each is
    parsed with packaging when the resolver first needs it."""
    return _PIN_RE.fullmatch(text) is not None
