"""The fixed bash of the bootstrap script, and how a value becomes one shell word.

The prelude (failure reporting, the work folder and the sweep of killed runs' folders, the
target Python), the state-directory rule and the run lock are rendered here from
:mod:`colabenv.script.state`; nothing from a profile reaches these lines but through :func:`q`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from colabenv.script import state

_NEEDS_QUOTES = re.compile(r"[^\w@%+=:,./-]", re.ASCII).search


def q(value: str) -> str:
    """``value`` as one shell word: :func:`shlex.quote`'s rule, without importing shlex.

    A single-quoted piece never ends in a backslash (shellcheck reads ``\\'`` as an attempt to
    escape the quote): such backslashes and the quotes after them are written escaped, outside
    the quotes.
    """
    if not value:
        return "''"
    if _NEEDS_QUOTES(value) is None:
        return value
    if "\\'" not in value and not value.endswith("\\"):
        return "'" + value.replace("'", "'\"'\"'") + "'"
    words = []
    for number, piece in enumerate(value.split("'")):
        if number:
            words.append("\\'")
        body = piece.rstrip("\\")
        if body:
            words.append("'" + body + "'")
        words.append("\\\\" * (len(piece) - len(body)))
    return "".join(words)


def array(name: str, values: Sequence[str]) -> Iterator[str]:
    if not values:
        yield f"{name}=()"
        return
    yield f"{name}=("
    for value in values:
        yield f"  {q(value)}"
    yield ")"


BASH_CHECK = r"""
if [ -z "${BASH_VERSION:-}" ] || [ "${BASH_VERSINFO:-0}" -lt 4 ]; then
  printf 'COLABENV: step start failed: this script needs bash 4 or later; run it as: bash %s\n' "$0" >&2
  exit 1
fi
""".strip("\n")
"""The script's first command, in POSIX sh: ``sh setup.sh`` (dash) or an old bash is told to
use bash before anything runs; nothing after it needs to parse in another shell."""

PRELUDE = r"""
set +o posix
set -euo pipefail
export PIP_DISABLE_PIP_VERSION_CHECK=1

step="start"
cause=""
work=""
pending=""
traced=""
announce() { step="$1"; printf 'COLABENV: step %s\n' "$1"; }
fail() { cause="$1"; exit 1; }
trace_off() { traced="${-//[^x]/}"; set +x; }  # called as { trace_off; } 2>/dev/null around secrets
trace_on() { if [ -n "$traced" ]; then set -x; fi; }
restore_pending() {  # a failed run's record of what it changed, back where the next run reads it
  if [ -n "$pending" ] && [ -s "${work}/recorded.txt" ] && [ ! -e "$pending" ] && [ ! -L "$pending" ]; then
    { mkdir -p -- "$state_dir" && cat -- "${work}/recorded.txt" >"$pending"; } 2>/dev/null || true
  fi
}
finish() {
  rc=$?
  if [ -n "$work" ]; then
    if [ "$rc" -ne 0 ]; then restore_pending; fi
    rm -rf -- "$work" 2>/dev/null || true
  fi
  if [ "$rc" -ne 0 ]; then
    printf 'COLABENV: step %s failed: %s; no restart marker written\n' "$step" "${cause:-exit $rc}" >&2
  fi
}
trap finish EXIT
trap 'cause="interrupted (SIGINT)"; exit 130' INT
write_list() { local file="$1"; shift; : >"$file"; if [ "$#" -gt 0 ]; then printf '%s\n' "$@" >"$file"; fi; }
write_pairs() { local file="$1"; shift; : >"$file"; if [ "$#" -gt 0 ]; then printf '%s\0' "$@" >"$file"; fi; }
state_here() { [ -d "$state_dir" ] || fail "the state directory $state_dir was removed during the run"; }
record() {  # what this run changed: kept in the work folder, and in the state directory's pending list
  local said
  [ "$#" -gt 0 ] || return 0
  printf '%s\n' "$@" >>"${work}/recorded.txt"
  state_here
  if ! said="$({ printf '%s\n' "$@" >>"$pending"; } 2>&1)"; then
    fail "cannot record what this run changed in $pending: ${said##*: }"
  fi
}

