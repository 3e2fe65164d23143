"""The CUDA packages around the frameworks, chosen jointly with them (docs/cuda-packages.md).

Each package build must run on the target (its Python, its CUDA major on the driver, kernels for
every GPU) and fit the frameworks chosen: the torch release its wheel requires, the CUDA major
every GPU build shares, NVIDIA wheels that admit one version with the frameworks' pins. The
resolver's joint search takes the newest framework combination for which every package has a
fitting build (:func:`choose`), then the newest release of each package that fits it.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv.accelerators.base import NOT_ASKED
from colabenv.accelerators.eligibility import UNCONFIRMED_HINT, build_floor, platform_missing
from colabenv.accelerators.registry import accelerator_of
from colabenv.catalog.components import nvidia_requirements, spec_boundaries
from colabenv.errors import ProfileError, ResolutionError, printable
from colabenv.models import (
    Catalog,
    CudaPackage,
    Framework,
    InstallSettings,
    PackageBuild,
    PackageChoice,
    PackageRelease,
    PackageRequest,
    Profile,
    Target,
    Variant,
)
from colabenv.models.availability import NO_FACTS, IndexFacts
from colabenv.models.frameworks import package_of
from colabenv.models.frozen import model
from colabenv.resolve.confirm import CONFIRMED, confirmed, missing_file, passed_over_text
from colabenv.resolve.explain import grouped_rejections
from colabenv.resolve.platforms import free_threaded_rejection, tested_only

if TYPE_CHECKING:
    from packaging.requirements import Requirement

PYTORCH_INDEX = "https://download.pytorch.org/whl"


@model
class Pick:
    """A framework build chosen (or tried) by the resolver, as the packages see it."""

    framework: Framework
    version: Version
    variant: Variant
    requirements: tuple[tuple[str, Requirement], ...]
    """The NVIDIA wheels (and the rest) the build requires, each with the pin it comes from,
    through ``cuda-toolkit[...]`` too (:func:`colabenv.catalog.components.nvidia_requirements`)."""

    @classmethod
    def of(cls, framework: Framework, version: Version, variant: Variant, catalog: Catalog) -> Pick:
        return cls(framework, version, variant, nvidia_requirements(variant.pin_texts, catalog.components))


@model
class Candidate:
    """A package build that runs on the target, before it is held to the frameworks."""

    request: PackageRequest
    release: PackageRelease
    build: PackageBuild
    installed_version: str | None = None
    confirmed: bool = False
    """An unconfirmed build the index serves (taken, and its reason says so)."""


@model
class PackagePlan:
    """For each package the profile asks for, its candidates on the target, best first."""

    requests: tuple[PackageRequest, ...] = ()
    candidates: tuple[tuple[Candidate, ...], ...] = ()
    left_out: tuple[str, ...] = ()
    """Why each package the profile names is left out (a target without an NVIDIA GPU)."""
    image: tuple[tuple[Candidate, ...], ...] = ()
    """The runtime's own CUDA packages the profile does not name (Colab's cuDF), each as the
    builds of its installed release: the frameworks are chosen to keep them where they can."""
    image_unknown: tuple[str, ...] = ()
    """A warning for each of the runtime's own CUDA packages whose release the catalog lacks."""
    passed_over: tuple[tuple[Candidate, str], ...] = ()
    """The builds the target itself rules out (a Python without a wheel, a GPU without kernels),
    each with why: what a refusal names where one of them was built for the chosen torch."""
    index_missing: tuple[tuple[Candidate, str], ...] = ()
    """The builds passed over for a file their index lacks, each with the file."""

    @functools.cached_property
    def memo(self) -> dict[tuple[tuple[str, str, str], ...], tuple[Candidate, ...] | None]:
        """:func:`choose`'s answers for this plan, by the frameworks' (name, release, build):
        the joint search asks of every combination, and hashing the plan itself would cost
        more than the answer."""
        return {}


# ---------------------------------------------------------------------------------------------
# NVIDIA wheels that must admit one version


def candidate_versions(specs: Iterable[SpecifierSet]) -> list[Version]:
    """The versions worth trying against ``specs`` together: each bound, and just above an
    exclusive one."""
    return sorted({version for spec in specs for version in spec_boundaries(spec)})


