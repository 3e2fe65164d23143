"""Resolution -> the bootstrap script, as lines (docs/cli.md, "The bootstrap script"). No I/O.

Every value from the profile reaches bash as a single-quoted word (:func:`q`, the rule of
:func:`shlex.quote`) or inside a quoted here-document, so no profile string is ever evaluated
by the shell. The embedded helper (``colabenv/_target/helper.py``) receives short values as
arguments and lists (requirements, ``[env]``, the marker record) in files the script writes
into its work folder with bash's builtin ``printf``, so no list, however long, meets the
kernel's limit on one command's arguments.

What a run changed is recorded in the state directory in a file named for the profile and the
interpreter (:data:`colabenv.script.state.PENDING_NAME`), and runs that share a state directory take
turns (the helper's ``hold-lock`` on :data:`colabenv.script.state.LOCK_NAME`, in a process no child
of the script inherits it from): a failed or killed run of one profile
never makes another profile's run report a restart, and a killed run's record still makes the
next run of the same profile report one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from colabenv.errors import UsageError
from colabenv.models import Framework, Installer, LockedFramework, Profile, Resolution, format_driver
from colabenv.models.frozen import model
from colabenv.script import state
from colabenv.script.bash import INSTALLER_SETUP, array, lock_lines, prelude, q
from colabenv.seeding import hook_environment

if TYPE_CHECKING:
    from colabenv.lock.content import LockTarget

HELPER_DELIMITER = "COLABENV_HELPER_EOF"
LOCK_DELIMITER = "COLABENV_LOCK_EOF"
RESTART_LINE = "COLABENV: restart required"
NO_RESTART_LINE = "COLABENV: nothing changed, no restart needed"
HELPER_NAMES_LINE = "SHARED: dict[str, str] = {}"
"""The line of the helper that :func:`helper_program` fills with :func:`state.shared_names`."""


@model
class LockInput:
    """A lockfile to install exactly instead of resolving (``render --lock``).

    ``target``, ``frameworks`` and ``constraints`` are the lock's own (its header): what the
    script's header and marker describe, since the lock is what the script installs (the command
    layer has checked that the lock fits the target rendered for).
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


def _comment(text: str) -> str:
    """One comment line; control characters are shown escaped so nothing breaks out of it."""
    safe = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
    return f"# {safe}".rstrip()


def helper_program(source: str) -> str:
    """The helper as the script embeds it: its source with the shared names written in."""
    if source.count(HELPER_NAMES_LINE) != 1 or f"\n{HELPER_NAMES_LINE}\n" not in source:
        raise RuntimeError("the script helper has no single line for the shared names")
    names = f"SHARED: dict[str, str] = {state.shared_names()!a}"
    return source.replace(f"\n{HELPER_NAMES_LINE}\n", f"\n{names}\n", 1)


# ---------------------------------------------------------------------------------------------
# What the script installs, for its header and marker


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


def _lock_target(target: LockTarget) -> dict[str, object]:
    return {
        "driver": target.driver,
        "cuda": target.cuda,
        "compute_capabilities": list(target.compute_capabilities),
        "python": target.python,
        "platform": target.platform,
        "accelerator": target.accelerator.value,
        "tpu": target.tpu.to_json() if target.tpu is not None else None,
    }


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
    target: dict[str, object] = resolution.target.to_json()
    frameworks: dict[str, object] = {c.framework.value: c.to_json() for c in resolution.choices}
    frameworks.update((str(p.name), p.to_json()) for p in resolution.cuda_packages)
    requirements: list[str] = list(resolution.requirements)
    if lock is not None:
        requirements = list(lock.pins)
        if lock.target is not None:
            target = _lock_target(lock.target)
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
        "verify": {
            "smoke": [f.value for f in profile.smoke_frameworks],
            "require_gpu": profile.verify.require_gpu,
            "min_free_vram_gib": profile.verify.min_free_vram_gib,
            "timeout_s": profile.verify.timeout_s,
            "io": [
                {"path": c.path, "min_read_mib_s": c.min_read_mib_s, "min_write_mib_s": c.min_write_mib_s}
                for c in profile.verify.io
            ],
            "io_size_mib": profile.verify.io_size_mib,
            "min_free_ram_gib": profile.verify.min_free_ram_gib,
            "max_other_vram_share": profile.verify.max_other_vram_share,
        },
        "reproducibility": {
            "seed": profile.reproducibility.seed,
            "deterministic": profile.reproducibility.deterministic,
        },
    }
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _target_line(resolution: Resolution) -> str:
    target = resolution.target
    caps = ", ".join(str(c) for c in target.compute_capabilities) or "unknown"
    if target.tpu is not None and not target.has_gpu:
        gpu = str(target.tpu)
    elif target.has_gpu:
        driver = format_driver(target.driver) if target.driver else "unknown"
        gpu = f"driver {driver}, CUDA {target.cuda or 'unknown'}, compute capability {caps}"
    else:
        gpu = "no GPU"
    return f"{gpu}, Python {target.python_minor}, {target.platform}"


