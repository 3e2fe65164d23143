"""Make a lock: check the framework files on their indexes, run uv or pip-tools, record it all.

The resolvers (:mod:`colabenv.lock.resolvers`) run isolated from the user's pip and uv
configuration and bounded; the requests made here are colabenv's own (:mod:`colabenv.index.client`,
bounded in time and size), with index URLs expanded (``${VAR}`` credential references) only into
them; messages show the unexpanded form. When a resolver fails, the pages of the requirements
are read again here (:func:`check_pages`), so that a page without end, a stalled one, malformed
JSON or a million links is exit 4 naming its index, not the resolver's "no set of pins".

uv writes its answer as PEP 751 (``uv pip compile --format pylock.toml``), read with
:mod:`packaging.pylock`: it carries each file's URL (and its PEP 700 size and upload time where
the index gives them), so a ``pylock.toml`` needs no second pass over the indexes (it names no
package's index: uv's output does not say). pip-tools writes a requirements file; for a
``pylock.toml`` each hash's file (with its size and upload time) is then found on the indexes.
The resolution's component constraints (``nvidia-cudnn-cu12<9.11``) go to both resolvers as a
constraints file, and into the lock's header; the find-links page of a TPU build (an old
release's libtpu) goes to both resolvers and into the lock (``--find-links``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag
from packaging.utils import (
    InvalidWheelFilename,
    NormalizedName,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import Version

from colabenv.errors import IndexUnavailableError, LockError, LockResolverError, UsageError, printable
from colabenv.index.client import HTTP_DEADLINE_S, IndexFile, SimpleClient
from colabenv.index.urls import Redactor, default_index_url, strip_credentials
from colabenv.lock.content import Lock, LockedFile, LockedPackage, LockHeader, LockTarget
from colabenv.lock.fit import settled_markers
from colabenv.lock.image import image_pins
from colabenv.lock.python_needs import python_needs
from colabenv.lock.resolvers import (
    RESOLVER_MEMORY_MIB,
    IndexPlan,
    Resolver,
    ResolverRun,
    index_plan,
    pip_tools_refusal,
    run_resolver,
)
from colabenv.lock.wheel_tags import LOCK_GLIBC_MINOR, interpreter_tags, variant_note, variant_wheel
from colabenv.models import (
    Catalog,
    Framework,
    FrameworkChoice,
    LockedCudaPackage,
    LockedFramework,
    Profile,
    Resolution,
    Target,
)
from colabenv.models.frameworks import FACTS
from colabenv.models.frozen import model, record

Progress = Callable[[str], None]


DIAGNOSED_PAGES = 24
"""The most project pages read again to find the index that made a resolver fail."""


# ---------------------------------------------------------------------------------------------
# Wheel tags of a target


def target_tags(target: Target) -> frozenset[Tag]:
    """The wheel tags the lock's resolver takes for ``target`` (manylinux up to glibc 2.28)."""
    python = (target.python.major, target.python.minor)
    return frozenset(interpreter_tags(python, target.platform, LOCK_GLIBC_MINOR))


# ---------------------------------------------------------------------------------------------
# The framework file check


def _exact_pins(requirements: Iterable[str]) -> list[Requirement]:
    pins = []
    for text in requirements:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        specs = list(requirement.specifier)
        if len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version:
            pins.append(requirement)
    return pins


def _matching_wheels(
    files: Iterable[IndexFile], requirement: Requirement, tags: frozenset[Tag]
) -> tuple[list[IndexFile], list[str]]:
    """Wheels of the pinned version that install on the target; other files of that version."""
    wanted = canonicalize_name(requirement.name)
    good, other = [], []
    for file in files:
        if not file.filename.endswith(".whl"):
            continue
        try:
            name, version, _, wheel_tags = parse_wheel_filename(file.filename)
        except (InvalidWheelFilename, ValueError):
            continue
        if name != wanted or not requirement.specifier.contains(version, prereleases=True):
            continue
        if wheel_tags & tags:
            good.append(file)
        else:
            other.append(file.filename)
    return good, other


