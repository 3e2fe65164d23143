"""Wheelhouses for real: ``colabenv bundle`` from a local index on 127.0.0.1, then bootstrap
scripts installing from the folder (with no index, or as a persistent cache) into real venvs
with real uv and pip (issue 26)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from colabenv.wheelhouse.plan import MANIFEST_NAME
from tests.support.fixtures import venv_template
from tests.support.index import LocalIndex
from tests.support.journeys import render
from tests.support.locking import T4, colabenv
from tests.support.ports import free_port
from tests.support.scriptrun import Host, make_host
from tests.support.throttle import ThrottledProxy
from tests.support.wheels import Standins, build_wheel

pytestmark = pytest.mark.slow

REQUIREMENTS = ["requests>=2", "python-dateutil"]


def _profile(
    directory: Path, index: LocalIndex, *, installer: str = "uv", extra: str = "", name: str = "wh.toml"
) -> Path:
    path = directory / name
    requirements = ", ".join(json.dumps(r) for r in REQUIREMENTS)
    path.write_text(
        f'name = "wh"\n[packages]\nrequirements = [{requirements}]\n'
        f'[install]\ninstaller = "{installer}"\nindex_url = "{index.url}"\n{extra}'
    )
    return path


def _lock(directory: Path, profile: Path, name: str = "wh.lock") -> Path:
    out = directory / name
    made = colabenv("lock", profile, "-o", out, "--resolver", "uv", *T4)
    assert made.returncode == 0, made.stderr
    return out


def _bundle(lock: Path, folder: Path, *extra: str) -> tuple[int, str, str]:
    done = colabenv("bundle", lock, "-o", folder, *extra)
    return done.returncode, done.stdout, done.stderr


def _manifest(folder: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((folder / MANIFEST_NAME).read_text())
    return data


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Made:
    """What the module makes once: profiles and their locks against an index on a fixed port,
    which each test serves anew (``index``), so the locks fit every test's index."""

    port: int
    profile: Path
    lock: Path
    cache: Path
    cache_profile: Path
    cache_lock: Path
    cache_script: Path


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, standin_wheels: Standins) -> Made:
    base = tmp_path_factory.mktemp("wheelhouse-made")
    port = free_port()
    cache = base / "cache"
    with LocalIndex(standin_wheels.default, port=port) as index:
        profile = _profile(base, index)
        lock = _lock(base, profile, "wh.lock")
        cache_profile = _profile(base, index, extra=f'wheelhouse = "{cache}"\n', name="whc.toml")
        cache_lock = _lock(base, cache_profile, "whc.lock")
    cache_script = base / "cache.sh"
    render(cache_profile, cache_script, "--lock", str(cache_lock))
    return Made(port, profile, lock, cache, cache_profile, cache_lock, cache_script)


@pytest.fixture
def index(made: Made, standin_wheels: Standins) -> Iterator[LocalIndex]:
    """The index the module's locks were made against (same port), fresh for each test; the
    cache folder the module's cache profile names starts empty."""
    shutil.rmtree(made.cache, ignore_errors=True)
    with LocalIndex(standin_wheels.default, port=made.port) as served:
        yield served


