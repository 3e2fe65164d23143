"""The index check of ``render`` and ``resolve`` against a real index on 127.0.0.1: the catalog
proposes, the index disposes. A build whose file the index lacks is passed over, an unconfirmed
one it serves is taken; an index that cannot be read is a note; answers are cached; ``--offline``,
``COLABENV_OFFLINE`` and ``[catalog] check_index = false`` ask nothing; a slow index ends at the
deadline; a credential never reaches a message or the cache."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from colabenv.app.resolution import TargetSource, resolve_profile
from colabenv.cli.main import main
from colabenv.index.check import IndexCheck
from colabenv.profile.load import load_profile
from colabenv.resolve.overrides import TargetFlags
from tests.support.hostile_index import HostileIndex
from tests.support.index import LocalIndex
from tests.support.resolving import chosen, resolve_json
from tests.support.wheels import build_wheel

H100_580 = ["--driver", "580.65.06", "--cuda", "13.0", "--compute-capability", "9.0", "--python", "3.12"]
TAG = "cp312-cp312-manylinux_2_28_x86_64"


@pytest.fixture(autouse=True)
def _online(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLABENV_OFFLINE", raising=False)


def _index(root: Path, torch: dict[str, list[str]]) -> LocalIndex:
    """An index with a sub-index per CUDA build (``/cu130/``), each with these torch versions,
    and einops 0.8.1 on ``/simple/``."""
    for folder, versions in torch.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        for version in versions:
            build_wheel(root / folder, "torch", version, tag=TAG)
    build_wheel(root / "simple", "einops", "0.8.1")
    return LocalIndex(root)


@pytest.fixture
def index(tmp_path: Path) -> Iterator[LocalIndex]:
    with _index(tmp_path / "wheels", {"cu130": ["2.15.0+cu130"], "cu132": ["2.14.1+cu132"]}) as served:
        yield served


def _profile(tmp_path: Path, pytorch: str, default: str, extra: str = "") -> Path:
    path = tmp_path / "team.toml"
    path.write_text(
        'name = "team"\n[frameworks]\ntorch = "*"\n[packages]\nrequirements = ["einops==0.8.1"]\n'
        f'[install]\npytorch_index_url = "{pytorch}"\nindex_url = "{default}"\n{extra}'
    )
    return path


def _resolve(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object], str]:
    return resolve_json(capsys, *argv, *H100_580)


def test_a_missing_file_is_passed_over_and_an_unconfirmed_build_served_is_taken(
    tmp_path: Path, index: LocalIndex, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, index.base_url, index.url)
    code, resolution, err = _resolve(capsys, str(profile))
    assert code == 0, err
    torch = chosen(resolution)
    # cu132 (the catalog's confirmed 2.15.0 build) has no file on the index; cu130 (unconfirmed
    # in the catalog) has one, and a 580 driver fully supports it
    assert (torch["version"], torch["variant"]) == ("2.15.0", "cu130"), torch
    assert "confirmed by the index just now" in torch["reason"]
    assert "not checked" not in err
    assert index.project_requests("torch") and index.project_requests("einops")


def test_nothing_left_on_the_index_is_exit_3(
    tmp_path: Path, index: LocalIndex, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, index.base_url, index.url)
    text = profile.read_text().replace('torch = "*"', 'torch = { version = "==2.15.0", variant = "cu132" }')
    profile.write_text(text)
    code, _, err = _resolve(capsys, str(profile))
    assert code == 3
    assert f"the index {index.base_url}/cu132 has no file torch-2.15.0+cu132-*.whl for cp312" in err


def test_a_wheel_for_a_newer_glibc_than_the_runtime_image_is_no_file_for_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Colab runtime's image has glibc 2.35 (its libc6): a pin whose only wheel is
    manylinux_2_39 is exit 3 for it, named with the glibc; for a target made of flags (glibc
    not known) the same wheel is a file."""
    root = tmp_path / "wheels"
    (root / "simple").mkdir(parents=True)
    build_wheel(root / "simple", "tinylib", "1.0", tag="cp312-cp312-manylinux_2_39_x86_64")
    with LocalIndex(root) as served:
        profile = tmp_path / "p.toml"
        profile.write_text(
            'name = "p"\n[packages]\nrequirements = ["tinylib==1.0"]\n'
            f'[install]\nindex_url = "{served.url}"\n'
        )
        code = main(["resolve", str(profile), "--json", "--runtime", "colab-2026.07", "--cpu"])
        err = capsys.readouterr().err
        assert code == 3, err
        assert "tinylib" in err and "glibc 2.35" in err, err
        assert main(["resolve", str(profile), "--json", "--cpu", "--python", "3.12"]) == 0
        capsys.readouterr()