start_time() {  # into $started: when process $1 started (clock ticks since boot), /proc/PID/stat
  local stat fields
  started=""
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  read -r -a fields <<<"${stat##*) }"
  started="${fields[19]:-}"
  [ -n "$started" ]
}
my_boot="-"
{ read -r my_boot </proc/sys/kernel/random/boot_id; } 2>/dev/null || true
my_ns="$(readlink "/proc/$$/ns/pid" 2>/dev/null || true)"
sweep() {  # work folders of killed runs: only ours, only marked, never a link, never a live run's
  local folder mark pid start ns boot
  [ -r "/proc/$$/stat" ] && [ "$my_boot" != "-" ] || return 0
  for folder in "${TMPDIR:-/tmp}"/__WORK_PREFIX__*; do
    [ -d "$folder" ] && [ ! -L "$folder" ] && [ -O "$folder" ] || continue
    mark="$folder/__WORK_MARK__"
    [ -f "$mark" ] && [ ! -L "$mark" ] && [ -O "$mark" ] || continue
    pid="" start="" ns="" boot=""
    { read -r pid start ns boot _ <"$mark"; } 2>/dev/null || true
    case "$pid:$start" in *[!0-9:]*|:*|*:) continue ;; esac
    [ -n "$ns" ] && [ -n "$boot" ] || continue
    if [ "$boot" = "$my_boot" ]; then
      [ "$ns" = "$my_ns" ] || continue
      if start_time "$pid" && [ "$started" = "$start" ]; then continue; fi
    fi
    rm -rf -- "$folder" 2>/dev/null || true
  done
}
sweep
work="$(mktemp -d "${TMPDIR:-/tmp}/__WORK_PREFIX__$$.XXXXXX")"
start_time "$$" || started="-"
printf '%s %s %s %s\n' "$$" "$started" "${my_ns:--}" "$my_boot" >"${work}/__WORK_MARK__"

py="${COLABENV_PYTHON:-}"
if [ -z "$py" ]; then
  if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "${VIRTUAL_ENV}/bin/python" ]; then
    py="${VIRTUAL_ENV}/bin/python"
  else
    py="$(command -v python3 || command -v python || true)"
  fi
fi
[ -n "$py" ] || fail "no python3 found (set COLABENV_PYTHON)"
""".strip("\n")
"""The functions every script shares. Ctrl-C (SIGINT to the whole foreground group) ends the
run saying it was interrupted, once the installer it interrupted has ended. It first leaves
POSIX mode (``POSIXLY_CORRECT`` in the
environment starts bash in it, where ``$'\\n'`` inside a quoted expansion stays literal and
older bash has no process substitution): the rest is written for bash's own mode."""


def state_dir_lines() -> Iterator[str]:
    """:func:`colabenv.script.state.state_dir` in bash, from the same definitions: ``$state_dir``."""
    yield "expand_home() {  # os.path.expanduser, into $expanded"
    yield '  local path="$1" head rest home entry user'
    yield '  expanded="$path"'
    yield "  case \"$path\" in '~'*) ;; *) return 0 ;; esac"
    yield '  head="${path%%/*}"'
    yield '  rest="${path:${#head}}"'
    yield "  if [ \"$head\" = '~' ]; then"
    yield '    if [ -n "${HOME+set}" ]; then'
    yield '      home="$HOME"'
    yield "    else"
    yield '      entry="$(getent passwd "$UID" 2>/dev/null)" || return 0'
    yield '      IFS=: read -r _ _ _ _ _ home _ <<<"$entry"'
    yield "    fi"
    yield "  else"
    yield '    user="${head:1}"'
    yield '    case "$user" in *[!0-9]*) ;; *) return 0 ;; esac'
    yield '    entry="$(getent passwd -- "$user" 2>/dev/null)" || return 0'
    yield '    IFS=: read -r _ _ _ _ _ home _ <<<"$entry"'
    yield "  fi"
    yield '  while [ "${home%/}" != "$home" ]; do home="${home%/}"; done'
    yield '  expanded="${home}${rest}"'
    yield '  [ -n "$expanded" ] || expanded=/'
    yield "}"
    yield f'state_dir="${{{state.STATE_DIR_VARIABLE}-}}"'
    yield 'if [ -n "$state_dir" ]; then'
    yield '  expand_home "$state_dir"'
    yield '  state_dir="$expanded"'
    colab = " || ".join(f'[ -n "${{{name}-}}" ]' for name in state.COLAB_VARIABLES)
    yield f"elif {colab}; then"
    yield f"  state_dir={q(state.COLAB_STATE_DIR)}"
    yield "else"
    yield f'  case "${{{state.CACHE_VARIABLE}-}}" in'
    yield f'    /*) state_dir="${{{state.CACHE_VARIABLE}}}/"{q(state.LEAF)} ;;'
    yield "    *)"
    yield "      # shellcheck disable=SC2088  # expand_home expands it, as Python would"
    yield f"      expand_home {q(state.HOME_CACHE)}"
    yield f"      case \"$expanded\" in '~'*) fail {q(state.NO_HOME)} ;; esac"
    yield f'      state_dir="${{expanded}}/"{q(state.LEAF)}'
    yield "      ;;"
    yield "  esac"
    yield "fi"
    yield 'case "$state_dir" in /*) ;; *) state_dir="${PWD%/}/${state_dir}" ;; esac  # fixed for the run'