def test_bundle_fetches_every_wheel_checked_and_a_second_run_only_what_is_missing_or_damaged(
    tmp_path: Path, made: Made, index: LocalIndex
) -> None:
    default_index = index
    lock = made.lock
    folder = tmp_path / "wheels"
    code, out, err = _bundle(lock, folder)
    assert code == 0, err
    manifest = _manifest(folder)
    files = manifest["files"]
    assert isinstance(files, list)
    names = sorted(str(f["name"]) for f in files)
    assert names == sorted(
        ["certifi", "charset-normalizer", "idna", "python-dateutil", "requests", "six", "urllib3"]
    )
    for entry in files:
        assert _sha(folder / entry["file"]) == entry["sha256"]
        assert entry["url"].startswith(default_index.base_url)
    assert "7 wheels" in out
    assert "7 downloaded, 0 already there" in err
    assert "Kaggle" in (folder / "README.md").read_text()

    default_index.reset_requests()
    six = next(f for f in files if f["name"] == "six")
    idna = next(f for f in files if f["name"] == "idna")
    (folder / six["file"]).unlink()
    damaged = folder / idna["file"]
    damaged.write_bytes(damaged.read_bytes()[:-10])
    code, out, err = _bundle(lock, folder)
    assert code == 0, err
    assert "2 downloaded, 5 already there" in err
    assert _sha(folder / six["file"]) == six["sha256"]
    assert _sha(damaged) == idna["sha256"]
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]

    # everything there, as its manifest says: a third run needs no index at all
    default_index.stop()
    code, out, err = _bundle(lock, folder)
    assert code == 0, err
    assert "0 downloaded, 7 already there" in err
    (folder / six["file"]).unlink()
    code, out, err = _bundle(lock, folder)
    assert code == 4
    assert err.startswith("colabenv: six==1.17.0: index http://127.0.0.1:")
    default_index.start()
    assert _bundle(lock, folder)[0] == 0

    kept = tmp_path / "kept.whl"
    (folder / six["file"]).rename(kept)
    (folder / six["file"]).symlink_to(kept)
    code, out, err = _bundle(lock, folder)
    assert (code, out) == (2, "")
    assert err == f"colabenv: {folder / six['file']}: not a regular file; a wheelhouse writes none over it\n"
    assert (folder / six["file"]).is_symlink()


def _host(tmp_path: Path, request: pytest.FixtureRequest, installer: str, name: str = "host") -> Host:
    with_pip = installer == "pip"
    return make_host(tmp_path / name, with_pip=with_pip, venv_from=venv_template(request, with_pip))


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_bundle_then_the_index_stopped_then_the_script_installs_offline(
    installer: str, tmp_path: Path, made: Made, index: LocalIndex, request: pytest.FixtureRequest
) -> None:
    default_index, profile, lock = index, made.profile, made.lock
    folder = tmp_path / "wheels"
    assert _bundle(lock, folder)[0] == 0
    script = tmp_path / "setup.sh"
    render(profile, script, "--lock", str(lock), "--wheelhouse", str(folder))
    text = script.read_text()
    assert default_index.url not in text.split("COLABENV_LOCK_EOF")[-1]
    default_index.stop()
    host = _host(tmp_path, request, installer)
    done = host.run(script, UV_HTTP_RETRIES="0", PIP_RETRIES="0", COLABENV_INSTALLER=installer)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"from the wheelhouse, no index ({installer})" in done.stdout
    assert "each with the lock's sha256" in done.stdout
    installed = host.installed()
    assert installed["requests"] == "2.32.4"
    assert installed["six"] == "1.17.0"


def test_a_tampered_wheel_is_refused_by_name_and_nothing_is_installed(
    tmp_path: Path, made: Made, index: LocalIndex, request: pytest.FixtureRequest
) -> None:
    """The helper checks every file before the installer runs: the same for uv and pip."""
    installer, profile, lock = "uv", made.profile, made.lock
    folder = tmp_path / "wheels"
    assert _bundle(lock, folder)[0] == 0
    urllib3 = next(folder.glob("urllib3-*.whl"))
    urllib3.write_bytes(urllib3.read_bytes() + b"\0")
    script = tmp_path / "setup.sh"
    render(profile, script, "--lock", str(lock), "--wheelhouse", str(folder))
    host = _host(tmp_path, request, installer)
    done = host.run(script)
    assert done.returncode != 0
    assert f"refused, nothing installed: {urllib3}: sha256" in done.stdout + done.stderr
    assert "urllib3==2.5.0" in done.stdout + done.stderr
    assert host.installed() == {}


def _own_index(tmp_path: Path, standin_wheels: Standins) -> LocalIndex:
    """An index of a copy of the stand-in wheels: a test may change a file under it."""
    root = tmp_path / "index"
    shutil.copytree(standin_wheels.default, root)
    return LocalIndex(root).start()