def _lock_target_line(target: LockTarget) -> str:
    if target.tpu is not None:
        gpu = str(target.tpu)
    elif target.driver is None and target.cuda is None:
        gpu = "no GPU"
    else:
        caps = ", ".join(target.compute_capabilities) or "unknown"
        gpu = (
            f"driver {target.driver or 'unknown'}, CUDA {target.cuda or 'unknown'}, compute capability {caps}"
        )
    return f"{gpu}, Python {target.python}, {target.platform}"


def _header(resolution: Resolution, colabenv_version: str, lock: LockInput | None) -> Iterator[str]:
    yield "#!/usr/bin/env bash"
    yield "# shellcheck disable=SC2016  # profile values are single-quoted on purpose: never expanded"
    yield _comment(f"Bootstrap script generated by colabenv {colabenv_version}. Do not edit:")
    yield _comment("re-render it from the profile instead. Run it with bash, then restart.")
    yield _comment(f"profile: {resolution.profile_name} ({resolution.profile_hash})")
    if lock is not None:
        yield from _lock_header(resolution, lock)
    else:
        yield from _resolution_header(resolution)
    for apt in resolution.apt:
        yield _comment(f"  apt {apt}")
    for constraint in resolution.constraints:
        yield _comment(f"  bound {constraint.requirement}: {constraint.reason}")
    for warning in resolution.warnings:
        yield _comment(f"  warning: {warning}")


def _resolution_header(resolution: Resolution) -> Iterator[str]:
    yield _comment(f"target: {_target_line(resolution)}")
    if resolution.required_driver is not None:
        yield _comment(f"needs NVIDIA driver >= {format_driver(resolution.required_driver)}")
    yield _comment("resolution:")
    for choice in resolution.choices:
        status = "installed" if choice.installed else "to install"
        yield _comment(f"  {choice.framework} {choice.release} {choice.variant} ({status})")
        yield _comment(f"    why: {choice.reason}")
        if choice.index_url:
            yield _comment(f"    index: {choice.index_url}")
        if choice.find_links:
            yield _comment(f"    find-links: {choice.find_links}")
    for item in resolution.cuda_packages:
        status = "installed" if item.installed else "to install"
        yield _comment(f"  {item.name} ({item.distribution}) {item.release} {item.variant} ({status})")
        yield _comment(f"    why: {item.reason}")
        if item.index_url or item.find_links:
            yield _comment(
                f"    {'index' if item.index_url else 'find-links'}: {item.index_url or item.find_links}"
            )
    for package in resolution.packages:
        yield _comment(f"  package {package}")


def _lock_header(resolution: Resolution, lock: LockInput) -> Iterator[str]:
    yield _comment(f"installs exactly the lockfile {lock.name}")
    shown = _lock_target_line(lock.target) if lock.target else _target_line(resolution)
    yield _comment(f"target (the lock's): {shown}")
    if lock.required_driver:
        yield _comment(f"needs NVIDIA driver >= {lock.required_driver}")
    yield _comment("locked:")
    for item in lock.frameworks:
        yield _comment(f"  {item.framework} {item.version} {item.variant}")
        if item.index_url:
            yield _comment(f"    index: {item.index_url}")
    for pin in lock.pins:
        yield _comment(f"  pin {pin}")


