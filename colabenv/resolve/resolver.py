"""Choose framework wheels that run on the target, jointly, and say why (the rules:
docs/architecture.md, "The resolution rules"). A pure function of (profile, target, catalog);
the target carries what is installed."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv.accelerators.base import NOT_ASKED, ChosenBuild
from colabenv.accelerators.eligibility import UNCONFIRMED_HINT, python_ok
from colabenv.accelerators.nearest import NotTaken, nearest_lines
from colabenv.accelerators.nvidia import component_rejection
from colabenv.accelerators.registry import accelerator_of
from colabenv.catalog.components import bounds, pulled_in
from colabenv.errors import ResolutionError
from colabenv.models import (
    Catalog,
    ComponentConstraint,
    Framework,
    FrameworkChoice,
    FrameworkRequest,
    InstalledSet,
    InstallSettings,
    PackageChoice,
    Profile,
    Release,
    Resolution,
    Target,
    Variant,
)
from colabenv.models.availability import NO_FACTS, IndexFacts
from colabenv.models.frameworks import FACTS, ORDER, POSITION
from colabenv.models.frozen import model
from colabenv.profile.packages import misplaced
from colabenv.resolve.confirm import (
    CONFIRMED,
    check_plain,
    confirmed,
    index_problem,
    passed_over_text,
    yanked_warnings,
)
from colabenv.resolve.explain import grouped_rejections, no_match, unknown_variant
from colabenv.resolve.options import Option, companions_to_pin, requirements
from colabenv.resolve.packages import (
    Candidate,
    Pick,
    accepts,
    choose,
    image_warnings,
    index_url,
    package_choices,
    package_floors,
    plan_packages,
    refusal,
    specifiers_meet,
)
from colabenv.resolve.platforms import free_threaded_view, platform_cpu_only, platform_rejection

# ---------------------------------------------------------------------------------------------
# Eligibility


def _variant_rejection(
    variant: Variant, request: FrameworkRequest, target: Target, catalog: Catalog
) -> str | None:
    """Why ``variant`` cannot run on ``target``; None when it can."""
    if request.variant is not None and variant.name != request.variant:
        return NOT_ASKED
    if not python_ok(variant.python, target.python):
        return f"{variant.name} has no wheel for Python {target.python}"
    rejected = accelerator_of(target).rejection(variant, request, target, catalog)
    if rejected is not None:
        return rejected
    return platform_rejection(variant, target)


def _constraints(
    chosen: Sequence[Option], target: Target, catalog: Catalog
) -> tuple[tuple[ComponentConstraint, ...], dict[Framework, list[str]]]:
    """The component bounds the chosen builds need for the target's GPUs (one per component,
    in the order the frameworks pull them in), and for each framework the ones it brings; the
    components' arch lists are those of the target's platform's wheels."""
    facts = catalog.components.for_platform(target.platform)
    held = bounds(facts, target.compute_capabilities)
    found: dict[str, ComponentConstraint] = {}
    brought: dict[Framework, list[str]] = {}
    for option in chosen:
        for item in pulled_in(option.variant.pin_texts, facts, held):
            bound = held[item.component.name]
            if not bound.possible:
                continue
            found.setdefault(bound.requirement, ComponentConstraint(bound.requirement, bound.reason))
            texts = brought.setdefault(option.framework, [])
            if bound.requirement not in texts:
                texts.append(bound.requirement)
    return tuple(found.values()), brought


def _variant_preference(options: list[Option]) -> list[Option]:
    """GPU variants before CPU; fully supported first; newest CUDA first within each group."""
    newest_first = sorted(options, key=lambda o: o.variant.cuda or Version("0"), reverse=True)
    return sorted(newest_first, key=lambda o: (o.variant.is_cpu, not o.fully_supported))