def specifiers_meet(specs: Sequence[SpecifierSet]) -> bool:
    """Whether one version satisfies all of ``specs``."""
    return any(all(s.contains(v, prereleases=True) for s in specs) for v in candidate_versions(specs))


# ---------------------------------------------------------------------------------------------
# On the target


def _target_rejection(build: PackageBuild, target: Target, catalog: Catalog) -> str | None:
    """Why ``build`` cannot run on ``target``; None when it can, :data:`NOT_ASKED` for a build of
    another kind (a ROCm build on NVIDIA GPUs, a CUDA one on AMD GPUs), passed over unlisted: the
    target's kind decides its device's part (:meth:`AcceleratorKind.package_rejection`)."""
    device = accelerator_of(target).package_rejection(build, target, catalog)
    if device is NOT_ASKED:
        return device
    if build.python is not None and not build.python.contains(target.python, prereleases=True):
        return f"{build.name} has no wheel for Python {target.python}"
    missing = platform_missing(build.name, build.platforms, target)
    if missing is not None:
        return missing
    free_threaded = free_threaded_rejection(build, target)
    return free_threaded if free_threaded is not None else device


def _installed_version(build: PackageBuild, release: PackageRelease, target: Target) -> str | None:
    present = target.installed.get(build.distribution)
    if present is None or present.parsed_version is None:
        return None
    if Version(present.parsed_version.public) != release.version:
        return None
    return present.version if (present.parsed_version.local or None) == build.local_tag else None


def _unknown(request: PackageRequest, catalog: Catalog, profile: Profile) -> str | None:
    package = catalog.package(request.name)
    if package is None:
        known = ", ".join(sorted(p.name for p in catalog.packages)) or "none"
        return (
            f"the catalog has no CUDA package {request.name} (known: {known}; a catalog overlay "
            "adds one: docs/cuda-packages.md)"
        )
    builds = {b.name for r in package.releases for b in r.builds}
    if request.variant is not None and request.variant not in builds:
        known = ", ".join(sorted(builds))
        return f"{printable(request.variant)!r} is not a build of {request.name} (known: {known})"
    torch_bound = any(b.torch is not None for r in package.releases for b in r.builds)
    if torch_bound and profile.framework(Framework.TORCH) is None:
        return f"{request.name} is built against torch: name torch in [frameworks] too"
    return None


def _pinned(build: PackageBuild, release: PackageRelease) -> str:
    """The requirement a build of ``release`` is installed as (its local tag, its extra)."""
    version = f"{release.version}+{build.local_tag}" if build.local_tag else str(release.version)
    extra = f"[{build.extra}]" if build.extra else ""
    return f"{build.distribution}{extra}=={version}"


def _on_index(
    build: PackageBuild, release: PackageRelease, facts: IndexFacts, install: InstallSettings
) -> tuple[str | None, bool]:
    """The file the build's index lacks (None: it has it, or was not asked; a find-links
    page is not an index), and whether the index serves it."""
    if build.find_links is not None:
        return None, False
    where = index_url(build.index_url, install)
    text = _pinned(build, release)
    return missing_file(facts, where, [text]), confirmed(facts, where, [text])


def _refuse_without_cuda(profile: Profile, target: Target, catalog: Catalog) -> str:
    """What the target has instead of a GPU the packages have builds for (empty: it has one),
    after the ``[packages]`` requirements the kind refuses (a CUDA package's CUDA build on AMD
    GPUs). A package whose builds are all of another kind is refused by :func:`_own_releases`."""
    kind = accelerator_of(target)
    refused = kind.refused_requirements(profile.requirements, target, catalog)
    if refused is not None:
        raise ResolutionError(f"{profile.path.name}: packages.requirements: {refused}")
    return kind.lacks(target)


def _own_releases(
    package: CudaPackage, request: PackageRequest, target: Target, catalog: Catalog, profile: Profile
) -> list[PackageRelease]:
    """The package's releases on the target's platform with a build of the target's kind (a
    ROCm build on AMD GPUs), each with those builds alone; none at all is exit 3 naming the
    package, never left out (AMD GPUs and a package with no ROCm build)."""
    kind = accelerator_of(target)
    found = []
    for release in (r.on_platform(target.platform) for r in package.releases):
        own = tuple(b for b in release.builds if kind.package_rejection(b, target, catalog) is not NOT_ASKED)
        if own:
            found.append(release if own == release.builds else dataclasses.replace(release, builds=own))
    if not found:
        raise ResolutionError(
            f"{profile.path.name}: frameworks.{request.key}: {kind.no_package_build(request.name, target)}"
        )
    return found


