"""One profile document, table by table, into a :class:`~colabenv.models.Profile` (schema 1).

:func:`build` checks a single file (``partial``: a profile that extends another may leave out
what its parent gives) and the merged profile alike, through one
:class:`~colabenv._util.reader.Reader` whose errors name the file and the key path.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name

from colabenv._util.bounds import (
    MAX_IO_PATHS,
    MAX_IO_SIZE_MIB,
    MAX_SEED,
    MAX_THROUGHPUT_MIB_S,
    MAX_TIMEOUT_S,
    MAX_VRAM_GIB,
    MAX_WATCH_HOURS,
    MAX_WATCH_INTERVAL_S,
    MIN_WATCH_INTERVAL_S,
)
from colabenv._util.reader import Reader, close_match, expected, path_problem, shown, unknown
from colabenv.models import (
    Framework,
    FrameworkRequest,
    Installer,
    InstallSettings,
    IoCheck,
    JobSettings,
    PackageRequest,
    Profile,
    Reproducibility,
    TargetSpec,
    VerifySettings,
    WatchSettings,
)
from colabenv.models.frameworks import FACTS
from colabenv.profile import env, job, packages, rules, targets
from colabenv.profile.files import NAME_PATTERN, Context
from colabenv.seeding import hook_environment

SCHEMA_VERSION = 1
MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 200
MAX_APT_PACKAGES = 500
"""apt packages a profile may list (after ``extends``): the script passes them to apt-get in
its argv, so the list is bounded where it is read (the longest name is bounded by its rule)."""

TOP_KEYS = (
    "schema",
    "name",
    "description",
    "extends",
    "python",
    "frameworks",
    "packages",
    "apt",
    "env",
    "install",
    "verify",
    "reproducibility",
    "catalog",
    "targets",
    "watch",
    "job",
)
FRAMEWORK_TABLE_KEYS = ("version", "variant")
PACKAGES_KEYS = ("requirements",)
APT_KEYS = ("packages",)
INSTALL_KEYS = ("installer", "index_url", "pytorch_index_url", "extra_index_urls", "wheelhouse")
VERIFY_KEYS = (
    "smoke",
    "require_gpu",
    "min_free_vram_gib",
    "timeout_s",
    "io_paths",
    "min_read_mib_s",
    "min_write_mib_s",
    "io_size_mib",
    "min_free_ram_gib",
    "max_other_vram_share",
)
IO_PATH_KEYS = ("path", "min_read_mib_s", "min_write_mib_s")
REPRODUCIBILITY_KEYS = ("seed", "deterministic")
CATALOG_KEYS = ("paths", "allow_unconfirmed", "check_index")
WATCH_KEYS = ("enabled", "interval_s", "max_hours")
MAX_CATALOG_PATHS = 32

_PACKAGE_NAME_RE = re.compile(r"[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]")
_VARIANT_PATTERNS: dict[Framework, tuple[str, str]] = {
    Framework.TORCH: (r"cpu|cu[0-9]{3}", '"cpu" or "cuXYZ" such as "cu126"'),
    Framework.TENSORFLOW: (r"cpu|and-cuda|cuda", '"cpu", "and-cuda" or "cuda"'),
    Framework.JAX: (r"cpu|cuda[0-9]{2}", '"cpu" or "cudaXY" such as "cuda12"'),
}


def build(document: Mapping[str, object], context: Context, partial: bool = False) -> Profile:
    """Validate one document (a single file when ``partial``, else the merged profile); every
    problem found is reported, together (:class:`~colabenv._util.reader.Problems`)."""
    problems = context.problems()
    doc = Reader(document, context.fail, problems=problems)
    attempt = doc.attempt
    doc.allow(*TOP_KEYS)
    if "schema" in document:
        attempt(lambda: _schema(doc), None)
    name = ""
    if "name" in document or not partial:
        name = attempt(lambda: _name(doc), "")
    if "extends" in document:
        attempt(lambda: _extends(doc), "")
    python = None
    if "python" in document:
        python = attempt(lambda: rules.specifier(document["python"], doc.at("python")), None)
    description = attempt(lambda: _description(doc), "")
    frameworks: tuple[FrameworkRequest, ...] = attempt(lambda: _frameworks(doc.sub("frameworks")), ())
    cuda_packages: tuple[PackageRequest, ...] = attempt(lambda: packages.requests(doc.sub("frameworks")), ())
    requirements: tuple[Requirement, ...] = attempt(lambda: _requirements(doc.sub("packages")), ())
    apt: tuple[str, ...] = attempt(lambda: _apt(doc.sub("apt")), ())
    variables: tuple[tuple[str, str], ...] = attempt(lambda: env.variables(doc.sub("env")), ())
    install = attempt(lambda: _install(doc.sub("install")), InstallSettings())
    verify = attempt(lambda: _verify(doc.sub("verify")), VerifySettings())
    reproducibility = attempt(lambda: _reproducibility(doc.sub("reproducibility")), Reproducibility())
    if not partial:
        hook = hook_environment(reproducibility)
        attempt(lambda: env.leave_room_for_flags(doc.sub("env"), variables, hook), None)
    no_catalog: tuple[tuple[Path, ...], bool, bool] = ((), False, True)
    catalog_paths, allow_unconfirmed, check_index = attempt(lambda: _catalog(doc.sub("catalog")), no_catalog)
    named_targets: tuple[TargetSpec, ...] = attempt(lambda: targets.targets(doc.sub("targets")), ())
    watch = attempt(lambda: _watch(doc.sub("watch")), WatchSettings())
    job_settings = attempt(lambda: job.job(doc.sub("job")), JobSettings())
    problems.raise_found()
    return Profile(
        name=name,
        description=description,
        path=context.path,
        content_hash="",
        python=python,
        frameworks=frameworks,
        requirements=requirements,
        apt=apt,
        env=variables,
        install=install,
        verify=verify,
        reproducibility=reproducibility,
        catalog_paths=catalog_paths,
        allow_unconfirmed=allow_unconfirmed,
        check_index=check_index,
        targets=named_targets,
        watch=watch,
        cuda_packages=cuda_packages,
        job=job_settings,
    )


def _schema(doc: Reader) -> None:
    schema = doc.data["schema"]
    if isinstance(schema, bool) or not isinstance(schema, int):
        raise doc.fail("schema", expected("the integer 1", schema))
    if schema != SCHEMA_VERSION:
        raise doc.fail("schema", f"schema {schema} is not supported (this colabenv reads schema 1)")


def _name(doc: Reader) -> str:
    name = doc.text("name", empty=True)
    if not re.fullmatch(NAME_PATTERN, name) or len(name) > MAX_NAME_LENGTH:
        raise doc.fail(
            "name",
            f"{shown(name)} is not a profile name (letters, digits, '.', "
            f"'_', '-'; at most {MAX_NAME_LENGTH})",
        )
    return name


def _description(doc: Reader) -> str:
    text = doc.text("description", "", empty=True)
    if not text.isprintable():
        raise doc.fail("description", "must be one line without control characters")
    if len(text) > MAX_DESCRIPTION_LENGTH:
        raise doc.fail("description", f"longer than {MAX_DESCRIPTION_LENGTH} characters")
    return text.strip()


def _extends(doc: Reader) -> str:
    text = doc.text("extends", empty=True)
    if not text.strip() or "\x00" in text:
        raise doc.fail("extends", "expected a golden profile's name or the path of another profile file")
    if Path(text).is_absolute():
        raise doc.fail("extends", f"{shown(text)} must be a path relative to this file")
    return text


# ---------------------------------------------------------------------------------------------
# [frameworks]


def _frameworks(table: Reader) -> tuple[FrameworkRequest, ...]:
    """The frameworks of ``[frameworks]``; its other keys are CUDA packages (:mod:`.packages`)."""
    requests = []
    for framework in Framework:
        if framework.value in table.data:
            request = table.attempt(functools.partial(_framework, framework, table), None)
            if request is not None:
                requests.append(request)
    return tuple(requests)


def _framework(framework: Framework, frameworks: Reader) -> FrameworkRequest | None:
    """``torch = "..."``, ``false``, or ``{ version, variant, companion = "..." ... }``."""
    key = framework.value
    value = rules.version_or_table(frameworks.data[key], frameworks.at(key))
    if value is None:
        return None
    if isinstance(value, SpecifierSet):
        return FrameworkRequest(framework, value)
    table = frameworks.child(value, key)
    specifier = table.attempt(
        lambda: rules.specifier(value.get("version", "*"), table.at("version")), SpecifierSet()
    )
    variant = None
    if "variant" in value:
        variant = table.attempt(lambda: _variant(framework, table), None)
    companions: dict[NormalizedName, SpecifierSet] = {}
    for name in value:
        if name not in FRAMEWORK_TABLE_KEYS:
            table.attempt(functools.partial(_companion, framework, table, name, companions), None)
    return FrameworkRequest(
        framework=framework,
        specifier=specifier,
        variant=variant,
        companions=tuple(sorted(companions.items())),
    )


def _variant(framework: Framework, table: Reader) -> str:
    variant = table.text("variant", empty=True)
    pattern, examples = _VARIANT_PATTERNS[framework]
    if not re.fullmatch(pattern, variant):
        raise table.fail("variant", f"{shown(variant)} is not a {framework} variant ({examples})")
    return variant


def _companion(
    framework: Framework, table: Reader, name: str, companions: dict[NormalizedName, SpecifierSet]
) -> None:
    """One companion key of a framework table, into ``companions`` (``false``: none)."""
    problem = _companion_name_problem(framework, name)
    if problem is not None:
        raise table.fail(name, problem)
    canonical = canonicalize_name(name)
    if canonical in companions:
        raise table.fail(name, f"companion {canonical!r} given twice")
    companion = table.data[name]
    if companion is False:
        return
    if isinstance(companion, dict):
        raise table.fail(name, unknown(name, FRAMEWORK_TABLE_KEYS))
    companions[canonical] = rules.specifier(companion, table.at(name))


def _companion_name_problem(framework: Framework, name: str) -> str | None:
    """Any other key of a framework table names one of its companions (torchvision and
    torchaudio of torch, jaxlib of jax: ``FACTS``); a misspelt one (``torchvison``) or another
    package (``flash_attn``) is refused here, not later as "no release runs on the target"."""
    companions = FACTS[framework].companions
    if not _PACKAGE_NAME_RE.fullmatch(name):
        return f"unknown key; {shown(name)} is neither version, variant nor a package name"
    canonical = canonicalize_name(name)
    if canonical == framework.value:
        return f"{framework} cannot be its own companion; use version"
    if canonical in {f.value for f in Framework}:
        return f"{canonical} is a framework of its own; set frameworks.{canonical}"
    if canonical in companions:
        return None
    close = close_match(name, (*FRAMEWORK_TABLE_KEYS, *companions), cutoff=0.7)
    if close is not None:
        return f"unknown key (did you mean {close!r}?)"
    keys = ", ".join((*FRAMEWORK_TABLE_KEYS, *companions))
    return (
        f'unknown key (did you mean [packages] requirements = ["{name}"]? a {framework} table takes {keys})'
    )


# ---------------------------------------------------------------------------------------------
# [packages], [apt]


def _array(table: Reader, name: str) -> list[object]:
    """The array ``name`` of strings (empty when absent), its items as they are."""
    items = table.data.get(name, [])
    if not isinstance(items, list):
        raise table.fail(name, table.expected("an array of strings", items))
    return items


def _strings(table: Reader, name: str, items: list[object]) -> Iterator[tuple[int, str]]:
    """The strings of ``items``, the array ``name``, with their indexes; an item that is not a
    string is reported (in its turn) and left out."""
    for index, item in enumerate(items):
        if isinstance(item, str):
            yield index, item
        else:
            table.report(table.fail(name, expected("a string", item), index=index))


def _requirements(table: Reader) -> tuple[Requirement, ...]:
    table.allow(*PACKAGES_KEYS)
    seen: dict[tuple[NormalizedName, str], int] = {}
    requirements = []
    for index, text in _strings(table, "requirements", _array(table, "requirements")):
        refuse = table.at("requirements", index)
        requirement = table.attempt(functools.partial(rules.requirement, text, refuse), None)
        if requirement is None:
            continue
        canonical = canonicalize_name(requirement.name)
        marker = str(requirement.marker) if requirement.marker else ""
        if (canonical, marker) in seen:
            table.report(refuse(f"duplicate requirement {canonical!r} (also at [{seen[canonical, marker]}])"))
            continue
        seen[canonical, marker] = index
        requirements.append(requirement)
    return tuple(requirements)


def _apt(table: Reader) -> tuple[str, ...]:
    table.allow(*APT_KEYS)
    seen: dict[str, int] = {}
    packages = []
    listed = _array(table, "packages")
    if len(listed) > MAX_APT_PACKAGES:
        table.report(
            table.at("packages")(
                f"{len(listed)} apt packages; at most {MAX_APT_PACKAGES} (apt-get gets them in its argv)"
            )
        )
    for index, text in _strings(table, "packages", listed):
        refuse = table.at("packages", index)
        name = table.attempt(functools.partial(rules.apt_package, text, refuse), None)
        if name is None:
            continue
        if name in seen:
            table.report(refuse(f"duplicate apt package {name!r} (also at [{seen[name]}])"))
            continue
        seen[name] = index
        packages.append(text)
    return tuple(packages)


# ---------------------------------------------------------------------------------------------
# [install]


def _install(table: Reader) -> InstallSettings:
    table.allow(*INSTALL_KEYS)
    installer = Installer.AUTO
    if "installer" in table.data:
        installer = table.attempt(lambda: _installer(table), Installer.AUTO)
    urls: dict[str, str | None] = {}
    for name in ("index_url", "pytorch_index_url"):
        urls[name] = table.attempt(functools.partial(_index_url, table, name), None)
    extra: list[str] = []
    for index, url in _strings(table, "extra_index_urls", _array(table, "extra_index_urls")):
        refuse = table.at("extra_index_urls", index)
        checked = table.attempt(functools.partial(rules.url, url, refuse, rules.INDEX_URL_SCHEMES), None)
        if checked is None:
            continue
        if url in extra:
            table.report(refuse("duplicate extra index URL"))
            continue
        extra.append(url)
    wheelhouse = table.attempt(lambda: _wheelhouse(table), None)  # issue 26
    return InstallSettings(
        installer=installer,
        index_url=urls["index_url"],
        pytorch_index_url=urls["pytorch_index_url"],
        extra_index_urls=tuple(extra),
        wheelhouse=wheelhouse,
    )


# wheelhouse (issue 26)
MAX_WHEELHOUSE_CHARS = 1024


def _wheelhouse(table: Reader) -> str | None:
    """``wheelhouse``: an absolute folder on the host, one printable line, bounded."""
    text = table.opt_text("wheelhouse", empty=True)
    if text is None:
        return None
    if len(text) > MAX_WHEELHOUSE_CHARS:
        raise table.fail("wheelhouse", f"longer than {MAX_WHEELHOUSE_CHARS} characters")
    problem = path_problem(text)
    if problem is not None:
        raise table.fail("wheelhouse", problem)
    return text


def _installer(table: Reader) -> Installer:
    text = table.text("installer", empty=True)
    choices = [i.value for i in Installer]
    if text not in choices:
        raise table.fail("installer", unknown(text, choices, "installer"))
    return Installer(text)


def _index_url(table: Reader, name: str) -> str | None:
    given = table.opt_text(name, empty=True)
    return None if given is None else rules.url(given, table.at(name), rules.INDEX_URL_SCHEMES)


# ---------------------------------------------------------------------------------------------
# [verify], [reproducibility], [catalog]


def _verify(table: Reader) -> VerifySettings:
    table.allow(*VERIFY_KEYS)
    defaults = VerifySettings()
    attempt = table.attempt
    smoke = attempt(lambda: _smoke(table), None) if "smoke" in table.data else None
    read_all = attempt(lambda: _throughput(table, "min_read_mib_s"), None)
    write_all = attempt(lambda: _throughput(table, "min_write_mib_s"), None)
    return VerifySettings(
        smoke=smoke,
        require_gpu=attempt(lambda: table.flag("require_gpu", defaults.require_gpu), defaults.require_gpu),
        min_free_vram_gib=attempt(lambda: _gib(table, "min_free_vram_gib"), None),
        timeout_s=_number(
            table, "timeout_s", defaults.timeout_s, high=MAX_TIMEOUT_S, above_low=True, unit=" s, a day"
        ),
        io=attempt(lambda: _io_checks(table, read_all, write_all), ()),
        io_size_mib=attempt(
            lambda: table.integer("io_size_mib", low=1, high=MAX_IO_SIZE_MIB, default=defaults.io_size_mib),
            defaults.io_size_mib,
        ),
        min_free_ram_gib=attempt(lambda: _gib(table, "min_free_ram_gib"), None),
        max_other_vram_share=_number(
            table, "max_other_vram_share", defaults.max_other_vram_share, high=1.0, unit=" (a share of 1)"
        ),
    )


def _smoke(table: Reader) -> tuple[Framework, ...]:
    chosen: list[Framework] = []
    known = [f.value for f in Framework]
    for index, text in _strings(table, "smoke", _array(table, "smoke")):
        if text not in known:
            table.report(table.fail("smoke", unknown(text, known, "framework"), index=index))
        elif Framework(text) in chosen:
            table.report(table.fail("smoke", f"{text} listed twice", index=index))
        else:
            chosen.append(Framework(text))
    return tuple(chosen)


def _number(
    table: Reader,
    name: str,
    default: float,
    *,
    low: float = 0,
    high: float,
    above_low: bool = False,
    unit: str,
) -> float:
    """``name``, a number within its bounds, else ``default`` (absent, or once its error is gathered)."""
    return table.attempt(
        lambda: table.number(name, low=low, high=high, above_low=above_low, unit=unit, default=default),
        default,
    )


def _optional_number(table: Reader, name: str, *, low: float, high: float, unit: str) -> float | None:
    return table.number(name, low=low, high=high, unit=unit) if name in table.data else None


def _gib(table: Reader, name: str) -> float | None:
    return _optional_number(table, name, low=0, high=MAX_VRAM_GIB, unit=" GiB")


def _throughput(table: Reader, name: str) -> float | None:
    return _optional_number(table, name, low=0, high=MAX_THROUGHPUT_MIB_S, unit=" MiB/s")


def _io_checks(table: Reader, read_all: float | None, write_all: float | None) -> tuple[IoCheck, ...]:
    """``io_paths``: absolute folders, each a string or ``{path, min_read_mib_s,
    min_write_mib_s}``; the table's own thresholds beat the ones given for all."""
    value = table.data.get("io_paths", [])
    if not isinstance(value, list):
        raise table.fail("io_paths", expected("a list of paths", value))
    if len(value) > MAX_IO_PATHS:
        raise table.fail("io_paths", f"more than {MAX_IO_PATHS} paths")
    checks: list[IoCheck] = []
    for index, item in enumerate(value):
        check = table.attempt(functools.partial(_io_check, table, index, item, read_all, write_all), None)
        if check is None:
            continue
        if any(seen.path == check.path for seen in checks):
            where = table.at("io_paths", index)
            if isinstance(item, dict):
                where = table.child(item, "io_paths", index).at("path")
            table.report(where(f"{shown(check.path)} listed twice"))
            continue
        checks.append(check)
    return tuple(checks)