def _installed_variant(release: Release, installed: InstalledSet, version: str) -> Variant | None:
    """Which variant of ``release`` an installed distribution is."""
    local = Version(version).local
    if local:
        for variant in release.variants:
            if variant.local_tag == local:
                return variant
        return None
    plugins = FACTS[release.framework].plugins
    if plugins:
        for plugin, name in plugins:
            if installed.get(plugin) is not None and release.variant(name) is not None:
                return release.variant(name)
        return release.variant("cpu")
    if release.default_variant is not None:
        return release.variant(release.default_variant)
    return None


def _companion_rejection(release: Release, request: FrameworkRequest) -> str | None:
    for name, spec in request.companions:
        companion = release.companion(name)
        if companion is None:
            return f"the catalog pairs no {name} with {release.framework} {release.version}"
        if not spec.contains(companion.version, prereleases=True):
            return f"pairs with {name} {companion.version}, outside {name}{spec}"
    return None


def _companion_python_rejection(release: Release, request: FrameworkRequest, target: Target) -> str | None:
    """Why a companion the resolution would pin has no wheel for the target's Python (its
    release's own range, which may be narrower than the framework's); None when each has one."""
    for companion in companions_to_pin(request, release, target.installed):
        if not python_ok(companion.python, target.python):
            return (
                f"pairs with {companion.name} {companion.version}, which has no wheel for Python "
                f"{target.python} ({companion.name} {companion.version}: Python {companion.python})"
            )
    return None


@model
class _Candidates:
    """The builds of one framework that may run on the target, best first; why the others did not."""

    options: tuple[Option, ...]
    rejections: tuple[tuple[Version, str, str], ...]
    """(release, variant, why) of each build turned down, the variant "" for a release turned
    down whole; not those passed over unlisted (:data:`NOT_ASKED`)."""
    passed_over: tuple[tuple[Version, str], ...] = ()
    """The releases turned down as a whole for the target's Python (their own wheels or a
    companion's), newest first: a choice below one of them says why it was not taken."""
    missing: tuple[tuple[Version, str, str], ...] = ()
    """The builds passed over for a file their index lacks: (release, label, the file)."""
    asked: str | None = None
    """The variant the profile names, if any."""
    not_the_device: tuple[tuple[Version, str], ...] = ()
    """The builds the index or being unconfirmed turned down: the target would run them."""

    def why_not(self, version: Version, variant: str) -> NotTaken | None:
        """Why the build was not among the options; None where it was."""
        if any(o.release.version == version and o.variant.name == variant for o in self.options):
            return None
        for release, name, why in self.rejections:
            if release == version and name in (variant, ""):
                return NotTaken(why, runs=(release, name) in self.not_the_device)
        asked = self.asked is not None and self.asked != variant
        unnamed = f"{variant} is not taken on the target unless the profile names it"
        return NotTaken(f"the profile asks for {self.asked}" if asked else unnamed, runs=True)


def _unconfirmed_rejection(variant: Variant) -> str:
    return f"{variant.name} is unconfirmed ({variant.unconfirmed}); {UNCONFIRMED_HINT}"


@model
class _Index:
    """What the index said (``facts``) and where each build comes from (``install``)."""

    facts: IndexFacts = NO_FACTS
    install: InstallSettings = InstallSettings()

    def index_of(self, option: Option) -> str | None:
        return index_url(option.variant.index_url, self.install)

    def confirms(self, option: Option, request: FrameworkRequest, target: Target) -> bool:
        """The index serves every file the build pins (an unconfirmed build is then taken)."""
        kind = accelerator_of(target)
        texts = [*requirements(option, request, target.installed), *kind.requirements(option.variant)]
        return confirmed(self.facts, self.index_of(option), texts, kind.find_links(option.variant))

    def problem(
        self, option: Option, request: FrameworkRequest, target: Target, allow: bool
    ) -> tuple[str | None, bool]:
        """Why ``option`` is not taken for what the index says (a file it lacks, a companion
        whose metadata requires another framework), or for being unconfirmed; and whether that
        is what the index says."""
        installed = target.installed
        if not option.installed:
            kind = accelerator_of(target)  # what the build needs beside its index, and where
            texts = [*requirements(option, request, installed), *kind.requirements(option.variant)]
            page = kind.find_links(option.variant)
            missing = index_problem(self.facts, self.index_of(option), option.framework.value, texts, page)
            if missing is not None:
                return missing, True
        variant = option.variant
        if variant.unconfirmed is not None and not allow and not self.confirms(option, request, target):
            return _unconfirmed_rejection(variant), False
        return None, False