def test_bundle_with_the_index_stopped_is_exit_4_naming_the_file(
    tmp_path: Path, made: Made, index: LocalIndex
) -> None:
    default_index, profile = index, made.profile
    out = tmp_path / "pylock.toml"
    made = colabenv("lock", profile, "-o", out, "--format", "pylock", "--resolver", "uv", *T4)
    assert made.returncode == 0, made.stderr
    default_index.stop()
    code, stdout, err = _bundle(out, tmp_path / "wheels")
    assert code == 4, err
    assert stdout == ""
    assert err.startswith("colabenv: certifi-2025.8.3-py3-none-any.whl from http://127.0.0.1:")
    assert "unreachable" in err
    assert not (tmp_path / "wheels" / MANIFEST_NAME).exists()


def test_bundle_of_a_requirements_lock_with_the_index_stopped_names_the_pin(
    tmp_path: Path, made: Made, index: LocalIndex
) -> None:
    lock = made.lock
    index.stop()
    code, stdout, err = _bundle(lock, tmp_path / "wheels")
    assert code == 4, err
    assert stdout == ""
    assert err.startswith("colabenv: certifi==2025.8.3: index http://127.0.0.1:")


def test_a_file_the_index_sends_with_another_hash_is_exit_4_and_not_kept(
    tmp_path: Path, standin_wheels: Standins
) -> None:
    index = _own_index(tmp_path, standin_wheels)
    try:
        profile = _profile(tmp_path, index)
        out = tmp_path / "pylock.toml"
        made = colabenv("lock", profile, "-o", out, "--format", "pylock", "--resolver", "uv", *T4)
        assert made.returncode == 0, made.stderr
        six = next((tmp_path / "index").rglob("six-*.whl"))
        six.write_bytes(six.read_bytes() + b"tampered")
        folder = tmp_path / "wheels"
        code, stdout, err = _bundle(out, folder)
    finally:
        index.stop()
    assert code == 4, err
    assert stdout == ""
    assert f"colabenv: {six.name} from http://127.0.0.1:" in err
    assert "the lock says" in err
    assert not (folder / six.name).exists()
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]


def test_target_is_refused_for_a_lock_of_one_target(tmp_path: Path, made: Made) -> None:
    lock = made.lock
    code, stdout, err = _bundle(lock, tmp_path / "wheels", "--target", "nb")
    assert code == 2
    assert stdout == ""
    assert "no section 'nb' (sections: none: it is a lock of one target)" in err


# ---------------------------------------------------------------------------------------------
# [install] wheelhouse: a persistent cache


def _cache_script(tmp_path: Path, index: LocalIndex | str, cache: Path, *, installer: str = "uv") -> Path:
    url = index if isinstance(index, str) else index.url
    profile = tmp_path / "wh.toml"
    requirements = ", ".join(json.dumps(r) for r in REQUIREMENTS)
    profile.write_text(
        f'name = "wh"\n[packages]\nrequirements = [{requirements}]\n'
        f'[install]\ninstaller = "{installer}"\nindex_url = "{url}"\nwheelhouse = "{cache}"\n'
    )
    lock = _lock(tmp_path, profile)
    script = tmp_path / "setup.sh"
    render(profile, script, "--lock", str(lock))
    return script


def _trusted(cache: Path) -> dict[str, str]:
    """What a later run would take from the cache: its wheels (not hidden), by sha256."""
    return {
        p.name: _sha(p) for p in cache.iterdir() if p.name.endswith(".whl") and not p.name.startswith(".")
    }


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_the_cache_is_filled_on_the_first_run_and_serves_the_next_with_the_index_stopped(
    installer: str, tmp_path: Path, made: Made, index: LocalIndex, request: pytest.FixtureRequest
) -> None:
    default_index, cache, script = index, made.cache, made.cache_script
    first = _host(tmp_path, request, installer, "first")
    done = first.run(script, COLABENV_INSTALLER=installer)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"COLABENV: wheelhouse {cache}: 0 wheels from it, 7 downloaded" in done.stdout
    assert f"; added to {cache}" in done.stdout
    assert first.installed()["requests"] == "2.32.4"
    assert len(_trusted(cache)) == 7
    default_index.stop()
    second = _host(tmp_path, request, installer, "second")
    again = second.run(script, UV_HTTP_RETRIES="0", PIP_RETRIES="0", COLABENV_INSTALLER=installer)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"COLABENV: wheelhouse {cache}: 7 wheels from it, 0 downloaded" in again.stdout
    assert second.installed() == first.installed()


