"""Which releases of an NVIDIA component wheel carry GPU code for the target's GPUs.

The facts come from ``profiles/catalog/components.toml`` (:class:`ComponentFacts`, read by
:func:`components_from`): for each component (``nvidia-cudnn-cu12``) the version ranges and the
architectures every shared object of those wheels carries. From them, for a set of GPUs:

- :func:`coverage`: the one version interval the resolver turns into a constraint
  (``nvidia-cudnn-cu12<9.11`` for a P100), or None when every known release covers the GPUs;
- :func:`pulled_in`: the components a framework build pins, directly or through
  ``cuda-toolkit[...]``, with the versions its pin admits;
- :func:`nvidia_requirements`: every requirement a build brings, through ``cuda-toolkit[...]``
  too, for the CUDA packages' own NVIDIA requirements to be held to;
- :func:`component_problems`: for ``verify``, each installed component release that lacks
  kernels for a GPU, with the last release that has them.

A GPU that no known release of a component covers (cuSPARSELt before Ampere) holds nothing back:
the frameworks use such a library only on GPUs it supports. Everything here is pure.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from colabenv._util.reader import Reader, cached_version
from colabenv.catalog.packages import arch_list, pin_texts
from colabenv.models import (
    Arch,
    Component,
    ComponentFacts,
    ComponentRange,
    ComputeCapability,
    Source,
    ToolkitMeta,
    parsed_pin,
)
from colabenv.models.frozen import model

if TYPE_CHECKING:
    from packaging.requirements import Requirement

TOOLKIT_META = canonicalize_name("cuda-toolkit")


@model
class Coverage:
    """The releases of ``component`` whose GPU code covers every GPU in ``gpus``:
    ``lower <= v < upper``. ``possible`` is False when no known release covers them all.
    ``last_covering``: the newest release read that covers them."""

    component: Component
    gpus: tuple[ComputeCapability, ...]
    lower: Version | None
    upper: Version | None
    last_covering: Version | None
    possible: bool = True

    @property
    def specifier(self) -> str:
        parts = ([f">={self.lower}"] if self.lower is not None else []) + (
            [f"<{self.upper}"] if self.upper is not None else []
        )
        return ",".join(parts)

    @property
    def requirement(self) -> str:
        return f"{self.component.name}{self.specifier}"

    def admits(self, version: Version) -> bool:
        return (
            self.possible
            and (self.lower is None or version >= self.lower)
            and (self.upper is None or version < self.upper)
        )

    def admits_any(self, spec: SpecifierSet) -> bool:
        """Whether some version satisfies both ``spec`` and this coverage."""
        if not self.possible:
            return False
        candidates = set(spec_boundaries(spec)) | {Version("0")}
        candidates.update(v for v in (self.lower, self.last_covering) if v is not None)
        for item in self.component.ranges:
            candidates.update(item.checked)
        return any(self.admits(v) and spec.contains(v, prereleases=True) for v in candidates)

    @property
    def reason(self) -> str:
        """One line: which releases lack kernels for which GPU, and the last one that has them."""
        name = self.component.name
        gpus = ", ".join(f"{g.sm} (compute capability {g})" for g in self.gpus)
        if not self.possible:
            return f"no known {name} release carries kernels for all of {gpus}"
        parts = []
        if self.upper is not None:
            parts.append(f"{name} {self.upper} and later carry no kernels for {gpus}")
        if self.lower is not None:
            parts.append(f"{name} before {self.lower} carries no kernels for {gpus}")
        text = "; ".join(parts)
        if self.last_covering is not None:
            text += f"; {self.last_covering} is the last release read that covers them"
        return text


def spec_boundaries(spec: SpecifierSet) -> list[Version]:
    """The versions worth trying against ``spec``: each bound, and just above an exclusive one
    (``>2.1`` and ``!=2.1`` give 2.1 and 2.1.1)."""
    found = []
    for item in spec:
        try:
            base = Version(item.version.removesuffix(".*"))
        except InvalidVersion:
            continue
        found.append(base)
        if item.operator in (">", "!="):
            found.append(Version(f"{base.public}.1"))
    return found


def _covered_by_some(component: Component, gpu: ComputeCapability) -> bool:
    return any(item.covers(gpu) for item in component.ranges)


def coverage(component: Component, gpus: Iterable[ComputeCapability]) -> Coverage | None:
    """The interval of releases covering every GPU (the newest run of ranges that do), or None
    when every known range covers them, there are no GPUs, or the component never covered any."""
    relevant = tuple(sorted({g for g in gpus if _covered_by_some(component, g)}))
    if not relevant:
        return None
    ranges = component.ranges
    good = [all(item.covers(g) for g in relevant) for item in ranges]
    if all(good):
        return None
    if not any(good):
        return Coverage(component, relevant, None, None, None, possible=False)
    high = max(i for i, ok in enumerate(good) if ok)
    low = high
    while low > 0 and good[low - 1]:
        low -= 1
    lower = ranges[low].lower if not all(good[:low]) else None
    upper = ranges[high].upper if not all(good[high + 1 :]) else None
    checked = [v for item in ranges[low : high + 1] for v in item.checked]
    excluded = [item for i, item in enumerate(ranges) if not low <= i <= high]
    held = tuple(g for g in relevant if any(not item.covers(g) for item in excluded))
    return Coverage(component, held or relevant, lower, upper, max(checked, default=None))


def bounds(facts: ComponentFacts, gpus: tuple[ComputeCapability, ...]) -> dict[str, Coverage]:
    """:func:`coverage` of every component that holds these GPUs back, by name; worked out once
    per set of facts and GPUs (kept in ``facts.memo``)."""
    key = ("bounds", gpus)
    kept = facts.memo.get(key)
    if isinstance(kept, dict):
        return kept
    found: dict[str, Coverage] = {}
    for component in facts.components:
        bound = coverage(component, gpus)
        if bound is not None:
            found[str(component.name)] = bound
    facts.memo[key] = found
    return found


@model
class PulledIn:
    """A component a framework build brings, and the versions its pin admits (``pin`` as the
    framework writes it: ``nvidia-cudnn-cu12==9.10.2.21``, or ``cuda-toolkit[cublas]==12.6.3``)."""

    component: Component
    specifier: SpecifierSet
    pin: str


_NAME_RE = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@functools.lru_cache(maxsize=4096)
def _pin_name(text: str) -> str:
    """The normalized name a pin starts with ("" for none), read without parsing the pin: the
    resolver asks this of every pin of every build it weighs, and builds share most pins."""
    match = _NAME_RE.match(text)
    return canonicalize_name(match.group(1)) if match else ""


def _meta_pins(pin: Requirement, facts: ComponentFacts) -> tuple[tuple[str, Requirement], ...]:
    """What a ``cuda-toolkit[...]==X`` pin brings through the meta-package release X, one
    (label, requirement) per requirement of each extra it names; () for any other pin, and for
    a release components.toml does not record."""
    exact = [s.version for s in pin.specifier if s.operator in ("==", "===")]
    if canonicalize_name(pin.name) != TOOLKIT_META or len(exact) != 1:
        return ()
    try:
        meta = facts.toolkit_meta(Version(exact[0]))
    except InvalidVersion:
        return ()
    if meta is None:
        return ()
    return tuple(
        (f"{pin.name}[{extra}]=={exact[0]} ({inner})", inner)
        for extra in sorted(pin.extras)
        for inner in meta.pins(extra)
    )


def pulled_in(
    pins: Iterable[str], facts: ComponentFacts, only: Container[str] | None = None
) -> tuple[PulledIn, ...]:
    """The known components behind a build's pins (requirement strings); a
    ``cuda-toolkit[...]==X`` pin brings the component version its meta-package release pins for
    each extra. ``only``: the component names wanted; the other pins are not even parsed."""
    found: list[PulledIn] = []
    for text in pins:
        name = _pin_name(text)
        if name != TOOLKIT_META and (only is not None and name not in only):
            continue
        pin = parsed_pin(text)
        component = facts.component(pin.name)
        if component is not None:
            found.append(PulledIn(component, pin.specifier, str(pin)))
            continue
        for label, inner in _meta_pins(pin, facts):
            target = facts.component(inner.name)
            if target is not None and (only is None or str(target.name) in only):
                found.append(PulledIn(target, inner.specifier, label))
    return tuple(found)


def nvidia_requirements(pins: tuple[str, ...], facts: ComponentFacts) -> tuple[tuple[str, Requirement], ...]:
    """Every requirement a framework build brings that another wheel may also require, each with
    the pin it comes from: its own pins, and for a ``cuda-toolkit[...]==X`` pin what each of its
    extras pins in release X (``nvidia-nvjitlink-cu12==12.8.93.*`` behind torch 2.11 cu128's
    ``cuda-toolkit[...,nvjitlink,...]==12.8.1``), whether or not components.toml reads that
    wheel's GPU code. Kept in ``facts.memo`` by the pins: the joint search asks per combination."""
    key = ("requirements", pins)
    kept = facts.memo.get(key)
    if isinstance(kept, tuple):
        return kept
    found: list[tuple[str, Requirement]] = []
    for text in pins:
        pin = parsed_pin(text)
        found.append((str(pin), pin))
        found.extend(_meta_pins(pin, facts))
    result = tuple(found)
    facts.memo[key] = result
    return result