# ---------------------------------------------------------------------------------------------
# The helper program, embedded


def _helper(helper_source: str) -> Iterator[str]:
    program = helper_program(helper_source)
    if any(line.strip() == HELPER_DELIMITER for line in program.splitlines()):
        raise RuntimeError("the script helper contains its own here-document delimiter")
    yield ""
    yield 'helper="${work}/helper.py"'
    yield f"cat >\"$helper\" <<'{HELPER_DELIMITER}'"
    yield from program.rstrip("\n").splitlines()
    yield HELPER_DELIMITER
    yield 'h() { "$py" "$helper" "$@"; }'


# ---------------------------------------------------------------------------------------------
# Preflight: one lock per state directory, then one helper process for every check


def index_templates(resolution: Resolution, lock: LockInput | None) -> list[str]:
    """Every index URL the script may use, unexpanded: checked before anything is installed."""
    install = resolution.install
    urls: list[str] = []
    if lock is not None and lock.offline:
        return []
    if lock is not None:
        index, extra = _lock_index_options(lock.text)
        urls.extend([index] if index else [])
        urls.extend(extra)
    else:
        urls.extend([install.index_url] if install.index_url else [])
        urls.extend(c.index_url for c in resolution.choices if c.index_url)
        urls.extend(p.index_url for p in resolution.cuda_packages if p.index_url)
    urls.extend(install.extra_index_urls)
    return list(dict.fromkeys(urls))


def script_index_urls(resolution: Resolution) -> tuple[str, ...]:
    """The index URLs the script for ``resolution`` uses, ``${VAR}`` references unexpanded: what
    ``colabenv.bootstrap()`` must find the variables of before it runs the script."""
    return tuple(index_templates(resolution, None))


def hook_pairs(resolution: Resolution, profile: Profile) -> tuple[tuple[str, str], ...]:
    """What the ``.pth`` hook sets when an interpreter starts: the ``[reproducibility]`` variables
    (:func:`colabenv.seeding.hook_environment`), then ``[env]``, whose value wins for a name in
    both (a ``CUBLAS_WORKSPACE_CONFIG`` of ``:16:8``, say)."""
    pairs = dict(hook_environment(profile.reproducibility))
    pairs.update(resolution.env)
    return tuple(pairs.items())


