"""Faults that cross components: an index that goes away, kills, a damaged marker, an unusable
state directory, and inputs far larger than real ones (render must stay fast).

``tests/test_render_run.py`` already kills the script at each step boundary of a resolved
install (apt, apt-get, each pip group, an install in flight, env, marker) and checks the re-run
converges; here the kill points it lacks: inside the env and marker steps (the marker is absent
or complete, never partial) and every step of a script that installs a lockfile.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from colabenv.catalog.load import shipped_catalog
from colabenv.script.marker import parse_marker
from colabenv.script.render import NO_RESTART_LINE, RESTART_LINE
from tests.support.checks import expect
from tests.support.fixtures import console_runner
from tests.support.index import LocalIndex
from tests.support.journeys import T4, T4_DRIVER, add_colabenv, installs, real_gpu_here, verify
from tests.support.locking import lock_profile, write_profile
from tests.support.scriptrun import Host, make_host

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
RENDER_BOUND_S = 3.0
MARKER = "restart-marker.json"


def _host(root: Path) -> Host:
    host = make_host(root, with_pip=False)
    host.driver = T4_DRIVER
    return host


def _render(profile: Path, out: Path, *extra: str) -> float:
    started = time.perf_counter()
    done = console_runner()("render", profile, "-o", out, *extra)
    elapsed = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    return elapsed


def _frameworks_profile(path: Path, default: LocalIndex, pytorch: LocalIndex) -> Path:
    path.write_text(f"""
name = "faults"
[frameworks]
torch = {{ version = "==2.8.*", torchvision = "*" }}
jax = "==0.5.3"
[packages]
requirements = ["requests>=2.30", "python-dateutil"]
[env]
FAULTS_PLAIN = "on"
[install]
installer = "uv"
index_url = "{default.url}"
pytorch_index_url = "{pytorch.base_url}"
""")
    return path


def _packages_profile(path: Path, default: LocalIndex) -> Path:
    path.write_text(f"""