@model
class ComponentProblem:
    """An installed component release without GPU code for one of the GPUs."""

    library: str
    version: str
    gpu: ComputeCapability
    last_covering: Version | None

    @property
    def message(self) -> str:
        text = f"{self.library} {self.version} has no kernels for {self.gpu.sm} (GPU {self.gpu})"
        if self.last_covering is not None:
            text += f"; {self.last_covering} is the last release that covers it"
        return text

    def __str__(self) -> str:
        return self.message


def _last_covering(component: Component, gpu: ComputeCapability) -> Version | None:
    checked = [v for item in component.ranges if item.covers(gpu) for v in item.checked]
    return max(checked, default=None)


def component_problems(
    installed: Mapping[str, str],
    gpus: Sequence[ComputeCapability],
    facts: ComponentFacts,
) -> tuple[ComponentProblem, ...]:
    """For each installed NVIDIA component (name -> version) whose version lies in a range the
    facts know, each GPU its GPU code does not cover; GPUs the component never covered, and
    versions outside every known range, are not judged."""
    problems = []
    distinct = sorted(set(gpus))
    for name, version_text in sorted(installed.items()):
        component = facts.component(name)
        if component is None:
            continue
        try:
            version = Version(version_text)
        except InvalidVersion:
            continue
        known: ComponentRange | None = component.range_of(Version(version.public))
        if known is None:
            continue
        for gpu in distinct:
            if known.covers(gpu) or not _covered_by_some(component, gpu):
                continue
            problems.append(
                ComponentProblem(str(component.name), version_text, gpu, _last_covering(component, gpu))
            )
    return tuple(problems)


