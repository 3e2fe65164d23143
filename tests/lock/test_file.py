"""The lock format: writing, reading back strictly, refusing malformed locks, staleness and
completeness; pure helpers of colabenv.lock.make."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest
from packaging.pylock import Pylock
from packaging.tags import Tag
from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv._util import processes, toml
from colabenv.errors import IndexUnavailableError, InputError, LockError
from colabenv.lock.content import Lock, LockedFile, LockedPackage, LockHeader, LockTarget
from colabenv.lock.file import parse_lock, read_lock, render_lock
from colabenv.lock.fit import current_target, settled_markers, stale_reasons, unmet_requirements
from colabenv.lock.make import target_tags
from colabenv.lock.requirements import lock_lines, parse_requirements
from colabenv.lock.resolvers import IndexPlan, _resolver_failure, resolver_env, uv_python_platform
from colabenv.lock.wheel_tags import LOCK_GLIBC_MINOR, platform_tags
from colabenv.models import (
    ComputeCapability,
    CpuTarget,
    Framework,
    LockedFramework,
    NvidiaTarget,
    Profile,
    Target,
    TargetOverrides,
)
from colabenv.profile.load import load_profile


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


WHEELS = {
    "numpy": "numpy-2.0.2-py3-none-any.whl",
    "torch-a": "torch-2.6.0+cu124-cp312-cp312-linux_x86_64.whl",
    "torch-b": "torch-2.6.0+cu124-cp312-cp312-manylinux_2_28_x86_64.whl",
    "cudnn": "nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux_2_27_x86_64.whl",
}


def _lock(name: str = "team-gpu", *, files: bool = False, constraints: tuple[str, ...] = ()) -> Lock:
    def file(label: str) -> LockedFile:
        if not files:
            return LockedFile(_sha(label))
        return LockedFile(_sha(label), WHEELS[label], f"https://files.example/{WHEELS[label]}")

    packages = (
        LockedPackage(canonicalize_name("numpy"), "2.0.2", (file("numpy"),)),
        LockedPackage(
            canonicalize_name("torch"),
            "2.6.0+cu124",
            (file("torch-a"), file("torch-b")),
            index="https://mirror.example/whl/cu124" if files else None,
        ),
        LockedPackage(
            canonicalize_name("nvidia-cudnn-cu12"),
            "9.1.0.70",
            (file("cudnn"),),
            marker='platform_machine == "x86_64"',
        ),
    )
    header = LockHeader(
        colabenv_version="0.1.0",
        profile_name=name,
        profile_hash="sha256:" + _sha("profile"),
        target=LockTarget("550.54.15", "525.60.13", "12.4", ("7.5", "8.0"), "3.12", "linux_x86_64"),
        frameworks=(
            LockedFramework(Framework.TORCH, "2.6.0", "cu124", "https://mirror.example/whl/cu124"),
            LockedFramework(Framework.JAX, "0.5.3", "cuda12", None),
        ),
        resolver="uv 0.8.0",
        constraints=constraints,
    )
    return Lock(
        header,
        packages,
        "https://${USER}:${TOKEN}@pypi.example/simple",
        ("https://mirror.example/whl/cu124",),
    )


def test_requirements_format_round_trip(tmp_path: Path) -> None:
    lock = _lock(constraints=("nvidia-cudnn-cu12<9.11",))
    text = render_lock(lock)
    assert "# lock-schema: 2\n" in text
    assert "# profile-hash: sha256:" in text
    assert "# target-requires-driver: 525.60.13" in text
    assert "# target-compute-capabilities: 7.5,8.0" in text
    assert "# framework: torch 2.6.0 variant=cu124 index=https://mirror.example/whl/cu124" in text
    assert "# framework: jax 0.5.3 variant=cuda12 index=default" in text
    assert "# constraint: nvidia-cudnn-cu12<9.11\n" in text
    assert f"# pins-sha256: {lock.pins_digest}\n" in text
    assert "--index-url https://${USER}:${TOKEN}@pypi.example/simple\n" in text
    assert f"torch==2.6.0+cu124 \\\n    --hash=sha256:{_sha('torch-a')} \\\n" in text
    path = tmp_path / "team.lock"
    path.write_text(text)
    again = read_lock(path)
    assert again == lock
    assert again.path == path
    assert again.pins == (("numpy", "2.0.2"), ("torch", "2.6.0+cu124"), ("nvidia-cudnn-cu12", "9.1.0.70"))
    assert again.index_urls == (
        "https://${USER}:${TOKEN}@pypi.example/simple",
        "https://mirror.example/whl/cu124",
    )
    assert again.requirement_lines[1] == (
        f"torch==2.6.0+cu124 --hash=sha256:{_sha('torch-a')} --hash=sha256:{_sha('torch-b')}"
    )
    assert again.requirement_lines[2].startswith(
        'nvidia-cudnn-cu12==9.1.0.70 ; platform_machine == "x86_64" --hash='
    )
    assert render_lock(again) == text


def test_pylock_round_trip_is_valid_pep_751(tmp_path: Path) -> None:
    lock = _lock(files=True, constraints=("nvidia-cudnn-cu12<9.11",))
    text = render_lock(lock, pylock=True)
    document = toml.loads(text)
    Pylock.from_dict(document)
    assert document["lock-version"] == "1.0"
    assert document["created-by"] == "colabenv"
    assert document["requires-python"] == "==3.12.*"
    torch = document["packages"][1]
    assert torch["name"] == "torch" and torch["version"] == "2.6.0+cu124"
    assert torch["index"] == "https://mirror.example/whl/cu124"
    assert torch["wheels"][0] == {
        "name": WHEELS["torch-a"],
        "url": f"https://files.example/{WHEELS['torch-a']}",
        "hashes": {"sha256": _sha("torch-a")},
    }
    assert "wheels = [\n" in text and "[[packages.wheels]]" not in text
    tool = document["tool"]["colabenv"]
    assert tool["target"]["compute-capabilities"] == ["7.5", "8.0"]
    assert tool["constraints"] == ["nvidia-cudnn-cu12<9.11"]
    assert tool["pins-sha256"] == lock.pins_digest
    path = tmp_path / "pylock.toml"
    path.write_text(text)
    again = read_lock(path)
    assert again.header == lock.header
    assert again.pins == lock.pins
    assert again.index_urls == lock.index_urls
    assert again.packages[2].marker == 'platform_machine == "x86_64"'
    assert again.pins_digest == lock.pins_digest


UPLOADED = datetime(2024, 6, 25, 18, 36, 7, 123456, tzinfo=timezone.utc)


def _sized(lock: Lock) -> Lock:
    """``lock`` with a size and an upload time on every file but numpy's (as a page that gives
    them for some files only)."""
    packages = tuple(
        dataclasses.replace(
            package,
            files=tuple(
                f if package.name == "numpy" else dataclasses.replace(f, size=1000 + i, upload_time=UPLOADED)
                for i, f in enumerate(package.files)
            ),
        )
        for package in lock.packages
    )
    return dataclasses.replace(lock, packages=packages)


def test_pylock_keeps_each_files_size_and_upload_time(tmp_path: Path) -> None:
    lock = _sized(_lock(files=True))
    text = render_lock(lock, pylock=True)
    document = toml.loads(text)
    torch = document["packages"][1]["wheels"]
    assert torch[0]["size"] == 1000 and torch[1]["size"] == 1001
    assert torch[0]["upload-time"] == UPLOADED  # a TOML date-time, not a string
    assert "upload-time = 2024-06-25T18:36:07.123456Z" in text
    assert "size" not in document["packages"][0]["wheels"][0]
    path = tmp_path / "pylock.toml"
    path.write_text(text)
    again = read_lock(path)
    assert again.packages == lock.packages
    assert render_lock(again, pylock=True) == text
    assert again.pins_digest == _lock(files=True).pins_digest
    assert render_lock(lock) == render_lock(_lock(files=True))  # the requirements form: unchanged


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("size = 1000", "size = -1", r"packages\[1\]: torch: torch-2.6.0\+cu124-.*: size: expected"),
        ("size = 1000", f"size = {2**41}", "size: expected"),
        ("size = 1000", "size = true", "size"),
        ("size = 1000", 'size = "1000"', "size"),
        ("2024-06-25T18:36:07.123456Z", "2024-06-25T18:36:07.123456", "upload-time: expected"),
        ("2024-06-25T18:36:07.123456Z", '"2024-06-25T18:36:07Z"', "upload-time"),
    ],
)
def test_a_malformed_size_or_upload_time_in_a_pylock_is_refused(old: str, new: str, message: str) -> None:
    text = render_lock(_sized(_lock(files=True)), pylock=True)
    assert old in text, old
    with pytest.raises(LockError, match=message) as error:
        parse_lock(text.replace(old, new, 1), Path("pylock.toml"))
    assert str(error.value).startswith("pylock.toml: ") and "\n" not in str(error.value)


def test_pylock_keeps_any_character_of_a_profile_name() -> None:
    """No surrogate pairs: a non-BMP character is itself in the file and reads back."""
    name = 'team 😀 é \x7f\n"q"'
    text = render_lock(_lock(name, files=True), pylock=True)
    assert "\\ud83d" not in text
    assert parse_lock(text, Path("pylock.toml")).header.profile_name == name


def test_cpu_target_in_pylock_has_no_driver_keys() -> None:
    lock = _lock(files=True)
    cpu = LockTarget(None, None, None, (), "3.11", "linux_x86_64")
    cpu_lock = Lock(LockHeader("0.1.0", "p", "sha256:" + _sha("p"), cpu, (), "uv"), lock.packages)
    document = toml.loads(render_lock(cpu_lock, pylock=True))
    assert document["tool"]["colabenv"]["target"] == {
        "compute-capabilities": [],
        "python": "3.11",
        "platform": "linux_x86_64",
        "accelerator": "cpu",
    }
    assert parse_lock(render_lock(cpu_lock, pylock=True), Path("pylock.toml")).header.target == cpu


def test_pylock_needs_file_names() -> None:
    with pytest.raises(LockError, match="no file name and URL"):
        render_lock(_lock(files=False), pylock=True)


def test_hostile_profile_name_stays_on_one_header_line() -> None:
    name = 'x"\n--index-url https://evil.example/simple $(touch /tmp/p) é'
    lock = _lock(name)
    text = render_lock(lock)
    assert "evil.example/simple\n" not in text
    assert sum(1 for line in text.splitlines() if line.startswith("--index-url")) == 1
    assert parse_lock(text).header.profile_name == name


def test_index_url_with_whitespace_is_refused() -> None:
    lock = _lock()
    bad = Lock(lock.header, lock.packages, "https://a.example/simple\n--trusted-host x", ())
    with pytest.raises(LockError, match="cannot be written"):
        list(lock_lines(bad))


def _first_pin_end(text: str) -> int:
    start = text.index("\nnumpy==")
    return text.index("\n", text.index("--hash", start)) + 1


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda t: t.replace("numpy==2.0.2", "numpy>=2.0.2"), r"line \d+: .*not pinned with =="),
        (lambda t: t.replace("numpy==2.0.2", "numpy @ https://x.example/n.whl"), "not pinned with =="),
        (lambda t: t.replace("# profile-hash:", "# profile-hsh:"), "unknown header key"),
        (
            lambda t: t.replace("# resolver:", "# profile-hash: sha256:" + "0" * 64 + "\n# resolver:"),
            "profile-hash given twice",
        ),
        (lambda t: t.replace("# lock-schema: 2", "# lock-schema: 7"), "upgrade colabenv"),
        (
            lambda t: t.replace("# lock-schema: 2", "# lock-schema: " + "9" * 5000),
            "lock-schema: .* is not a schema number",
        ),
        (
            lambda t: t.replace("# target-driver: 550.54.15", "# target-driver: " + "5" * 5000),
            "target-driver: .* is not a driver value",
        ),
        (lambda t: t.replace("# target-python: 3.12", "# target-python: 3.12 --x"), "target-python"),
        (
            lambda t: t.replace(
                "# target-compute-capabilities: 7.5,8.0", "# target-compute-capabilities: 7.5,99.999"
            ),
            "compute-capabilities",
        ),
        (lambda t: t.replace("# profile-hash: sha256:", "# profile-hash: md5:"), "profile-hash"),
        (lambda t: t.replace("variant=cu124", "variant=cu124 index=x extra"), "framework"),
        (lambda t: t.replace("# framework: jax", "# framework: keras"), "not a framework"),
        (
            lambda t: t.replace("# resolver:", "# constraint: nvidia-cudnn-cu12<<9\n# resolver:"),
            "constraint: .* is not a requirement",
        ),
        (lambda t: t.replace("sha256:" + _sha("numpy"), "md5:abc"), "numpy has no sha256 hash"),
        (lambda t: t.replace("--hash=sha256:" + _sha("numpy"), "--hash=sha256:zz"), "not a sha256 hash"),
        (lambda t: t + "numpy==2.0.2 --hash=sha256:" + _sha("x") + "\n", "pinned twice"),
        (lambda t: t.replace("numpy==2.0.2", "numpy==" + "1" * 5000), "is not a version"),
        (lambda t: t.replace("numpy==2.0.2", "numpy==2.0.*"), "not pinned with =="),
        (lambda t: t + "--trusted-host evil.example\n", "unexpected option '--trusted-host'"),
        (lambda t: t + "-e .\n", "unexpected option '-e'"),
        (lambda t: t + "--index-url https://second.example/simple\n", "a second --index-url"),
        (lambda t: t[: _first_pin_end(t)], "pins-sha256"),
        (lambda t: t.replace("numpy==2.0.2", "numpy==2.0.3"), "truncated or edited"),
        (
            lambda t: "\n".join(line for line in t.splitlines() if not line.startswith("# pins-sha256")),
            "pins-sha256",
        ),
    ],
)
def test_malformed_locks_are_refused(mutate: Callable[[str], str], message: str) -> None:
    text = render_lock(_lock())
    with pytest.raises(LockError, match=message):
        parse_lock(mutate(text), Path("team.lock"))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            'version = "2.0.2"',
            'version = "2.0.2\\n--index-url https://evil.example/simple"',
            r"packages\[0\]\.version",
        ),
        ('name = "numpy"', 'name = "Not Normal"', r"packages\[0\]\.name"),
        ("lock-schema = 2", "lock-schema = " + "9" * 5000, "not valid TOML"),
        ("lock-schema = 2", "lock-schema = 3", "lock-schema"),
        ('python = "3.12"', 'python = "three"', r"tool\.colabenv\.target\.python"),
        ('driver = "550.54.15"', "driver = 550", r"tool\.colabenv\.target\.driver"),
        ('lock-version = "1.0"', 'lock-version = "2.0"', "lock-version"),
        ('profile-hash = "sha256:', 'profile-hash = "sha1:', "profile-hash"),
        ('framework = "jax"', 'framework = "keras"', r"frameworks\[1\]: .*not a framework"),
        ('hashes = {sha256 = "', 'hashes = {md5 = "', "sha256"),
        ('"nvidia-cudnn-cu12<9.11"', '"nvidia-cudnn-cu12<<9"', "constraints"),
        (_sha("numpy"), _sha("other"), "truncated or edited"),
    ],
)
def test_malformed_pylocks_are_refused(old: str, new: str, message: str) -> None:
    text = render_lock(_lock(files=True, constraints=("nvidia-cudnn-cu12<9.11",)), pylock=True)
    assert old in text, old
    with pytest.raises(LockError, match=message) as error:
        parse_lock(text.replace(old, new, 1), Path("pylock.toml"))
    assert "\n" not in str(error.value)


def test_schema_1_locks_are_still_read() -> None:
    text = render_lock(_lock()).replace("# lock-schema: 2", "# lock-schema: 1")
    old = "\n".join(line for line in text.splitlines() if not line.startswith("# pins-sha256"))
    lock = parse_lock(old + "\n", Path("old.lock"))
    assert lock.header.schema == 1 and lock.pins == _lock().pins
    with pytest.raises(LockError, match="schema 1"):
        parse_lock(text, Path("old.lock"))


def test_read_lock_is_bounded(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing\.lock: lockfile: no such file"):
        read_lock(tmp_path / "missing.lock")
    binary = tmp_path / "binary.lock"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(LockError, match="not a text file"):
        read_lock(binary)
    fifo = tmp_path / "pipe.lock"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(InputError, match="a FIFO"):
        read_lock(fifo)
    with pytest.raises(InputError, match="character device"):
        read_lock(Path("/dev/zero"))
    assert time.monotonic() - started < 5
    with pytest.raises(InputError, match="directory"):
        read_lock(tmp_path)


def test_parse_resolver_output_with_extras_and_annotations() -> None:
    text = (
        f"jax[cuda12]==0.5.3 \\\n    --hash=sha256:{_sha('jax')}\n"
        "    # via -r -\n"
        f"Typing_Extensions==4.14.1 \\\n    --hash=sha256:{_sha('te1')} \\\n"
        f"    --hash=sha256:{_sha('te2')}\n"
    )
    packages, index_url, extra, links = parse_requirements(text)
    assert [(p.name, p.version) for p in packages] == [("jax", "0.5.3"), ("typing-extensions", "4.14.1")]
    assert len(packages[1].files) == 2
    assert index_url is None and extra == () and links == ()
    with pytest.raises(LockError, match="unexpected option '--no-index'"):
        parse_requirements("--no-index\n" + text)


def test_target_differences_and_overrides() -> None:
    recorded = _lock().header.target
    same = current_target(recorded, TargetOverrides())
    assert recorded.differences(same) == []
    newer = current_target(recorded, TargetOverrides(python=Version("3.11"), driver=Version("550.54.15")))
    assert recorded.differences(newer) == ["Python 3.12 in the lock, 3.11 now"]
    cpu = current_target(recorded, TargetOverrides(cpu=True))
    assert "driver 550.54.15 in the lock, none now" in recorded.differences(cpu)
    caps = current_target(recorded, TargetOverrides(compute_capabilities=(ComputeCapability(6, 0),)))
    assert recorded.differences(caps) == ["compute capabilities 7.5,8.0 in the lock, 6.0 now"]


def test_lock_target_from_target_and_back() -> None:
    target = Target(
        NvidiaTarget(
            Version("550.54.15"), Version("12.4"), (ComputeCapability(8, 0), ComputeCapability(7, 5))
        ),
        Version("3.12"),
    )
    recorded = LockTarget.from_target(target, Version("525.60.13"))
    assert recorded == LockTarget("550.54.15", "525.60.13", "12.4", ("7.5", "8.0"), "3.12", "linux_x86_64")
    back = recorded.to_target()
    assert back.driver == target.driver and back.cuda == target.cuda
    assert set(back.compute_capabilities) == set(target.compute_capabilities)
    cpu = LockTarget.from_target(Target(CpuTarget(), Version("3.11")), None)
    assert "# target-driver: none" in render_lock(
        Lock(LockHeader("0.1.0", "p", "sha256:" + _sha("p"), cpu, (), "uv"), _lock().packages)
    )
    assert cpu.to_target().device == CpuTarget()


PROFILE = """\
schema = 1
name = "team-gpu"
description = "t"

