"""What a bootstrap script installs and records: a resolution, or a lock, as one install plan. No I/O.

A script installs either what the resolver chose (one pip group per index, each bounded by the
others' pins) or a lock exactly (``render --lock``). The difference is decided here, once,
in :func:`install_plan`; the script (:mod:`colabenv.script.render`), the container
definitions (:mod:`colabenv.script.container`) and ``colabenv.bootstrap()`` read the plan's
data and never ask which it was.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

from colabenv._util.pep508 import distribution_name, is_nvidia_wheel
from colabenv.accelerators.base import DeviceChecks
from colabenv.accelerators.registry import accelerator_of
from colabenv.errors import ResolutionError
from colabenv.models import PLATFORMS, Framework, LockedFramework, Profile, Resolution, Target, format_driver
from colabenv.models.frozen import model
from colabenv.script.bash import q
from colabenv.script.marker import verify_record

if TYPE_CHECKING:
    from colabenv.lock.content import LockTarget

GROUP_FILE = '"${work}/group.txt"'
LOCK_FILE = '"$lockfile"'


@model
class LockInput:
    """A lockfile to install exactly instead of resolving (``render --lock``).

    ``target``, ``frameworks`` and ``constraints`` are the lock's own (its header): what the
    script's header and marker describe, since the lock is what the script installs (the
    application layer has checked that the lock fits the target rendered for).
    """

    name: str
    text: str
    python: str | None
    required_driver: str | None
    index_urls: tuple[str, ...]
    pins: tuple[str, ...]
    target: LockTarget | None = None
    frameworks: tuple[LockedFramework, ...] = ()
    constraints: tuple[str, ...] = ()
    # wheelhouse (issue 26): install from this folder of the host, only (offline) or as a cache
    wheelhouse: str | None = None
    offline: bool = False
    section: str | None = None
    """The section of a lock of several targets this is (None: the lock has one)."""
    install_lines: tuple[str, ...] = ()
    """The section's index lines and pins with their hashes
    (:attr:`colabenv.lock.content.Lock.install_lines`), for an engine that installs it from a
    requirements list of its own (issue 37: Ray)."""


@model
class InstallGroup:
    """One ``pip`` step of the script: the lists it writes into its work folder, then one
    install of what the requirements file lists and the host lacks."""

    announce: str
    """The step's name, as one shell word."""
    lists: tuple[tuple[str, tuple[str, ...]], ...]
    """(name, lines): each written to ``${work}/NAME.txt`` before the install."""
    requirements_file: str
    check: str
    """The helper's command that lists what is missing (``missing``, ``missing-lock``)."""
    args: str
    index: str | None
    extra: tuple[str, ...]
    saying: str
    prepare: tuple[str, ...] = ()


@model
class HostChecks:
    """What the preflight checks of the host besides its Python, each argument only where the
    target needs it: the platform (another than x86-64) and a free-threaded Python, the same for
    every kind, and what the target's kind checks of its device for the builds chosen
    (:meth:`~colabenv.accelerators.base.AcceleratorKind.device_checks`: NVIDIA's driver floor,
    the ROCm builds' gfx and ROCm). The helper reads an absent platform as ``linux_x86_64`` and
    an absent ``--free-threaded`` as a Python with the GIL, so that every script refuses an
    interpreter of another platform or ABI (a script for x86-64 with a TPU or the CPU too)."""

    platform: str | None = None
    free_threaded: bool = False
    device: DeviceChecks = DeviceChecks()

    @property
    def arguments(self) -> str:
        """The helper's preflight options after ``--driver``, each value one quoted word (none:
        "")."""
        words = ""
        if self.free_threaded:
            words += " --free-threaded yes"
        if self.platform is not None:
            words += f" --platform {q(self.platform)}"
        gfx, rocm = self.device.gfx, self.device.rocm
        if gfx is not None:
            listed = q(",".join(gfx))
            if not listed.startswith("'"):  # quoted: shellcheck reads a comma in an array as a typo
                listed = f"'{listed}'"
            words += f" --rocm-gfx {listed}"
            words += f" --rocm {q(rocm)}" if rocm is not None else ""
        return words