def plan_packages(
    profile: Profile, target: Target, catalog: Catalog, allow_unconfirmed: bool, facts: IndexFacts = NO_FACTS
) -> PackagePlan:
    """Each package's candidates on the target; a package the catalog lacks is exit 2, one
    with no build that runs here exit 3, each naming what excludes it. A target without an
    NVIDIA GPU (``--cpu``, a TPU) gets none of them, each left out with a warning, as the
    frameworks get their CPU or TPU builds."""
    all_candidates = []
    passed: list[tuple[Candidate, str]] = []
    lacking: list[tuple[Candidate, str]] = []
    for request in profile.cuda_packages:
        key = f"frameworks.{request.key}"
        problem = _unknown(request, catalog, profile)
        if problem is not None:
            raise ProfileError(profile.path.name, key, problem)
    what = _refuse_without_cuda(profile, target, catalog)
    if what:
        left = tuple(
            f"{profile.path.name}: {key}: left out: {r.name} needs an NVIDIA GPU and the target has {what}"
            for r in profile.cuda_packages
            for key in (f"frameworks.{r.key}",)
        )
        return PackagePlan(left_out=left)
    for request in profile.cuda_packages:
        key = f"frameworks.{request.key}"
        package = catalog.package(request.name)
        assert package is not None
        found: list[Candidate] = []
        rejections: list[tuple[Version, str]] = []
        for release in _own_releases(package, request, target, catalog, profile):
            if not request.specifier.contains(release.version, prereleases=True):
                continue
            if not release.python.contains(target.python, prereleases=True):
                no_wheel = f"no wheel for Python {target.python}"
                rejections.append((release.version, no_wheel))
                passed.extend((Candidate(request, release, b, None), no_wheel) for b in release.builds)
                continue
            unconfirmed: dict[str, list[str]] = {}
            for build in (tested_only(b, target) for b in release.builds):
                if request.variant is not None and build.name != request.variant:
                    continue
                why = _target_rejection(build, target, catalog)
                installed = _installed_version(build, release, target)
                lacks, served = _on_index(build, release, facts, profile.install)
                if why is None and installed is None and lacks is not None:
                    rejections.append((release.version, lacks))
                    lacking.append((Candidate(request, release, build, None), lacks))
                    continue
                if why is None and build.unconfirmed is not None and not allow_unconfirmed and not served:
                    unconfirmed.setdefault(build.unconfirmed, []).append(build.name)
                    continue
                if why is not None:
                    rejections.append((release.version, why))
                    passed.append((Candidate(request, release, build, None), why))
                    continue
                found.append(
                    Candidate(request, release, build, installed, served and build.unconfirmed is not None)
                )
            for reason, names in unconfirmed.items():
                what = f"{names[0]} is" if len(names) == 1 else f"{', '.join(names)} are"
                rejections.append((release.version, f"{what} unconfirmed ({reason}); {UNCONFIRMED_HINT}"))
        if not found:
            lines = "".join(f"\n  {line}" for line in grouped_rejections(request.name, rejections))
            lines = lines or f"\n  the catalog has no {request.name} release matching it"
            raise ResolutionError(
                f"{profile.path.name}: {key}: no release of {request.name} satisfying "
                f"{str(request.specifier) or 'any version'} runs on the target{lines}"
            )
        installed_first = sorted(found, key=lambda c: c.installed_version is None)
        all_candidates.append(tuple(installed_first))
    image, unknown = _image(target, catalog, profile)
    return PackagePlan(
        profile.cuda_packages,
        tuple(all_candidates),
        image=image,
        passed_over=tuple(passed),
        image_unknown=unknown,
        index_missing=tuple(lacking),
    )


# ---------------------------------------------------------------------------------------------
# Against the frameworks