[frameworks]
torch = {{ version = ">=2.5,<2.7", torchvision = ">=0.21" }}
jax = ">=0.5"

[packages]
requirements = [{requirements}]
"""


def _profile(tmp_path: Path, requirements: str = '"requests>=2"') -> Profile:
    path = tmp_path / "team.toml"
    path.write_text(PROFILE.format(requirements=requirements))
    return load_profile(path)


def _whole(profile: Profile, drop: tuple[str, ...] = (), **versions: str) -> Lock:
    lock = _lock()
    pins = {
        "numpy": "2.0.2",
        "torch": "2.6.0+cu124",
        "torchvision": "0.21.0+cu124",
        "jax": "0.5.3",
        "jaxlib": "0.5.3",
        "requests": "2.32.4",
        **versions,
    }
    packages = tuple(
        LockedPackage(canonicalize_name(n), v, (LockedFile(_sha(n)),))
        for n, v in pins.items()
        if n not in drop
    )
    header = LockHeader(
        "0.1.0", profile.name, profile.content_hash, lock.header.target, lock.header.frameworks, "uv"
    )
    return Lock(header, packages)


def test_unmet_requirements_name_what_is_missing(tmp_path: Path) -> None:
    profile = _profile(tmp_path, '"requests>=2", "six ; python_version < \'3\'"')
    assert unmet_requirements(_whole(profile), profile) == []
    assert unmet_requirements(_whole(profile, ("requests",)), profile) == ["requests>=2 is not pinned"]
    assert unmet_requirements(_whole(profile, requests="1.0"), profile) == ["requests>=2 is pinned at 1.0"]
    unmet = unmet_requirements(_whole(profile, ("torchvision", "jaxlib", "torch")), profile)
    assert unmet == [
        "torch==2.6.0 is not pinned",
        "torchvision>=0.21 (frameworks.torch) is not pinned",
        "jaxlib (frameworks.jax) is not pinned",
    ]
    assert unmet_requirements(_whole(profile, torchvision="0.20.0"), profile) == [
        "torchvision>=0.21 (frameworks.torch) is pinned at 0.20.0"
    ]


def test_stale_reasons_compare_constraints(tmp_path: Path) -> None:
    profile = _profile(tmp_path)
    lock = _whole(profile)
    target = lock.header.target
    assert stale_reasons(lock, profile, target) == []
    assert stale_reasons(lock, profile, target, ()) == []
    assert stale_reasons(lock, profile, target, ["nvidia-cudnn-cu12 < 9.11"]) == [
        "component constraints: none in the lock, nvidia-cudnn-cu12<9.11 now"
    ]


def test_target_tags() -> None:
    tags = target_tags(Target(CpuTarget(), Version("3.11")))
    assert Tag("cp311", "cp311", "manylinux_2_28_x86_64") in tags
    assert Tag("cp311", "cp311", "manylinux2014_x86_64") in tags
    assert Tag("cp311", "cp311", "linux_x86_64") in tags
    assert Tag("py3", "none", "any") in tags
    assert Tag("cp39", "abi3", "manylinux_2_17_x86_64") in tags
    assert Tag("cp312", "cp312", "manylinux_2_28_x86_64") not in tags
    assert Tag("cp311", "cp311", "manylinux_2_34_x86_64") not in tags
    assert Tag("cp311", "cp311", "manylinux_2_28_aarch64") not in tags
    assert "manylinux_2_28_aarch64" in platform_tags("linux_aarch64", LOCK_GLIBC_MINOR)
    assert uv_python_platform("linux_x86_64") == "x86_64-manylinux_2_28"
    with pytest.raises(LockError):
        uv_python_platform("win_amd64")


def _failed(stderr: str, returncode: int = 2) -> processes.Completed:
    return processes.Completed(("uv",), returncode, "", stderr, False)


def test_resolver_failure_is_redacted_and_escaped() -> None:
    error = _resolver_failure(
        "uv 0.13.9",
        _failed("error: Failed to fetch `https://x/tok-secret/` \x1b[31m"),
        IndexPlan(None, ()),
        {},
        lambda text: text.replace("tok-secret", "${TOKEN}"),
        2048,
        lambda: None,
    )
    assert "tok-secret" not in str(error) and "\x1b" not in str(error)
    assert getattr(error, "exit_code", None) == 4


def _diagnosis_finds(index: str) -> Callable[[], None]:
    def diagnose() -> None:
        raise IndexUnavailableError(f"index at {index}foo/ answered more than 64 MiB for one page; refused")

    return diagnose


@pytest.mark.parametrize(
    ("stderr", "returncode", "expected"),
    [
        # uv names the page: the index is named from it, no diagnosis needed
        (
            "error: Received some unexpected JSON from `https://i.example/simple/foo/`\n  cause: EOF",
            1,
            "index https://i.example/simple/: uv could not read it: error: Received some unexpected JSON",
        ),
        (
            "error: Request failed after 1 retry in 5.0s\n  cause: Failed to fetch: "
            "https://i.example/simple/foo/\n  cause: operation timed out",
            2,
            "index https://i.example/simple/: uv could not read it: error: Request failed",
        ),
        # killed at its memory bound, nothing named: the diagnosis names the page
        ("memory allocation of 417792 bytes failed", 134, "index at https://i.example/simple/foo/ answered"),
        # "no set of pins" after reading a page the diagnosis refuses (a million links)
        (
            "error: Failed to download and build `foo==0.999.999`\n  cause: Invalid gzip header",
            1,
            "index at https://i.example/simple/foo/ answered",
        ),
    ],
)
def test_resolver_failure_names_the_index(stderr: str, returncode: int, expected: str) -> None:
    index = "https://i.example/simple/"
    error: Exception
    try:
        error = _resolver_failure(
            "uv 0.13.9",
            _failed(stderr, returncode),
            IndexPlan(index, ()),
            {},
            str,
            2048,
            _diagnosis_finds(index),
        )
    except IndexUnavailableError as raised:
        error = raised
    assert isinstance(error, IndexUnavailableError) and error.exit_code == 4
    assert str(error).startswith(expected), str(error)
    assert "\n" not in str(error)


def test_a_plain_resolver_failure_stays_exit_3_when_every_page_reads() -> None:
    error = _resolver_failure(
        "uv 0.13.9",
        _failed("  x No solution found when resolving dependencies:\n  because foo>9 was not found"),
        IndexPlan("https://i.example/simple/", ()),
        {},
        str,
        2048,
        lambda: None,
    )
    assert getattr(error, "exit_code", None) == 3 and "found no set of pins" in str(error)


def test_resolver_env_drops_index_settings() -> None:
    env = resolver_env(
        {
            "PIP_FIND_LINKS": "/x",
            "PIP_INDEX_URL": "https://x",
            "UV_INDEX": "y",
            "UV_CACHE_DIR": "/c",
            "PIP_CERT": "/ca",
            "HOME": "/h",
        }
    )
    assert "PIP_FIND_LINKS" not in env and "PIP_INDEX_URL" not in env and "UV_INDEX" not in env
    assert env["UV_CACHE_DIR"] == "/c" and env["PIP_CERT"] == "/ca" and env["HOME"] == "/h"
    assert env["UV_NO_CONFIG"] == "1"


def test_markers_are_settled_for_the_one_target() -> None:
    """uv writes the markers of the edges it followed, pip-tools none: for the lock's target a
    true marker goes, a package whose marker is false there goes, one that cannot be decided
    stays as written."""

    def file(label: str) -> LockedFile:
        return LockedFile(_sha(label))

    on_x86 = 'platform_machine == "x86_64" and sys_platform == "linux"'
    packages = [
        LockedPackage(
            canonicalize_name("nvidia-cublas-cu12"), "12.4.5.8", (file("nvidia-cublas-cu12"),), on_x86
        ),
        LockedPackage(canonicalize_name("colorama"), "0.4.6", (file("colorama"),), 'sys_platform == "win32"'),
        LockedPackage(canonicalize_name("tomli"), "2.2.1", (file("tomli"),), 'python_version < "3.11"'),
        LockedPackage(canonicalize_name("numpy"), "2.0.2", (file("numpy"),)),
        LockedPackage(canonicalize_name("odd"), "1.0", (file("odd"),), 'platform_release >= "5"'),
    ]
    target = LockTarget("550.54.15", "525.60.13", "12.4", ("7.5",), "3.12", "linux_x86_64")
    settled = settled_markers(packages, target.marker_environment())
    assert [(p.name, p.marker) for p in settled] == [
        ("nvidia-cublas-cu12", None),
        ("numpy", None),
        ("odd", 'platform_release >= "5"'),
    ]
    arm = LockTarget(None, None, None, (), "3.10", "linux_aarch64")
    assert [p.name for p in settled_markers(packages, arm.marker_environment())] == ["tomli", "numpy", "odd"]
