"""`colabenv lock` for real, with uv and pip-tools, against indexes served on 127.0.0.1."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.pylock import Pylock
from packaging.version import Version

from colabenv._util import toml
from colabenv.catalog.load import shipped_catalog
from colabenv.lock.file import read_lock, render_lock
from colabenv.lock.make import make_lock
from colabenv.lock.resolvers import RESOLVERS
from colabenv.models import (
    ComponentConstraint,
    ComputeCapability,
    Framework,
    NvidiaTarget,
    Resolution,
    Target,
)
from colabenv.profile.load import load_profile
from colabenv.resolve.resolver import resolve
from tests.support.fixtures import *  # noqa: F403
from tests.support.index import LocalIndex
from tests.support.isolation import clean_env, uv_bin
from tests.support.locking import (
    PYTHON,
    T4,
    colabenv,
    lock_profile,
    write_jax_profile,
    write_profile,
)
from tests.support.wheels import CUDNN_LAST_FOR_SM60, CUDNN_NEWEST, Standins, build_wheel

BASE_CLOSURE = {
    "torch": "2.6.0+cu124",
    "torchvision": "0.21.0+cu124",
    "filelock": "3.18.0",
    "typing-extensions": "4.14.1",
    "numpy": "2.0.2",
    "pillow": "11.3.0",
    "jax": "0.5.3",
    "jaxlib": "0.5.3",
    "jax-cuda12-plugin": "0.5.3",
    "jax-cuda12-pjrt": "0.5.3",
    "nvidia-cuda-nvcc-cu12": "12.6.85",
    "requests": "2.32.4",
    "urllib3": "2.5.0",
    "idna": "3.10",
    "certifi": "2025.8.3",
    "charset-normalizer": "3.4.3",
}


def torch_pins() -> dict[str, str]:
    """The NVIDIA pins the catalog records for torch 2.6.0 cu124: each must be in the lock."""
    release = shipped_catalog().release(Framework.TORCH, Version("2.6.0"))
    assert release is not None
    variant = release.variant("cu124")
    assert variant is not None
    return {str(p.name): next(iter(p.specifier)).version for p in variant.pins}


EXPECTED_CLOSURE = {**BASE_CLOSURE, **torch_pins()}


def wheel_hashes(root: Path) -> dict[str, Path]:
    return {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in root.rglob("*.whl")}


@pytest.fixture
def indexes(default_index: LocalIndex, pytorch_index: LocalIndex) -> tuple[LocalIndex, LocalIndex]:
    return default_index, pytorch_index


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_lock_closure_hashes_and_header(
    tmp_path: Path,
    indexes: tuple[LocalIndex, LocalIndex],
    standin_wheels: Standins,
    resolver: str,
) -> None:
    default_index, pytorch_index = indexes
    profile = write_profile(tmp_path, default_index, pytorch_index)
    lock = lock_profile(profile, tmp_path / "team.lock", resolver)
    assert dict(lock.pins) == EXPECTED_CLOSURE
    by_hash = wheel_hashes(standin_wheels.root)
    for package in lock.packages:
        assert package.files, package.name
        for file in package.files:
            wheel = by_hash[file.sha256]
            assert wheel.name.split("-")[1] == package.version.replace("-", "_")
    torch_wheel = by_hash[lock.package("torch").files[0].sha256]  # type: ignore[union-attr]
    assert torch_wheel.parent.name == "cu124"
    header = lock.header
    assert header.profile_name == "team-gpu"
    assert header.profile_hash.startswith("sha256:")
    assert header.target.driver == "550.54.15"
    assert header.target.required_driver == "525.60.13"
    assert header.target.cuda == "12.4"
    assert header.target.compute_capabilities == ("7.5",)
    assert header.target.python == PYTHON
    assert header.target.platform == "linux_x86_64"
    assert header.resolver.split()[0] == resolver
    torch = header.frameworks[0]
    assert (torch.framework, torch.version, torch.variant) == ("torch", "2.6.0", "cu124")
    assert torch.index_url == pytorch_index.sub_url("cu124").rstrip("/")
    assert header.frameworks[1].index_url is None
    assert lock.index_url == default_index.url
    assert lock.extra_index_urls == (pytorch_index.sub_url("cu124").rstrip("/"),)
    text = (tmp_path / "team.lock").read_text()
    assert "# resolver: " + header.resolver in text


def test_resolvers_agree_and_lock_to_stdout(tmp_path: Path, indexes: tuple[LocalIndex, LocalIndex]) -> None:
    profile = write_profile(tmp_path, *indexes, requirements=("requests>=2", "python-dateutil"))
    pins = {}
    for resolver in RESOLVERS:
        result = colabenv("lock", profile, "--resolver", resolver, *T4)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("# colabenv lock")
        assert f"locked {len(EXPECTED_CLOSURE) + 2} packages for team-gpu" in result.stderr
        (tmp_path / f"{resolver}.lock").write_text(result.stdout)
        pins[resolver] = read_lock(tmp_path / f"{resolver}.lock").pins
    assert pins["uv"] == pins["pip-tools"]
    assert ("six", "1.17.0") in pins["uv"]
    bodies = {r: (tmp_path / f"{r}.lock").read_text().split("\n\n", 1)[1] for r in RESOLVERS}
    assert bodies["uv"] == bodies["pip-tools"]


def test_check_fresh_then_stale(tmp_path: Path, indexes: tuple[LocalIndex, LocalIndex]) -> None:
    profile = write_profile(tmp_path, *indexes)
    out = tmp_path / "team.lock"
    lock_profile(profile, out, "uv")
    indexes[0].stop()  # --check never touches an index
    fresh = colabenv("lock", profile, "-o", out, "--check")
    assert fresh.returncode == 0, fresh.stderr
    assert "up to date" in fresh.stdout
    assert colabenv("lock", profile, "-o", out, "--check", *T4).returncode == 0
    other_gpu = colabenv("lock", profile, "-o", out, "--check", "--compute-capability", "6.0")
    assert other_gpu.returncode == 1
    assert "compute capabilities 7.5 in the lock, 6.0 now" in other_gpu.stdout
    profile.write_text(profile.read_text().replace('"requests>=2"', '"requests>=2", "six"'))
    stale = colabenv("lock", profile, "-o", out, "--check")
    assert stale.returncode == 1
    assert "stale: the profile changed" in stale.stdout
    assert colabenv("lock", profile, "--check").returncode == 2


def test_unreachable_index_is_exit_4_one_line(tmp_path: Path, indexes: tuple[LocalIndex, LocalIndex]) -> None:
    default_index, pytorch_index = indexes
    profile = write_profile(tmp_path, default_index, pytorch_index)
    out = tmp_path / "team.lock"
    out.write_text("previous lock\n")
    pytorch_index.stop()
    result = colabenv("lock", profile, "-o", out, *T4)
    assert result.returncode == 4
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert pytorch_index.sub_url("cu124").rstrip("/") in result.stderr
    assert "connection refused" in result.stderr
    assert out.read_text() == "previous lock\n"
    pytorch_index.start()
    default_index.stop()
    result = colabenv("lock", profile, "-o", out, *T4)
    assert result.returncode == 4
    assert default_index.url in result.stderr and result.stderr.count("\n") == 1
    assert not list(tmp_path.glob(".team.lock*"))


def test_index_failing_during_resolution_is_exit_4(
    tmp_path: Path, indexes: tuple[LocalIndex, LocalIndex]
) -> None:
    default_index, pytorch_index = indexes
    profile = write_profile(
        tmp_path, default_index, pytorch_index, requirements=("requests>=2", "python-dateutil")
    )
    default_index.fail_after(1)  # the framework check passes; uv then meets 503s
    result = colabenv("lock", profile, "-o", tmp_path / "team.lock", *T4)
    assert result.returncode == 4, result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "team.lock").exists()


def _copy_without(source: Path, dest: Path, drop: Callable[[Path], bool]) -> Path:
    shutil.copytree(source, dest, ignore=lambda d, names: [n for n in names if drop(Path(d) / n)])
    return dest


def test_missing_framework_file_is_named(
    tmp_path: Path, default_index: LocalIndex, standin_wheels: Standins
) -> None:
    pruned = _copy_without(
        standin_wheels.pytorch, tmp_path / "pytorch", lambda p: p.name.startswith("torch-2.6.0+cu124")
    )
    build_wheel(pruned / "cu124", "torch", "2.6.0+cu124", tag="cp39-cp39-manylinux_2_28_x86_64")
    with LocalIndex(pruned) as pytorch_index:
        profile = write_profile(tmp_path, default_index, pytorch_index)
        result = colabenv("lock", profile, "-o", tmp_path / "team.lock", *T4)
    assert result.returncode == 4
    assert result.stderr.count("\n") == 1, result.stderr
    message = result.stderr
    assert f"{pytorch_index.base_url}/cu124" in message
    assert "torch-2.6.0+cu124-" in message
    assert "torch-2.6.0+cu124-cp39-cp39-manylinux_2_28_x86_64.whl" in message
    assert not (tmp_path / "team.lock").exists()


def test_credentials_stay_references(tmp_path: Path, indexes: tuple[LocalIndex, LocalIndex]) -> None:
    default_index, pytorch_index = indexes
    secret_index = default_index.url.replace("http://", "http://${LOCK_USER}:${LOCK_TOKEN}@")
    extra = f'extra_index_urls = ["{secret_index}"]'
    profile = write_profile(tmp_path, default_index, pytorch_index, extra=extra)
    env = clean_env(LOCK_USER="robot", LOCK_TOKEN="tok-9f8e7d", UV_HTTP_RETRIES="0")
    out = tmp_path / "team.lock"
    result = colabenv("lock", profile, "-o", out, *T4, env=env)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert f"--extra-index-url {secret_index}" in text
    assert "tok-9f8e7d" not in text and "robot" not in text
    default_index.stop()
    result = colabenv("lock", profile, "-o", out, *T4, env=env)
    assert result.returncode == 4
    assert "tok-9f8e7d" not in result.stderr
    unset = colabenv("lock", profile, "-o", out, *T4)
    assert unset.returncode == 2
    assert "${LOCK_USER} is not set" in unset.stderr


def test_pip_tools_refuses_another_python(tmp_path: Path, indexes: tuple[LocalIndex, LocalIndex]) -> None:
    profile = write_profile(tmp_path, *indexes)
    other = "3.10" if PYTHON != "3.10" else "3.12"
    result = colabenv("lock", profile, "--resolver", "pip-tools", *T4[:-1], other)
    assert result.returncode == 2
    assert "use --resolver uv" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_pylock_format(
    tmp_path: Path,
    indexes: tuple[LocalIndex, LocalIndex],
    fresh_venv: Callable[..., Path],
    resolver: str,
) -> None:
    profile = write_profile(tmp_path, *indexes)
    out = tmp_path / "pylock.toml"
    indexes[0].reset_requests()
    result = colabenv("lock", profile, "-o", out, "--format", "pylock", "--resolver", resolver, *T4)
    assert result.returncode == 0, result.stderr
    Pylock.from_dict(toml.loads(out.read_text()))
    lock = read_lock(out)
    assert dict(lock.pins) == EXPECTED_CLOSURE
    torch = lock.package("torch")
    assert torch is not None and torch.files[0].url is not None
    assert "/cu124/" in torch.files[0].url
    ours = [
        path
        for path, agent in zip(indexes[0].requests, indexes[0].agents, strict=True)
        if agent.startswith("colabenv/") and path.endswith("/filelock/")
    ]
    if resolver == "uv":  # uv's answer carries each file's URL: no second pass, no index named
        assert torch.index is None
        assert ours == []
    else:
        assert ours
        assert torch.index == indexes[1].sub_url("cu124").rstrip("/")
    python = fresh_venv()
    subprocess.run(
        [uv_bin(), "pip", "install", "--python", str(python), "-r", str(out)],
        check=True,
        capture_output=True,
        env=clean_env(),
    )
    assert _installed(python) == EXPECTED_CLOSURE


def _installed(python: Path) -> dict[str, str]:
    out = subprocess.run(
        [uv_bin(), "pip", "list", "--python", str(python), "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
        env=clean_env(),
    ).stdout
    return {item["name"]: item["version"] for item in json.loads(out)}


@pytest.mark.slow
def test_lock_installs_exactly_with_hash_checking(
    tmp_path: Path, indexes: tuple[LocalIndex, LocalIndex], fresh_venv: Callable[..., Path]
) -> None:
    profile = write_profile(tmp_path, *indexes)
    out = tmp_path / "team.lock"
    lock = lock_profile(profile, out, "pip-tools")
    python = fresh_venv(with_pip=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-cache-dir", "--require-hashes", "-r", str(out)],
        check=True,
        capture_output=True,
        env=clean_env(),
    )
    installed = _installed(python)
    for seeded in ("pip", "setuptools"):
        installed.pop(seeded, None)
    assert installed == dict(lock.pins)
    # a tampered hash is refused
    tampered = tmp_path / "tampered.lock"
    digest = lock.package("numpy").files[0].sha256  # type: ignore[union-attr]
    tampered.write_text(out.read_text().replace(digest, "0" * 64))
    python2 = fresh_venv()
    result = subprocess.run(
        [uv_bin(), "pip", "install", "--python", str(python2), "--require-hashes", "-r", str(tampered)],
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    assert result.returncode != 0
    assert "numpy" not in _installed(python2)


@pytest.mark.network
def test_lock_small_real_profile_against_the_real_index(tmp_path: Path) -> None:
    profile = tmp_path / "small.toml"
    profile.write_text(
        'schema = 1\nname = "small"\ndescription = "jax on CPU"\n\n'
        '[frameworks]\njax = { version = "==0.5.3", variant = "cpu" }\n\n'
        '[packages]\nrequirements = ["requests==2.32.4"]\n'
    )
    out = tmp_path / "small.lock"
    result = colabenv("lock", profile, "-o", out, "--cpu", "--python", PYTHON, env=clean_env())
    assert result.returncode == 0, result.stderr
    pins: dict[str, str] = dict(read_lock(out).pins)
    assert pins["requests"] == "2.32.4"
    assert pins["jax"] == "0.5.3" and pins["jaxlib"] == "0.5.3"
    assert {"idna", "urllib3", "certifi", "charset-normalizer"} <= set(pins)


def test_nothing_to_lock_is_bad_input(tmp_path: Path) -> None:
    profile = tmp_path / "empty.toml"
    profile.write_text('schema = 1\nname = "empty"\ndescription = "nothing"\n')
    result = colabenv("lock", profile, "-o", tmp_path / "empty.lock", "--cpu", "--python", PYTHON)
    assert result.returncode == 2
    assert "nothing to lock" in result.stderr
    assert not (tmp_path / "empty.lock").exists()


CUDNN_BOUND = "nvidia-cudnn-cu12<9.11"


def _jax_resolution(profile: Path) -> Resolution:
    target = Target(
        NvidiaTarget(Version("550.54.15"), Version("12.4"), (ComputeCapability(7, 5),)), Version(PYTHON)
    )
    loaded = load_profile(profile)
    return resolve(loaded, target, shipped_catalog(r.framework for r in loaded.frameworks))


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_component_constraints_bound_the_pins(
    tmp_path: Path, default_index: LocalIndex, resolver: str
) -> None:
    """Issue 13: a Pascal host's cuDNN bound reaches the resolver; without it, the newest."""
    profile = write_jax_profile(tmp_path, default_index)
    free = _jax_resolution(profile)
    bounded = dataclasses.replace(
        free,
        constraints=(ComponentConstraint(CUDNN_BOUND, "sm_60: cuDNN 9.11 and newer have no kernels for it"),),
    )
    env = clean_env(UV_HTTP_RETRIES="0")
    lock = make_lock(bounded, resolver=resolver, colabenv_version="0.1.0", environ=env)
    assert lock.version_of("nvidia-cudnn-cu12") == CUDNN_LAST_FOR_SM60
    assert lock.header.constraints == (CUDNN_BOUND,)
    assert lock.package("nvidia-cudnn-cu12") is not None
    unbounded = make_lock(free, resolver=resolver, colabenv_version="0.1.0", environ=env)
    assert unbounded.version_of("nvidia-cudnn-cu12") == CUDNN_NEWEST
    assert unbounded.header.constraints == ()
    assert {n for n, _ in lock.pins} == {n for n, _ in unbounded.pins}