def _io_check(
    table: Reader, index: int, item: object, read_all: float | None, write_all: float | None
) -> IoCheck:
    """One item of ``io_paths``: a path, or a table with its own thresholds."""
    read, write = read_all, write_all
    if isinstance(item, dict):
        own = table.child(item, "io_paths", index)
        own.allow(*IO_PATH_KEYS)
        if "path" not in item:
            raise table.fail("io_paths", "missing path", index=index)
        text = own.text("path", empty=True)
        read = _first(own.attempt(lambda: _throughput(own, "min_read_mib_s"), None), read)
        write = _first(own.attempt(lambda: _throughput(own, "min_write_mib_s"), None), write)
        refuse = own.at("path")
    elif isinstance(item, str):
        text, refuse = item, table.at("io_paths", index)
    else:
        raise table.fail("io_paths", expected("a path or a table with path", item), index=index)
    problem = path_problem(text)
    if problem is not None:
        raise refuse(problem)
    return IoCheck(text, read, write)


def _first(own: float | None, shared: float | None) -> float | None:
    """A path's own threshold, else the one given for all (an own 0 is no minimum there)."""
    return shared if own is None else own


def _reproducibility(table: Reader) -> Reproducibility:
    table.allow(*REPRODUCIBILITY_KEYS)
    seed = None
    if "seed" in table.data:
        seed = table.attempt(lambda: table.integer("seed", low=0, high=MAX_SEED), None)
    deterministic = table.attempt(lambda: table.flag("deterministic", False), False)
    return Reproducibility(seed=seed, deterministic=deterministic)


