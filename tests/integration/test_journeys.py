"""End-to-end journeys: a Colab image, a team with a lock, a newcomer with the README.

Everything runs for real: the rendered script installs with uv from PEP 503 indexes on 127.0.0.1
holding stand-in wheels (``tests.support.journeys``), apt-get and nvidia-smi are recording
stand-ins, and ``colabenv verify`` runs in a fresh interpreter of the venv the script changed
(the restart). This machine has no GPU, so the stand-in frameworks behave as CPU builds and the
profiles are told not to require a GPU.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv.catalog.load import shipped_catalog
from colabenv.lock.file import read_lock
from colabenv.models import Framework
from colabenv.script.render import NO_RESTART_LINE, RESTART_LINE
from tests.support.checks import ANY, Expected, expect
from tests.support.fixtures import console_runner
from tests.support.index import LocalIndex
from tests.support.journeys import (
    PY,
    REPO,
    RUNTIMES,
    T4,
    changed_names,
    colabenv_cli,
    copy_golden,
    golden_choices,
    image_host,
    installs,
    journey_specs,
    project_profile,
    real_gpu_here,
    render,
    snapshots,
    verify,
)
from tests.support.ports import free_port
from tests.support.scriptrun import Host, make_host
from tests.support.wheels import Standins, build_standins

pytestmark = pytest.mark.slow
cpu_host_only = pytest.mark.skipif(
    real_gpu_here(),
    reason="the stand-ins behave as CPU builds; this host has a real NVIDIA GPU that verify would see",
)

GOLDEN_USED = ("pytorch", "tensorflow")
NO_GPU_VERIFY = "\n[verify]\nrequire_gpu = false\n"
SATISFIED = """
[frameworks]
torch = { version = ">=2.6", torchvision = "*", torchaudio = "*" }
jax = ">=0.5"
tensorflow = ">=2.18"

[packages]
requirements = ["numpy>=1.26", "requests>=2"]

[env]
JOURNEY_IMAGE = "restarted"

[verify]
smoke = ["torch", "jax", "tensorflow"]
require_gpu = false
"""


@pytest.fixture(scope="session")
def journey_wheels(tmp_path_factory: pytest.TempPathFactory) -> Standins:
    specs = journey_specs(golden_choices(GOLDEN_USED))
    return build_standins(tmp_path_factory.mktemp("journey-wheels"), specs)


@pytest.fixture
def indexes(journey_wheels: Standins) -> Iterator[tuple[LocalIndex, LocalIndex]]:
    with LocalIndex(journey_wheels.default) as default, LocalIndex(journey_wheels.pytorch) as pytorch:
        yield default, pytorch


def _unmet(requirements: list[str], installed: dict[str, str]) -> set[str]:
    """The requirements ``installed`` does not satisfy (exact local tags included)."""
    unmet = set()
    for text in requirements:
        req = Requirement(text)
        have = installed.get(canonicalize_name(req.name))
        if have is None or not req.specifier.contains(have, prereleases=True):
            unmet.add(text)
    return unmet


def _pins_of(marker: dict[str, object], frameworks: set[str]) -> list[str]:
    """The catalog's NVIDIA pins of the chosen variant of each of ``frameworks``."""
    chosen = marker["frameworks"]
    assert isinstance(chosen, dict)
    pins: list[str] = []
    for name in frameworks:
        release = shipped_catalog().release(Framework(name), Version(chosen[name]["version"]))
        assert release is not None
        variant = release.variant(chosen[name]["variant"])
        assert variant is not None
        pins.extend(variant.pin_texts)
    return pins


def _expected_verify(frameworks: list[str], duplicates: Expected = ANY) -> dict[str, Expected]:
    """Every check verify reports after a journey on this GPU-less host (``duplicates`` is
    there, and as each journey says)."""
    expected: dict[str, Expected] = {
        "marker": "PASS",
        "versions": "PASS",
        "consistency": "PASS",
        "vram": "SKIP",
        "env": "PASS",
        "duplicates": duplicates,
        "determinism": "SKIP",
    }
    for name in frameworks:
        expected[f"cuda:{name}"] = "SKIP"
        expected[f"smoke:{name}"] = "PASS"  # the CPU matmul ran and matched (issue 11)
    return expected


