"""uv and pip-tools, run isolated from the user's configuration and bounded, and what their
failures mean.

The resolvers run isolated from the user's pip and uv configuration (config files, ``PIP_*`` and
``UV_*`` index settings): a lock must depend on the profile alone, and the profile's
``[install]`` names every index it may use. Index URLs are expanded (``${VAR}`` credential
references) only into the resolver's environment; messages show the unexpanded form.

They run as children bounded like colabenv's own requests: each request they make gets the HTTP
deadline as its read timeout (and one retry unless ``UV_HTTP_RETRIES`` or ``PIP_RETRIES`` say
otherwise), the resident memory of all of them together is bounded (a watchdog ends the group
past ``memory_mib``, :class:`colabenv.host.proctree.GroupResident`) and so is each one's address
space (``RLIMIT_AS``, four times that, a backstop; inherited), their temporary files go in the
work folder, removed whatever happens, and when one fails the index that made it fail is
named: by the URL in its output, else by what the caller's ``diagnose`` finds
(:func:`colabenv.lock.make.check_pages`).
"""

from __future__ import annotations

import importlib
import math
import os
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from colabenv._util import processes
from colabenv.errors import IndexUnavailableError, LockError, LockResolverError, printable
from colabenv.host.proctree import GroupResident
from colabenv.index.client import HTTP_DEADLINE_S
from colabenv.index.urls import expand_url, strip_credentials
from colabenv.lock.content import LockedPackage
from colabenv.lock.requirements import parse_requirements
from colabenv.lock.wheel_tags import LOCK_GLIBC_MINOR
from colabenv.models import Resolution, Target
from colabenv.models.base import TextEnum
from colabenv.models.frozen import model


class Resolver(TextEnum):
    UV = "uv"
    PIP_TOOLS = "pip-tools"


RESOLVERS: tuple[str, ...] = tuple(r.value for r in Resolver)
UV_TIMEOUT_S = 900.0
PIP_TOOLS_TIMEOUT_S = 3600.0
RESOLVER_MEMORY_MIB = 400
"""The default bound on the resident memory of a resolver and what it starts together
(``COLABENV_LOCK_MEMORY_MIB``; each one's address space is bounded at four times that): a lock
of torch and jax with either resolver takes well under it; a page without end would take all
there is, and with colabenv's own reading of that page the lock stays under 600 MB."""
RESOLVER_OUTPUT_BYTES = 64 << 20
"""The most of a resolver's stdout (the lock) and stderr colabenv keeps."""
RESOLVER_RETRIES = 1

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
    for url in [c.index_url for c in resolution.choices] + [p.index_url for p in resolution.cuda_packages]:
        if url and url not in extras:
            extras.append(url)
    for url in resolution.install.extra_index_urls:
        if url not in extras:
            extras.append(url)
    default = resolution.install.index_url
    return IndexPlan(default, tuple(u for u in extras if u != default))


def uv_python_platform(platform: str) -> str:
    if platform.startswith("linux_"):
        return f"{platform.removeprefix('linux_')}-manylinux_2_{LOCK_GLIBC_MINOR}"
    raise LockError(f"cannot lock for platform {platform!r} (Linux targets only)")


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


def pip_tools_refusal(target: Target) -> str | None:
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


_UNREADABLE_PATTERNS = (
    "unexpected JSON",
    "unexpected HTML",
    "Failed to parse",
    "Failed to deserialize",
)
_MEMORY_PATTERNS = ("memory allocation of", "MemoryError", "Cannot allocate memory")


def _index_named_in(output: str, plan: IndexPlan, environ: Mapping[str, str]) -> str | None:
    """The first index of ``plan`` whose URL (expanded or as written) the output names."""
    for index in plan.all:
        for form in (expand_url(index, environ), index, strip_credentials(expand_url(index, environ))):
            if form.rstrip("/") and form.rstrip("/") in output:
                return index
    return None


def _resolver_failure(
    label: str,
    completed: processes.Completed,
    plan: IndexPlan,
    environ: Mapping[str, str],
    redact: Callable[[str], str],
    memory_mib: int,
    diagnose: Callable[[], None],
) -> Exception:
    """What a failed resolver run means: an index that answered what it must not (exit 4,
    naming the index), else the resolver's own answer (exit 3)."""
    name = label.split()[0]
    output = completed.stderr + "\n" + completed.stdout
    lines = [printable(redact(line.rstrip())) for line in output.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(("WARNING:", "warning:"))]
    shown = lines[:8] if lines else ["(no output)"]
    named = _index_named_in(output, plan, environ)
    where = f"index {printable(named)}" if named else None
    killed = completed.memory_exceeded or completed.returncode in (-6, -9, 134, 137)
    if killed or any(pattern in output for pattern in _MEMORY_PATTERNS):
        if where is None:
            diagnose()
        indexes = ", ".join(printable(i) for i in plan.all) or "the default index"
        return IndexUnavailableError(
            f"{where or 'one of the indexes ' + indexes}: {name} went past its memory bound "
            f"({memory_mib} MiB, COLABENV_LOCK_MEMORY_MIB) reading it: a page without end?"
        )
    patterns = _NETWORK_PATTERNS + _UNREADABLE_PATTERNS
    if any(pattern in output for pattern in patterns):
        first = next((line.strip() for line in shown if any(p in line for p in patterns)), shown[0])
        if where is None:
            diagnose()
            return IndexUnavailableError(f"{name} could not read an index: {first.strip()}")
        return IndexUnavailableError(f"{where}: {name} could not read it: {first.strip()}")
    diagnose()
    text = "\n  ".join(line.strip() for line in shown)
    return LockResolverError(f"{name} found no set of pins for the profile:\n  {text}")