def _candidates(
    request: FrameworkRequest,
    target: Target,
    catalog: Catalog,
    allow_unconfirmed: bool,
    index: _Index,
) -> _Candidates:
    """``allow_unconfirmed``: take builds marked unconfirmed too (otherwise each is turned
    down, with that as the reason, where nothing else turns it down first, or the index
    confirms it). A build whose files ``index`` lacks is turned down, naming the file."""
    framework = request.framework
    kind = accelerator_of(target)
    rejections: list[tuple[Version, str, str]] = []
    installed_dist = target.installed.get(framework.value)
    installed_public: Version | None = None
    if installed_dist is not None and installed_dist.parsed_version is not None:
        installed_public = Version(installed_dist.parsed_version.public)

    kept: list[Option] = []
    fresh: list[Option] = []
    passed_over: list[tuple[Version, str]] = []
    missing: list[tuple[Version, str, str]] = []
    not_the_device: list[tuple[Version, str]] = []
    for release in catalog.releases_of(framework):
        if not request.specifier.contains(release.version, prereleases=True):
            continue
        if not python_ok(release.python, target.python):
            rejections.append((release.version, "", f"no wheel for Python {target.python}"))
            passed_over.append((release.version, rejections[-1][2]))
            continue
        companion_problem = _companion_rejection(release, request)
        python_problem = None if companion_problem else _companion_python_rejection(release, request, target)
        if companion_problem or python_problem:
            rejections.append((release.version, "", companion_problem or python_problem or ""))
            if python_problem:
                passed_over.append((release.version, python_problem))
            continue
        release = free_threaded_view(release.on_platform(target.platform), target)
        variants = kind.offered_variants(release, target, catalog)
        installed_variant = None
        if installed_dist is not None and installed_public == release.version:
            installed_variant = kind.installed_variant(target, variants) or _installed_variant(
                release, target.installed, installed_dist.version
            )
        release_options: list[Option] = []
        for variant in variants:
            problem = _variant_rejection(variant, request, target, catalog)
            if problem is NOT_ASKED:
                problem = platform_cpu_only(release, variant, target) or NOT_ASKED
            if problem:
                if problem is not NOT_ASKED:
                    rejections.append((release.version, variant.name, problem))
                continue
            fully = kind.fully_supported(variant, target, catalog)
            is_installed = installed_variant is not None and installed_variant == variant
            option = Option(
                framework,
                release,
                variant,
                is_installed,
                fully,
                installed_dist.version if is_installed and installed_dist else None,
            )
            problem, lacks = index.problem(option, request, target, allow_unconfirmed)
            if problem:
                rejections.append((release.version, variant.name, problem))
                not_the_device.append((release.version, variant.name))
                if lacks:
                    missing.append((release.version, f"{option.label} {variant.name}", problem))
                continue
            (kept if is_installed else release_options).append(option)
        fresh.extend(_variant_preference(release_options))
    passed_over.sort(key=lambda item: item[0], reverse=True)
    found = (tuple(kept + fresh), tuple(rejections), tuple(passed_over), tuple(missing))
    return _Candidates(*found, asked=request.variant, not_the_device=tuple(not_the_device))


# ---------------------------------------------------------------------------------------------
# Joint choice over NVIDIA pins


def _wheel_cuda_major(option: Option) -> int | None:
    """The CUDA major of the NVIDIA wheels a variant pulls in (None: it pins none)."""
    cuda = option.variant.cuda
    return cuda.major if cuda is not None and option.variant.pins else None