def test_a_second_render_asks_nothing_and_offline_asks_nothing(
    tmp_path: Path, index: LocalIndex, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = _profile(tmp_path, index.base_url, index.url)
    assert main(["render", str(profile), "-o", str(tmp_path / "a.sh"), *H100_580]) == 0
    assert index.requests
    first = (tmp_path / "a.sh").read_text()
    index.reset_requests()
    assert main(["render", str(profile), "-o", str(tmp_path / "b.sh"), *H100_580]) == 0
    assert index.requests == []
    assert (tmp_path / "b.sh").read_text() == first
    assert "torch==2.15.0+cu130" in first

    monkeypatch.setenv("COLABENV_CACHE_DIR", str(tmp_path / "empty-cache"))
    assert main(["render", str(profile), "--offline", "-o", str(tmp_path / "c.sh"), *H100_580]) == 0
    monkeypatch.setenv("COLABENV_OFFLINE", "1")
    assert main(["render", str(profile), "-o", str(tmp_path / "d.sh"), *H100_580]) == 0
    monkeypatch.delenv("COLABENV_OFFLINE")
    skipped = _profile(tmp_path, index.base_url, index.url, "[catalog]\ncheck_index = false\n")
    assert main(["render", str(skipped), "-o", str(tmp_path / "e.sh"), *H100_580]) == 0
    assert index.requests == []
    capsys.readouterr()
    # without the check: the catalog's confirmed cu132 build, as before
    assert "torch==2.15.0+cu132" in (tmp_path / "c.sh").read_text()
    assert "torch==2.15.0+cu132" in (tmp_path / "d.sh").read_text()


def test_an_unreachable_index_is_one_note_not_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    closed = LocalIndex(tmp_path)
    closed.start()
    url = closed.base_url
    closed.stop()
    profile = _profile(tmp_path, url, f"{url}/simple/")
    code, resolution, err = _resolve(capsys, str(profile))
    assert code == 0, err
    assert chosen(resolution)["variant"] == "cu132"  # the catalog's choice
    warnings = [w for w in resolution["warnings"] if "not checked against the index" in w]  # type: ignore[attr-defined]
    assert len(warnings) == 1 and "unreachable" in warnings[0], warnings
    assert main(["render", str(profile), "-o", str(tmp_path / "s.sh"), *H100_580]) == 0
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if "not checked against the index: " in line]
    assert len(notes) == 1, err
    assert "unreachable (connection refused)" in notes[0]


def test_a_slow_index_ends_at_the_deadline(tmp_path: Path) -> None:
    with HostileIndex("slow") as slow:
        profile = load_profile(_profile(tmp_path, slow.url.rstrip("/"), slow.url))
        started = time.monotonic()
        flags = TargetFlags(driver="580.65.06", cuda="13.0", compute_capability=("9.0",), python="3.12")
        resolution = resolve_profile(
            profile, TargetSource(flags), index=IndexCheck(os.environ, deadline_s=0.5)
        )
        took = time.monotonic() - started
    assert took < 3, took
    assert [w for w in resolution.warnings if "not checked against the index" in w and "0.5 s" in w]
    assert resolution.choices[0].variant == "cu132"