def _skip_unless_the_image_runs_this_python(snapshot: str) -> None:
    """The host venv runs the tests' Python: the image's frameworks satisfy a profile only when
    their releases have wheels for it (TensorFlow 2.18 and 2.19 have none for 3.13)."""
    from colabenv.host.detect import read_freeze

    here = f"{sys.version_info.major}.{sys.version_info.minor}.0"
    installed = read_freeze(RUNTIMES / snapshot / "pip-freeze.txt")
    for framework in Framework:
        version = installed.version_of(framework.value)
        if version is None:
            continue
        release = shipped_catalog().release(framework, Version(version.public))
        if release is not None and not release.python.contains(here):
            pytest.skip(
                f"{snapshot}'s {framework} {version} has no wheels for Python {here[:-2]} "
                f"(catalog: {release.python}), so the image cannot satisfy the profile"
            )


@cpu_host_only
@pytest.mark.parametrize("profile_kind", ["satisfied", *GOLDEN_USED])
@pytest.mark.parametrize("snapshot", snapshots())
def test_colab_image_journey(
    snapshot: str, profile_kind: str, tmp_path: Path, indexes: tuple[LocalIndex, LocalIndex]
) -> None:
    default, pytorch = indexes
    if profile_kind == "satisfied":
        _skip_unless_the_image_runs_this_python(snapshot)
    host = image_host(tmp_path / "host", snapshot, default, pytorch)
    image = host.installed()
    if profile_kind == "satisfied":
        profile = project_profile(tmp_path, "image-ok", default, pytorch, body=SATISFIED)
        env_name, env_value = "JOURNEY_IMAGE", "restarted"
    else:
        copy_golden(tmp_path / "golden", profile_kind)
        profile = project_profile(
            tmp_path,
            f"journey-{profile_kind}",
            default,
            pytorch,
            extends=f"golden/{profile_kind}.toml",
            body=NO_GPU_VERIFY,
        )
        env_name, env_value = {
            "pytorch": ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),
            "tensorflow": ("TF_FORCE_GPU_ALLOW_GROWTH", "true"),
        }[profile_kind]
    script = tmp_path / "setup.sh"
    render(profile, script, "--installed-from", str(RUNTIMES / snapshot / "pip-freeze.txt"))

    first = host.run(script, UV_HTTP_RETRIES="0")
    assert first.returncode == 0, first.stdout + first.stderr
    assert first.stdout.splitlines()[-1] == RESTART_LINE
    marker = host.marker()
    assert marker is not None and marker["changed"] is True
    requirements = marker["requirements"]
    assert isinstance(requirements, list)
    unmet = _unmet(requirements, image)
    chosen = marker["frameworks"]
    assert isinstance(chosen, dict)
    frameworks = sorted(chosen)
    after = host.installed()

    # what the image satisfies is not installed again: the install lines name exactly the unmet
    # requirements, and only they and the NVIDIA pins the image does not meet change
    asked = {req for line in installs(first.stdout) for req in line.split("): ", 1)[1].split()}
    assert asked == unmet
    if profile_kind == "satisfied":
        assert unmet == set()
        assert installs(first.stdout) == []
        assert after == image
    else:
        assert unmet, "a golden profile newer than the image installs its framework"
        moved = {canonicalize_name(Requirement(r).name) for r in unmet}
        pins = _pins_of(
            marker,
            {
                canonicalize_name(Requirement(r).name)
                for r in unmet
                if canonicalize_name(Requirement(r).name) in ("torch", "tensorflow", "jax")
            },
        )
        moved |= {canonicalize_name(Requirement(p).name) for p in _unmet(pins, image)}
        assert changed_names(first.stdout) == moved
        assert {n for n in set(image) | set(after) if image.get(n) != after.get(n)} == moved
        assert "DOWNGRADED" not in first.stdout
    print(
        f"{snapshot} {profile_kind}: {len(installs(first.stdout))} install command(s), "
        f"{len(changed_names(first.stdout))} distribution(s) changed"
    )

    # the restart: a new interpreter sees the [env] variables, and verify passes there
    shown = host.new_interpreter(f"import os; print(os.environ.get({env_name!r}))")
    assert shown == f"{env_value}\n"
    checked = verify(host)

    second = host.run(script, UV_HTTP_RETRIES="0")
    assert second.returncode == 0, second.stderr
    assert installs(second.stdout) == []
    assert changed_names(second.stdout) == set()
    assert second.stdout.splitlines()[-1] == NO_RESTART_LINE
    assert host.installed() == after
    again = host.marker()
    assert again is not None and again["written_at"] == marker["written_at"]

    expected = _expected_verify(frameworks, duplicates={"PASS", "WARN"})
    if snapshot == "colab-2025.07" and profile_kind == "satisfied":
        # The 2025.07 image forces TensorFlow's CUDA 12.5 wheels (cuDNN 9.3.0.75 ...) under its
        # torch 2.6.0+cu124, which pins cuDNN 9.1.0.70: `pip check` fails on the real image
        # too. colabenv installed nothing there, so verify names it as the image's: a WARN.
        assert "torch 2.6.0+cu124 requires nvidia-" in checked.details["consistency"]
        assert "as the runtime image shipped it" in checked.details["consistency"]
        expected["consistency"] = "WARN"
    expect(checked.report, expected, only=True)
    assert checked.code == 0


