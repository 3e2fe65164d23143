"""The lock format: writing, reading back, refusing malformed locks; pure helpers of lock.py."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from packaging.tags import Tag
from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv import _toml
from colabenv.errors import LockError, UsageError
from colabenv.lock import (
    _Redactor,
    _resolver_failure,
    current_target,
    expand_url,
    parse_project_page,
    resolver_env,
    target_platforms,
    target_tags,
    uv_python_platform,
)
from colabenv.lockfile import (
    Lock,
    LockedFile,
    LockedFramework,
    LockedPackage,
    LockHeader,
    LockTarget,
    lock_lines,
    parse_lock,
    parse_requirements,
    read_lock,
    render_lock,
)
from colabenv.models import ComputeCapability, Target, TargetOverrides


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _lock(name: str = "team-gpu", *, files: bool = False) -> Lock:
    def file(label: str) -> LockedFile:
        if not files:
            return LockedFile(_sha(label))
        return LockedFile(_sha(label), f"{label}-py3-none-any.whl",
                          f"https://files.example/{label}-py3-none-any.whl")

    packages = (
        LockedPackage(canonicalize_name("numpy"), "2.0.2", (file("numpy"),)),
        LockedPackage(canonicalize_name("torch"), "2.6.0+cu124", (file("torch-a"), file("torch-b")),
                      index="https://mirror.example/whl/cu124" if files else None),
        LockedPackage(canonicalize_name("nvidia-cudnn-cu12"), "9.1.0.70", (file("cudnn"),),
                      marker='platform_machine == "x86_64"'),
    )
    header = LockHeader(
        colabenv_version="0.1.0",
        profile_name=name,
        profile_hash="sha256:" + _sha("profile"),
        target=LockTarget("550.54.15", "525.60.13", "12.4", ("7.5", "8.0"), "3.12",
                          "linux_x86_64"),
        frameworks=(LockedFramework("torch", "2.6.0", "cu124",
                                    "https://mirror.example/whl/cu124"),
                    LockedFramework("jax", "0.5.3", "cuda12", None)),
        resolver="uv 0.8.0",
    )
    return Lock(header, packages, "https://${USER}:${TOKEN}@pypi.example/simple",
                ("https://mirror.example/whl/cu124",))


def test_requirements_format_round_trip(tmp_path: Path) -> None:
    lock = _lock()
    text = render_lock(lock)
    assert "# profile-hash: sha256:" in text
    assert "# target-requires-driver: 525.60.13" in text
    assert "# target-compute-capabilities: 7.5,8.0" in text
    assert "# framework: torch 2.6.0 variant=cu124 index=https://mirror.example/whl/cu124" in text
    assert "# framework: jax 0.5.3 variant=cuda12 index=default" in text
    assert "--index-url https://${USER}:${TOKEN}@pypi.example/simple\n" in text
    assert f"torch==2.6.0+cu124 \\\n    --hash=sha256:{_sha('torch-a')} \\\n" in text
    path = tmp_path / "team.lock"
    path.write_text(text)
    again = read_lock(path)
    assert again == lock
    assert again.path == path
    assert again.pins == (("numpy", "2.0.2"), ("torch", "2.6.0+cu124"),
                          ("nvidia-cudnn-cu12", "9.1.0.70"))
    assert again.index_urls == ("https://${USER}:${TOKEN}@pypi.example/simple",
                                "https://mirror.example/whl/cu124")
    assert again.requirement_lines[1] == (
        f"torch==2.6.0+cu124 --hash=sha256:{_sha('torch-a')} --hash=sha256:{_sha('torch-b')}")
    assert again.requirement_lines[2].startswith(
        'nvidia-cudnn-cu12==9.1.0.70 ; platform_machine == "x86_64" --hash=')
    assert render_lock(again) == text


def test_pylock_round_trip(tmp_path: Path) -> None:
    lock = _lock(files=True)
    text = render_lock(lock, pylock=True)
    document = _toml.loads(text)
    assert document["lock-version"] == "1.0"
    assert document["created-by"] == "colabenv"
    assert document["requires-python"] == "==3.12.*"
    torch = document["packages"][1]
    assert torch["name"] == "torch" and torch["version"] == "2.6.0+cu124"
    assert torch["index"] == "https://mirror.example/whl/cu124"
    assert torch["wheels"][0] == {"name": "torch-a-py3-none-any.whl",
                                  "url": "https://files.example/torch-a-py3-none-any.whl",
                                  "hashes": {"sha256": _sha("torch-a")}}
    assert document["tool"]["colabenv"]["target"]["compute-capabilities"] == ["7.5", "8.0"]
    path = tmp_path / "pylock.toml"
    path.write_text(text)
    again = read_lock(path)
    assert again.header == lock.header
    assert again.pins == lock.pins
    assert again.index_urls == lock.index_urls
    assert again.packages[2].marker == 'platform_machine == "x86_64"'


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


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda t: t.replace("numpy==2.0.2", "numpy>=2.0.2"), r"line \d+: .*not pinned with =="),
        (lambda t: t.replace("# profile-hash:", "# profile-hsh:"), "no '# profile-hash:'"),
        (lambda t: t.replace("# lock-schema: 1", "# lock-schema: 7"), "upgrade colabenv"),
        (lambda t: t.replace("sha256:" + _sha("numpy"), "md5:abc"), "numpy has no sha256 hash"),
        (lambda t: t.replace("--hash=sha256:" + _sha("numpy"), "--hash=sha256:zz"),
         "not a sha256 hash"),
        (lambda t: t + "numpy==2.0.2 --hash=sha256:" + _sha("x") + "\n", "pinned twice"),
    ],
)
def test_malformed_locks_are_refused(mutate: object, message: str) -> None:
    text = render_lock(_lock())
    assert callable(mutate)
    with pytest.raises(LockError, match=message):
        parse_lock(mutate(text), Path("team.lock"))


def test_read_lock_errors(tmp_path: Path) -> None:
    with pytest.raises(LockError, match="no such lockfile"):
        read_lock(tmp_path / "missing.lock")
    binary = tmp_path / "binary.lock"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(LockError, match="not a text file"):
        read_lock(binary)


def test_parse_resolver_output_with_extras_and_annotations() -> None:
    text = (
        "--find-links /somewhere\n\n"
        f"jax[cuda12]==0.5.3 \\\n    --hash=sha256:{_sha('jax')}\n"
        "    # via -r -\n"
        f"Typing_Extensions==4.14.1 \\\n    --hash=sha256:{_sha('te1')} \\\n"
        f"    --hash=sha256:{_sha('te2')}\n"
    )
    packages, index_url, extra = parse_requirements(text)
    assert [(p.name, p.version) for p in packages] == [("jax", "0.5.3"),
                                                        ("typing-extensions", "4.14.1")]
    assert len(packages[1].files) == 2
    assert index_url is None and extra == ()


def test_target_differences_and_overrides() -> None:
    recorded = _lock().header.target
    same = current_target(recorded, TargetOverrides())
    assert recorded.differences(same) == []
    newer = current_target(recorded, TargetOverrides(python=Version("3.11"),
                                                     driver=Version("550.54.15")))
    assert recorded.differences(newer) == ["Python 3.12 in the lock, 3.11 now"]
    cpu = current_target(recorded, TargetOverrides(cpu=True))
    assert "driver 550.54.15 in the lock, none now" in recorded.differences(cpu)
    caps = current_target(recorded, TargetOverrides(
        compute_capabilities=(ComputeCapability(6, 0),)))
    assert recorded.differences(caps) == ["compute capabilities 7.5,8.0 in the lock, 6.0 now"]


def test_lock_target_from_target() -> None:
    target = Target(Version("550.54.15"), Version("12.4"),
                    (ComputeCapability(8, 0), ComputeCapability(7, 5)), Version("3.12"))
    recorded = LockTarget.from_target(target, Version("525.60.13"))
    assert recorded == LockTarget("550.54.15", "525.60.13", "12.4", ("7.5", "8.0"), "3.12",
                                  "linux_x86_64")
    cpu = LockTarget.from_target(Target(None, None, (), Version("3.11")), None)
    assert "# target-driver: none" in render_lock(Lock(
        LockHeader("0.1.0", "p", "sha256:1", cpu, (), "uv"), _lock().packages))


def test_project_page_parsing_html_and_json() -> None:
    digest = _sha("w")
    html = (f'<html><body><a href="../../files/torch-2.6.0%2Bcu124-cp312-cp312-linux_x86_64.whl'
            f'#sha256={digest}" data-requires-python="&gt;=3.9">torch-2.6.0+cu124-cp312-cp312-'
            f'linux_x86_64.whl</a><br/><a href="torch-2.6.0.tar.gz">torch-2.6.0.tar.gz</a>'
            f"</body></html>").encode()
    files = parse_project_page(html, "text/html", "https://i.example/whl/cu124/torch/")
    assert files[0].filename == "torch-2.6.0+cu124-cp312-cp312-linux_x86_64.whl"
    assert files[0].sha256 == digest
    assert files[0].url == ("https://i.example/whl/files/"
                            "torch-2.6.0%2Bcu124-cp312-cp312-linux_x86_64.whl")
    assert files[1].filename == "torch-2.6.0.tar.gz" and files[1].sha256 is None
    body = json.dumps({"meta": {"api-version": "1.1"}, "name": "jax", "files": [
        {"filename": "jax-0.5.3-py3-none-any.whl", "url": "/files/jax-0.5.3-py3-none-any.whl",
         "hashes": {"sha256": digest}}]}).encode()
    files = parse_project_page(body, "application/vnd.pypi.simple.v1+json",
                               "https://i.example/simple/jax/")
    assert files[0].url == "https://i.example/files/jax-0.5.3-py3-none-any.whl"
    assert files[0].sha256 == digest


def test_target_tags() -> None:
    tags = target_tags(Target(None, None, (), Version("3.11")))
    assert Tag("cp311", "cp311", "manylinux_2_28_x86_64") in tags
    assert Tag("cp311", "cp311", "manylinux2014_x86_64") in tags
    assert Tag("cp311", "cp311", "linux_x86_64") in tags
    assert Tag("py3", "none", "any") in tags
    assert Tag("cp39", "abi3", "manylinux_2_17_x86_64") in tags
    assert Tag("cp312", "cp312", "manylinux_2_28_x86_64") not in tags
    assert Tag("cp311", "cp311", "manylinux_2_34_x86_64") not in tags
    assert Tag("cp311", "cp311", "manylinux_2_28_aarch64") not in tags
    assert "manylinux_2_28_aarch64" in target_platforms("linux_aarch64")
    assert uv_python_platform("linux_x86_64") == "x86_64-manylinux_2_28"
    with pytest.raises(LockError):
        uv_python_platform("win_amd64")


def test_credentials_are_expanded_only_on_demand_and_redacted() -> None:
    environ = {"TOKEN": "s3cr3t-value", "USER": "me"}
    url = "https://${USER}:${TOKEN}@pypi.example/simple"
    assert expand_url(url, environ) == "https://me:s3cr3t-value@pypi.example/simple"
    with pytest.raises(UsageError, match=r"\$\{TOKEN\} is not set"):
        expand_url(url, {"USER": "me"})
    redact = _Redactor.for_urls([url], environ)
    message = "Failed to fetch: `https://me:s3cr3t-value@pypi.example/simple/numpy/` s3cr3t-value"
    assert "s3cr3t" not in redact(message)
    assert "${TOKEN}" in redact(message)
    error = _resolver_failure("uv", "error: " + message, redact)
    assert "s3cr3t" not in str(error)
    assert getattr(error, "exit_code", None) == 4


def test_resolver_env_drops_index_settings() -> None:
    env = resolver_env({"PIP_FIND_LINKS": "/x", "PIP_INDEX_URL": "https://x", "UV_INDEX": "y",
                        "UV_CACHE_DIR": "/c", "PIP_CERT": "/ca", "HOME": "/h"})
    assert "PIP_FIND_LINKS" not in env and "PIP_INDEX_URL" not in env and "UV_INDEX" not in env
    assert env["UV_CACHE_DIR"] == "/c" and env["PIP_CERT"] == "/ca" and env["HOME"] == "/h"
    assert env["UV_NO_CONFIG"] == "1"