def test_an_index_found_unreachable_is_not_waited_for_again_within_a_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host with no network: the first render waits for its deadline; those that follow in
    the next minute note the same failure at once, asking nothing."""
    monkeypatch.setenv("COLABENV_CACHE_DIR", str(tmp_path / "cache"))
    flags = TargetFlags(driver="580.65.06", cuda="13.0", compute_capability=("9.0",), python="3.12")
    with HostileIndex("slow") as slow:
        profile = load_profile(_profile(tmp_path, slow.url.rstrip("/"), slow.url))
        timings = []
        for _ in range(2):
            started = time.monotonic()
            resolution = resolve_profile(
                profile, TargetSource(flags), index=IndexCheck(os.environ, deadline_s=0.5)
            )
            timings.append(time.monotonic() - started)
            notes = [w for w in resolution.warnings if "not checked against the index" in w]
            assert len(notes) == 1 and "within 0.5 s" in notes[0], resolution.warnings
        asked = len(slow.requests)
    assert timings[0] >= 0.5 and timings[1] < 0.3, timings
    assert "not asked again" in notes[0]
    assert asked == 1, slow.requests
    assert resolution.choices[0].variant == "cu132"


def test_an_index_that_answers_badly_is_asked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only an index that could not be reached is remembered: one that answered (malformed
    JSON here, a refused credential elsewhere) may be mended at once, and is asked again."""
    monkeypatch.setenv("COLABENV_CACHE_DIR", str(tmp_path / "cache"))
    flags = TargetFlags(driver="580.65.06", cuda="13.0", compute_capability=("9.0",), python="3.12")
    with HostileIndex("malformed") as bad:
        profile = load_profile(_profile(tmp_path, bad.url.rstrip("/"), bad.url))
        seen = []
        for _ in range(2):
            resolution = resolve_profile(profile, TargetSource(flags), index=IndexCheck(os.environ))
            seen.append(len(bad.requests))
            assert [w for w in resolution.warnings if "not checked against the index" in w]
    assert seen[0] >= 1 and seen[1] > seen[0], seen


def test_a_credential_never_reaches_a_message_or_the_cache(
    tmp_path: Path, index: LocalIndex, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "s3cr3t-t0ken-value"
    monkeypatch.setenv("IDX_TOKEN", secret)
    monkeypatch.setenv("IDX_USER", "team")
    cache = tmp_path / "cache"
    monkeypatch.setenv("COLABENV_CACHE_DIR", str(cache))
    base = index.base_url.replace("http://", "http://${IDX_USER}:${IDX_TOKEN}@")
    profile = _profile(tmp_path, base, f"{base}/simple/")
    code, resolution, err = _resolve(capsys, str(profile))
    assert code == 0, err
    assert "confirmed by the index just now" in chosen(resolution)["reason"]
    assert any(a for a in index.authorizations)  # the credential was sent
    assert secret not in err and secret not in json.dumps(resolution)
    entries = [p for p in cache.rglob("*") if p.is_file()]
    assert entries
    for entry in entries:
        assert secret not in str(entry) and secret.encode() not in entry.read_bytes()
    # and an index that cannot be reached is named by its unexpanded URL
    index.stop()
    monkeypatch.setenv("COLABENV_CACHE_DIR", str(tmp_path / "other"))
    code, resolution, err = _resolve(capsys, str(profile))
    shown = json.dumps(resolution)
    assert code == 0 and "not checked against the index" in shown, shown
    assert secret not in shown and secret not in err and "${IDX_TOKEN}" in shown


def test_bootstrap_confirms_unless_offline(
    tmp_path: Path, index: LocalIndex, capsys: pytest.CaptureFixture[str]
) -> None:
    """``bootstrap()``'s plan takes the same path: confirmed by the index, or with ``offline``
    (``bootstrap(..., offline=True)``) asking nothing."""
    from colabenv.notebook import _plan

    profile = load_profile(_profile(tmp_path, index.base_url, index.url))
    flags = TargetFlags(driver="580.65.06", cuda="13.0", compute_capability=("9.0",), python="3.12")
    quiet = _plan(profile, TargetSource(flags), None, offline=True)
    assert index.requests == []
    assert "torch==2.15.0+cu132" in quiet.requirements
    checked = _plan(profile, TargetSource(flags), None)
    assert index.requests
    assert "torch==2.15.0+cu130" in checked.requirements
    capsys.readouterr()


GH200 = ["--platform", "linux_aarch64", "--driver", "580.65.06", "--compute-capability", "9.0"]
AARCH64 = "manylinux_2_27_aarch64"


@pytest.mark.parametrize("plugin_served", [False, True])
def test_an_aarch64_jax_build_is_confirmed_by_its_plugin_not_by_pure_python_jax(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], plugin_served: bool
) -> None:
    """jax is one py3-none-any wheel for every platform, so the index serving it says nothing of
    an aarch64 CUDA build: the plugin's own aarch64 wheel does. Without it the build is passed
    over, naming the plugin's file; with it the build (confirmed in the catalog from the package
    index's aarch64 wheels) is taken."""
    root = tmp_path / "wheels" / "simple"
    root.mkdir(parents=True)
    build_wheel(root, "jax", "0.8.0")
    build_wheel(root, "jaxlib", "0.8.0", tag=f"cp312-cp312-{AARCH64}")
    build_wheel(root, "jax-cuda13-pjrt", "0.8.0", tag=f"py3-none-{AARCH64}")
    build_wheel(root, "jax-cuda13-plugin", "0.8.0", tag="cp312-cp312-manylinux_2_27_x86_64")
    if plugin_served:
        build_wheel(root, "jax-cuda13-plugin", "0.8.0", tag=f"cp312-cp312-{AARCH64}")
    with LocalIndex(tmp_path / "wheels") as served:
        profile = tmp_path / "team.toml"
        profile.write_text(
            'name = "team"\n[frameworks]\njax = { version = "==0.8.0", variant = "cuda13" }\n'
            f'[install]\nindex_url = "{served.url}"\n'
        )
        code, resolution, err = resolve_json(capsys, str(profile), *GH200, "--python", "3.12")
    if plugin_served:
        assert code == 0, err
        jax = chosen(resolution, "jax")
        assert (jax["version"], jax["variant"]) == ("0.8.0", "cuda13")
        assert "unconfirmed" not in jax["reason"], jax["reason"]
    else:
        assert code == 3, err
        assert "has no file jax_cuda13_plugin-0.8.0-*.whl for cp312 on linux_aarch64" in err, err