def _index_of(choice: FrameworkChoice, requirement: Requirement, default: str | None) -> str | None:
    """Where an exact pin of ``choice`` is served: the framework and its companions on the
    choice's index; what a TPU build adds (torch_xla, libtpu) on the default index, or on the
    build's find-links page, which is the resolvers' to read (None: not checked here)."""
    facts = FACTS[choice.framework]
    own = {*facts.dists, *facts.companions, *(name for name, _ in facts.plugins)}
    if canonicalize_name(requirement.name) in own:
        return choice.index_url or default
    return None if choice.find_links is not None else default


@record
class FrameworkFiles:
    """What the framework file check read: the files each framework's own project page listed,
    and the Requires-Python of each pinned wheel that installs on the target (none stated:
    left out)."""

    pages: dict[Framework, tuple[IndexFile, ...]]
    requires_python: tuple[str, ...]


def check_framework_files(
    resolution: Resolution,
    plan: IndexPlan,
    client: SimpleClient,
    progress: Progress,
    notice: Progress | None = None,
) -> FrameworkFiles:
    """Every exact framework pin has a wheel for the target on the index it comes from; the
    wheel-variant files of a pinned version are named to ``notice``, one line per project."""
    seen: dict[Framework, tuple[IndexFile, ...]] = {}
    requires_python: list[str] = []
    variants: dict[str, list[str]] = {}
    target = resolution.target
    tags = target_tags(target)
    py = f"cp{target.python.major}{target.python.minor}"
    default = plan.default or default_index_url()
    for choice in resolution.choices:
        for requirement in _exact_pins(choice.requirements):
            index = _index_of(choice, requirement, default)
            if index is None:
                continue
            version = next(iter(requirement.specifier)).version
            progress(f"checking {requirement.name} {version} on {index}")
            files = client.project_files(index, requirement.name)
            if files is None:
                raise IndexUnavailableError(
                    f"index {printable(index)} has no project "
                    f"{canonicalize_name(requirement.name)} (needed: {requirement.name}=={version})"
                )
            if canonicalize_name(requirement.name) == choice.framework.value:
                seen[choice.framework] = files
            variants.setdefault(str(canonicalize_name(requirement.name)), []).extend(
                _variant_files(files, requirement)
            )
            good, other = _matching_wheels(files, requirement, tags)
            requires_python.extend(f.requires_python for f in good if f.requires_python)
            if good:
                continue
            wanted = (
                f"{canonicalize_name(requirement.name).replace('-', '_')}-{version}-"
                f"{{{py},py3}}-*-{{{target.platform},manylinux*,any}}.whl"
            )
            seen_files = (
                f"; it has {', '.join(sorted(other)[:4])}"
                if other
                else f"; it has no file of {requirement.name} {version}"
            )
            raise IndexUnavailableError(
                printable(
                    f"index {index} does not serve {wanted} (for Python {target.python_minor} on "
                    f"{target.platform}){seen_files}"
                )
            )
    for project, names in variants.items():
        note = variant_note(project, names)
        if note is not None and notice is not None:
            notice(note)
    return FrameworkFiles(seen, tuple(requires_python))


def _variant_files(files: Iterable[IndexFile], requirement: Requirement) -> list[str]:
    """The wheel-variant files (:func:`variant_wheel`) of ``requirement``'s pinned version."""
    found = []
    for file in files:
        variant = variant_wheel(file.filename)
        if variant is None or variant[0] != canonicalize_name(requirement.name):
            continue
        if requirement.specifier.contains(variant[1], prereleases=True):
            found.append(file.filename)
    return found


@model
class KnownRelease:
    """What the catalog knows of a framework the profile asks for: the profile's specifier and
    the newest release the catalog has (what a lock compares the index with)."""

    framework: Framework
    specifier: SpecifierSet
    newest: Version


def known_releases(profile: Profile, catalog: Catalog) -> tuple[KnownRelease, ...]:
    """What the catalog knows of each framework ``profile`` asks for that it has releases of."""
    return tuple(
        KnownRelease(r.framework, r.specifier, catalog.releases_of(r.framework)[0].version)
        for r in profile.frameworks
        if catalog.releases_of(r.framework)
    )