def fit_problem(candidate: Candidate, picks: Sequence[Pick], others: Sequence[Candidate] = ()) -> str | None:
    """Why ``candidate`` cannot sit beside the frameworks ``picks`` and the packages ``others``
    already chosen; None when it can."""
    build, name = candidate.build, candidate.request.name
    torch = next((p for p in picks if p.framework is Framework.TORCH), None)
    if build.torch is not None:
        if torch is None:
            return (
                f"{name} {candidate.release.version} is built against torch{build.torch}; no torch is chosen"
            )
        if not build.torch.contains(torch.version, prereleases=True):
            return (
                f"{name} {candidate.release.version} needs torch{build.torch} (torch {torch.version} tried)"
            )
    for pick in picks:
        problem = _toolkit_problem(candidate, pick, pick is torch)
        if problem is not None:
            return problem
    loaded = _loaded_library(candidate, picks)
    if loaded is not None and loaded != build:
        return f"{name} {candidate.release.version} loads its {loaded.name} library here, not {build.name}"
    for other in others:
        for first, second in ((candidate, other), (other, candidate)):
            for needed, spec in first.release.needs:
                if needed == second.request.name and not spec.contains(
                    second.release.version, prereleases=True
                ):
                    return (
                        f"{first.request.name} {first.release.version} requires {needed}{spec}; "
                        f"{needed} {second.release.version} tried"
                    )
        if other.build.cuda_major != build.cuda_major and build.cuda is not None:
            return (
                f"{name} {build.name} is built for CUDA {build.cuda_major}; {other.request.name} "
                f"{other.build.name} for CUDA {other.build.cuda_major}"
            )
    pins = [(f"{p.framework} {p.version}", label, pin) for p in picks for label, pin in p.requirements]
    pins += [(f"{o.request.name} {o.release.version}", str(pin), pin) for o in others for pin in o.build.pins]
    for mine in build.pins:
        for who, label, pin in pins:
            if canonicalize_name(pin.name) == canonicalize_name(mine.name) and not specifiers_meet(
                [mine.specifier, pin.specifier]
            ):
                return f"{name} {candidate.release.version} requires {mine}; {who} pins {label}"
    return None


def _toolkit_problem(candidate: Candidate, pick: Pick, torch: bool) -> str | None:
    """Why ``candidate``'s build cannot sit beside the framework build ``pick`` (``torch``: the
    torch it is built against): a CUDA build needs the frameworks' CUDA major, and one built
    against torch a CUDA torch; a ROCm build built against torch needs torch's ROCm build of its
    own ROCm (xformers' ``rocm6.4`` wheel beside torch ``rocm6.4``: the joint choice)."""
    build, name, version = candidate.build, candidate.request.name, candidate.release.version
    cuda = pick.variant.cuda
    if build.cuda is not None:
        if cuda is not None and cuda.major != build.cuda.major:
            return (
                f"{name} {version} {build.name} is built for CUDA {build.cuda.major}; "
                f"{pick.framework} {pick.version} {pick.variant.name} is CUDA {cuda.major}"
            )
        if build.torch is not None and torch and cuda is None:
            return f"{name} {build.name} needs a CUDA torch ({pick.variant.name} tried)"
    elif build.torch is not None and torch and pick.variant.rocm != build.rocm:
        return (
            f"{name} {version} {build.name} is built against torch's ROCm {build.rocm} build "
            f"(torch {pick.version} {pick.variant.name} tried)"
        )
    return None


def _loaded_library(candidate: Candidate, picks: Sequence[Pick]) -> PackageBuild | None:
    """Builds of one release that are one wheel (the same distribution, place and local tag)
    are the libraries that wheel carries, one per CUDA (bitsandbytes): the one loaded is the
    one for the frameworks' CUDA, else the newest older one of the major, else the oldest
    newer one. None: the build is a wheel of its own, or no framework has a CUDA."""
    build = candidate.build
    place = (build.distribution, build.index_url, build.find_links, build.local_tag)
    same = [
        b
        for b in candidate.release.builds
        if (b.distribution, b.index_url, b.find_links, b.local_tag) == place
    ]
    runtime = next((p.variant.cuda for p in picks if p.variant.cuda is not None), None)
    if len(same) < 2 or runtime is None or build.cuda is None:
        return None
    line = sorted((b for b in same if b.cuda_major == runtime.major), key=lambda b: b.toolkit)
    older = [b for b in line if b.toolkit <= runtime]
    return older[-1] if older else (line[0] if line else None)