name = "faults-small"
[packages]
requirements = ["requests>=2.30"]
[env]
FAULTS_PLAIN = "on"
[install]
installer = "uv"
index_url = "{default.url}"
""")
    return path


def _run(host: Host, script: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    """One run with its own empty uv cache, so every run asks the index for everything."""
    return host.run(script, UV_HTTP_RETRIES="0", UV_CACHE_DIR=str(cache))


# ---------------------------------------------------------------------------------------------
# The index goes away


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["503", "close"])
def test_index_lost_mid_install_fails_the_step_then_rerun_completes(
    mode: str, tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    script = tmp_path / "setup.sh"
    _render(_frameworks_profile(tmp_path / "p.toml", default_index, pytorch_index), script, *T4)

    reference = _host(tmp_path / "reference")
    default_index.reset_requests()
    done = _run(reference, script, tmp_path / "cache-ref")
    assert done.returncode == 0, done.stderr
    served = len(default_index.requests)
    assert served > 4

    host = _host(tmp_path / "host")
    default_index.reset_requests()
    default_index.fail_after(served // 2, mode=mode)
    failed = _run(host, script, tmp_path / "cache-1")
    assert failed.returncode != 0
    failing = [
        line
        for line in failed.stderr.splitlines()
        if line.startswith("COLABENV: step ") and " failed" in line
    ]
    assert failing and failing[-1].startswith("COLABENV: step pip: "), failed.stderr
    assert failing[-1].endswith("no restart marker written")
    assert failed.stderr.splitlines()[-1] == failing[-1]
    where = f"127.0.0.1:{default_index.port}"
    cause = (
        f"the package index at {where} answered HTTP 503"
        if mode == "503"
        else f"cannot reach the package index at {where}"
    )
    assert cause in failing[-1], failed.stderr
    assert installs(failed.stdout), "the index went away during an install"
    assert host.marker() is None
    assert not (host.state / MARKER).exists()
    assert RESTART_LINE not in failed.stdout

    # the index returns: the same script finishes the job
    if mode == "close":
        default_index.stop()
        default_index.heal()
        default_index.start()
    else:
        default_index.heal()
    again = _run(host, script, tmp_path / "cache-2")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == RESTART_LINE
    assert host.installed() == reference.installed()
    marker, expected = host.marker(), reference.marker()
    assert marker is not None and expected is not None
    assert marker["requirements"] == expected["requirements"]
    assert host.new_interpreter("import os; print(os.environ['FAULTS_PLAIN'])") == "on\n"


# ---------------------------------------------------------------------------------------------
# Killed


def _start(host: Host, script: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["bash", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
        env=host.env(UV_HTTP_RETRIES="0", TMPDIR=str(host.root)),
    )


def _kill_after(host: Host, script: Path, trigger: str, delay: float = 0.0) -> bool:
    """Run the script, SIGKILL its process group ``delay`` s after a line starting with
    ``trigger``; False when the script finished without printing it."""
    proc = _start(host, script)
    assert proc.stdout is not None
    killed = False
    for line in proc.stdout:
        if line.startswith(trigger):
            if delay:
                time.sleep(delay)
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
            break
    proc.wait(timeout=120)
    proc.stdout.close()
    return killed


def _marker_absent_or_complete(host: Host) -> str:
    path = host.state / MARKER
    if not path.exists():
        return "absent"
    parse_marker(path.read_text(encoding="utf-8"), path)
    return "complete"


@pytest.mark.slow
def test_killed_inside_env_and_marker_steps_leaves_no_partial_marker(
    tmp_path: Path, default_index: LocalIndex
) -> None:
    script = tmp_path / "setup.sh"
    _render(_packages_profile(tmp_path / "p.toml", default_index), script, *T4)
    host = _host(tmp_path / "host")
    assert host.run(script, UV_HTTP_RETRIES="0").returncode == 0
    seen = set()
    for trigger in ("COLABENV: step env", "COLABENV: step marker"):
        for delay in (0.0, 0.01, 0.03, 0.06, 0.1):
            (host.state / MARKER).unlink(missing_ok=True)
            _kill_after(host, script, trigger, delay)
            seen.add(_marker_absent_or_complete(host))
    assert "absent" in seen
    final = host.run(script, UV_HTTP_RETRIES="0")
    assert final.returncode == 0, final.stderr
    assert _marker_absent_or_complete(host) == "complete"
    assert [p.name for p in host.state.iterdir() if p.name.startswith(MARKER)] == [MARKER]


@pytest.fixture
def locked_script(
    tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex
) -> tuple[Path, dict[str, str]]:
    profile = write_profile(tmp_path, default_index, pytorch_index)
    lock = lock_profile(profile, tmp_path / "team.lock", "uv")
    script = tmp_path / "setup.sh"
    _render(profile, script, *T4, "--lock", str(tmp_path / "team.lock"))
    return script, dict(lock.pins)


@pytest.mark.slow
@pytest.mark.parametrize(
    "trigger",
    [
        "COLABENV: step preflight",
        "COLABENV: step pip: lockfile",
        "COLABENV: installing the lockfile",
        "COLABENV: step env",
        "COLABENV: step marker",
    ],
)
def test_lockfile_script_killed_at_each_step_converges(
    trigger: str, tmp_path: Path, locked_script: tuple[Path, dict[str, str]]
) -> None:
    script, pins = locked_script
    host = _host(tmp_path / "host")
    assert _kill_after(host, script, trigger), f"never saw {trigger!r}"
    if trigger != "COLABENV: step marker":
        assert host.marker() is None
    rerun = host.run(script, UV_HTTP_RETRIES="0")
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.splitlines()[-1] == RESTART_LINE
    assert {canonicalize_name(n): v for n, v in host.installed().items()} == pins
    marker = host.marker()
    assert marker is not None and marker["requirements"] == [f"{n}=={v}" for n, v in pins.items()]


# ---------------------------------------------------------------------------------------------
# A damaged marker


DAMAGE: dict[str, Callable[[str], str]] = {
    "truncated": lambda text: text[: len(text) // 2],
    "empty": lambda text: "",
    "not-json": lambda text: "\x00\xff garbage",
    "wrong-shape": lambda text: "[1, 2, 3]",
    "field-missing": lambda text: json.dumps(
        {k: v for k, v in json.loads(text).items() if k != "written_at"}
    ),
}


@pytest.mark.slow
@pytest.mark.skipif(real_gpu_here(), reason="verify would see this host's GPU")
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_marker_is_reported_by_verify_and_repaired_by_a_rerun(
    damage: str, tmp_path: Path, default_index: LocalIndex
) -> None:
    script = tmp_path / "setup.sh"
    _render(_packages_profile(tmp_path / "p.toml", default_index), script, *T4)
    host = _host(tmp_path / "host")
    add_colabenv(host)
    assert host.run(script, UV_HTTP_RETRIES="0").returncode == 0
    healthy = verify(host)
    assert healthy.code == 0, healthy.details
    expect(healthy.report, marker="PASS")

    path = host.state / MARKER
    path.write_text(DAMAGE[damage](path.read_text(encoding="utf-8")), encoding="utf-8")
    broken = verify(host)
    assert broken.code == 1
    expect(broken.report, marker=("FAIL", str(path)))
    assert broken.details["marker"].startswith("corrupted restart marker: ")

    rerun = host.run(script, UV_HTTP_RETRIES="0")
    assert rerun.returncode == 0, rerun.stderr
    assert installs(rerun.stdout) == []
    assert rerun.stdout.splitlines()[-1] == NO_RESTART_LINE
    repaired = parse_marker(path.read_text(encoding="utf-8"), path)
    assert repaired.changed is False
    assert repaired.profile == "faults-small"
    assert "requests>=2.30" in repaired.requirements
    fixed = verify(host)
    expect(fixed.report, marker="PASS")
    assert fixed.code == 0


# ---------------------------------------------------------------------------------------------
# The state directory


def _unusable_run(host: Host, script: Path, state: Path, *prefix: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, "bash", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=host.env(COLABENV_STATE_DIR=str(state), UV_HTTP_RETRIES="0"),
    )


def _assert_refused_before_any_change(
    host: Host, done: subprocess.CompletedProcess[str], state: Path, reason: str
) -> None:
    assert done.returncode != 0
    assert [line for line in done.stderr.splitlines() if line.startswith("COLABENV:")] == [
        f"COLABENV: step preflight failed: cannot use the state directory {state}: {reason}; "
        "no restart marker written"
    ]
    assert installs(done.stdout) == []
    assert host.installed() == {}
    assert host.apt_calls() == []
    assert RESTART_LINE not in done.stdout and NO_RESTART_LINE not in done.stdout


@pytest.mark.slow
def test_state_directory_that_cannot_exist_is_refused_before_any_change(
    tmp_path: Path, default_index: LocalIndex
) -> None:
    script = tmp_path / "setup.sh"
    _render(_packages_profile(tmp_path / "p.toml", default_index), script, *T4)
    host = _host(tmp_path / "host")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    state = blocker / "colabenv"
    done = _unusable_run(host, script, state)
    _assert_refused_before_any_change(host, done, state, "Not a directory")
    assert blocker.read_text() == "not a directory\n"

    missing = tmp_path / "not" / "there" / "yet"
    created = _unusable_run(host, script, missing)
    assert created.returncode == 0, created.stderr
    assert parse_marker((missing / MARKER).read_text(), missing / MARKER).profile == "faults-small"


@pytest.mark.slow
def test_read_only_state_directory_is_refused_before_any_change(
    tmp_path: Path, default_index: LocalIndex
) -> None:
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root ignores permission bits, and setpriv is not here to drop that")
        prefix = (setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--")
    script = tmp_path / "setup.sh"
    _render(_packages_profile(tmp_path / "p.toml", default_index), script, *T4)
    host = _host(tmp_path / "host")
    state = tmp_path / "read-only-state"
    state.mkdir()
    state.chmod(0o555)
    try:
        done = _unusable_run(host, script, state, *prefix)
        _assert_refused_before_any_change(host, done, state, "Permission denied")
        assert list(state.iterdir()) == []
    finally:
        state.chmod(0o755)


# ---------------------------------------------------------------------------------------------
# Inputs far larger than real ones: render stays fast


def _timed(label: str, elapsed: float) -> None:
    print(f"{label}: colabenv render {elapsed * 1000:.0f} ms")
    assert elapsed < RENDER_BOUND_S, f"{label}: {elapsed:.2f} s"


def test_extends_chain_fifty_files_deep(tmp_path: Path) -> None:
    depth = 50
    for level in range(depth):
        lines = [f'name = "level-{level:02d}"']
        if level + 1 < depth:
            lines.append(f'extends = "level-{level + 1:02d}.toml"')
        else:
            lines += ["[frameworks]", 'torch = { version = ">=2.6", torchvision = "*" }']
        lines += ["[env]", f'LEVEL_{level:02d} = "{level}"']
        (tmp_path / f"level-{level:02d}.toml").write_text("\n".join(lines) + "\n")
    out = tmp_path / "setup.sh"
    _timed("extends chain of 50 files", _render(tmp_path / "level-00.toml", out, *T4))
    text = out.read_text()
    assert all(f"LEVEL_{level:02d}" in text for level in range(depth))
    assert "# profile: level-00 " in text
    assert "torch==" in text


def test_five_hundred_requirements(tmp_path: Path) -> None:
    requirements = [f"pkg-{i:03d}>=1.{i % 7},<{2 + i % 3}" for i in range(500)]
    profile = tmp_path / "big.toml"
    profile.write_text(
        'name = "big"\n[frameworks]\ntorch = ">=2.6"\n[packages]\nrequirements = '
        + json.dumps(requirements)
        + "\n"
    )
    out = tmp_path / "setup.sh"
    _timed("500 requirements", _render(profile, out, *T4))
    text = out.read_text()
    assert all(f"'{Requirement(req)}'" in text for req in requirements)


def _python_for(release_python: str) -> str:
    from packaging.specifiers import SpecifierSet

    allowed = SpecifierSet(release_python)
    for candidate in (PY, "3.11", "3.10", "3.12", "3.9", "3.8", "3.13", "3.14"):
        if allowed.contains(f"{candidate}.0"):
            return candidate
    raise AssertionError(f"no Python for {release_python}")


RENDER_EACH = """
import contextlib, io, json, sys, time
from colabenv.cli.main import main

