"""Make a lock: check the framework files on their indexes, run uv or pip-tools, record it all.

The resolvers run isolated from the user's pip and uv configuration (config files, ``PIP_*`` and
``UV_*`` index settings): a lock must depend on the profile alone, and the profile's
``[install]`` names every index it may use. Index URLs are expanded (``${VAR}`` credential
references, :func:`colabenv.index.urls.expand_url`) only into the resolver's environment and
the requests made here; messages show the unexpanded form.

uv writes its answer as PEP 751 (``uv pip compile --format pylock.toml``), read with
:mod:`packaging.pylock`: it carries each file's URL, so a ``pylock.toml`` needs no second pass
over the indexes (it names no package's index: uv's output does not say). pip-tools writes a
requirements file; for a ``pylock.toml`` each hash's file is then found on the indexes.
The resolution's component constraints (``nvidia-cudnn-cu12<9.11``) go to both resolvers as a
constraints file, and into the lock's header; the find-links page of a TPU build (an old
release's libtpu) goes to both resolvers and into the lock (``--find-links``).
"""

from __future__ import annotations

import enum
import importlib
import os
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import (
    InvalidWheelFilename,
    NormalizedName,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import Version

from colabenv._util import processes
from colabenv.errors import IndexUnavailableError, LockError, LockResolverError, UsageError, printable
from colabenv.index.client import HTTP_DEADLINE_S, IndexFile, SimpleClient
from colabenv.index.urls import Redactor, default_index_url, expand_url, strip_credentials
from colabenv.lock.content import Lock, LockedFile, LockedPackage, LockHeader, LockTarget
from colabenv.lock.fit import settled_markers
from colabenv.lock.requirements import parse_requirements
from colabenv.models import Framework, FrameworkChoice, LockedFramework, Resolution, Target
from colabenv.models.frameworks import FACTS
from colabenv.models.frozen import model

Progress = Callable[[str], None]


class Resolver(str, enum.Enum):
    UV = "uv"
    PIP_TOOLS = "pip-tools"

    def __str__(self) -> str:
        return self.value


RESOLVERS: tuple[str, ...] = tuple(r.value for r in Resolver)
MANYLINUX_GLIBC_MINOR = 28
UV_TIMEOUT_S = 900.0
PIP_TOOLS_TIMEOUT_S = 3600.0

# Settings that change *what* a resolver finds; every other PIP_*/UV_* variable (cache, TLS,
# proxies, timeouts, keyring) is the user's to keep.
_PIP_DROPPED = (
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "PIP_NO_INDEX",
    "PIP_CONSTRAINT",
    "PIP_REQUIREMENT",
    "PIP_PRE",
    "PIP_ONLY_BINARY",
    "PIP_NO_BINARY",
    "PIP_PREFER_BINARY",
    "PIP_UPGRADE",
    "PIP_USER",
    "PIP_TARGET",
    "PIP_PLATFORM",
    "PIP_PYTHON_VERSION",
    "PIP_IMPLEMENTATION",
    "PIP_ABI",
    "PIP_REQUIRE_VIRTUALENV",
    "PIP_REQUIRE_HASHES",
)
_UV_KEPT = (
    "UV_CACHE_DIR",
    "UV_NO_CACHE",
    "UV_NATIVE_TLS",
    "UV_HTTP_TIMEOUT",
    "UV_HTTP_RETRIES",
    "UV_CONCURRENT_DOWNLOADS",
    "UV_CONCURRENT_BUILDS",
    "UV_KEYRING_PROVIDER",
    "UV_INSECURE_HOST",
    "UV_OFFLINE",
    "UV_REQUEST_TIMEOUT",
)


# ---------------------------------------------------------------------------------------------
# Indexes


@model
class IndexPlan:
    """Which indexes a lock uses, as written in the profile (``${VAR}`` references kept).

    ``default`` None means the installer's default index. ``extras`` are the framework indexes
    (PyTorch variant indexes, mirrors applied by the resolver) then the profile's extra indexes.
    """

    default: str | None
    extras: tuple[str, ...]

    @property
    def all(self) -> tuple[str, ...]:
        return ((self.default,) if self.default else ()) + self.extras


def index_plan(resolution: Resolution) -> IndexPlan:
    extras: list[str] = []
    for choice in resolution.choices:
        if choice.index_url and choice.index_url not in extras:
            extras.append(choice.index_url)
    for url in resolution.install.extra_index_urls:
        if url not in extras:
            extras.append(url)
    default = resolution.install.index_url
    return IndexPlan(default, tuple(u for u in extras if u != default))


# ---------------------------------------------------------------------------------------------
# Wheel tags of a target


def target_platforms(platform: str) -> list[str]:
    """Platform tags a Linux target accepts: manylinux up to glibc 2.MANYLINUX_GLIBC_MINOR."""
    if not platform.startswith("linux_"):
        return [platform]
    arch = platform.removeprefix("linux_")
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(MANYLINUX_GLIBC_MINOR, 4, -1)]
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    for minor, alias in legacy.items():
        if minor <= MANYLINUX_GLIBC_MINOR:
            tags.append(f"{alias}_{arch}")
    tags.append(platform)
    return tags