@cpu_host_only
def test_team_journey_extends_lock_check_stale_relock_render_install_verify(
    tmp_path: Path, indexes: tuple[LocalIndex, LocalIndex]
) -> None:
    default, pytorch = indexes
    base = copy_golden(tmp_path / "team-base", "pytorch")
    profile = project_profile(
        tmp_path,
        "team",
        default,
        pytorch,
        extends="team-base/pytorch.toml",
        body="""
[env]
TEAM_PROJECT = "vision"

[verify]
require_gpu = false
""",
    )
    lock_path = tmp_path / "team.lock"

    def lock() -> None:
        done = colabenv_cli("lock", profile, "-o", lock_path, *T4, "--quiet")
        assert done.returncode == 0, done.stderr
        assert done.stdout == ""

    def check() -> subprocess.CompletedProcess[str]:
        return colabenv_cli("lock", profile, "-o", lock_path, "--check")

    lock()
    fresh = check()
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    assert "up to date" in fresh.stdout

    # the team base changes under the project profile: the lock is stale
    base.write_text(base.read_text().replace('"numpy>=1.26",', '"numpy>=1.26", "six",'))
    stale = check()
    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert "stale" in stale.stdout
    lock()
    assert check().returncode == 0
    locked = read_lock(lock_path)
    pins: dict[str, str] = dict(locked.pins)
    assert pins["six"] == "1.17.0"
    assert pins["torch"].startswith("2.11.0+")
    assert all(package.files for package in locked.packages)

    script = tmp_path / "setup.sh"
    render(profile, script, "--lock", str(lock_path))
    assert "--require-hashes" in script.read_text()
    host = make_host(tmp_path / "host", with_pip=False)
    host.driver = "550.54.15"
    first = host.run(script, UV_HTTP_RETRIES="0")
    assert first.returncode == 0, first.stdout + first.stderr
    assert first.stdout.splitlines()[-1] == RESTART_LINE
    assert (
        sum(line.startswith("COLABENV: installing the lockfile") for line in first.stdout.splitlines()) == 1
    )
    assert host.installed() == {canonicalize_name(name): version for name, version in pins.items()}

    checked = verify(host, "--lock", str(lock_path))
    # the lock is the T4's; verify here sees no GPU, and says so once, as a WARN
    expect(checked.report, {**_expected_verify(["torch"]), "lock-target": "WARN"}, only=True)
    assert checked.code == 0
    second = host.run(script, UV_HTTP_RETRIES="0")
    assert second.returncode == 0 and second.stdout.splitlines()[-1] == NO_RESTART_LINE

    # a tampered lock no longer matches its pins-sha256: render refuses it
    numpy_hash = locked.package("numpy").files[0].sha256  # type: ignore[union-attr]
    tampered = tmp_path / "tampered.lock"
    tampered.write_text(lock_path.read_text().replace(numpy_hash, "0" * 64))
    bad_script = tmp_path / "bad.sh"
    refused_render = colabenv_cli("render", profile, "-o", bad_script, *T4, "--lock", tampered)
    assert refused_render.returncode == 2 and "pins-sha256" in refused_render.stderr
    # hash checking is real: one altered hash in the script and the install is refused
    bad_script.write_text(script.read_text().replace(numpy_hash, "0" * 64))
    other = make_host(tmp_path / "other", with_pip=False)
    other.driver = "550.54.15"
    refused = other.run(bad_script, UV_HTTP_RETRIES="0")
    assert refused.returncode != 0
    assert "COLABENV: step pip: lockfile failed" in refused.stderr
    assert other.marker() is None
    assert "numpy" not in other.installed()