def test_constraint_only_bounds_what_is_pulled_in(tmp_path: Path, default_index: LocalIndex) -> None:
    """A constraint on a component nothing needs installs nothing."""
    profile = write_jax_profile(tmp_path, default_index)
    resolution = dataclasses.replace(
        _jax_resolution(profile), constraints=(ComponentConstraint("nvidia-nccl-cu13<3", "not pulled in"),)
    )
    lock = make_lock(
        resolution, resolver="uv", colabenv_version="0.1.0", environ=clean_env(UV_HTTP_RETRIES="0")
    )
    assert lock.package("nvidia-nccl-cu13") is None


def test_check_sees_a_change_of_constraints(tmp_path: Path, default_index: LocalIndex) -> None:
    profile = write_jax_profile(tmp_path, default_index)
    bounded = dataclasses.replace(
        _jax_resolution(profile), constraints=(ComponentConstraint(CUDNN_BOUND, "P100"),)
    )
    lock = make_lock(bounded, resolver="uv", colabenv_version="0.1.0", environ=clean_env(UV_HTTP_RETRIES="0"))
    out = tmp_path / "jax.lock"
    out.write_text(render_lock(lock))
    assert f"# constraint: {CUDNN_BOUND}\n" in out.read_text()
    check = colabenv("lock", profile, "-o", out, "--check")
    assert check.returncode == 1, check.stderr
    assert f"stale: component constraints: {CUDNN_BOUND} in the lock, none now" in check.stdout
    fresh = tmp_path / "fresh.lock"
    made = colabenv("lock", profile, "-o", fresh, *T4)
    assert made.returncode == 0, made.stderr
    assert colabenv("lock", profile, "-o", fresh, "--check").returncode == 0


def test_progress_shows_markup_and_control_characters_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Index URLs and package names reach the progress line as text: a ``[/]`` in a URL once
    raised MarkupError, and ``[bold]`` vanished. The console the progress line is drawn on is
    rich's own, made a terminal 200 columns wide that records what it shows."""
    import io

    import rich.console

    from colabenv.cli.common import progress_status

    consoles: list[rich.console.Console] = []

    class Recording(rich.console.Console):
        def __init__(self, *args: object, **kwargs: object) -> None:
            kwargs.update(file=io.StringIO(), force_terminal=True, width=200, record=True)
            super().__init__(*args, **kwargs)
            consoles.append(self)

    monkeypatch.setattr(rich.console, "Console", Recording)
    with progress_status(True, "locking") as say:
        say("checking torch 2.6.0 on https://mirror.example/[/]whl/[bold]cu124\x1b[2J")
    assert len(consoles) == 1
    shown = consoles[0].export_text()
    assert "checking torch 2.6.0 on https://mirror.example/[/]whl/[bold]cu124\\x1b[2J" in shown, shown
    assert "\x1b" not in shown, shown