@model
class InstallPlan:
    """What a script installs and records, whichever source it came from.

    ``resolution`` is the one for the target rendered for: its apt packages, ``[env]``, bounds,
    warnings and install options hold for a lock too. ``lock`` is the lockfile the script
    embeds (None: it installs the resolution's groups).
    """

    resolution: Resolution
    profile: Profile
    colabenv_version: str
    described: tuple[str, ...]
    """The header's lines between the profile and the apt packages: the target, what is installed."""
    python: str
    host_checks: HostChecks
    remedy: str
    """What to do when the host is not the one planned for."""
    driver_remedy: str
    stale_remedy: str | None
    """What the preflight's exit 7 (a lock the host cannot take) says to do; None: no lock."""
    preflight_lists: tuple[tuple[str, tuple[str, ...]], ...]
    preflight_wants: str
    index_urls: tuple[str, ...]
    """Every index URL the script may use, unexpanded: checked before anything is installed."""
    groups: tuple[InstallGroup, ...]
    marker: str
    """The static part of the restart marker (:func:`marker_record`)."""
    lock: LockInput | None = None
    wheelhouse: bool = False
    """Whether the script embeds the wheelhouse program (issue 26)."""

    @property
    def required_driver(self) -> str | None:
        """The NVIDIA driver the preflight requires (None: none), as the target's kind checks it."""
        return self.host_checks.device.driver

    @property
    def lock_name(self) -> str | None:
        return self.lock.name if self.lock is not None else None

    @property
    def python_needs(self) -> str | None:
        """What the lock's pins need of the full Python (``!=3.14.1``; None: nothing past X.Y)."""
        target = self.lock.target if self.lock is not None else None
        return target.python_needs if target is not None else None

    @property
    def requirements(self) -> tuple[str, ...]:
        """Everything the script installs, as its restart marker records it: the lock's pins,
        else the resolution's requirements."""
        return self.lock.pins if self.lock is not None else self.resolution.requirements


def install_plan(
    resolution: Resolution, profile: Profile, colabenv_version: str, lock: LockInput | None = None
) -> InstallPlan:
    """The plan of ``resolution``, or with ``lock`` of that lock exactly: the one place the
    two kinds of install differ."""
    if lock is not None:
        plan = _locked_plan(resolution, profile, colabenv_version, lock)
    else:
        plan = _resolution_plan(resolution, profile, colabenv_version)
    _refuse_nvidia_on_amd(plan)
    return plan


def host_checks(resolution: Resolution, platform: str, required_driver: str | None) -> HostChecks:
    """The host checks of a plan for ``resolution``'s target on ``platform``: the device's are
    its kind's, for the builds chosen and the driver floor ``required_driver`` the resolution or
    the lock records."""
    target = resolution.target
    return HostChecks(
        platform=platform if platform != PLATFORMS[0] else None,
        free_threaded=target.free_threaded,
        device=accelerator_of(target).device_checks(
            (*resolution.choices, *resolution.cuda_packages), required_driver
        ),
    )


def _refuse_nvidia_on_amd(plan: InstallPlan) -> None:
    """A ROCm environment installs none of NVIDIA's CUDA wheels (``nvidia-*``, ``cuda-*``:
    :func:`~colabenv._util.pep508.is_nvidia_wheel`): a plan for AMD GPUs that would (a lock's
    pin; a catalog build's ``requires``, an overlay's say; a bound) is exit 3, naming them. The
    ROCm kind's ``refused_requirements`` refuses a profile's own requirements before, for resolve
    and lock too, saying what to name instead; this is the last word on what the script installs."""
    target = plan.resolution.target
    if not accelerator_of(target).traits.hip:
        return
    wanted = (*plan.requirements, *plan.resolution.constraint_lines)
    found = sorted({distribution_name(text) or text for text in wanted if is_nvidia_wheel(text)})
    if found:
        what = f"the lock {plan.lock.name} pins" if plan.lock is not None else "the script would install"
        raise ResolutionError(
            f"the target's GPUs are AMD ({accelerator_of(target).describe(target)}): {what} "
            f"{', '.join(found)}; an AMD GPU (ROCm) environment installs no NVIDIA CUDA wheel"
            " (nvidia-*, cuda-*)"
        )