def prelude() -> Iterator[str]:
    """The bash check, failure reporting, the work folder and its sweep, the target Python,
    ``$state_dir``."""
    yield BASH_CHECK
    yield PRELUDE.replace("__WORK_PREFIX__", state.WORK_PREFIX).replace("__WORK_MARK__", state.WORK_MARK)
    yield ""
    yield from state_dir_lines()


def lock_lines(preflight: str) -> Iterator[str]:
    """Take this state directory's run lock for the rest of the run, and run the preflight
    (``preflight``: its options) under it: ``$preflight`` (the exit) and ``$out`` (its lines).

    The helper takes the lock (``hold-lock``) in a process of its own that holds it until this
    script ends: no process the script starts inherits it. Its answer to a challenge is also the
    proof that ``$py`` is a Python that runs the helper, before anything it says is trusted.
    """
    not_python = (
        "$py is not a working Python (it did not run the script's helper); set COLABENV_PYTHON to a python3"
    )
    yield f'lock_file="${{state_dir}}/"{q(state.LOCK_NAME)}'
    yield '[ -d "$state_dir" ] || mkdir -p -- "$state_dir" 2>/dev/null || true'
    yield "challenge=$(( (RANDOM << 15 | RANDOM) + 2 ))"
    yield "take_lock() {  # what hold-lock says: waiting lines, locked|unlocked ANSWER, the preflight"
    yield '  local line="" count=""'
    yield "  while IFS= read -r line; do"
    yield "    case \"$line\" in 'waiting '*) printf '%s\\n' \"${line#waiting }\" ;; *) break ;; esac"
    yield "  done"
    yield '  case "$line" in'
    yield '    "locked $((challenge * challenge))" | "unlocked $((challenge * challenge))") ;;'
    yield "    'error '*) fail \"${line#error }\" ;;"
    yield f'    *) fail "{not_python}" ;;'
    yield "  esac"
    yield '  IFS=" " read -r preflight count || true'
    yield '  case "${preflight}:${count}" in'
    yield '    *[!0-9:]* | :* | *:) fail "the preflight check ended without an answer" ;;'
    yield "  esac"
    yield '  out=""'
    yield '  while [ "$count" -gt 0 ] && IFS= read -r line; do'
    yield "    out+=\"${out:+$'\\n'}${line}\""
    yield "    count=$((count - 1))"
    yield "  done"
    yield "}"
    holder = 'exec "$py" "$helper" hold-lock "$lock_file" "$$" "$challenge"'
    yield f"take_lock < <({holder} preflight {preflight})"


INSTALLER_SETUP = r"""
installer="${COLABENV_INSTALLER:-__INSTALLER__}"
uv_bin=""
for candidate in "${COLABENV_UV:-}" "$(command -v uv || true)" "${py%/*}/uv"; do
  if [ -n "$candidate" ] && [ -f "$candidate" ] && [ -x "$candidate" ]; then uv_bin="$candidate"; break; fi
done
if [ "$installer" = "auto" ]; then
  if [ -n "$uv_bin" ]; then installer="uv"; else installer="pip"; fi
fi
if [ "$installer" = "uv" ] && [ -z "$uv_bin" ]; then
  fail "the profile installs with uv, but there is no uv on PATH, beside $py or in COLABENV_UV"
fi
uv_unset=()  # a UV_CONSTRAINT naming a file that is gone fails every uv install (colabtools#5237)
if [ "$installer" = "uv" ]; then
  for uv_var in UV_CONSTRAINT UV_BUILD_CONSTRAINT; do
    IFS=' ' read -r -a uv_files <<<"${!uv_var-}"
    for uv_file in "${uv_files[@]}"; do
      if [ ! -e "$uv_file" ]; then
        echo "COLABENV: $uv_var names $uv_file, which does not exist: uv runs without it"
        uv_unset+=(-u "$uv_var")
        break
      fi
    done
  done
fi
index_url=""
extra_urls=""
install_pkgs() {  # index URLs (credentials included) go in the environment, never in argv or a trace
  { trace_off; } 2>/dev/null
  if [ "$installer" = "uv" ]; then
    if [ -n "$index_url" ]; then local -x UV_INDEX_URL="$index_url"; fi
    if [ -n "$extra_urls" ]; then local -x UV_EXTRA_INDEX_URL="$extra_urls"; fi
    trace_on
    env ${uv_unset[@]+"${uv_unset[@]}"} "$uv_bin" pip install --python "$py" "$@"
  else
    if [ -n "$index_url" ]; then local -x PIP_INDEX_URL="$index_url"; fi
    if [ -n "$extra_urls" ]; then local -x PIP_EXTRA_INDEX_URL="$extra_urls"; fi
    trace_on
    "$py" -m pip install --no-input "$@"
  fi
}
run_install() {  # the installer's stderr, shown as it comes and kept for the failure's cause
  { install_pkgs "$@" 2>&1 1>&3 3>&- | tee "${work}/installer.log" >&2 3>&-; } 3>&1
}
""".strip("\n")