def _preflight(resolution: Resolution, profile: Profile, lock: LockInput | None) -> Iterator[str]:
    """Refuse a host the resolution does not fit, an index URL whose variable is unset, and
    learn in the same process whether a finished run already left everything in place (the
    fast path of a re-run)."""
    python = resolution.target.python_minor
    required = format_driver(resolution.required_driver) if resolution.required_driver else None
    again = "re-render the script here"
    if lock is not None:
        python = lock.python or python
        required = lock.required_driver
        again = "make a new lock for this host (colabenv lock), then render with it"
    wrong_python = f"this runtime is not Python {python}; {again}"
    yield ""
    yield 'announce "preflight"'
    if lock is None:
        yield from array("everything", resolution.requirements)
        yield 'write_list "${work}/everything.txt" "${everything[@]}"'
    pairs = hook_pairs(resolution, profile)
    yield from array("env_pairs", [item for pair in pairs for item in pair])
    if any(name in state.RULE_VARIABLES for name, _ in pairs):
        # the hook moves the state directory's rule: it also names the directory this run used
        yield f'env_pairs+=({state.STATE_DIR_VARIABLE} "$state_dir")'
    yield 'write_pairs "${work}/env.bin" "${env_pairs[@]}"'
    yield from array("bounds", resolution.constraint_lines)
    yield 'write_list "${work}/bounds.txt" "${bounds[@]}"'
    yield f"checks=(--python {q(python)} --driver {q(required or '-')})"
    yield 'if [ -n "${COLABENV_SKIP_PREFLIGHT:-}" ]; then checks=(--python - --driver -); fi'
    wanted = '--lock "$lockfile"' if lock is not None else '--reqs "${work}/everything.txt"'
    urls = "".join(f" --url {q(url)}" for url in index_templates(resolution, lock))
    yield from lock_lines(
        f'"${{checks[@]}}" --state "$state_dir" --hash {q(resolution.profile_hash)} '
        f'--env "${{work}}/env.bin" {wanted} --constraints "${{work}}/bounds.txt"{urls}'
    )
    yield 'case "$preflight" in'
    yield "  0) ;;"
    yield f"  3) fail {q(wrong_python)} ;;"
    if required is not None:
        old_driver = f"the chosen GPU wheels need NVIDIA driver >= {required}; "
        if lock is not None:
            old_driver += again
        else:
            old_driver += "re-render on this host, or with --cpu for a CPU-only runtime"
        yield f"  4) fail {q(old_driver)} ;;"
    yield '  5) fail "cannot use the state directory $state_dir: $out" ;;'
    yield '  6) step="pip"; fail "$out" ;;'
    if lock is not None:
        yield f'  7) fail "$out; "{q(again)} ;;'
    yield '  *) fail "the preflight check ended with exit $preflight" ;;'
    yield "esac"
    yield "finished=${out%%$'\\n'*}"
    yield "pending=${out#*$'\\n'}"
    yield 'case "$finished" in'
    yield "  satisfied | installed | missing) ;;"
    yield '  *) fail "the preflight check answered $finished" ;;'
    yield "esac"


def _fast_exit() -> Iterator[str]:
    yield ""
    yield 'if [ "$finished" = satisfied ] && [ ! -s "$pending" ]; then'
    yield f"  echo {q(NO_RESTART_LINE)}"
    yield "  exit 0"
    yield "fi"


def _apt(packages: Sequence[str]) -> Iterator[str]:
    yield ""
    yield 'announce "apt"'
    yield from array("apt_wanted", packages)
    yield "apt_missing=()"
    yield 'for pkg in "${apt_wanted[@]}"; do'
    yield '  name="${pkg%%=*}"'
    yield "  # shellcheck disable=SC2016"
    yield '  if ! dpkg-query -W -f=\'${Status}\' "$name" 2>/dev/null | grep -q "install ok installed"; then'
    yield '    apt_missing+=("$pkg")'
    yield "  fi"
    yield "done"
    yield 'if [ "${#apt_missing[@]}" -gt 0 ]; then'
    yield "  sudo_cmd=()"
    yield '  if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then sudo_cmd=(sudo); fi'
    yield '  printf "COLABENV: apt-get install %s\\n" "${apt_missing[*]}"'
    yield '  record "${apt_missing[@]/#/apt:}"'
    yield '  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q'
    yield (
        '  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q '
        '--no-install-recommends "${apt_missing[@]}"'
    )
    yield "fi"


# ---------------------------------------------------------------------------------------------
# Python packages


def _urls(variable: str, templates: Sequence[str]) -> str:
    if not templates:
        return f'{variable}=""'
    return f'{variable}="$(h expand-url {" ".join(q(t) for t in templates)})"'


def _expanded_urls(index: str | None, extra: Sequence[str]) -> Iterator[str]:
    """``$index_url`` and ``$extra_urls``, expanded with tracing off: ``bash -x`` never shows
    a credential."""
    yield "{ trace_off; } 2>/dev/null"
    yield _urls("index_url", [index] if index else [])
    yield _urls("extra_urls", extra)
    yield "trace_on"