def staleness_notices(
    seen: dict[Framework, tuple[IndexFile, ...]], known: Iterable[KnownRelease]
) -> list[str]:
    """One line per framework whose index page lists a release newer than the catalog's newest
    that the profile's specifier admits (final releases only)."""
    notices = []
    for item in known:
        newer = []
        for file in seen.get(item.framework, ()):
            try:
                _, version, _, _ = parse_wheel_filename(file.filename)
            except (InvalidWheelFilename, ValueError):
                continue
            public = Version(version.public)
            if public.is_prerelease or public.is_devrelease or public <= item.newest:
                continue
            if item.specifier.contains(public, prereleases=True):
                newer.append(public)
        if newer:
            notices.append(
                f"{item.framework} {max(newer)} is on the index but not in the "
                f"catalog: run `colabenv catalog refresh {item.framework}`"
            )
    return notices


def check_indexes_reachable(plan: IndexPlan, client: SimpleClient, checked: Iterable[str]) -> None:
    done = set(checked)
    for index in plan.all:
        if index not in done:
            client.reachable(index)


def check_pages(
    requirements: Iterable[str], plan: IndexPlan, find_links: Iterable[str], client: SimpleClient
) -> None:
    """Read the page of each requirement on each index, and each find-links page, with the
    bounded client (at most DIAGNOSED_PAGES): a page that is endless, stalled or not a page
    raises the client's error, naming its index."""
    names: list[str] = []
    for text in requirements:
        try:
            name = str(canonicalize_name(Requirement(text).name))
        except InvalidRequirement:
            continue
        if name not in names:
            names.append(name)
    default = default_index_url()
    indexes = list(plan.all) or ([default] if default else [])
    pages = [(index, name) for name in names for index in indexes][:DIAGNOSED_PAGES]
    for index, name in pages:
        client.project_files(index, name)
    for page in find_links:
        client.page_files(page)


# ---------------------------------------------------------------------------------------------
# Files for pylock.toml (pip-tools names only the hashes)


def attach_files(
    packages: Sequence[LockedPackage],
    plan: IndexPlan,
    client: SimpleClient,
    redact: Callable[[str], str],
    progress: Progress,
    find_links: Sequence[str] = (),
    requires_python: Callable[[str], None] = lambda _text: None,
) -> tuple[LockedPackage, ...]:
    """Each hash's file name and URL, its size and upload time where the page gives them, and
    the index it is on (for ``pylock.toml``); a file that no index serves is looked for on the
    ``find_links`` pages. The Requires-Python an index page gives for a file found there goes to
    ``requires_python``."""
    indexes = list(plan.extras)
    default = plan.default or default_index_url()
    if default:
        indexes.append(default)
    pages: dict[str, tuple[IndexFile, ...]] = {}
    found: list[LockedPackage] = []
    for package in packages:
        if all(f.name and f.url for f in package.files):
            found.append(package)
            continue
        progress(f"finding the files of {package.name} {package.version}")
        wanted = {f.sha256 for f in package.files}
        located: dict[str, LockedFile] = {}
        source: str | None = None
        for index in indexes:
            files = client.project_files(index, package.name)
            for file in files or ():
                if file.sha256 in wanted and file.sha256 not in located:
                    located[file.sha256] = _locked_file(file, redact)
                    source = source or index
                    if file.requires_python:
                        requires_python(file.requires_python)
            if len(located) == len(wanted):
                break
        for page in find_links:
            if len(located) == len(wanted):
                break
            if page not in pages:
                pages[page] = client.page_files(page)
            for file in pages[page]:
                if file.sha256 in wanted and file.sha256 not in located:
                    located[file.sha256] = _locked_file(file, redact)
        missing = wanted - set(located)
        if missing:
            raise IndexUnavailableError(
                f"{package.name} {package.version}: no index serves the file with hash "
                f"sha256:{sorted(missing)[0]}"
            )
        files_in_order = tuple(located[f.sha256] for f in package.files)
        found.append(LockedPackage(package.name, package.version, files_in_order, package.marker, source))
    return tuple(found)