# ---------------------------------------------------------------------------------------------
# Reading components.toml


PLATFORM_ARCHS_KEYS = {"archs_aarch64": "linux_aarch64"}
"""A range's key for the arch list another platform's wheels carry, and that platform."""
_RANGE_RE = re.compile(r"(>=|<)\s*([0-9][0-9A-Za-z.!+]*)")
_CU_SUFFIX_RE = re.compile(r"-cu(\d+)$")


def components_from(doc: Reader) -> ComponentFacts:
    """``components.toml`` (the shipped file or an overlay's), validated: each component with its
    ranges (oldest first, none overlapping), and the ``cuda-toolkit`` extras each version pins."""
    doc.allow("schema", "component", "toolkit_meta")
    components = []
    for item in doc.tables("component"):
        item.allow("name", "cuda_major", "range")
        name = canonicalize_name(item.text("name"))
        if not name.startswith("nvidia-"):
            raise item.fail("name", f"{name!r} is not an NVIDIA component (nvidia-...)")
        major = item.integer("cuda_major")
        suffix = _CU_SUFFIX_RE.search(name)
        if suffix is not None and int(suffix.group(1)) != major:
            raise item.fail("cuda_major", f"{name} is a CUDA {suffix.group(1)} wheel")
        ranges = tuple(_component_range(r) for r in item.tables("range"))
        if not ranges:
            raise item.fail("range", "a component needs at least one range")
        for before, after in itertools.pairwise(ranges):
            if before.upper is None or after.lower is None or before.upper > after.lower:
                raise item.fail(
                    "range",
                    f"ranges {before.specifier} and {after.specifier} "
                    "overlap or are out of order (oldest first)",
                )
        components.append(Component(name, major, ranges))
    names = [c.name for c in components]
    if len(set(names)) != len(names):
        raise doc.fail("component", "a component is listed twice")
    metas = []
    for item in doc.tables("toolkit_meta"):
        item.allow("version", "extras", "source")
        extras = item.sub("extras")
        pairs = []
        for extra in extras.data:
            texts = pin_texts(extras, extra, "nvidia-cublas==13.0.0.19.*")
            if not texts:
                raise extras.fail(extra, "expected the requirements the extra pins")
            pairs.append((extra, tuple(texts)))
        metas.append(ToolkitMeta(item.version("version"), tuple(pairs), Source(item.text("source"))))
    versions = [m.version for m in metas]
    if len(set(versions)) != len(versions):
        raise doc.fail("toolkit_meta", "a cuda-toolkit version is listed twice")
    return ComponentFacts(tuple(components), tuple(metas))