def test_a_damaged_file_in_the_cache_is_replaced_not_trusted(
    tmp_path: Path, made: Made, index: LocalIndex, request: pytest.FixtureRequest
) -> None:
    cache, script = made.cache, made.cache_script
    first = _host(tmp_path, request, "uv", "first").run(script, JPY_PARENT_PID="1")
    assert first.returncode == 0
    # in a notebook cell the fill rewrites one line with \r (read back as \n: text mode):
    # files and bytes done, rate, time left
    live = [line for line in first.stderr.splitlines() if line.startswith("COLABENV: wheelhouse: ")]
    assert live and live[0].startswith("COLABENV: wheelhouse: 0/7 files, ")
    assert "MiB/s" in live[0] and live[0].endswith(" s left\x1b[K")
    idna = next(cache.glob("idna-*.whl"))
    good = _sha(idna)
    idna.write_bytes(idna.read_bytes()[:100])
    done = _host(tmp_path, request, "uv", "second").run(script)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 wheels from it, 1 downloaded" in done.stdout
    assert _sha(idna) == good


def test_two_runs_at_once_share_one_cache(
    tmp_path: Path, made: Made, index: LocalIndex, request: pytest.FixtureRequest
) -> None:
    cache, script = made.cache, made.cache_script
    hosts = [_host(tmp_path, request, "uv", f"h{n}") for n in range(2)]
    running = [
        subprocess.Popen(
            ["bash", str(script)], env=h.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for h in hosts
    ]
    outputs = [p.communicate(timeout=300)[0] for p in running]
    assert [p.returncode for p in running] == [0, 0], outputs
    for host in hosts:
        assert host.installed()["requests"] == "2.32.4"
    lock_text = made.cache_lock.read_text()
    trusted = _trusted(cache)
    assert len(trusted) == 7
    assert all(digest in lock_text for digest in trusted.values())
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]


BIG = 8 << 20