results = []
for name, argv in json.loads(sys.stdin.read()):
    out, err = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    elapsed = time.perf_counter() - started
    results.append([name, code, out.getvalue(), err.getvalue(), elapsed])
print(json.dumps(results))
"""
"""Renders each ``[name, argv]`` read from stdin with colabenv's entry point, one after the
other in this one process, and prints ``[name, exit code, stdout, stderr, seconds]`` for each."""


def test_every_catalog_release_renders_fast(tmp_path: Path) -> None:
    """One render per framework release in the catalog, pinned with ``==``, for a host every
    release runs on (driver 580, an A100, a Python the release supports).

    All the renders run in one Python process, one after the other (a console-script process
    per release took about 0.17 s, nearly all of it start-up and imports, for 68 releases).
    ``RENDER_BOUND_S`` now bounds each in-process call of ``colabenv.cli.main.main``: the whole
    command from its arguments to the script written, the first call with the imports of the
    command's modules and the catalog's load in it, the later ones with those already done.
    A fresh process's render, start-up included, is what ``bench/run render`` times."""
    releases = shipped_catalog().releases
    assert len(releases) > 40
    jobs = []
    for release in releases:
        name = f"{release.framework.value}-{release.version}"
        profile = tmp_path / f"{name}.toml"
        profile.write_text(
            f'name = "{name}"\n[frameworks]\n{release.framework.value} = "=={release.version}"\n'
        )
        argv = ["render", str(profile), "-o", str(tmp_path / f"{name}.sh"), "--driver", "580.65.06"]
        argv += ["--compute-capability", "8.0", "--python", _python_for(str(release.python))]
        jobs.append((name, argv))
    done = subprocess.run(
        [sys.executable, "-c", RENDER_EACH],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert [name for name, *_ in results] == [name for name, _ in jobs]
    timings = []
    for (name, code, stdout, stderr, elapsed), release in zip(results, releases, strict=True):
        assert code == 0, f"{name}: {stderr}"
        assert stdout == "", name
        text = (tmp_path / f"{name}.sh").read_text()
        assert f"# profile: {name} " in text
        assert f"{release.framework.value} {release.version} " in text
        timings.append((name, elapsed))
    slowest = max(timings, key=lambda item: item[1])
    median = statistics.median(t for _, t in timings)
    print(
        f"{len(timings)} releases: median {median * 1000:.0f} ms, slowest {slowest[0]} "
        f"{slowest[1] * 1000:.0f} ms (in one process, one render at a time)"
    )
    for name, elapsed in timings:
        assert elapsed < RENDER_BOUND_S, f"{name}: {elapsed:.2f} s"
