"""The script helper: its own PEP 440 fallback agrees with packaging where the script relies on
it; index URLs, files it does not own, failure causes, and the oldest Pythons it runs on.

The helper runs in the target's Python, which may have neither packaging nor pip (a venv made by
uv); the real-run tests use such a venv, these compare the fallback with packaging directly.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import time
import types
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from colabenv._target import helper
from colabenv._target.helper import (
    MAX_READ_BYTES,
    UnsetVariable,
    _env_hook_text,
    _install_cause,
    _Marker,
    _marker_ok,
    _MiniRequirement,
    _MiniSpecifier,
    _MiniVersion,
    _pending_path,
    _read_bounded,
    _write_file,
    _WriteProblem,
    expand_url,
    expand_value,
    marker_environment,
)
from colabenv._util.resources import helper_source
from colabenv.script.render import helper_program
from colabenv.script.state import shared_names
from tests.support.helper_runs import run_helper


@st.composite
def versions(draw: st.DrawFn) -> str:
    release = ".".join(str(draw(st.integers(0, 12))) for _ in range(draw(st.integers(1, 4))))
    text = release
    if draw(st.booleans()):
        text += draw(st.sampled_from(["a", "b", "rc"])) + str(draw(st.integers(0, 3)))
    if draw(st.booleans()):
        text += f".post{draw(st.integers(0, 3))}"
    if draw(st.integers(0, 4)) == 0:
        text += f".dev{draw(st.integers(0, 3))}"
    if draw(st.integers(0, 3)) == 0:
        text += "+" + draw(st.sampled_from(["cu124", "cu126", "cpu", "1", "ubuntu.2"]))
    return text


@settings(max_examples=400, deadline=None)
@given(versions(), versions())
def test_ordering_matches_packaging(a: str, b: str) -> None:
    assert (_MiniVersion(a) < _MiniVersion(b)) == (Version(a) < Version(b))
    assert (_MiniVersion(a) == _MiniVersion(b)) == (Version(a) == Version(b))


@st.composite
def near_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """A version and one a suffix away from it (``1.0rc1`` and ``1.0rc1.post0``, ``1.0`` and
    ``1.0rc1``): where a parser that reads a suffix loosely gets the order wrong."""
    base = draw(versions()).split("+", 1)[0]
    suffix = draw(
        st.sampled_from([".post0", ".post1", "rc1", "a0", ".dev0", "-1", "r1", "rev2", ".0", "+cu126"])
    )
    pair = (base, base + suffix)
    try:
        Version(pair[1])
    except InvalidVersion:
        assume(False)
    return pair if draw(st.booleans()) else (pair[1], pair[0])


@settings(max_examples=500, deadline=None)
@given(near_pairs(), st.sampled_from(["==", "!=", ">=", "<=", "<", ">"]))
def test_near_identical_versions_match_packaging(pair: tuple[str, str], operator: str) -> None:
    a, b = pair
    assert (_MiniVersion(a) < _MiniVersion(b)) == (Version(a) < Version(b))
    assert (_MiniVersion(a) == _MiniVersion(b)) == (Version(a) == Version(b))
    if operator in ("<", ">") and Version(a).base_version == Version(b).base_version:
        return
    bound = str(Version(b).public) if operator not in ("==", "!=") else b
    expected = SpecifierSet(f"{operator}{bound}").contains(a, prereleases=True)
    assert _MiniSpecifier(operator, bound).contains(a) == expected


def test_rc_is_not_read_as_a_post_release() -> None:
    assert _MiniVersion("1.0rc1") < _MiniVersion("1.0rc1.post0")
    assert not _MiniVersion("1.0rc1").is_post
    assert _MiniSpecifier(">=", "0rc0.post0.dev0").contains("0rc0.dev0") is False


@settings(max_examples=600, deadline=None)
@given(versions(), st.sampled_from(["==", "!=", ">=", "<=", ">", "<", "~="]), versions())
def test_specifiers_match_packaging(candidate: str, operator: str, bound: str) -> None:
    public = str(Version(bound).public)
    if operator == "~=":
        public = Version(bound).base_version
        if len(Version(public).release) < 2:
            public += ".0"
    if operator not in ("==", "!="):
        bound = public
    # Exclusive comparisons between pre/post releases of one release changed across packaging
    # versions; the script only ever meets == pins and ordinary ranges.
    assume(
        not (
            operator in ("<", ">")
            and Version(Version(candidate).base_version) == Version(Version(bound).base_version)
        )
    )
    expected = SpecifierSet(f"{operator}{bound}").contains(candidate, prereleases=True)
    assert _MiniSpecifier(operator, bound).contains(candidate) == expected


@settings(max_examples=300, deadline=None)
@given(versions(), st.sampled_from(["==", "!="]), st.lists(st.integers(0, 12), min_size=1, max_size=3))
def test_wildcards_match_packaging(candidate: str, operator: str, prefix: list[int]) -> None:
    bound = ".".join(map(str, prefix)) + ".*"
    expected = SpecifierSet(f"{operator}{bound}").contains(candidate, prereleases=True)
    assert _MiniSpecifier(operator, bound).contains(candidate) == expected


def test_requirements_with_extras_markers_and_local_tags() -> None:
    req = _MiniRequirement('jax-cuda12-plugin[with_cuda]<=0.5.3,>=0.5.3; extra == "cuda12"')
    assert req.name == "jax-cuda12-plugin"
    assert req.extras == {"with_cuda"}
    assert [(s.operator, s.version) for s in req.specs] == [("<=", "0.5.3"), (">=", "0.5.3")]
    env = marker_environment()
    assert req.applies("cuda12", env) and not req.applies("", env)
    pinned = _MiniRequirement("torch==2.8.0+cu126")
    assert pinned.specs[0].contains("2.8.0+cu126")
    assert not pinned.specs[0].contains("2.8.0+cu128")
    assert _MiniRequirement("torch==2.8.0").specs[0].contains("2.8.0+cu126")
    assert _MiniRequirement("numpy").applies("", env)


VARIABLES = [
    "python_version",
    "python_full_version",
    "sys_platform",
    "platform_system",
    "platform_machine",
    "os_name",
    "implementation_name",
    "extra",
]
VALUES = [
    "3.8",
    "3.11",
    "3.12.1",
    "linux",
    "Linux",
    "win32",
    "x86_64",
    "aarch64",
    "posix",
    "cpython",
    "cuda12",
    "with-cuda",
    "4",
]


@st.composite
def markers(draw: st.DrawFn, depth: int = 0) -> str:
    if depth < 2 and draw(st.integers(0, 3)) == 0:
        left = draw(markers(depth + 1))
        right = draw(markers(depth + 1))
        joined = f"{left} {draw(st.sampled_from(['and', 'or']))} {right}"
        return f"({joined})" if draw(st.booleans()) else joined
    variable = draw(st.sampled_from(VARIABLES))
    operator = draw(st.sampled_from(["==", "!=", "<", ">=", "in", "not in"]))
    value = draw(st.sampled_from(VALUES))
    if operator in ("<", ">=") and variable not in ("python_version", "python_full_version"):
        operator = "=="
    if operator in ("<", ">="):
        value = draw(st.sampled_from(["3.8", "3.11", "3.12.1", "4"]))
    quote = draw(st.sampled_from(["'", '"']))
    if draw(st.booleans()):
        return f"{variable} {operator} {quote}{value}{quote}"
    if operator in ("in", "not in") or variable == "extra":
        return f"{quote}{value}{quote} {operator} {variable}"
    return f"{quote}{value}{quote} {'==' if operator == '==' else '!='} {variable}"


@settings(max_examples=500, deadline=None)
@given(markers(), st.sampled_from(["", "cuda12", "with_cuda"]))
def test_markers_match_packaging(text: str, extra: str) -> None:
    from packaging.markers import Marker

    environment = {**marker_environment(), "extra": extra}
    assert _Marker(text).evaluate(environment) == Marker(text).evaluate({"extra": extra})


def test_marker_environment_matches_packaging() -> None:
    from packaging.markers import default_environment

    ours = marker_environment()
    theirs = dict(default_environment())
    assert sorted(ours) == sorted(theirs)  # every key packaging has, and none it lacks
    for key, value in theirs.items():
        assert ours[key] == value, key


# ---------------------------------------------------------------------------------------------
# Index URLs: ${VAR} expanded once, encoded for its place


SPECIALS = ["@", "/", "#", "%", ":", " ", "?", "&", "=", "+", "ü"]


@pytest.mark.parametrize("special", SPECIALS)
def test_a_token_in_the_userinfo_stays_in_the_userinfo(special: str) -> None:
    token = f"to{special}ken{special}"
    url = expand_url(
        "https://${USER}:${TOKEN}@index.example/simple/", {"USER": f"me{special}", "TOKEN": token}
    )
    parts = urlsplit(url)
    assert parts.hostname == "index.example"
    assert parts.path == "/simple/"
    assert unquote(parts.username or "") == f"me{special}"
    assert unquote(parts.password or "") == token
    assert parts.fragment == "" and parts.query == ""


@pytest.mark.parametrize("special", SPECIALS)
def test_a_value_in_the_path_or_query_stays_there(special: str) -> None:
    value = f"a{special}b"
    url = expand_url(
        "https://host.example/${TEAM}/simple/?token=${TOKEN}#${FRAG}",
        {"TEAM": value, "TOKEN": value, "FRAG": value},
    )
    parts = urlsplit(url)
    assert parts.hostname == "host.example"
    assert unquote(parts.path) == f"/{value}/simple/"
    assert parse_qs(parts.query) == {"token": [value]}
    assert unquote(parts.fragment) == value


def test_unset_variable_is_named_and_empty_one_is_allowed() -> None:
    with pytest.raises(UnsetVariable) as raised:
        expand_url("https://${USER}:${TOKEN}@host/simple", {"USER": "me"})
    assert str(raised.value) == "index URL needs $TOKEN, which is not set"
    assert raised.value.name == "TOKEN"
    assert expand_url("https://${USER}@host/simple", {"USER": ""}) == "https://@host/simple"
    assert expand_url("https://host/simple", {}) == "https://host/simple"
    assert expand_url("https://host/$HOME/x", {"HOME": "/h"}) == "https://host/$HOME/x"


def test_a_host_from_a_variable_must_be_a_host() -> None:
    assert (
        expand_url("https://${MIRROR}/simple", {"MIRROR": "mirror.example:8443"})
        == "https://mirror.example:8443/simple"
    )
    with pytest.raises(ValueError, match="host"):
        expand_url("https://${MIRROR}/simple", {"MIRROR": "evil.example/x@y"})


# ---------------------------------------------------------------------------------------------
# Files the helper reads or writes that are not its own


def test_marker_that_is_a_fifo_or_a_device_is_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    assert _read_bounded(str(fifo)) is None
    assert _read_bounded("/dev/zero") is None
    assert _read_bounded(str(tmp_path)) is None
    big = tmp_path / "big"
    big.write_bytes(b"x" * (MAX_READ_BYTES + 1))
    assert _read_bounded(str(big)) is None
    assert time.monotonic() - started < 5
    assert _marker_ok(str(fifo), "sha256:x") is False


def test_written_files_follow_links_and_never_replace_devices(tmp_path: Path) -> None:
    target = tmp_path / "real" / "marker.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "marker.json"
    link.symlink_to(target)
    _write_file(str(link), "new")
    assert link.is_symlink() and target.read_text() == "new"

    _write_file("/dev/null", "through")
    assert Path("/dev/null").is_char_device()

    (tmp_path / "dir").mkdir()
    with pytest.raises(_WriteProblem, match="is a directory"):
        _write_file(str(tmp_path / "dir"), "x")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(_WriteProblem):
        _write_file(str(fifo), "no reader")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_env_hook_is_ascii_and_round_trips() -> None:
    pairs = {"NAME": "ü ✓ 'q' \"d\" \\ \n \U0001f600", "PLAIN": "on"}
    text = _env_hook_text(pairs)
    assert text is not None and text.isascii() and text.count("\n") == 1
    namespace: dict[str, dict[bytes, bytes]] = {}
    exec(text.replace("import os; os.environb.update(", "found = dict("), namespace)
    assert {k.decode(): v.decode() for k, v in namespace["found"].items()} == pairs
    assert _env_hook_text({}) is None


def test_env_hook_expands_references_when_the_interpreter_starts() -> None:
    """A value with ``${VAR}`` stays a reference in the hook's file and is expanded from the
    environment the interpreter has when the hook runs; one whose variable is not set is left
    as it was (never set to the reference itself)."""
    pairs = {"LIT": "x", "HF_TOKEN": "${HF_TOKEN}", "AUTH_HEADER": "Bearer ${T}/${LIT}", "GONE": "${NOPE}"}
    text = _env_hook_text(pairs)
    assert text is not None and text.isascii() and text.count("\n") == 1
    assert "s3cret" not in text

    environb = {b"HF_TOKEN": b"s3cret", b"T": "t\u00e9".encode(), b"GONE": b"kept"}
    exec(text.replace("import os; ", ""), {"os": types.SimpleNamespace(environb=environb)})
    assert environb == {
        b"LIT": b"x",
        b"HF_TOKEN": b"s3cret",
        b"T": "t\u00e9".encode(),
        b"AUTH_HEADER": "Bearer t\u00e9/x".encode(),
        b"GONE": b"kept",
    }
    env = {"HF_TOKEN": "s3cret", "T": "t"}
    assert expand_value("Bearer ${T}:${HF_TOKEN}", env) == "Bearer t:s3cret"
    with pytest.raises(UnsetVariable):
        expand_value("${NOPE}", env)


def test_install_cause_names_an_unreachable_index_without_its_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp_path / "installer.log"
    log.write_text("ERROR: ResolutionImpossible: for help visit https://pip.pypa.io\n")
    monkeypatch.setenv("TOKEN", "s3cr3t")
    cause = _install_cause(str(log), [f"http://me:${{TOKEN}}@127.0.0.1:{port}/simple/"])
    assert cause.startswith(f"cannot reach the package index at 127.0.0.1:{port} (")
    assert "s3cr3t" not in cause and "me:" not in cause


def test_install_cause_falls_back_to_the_installers_last_error(tmp_path: Path) -> None:
    log = tmp_path / "installer.log"
    log.write_text(
        "Using Python 3.11 environment at: venv\n"
        "error: Failed to fetch: `https://me:s3cr3t@host.example/simple/x/`\n"
        "  Caused by: Request failed after 3 retries\n"
        "  Caused by: tcp connect error: Connection refused (os error 111)\n"
        "hint: something\n"
    )
    cause = _install_cause(str(log), [])
    assert cause == (
        "error: Failed to fetch: `https://****@host.example/simple/x/` "
        "(tcp connect error: Connection refused (os error 111))"
    )
    log.write_text("Looking in indexes: x\nERROR: No matching distribution found for torch==9\n")
    assert _install_cause(str(log), []) == "ERROR: No matching distribution found for torch==9"


# ---------------------------------------------------------------------------------------------
# The helper on the oldest Pythons it promises


def _old_pythons() -> list[str]:
    found = []
    for version in ("3.8", "3.9"):
        candidates = [shutil.which(f"python{version}")]
        candidates += sorted(str(p) for p in Path.home().glob(f".pyenv/versions/{version}*/bin/python"))
        for candidate in candidates:
            if (
                candidate
                and subprocess.run([candidate, "-c", "pass"], capture_output=True, timeout=30).returncode == 0
            ):
                found.append(candidate)
                break
    return found


@pytest.mark.parametrize("python", _old_pythons() or [None])
def test_helper_runs_on_python_3_8_and_3_9(python: str | None, tmp_path: Path) -> None:
    if python is None:
        pytest.skip("no Python 3.8 or 3.9 here")
    helper = tmp_path / "helper.py"
    helper.write_text(helper_program(helper_source()))
    reqs = tmp_path / "reqs.txt"
    reqs.write_text("pip>=1\nno-such-dist==1.0\n")
    out = tmp_path / "missing.txt"
    env = {"PATH": "/usr/bin:/bin", "TOKEN": "a@b"}
    done = subprocess.run(
        [python, str(helper), "missing", str(reqs), str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "no-such-dist==1.0\n"
    done = subprocess.run(
        [python, str(helper), "expand-url", "https://u:${TOKEN}@h/simple"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "https://u:a%40b@h/simple\n"

    state, env_file, record = tmp_path / "state", tmp_path / "env.bin", tmp_path / "record.json"
    env_file.write_bytes(b"")
    record.write_text('{"schema": 1, "profile": "old", "profile_hash": "sha256:abc"}')
    steps = [
        [
            "preflight",
            "--python",
            "-",
            "--driver",
            "-",
            "--state",
            str(state),
            "--hash",
            "sha256:abc",
            "--env",
            str(env_file),
            "--reqs",
            str(reqs),
            "--url",
            "https://u:${TOKEN}@h/simple",
        ],
        ["write-marker", str(state), str(record), "1", str(tmp_path / "no-pending")],
        ["marker-ok", str(state), "sha256:abc"],
        ["install-cause", str(tmp_path / "no-log")],
    ]
    for step in steps:
        done = subprocess.run(
            [python, str(helper), *step], capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode in (0, 1), (step[0], done.stderr)
        assert "Traceback" not in done.stderr, (step[0], done.stderr)
    assert (state / "restart-marker.json").exists()


def test_preflight_refuses_a_lock_whose_pins_the_gpus_cannot_run(tmp_path: Path) -> None:
    lock = tmp_path / "lock.txt"
    lock.write_text(
        "--index-url https://x.example/simple\n"
        f"nvidia-cudnn-cu12==9.28.0.42 --hash=sha256:{'0' * 64}\n"
        f"numpy==2.0.2 \\\n    --hash=sha256:{'1' * 64}\n"
    )
    bounds = tmp_path / "bounds.txt"
    env_file = tmp_path / "env.bin"
    env_file.write_bytes(b"")
    common = (
        "--python",
        "-",
        "--driver",
        "-",
        "--state",
        str(tmp_path / "state"),
        "--hash",
        "sha256:abc",
        "--env",
        str(env_file),
        "--lock",
        str(lock),
        "--constraints",
        str(bounds),
    )
    bounds.write_text("nvidia-cudnn-cu12<9.11\n")
    refused = run_helper(tmp_path, "preflight", *common)
    assert refused.returncode == 7
    assert refused.stdout.strip() == (
        "the lock pins nvidia-cudnn-cu12==9.28.0.42, but this host's GPUs need nvidia-cudnn-cu12<9.11"
    )
    bounds.write_text("nvidia-cudnn-cu12<9.30\nnvidia-nccl-cu12<2.28\n")
    fits = run_helper(tmp_path, "preflight", *common)
    assert fits.returncode == 0, fits.stderr
    status, pending = fits.stdout.splitlines()
    assert status == "missing"
    assert Path(pending).parent == tmp_path / "state"
    assert Path(pending).name.startswith("pending.") and "abc" in Path(pending).name


def test_preflight_holds_the_full_python_to_what_the_locked_pins_need(tmp_path: Path) -> None:
    """A lock records X.Y and the patch releases its pins exclude (issue 34): the preflight
    refuses a full version they exclude, naming it and the need, and takes one they admit."""
    reqs = tmp_path / "reqs.txt"
    reqs.write_text("")
    env_file = tmp_path / "env.bin"
    env_file.write_bytes(b"")
    minor = f"{sys.version_info[0]}.{sys.version_info[1]}"
    full = f"{minor}.{sys.version_info[2]}"
    common = ("--driver", "-", "--state", str(tmp_path / "state"), "--hash", "sha256:abc")
    common += ("--env", str(env_file), "--reqs", str(reqs))
    refused = run_helper(
        tmp_path, "preflight", "--python", minor, "--python-needs", f">=3.8,!={full}", *common
    )
    assert refused.returncode == 3
    assert refused.stderr.strip() == f"this is Python {full}; the lock's pins need Python >=3.8,!={full}"
    for needs in (f"!={minor}.999", f">={minor}.0"):
        fits = run_helper(tmp_path, "preflight", "--python", minor, "--python-needs", needs, *common)
        assert fits.returncode == 0, fits.stderr
    skipped = run_helper(tmp_path, "preflight", "--python", "-", "--python-needs", f"!={full}", *common)
    assert skipped.returncode == 0, "COLABENV_SKIP_PREFLIGHT skips it with the Python check"


def test_preflight_checks_every_index_url_before_anything_else(tmp_path: Path) -> None:
    reqs = tmp_path / "reqs.txt"
    reqs.write_text("")
    env_file = tmp_path / "env.bin"
    env_file.write_bytes(b"")
    state = tmp_path / "state"
    done = run_helper(
        tmp_path,
        "preflight",
        "--python",
        "-",
        "--driver",
        "-",
        "--state",
        str(state),
        "--hash",
        "sha256:abc",
        "--env",
        str(env_file),
        "--reqs",
        str(reqs),
        "--url",
        "https://${A}@h/simple",
        "--url",
        "https://h/${B}/simple",
        env={"PATH": "/usr/bin:/bin", "A": "x"},
    )
    assert done.returncode == 6
    assert done.stdout.strip() == "index URL needs $B, which is not set"
    assert not state.exists(), "nothing is created before the URLs are known to expand"


def test_pending_records_are_per_profile_and_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(helper, "SHARED", shared_names())
    one = _pending_path(str(tmp_path), "sha256:" + "a" * 64)
    other_profile = _pending_path(str(tmp_path), "sha256:" + "b" * 64)
    monkeypatch.setattr(sys, "executable", "/some/other/venv/bin/python")
    other_interpreter = _pending_path(str(tmp_path), "sha256:" + "a" * 64)
    assert len({one, other_profile, other_interpreter}) == 3
    assert all(Path(p).parent == tmp_path for p in (one, other_profile, other_interpreter))


def test_lock_pins_keep_their_markers_so_a_false_one_is_neither_missing_nor_unfit(tmp_path: Path) -> None:
    lock = tmp_path / "team.lock"
    lock.write_text(
        "# a lock\n--index-url https://mirror.example/simple\n"
        'not-here==1.0 ; platform_release == "0.0-no-such-kernel" \\\n    --hash=sha256:' + "0" * 64 + "\n"
        "nvidia-cudnn-cu12==9.12.0.46 \\\n    --hash=sha256:" + "1" * 64 + "\n"
    )
    pins = helper._lock_pins(str(lock))
    assert pins == [
        'not-here==1.0 ; platform_release == "0.0-no-such-kernel"',
        "nvidia-cudnn-cu12==9.12.0.46",
    ]
    assert helper._Checker().satisfied(pins[0])  # as the installer skips it here
    assert helper._unfit_pins(pins, ["not-here<1", "nvidia-cudnn-cu12<9.11"]) == [
        "the lock pins nvidia-cudnn-cu12==9.12.0.46, but this host's GPUs need nvidia-cudnn-cu12<9.11"
    ]


def test_a_marker_past_one_mib_is_read_as_verify_reads_it(tmp_path: Path) -> None:
    """A profile's requirements may fill most of a 1 MiB profile; escaped into the marker they
    pass 1 MiB: the helper still reads the marker, up to what verify reads."""
    from colabenv.script.marker import MAX_MARKER_BYTES

    assert helper.MAX_MARKER_BYTES == MAX_MARKER_BYTES
    record = {
        "schema": 1,
        "colabenv": "0.1.0",
        "profile": "p",
        "profile_hash": "sha256:x",
        "changed": False,
        "written_at": 1000,
        "installed": [],
        "requirements": [f"package-{n}>=1.0 ; python_version >= '3.8'" for n in range(40_000)],
        "frameworks": {},
        "env": {},
        "verify": {},
        "python": sys.executable,
    }
    marker = tmp_path / "restart-marker.json"
    marker.write_text(json.dumps(record))
    assert marker.stat().st_size > MAX_READ_BYTES
    assert _marker_ok(str(marker), "sha256:x") is True
    assert _marker_ok(str(marker), "sha256:y") is False