def test_a_run_killed_while_adding_to_the_cache_leaves_no_file_a_later_run_trusts(
    tmp_path: Path, standin_wheels: Standins, request: pytest.FixtureRequest
) -> None:
    root = tmp_path / "index"
    shutil.copytree(standin_wheels.default, root)
    build_wheel(root / "big", "bigpkg", "1.0", payload_bytes=BIG)
    cache = tmp_path / "cache"
    with LocalIndex(root) as index, ThrottledProxy(index.base_url, 2 << 20) as proxy:
        REQUIREMENTS.append("bigpkg")
        try:
            script = _cache_script(tmp_path, f"{proxy.base_url}/simple/", cache)
        finally:
            REQUIREMENTS.remove("bigpkg")
        host = _host(tmp_path, request, "uv", "killed")
        run = subprocess.Popen(
            ["bash", str(script)],
            env=host.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 120
            while not any("bigpkg" in p.name and p.stat().st_size > 0 for p in _listing(cache)):
                assert run.poll() is None and time.monotonic() < deadline, "no download to kill"
                time.sleep(0.02)
        finally:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        lock_text = (tmp_path / "wh.lock").read_text()
        trusted = _trusted(cache)
        assert not any(name.startswith("bigpkg") for name in trusted)
        assert all(digest in lock_text for digest in trusted.values())
        later = _host(tmp_path, request, "uv", "later")
        done = later.run(script)
        assert done.returncode == 0, done.stdout + done.stderr
        assert later.installed()["bigpkg"] == "1.0"
        trusted = _trusted(cache)
        assert any(name.startswith("bigpkg") for name in trusted)
        assert all(digest in lock_text for digest in trusted.values())


def _listing(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except FileNotFoundError:
        return []


@pytest.fixture
def small_tmpfs(made: Made, index: LocalIndex) -> Iterator[Path]:
    """A 64 MiB tmpfs mounted on the module's cache folder (root only); unmounted afterwards."""
    point = made.cache
    point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(point)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {made.stderr!r}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.mark.parametrize("installer", ["uv"])
def test_a_read_only_cache_serves_what_it_holds_adds_nothing_and_says_so(
    installer: str,
    tmp_path: Path,
    made: Made,
    small_tmpfs: Path,
    request: pytest.FixtureRequest,
) -> None:
    cache, script = small_tmpfs, made.cache_script
    assert _bundle(made.cache_lock, cache)[0] == 0
    next(cache.glob("six-*.whl")).unlink()
    before = sorted(p.name for p in cache.iterdir())
    subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], check=True)
    host = _host(tmp_path, request, installer)
    done = host.run(script, COLABENV_INSTALLER=installer)
    assert done.returncode == 0, done.stdout + done.stderr
    line = f"COLABENV: wheelhouse {cache}: 6 wheels from it, 1 downloaded"
    assert line in done.stdout
    assert f"{cache} is read-only: installing from it, adding nothing" in done.stdout
    assert sorted(p.name for p in cache.iterdir()) == before
    assert host.installed()["six"] == "1.17.0"


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_without_a_lock_the_cache_serves_files_whose_hash_the_index_gives(
    installer: str, tmp_path: Path, default_index: LocalIndex, request: pytest.FixtureRequest
) -> None:
    cache = tmp_path / "cache"
    profile = tmp_path / "nolock.toml"
    requirements = ", ".join(json.dumps(r) for r in REQUIREMENTS)
    profile.write_text(
        f'name = "wh"\n[packages]\nrequirements = [{requirements}]\n'
        f'[install]\ninstaller = "{installer}"\nindex_url = "{default_index.url}"\nwheelhouse = "{cache}"\n'
    )
    script = tmp_path / "setup.sh"
    render(profile, script)
    first = _host(tmp_path, request, installer, "first")
    done = first.run(script)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"COLABENV: wheelhouse {cache}: 0 wheels from it, 7 downloaded" in done.stdout
    page = {name: _sha(path) for name, path in ((p.name, p) for p in cache.glob("*.whl"))}
    assert len(page) == 7
    default_index.reset_requests()
    second = _host(tmp_path, request, installer, "second")
    again = second.run(script)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"COLABENV: wheelhouse {cache}: 7 wheels from it, 0 downloaded" in again.stdout
    if installer == "uv":  # uv's dry run reads metadata from the wheelhouse's wheels
        assert not [r for r in default_index.requests if r.endswith(".whl")]
    # pip's --dry-run downloads the wheels it would install even where the index offers their
    # metadata (pypa/pip#12603; changed by pypa/pip#13482): this venv's pip still does
    assert second.installed() == first.installed()
    assert second.installed()["python-dateutil"] == "2.9.0.post0"