def _resolution_plan(resolution: Resolution, profile: Profile, colabenv_version: str) -> InstallPlan:
    required = format_driver(resolution.required_driver) if resolution.required_driver else None
    checks = host_checks(resolution, resolution.target.platform, required)
    return InstallPlan(
        resolution=resolution,
        profile=profile,
        colabenv_version=colabenv_version,
        described=tuple(_resolution_described(resolution, checks.device.driver)),
        python=resolution.target.python_minor,
        host_checks=checks,
        remedy="re-render the script here",
        driver_remedy="re-render on this host, or with --cpu for a CPU-only runtime",
        stale_remedy=None,
        preflight_lists=(("everything", resolution.requirements),),
        preflight_wants='--reqs "${work}/everything.txt"',
        index_urls=_resolution_urls(resolution),
        groups=tuple(_resolution_groups(resolution)),
        marker=marker_record(resolution, profile, colabenv_version),
        wheelhouse=resolution.install.wheelhouse is not None,
    )


def _locked_plan(
    resolution: Resolution, profile: Profile, colabenv_version: str, lock: LockInput
) -> InstallPlan:
    again = "make a new lock for this host (colabenv lock), then render with it"
    platform = lock.target.platform if lock.target else resolution.target.platform
    checks = host_checks(resolution, platform, lock.required_driver)
    return InstallPlan(
        resolution=resolution,
        profile=profile,
        colabenv_version=colabenv_version,
        described=tuple(_lock_described(resolution, lock, checks.device.driver)),
        python=lock.python or resolution.target.python_minor,
        host_checks=checks,
        remedy=again,
        driver_remedy=again,
        stale_remedy=again,
        preflight_lists=(),
        preflight_wants=f"--lock {LOCK_FILE}",
        index_urls=_lock_urls(resolution, lock),
        groups=(_lock_group(resolution, lock),),
        marker=marker_record(resolution, profile, colabenv_version, lock),
        lock=lock,
        wheelhouse=lock.wheelhouse is not None or resolution.install.wheelhouse is not None,
    )


# ---------------------------------------------------------------------------------------------
# What the script's header says it installs


def target_line(resolution: Resolution) -> str:
    target = resolution.target
    return f"{accelerator_of(target).describe(target)}, Python {target.python_shown}, {target.platform}"


def _lock_target_line(target: LockTarget) -> str:
    device = target.to_target()
    return f"{accelerator_of(device).describe(device)}, Python {target.python}, {target.platform}"


def _resolution_described(resolution: Resolution, required_driver: str | None) -> Iterator[str]:
    yield f"target: {target_line(resolution)}"
    if required_driver is not None:
        yield f"needs NVIDIA driver >= {required_driver}"
    yield "resolution:"
    for choice in resolution.choices:
        status = "installed" if choice.installed else "to install"
        yield f"  {choice.framework} {choice.release} {choice.variant} ({status})"
        yield f"    why: {choice.reason}"
        if choice.index_url:
            yield f"    index: {choice.index_url}"
        if choice.find_links:
            yield f"    find-links: {choice.find_links}"
    for item in resolution.cuda_packages:
        status = "installed" if item.installed else "to install"
        yield f"  {item.name} ({item.distribution}) {item.release} {item.variant} ({status})"
        yield f"    why: {item.reason}"
        if item.index_url or item.find_links:
            yield f"    {'index' if item.index_url else 'find-links'}: {item.index_url or item.find_links}"
    for package in resolution.packages:
        yield f"  package {package}"


def installed_target(resolution: Resolution, lock: LockInput | None) -> Target:
    """The target a plan installs for: the lock's where it records one, else the resolution's."""
    return lock.target.to_target() if lock is not None and lock.target is not None else resolution.target


def installed_target_line(plan: InstallPlan) -> str:
    """The target the plan installs for, as the header says it: the lock's where it embeds one
    that records its target, else the resolution's."""
    lock = plan.lock
    return (
        _lock_target_line(lock.target) if lock is not None and lock.target else target_line(plan.resolution)
    )


def _lock_described(resolution: Resolution, lock: LockInput, required_driver: str | None) -> Iterator[str]:
    yield f"installs exactly the lockfile {lock.name}"
    shown = _lock_target_line(lock.target) if lock.target else target_line(resolution)
    yield f"target (the lock's): {shown}"
    if required_driver:
        yield f"needs NVIDIA driver >= {required_driver}"
    yield "locked:"
    for item in lock.frameworks:
        yield f"  {item.framework} {item.version} {item.variant}"
        if item.index_url:
            yield f"    index: {item.index_url}"
    for pin in lock.pins:
        yield f"  pin {pin}"


# ---------------------------------------------------------------------------------------------
# Index URLs