def _order(candidates: Sequence[Candidate], picks: Sequence[Pick]) -> list[Candidate]:
    """Installed first, then newest release; within a release the build of the frameworks'
    own CUDA (or ROCm), then the newest CUDA (or ROCm)."""
    toolkits = {t for p in picks for t in (p.variant.cuda, p.variant.rocm) if t is not None}
    ordered = sorted(
        candidates,
        key=lambda c: (
            c.build.toolkit not in toolkits,
            -c.build.toolkit.major,
            [-part for part in c.build.toolkit.release],
        ),
    )
    ordered.sort(key=lambda c: c.release.version, reverse=True)  # stable: the build order kept within
    ordered.sort(key=lambda c: c.installed_version is None)
    return ordered


def choose(plan: PackagePlan, picks: tuple[Pick, ...]) -> tuple[Candidate, ...] | None:
    """The best candidate of each package that fits ``picks`` and the others, or None."""
    key = tuple((p.framework.value, str(p.version), p.variant.name) for p in picks)
    if key not in plan.memo:
        plan.memo[key] = _choose(plan, picks)
    return plan.memo[key]


def _choose(plan: PackagePlan, picks: tuple[Pick, ...]) -> tuple[Candidate, ...] | None:

    def extend(chosen: tuple[Candidate, ...], depth: int) -> tuple[Candidate, ...] | None:
        if depth == len(plan.candidates):
            return chosen
        for candidate in _order(plan.candidates[depth], picks):
            if fit_problem(candidate, picks, chosen) is None:
                found = extend((*chosen, candidate), depth + 1)
                if found is not None:
                    return found
        return None

    return extend((), 0)


def refusal(plan: PackagePlan, picks: tuple[Pick, ...], profile: Profile) -> str:
    """Why no package build fits the frameworks ``picks`` (the newest the profile allows)."""
    shown = ", ".join(f"{p.framework} {p.version} {p.variant.name}" for p in picks)
    lines = [
        f"{profile.path.name}: frameworks: no combination of the allowed releases fits every CUDA package"
    ]
    if shown:
        lines[0] += f"; with the newest frameworks that fit one another ({shown}):"
    for request, candidates in zip(plan.requests, plan.candidates, strict=True):
        problems = [fit_problem(c, picks) for c in _order(candidates, picks)]
        if any(problem is None for problem in problems):
            continue
        lines.extend(f"  {problem}" for problem in list(dict.fromkeys(p for p in problems if p))[:3])
        lines.extend(f"  {line}" for line in _ruled_out_for(request, plan, picks))
        torches = sorted({str(c.build.torch) for c in candidates if c.build.torch is not None})
        if torches:
            lines.append(
                f"  to change: allow a torch that {request.name} is built against ({' or '.join(torches)})"
            )
    if len(lines) == 1:
        lines.extend(f"  {problem}" for problem in _pair_problems(plan, picks))
    return "\n".join(lines)


def _ruled_out_for(request: PackageRequest, plan: PackagePlan, picks: tuple[Pick, ...]) -> list[str]:
    """The builds of ``request`` made for the chosen torch that the target itself rules out
    (pyg-lib 0.7.0's torch 2.9 builds on Python 3.14), at most three."""
    torch = next((p for p in picks if p.framework is Framework.TORCH), None)
    found = [
        f"{request.name} {c.release.version}: {why}"
        for c, why in plan.passed_over
        if c.request == request
        and torch is not None
        and c.build.torch is not None
        and c.build.torch.contains(torch.version, prereleases=True)
    ]
    return list(dict.fromkeys(found))[:3]


def _pair_problems(plan: PackagePlan, picks: tuple[Pick, ...]) -> list[str]:
    """Where every package fits the frameworks alone: the pairs of packages with no builds
    that fit together, each with the problem of their best builds."""
    fitting = [
        [c for c in _order(cands, picks) if fit_problem(c, picks) is None] for cands in plan.candidates
    ]
    found = []
    for i, j in itertools.combinations(range(len(fitting)), 2):
        if any(fit_problem(b, picks, (a,)) is None for a in fitting[i] for b in fitting[j]):
            continue
        found.append(str(fit_problem(fitting[j][0], picks, (fitting[i][0],))))
    return found or ["each package fits the frameworks, but no builds of all of them fit together"]