def test_bundle_sends_the_index_credentials_and_writes_none_and_shows_live_progress(
    tmp_path: Path, default_index: LocalIndex
) -> None:
    secret = "s3cr3t-token-value"
    port = default_index.base_url.rsplit(":", 1)[1]
    profile = tmp_path / "wh.toml"
    requirements = ", ".join(json.dumps(r) for r in REQUIREMENTS)
    profile.write_text(
        f'name = "wh"\n[packages]\nrequirements = [{requirements}]\n'
        f'[install]\nindex_url = "http://${{WH_USER}}:${{WH_TOKEN}}@127.0.0.1:{port}/simple/"\n'
    )
    lock = tmp_path / "wh.lock"
    env = {"WH_USER": "team", "WH_TOKEN": secret}
    made = colabenv("lock", profile, "-o", lock, "--resolver", "uv", *T4, env=_env(env))
    assert made.returncode == 0, made.stderr
    default_index.reset_requests()
    folder = tmp_path / "wheels"
    done = colabenv("bundle", lock, "-o", folder, env=_env({**env, "JPY_PARENT_PID": "1"}))
    assert done.returncode == 0, done.stderr
    files = [
        a
        for p, a in zip(default_index.requests, default_index.authorizations, strict=True)
        if p.endswith(".whl")
    ]
    assert len(files) == 7 and all(a.startswith("Basic ") for a in files)
    written = "".join(p.read_text() for p in folder.iterdir() if not p.name.endswith(".whl"))
    assert secret not in written + done.stdout + done.stderr
    assert "team:" not in written
    # a notebook cell: the line is rewritten in place (\r, read back as \n here: text mode),
    # then the summary
    lines = [line for line in done.stderr.splitlines() if line]
    assert lines[0].startswith("colabenv: bundle: 0/7 files, ") and "/s, " in lines[0]
    assert lines[-1].startswith("colabenv: bundle: 7 files (7 downloaded, 0 already there)")
    assert all(line.endswith("\x1b[K") for line in lines)


def _env(extra: dict[str, str]) -> dict[str, str]:
    from tests.support.isolation import clean_env

    return clean_env(UV_HTTP_RETRIES="0", PIP_RETRIES="0", **extra)


def test_the_fill_with_the_index_stopped_names_the_index_and_installs_nothing(
    tmp_path: Path, made: Made, index: LocalIndex, request: pytest.FixtureRequest
) -> None:
    index.stop()
    host = _host(tmp_path, request, "uv")
    done = host.run(made.cache_script, UV_HTTP_RETRIES="0")
    assert done.returncode == 1
    assert f"the package index at 127.0.0.1:{made.port} cannot list certifi" in done.stderr
    assert host.installed() == {}


def test_a_file_the_index_sends_with_another_hash_is_not_added_to_the_cache(
    tmp_path: Path, standin_wheels: Standins, request: pytest.FixtureRequest
) -> None:
    cache = tmp_path / "cache"
    own = _own_index(tmp_path, standin_wheels)
    try:
        script = _cache_script(tmp_path, own, cache)
        six = next((tmp_path / "index").rglob("six-*.whl"))
        six.write_bytes(six.read_bytes() + b"tampered")
        host = _host(tmp_path, request, "uv")
        done = host.run(script)
    finally:
        own.stop()
    assert done.returncode == 1
    assert f"refused, nothing installed: {six.name}: the index sent a file with sha256" in done.stderr
    assert host.installed() == {}
    assert not (cache / six.name).exists()
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]


def test_a_relative_wheelhouse_is_refused(tmp_path: Path, made: Made) -> None:
    done = colabenv("render", made.profile, "--lock", made.lock, "--wheelhouse", "wheels", *T4)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        'colabenv: --wheelhouse: "wheels" is not an absolute path (it does not start with /); '
        "name the folder as the host the script runs on sees it\n"
    )


def test_bundle_takes_the_compiled_wheel_of_the_locks_python_and_installs_it_offline(
    tmp_path: Path, standin_wheels: Standins, request: pytest.FixtureRequest
) -> None:
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    root = tmp_path / "index"
    shutil.copytree(standin_wheels.default, root)
    for tag in (f"{py}-{py}-manylinux_2_17_x86_64", "cp310-cp310-manylinux_2_17_x86_64", "py3-none-any"):
        build_wheel(root / "native", "nativepkg", "1.0", tag=tag)
    with LocalIndex(root) as own:
        REQUIREMENTS.append("nativepkg")
        try:
            profile = _profile(tmp_path, own)
        finally:
            REQUIREMENTS.remove("nativepkg")
        lock = _lock(tmp_path, profile)
        pin = lock.read_text().split("nativepkg==1.0")[1].split("\n\n")[0].split("==")[0]
        assert pin.count("--hash=sha256:") >= 2  # the compiled wheel and the pure one both fit
        folder = tmp_path / "wheels"
        assert _bundle(lock, folder)[0] == 0
    assert sorted(p.name for p in folder.glob("nativepkg-*")) == [
        f"nativepkg-1.0-{py}-{py}-manylinux_2_17_x86_64.whl"
    ]
    script = tmp_path / "setup.sh"
    render(profile, script, "--lock", str(lock), "--wheelhouse", str(folder))
    host = _host(tmp_path, request, "uv")
    done = host.run(script)
    assert done.returncode == 0, done.stdout + done.stderr
    assert host.installed()["nativepkg"] == "1.0"


