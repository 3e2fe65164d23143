"""The script's lines that install a lock from a wheelhouse (issue 26): a folder of wheels on
the host, checked file by file against the lock's sha256 before anything is installed.

Offline (``render --wheelhouse DIR``): the installer gets no index at all (``--no-index``), and
the wheelhouse program's ``check`` refuses a wheel whose sha256 the lock does not record, naming
the file, before the installer runs. As a persistent cache (``[install] wheelhouse``): its
``fill`` downloads what the folder lacks from the lock's indexes into it (hash-checked, renamed
into place), or into the run's own folder when it is read-only. Either way the installer is given
one folder, :data:`STAGING`, holding links to the files checked and nothing else, and
``--require-hashes`` holds every file to the lock. No I/O.
"""

from __future__ import annotations

from colabenv.script.bash import q

PROGRAM_DELIMITER = "COLABENV_WHEELHOUSE_EOF"
STAGING = "${work}/wheels"
"""Where a run keeps what it downloaded when the wheelhouse is read-only (its work folder), and
a link to each other file it checked: the one folder the installer is given, so it is offered
the lock's files and nothing beside them (a ``tinya-1.0+evil`` wheel it would take for
``tinya==1.0``)."""
OFFERED = f'wh_links=(--find-links "{STAGING}")'


def program_lines(source: str) -> list[str]:
    """The wheelhouse program written beside the helper, and ``hw`` that runs it."""
    if any(line.strip() == PROGRAM_DELIMITER for line in source.splitlines()):
        raise RuntimeError("the wheelhouse program contains its own here-document delimiter")
    return [
        "",
        f"cat >\"${{work}}/wheelhouse.py\" <<'{PROGRAM_DELIMITER}'",
        *source.rstrip("\n").splitlines(),
        PROGRAM_DELIMITER,
        'hw() { "$py" "${work}/wheelhouse.py" "$@"; }',
    ]


def _links(where: str) -> list[str]:
    """``wh_links``: ``--find-links`` for the run's own folder, and for the wheelhouse when it
    is a folder (one that is missing and cannot be made is left out: uv refuses a missing one)."""
    return [
        f'mkdir -p -- "{STAGING}"',
        f'wh_links=(--find-links "{STAGING}")',
        f"if [ -d {where} ]; then wh_links+=(--find-links {where}); fi",
    ]


def wheelhouse_install(folder: str, *, offline: bool) -> tuple[str, list[str], str]:
    """(installer arguments, lines run before the install, what the script says it installs)."""
    where = q(folder)
    links = f'--find-links "{STAGING}"' if offline else '"${wh_links[@]}"'
    args = f'--no-index {links} --require-hashes --no-deps -r "$lockfile"'
    if offline:
        check = f'hw check "$lockfile" "${{work}}/missing.txt" {where} "{STAGING}"'
        prepare = [f'wh_out="$({check})" || fail "$wh_out"', 'printf "%s\\n" "$wh_out"']
        return args, prepare, "installing the lockfile from the wheelhouse, no index"
    fill = f'hw fill "$lockfile" "${{work}}/missing.txt" {where} "{STAGING}"'
    prepare = [
        "{ trace_off; } 2>/dev/null  # the expanded index URLs reach the helper in its environment",
        f'wh_rc=0; wh_out="$(COLABENV_INDEX_URLS="$index_url $extra_urls" {fill})" || wh_rc=$?',
        "trace_on",
        'if [ "$wh_rc" != 0 ]; then fail "$wh_out"; fi',
        'printf "%s\\n" "$wh_out"',
        OFFERED,
    ]
    return args, prepare, "installing the lockfile through the wheelhouse"


def resolved_install(folder: str, install_args: str) -> tuple[str, list[str], str]:
    """Without a lock: the installer's dry run of ``install_args`` says what it would install
    (the wheelhouse offered beside the index, so metadata comes from its wheels, not downloads);
    the helper gives each pin every sha256 the indexes list for its wheels (the files the
    wheelhouse may serve), fills the wheelhouse as with a lock, and the install is of exactly
    those pins, hash-checked, with no index."""
    where = q(folder)
    dry = '"${work}/dry-run.txt"'
    hashed, pins = '"${work}/hashed.txt"', '"${work}/hashed-pins.txt"'
    helper_env = 'COLABENV_INDEX_URLS="$index_url $extra_urls"'
    prepare = [
        *_links(where),
        'if [ "$installer" = uv ]; then',
        f'  wh_dry=(--dry-run "${{wh_links[@]}}" {install_args})',
        f'  install_pkgs "${{wh_dry[@]}}" >{dry} 2>&1 || fail "$(h install-cause {dry})"',
        "else",
        f'  wh_dry=(--dry-run --quiet --report {dry} "${{wh_links[@]}}" {install_args})',
        '  install_pkgs "${wh_dry[@]}" >"${work}/dry-run.log" 2>&1 ||',
        '    fail "$(h install-cause "${work}/dry-run.log")"',
        "fi",
        "{ trace_off; } 2>/dev/null  # the expanded index URLs reach the helper in its environment",
        'wh_rc=0; wh_out="$(',
        f'  {helper_env} hw resolve "$installer" {dry} {hashed} {pins} &&',
        f'  {helper_env} hw fill {hashed} {pins} {where} "{STAGING}"',
        ')" || wh_rc=$?',
        "trace_on",
        'if [ "$wh_rc" != 0 ]; then fail "$wh_out"; fi',
        'printf "%s\\n" "$wh_out"',
        OFFERED,
    ]
    args = f'--no-index "${{wh_links[@]}}" --require-hashes --no-deps -r {hashed}'
    return args, prepare, "installing through the wheelhouse"