def _locked_file(file: IndexFile, redact: Callable[[str], str]) -> LockedFile:
    """The lock's record of a file a page lists by the hash the lock has: its name, its URL
    without credentials, and its size and upload time where the page gives them (PEP 700)."""
    assert file.sha256 is not None
    url = redact(strip_credentials(file.url))
    return LockedFile(file.sha256, file.filename, url, file.size, file.upload_time)


# ---------------------------------------------------------------------------------------------
# The lock


def make_lock(
    resolution: Resolution,
    *,
    resolver: str,
    colabenv_version: str,
    environ: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    with_files: bool = False,
    http_deadline_s: float = HTTP_DEADLINE_S,
    known: Sequence[KnownRelease] = (),
    notice: Progress | None = None,
    memory_mib: int = RESOLVER_MEMORY_MIB,
) -> Lock:
    """Check the framework files, resolve the closure, and return the lock (nothing written).

    ``known``, ``notice``: where the framework pages list a release newer than the catalog's
    that the profile admits, say so once per framework (the lock is made all the same).
    ``http_deadline_s`` bounds each request, the resolvers' included; ``memory_mib`` the
    resolvers' address space."""
    env = dict(os.environ if environ is None else environ)
    say = progress or (lambda _text: None)
    refuse_unlockable(resolution.target)
    lock_target = LockTarget.from_target(resolution.target, resolution.required_driver)
    if not resolution.requirements:
        raise UsageError(
            f"profile {resolution.profile_name!r}: nothing to lock (no frameworks and no packages)"
        )
    plan = index_plan(resolution)
    redact = Redactor.for_urls(plan.all, env)
    if resolver == Resolver.PIP_TOOLS:
        refusal = pip_tools_refusal(resolution.target)
        if refusal is not None:
            raise LockError(refusal)
    client = SimpleClient(env, redact, deadline_s=http_deadline_s)
    checked_files = check_framework_files(resolution, plan, client, say, notice or say)
    for line in staleness_notices(checked_files.pages, known):
        (notice or say)(line)
    places = [(c.index_url, c.find_links) for c in resolution.choices]
    places += [(p.index_url, p.find_links) for p in resolution.cuda_packages]
    checked = [url for url, _ in places if url]
    if any(url is None for url, _ in places) and plan.default:
        checked.append(plan.default)
    check_indexes_reachable(plan, client, checked)
    say(f"resolving the closure with {resolver}")
    links = tuple(dict.fromkeys(page for _, page in places if page))

    def diagnose() -> None:
        say("reading the pages the resolver read again")
        check_pages(resolution.requirements, plan, links, client)

    def resolve(constraints: Sequence[str]) -> ResolverRun:
        return run_resolver(
            resolver,
            resolution.requirements,
            plan,
            resolution.target,
            env,
            redact,
            (*resolution.constraint_lines, *constraints),
            links,
            http_deadline_s=http_deadline_s,
            memory_mib=memory_mib,
            diagnose=diagnose,
        )

    run = _keeping_the_image(resolution, resolve, notice or say)
    packages = settled_markers(run.packages, lock_target.marker_environment())
    requires_python = list(checked_files.requires_python)
    if with_files:
        packages = attach_files(packages, plan, client, redact, say, links, requires_python.append)
    needs = python_needs(requires_python, lock_target.python)
    header = _header(resolution, replace(lock_target, python_needs=needs), run.label, colabenv_version)
    _check_pins(resolution, packages)
    return Lock(header, packages, plan.default, plan.extras, find_links=links)