# ---------------------------------------------------------------------------------------------
# The choices


def index_url(url: str | None, install: InstallSettings) -> str | None:
    """A catalog index URL as the profile's ``pytorch_index_url`` moves it (a mirror)."""
    if url is not None and install.pytorch_index_url and url.startswith(PYTORCH_INDEX):
        return install.pytorch_index_url.rstrip("/") + url[len(PYTORCH_INDEX) :]
    return url


def _reason(candidate: Candidate, picks: Sequence[Pick], target: Target, catalog: Catalog) -> str:
    request, build = candidate.request, candidate.build
    spec = str(request.specifier) or "any version"
    if candidate.installed_version is not None:
        parts = [f"already installed ({build.distribution} {candidate.installed_version}), satisfies {spec}"]
    else:
        parts = [f"newest release satisfying {spec} that runs on the target beside the frameworks"]
    said = accelerator_of(target).package_said(build, target, catalog)
    parts.append(said[0])
    torch = next((p for p in picks if p.framework is Framework.TORCH), None)
    if build.torch is not None and torch is not None:
        parts.append(f"built against torch{build.torch} (torch {torch.version} {torch.variant.name})")
    parts.extend(said[1:])
    if build.unconfirmed is not None:
        parts.append(f"unconfirmed ({build.unconfirmed}), {CONFIRMED if candidate.confirmed else 'allowed'}")
    if build.overlay is not None:
        parts.append(f"from the catalog overlay {build.overlay}")
    return "; ".join(parts)


def _passed_over(
    candidate: Candidate, plan: PackagePlan, picks: Sequence[Pick], chosen: Sequence[Candidate]
) -> str:
    """Why the newest newer release of the package was not taken (a backtrack is said), or ""."""
    others = tuple(c for c in chosen if c is not candidate)
    for candidates in plan.candidates:
        if candidate not in candidates:
            continue
        newer = [c for c in candidates if c.release.version > candidate.release.version]
        if not newer:
            return ""
        newest = max(c.release.version for c in newer)
        # the build of the candidate's own CUDA major says the most (not "built for CUDA 13")
        builds = sorted(
            (c for c in newer if c.release.version == newest),
            key=lambda c: c.build.cuda_major != candidate.build.cuda_major,
        )
        alone = [fit_problem(c, picks) for c in builds]
        if all(p is not None for p in alone):
            return f"; not {newest}: {alone[0]}"
        problems = [p for p in (fit_problem(c, picks, others) for c in builds) if p is not None]
        if problems:
            return f"; not {newest}: {problems[0]}"
    return ""


def package_choices(
    chosen: Sequence[Candidate],
    plan: PackagePlan,
    picks: Sequence[Pick],
    target: Target,
    catalog: Catalog,
    install: InstallSettings,
) -> tuple[PackageChoice, ...]:
    """The choices of the chosen candidates: requirement (the installed version where one is
    kept, else the release with the build's local tag), place, reason."""
    choices = []
    for candidate in chosen:
        build, release = candidate.build, candidate.release
        if candidate.installed_version is not None:
            requirement = f"{build.distribution}=={candidate.installed_version}"
        else:
            requirement = _pinned(build, release)
        lacked = [
            (f"{c.request.name} {c.release.version} {c.build.name}", why)
            for c, why in plan.index_missing
            if c.request == candidate.request and c.release.version >= release.version
        ]
        choices.append(
            PackageChoice(
                name=candidate.request.name,
                distribution=build.distribution,
                release=release.version,
                variant=build.name,
                cuda=build.cuda,
                index_url=index_url(build.index_url, install),
                find_links=build.find_links,
                requirements=(requirement,),
                reason=_reason(candidate, picks, target, catalog)
                + _passed_over(candidate, plan, picks, chosen)
                + passed_over_text(lacked),
                archs=build.archs,
                installed=candidate.installed_version is not None,
                catalog_file=build.overlay,
                rocm=build.rocm,
                gfx=build.gfx,
            )
        )
    return tuple(choices)