# ---------------------------------------------------------------------------------------------
# The newcomer


def quickstart_commands(readme: str) -> list[str]:
    """The indented command lines of the README's Quickstart section, in order."""
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return [line[4:] for line in section.splitlines() if line.startswith("    ") and line.strip()]


def clean_clone(destination: Path) -> Path:
    """The files a fresh clone would have: tracked and untracked-but-not-ignored (so work not
    committed yet is included, and nothing ignored such as a venv or caches)."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True, check=True
        )
        .stdout.decode()
        .split("\0")
    )
    for relative in filter(None, listed):
        source = REPO / relative
        if not source.is_file():
            continue
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return destination


def _newcomer_env() -> dict[str, str]:
    """The caller's environment (a newcomer's own pip configuration included), minus what
    would point Python or colabenv at this checkout."""
    return {
        key: value
        for key, value in os.environ.items()
        if key not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME") and not key.startswith("COLABENV_")
    }


@pytest.mark.network
@pytest.mark.skipif(
    not (REPO / ".git").exists() or shutil.which("git") is None, reason="needs a git checkout to clone from"
)
def test_newcomer_runs_the_readme_quickstart_in_a_clean_clone(tmp_path: Path) -> None:
    """`pip install` needs the project's dependencies from a package index (PyPI, or the
    index the caller's pip is configured with), hence ``network``."""
    commands = quickstart_commands((REPO / "README.md").read_text(encoding="utf-8"))
    assert len(commands) >= 3
    install, tests, *look_around = commands
    assert "pip install" in install and "colabenv render" in install
    assert "pytest" in tests
    clone = clean_clone(tmp_path / "colabenv")
    env = _newcomer_env()

    done = subprocess.run(
        ["bash", "-c", install], cwd=clone, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    script = clone / "setup.sh"
    assert script.read_text().startswith("#!/usr/bin/env bash\n")
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0

    # the full suite would run this test again inside the clone: collecting it proves the
    # clone has every file the suite imports, without the recursion or the minutes
    collected = subprocess.run(
        ["bash", "-c", f"{tests} --collect-only"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    summary = collected.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"(\d+/)?\d+ tests collected( \(\d+ deselected\))? in [\d.]+s", summary), summary
    assert not any(line.startswith("ERROR") for line in collected.stdout.splitlines())

    for command in look_around:
        shown = subprocess.run(
            ["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True, timeout=300
        )
        assert shown.returncode == 0, f"{command}: {shown.stderr}"
        assert shown.stdout.strip(), command
    print(f"quickstart ran in a clean clone with Python {PY}: {len(commands)} commands")


# ---------------------------------------------------------------------------------------------
# Run state belongs to its run and its profile (issue 11)


def _small_profile(directory: Path, name: str, index_url: str, requirement: str) -> Path:
    path = directory / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\n[packages]\nrequirements = ["{requirement}"]\n'
        f'[env]\nPROFILE_{name.upper()} = "on"\n'
        f'[install]\ninstaller = "uv"\nindex_url = "{index_url}"\n'
    )
    return path


def test_a_failed_run_of_one_profile_changes_nothing_another_reports(
    tmp_path: Path, standin_wheels: Standins, default_index: LocalIndex
) -> None:
    port = free_port()
    script_b, script_a = tmp_path / "b.sh", tmp_path / "a.sh"
    render(_small_profile(tmp_path, "b", default_index.url, "requests>=2.30"), script_b)
    render(_small_profile(tmp_path, "a", f"http://127.0.0.1:{port}/simple/", "six"), script_a)
    host = make_host(tmp_path / "host", with_pip=False)

    first_b = host.run(script_b, UV_HTTP_RETRIES="0")
    assert first_b.returncode == 0, first_b.stderr
    assert first_b.stdout.splitlines()[-1] == RESTART_LINE
    marker_b = host.marker()
    assert marker_b is not None and marker_b["profile"] == "b"

    failed_a = host.run(script_a, UV_HTTP_RETRIES="0")
    assert failed_a.returncode != 0
    assert failed_a.stderr.splitlines()[-1] == (
        f"COLABENV: step pip: default index failed: cannot reach the package index at "
        f"127.0.0.1:{port} (Connection refused); no restart marker written"
    )
    assert host.marker() == marker_b

    again_b = host.run(script_b, UV_HTTP_RETRIES="0")
    assert again_b.returncode == 0, again_b.stderr
    assert installs(again_b.stdout) == []
    assert again_b.stdout.splitlines()[-1] == NO_RESTART_LINE
    assert host.marker() == marker_b
    assert "six" not in json.dumps(marker_b)

    # verify of A, in the host's interpreter: B's marker is no pass for A, and says what to run
    verified = console_runner(tmp_path)(
        "verify",
        "--profile",
        tmp_path / "a.toml",
        "--interpreter",
        host.python,
        "--json",
        "--timeout",
        "60",
        base={**host.env(), "COLABENV_STATE_DIR": str(host.state)},
        timeout=300,
    )
    assert verified.returncode == 1, verified.stderr
    expect(
        json.loads(verified.stdout),
        marker=("FAIL", "written by profile 'b'", "not by this profile 'a'", "colabenv render a"),
    )

    # A's index comes back: A's own record of its failed run still makes A report a restart
    with LocalIndex(standin_wheels.default, port=port):
        done_a = host.run(script_a, UV_HTTP_RETRIES="0")
    assert done_a.returncode == 0, done_a.stderr
    assert done_a.stdout.splitlines()[-1] == RESTART_LINE
    marker_a = host.marker()
    assert marker_a is not None and marker_a["profile"] == "a"
    assert "six" in marker_a["installed"]  # type: ignore[operator]
    assert not any("requests" in item for item in marker_a["installed"])  # type: ignore[union-attr]
    assert not list(host.state.glob("pending.*"))


def _start(host: Host, script: Path, path: str | None) -> subprocess.Popen[str]:
    env = host.env(UV_HTTP_RETRIES="0", **({"PATH": path} if path else {}))
    return subprocess.Popen(
        [shutil.which("bash") or "bash", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _without_flock(host: Host) -> str:
    """A PATH of the host's own tools only, util-linux ``flock`` not among them."""
    for name in ("readlink", "mkdir", "tee"):
        found = shutil.which(name)
        assert found is not None
        (host.bin / name).symlink_to(found)
    assert not (host.bin / "flock").exists()
    return str(host.bin)


@pytest.mark.parametrize("locker", ["flock", "helper"])
def test_two_copies_of_one_script_take_turns(locker: str, tmp_path: Path, default_index: LocalIndex) -> None:
    """With util-linux flock on PATH or without it: the lock is the helper's ``hold-lock`` either
    way, so no tool of the host is needed."""
    script = tmp_path / "b.sh"
    render(_small_profile(tmp_path, "b", default_index.url, "requests>=2.30"), script)

    # the second copy starts while the first holds the lock (past its preflight)
    host = make_host(tmp_path / "host", with_pip=False)
    path = _without_flock(host) if locker == "helper" else None
    first = _start(host, script, path)
    assert first.stdout is not None
    seen = [first.stdout.readline() for _ in range(2)]
    assert seen == ["COLABENV: step preflight\n", "COLABENV: step apt\n"]
    second = _start(host, script, path)
    second_out, second_err = second.communicate(timeout=300)
    first_rest, first_err = first.communicate(timeout=300)
    first_out = "".join(seen) + first_rest
    assert first.returncode == 0 and second.returncode == 0, first_err + second_err
    assert first_out.splitlines()[-1] == RESTART_LINE
    assert len(installs(first_out)) == 1
    assert f"COLABENV: waiting for another colabenv run (pid {first.pid})" in second_out
    assert installs(second_out) == []
    assert second_out.splitlines()[-1] == NO_RESTART_LINE

    # both at the same instant: one installs and says so, the other finds it done
    other = make_host(tmp_path / "other", with_pip=False)
    path = _without_flock(other) if locker == "helper" else None
    runs = [_start(other, script, path), _start(other, script, path)]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    lasts = sorted(out.splitlines()[-1] for out, _ in outputs)
    assert lasts == sorted([RESTART_LINE, NO_RESTART_LINE])
    assert sum(len(installs(out)) for out, _ in outputs) == 1
    marker = other.marker()
    assert marker is not None and marker["changed"] is True