def _clashes(a: Option, b: Option) -> list[str]:
    """Why ``a`` and ``b`` cannot share one set of NVIDIA wheels (empty when they can).

    Both must pin wheels of one CUDA major, and every NVIDIA package both pin must admit a
    common version. Two frameworks the runtime already has are the image's business.
    """
    if a.installed and b.installed:
        return []
    major_a, major_b = _wheel_cuda_major(a), _wheel_cuda_major(b)
    if major_a is not None and major_b is not None and major_a != major_b:
        return [
            f"{a.label} {a.variant.name} brings CUDA {major_a} wheels; {b.label} "
            f"{b.variant.name} brings CUDA {major_b} wheels"
        ]
    found = []
    for pin_a in a.pins():
        name = canonicalize_name(pin_a.name)
        for pin_b in b.pins():
            if canonicalize_name(pin_b.name) != name:
                continue
            if not specifiers_meet([pin_a.specifier, pin_b.specifier]):
                found.append(f"{a.label} pins {pin_a}; {b.label} needs {name}{pin_b.specifier}")
    return sorted(found, key=lambda text: "cudnn" not in text)


def _joint_choice(
    per_framework: Sequence[Sequence[Option]], accept: Callable[[tuple[Option, ...]], bool]
) -> tuple[Option, ...] | None:
    """The first combination, newest first in framework order, whose pins admit one set and
    that ``accept`` takes (every CUDA package has a build that fits it)."""

    def extend(chosen: tuple[Option, ...], depth: int) -> tuple[Option, ...] | None:
        if depth == len(per_framework):
            return chosen if accept(chosen) else None
        for option in per_framework[depth]:
            if all(not _clashes(prev, option) for prev in chosen):
                found = extend((*chosen, option), depth + 1)
                if found is not None:
                    return found
        return None

    return extend((), 0)


def _range_hint(
    framework: Framework, good: Sequence[Version], allowed: Version, everything: Sequence[Version]
) -> str:
    """A short specifier pointing from ``allowed`` towards the nearest ``good`` releases."""
    newer = [v for v in good if v > allowed]
    older = [v for v in good if v < allowed]
    if newer:
        return f"{framework}>={min(newer).major}.{min(newer).minor}"
    if older:
        above = [v for v in everything if v > max(older)]
        if above:
            return f"{framework}<{min(above).major}.{min(above).minor}"
    return f"{framework}=={allowed.major}.{allowed.minor}.*"