def _component_range(item: Reader) -> ComponentRange:
    """``versions = ">=9.0,<9.11"``: a lower and an upper bound, each optional."""
    item.allow("versions", "archs", *PLATFORM_ARCHS_KEYS, "checked", "source")
    text = item.text("versions")
    clauses = [c.strip() for c in text.split(",")]
    bounds: dict[str, Version] = {}
    for clause in clauses:
        match = _RANGE_RE.fullmatch(clause)
        if match is None or match.group(1) in bounds:
            raise item.fail("versions", f'{text!r} is not a range like ">=9.0,<9.11"')
        try:
            bounds[match.group(1)] = cached_version(match.group(2))
        except InvalidVersion:
            raise item.fail("versions", f"{text!r}: {match.group(2)!r} is not a version") from None
    lower, upper = bounds.get(">="), bounds.get("<")
    if lower is not None and upper is not None and lower >= upper:
        raise item.fail("versions", f"{text!r} holds no version")
    archs = arch_list(item, "archs", item.text_list("archs"))
    if not archs:
        raise item.fail("archs", "a range needs its arch list")
    checked = []
    for version_text in item.text_list("checked"):
        try:
            checked.append(cached_version(version_text))
        except InvalidVersion:
            raise item.fail("checked", f"{version_text!r} is not a version") from None
    result = ComponentRange(
        lower, upper, archs, tuple(checked), Source(item.text("source")), _platform_archs(item, archs)
    )
    if not checked:
        raise item.fail("checked", "name the releases whose wheels were read")
    for version in checked:
        if not result.contains(version):
            raise item.fail("checked", f"{version} is outside {text}")
    return result


def _platform_archs(item: Reader, archs: tuple[Arch, ...]) -> tuple[tuple[str, tuple[Arch, ...]], ...]:
    """``archs_aarch64 = [...]``: the list NVIDIA's aarch64 wheels of the range carry, where
    they were read and carry another than ``archs`` (the range's own list, read already)."""
    found = []
    for key, platform in PLATFORM_ARCHS_KEYS.items():
        if key not in item.data:
            continue
        own = arch_list(item, key, item.text_list(key))
        if not own:
            raise item.fail(key, f"expected the arch list the {platform} wheels carry")
        if own == archs:
            raise item.fail(key, "the same list as archs: leave it out and say so in the source")
        found.append((platform, own))
    return tuple(found)