def _resolution_urls(resolution: Resolution) -> tuple[str, ...]:
    install = resolution.install
    urls = [install.index_url] if install.index_url else []
    urls.extend(c.index_url for c in resolution.choices if c.index_url)
    urls.extend(p.index_url for p in resolution.cuda_packages if p.index_url)
    urls.extend(install.extra_index_urls)
    return tuple(dict.fromkeys(urls))


def _lock_urls(resolution: Resolution, lock: LockInput) -> tuple[str, ...]:
    if lock.offline:
        return ()
    index, extra = lock_index_options(lock.text)
    urls = [*([index] if index else []), *extra, *resolution.install.extra_index_urls]
    return tuple(dict.fromkeys(urls))


def lock_index_options(text: str) -> tuple[str | None, list[str]]:
    """The lock's ``--index-url`` and ``--extra-index-url`` values, unexpanded."""
    index: str | None = None
    extra: list[str] = []
    for line in text.splitlines():
        option, _, value = line.strip().partition(" ")
        if option in ("--index-url", "-i") and value.strip():
            index = value.strip()
        elif option == "--extra-index-url" and value.strip():
            extra.append(value.strip())
    return index, extra


# ---------------------------------------------------------------------------------------------
# The pip groups


def _resolution_groups(resolution: Resolution) -> Iterator[InstallGroup]:
    """The groups in order, each constrained by the other groups' framework and CUDA package
    pins (so a later group cannot move a framework chosen earlier: an xformers that would pull
    another torch cannot) and the GPUs' component bounds; never by its
    own requirements, which the installer would read as a conflict when an index is down."""
    framework_pins = [(r, _pin(r)) for c in resolution.choices for r in c.requirements]
    framework_pins += [(r, _pin(r)) for p in resolution.cuda_packages for r in p.requirements]
    for label, requirements, url in _groups(resolution):
        own = set(requirements)
        others = [pin for requirement, pin in framework_pins if requirement not in own]
        constraints = list(dict.fromkeys([*others, *resolution.constraint_lines]))
        yield _resolution_group(label, requirements, constraints, resolution, url)


def _resolution_group(
    label: str,
    requirements: list[str],
    constraints: list[str],
    resolution: Resolution,
    index: str | None,
) -> InstallGroup:
    install = resolution.install
    extra = [*([index] if index else []), *install.extra_index_urls]
    lists: list[tuple[str, tuple[str, ...]]] = [("group", tuple(requirements))]
    bound = ""
    if constraints:  # never an empty file: uv warns on every run that it holds nothing
        lists.append(("constraints", tuple(constraints)))
        bound = '-c "${work}/constraints.txt" '
    args = (
        bound
        + '-r "${work}/missing.txt"'
        + _find_links(resolution, requirements)
        + _only_binary(resolution, requirements)
    )
    prepare: list[str] = []
    saying = "installing"
    if install.wheelhouse is not None:  # wheelhouse (issue 26)
        from colabenv.script.wheelhouse import resolved_install

        args, prepare, saying = resolved_install(install.wheelhouse, args)
    return InstallGroup(
        announce=q("pip: " + label),
        lists=tuple(lists),
        requirements_file=GROUP_FILE,
        check="missing",
        args=args,
        index=install.index_url,
        extra=tuple(dict.fromkeys(extra)),
        saying=saying,
        prepare=tuple(prepare),
    )


def _find_links(resolution: Resolution, requirements: list[str]) -> str:
    """``--find-links URL`` for each find-links page a framework of this group needs (the
    libtpu of an old jax or torch_xla release; pip and uv take the same option)."""
    wanted = set(requirements)
    places = [(c.find_links, c.requirements) for c in resolution.choices]
    places += [(p.find_links, p.requirements) for p in resolution.cuda_packages]
    pages = [page for page, reqs in places if page is not None and wanted.intersection(reqs)]
    return "".join(f" --find-links {q(page)}" for page in dict.fromkeys(pages))


def _only_binary(resolution: Resolution, requirements: list[str]) -> str:
    """``--only-binary NAME`` for each CUDA package of this group: a package without a wheel
    that fits is a resolution failure, never a source build (pip and uv take the same option)."""
    wanted = set(requirements)
    names = [str(p.distribution) for p in resolution.cuda_packages if wanted.intersection(p.requirements)]
    return "".join(f" --only-binary {q(name)}" for name in dict.fromkeys(names))


def _pin(requirement: str) -> str:
    """``name[extra]==version`` as a constraint: ``name==version`` (constraints take no extras)."""
    name, _, version = requirement.partition("==")
    return f"{name.split('[', 1)[0]}=={version}"