def _catalog(table: Reader) -> tuple[tuple[Path, ...], bool, bool]:
    """``[catalog]``: the overlay folders, whether unconfirmed builds are allowed, and whether
    choices are confirmed against the indexes they come from."""
    table.allow(*CATALOG_KEYS)
    paths: list[str] = table.attempt(lambda: _catalog_paths(table), [])
    allow_unconfirmed = table.attempt(lambda: table.flag("allow_unconfirmed", False), False)
    check_index = table.attempt(lambda: table.flag("check_index", True), True)
    return tuple(Path(p) for p in paths), allow_unconfirmed, check_index


def _catalog_paths(table: Reader) -> list[str]:
    """``[catalog] paths``: folders of catalog overlay files, relative to the profile file."""
    listed = _array(table, "paths")
    if len(listed) > MAX_CATALOG_PATHS:
        raise table.fail("paths", f"more than {MAX_CATALOG_PATHS} folders")
    paths = []
    for index, text in _strings(table, "paths", listed):
        if not text.strip() or "\x00" in text or not text.isprintable():
            table.report(table.fail("paths", "expected a folder path", index=index))
        elif Path(text).is_absolute():
            table.report(
                table.fail("paths", f"{shown(text)} must be a path relative to the profile file", index=index)
            )
        else:
            paths.append(text)
    return paths


def _watch(table: Reader) -> WatchSettings:
    """``[watch]``: whether ``bootstrap()`` and ``verify()`` start the recorder, and its settings."""
    table.allow(*WATCH_KEYS)
    defaults = WatchSettings()
    attempt = table.attempt
    return WatchSettings(
        enabled=attempt(lambda: table.flag("enabled", defaults.enabled), defaults.enabled),
        interval_s=_number(
            table,
            "interval_s",
            defaults.interval_s,
            low=MIN_WATCH_INTERVAL_S,
            high=MAX_WATCH_INTERVAL_S,
            unit=" s",
        ),
        max_hours=_number(
            table, "max_hours", defaults.max_hours, high=MAX_WATCH_HOURS, above_low=True, unit=" h, a week"
        ),
    )