def _clash_message(
    per_framework: Sequence[Sequence[Option]], unconstrained: Sequence[Sequence[Option]]
) -> str:
    best = [options[0] for options in per_framework]
    lines = ["no combination of the allowed releases shares one set of NVIDIA wheels:"]
    for a, b in itertools.combinations(best, 2):
        clashes = _clashes(a, b)
        if not clashes:
            continue
        fixes = []
        for moving, fixed in ((a, b), (b, a)):
            pool = unconstrained[POSITION[moving.framework]]
            fixed_options = per_framework[best.index(fixed)]
            everything = sorted({o.release.version for o in pool})
            good = sorted(
                {o.release.version for o in pool if any(not _clashes(o, other) for other in fixed_options)}
            )
            if good:
                fixes.append(_range_hint(moving.framework, good, moving.release.version, everything))
        hint = f": use {' or '.join(fixes)}" if fixes else ""
        lines.append(f"  {clashes[0]}{hint}")
    if len(lines) == 1:
        labels = ", ".join(o.label for o in best)
        lines.append(f"  each pair fits, but no three releases together ({labels} and older)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Reasons


def _reason(option: Option, request: FrameworkRequest, target: Target, catalog: Catalog) -> str:
    spec = str(request.specifier) or "any version"
    variant = option.variant
    if option.installed:
        head = f"already installed ({option.framework} {option.installed_version}), satisfies {spec}"
    else:
        head = f"newest release satisfying {spec} that runs on the target"
    return f"{head}; {accelerator_of(target).why(variant, option.fully_supported, target, catalog)}"


def _passed_over_text(option: Option, passed_over: Sequence[tuple[Version, str]]) -> str:
    """Why the newer releases the target's Python rules out were not taken (the newest one named
    with its reason, the rest counted); empty when none is newer than the choice."""
    newer = [(version, why) for version, why in passed_over if version > option.release.version]
    if not newer:
        return ""
    version, why = newer[0]
    more = (
        f" (and {len(newer) - 1} more newer release{'s' if len(newer) > 2 else ''})" if len(newer) > 1 else ""
    )
    return f"; not {version}{more}: {why}"


def _warnings(
    chosen: Sequence[Option],
    requests: Sequence[FrameworkRequest],
    profile: Profile,
    target: Target,
    catalog: Catalog,
    index: _Index,
) -> list[str]:
    kind = accelerator_of(target)
    builds = [ChosenBuild(o.label, o.release, o.variant, o.fully_supported) for o in chosen]
    warnings = kind.warnings(builds, profile, target, catalog)
    for option, build, request in zip(chosen, builds, requests, strict=True):
        variant = option.variant
        if variant.unconfirmed is not None and not index.confirms(option, request, target):
            warnings.append(f"{option.label} {variant.name} is unconfirmed: {variant.unconfirmed}")
        warnings.extend(kind.build_warnings(build, target, catalog))
        present = target.installed.get(option.framework.value)
        if present is not None and not option.installed:
            old = present.parsed_version
            change = "replaces"
            if old is not None and Version(old.public) > option.release.version:
                change = "downgrades"
            warnings.append(
                f"{change} the installed {option.framework} {present.version} with "
                f"{option.release.version}+{variant.local_tag}"
                if variant.local_tag
                else f"{change} the installed {option.framework} {present.version} with "
                f"{option.release.version}"
            )
    return warnings


def _package_warnings(chosen: Sequence[Candidate], target: Target) -> list[str]:
    """What the target's kind warns of each CUDA package build chosen, named as resolve shows
    it (``cupy (cupy-rocm-7-0) 14.2.0``)."""
    kind = accelerator_of(target)
    warnings = []
    for candidate in chosen:
        name, build = candidate.request.name, candidate.build
        shown = f"{name} ({build.distribution})" if build.distribution != name else name
        warnings.extend(kind.package_warnings(f"{shown} {candidate.release.version}", build, target))
    return warnings


# ---------------------------------------------------------------------------------------------


def _turned_down_for_components(
    variant: Variant, request: FrameworkRequest, target: Target, catalog: Catalog
) -> bool:
    """Whether the component pins are what keeps ``variant`` off the target (and not its
    Python, driver or arch list first)."""
    problem = component_rejection(variant, target, catalog)
    return problem is not None and _variant_rejection(variant, request, target, catalog) == problem


def _component_hint(
    request: FrameworkRequest, target: Target, catalog: Catalog, allow_unconfirmed: bool, index: _Index
) -> str:
    """What to change when a release the profile allows was turned down for its NVIDIA
    component pins: the releases whose pins do cover the GPUs."""
    refused = [
        release.version
        for release in catalog.releases_of(request.framework)
        if request.specifier.contains(release.version, prereleases=True)
        and any(
            _turned_down_for_components(v, request, target, catalog)
            for v in release.on_platform(target.platform).variants
        )
    ]
    if not refused:
        return ""
    open_request = dataclasses.replace(request, specifier=SpecifierSet())
    options = _candidates(open_request, target, catalog, allow_unconfirmed, index).options
    good = sorted({o.release.version for o in options})
    if not good:
        return "\n  no release in the catalog pins components with kernels for these GPUs"
    everything = sorted(r.version for r in catalog.releases_of(request.framework))
    hint = _range_hint(request.framework, good, max(refused), everything)
    return f"\n  to change: allow {hint} (releases whose pins carry kernels for these GPUs)"


def _all_candidates(
    profile: Profile,
    requests: Sequence[FrameworkRequest],
    target: Target,
    catalog: Catalog,
    allow: bool,
    index: _Index,
) -> tuple[list[tuple[Option, ...]], dict[Framework, _Candidates], list[tuple[Option, ...]]]:
    """Each requested framework's candidates, best first (none: exit 3, saying why); all it
    found (the releases passed over for the target's Python, the builds the index lacks); and,
    by framework position, the candidates of any version, for naming what clashes."""
    per_framework: list[tuple[Option, ...]] = []
    passed_over: dict[Framework, _Candidates] = {}
    unconstrained: list[tuple[Option, ...]] = [() for _ in ORDER]
    for request in requests:
        unknown = unknown_variant(request, catalog)
        if unknown:
            raise ResolutionError(f"{profile.path.name}: frameworks.{request.framework}.variant: {unknown}")
        found = _candidates(request, target, catalog, allow, index)
        if not found.options:
            shown = grouped_rejections(request.framework, [(v, why) for v, _, why in found.rejections])
            detail = "".join(f"\n  {r}" for r in shown) or no_match(request, catalog)
            open_request = dataclasses.replace(request, specifier=SpecifierSet())
            why_not = _candidates(open_request, target, catalog, allow, index).why_not
            nearest = nearest_lines(catalog, request.framework, target, request.specifier, why_not)
            detail += "".join(f"\n  {line}" for line in nearest)
            detail += _component_hint(request, target, catalog, allow, index)
            raise ResolutionError(
                f"{profile.path.name}: frameworks.{request.framework}: no release satisfying "
                f"{str(request.specifier) or 'any version'} runs on the target{detail}"
            )
        per_framework.append(found.options)
        passed_over[request.framework] = found
        open_request = FrameworkRequest(request.framework, SpecifierSet(), request.variant)
        unconstrained[POSITION[request.framework]] = _candidates(
            open_request, target, catalog, allow, index
        ).options
    return per_framework, passed_over, unconstrained


def _choice(
    option: Option,
    request: FrameworkRequest,
    found: _Candidates,
    brought: dict[Framework, list[str]],
    profile: Profile,
    target: Target,
    catalog: Catalog,
    allow_unconfirmed: bool,
    index: _Index,
) -> FrameworkChoice:
    """The choice of ``option`` for ``request``, with every reason for it."""
    kind = accelerator_of(target)
    reason = _reason(option, request, target, catalog)
    reason += _passed_over_text(option, found.passed_over)
    reason += passed_over_text((label, why) for v, label, why in found.missing if v >= option.release.version)
    if brought.get(option.framework):
        held = ", ".join(brought[option.framework])
        reason += f"; NVIDIA components held to {held} so that their kernels cover every GPU"
    if option.variant.unconfirmed is not None:
        by = "--allow-unconfirmed" if allow_unconfirmed else "the profile's [catalog] allow_unconfirmed"
        by = f"allowed by {by}"
        if index.confirms(option, request, target):
            by = CONFIRMED
        reason += f"; unconfirmed ({option.variant.unconfirmed}), {by}"
    overlay = option.variant.overlay or option.release.overlay
    if overlay is not None:
        reason += f"; from the catalog overlay {overlay}"
    return FrameworkChoice(
        framework=option.framework,
        release=option.release.version,
        variant=option.variant.name,
        index_url=index_url(option.variant.index_url, profile.install),
        requirements=(
            *requirements(option, request, target.installed),
            *kind.requirements(option.variant),
        ),
        installed=option.installed,
        reason=reason,
        cuda=option.variant.cuda,
        pins=option.variant.pins,
        archs=option.variant.archs,
        find_links=kind.find_links(option.variant),
        catalog_file=overlay,
        rocm=option.variant.rocm,
        gfx=option.variant.gfx,
    )


def resolve(
    profile: Profile,
    target: Target,
    catalog: Catalog,
    *,
    allow_unconfirmed: bool = False,
    facts: IndexFacts = NO_FACTS,
) -> Resolution:
    """Choose a release and variant for every framework the profile wants, jointly.

    Builds marked unconfirmed are taken only where ``allow_unconfirmed`` (``--allow-unconfirmed``)
    or the profile's ``[catalog] allow_unconfirmed`` says so, or ``facts`` (what the indexes
    serve, read by the application layer) confirm them; a build its index lacks is passed over."""
    allow = allow_unconfirmed or profile.allow_unconfirmed
    index = _Index(facts, profile.install)
    check_plain(profile, facts)
    _check_python(profile, target)
    requests = sorted(profile.frameworks, key=lambda r: POSITION[r.framework])
    per_framework, found, unconstrained = _all_candidates(profile, requests, target, catalog, allow, index)
    plan = plan_packages(profile, target, catalog, allow, facts)
    free = _joint_choice(per_framework, lambda c: accepts(plan, _picks(c, catalog), keep=False))
    chosen = (
        _joint_choice(per_framework, lambda c: accepts(plan, _picks(c, catalog), keep=True))
        if plan.image
        else None
    ) or free
    if chosen is None:
        alone = _joint_choice(per_framework, lambda combo: True) if plan.requests else None
        if alone is not None:
            raise ResolutionError(refusal(plan, _picks(alone, catalog), profile))
        raise ResolutionError(
            f"{profile.path.name}: frameworks: " + _clash_message(per_framework, unconstrained)
        )
    picks = _picks(chosen, catalog)
    packages = choose(plan, picks) or ()
    constraints, brought = _constraints(chosen, target, catalog)
    choices = [
        _choice(
            option,
            request,
            found[option.framework],
            brought,
            profile,
            target,
            catalog,
            allow_unconfirmed,
            index,
        )
        for option, request in zip(chosen, requests, strict=True)
    ]
    floors = [catalog.floor_driver(o.variant.cuda) for o in chosen if o.variant.cuda is not None]
    floors += package_floors(packages, catalog)
    required = max((f for f in floors if f is not None), default=None)
    chosen_packages = package_choices(packages, plan, picks, target, catalog, profile.install)
    return Resolution(
        profile_name=profile.name,
        profile_hash=profile.content_hash,
        target=target,
        choices=tuple(choices),
        packages=tuple(str(r) for r in profile.requirements),
        apt=profile.apt,
        env=profile.env,
        warnings=tuple(
            dict.fromkeys(
                [
                    *_warnings(chosen, requests, profile, target, catalog, index),
                    *_package_warnings(packages, target),
                    *misplaced(profile.requirements, profile.path.name),
                    *image_warnings(plan, catalog, picks, packages, _picks(free or chosen, catalog)),
                    *_yanked(facts, choices, chosen_packages, profile),
                    *([f"not checked against the index: {'; '.join(facts.notes)}"] if facts.notes else []),
                ]
            )
        ),
        required_driver=required,
        install=profile.install,
        constraints=constraints,
        cuda_packages=chosen_packages,
    )


def _check_python(profile: Profile, target: Target) -> None:
    """The profile's ``python`` admits the target's (exit 3 where it does not)."""
    if profile.python is not None and not profile.python.contains(target.python, prereleases=True):
        raise ResolutionError(
            f"{profile.path.name}: python: the profile needs Python {profile.python}; "
            f"the target has {target.python_given}"
        )


def _yanked(
    facts: IndexFacts,
    choices: Sequence[FrameworkChoice],
    packages: Sequence[PackageChoice],
    profile: Profile,
) -> list[str]:
    """A warning for each file to install whose every file the target could take is yanked."""
    pinned: list[tuple[str | None, Sequence[str], str | None]] = [
        (c.index_url, c.requirements, c.find_links) for c in choices if not c.installed
    ]
    pinned += [(p.index_url, p.requirements, p.find_links) for p in packages if not p.installed]
    pinned.append((None, [str(r) for r in profile.requirements], None))
    return yanked_warnings(facts, pinned)


def _picks(combo: Sequence[Option], catalog: Catalog) -> tuple[Pick, ...]:
    return tuple(Pick.of(o.framework, o.release.version, o.variant, catalog) for o in combo)