def _groups(resolution: Resolution) -> Iterator[tuple[str, list[str], str | None]]:
    """(label, requirements, index URL) per install: one per framework index, then the
    default index with every framework on it and the profile's packages, then the CUDA
    packages, one group per index or find-links page, once every framework is in place."""
    by_index: dict[str | None, list[str]] = {}
    for choice in resolution.choices:
        by_index.setdefault(choice.index_url, []).extend(choice.requirements)
    for url, requirements in by_index.items():
        if url is not None:
            names = sorted({r.split("==")[0].split("[")[0] for r in requirements})
            yield ", ".join(names), requirements, url
    plain = by_index.get(None, []) + list(resolution.packages)
    if plain:
        yield "default index", plain, None
    by_place: dict[tuple[str | None, str | None], list[str]] = {}
    for package in resolution.cuda_packages:
        by_place.setdefault((package.index_url, package.find_links), []).extend(package.requirements)
    for (url, _), requirements in by_place.items():
        names = sorted({r.split("==")[0] for r in requirements})
        yield "CUDA packages: " + ", ".join(names), requirements, url


def _lock_group(resolution: Resolution, lock: LockInput) -> InstallGroup:
    """The lockfile, hash-checked, with no dependencies of its own: from its indexes, or from a
    wheelhouse (issue 26) only (offline) or before them (a cache)."""
    index, extra = lock_index_options(lock.text)
    every = tuple(dict.fromkeys([*extra, *resolution.install.extra_index_urls]))
    prepare: list[str] = []
    if lock.wheelhouse is None:
        args, saying = '--require-hashes --no-deps -r "$lockfile"', "installing the lockfile"
    else:
        from colabenv.script.wheelhouse import wheelhouse_install

        args, prepare, saying = wheelhouse_install(lock.wheelhouse, offline=lock.offline)
        if lock.offline:
            index, every = None, ()
    return InstallGroup(
        announce='"pip: lockfile"',
        lists=(),
        requirements_file=LOCK_FILE,
        check="missing-lock",
        args=args,
        index=index,
        extra=every,
        saying=saying,
        prepare=tuple(prepare),
    )


# ---------------------------------------------------------------------------------------------
# The restart marker's record


def _lock_frameworks(lock: LockInput) -> dict[str, object]:
    from colabenv.models.frameworks import FACTS

    found: dict[str, object] = {}
    for item in lock.frameworks:
        try:
            names = FACTS[Framework(item.framework)].all_names
        except ValueError:
            names = frozenset()
        pins = [pin for pin in lock.pins if pin.partition("==")[0] in names]
        found[item.framework] = {
            "version": item.version,
            "variant": item.variant,
            "index_url": item.index_url,
            "requirements": pins,
            "installed": False,
            "reason": f"installed exactly from the lockfile {lock.name}",
        }
    return found


def marker_record(
    resolution: Resolution,
    profile: Profile,
    colabenv_version: str,
    lock: LockInput | None = None,
) -> str:
    """The static part of the restart marker; the script adds what it installed and when.

    With a lock, the marker describes the lock: its pins, its target, its frameworks. What
    ``verify`` checks without ``--profile`` (smoke tests, thresholds, ``io_paths``, the
    ``[reproducibility]`` it must find in effect) comes from the profile either way.
    """
    target: dict[str, object] = installed_target(resolution, lock).to_json()
    frameworks: dict[str, object] = {c.framework.value: c.to_json() for c in resolution.choices}
    frameworks.update((str(p.name), p.to_json()) for p in resolution.cuda_packages)
    requirements: list[str] = list(resolution.requirements)
    if lock is not None:
        requirements = list(lock.pins)
        if lock.frameworks:
            frameworks = _lock_frameworks(lock)
    record = {
        "schema": 1,
        "colabenv": colabenv_version,
        "profile": resolution.profile_name,
        "profile_hash": resolution.profile_hash,
        "target": target,
        "frameworks": frameworks,
        "requirements": requirements,
        "apt": list(resolution.apt),
        "env": dict(resolution.env),
        "verify": verify_record(dataclasses.replace(profile.verify, smoke=profile.smoke_frameworks)),
        "reproducibility": {
            "seed": profile.reproducibility.seed,
            "deterministic": profile.reproducibility.deterministic,
        },
    }
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