# ---------------------------------------------------------------------------------------------
# issue 35: only the locked files reach the installer; a script killed mid-fill leaves nothing


def _evil_six(folder: Path) -> Path:
    """A wheel of ``six==1.17.0+evil`` beside the locked six: ``==1.17.0`` matches it (a local
    version), and an installer given the folder prefers it."""
    return build_wheel(folder, "six", "1.17.0+evil", tag="py2.py3-none-any")


@pytest.mark.parametrize("cache", [False, True], ids=["offline", "cache"])
def test_a_wheel_beside_the_locked_one_is_never_offered_to_the_installer(
    cache: bool, tmp_path: Path, made: Made, index: LocalIndex, request: pytest.FixtureRequest
) -> None:
    if cache:
        folder, script = made.cache, made.cache_script
        assert _bundle(made.cache_lock, folder)[0] == 0
    else:
        folder, script = tmp_path / "wheels", tmp_path / "setup.sh"
        assert _bundle(made.lock, folder)[0] == 0
        render(made.profile, script, "--lock", str(made.lock), "--wheelhouse", str(folder))
    evil = _evil_six(folder)
    assert evil.name == "six-1.17.0+evil-py2.py3-none-any.whl"
    host = _host(tmp_path, request, "uv")
    done = host.run(script, UV_HTTP_RETRIES="0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert host.installed()["six"] == "1.17.0"
    assert evil.exists()


def _fill_running() -> list[int]:
    from tests.support.proctree import live_processes

    return [pid for pid, (_, _, command) in live_processes().items() if "wheelhouse.py fill" in command]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_script_killed_mid_fill_stops_its_download_and_a_later_run_leaves_no_part_file(
    signum: int, tmp_path: Path, standin_wheels: Standins, request: pytest.FixtureRequest
) -> None:
    from tests.support.proctree import wait_until

    root = tmp_path / "index"
    shutil.copytree(standin_wheels.default, root)
    build_wheel(root / "big", "bigpkg", "1.0", payload_bytes=BIG)
    cache = tmp_path / "cache"
    with LocalIndex(root) as index, ThrottledProxy(index.base_url, 1 << 20) as proxy:
        REQUIREMENTS.append("bigpkg")
        try:
            script = _cache_script(tmp_path, f"{proxy.base_url}/simple/", cache)
        finally:
            REQUIREMENTS.remove("bigpkg")
        host = _host(tmp_path, request, "uv", "killed")
        run = subprocess.Popen(
            ["bash", str(script)], env=host.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            wait_until(
                lambda: any("bigpkg" in p.name and p.stat().st_size > 0 for p in _listing(cache)),
                120,
                "a download",
            )
            assert _fill_running()
            run.send_signal(signum)  # the script alone, as a notebook's interrupt of bash would
            run.wait(timeout=30)
            time.sleep(3)
            assert _fill_running() == []
        finally:
            for pid in _fill_running():
                os.kill(pid, signal.SIGKILL)
        # the fill saw the script go (its answer's pipe closed) and removed its own part file
        assert not [p.name for p in _listing(cache) if p.name.endswith(".part")]
        later = _host(tmp_path, request, "uv", "later")
        done = later.run(script)
        assert done.returncode == 0, done.stdout + done.stderr
        assert later.installed()["bigpkg"] == "1.0"
        assert not [p.name for p in cache.iterdir() if p.name.startswith(".")]