def test_a_yanked_pinned_file_stays_eligible_and_is_a_warning_naming_the_reason(
    tmp_path: Path, index: LocalIndex, capsys: pytest.CaptureFixture[str]
) -> None:
    """pip and uv install a yanked file for an exact pin (``==``), with a warning of their own
    (PEP 592; pip's resolver warns "The candidate selected for download or install is a yanked
    version", uv since astral-sh/uv#561 "Allow yanked versions when specified via =="): the
    check keeps the build and says it before the install does, with the reason."""
    index.yank(f"torch-2.15.0+cu130-{TAG}.whl")
    index.yank("einops-0.8.1-py3-none-any.whl", "broken \x1b[31m import")
    profile = _profile(tmp_path, index.base_url, index.url)
    code, resolution, err = _resolve(capsys, str(profile))
    assert code == 0, err
    torch = chosen(resolution)
    assert (torch["version"], torch["variant"]) == ("2.15.0", "cu130"), torch
    warnings = resolution["warnings"]
    assert isinstance(warnings, list)
    assert (
        f"torch 2.15.0+cu130: the index {index.base_url}/cu130 marks its file for cp312 on linux_x86_64"
        in "\n".join(warnings)
    ), warnings
    yanked = [w for w in warnings if "yanked" in w]
    assert len(yanked) == 2, warnings
    assert yanked[0].endswith(
        "yanked (no reason given); installed for the exact pin, as pip and uv do (PEP 592)"
    )
    assert yanked[1].startswith("einops 0.8.1: the default index marks"), yanked  # [install] index_url
    assert "(reason: broken \\x1b[31m import)" in yanked[1]


def test_a_version_with_one_file_not_yanked_for_the_target_is_no_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A yanked file the target would not take (another Python's) says nothing: the installer
    takes the one that is not yanked."""
    build_wheel(
        tmp_path / "wheels" / "cu130", "torch", "2.15.0+cu130", tag="cp311-cp311-manylinux_2_28_x86_64"
    )
    with _index(tmp_path / "wheels", {"cu130": ["2.15.0+cu130"]}) as served:
        served.yank("torch-2.15.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl", "cp311 only")
        code, resolution, err = _resolve(capsys, str(_profile(tmp_path, served.base_url, served.url)))
    assert code == 0, err
    assert not [w for w in resolution["warnings"] if "yanked" in w], resolution["warnings"]


def test_a_version_with_an_installable_file_not_yanked_is_no_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two files the target could install, one of them yanked: the installer takes the other,
    so only a version whose every installable file is yanked is warned of."""
    build_wheel(
        tmp_path / "wheels" / "cu130", "torch", "2.15.0+cu130", tag="cp312-cp312-manylinux_2_17_x86_64"
    )
    with _index(tmp_path / "wheels", {"cu130": ["2.15.0+cu130"]}) as served:
        served.yank(f"torch-2.15.0+cu130-{TAG}.whl", "the 2.28 one only")
        code, resolution, err = _resolve(capsys, str(_profile(tmp_path, served.base_url, served.url)))
    assert code == 0, err
    assert (chosen(resolution)["version"], chosen(resolution)["variant"]) == ("2.15.0", "cu130")
    assert not [w for w in resolution["warnings"] if "yanked" in w], resolution["warnings"]