def refuse_unlockable(target: Target) -> None:
    """A target a lock cannot be made for yet is refused before anything is asked (the
    ``lock`` command calls this before it resolves, so no index is read first): a
    free-threaded Python (uv's ``pip compile --python-version`` does not take ``3.14t``, and a
    lock resolved for the GIL build would install wheels its interpreter cannot load), and a
    device whose header fields would make another kind (AMD GPUs whose ROCm and gfx are both
    unknown: the header would say nothing of them)."""
    if target.free_threaded:
        raise UsageError(
            f"lock: a free-threaded Python ({target.python_shown}) cannot be locked yet: uv's "
            f"pip compile --python-version does not take {target.python_shown} (uv 0.13), and pins"
            " resolved for the GIL build would not load; render without --lock installs for it"
        )
    recorded = LockTarget.from_target(target, None).recorded_device.kind
    if recorded is not target.device.kind:
        raise UsageError(
            f"lock: the target's device ({target.device.kind}) would be recorded as {recorded}: "
            "give what the host has (--rocm or --gfx for AMD GPUs)"
        )


def _keeping_the_image(
    resolution: Resolution, resolve: Callable[[Sequence[str]], ResolverRun], notice: Progress
) -> ResolverRun:
    """The resolver's run held to the versions the target's image has (:mod:`colabenv.lock.image`),
    each one the resolution replaces named; where no set of pins keeps them all, the run
    without them, saying so."""
    image = image_pins(resolution)
    for line in image.notes:
        notice(line)
    if not image.constraints:
        return resolve(())
    try:
        return resolve(image.constraints)
    except LockResolverError as error:  # the pages were read again: no index is to blame
        notice(f"the image's versions cannot all be kept ({_reason(error)}): locked without them")
    return resolve(())


def _reason(error: LockResolverError) -> str:
    """The resolver's reason in a failure's lines: uv's ``Because ...`` line, pip's first line
    naming what it could not find, else the first line it wrote that is not a traceback's."""
    heading, *said = str(error).splitlines()
    name = heading.split()[0]
    lines = [line.strip() for line in said if line.strip()]
    lines = [line for line in lines if not line.startswith(("Traceback", "File "))] or [heading]
    for marks in (("because",), ("could not find", "no matching", "conflict")):
        found = next((line for line in lines if any(m in line.lower() for m in marks)), None)
        if found is not None:
            return f"{name}: {found[:300]}"
    return f"{name}: {lines[0][:300]}"


def _header(resolution: Resolution, target: LockTarget, resolver: str, colabenv_version: str) -> LockHeader:
    """The header of the lock of ``resolution`` that ``resolver`` (its name and version) made."""
    return LockHeader(
        colabenv_version=colabenv_version,
        profile_name=resolution.profile_name,
        profile_hash=resolution.profile_hash,
        target=target,
        frameworks=tuple(
            LockedFramework(c.framework, str(c.release), c.variant, c.index_url) for c in resolution.choices
        ),
        resolver=resolver,
        constraints=tuple(str(Requirement(c)) for c in resolution.constraint_lines),
        cuda_packages=tuple(
            LockedCudaPackage(p.name, p.distribution, str(p.release), p.variant, p.index_url)
            for p in resolution.cuda_packages
        ),
    )


def _check_pins(resolution: Resolution, packages: Sequence[LockedPackage]) -> None:
    """The resolver must have kept every framework and CUDA package pin (a local tag lost is a
    wrong wheel) and every component constraint."""
    versions: dict[NormalizedName, str] = {p.name: p.version for p in packages}
    for requirements in [c.requirements for c in resolution.choices] + [
        p.requirements for p in resolution.cuda_packages
    ]:
        for requirement in _exact_pins(requirements):
            name = canonicalize_name(requirement.name)
            wanted = Version(next(iter(requirement.specifier)).version)
            got = versions.get(name)
            if got is None or (wanted.local and Version(got) != wanted):
                raise LockResolverError(f"the resolver locked {name} {got or 'not at all'}, not {wanted}")
    for line in resolution.constraint_lines:
        constraint = Requirement(line)
        got = versions.get(canonicalize_name(constraint.name))
        if got is not None and not constraint.specifier.contains(got, prereleases=True):
            raise LockResolverError(
                f"the resolver locked {constraint.name} {got}, outside the constraint {constraint}"
            )
