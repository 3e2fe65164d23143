"""The index's answers applied to a choice (``IndexFacts``, read by the application layer): the
catalog proposes, the index disposes. A build whose pinned files an index it comes from lacks
for the target is passed over, naming the file; an unconfirmed build the index serves is taken,
confirmed just now. Pure: what was not read is taken as the catalog says."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from colabenv._util.pep508 import exact_pin
from colabenv.errors import ResolutionError, printable
from colabenv.models import Profile
from colabenv.models.availability import IndexFacts, find_links_key, where_read
from colabenv.models.catalog import parsed_pin

CONFIRMED = "confirmed by the index just now"
"""What a reason says of an unconfirmed build that the index serves."""


def exact_pins(texts: Iterable[str]) -> list[tuple[str, str]]:
    """(project, version) of each ``name[extra]==version`` of ``texts`` (no wildcard, no marker)."""
    found = []
    for text in texts:
        try:
            requirement = parsed_pin(text)
        except InvalidRequirement:
            continue
        version = exact_pin(requirement)
        if version is not None and requirement.marker is None:
            found.append((requirement.name, version))
    return found


def missing_file(
    facts: IndexFacts,
    index: str | None,
    texts: Iterable[str],
    *,
    wheel: bool = True,
    find_links: str | None = None,
) -> str | None:
    """The first file of ``texts``' exact pins that ``index`` lacks for the target, as a reason;
    None when it has each (or its page was not read). With ``find_links`` (a page the installer
    is also given), a file the index lacks is missing only where that page lacks it too (or
    was not read: then the index's answer stands)."""
    page = find_links_key(find_links) if find_links is not None else None
    for project, version in exact_pins(texts):
        if facts.served(index, project, version, wheel=wheel) is not False:
            continue
        if page is None:
            return facts.missing(index, project, version)
        on_page = facts.served(page, project, version, wheel=wheel)
        if on_page is False:
            return facts.missing(page, project, version)
        if on_page is None:
            return facts.missing(index, project, version)
    return None


def companion_conflict(
    facts: IndexFacts, index: str | None, framework: str, texts: Sequence[str]
) -> str | None:
    """Where the index's metadata of a companion of ``texts`` (the framework's own pin first,
    then its companions' exact pins, on ``index``) requires another ``framework`` than the one
    pinned, the reason (naming the requirement and the refresh that mends the catalog); None
    where each agrees (or its metadata was not read)."""
    pins = exact_pins(texts)
    own = canonicalize_name(framework)
    if not pins or canonicalize_name(pins[0][0]) != own:
        return None
    try:
        chosen = Version(pins[0][1])
    except InvalidVersion:
        return None
    public = Version(chosen.public)
    for project, version in pins[1:]:
        for text in facts.requirements(index, project, version) or ():
            requirement = Requirement(text)
            if canonicalize_name(requirement.name) != own:
                continue
            specifier = requirement.specifier
            if not (
                specifier.contains(chosen, prereleases=True) or specifier.contains(public, prereleases=True)
            ):
                shown = version.partition("+")[0]
                return (
                    f"the index's {project} {shown} requires {requirement.name}{specifier}; the catalog "
                    f"pairs it with {framework} {public}: run colabenv catalog refresh {framework}"
                )
    return None


def index_problem(
    facts: IndexFacts, index: str | None, framework: str, texts: Sequence[str], find_links: str | None = None
) -> str | None:
    """Why the index turns down a framework build pinned by ``texts`` (its own pin first, then
    its companions'): a file it (and ``find_links``, the page the build needs beside it) lacks,
    else a companion whose metadata requires another ``framework``; None for neither."""
    missing = missing_file(facts, index, texts, find_links=find_links)
    return missing if missing is not None else companion_conflict(facts, index, framework, texts)


def confirmed(
    facts: IndexFacts, index: str | None, texts: Iterable[str], find_links: str | None = None
) -> bool:
    """``index`` (or ``find_links``, the page the installer is given beside it) serves every
    exact pin of ``texts`` for the target: each page was read and lists the file. A build is
    confirmed by all its files, not by its framework's alone, which may be pure Python (jax's
    is, while its CUDA plugin is what a platform lacks)."""
    page = find_links_key(find_links) if find_links is not None else None
    pins = exact_pins(texts)
    return bool(pins) and all(
        facts.served(index, *pin) is True or (page is not None and facts.served(page, *pin) is True)
        for pin in pins
    )


def passed_over_text(missing: Iterable[tuple[str, str]]) -> str:
    """``; passed over: torch 2.15.0 cu130 (the index ... has no file ...)``: the builds the
    index lacked, the first named with its file and the rest counted; empty for none."""
    items = list(missing)
    if not items:
        return ""
    label, why = items[0]
    more = f" (and {len(items) - 1} more)" if len(items) > 1 else ""
    return f"; passed over {label}{more}: {why}"


def check_plain(profile: Profile, facts: IndexFacts) -> None:
    """The plain requirements the profile pins exactly (``[packages]``, installed from its
    index): one that index has no file of for the target is exit 3, naming the file."""
    for requirement in profile.requirements:
        missing = missing_file(facts, None, [str(requirement)], wheel=False)
        if missing is not None:
            raise ResolutionError(f"{profile.path.name}: packages: {requirement}: {missing}")


def yanked_warnings(
    facts: IndexFacts, pinned: Iterable[tuple[str | None, Sequence[str], str | None]]
) -> list[str]:
    """A warning for each exact pin of ``pinned`` ((index, requirement texts, the find-links
    page beside it)) whose every file the target can install there is yanked (PEP 592): kept,
    as pip and uv install a yanked file for an exact pin (with a warning of their own), and
    said with the reason so that the user sees it before the install does."""
    warnings = []
    for index, texts, find_links in pinned:
        places = [index, *([find_links_key(find_links)] if find_links is not None else [])]
        for project, version in exact_pins(texts):
            serving = [p for p in places if facts.served(p, project, version, wheel=False)]
            reasons = [facts.yanked(p, project, version) for p in serving]
            if not serving or any(reason is None for reason in reasons):
                continue
            why = next((r for r in reasons if r), "")
            said = f"reason: {printable(why)}" if why else "no reason given"
            warnings.append(
                f"{canonicalize_name(project)} {version}: {where_read(serving[0])} marks its file for "
                f"{facts.tags} yanked ({said}); installed for the exact pin, as pip and uv do (PEP 592)"
            )
    return warnings