def target_tags(target: Target) -> frozenset[Tag]:
    version = (target.python.major, target.python.minor)
    platforms = target_platforms(target.platform)
    interpreter = f"cp{version[0]}{version[1]}"
    found = set(cpython_tags(version, [interpreter], platforms))
    found.update(compatible_tags(version, interpreter, platforms))
    return frozenset(found)


def uv_python_platform(platform: str) -> str:
    if platform.startswith("linux_"):
        return f"{platform.removeprefix('linux_')}-manylinux_2_{MANYLINUX_GLIBC_MINOR}"
    raise LockError(f"cannot lock for platform {platform!r} (Linux targets only)")


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


def check_framework_files(
    resolution: Resolution, plan: IndexPlan, client: SimpleClient, progress: Progress
) -> dict[Framework, tuple[IndexFile, ...]]:
    """Every exact framework pin has a wheel for the target on the index it comes from.
    Returns the files each framework's own project page listed."""
    seen: dict[Framework, tuple[IndexFile, ...]] = {}
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
            good, other = _matching_wheels(files, requirement, tags)
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
    return seen


@model
class KnownRelease:
    """What the catalog knows of a framework the profile asks for: the profile's specifier and
    the newest release the catalog has (what a lock compares the index with)."""

    framework: Framework
    specifier: SpecifierSet
    newest: Version


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


# ---------------------------------------------------------------------------------------------
# Running the resolvers