def _install(
    requirements_file: str,
    missing_command: str,
    install_args: str,
    index: str | None,
    extra: Sequence[str],
    installing: str,
    prepare: Sequence[str] = (),
) -> Iterator[str]:
    """Install what ``missing_command`` finds unmet (after the ``prepare`` lines); the failure
    line names the cause."""
    templates = [*([index] if index else []), *extra]
    yield f'h {missing_command} {requirements_file} "${{work}}/missing.txt" "${{work}}/before.txt"'
    yield 'if [ -s "${work}/missing.txt" ]; then'
    yield from (f"  {line}" for line in _expanded_urls(index, extra))
    yield from (f"  {line}" for line in prepare)
    yield '  mapfile -t missing <"${work}/missing.txt"'
    yield f'  printf "COLABENV: {installing} (%s): %s\\n" "$installer" "${{missing[*]}}"'
    yield '  record "${missing[@]}"'
    yield f"  if ! run_install {install_args}; then"
    causes = "".join(f" {q(t)}" for t in templates)
    yield f'    fail "$(h install-cause "${{work}}/installer.log"{causes})"'
    yield "  fi"
    yield '  : >"${work}/moved.txt"'
    yield '  h report-changes "${work}/before.txt" "${work}/moved.txt"'
    yield '  mapfile -t moved <"${work}/moved.txt"'
    yield '  record "${moved[@]}"'
    yield f'  h {missing_command} {requirements_file} "${{work}}/still.txt"'
    yield '  if [ -s "${work}/still.txt" ]; then'
    yield '    fail "still not satisfied after install: $(tr "\\n" " " <"${work}/still.txt")"'
    yield "  fi"
    yield "fi"


def _install_group(
    label: str,
    requirements: Sequence[str],
    constraints: Sequence[str],
    resolution: Resolution,
    index: str | None,
) -> Iterator[str]:
    install = resolution.install
    extra = [*([index] if index else []), *install.extra_index_urls]
    yield ""
    yield f"announce {q('pip: ' + label)}"
    yield from array("group", requirements)
    yield 'write_list "${work}/group.txt" "${group[@]}"'
    bound = ""
    if constraints:  # never an empty file: uv warns on every run that it holds nothing
        yield from array("constraints", constraints)
        yield 'write_list "${work}/constraints.txt" "${constraints[@]}"'
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
    yield from _install(
        '"${work}/group.txt"',
        "missing",
        args,
        install.index_url,
        list(dict.fromkeys(extra)),
        saying,
        prepare,
    )


def _find_links(resolution: Resolution, requirements: Sequence[str]) -> str:
    """``--find-links URL`` for each find-links page a framework of this group needs (the
    libtpu of an old jax or torch_xla release; pip and uv take the same option)."""
    wanted = set(requirements)
    places = [(c.find_links, c.requirements) for c in resolution.choices]
    places += [(p.find_links, p.requirements) for p in resolution.cuda_packages]
    pages = [page for page, reqs in places if page is not None and wanted.intersection(reqs)]
    return "".join(f" --find-links {q(page)}" for page in dict.fromkeys(pages))


def _only_binary(resolution: Resolution, requirements: Sequence[str]) -> str:
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


def _python_packages(resolution: Resolution) -> Iterator[str]:
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
        yield from _install_group(label, requirements, constraints, resolution, url)


def _lock_index_options(text: str) -> tuple[str | None, list[str]]:
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


def _lock_file(lock: LockInput) -> Iterator[str]:
    """The lock's requirements, without its index options: the script passes index URLs in the
    installer's environment, expanded and percent-encoded (pip would expand ``${VAR}`` in a
    file itself, unencoded)."""
    if any(line.strip() == LOCK_DELIMITER for line in lock.text.splitlines()):
        raise UsageError(f"{lock.name}: contains the line {LOCK_DELIMITER}")
    yield ""
    yield 'lockfile="${work}/colabenv.lock.txt"'
    yield f"cat >\"$lockfile\" <<'{LOCK_DELIMITER}'"
    dropped: tuple[str, ...] = ("--index-url", "-i", "--extra-index-url")
    if lock.offline:  # wheelhouse (issue 26): no page of links is fetched either
        dropped += ("--find-links", "-f")
    for line in lock.text.rstrip("\n").splitlines():
        option = line.strip().partition(" ")[0]
        if option not in dropped:
            yield line
    yield LOCK_DELIMITER