def request_bounds(env: dict[str, str], deadline_s: float) -> None:
    """The resolvers' own bound on each request: the deadline as their read timeout (or the
    user's, when shorter), one retry unless the user set their own."""
    seconds = max(1, math.ceil(deadline_s))
    for variable in ("UV_HTTP_TIMEOUT", "PIP_TIMEOUT"):
        given = env.get(variable, "")
        try:
            mine = float(given)
        except ValueError:
            mine = math.inf
        env[variable] = given if 0 < mine <= seconds else str(seconds)
    for variable in ("UV_HTTP_RETRIES", "PIP_RETRIES"):
        env.setdefault(variable, str(RESOLVER_RETRIES))


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
    *,
    http_deadline_s: float = HTTP_DEADLINE_S,
    memory_mib: int = RESOLVER_MEMORY_MIB,
    diagnose: Callable[[], None] = lambda: None,
) -> ResolverRun:
    """The closure of ``requirements`` for ``target`` within ``constraints``, pinned with sha256
    hashes (with uv, each file's URL too); ``find_links``: pages of links beside the indexes.
    ``diagnose`` runs when the resolver fails and raises the error of an index it finds wrong.
    The work folder is removed whatever happens, the resolver ended first."""
    env = resolver_env(environ)
    request_bounds(env, http_deadline_s)
    pages = [expand_url(page, environ) for page in find_links]
    stdin = "".join(f"{line}\n" for line in requirements)
    expanded_default = expand_url(plan.default, environ) if plan.default else None
    expanded_extras = [expand_url(url, environ) for url in plan.extras]
    with tempfile.TemporaryDirectory(prefix="colabenv-lock-") as work:
        # the resolver's own temporary files go in the work folder, removed with it even when
        # the resolver was killed before it could remove them
        scratch = Path(work) / "tmp"
        scratch.mkdir()
        env["TMPDIR"] = str(scratch)
        constraints_file = None
        if constraints:
            constraints_file = Path(work) / "constraints.txt"
            constraints_file.write_text("".join(f"{c}\n" for c in constraints), encoding="utf-8")
        label, argv, timeout = _command(
            resolver, target, constraints_file, pages, env, expanded_default, expanded_extras
        )
        result = processes.run(
            argv,
            timeout=timeout,
            env=env,
            input_text=stdin,
            keep_bytes=RESOLVER_OUTPUT_BYTES,
            memory_bytes=memory_mib << 20,
            resident=GroupResident(),
        )
    if result.timed_out:
        diagnose()
        raise LockResolverError(f"{label} did not finish within {timeout:g} s")
    if not result.ok:
        output = result.stderr + "\n" + result.stdout
        if resolver == Resolver.UV and "--format" in output and "unexpected argument" in output:
            raise LockError(
                f"{label} cannot write pylock.toml (uv 0.8 or newer can): "
                "upgrade uv, or use --resolver pip-tools"
            )
        raise _resolver_failure(label, result, plan, environ, redact, memory_mib, diagnose)
    if result.stdout_dropped:
        raise LockResolverError(f"{label} wrote more than {RESOLVER_OUTPUT_BYTES >> 20} MiB of lock")
    try:
        if resolver == Resolver.UV:
            packages = _uv_packages(result.stdout, redact)
        else:
            packages, _, _, _ = parse_requirements(result.stdout)
    except LockError as exc:
        raise LockResolverError(f"{label} wrote output colabenv cannot read: {exc}") from None
    return ResolverRun(tuple(sorted(packages, key=lambda p: p.name)), label)


def _command(
    resolver: str,
    target: Target,
    constraints_file: Path | None,
    pages: Sequence[str],
    env: dict[str, str],
    default: str | None,
    extras: Sequence[str],
) -> tuple[str, list[str], float]:
    """The resolver's name and version, its command line and its time limit; the indexes go
    in ``env`` (never on the command line: they may carry credentials)."""
    if resolver == Resolver.UV:
        uv = find_uv()
        version = processes.run([uv, "--version"], timeout=30, env=env)
        label = printable(" ".join(version.stdout.split()[:2])) if version.ok else "uv"
        if default:
            env["UV_INDEX_URL"] = default
        if extras:
            env["UV_EXTRA_INDEX_URL"] = " ".join(extras)
        return label, _uv_argv(uv, target, constraints_file, pages), UV_TIMEOUT_S
    if resolver == Resolver.PIP_TOOLS:
        refusal = pip_tools_refusal(target)
        if refusal is not None:
            raise LockError(refusal)
        if default:
            env["PIP_INDEX_URL"] = default
        if extras:
            env["PIP_EXTRA_INDEX_URL"] = " ".join(extras)
        return _pip_tools_label(), _pip_tools_argv(constraints_file, pages), PIP_TOOLS_TIMEOUT_S
    raise ValueError(f"unknown resolver {resolver!r} (expected {' or '.join(RESOLVERS)})")


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