def resolver_env(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without the pip/uv settings that would change what a resolver finds."""
    env = {}
    for key, value in environ.items():
        if key in _PIP_DROPPED or (key.startswith("UV_") and key not in _UV_KEPT):
            continue
        env[key] = value
    env["PIP_CONFIG_FILE"] = os.devnull
    env["UV_NO_CONFIG"] = "1"
    env["PIP_NO_INPUT"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["UV_PYTHON_DOWNLOADS"] = "never"
    return env


def find_uv() -> str:
    try:
        module = importlib.import_module("uv")
        found = module.find_uv_bin()
        if isinstance(found, str | os.PathLike) and os.path.exists(found):
            return os.fspath(found)
    except (ImportError, FileNotFoundError, AttributeError):
        pass
    path = shutil.which("uv")
    if path is None:
        raise LockError(
            "uv not found: install the `uv` package or put uv on PATH (or use --resolver pip-tools)"
        )
    return path


def running_platform() -> str:
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _pip_tools_refusal(target: Target) -> str | None:
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    here = running_platform()
    if running != target.python_minor or here != target.platform:
        return (
            f"pip-tools resolves for the Python running colabenv ({running} on {here}); "
            f"the target is Python {target.python_minor} on {target.platform}: use "
            f"--resolver uv, or run colabenv lock under a matching Python"
        )
    return None


@model
class ResolverRun:
    packages: tuple[LockedPackage, ...]
    label: str


_NETWORK_PATTERNS = (
    "Failed to fetch",
    "error sending request",
    "Connection refused",
    "dns error",
    "Max retries exceeded",
    "NewConnectionError",
    "Could not fetch URL",
    "HTTP status server error",
    "Request failed after",
    "503 Server Error",
    "ConnectionError",
    "connection closed",
    "timed out",
)


def _resolver_failure(name: str, output: str, redact: Callable[[str], str]) -> Exception:
    lines = [printable(redact(line.rstrip())) for line in output.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(("WARNING:", "warning:"))]
    shown = lines[:8] if lines else ["(no output)"]
    text = "\n  ".join(line.strip() for line in shown)
    if any(pattern in output for pattern in _NETWORK_PATTERNS):
        first = next((line.strip() for line in shown if any(p in line for p in _NETWORK_PATTERNS)), shown[0])
        return IndexUnavailableError(f"{name} could not read an index: {first.strip()}")
    return LockResolverError(f"{name} found no set of pins for the profile:\n  {text}")


def _uv_argv(uv: str, target: Target, constraints: Path | None, find_links: Sequence[str]) -> list[str]:
    argv = [
        uv,
        "pip",
        "compile",
        "-",
        "--format",
        "pylock.toml",
        "--generate-hashes",
        "--no-header",
        "--no-annotate",
        "--quiet",
        "--no-config",
        "--index-strategy",
        "unsafe-best-match",
        "--python-version",
        target.python_minor,
        "--python-platform",
        uv_python_platform(target.platform),
    ]
    if constraints is not None:
        argv += ["--constraint", str(constraints)]
    for page in find_links:
        argv += ["--find-links", page]
    return argv


def _pip_tools_argv(constraints: Path | None, find_links: Sequence[str]) -> list[str]:
    argv = [
        sys.executable,
        "-m",
        "piptools",
        "compile",
        "--generate-hashes",
        "--no-header",
        "--no-annotate",
        "--no-emit-index-url",
        "--no-emit-trusted-host",
        "--no-emit-find-links",
        "--allow-unsafe",
        "--strip-extras",
        "--quiet",
        "--output-file",
        "-",
    ]
    if constraints is not None:
        argv += ["--constraint", str(constraints)]
    for page in find_links:
        argv += ["--find-links", page]
    return [*argv, "-"]


def run_resolver(
    resolver: str,
    requirements: Sequence[str],
    plan: IndexPlan,
    target: Target,
    environ: Mapping[str, str],
    redact: Callable[[str], str],
    constraints: Sequence[str] = (),
    find_links: Sequence[str] = (),
) -> ResolverRun:
    """The closure of ``requirements`` for ``target`` within ``constraints``, pinned with sha256
    hashes (with uv, each file's URL too); ``find_links``: pages of links beside the indexes."""
    env = resolver_env(environ)
    pages = [expand_url(page, environ) for page in find_links]
    stdin = "".join(f"{line}\n" for line in requirements)
    expanded_default = expand_url(plan.default, environ) if plan.default else None
    expanded_extras = [expand_url(url, environ) for url in plan.extras]
    with tempfile.TemporaryDirectory(prefix="colabenv-lock-") as work:
        constraints_file = None
        if constraints:
            constraints_file = Path(work) / "constraints.txt"
            constraints_file.write_text("".join(f"{c}\n" for c in constraints), encoding="utf-8")
        if resolver == Resolver.UV:
            uv = find_uv()
            version = processes.run([uv, "--version"], timeout=30, env=env)
            label = printable(" ".join(version.stdout.split()[:2])) if version.ok else "uv"
            argv = _uv_argv(uv, target, constraints_file, pages)
            if expanded_default:
                env["UV_INDEX_URL"] = expanded_default
            if expanded_extras:
                env["UV_EXTRA_INDEX_URL"] = " ".join(expanded_extras)
            timeout = UV_TIMEOUT_S
        elif resolver == Resolver.PIP_TOOLS:
            refusal = _pip_tools_refusal(target)
            if refusal is not None:
                raise LockError(refusal)
            label = _pip_tools_label()
            argv = _pip_tools_argv(constraints_file, pages)
            if expanded_default:
                env["PIP_INDEX_URL"] = expanded_default
            if expanded_extras:
                env["PIP_EXTRA_INDEX_URL"] = " ".join(expanded_extras)
            timeout = PIP_TOOLS_TIMEOUT_S
        else:
            raise ValueError(f"unknown resolver {resolver!r} (expected {' or '.join(RESOLVERS)})")
        result = processes.run(argv, timeout=timeout, env=env, input_text=stdin)
    if result.timed_out:
        raise LockResolverError(f"{label} did not finish within {timeout:g} s")
    if not result.ok:
        output = result.stderr + "\n" + result.stdout
        if resolver == Resolver.UV and "--format" in output and "unexpected argument" in output:
            raise LockError(
                f"{label} cannot write pylock.toml (uv 0.8 or newer can): "
                "upgrade uv, or use --resolver pip-tools"
            )
        raise _resolver_failure(label.split()[0], output, redact)
    try:
        if resolver == Resolver.UV:
            packages = _uv_packages(result.stdout, redact)
        else:
            packages, _, _, _ = parse_requirements(result.stdout)
    except LockError as exc:
        raise LockResolverError(f"{label} wrote output colabenv cannot read: {exc}") from None
    return ResolverRun(tuple(sorted(packages, key=lambda p: p.name)), label)


def _pip_tools_label() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return f"pip-tools {dist_version('pip-tools')}"
    except PackageNotFoundError:
        raise LockError("pip-tools is not installed (pip install pip-tools)") from None


def _uv_packages(text: str, redact: Callable[[str], str]) -> tuple[LockedPackage, ...]:
    from colabenv.lock.pylock import load_pylock, pylock_packages

    def url_of(url: str) -> str:
        return redact(strip_credentials(url))

    return pylock_packages(load_pylock(text, "uv's output"), "uv's output", url_of)


# ---------------------------------------------------------------------------------------------
# Files for pylock.toml (pip-tools names only the hashes)


def attach_files(
    packages: Sequence[LockedPackage],
    plan: IndexPlan,
    client: SimpleClient,
    redact: Callable[[str], str],
    progress: Progress,
    find_links: Sequence[str] = (),
) -> tuple[LockedPackage, ...]:
    """Each hash's file name and URL, and the index it is on (for ``pylock.toml``); a file
    that no index serves is looked for on the ``find_links`` pages."""
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
                    url = redact(strip_credentials(file.url))
                    located[file.sha256] = LockedFile(file.sha256, file.filename, url)
                    source = source or index
            if len(located) == len(wanted):
                break
        for page in find_links:
            if len(located) == len(wanted):
                break
            if page not in pages:
                pages[page] = client.page_files(page)
            for file in pages[page]:
                if file.sha256 in wanted and file.sha256 not in located:
                    located[file.sha256] = LockedFile(
                        file.sha256, file.filename, redact(strip_credentials(file.url))
                    )
        missing = wanted - set(located)
        if missing:
            raise IndexUnavailableError(
                f"{package.name} {package.version}: no index serves the file with hash "
                f"sha256:{sorted(missing)[0]}"
            )
        files_in_order = tuple(located[f.sha256] for f in package.files)
        found.append(LockedPackage(package.name, package.version, files_in_order, package.marker, source))
    return tuple(found)


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
) -> Lock:
    """Check the framework files, resolve the closure, and return the lock (nothing written).

    ``known``, ``notice``: where the framework pages list a release newer than the catalog's
    that the profile admits, say so once per framework (the lock is made all the same)."""
    env = dict(os.environ if environ is None else environ)
    say = progress or (lambda _text: None)
    if not resolution.requirements:
        raise UsageError(
            f"profile {resolution.profile_name!r}: nothing to lock (no frameworks and no packages)"
        )
    plan = index_plan(resolution)
    redact = Redactor.for_urls(plan.all, env)
    if resolver == Resolver.PIP_TOOLS:
        refusal = _pip_tools_refusal(resolution.target)
        if refusal is not None:
            raise LockError(refusal)
    client = SimpleClient(env, redact, deadline_s=http_deadline_s)
    seen = check_framework_files(resolution, plan, client, say)
    for line in staleness_notices(seen, known):
        (notice or say)(line)
    checked = [c.index_url for c in resolution.choices if c.index_url]
    if any(c.index_url is None for c in resolution.choices) and plan.default:
        checked.append(plan.default)
    check_indexes_reachable(plan, client, checked)
    say(f"resolving the closure with {resolver}")
    links = tuple(dict.fromkeys(c.find_links for c in resolution.choices if c.find_links))
    run = run_resolver(
        resolver,
        resolution.requirements,
        plan,
        resolution.target,
        env,
        redact,
        resolution.constraint_lines,
        links,
    )
    lock_target = LockTarget.from_target(resolution.target, resolution.required_driver)
    packages = settled_markers(run.packages, lock_target.marker_environment())
    if with_files:
        packages = attach_files(packages, plan, client, redact, say, links)
    header = LockHeader(
        colabenv_version=colabenv_version,
        profile_name=resolution.profile_name,
        profile_hash=resolution.profile_hash,
        target=lock_target,
        frameworks=tuple(
            LockedFramework(c.framework, str(c.release), c.variant, c.index_url) for c in resolution.choices
        ),
        resolver=run.label,
        constraints=tuple(str(Requirement(c)) for c in resolution.constraint_lines),
    )
    _check_pins(resolution, packages)
    return Lock(header, packages, plan.default, plan.extras, find_links=links)


def _check_pins(resolution: Resolution, packages: Sequence[LockedPackage]) -> None:
    """The resolver must have kept every framework pin (a local tag lost is a wrong wheel) and
    every component constraint."""
    versions: dict[NormalizedName, str] = {p.name: p.version for p in packages}
    for choice in resolution.choices:
        for requirement in _exact_pins(choice.requirements):
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