def _lock_install(resolution: Resolution, lock: LockInput) -> Iterator[str]:
    index, extra = _lock_index_options(lock.text)
    if lock.wheelhouse is not None:  # wheelhouse (issue 26)
        from colabenv.script.wheelhouse import wheelhouse_install

        args, prepare, label = wheelhouse_install(lock.wheelhouse, offline=lock.offline)
        every = list(dict.fromkeys([*extra, *resolution.install.extra_index_urls]))
        yield ""
        yield 'announce "pip: lockfile"'
        yield from _install(
            '"$lockfile"',
            "missing-lock",
            args,
            None if lock.offline else index,
            [] if lock.offline else every,
            label,
            prepare,
        )
        return
    yield ""
    yield 'announce "pip: lockfile"'
    yield from _install(
        '"$lockfile"',
        "missing-lock",
        '--require-hashes --no-deps -r "$lockfile"',
        index,
        list(dict.fromkeys([*extra, *resolution.install.extra_index_urls])),
        "installing the lockfile",
    )


def _env() -> Iterator[str]:
    yield ""
    yield 'announce "env"'
    yield 'env_result="$(h write-env "${work}/env.bin")" || fail "$env_result"'
    yield f'if [ "$env_result" = changed ]; then record {q("env:" + state.ENV_HOOK_NAME)}; fi'


def _marker(record: str, profile_hash: str) -> Iterator[str]:
    yield ""
    yield 'announce "marker"'
    yield f"marker_record={q(record)}"
    yield 'printf \'%s\' "$marker_record" >"${work}/marker.json"'
    yield "state_here"
    yield 'changes="${work}/changes.txt"'
    yield "{"
    yield '  cat -- "$pending" 2>/dev/null || true'
    yield '  cat -- "${work}/recorded.txt" 2>/dev/null || true'
    yield '} >"$changes"'
    yield "changed=0"
    yield 'if [ -s "$changes" ]; then changed=1; fi'
    yield f'if [ "$changed" = 1 ] || ! h marker-ok "$state_dir" {q(profile_hash)}; then'
    yield (
        '  marker_result="$(h write-marker "$state_dir" "${work}/marker.json" "$changed" '
        '"$changes")" || fail "$marker_result"'
    )
    yield "fi"
    yield 'rm -f -- "$pending"'
    yield 'if [ "$changed" = 1 ]; then'
    yield f"  echo {q(RESTART_LINE)}"
    yield "else"
    yield f"  echo {q(NO_RESTART_LINE)}"
    yield "fi"


def render_script(
    resolution: Resolution,
    profile: Profile,
    *,
    colabenv_version: str,
    helper_source: str,
    lock: LockInput | None = None,
    wheelhouse_source: str | None = None,
) -> Iterator[str]:
    """Yield the bootstrap script's lines, deterministic for identical inputs. A script that
    installs from a wheelhouse embeds ``wheelhouse_source`` beside the helper (issue 26)."""
    yield from _header(resolution, colabenv_version, lock)
    yield from prelude()
    yield from _helper(helper_source)
    if (lock is not None and lock.wheelhouse is not None) or resolution.install.wheelhouse is not None:
        from colabenv.script.wheelhouse import program_lines

        if wheelhouse_source is None:
            raise RuntimeError("a wheelhouse script needs the wheelhouse program's source")
        yield from program_lines(wheelhouse_source)
    if lock is not None:
        yield from _lock_file(lock)
    yield from _preflight(resolution, profile, lock)
    yield from _apt(resolution.apt)
    yield from _fast_exit()
    yield ""
    yield 'announce "pip"'
    yield 'if [ "$finished" = missing ]; then'
    installer = Installer(resolution.install.installer).value
    body = _lock_install(resolution, lock) if lock is not None else _python_packages(resolution)
    for line in (*INSTALLER_SETUP.replace("__INSTALLER__", installer).splitlines(), *body):
        yield f"  {line}" if line else ""
    yield "fi"
    yield from _env()
    yield from _marker(marker_record(resolution, profile, colabenv_version, lock), resolution.profile_hash)
