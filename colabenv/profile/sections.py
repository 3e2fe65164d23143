"""One profile document, table by table, into a :class:`~colabenv.models.Profile` (schema 1).

:func:`build` checks a single file (``partial``: a profile that extends another may leave out
what its parent gives) and the merged profile alike, through one
:class:`~colabenv._util.reader.Reader` whose errors name the file and the key path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
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
)
from colabenv._util.reader import Reader, close_match, expected, shown, unknown
from colabenv.models import (
    Framework,
    FrameworkRequest,
    Installer,
    InstallSettings,
    IoCheck,
    Profile,
    Reproducibility,
    VerifySettings,
)
from colabenv.profile import env, rules
from colabenv.profile.files import NAME_PATTERN, Context

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
)
FRAMEWORK_TABLE_KEYS = ("version", "variant")
PACKAGES_KEYS = ("requirements",)
APT_KEYS = ("packages",)
INSTALL_KEYS = ("installer", "index_url", "pytorch_index_url", "extra_index_urls")
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
CATALOG_KEYS = ("paths", "allow_unconfirmed")
MAX_CATALOG_PATHS = 32

_PACKAGE_NAME_RE = re.compile(r"[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]")
_VARIANT_PATTERNS: dict[Framework, tuple[str, str]] = {
    Framework.TORCH: (r"cpu|cu[0-9]{3}", '"cpu" or "cuXYZ" such as "cu126"'),
    Framework.TENSORFLOW: (r"cpu|and-cuda|cuda", '"cpu", "and-cuda" or "cuda"'),
    Framework.JAX: (r"cpu|cuda[0-9]{2}", '"cpu" or "cudaXY" such as "cuda12"'),
}


def build(document: Mapping[str, object], context: Context, partial: bool = False) -> Profile:
    """Validate one document (a single file when ``partial``, else the merged profile)."""
    doc = Reader(document, context.fail)
    doc.allow(*TOP_KEYS)
    if "schema" in document:
        schema = document["schema"]
        if isinstance(schema, bool) or not isinstance(schema, int):
            raise doc.fail("schema", expected("the integer 1", schema))
        if schema != SCHEMA_VERSION:
            raise doc.fail("schema", f"schema {schema} is not supported (this colabenv reads schema 1)")
    name = ""
    if "name" in document or not partial:
        name = doc.text("name", empty=True)
        if not re.fullmatch(NAME_PATTERN, name) or len(name) > MAX_NAME_LENGTH:
            raise doc.fail(
                "name",
                f"{shown(name)} is not a profile name (letters, digits, '.', "
                f"'_', '-'; at most {MAX_NAME_LENGTH})",
            )
    if "extends" in document:
        _extends(doc)
    python = None
    if "python" in document:
        python = rules.specifier(document["python"], doc.at("python"))
    return Profile(
        name=name,
        description=_description(doc),
        path=context.path,
        content_hash="",
        python=python,
        frameworks=_frameworks(doc.sub("frameworks")),
        requirements=_requirements(doc.sub("packages")),
        apt=_apt(doc.sub("apt")),
        env=env.variables(doc.sub("env")),
        install=_install(doc.sub("install")),
        verify=_verify(doc.sub("verify")),
        reproducibility=_reproducibility(doc.sub("reproducibility")),
        catalog_paths=tuple(Path(p) for p in _catalog_paths(doc.sub("catalog"))),
        allow_unconfirmed=doc.sub("catalog").flag("allow_unconfirmed", False),
    )


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
    table.allow(*(f.value for f in Framework), what="framework")
    requests = []
    for framework in Framework:
        if framework.value in table.data:
            request = _framework(framework, table)
            if request is not None:
                requests.append(request)
    return tuple(requests)


def _framework(framework: Framework, frameworks: Reader) -> FrameworkRequest | None:
    """``torch = "..."``, ``false``, or ``{ version, variant, companion = "..." ... }``."""
    key = framework.value
    value = frameworks.data[key]
    if value is False:
        return None
    if value is True:
        raise frameworks.fail(key, 'true is not a version; use "*" for any version, false for none')
    if isinstance(value, str):
        return FrameworkRequest(framework, rules.specifier(value, frameworks.at(key)))
    if not isinstance(value, dict):
        raise frameworks.fail(
            key, expected('a version specifier, "*", false, or a table with version', value)
        )
    table = frameworks.child(value, key)
    specifier = rules.specifier(value.get("version", "*"), table.at("version"))
    variant = None
    if "variant" in value:
        variant = table.text("variant", empty=True)
        pattern, examples = _VARIANT_PATTERNS[framework]
        if not re.fullmatch(pattern, variant):
            raise table.fail("variant", f"{shown(variant)} is not a {framework} variant ({examples})")
    companions: dict[NormalizedName, SpecifierSet] = {}
    for name, companion in value.items():
        if name in FRAMEWORK_TABLE_KEYS:
            continue
        problem = _companion_name_problem(framework, name)
        if problem is not None:
            raise table.fail(name, problem)
        canonical = canonicalize_name(name)
        if canonical in companions:
            raise table.fail(name, f"companion {canonical!r} given twice")
        if companion is False:
            continue
        if isinstance(companion, dict):
            raise table.fail(name, unknown(name, FRAMEWORK_TABLE_KEYS))
        companions[canonical] = rules.specifier(companion, table.at(name))
    return FrameworkRequest(
        framework=framework,
        specifier=specifier,
        variant=variant,
        companions=tuple(sorted(companions.items())),
    )


def _companion_name_problem(framework: Framework, name: str) -> str | None:
    """Any other key of a framework table names a companion package (torchvision, jaxlib ...)."""
    close = close_match(name, FRAMEWORK_TABLE_KEYS, cutoff=0.7)
    if close is not None:
        return f"unknown key (did you mean {close!r}?)"
    if not _PACKAGE_NAME_RE.fullmatch(name):
        return f"unknown key; {shown(name)} is neither version, variant nor a package name"
    canonical = canonicalize_name(name)
    if canonical == framework.value:
        return f"{framework} cannot be its own companion; use version"
    if canonical in {f.value for f in Framework}:
        return f"{canonical} is a framework of its own; set frameworks.{canonical}"
    return None


# ---------------------------------------------------------------------------------------------
# [packages], [apt]


def _requirements(table: Reader) -> tuple[Requirement, ...]:
    table.allow(*PACKAGES_KEYS)
    seen: dict[tuple[NormalizedName, str], int] = {}
    requirements = []
    for index, text in enumerate(table.text_list("requirements")):
        refuse = table.at("requirements", index)
        requirement = rules.requirement(text, refuse)
        canonical = canonicalize_name(requirement.name)
        marker = str(requirement.marker) if requirement.marker else ""
        if (canonical, marker) in seen:
            raise refuse(f"duplicate requirement {canonical!r} (also at [{seen[canonical, marker]}])")
        seen[canonical, marker] = index
        requirements.append(requirement)
    return tuple(requirements)


def _apt(table: Reader) -> tuple[str, ...]:
    table.allow(*APT_KEYS)
    seen: dict[str, int] = {}
    packages = []
    listed = table.text_list("packages")
    if len(listed) > MAX_APT_PACKAGES:
        raise table.at("packages")(
            f"{len(listed)} apt packages; at most {MAX_APT_PACKAGES} (apt-get gets them in its argv)"
        )
    for index, text in enumerate(listed):
        refuse = table.at("packages", index)
        name = rules.apt_package(text, refuse)
        if name in seen:
            raise refuse(f"duplicate apt package {name!r} (also at [{seen[name]}])")
        seen[name] = index
        packages.append(text)
    return tuple(packages)


# ---------------------------------------------------------------------------------------------
# [install]


def _install(table: Reader) -> InstallSettings:
    table.allow(*INSTALL_KEYS)
    installer = Installer.AUTO
    if "installer" in table.data:
        text = table.text("installer", empty=True)
        choices = [i.value for i in Installer]
        if text not in choices:
            raise table.fail("installer", unknown(text, choices, "installer"))
        installer = Installer(text)
    urls: dict[str, str | None] = {}
    for name in ("index_url", "pytorch_index_url"):
        given = table.opt_text(name, empty=True)
        urls[name] = None if given is None else rules.url(given, table.at(name), rules.INDEX_URL_SCHEMES)
    extra: list[str] = []
    for index, url in enumerate(table.text_list("extra_index_urls")):
        refuse = table.at("extra_index_urls", index)
        rules.url(url, refuse, rules.INDEX_URL_SCHEMES)
        if url in extra:
            raise refuse("duplicate extra index URL")
        extra.append(url)
    return InstallSettings(
        installer=installer,
        index_url=urls["index_url"],
        pytorch_index_url=urls["pytorch_index_url"],
        extra_index_urls=tuple(extra),
    )


# ---------------------------------------------------------------------------------------------
# [verify], [reproducibility], [catalog]


def _verify(table: Reader) -> VerifySettings:
    table.allow(*VERIFY_KEYS)
    defaults = VerifySettings()
    smoke: tuple[Framework, ...] | None = None
    if "smoke" in table.data:
        chosen: list[Framework] = []
        known = [f.value for f in Framework]
        for index, text in enumerate(table.text_list("smoke")):
            if text not in known:
                raise table.fail("smoke", unknown(text, known, "framework"), index=index)
            if Framework(text) in chosen:
                raise table.fail("smoke", f"{text} listed twice", index=index)
            chosen.append(Framework(text))
        smoke = tuple(chosen)
    return VerifySettings(
        smoke=smoke,
        require_gpu=table.flag("require_gpu", defaults.require_gpu),
        min_free_vram_gib=_gib(table, "min_free_vram_gib"),
        timeout_s=table.number(
            "timeout_s",
            low=0,
            high=MAX_TIMEOUT_S,
            above_low=True,
            unit=" s, a day",
            default=defaults.timeout_s,
        ),
        io=_io_checks(table, _throughput(table, "min_read_mib_s"), _throughput(table, "min_write_mib_s")),
        io_size_mib=table.integer("io_size_mib", low=1, high=MAX_IO_SIZE_MIB, default=defaults.io_size_mib),
        min_free_ram_gib=_gib(table, "min_free_ram_gib"),
        max_other_vram_share=table.number(
            "max_other_vram_share",
            low=0,
            high=1.0,
            unit=" (a share of 1)",
            default=defaults.max_other_vram_share,
        ),
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
        read, write = read_all, write_all
        if isinstance(item, dict):
            own = table.child(item, "io_paths", index)
            own.allow(*IO_PATH_KEYS)
            if "path" not in item:
                raise table.fail("io_paths", "missing path", index=index)
            text = own.text("path", empty=True)
            read = _first(_throughput(own, "min_read_mib_s"), read)
            write = _first(_throughput(own, "min_write_mib_s"), write)
            refuse = own.at("path")
        elif isinstance(item, str):
            text, refuse = item, table.at("io_paths", index)
        else:
            raise table.fail("io_paths", expected("a path or a table with path", item), index=index)
        if not text.startswith("/") or not text.isprintable() or "\x00" in text:
            raise refuse(f"{shown(text)} is not an absolute path")
        if any(check.path == text for check in checks):
            raise refuse(f"{shown(text)} listed twice")
        checks.append(IoCheck(text, read, write))
    return tuple(checks)


def _first(own: float | None, shared: float | None) -> float | None:
    """A path's own threshold, else the one given for all (an own 0 is no minimum there)."""
    return shared if own is None else own


def _reproducibility(table: Reader) -> Reproducibility:
    table.allow(*REPRODUCIBILITY_KEYS)
    seed = None
    if "seed" in table.data:
        seed = table.integer("seed", low=0, high=MAX_SEED)
    return Reproducibility(seed=seed, deterministic=table.flag("deterministic", False))


def _catalog_paths(table: Reader) -> list[str]:
    """``[catalog] paths``: folders of catalog overlay files, relative to the profile file."""
    table.allow(*CATALOG_KEYS)
    paths = table.text_list("paths")
    if len(paths) > MAX_CATALOG_PATHS:
        raise table.fail("paths", f"more than {MAX_CATALOG_PATHS} folders")
    for index, text in enumerate(paths):
        if not text.strip() or "\x00" in text or not text.isprintable():
            raise table.fail("paths", "expected a folder path", index=index)
        if Path(text).is_absolute():
            raise table.fail(
                "paths", f"{shown(text)} must be a path relative to the profile file", index=index
            )
    return paths