def package_floors(chosen: Sequence[Candidate], catalog: Catalog) -> list[Version]:
    """The driver floors the chosen builds need."""
    return [f for f in (build_floor(c.build, catalog) for c in chosen) if f is not None]


# ---------------------------------------------------------------------------------------------
# The image's own CUDA packages (Colab's cuDF, cuML, CuPy)


def _image(
    target: Target, catalog: Catalog, profile: Profile
) -> tuple[tuple[tuple[Candidate, ...], ...], tuple[str, ...]]:
    """The runtime's own CUDA packages the profile does not name and the catalog has the
    installed release of, each as that release's builds of its distribution; and a warning
    for each one whose release (or build of that distribution) the catalog lacks: nothing
    holds it to the frameworks."""
    named = {r.name for r in profile.cuda_packages}
    found = []
    unknown = []
    for present in target.installed.dists:
        names = package_of(present.name)
        package = catalog.package(names.name) if names is not None else None
        if package is None or package.name in named or present.parsed_version is None:
            continue
        release = package.release(Version(present.parsed_version.public))
        release = release.on_platform(target.platform) if release is not None else None
        builds = [b for b in release.builds if b.distribution == present.name] if release is not None else []
        request = PackageRequest(package.name, str(package.name), SpecifierSet())
        if release is not None and builds:
            found.append(tuple(Candidate(request, release, b, present.version) for b in builds))
            continue
        versions = sorted(r.version for r in package.releases)
        unknown.append(
            f"the image's {present.name} {printable(present.version)} is not in the catalog ({package.name} "
            f"{versions[0]} to {versions[-1]} there): it is not held to the chosen frameworks and may "
            f'fail to import; name it in [frameworks] ({package.name} = "*") to have a release the '
            "catalog knows chosen with them"
        )
    return tuple(found), tuple(unknown)


def accepts(plan: PackagePlan, picks: tuple[Pick, ...], *, keep: bool) -> bool:
    """Whether every package the profile names has a build that fits the frameworks ``picks``
    and, with ``keep``, every CUDA package of the image still has one (the resolver tries
    that first: the newest frameworks that keep the image's packages working)."""
    if choose(plan, picks) is None:
        return False
    return not keep or all(any(fit_problem(c, picks) is None for c in builds) for builds in plan.image)


def image_warnings(
    plan: PackagePlan,
    catalog: Catalog,
    picks: tuple[Pick, ...],
    chosen: Sequence[Candidate],
    free: tuple[Pick, ...] = (),
) -> list[str]:
    """A warning for each CUDA package the runtime already has, that the profile does not
    name, and that the chosen frameworks and packages leave without a fitting build (another
    CUDA major, an NVIDIA wheel moved under it, a torch it does not accept; no combination the
    profile allows keeps it): which package, why, and what to do (the release that would fit,
    or that none does). ``free``: what the frameworks would be without keeping them; where that
    differs, a warning says what was held back for them."""
    warnings = [*plan.left_out, *plan.image_unknown]
    if free and free != picks and plan.image:
        held = ", ".join(f"{p.framework} {p.version} {p.variant.name}" for p in picks)
        newer = ", ".join(f"{p.framework} {p.version} {p.variant.name}" for p in free)
        kept = ", ".join(f"{b[0].build.distribution} {b[0].installed_version}" for b in plan.image)
        warnings.append(
            f"chose {held}, not {newer}, so that the image's {kept} keep working; name them in "
            "[frameworks] to have them chosen with the frameworks instead"
        )
    for builds in plan.image:
        problems = [fit_problem(c, picks, chosen) for c in builds]
        if any(problem is None for problem in problems):
            continue
        first = builds[0]
        package = catalog.package(first.request.name)
        assert package is not None
        fits = [
            Candidate(first.request, r, b)
            for r in package.releases
            for b in r.builds
            if fit_problem(Candidate(first.request, r, b), picks, chosen) is None
        ]
        if fits:
            best = fits[0]
            todo = (
                f'name it in [frameworks] ({package.name} = "*") to move it to '
                f"{best.build.distribution} {best.release.version}"
            )
        else:
            todo = f"no {package.name} release in the catalog fits them: it may fail to import"
        warnings.append(
            f"the image's {first.build.distribution} {first.installed_version} does not fit the chosen "
            f"frameworks ({problems[0]}); {todo}"
        )
    return warnings
