"""What the resolver weighs for a framework: an :class:`Option` (one release and build it could
take, with what the resolver knows of it), and the requirement lines an option installs (the
framework pinned to its build, with the companions that keep in step with it)."""

from __future__ import annotations

from packaging.requirements import Requirement
from packaging.version import Version

from colabenv.models import Companion, Framework, FrameworkRequest, InstalledSet, Release, Variant
from colabenv.models.frameworks import FACTS
from colabenv.models.frozen import model


@model
class Option:
    """One (release, variant) a framework could take, with what the resolver knows of it."""

    framework: Framework
    release: Release
    variant: Variant
    installed: bool
    fully_supported: bool
    installed_version: str | None

    @property
    def label(self) -> str:
        return f"{self.framework} {self.release.version}"

    def pins(self) -> tuple[Requirement, ...]:
        return self.variant.pins


def _version_text(option: Option, base: Version, follows: bool) -> str:
    tag = option.variant.local_tag
    if follows and tag:
        return f"{base}+{tag}"
    return str(base)


def companions_to_pin(
    request: FrameworkRequest, release: Release, installed: InstalledSet
) -> list[Companion]:
    """The companions to pin: the ones the framework does not run without (jaxlib), the ones
    the profile asks for, and the ones the runtime already has, so they keep in step."""
    wanted = {name for name, _ in request.companions}
    return [
        companion
        for companion in release.companions
        if companion.name in wanted
        or companion.name in FACTS[request.framework].required_companions
        or installed.get(companion.name) is not None
    ]


def requirements(option: Option, request: FrameworkRequest, installed: InstalledSet) -> list[str]:
    """The framework pinned to the option's build (or to the installed version it keeps), and
    its companions pinned beside it."""
    framework = option.framework
    release = option.release
    reqs: list[str] = []
    if option.installed and option.installed_version is not None:
        reqs.append(f"{framework}=={option.installed_version}")
    else:
        extra = option.variant.extra
        name = f"{framework}[{extra}]" if extra else framework.value
        reqs.append(f"{name}=={_version_text(option, release.version, follows=True)}")
    for companion in companions_to_pin(request, release, installed):
        present = installed.get(companion.name)
        if (
            option.installed
            and present is not None
            and present.parsed_version is not None
            and Version(present.parsed_version.public) == companion.version
        ):
            reqs.append(f"{companion.name}=={present.version}")
            continue
        version = _version_text(option, companion.version, companion.follows_variant)
        reqs.append(f"{companion.name}=={version}")
    return reqs
