"""The index check reads what a chosen companion requires (issue 34), against a real index on
127.0.0.1: the PEP 658 metadata file of the companion's wheel for the target. A companion whose
metadata requires another torch than the one the catalog pairs it with passes that build over
(exit 3 where nothing is left); one that agrees changes nothing; a re-render asks nothing; a page
that offers no metadata file, or a file too large or malformed, says nothing."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from colabenv.cli.main import main
from colabenv.index.check import MAX_METADATA_BYTES
from tests.support.index import LocalIndex
from tests.support.wheels import build_wheel

H100_580 = ["--driver", "580.65.06", "--cuda", "13.0", "--compute-capability", "9.0", "--python", "3.12"]
TAG = "cp312-cp312-manylinux_2_28_x86_64"
TORCHVISION = {"2.14.1": "0.29.1", "2.15.0": "0.29.2"}
"""The shipped catalog's torchvision of each torch release."""
CONFLICT = (
    "the index's torchvision 0.29.2 requires torch==2.14.1; the catalog pairs it with torch 2.15.0: "
    "run colabenv catalog refresh torch"
)


@pytest.fixture(autouse=True)
def _online(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("COLABENV_OFFLINE", raising=False)
    monkeypatch.setenv("COLABENV_CACHE_DIR", str(tmp_path / "cache"))


def _index(root: Path, requires: Mapping[str, Sequence[str]], *, metadata: bool = True) -> LocalIndex:
    """torch 2.14.1 and 2.15.0 on ``/cu130/`` and ``/cu132/``, each with the catalog's
    torchvision, whose wheel requires ``requires[<torch version>]`` (default: that torch)."""
    for local in ("cu130", "cu132"):
        for torch, vision in TORCHVISION.items():
            build_wheel(root / local, "torch", f"{torch}+{local}", tag=TAG)
            needs = requires.get(torch, [f"torch=={torch}"])
            build_wheel(root / local, "torchvision", f"{vision}+{local}", tag=TAG, requires=needs)
    build_wheel(root / "simple", "einops", "0.8.1")
    return LocalIndex(root, metadata=metadata)


def _profile(tmp_path: Path, served: LocalIndex, torch: str = '"*"') -> Path:
    path = tmp_path / "team.toml"
    path.write_text(
        f'name = "team"\n[frameworks]\ntorch = {{ version = {torch}, torchvision = "*" }}\n'
        '[packages]\nrequirements = ["einops==0.8.1"]\n'
        f'[install]\npytorch_index_url = "{served.base_url}"\nindex_url = "{served.url}"\n'
    )
    return path


def _resolve(capsys: pytest.CaptureFixture[str], profile: Path) -> tuple[int, dict[str, object], str]:
    code = main(["resolve", str(profile), "--json", *H100_580])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else {}), err


def _torch(resolution: dict[str, object]) -> dict[str, str]:
    frameworks = resolution["frameworks"]
    assert isinstance(frameworks, dict)
    return frameworks["torch"]  # type: ignore[no-any-return]


def _metadata_requests(served: LocalIndex) -> list[str]:
    return [path for path in served.requests if path.endswith(".metadata")]


def test_a_companion_requiring_another_torch_passes_that_build_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """torchvision 0.29.2 on the index requires torch 2.14.1 (both CUDA builds): torch 2.15.0
    is passed over for 2.14.1, whose torchvision agrees, and the reason names the requirement
    and the refresh that mends the catalog."""
    with _index(tmp_path / "wheels", {"2.15.0": ["torch==2.14.1"]}) as served:
        code, resolution, err = _resolve(capsys, _profile(tmp_path, served))
        assert code == 0, err
        torch = _torch(resolution)
        assert torch["version"] == "2.14.1", torch
        assert f"passed over torch 2.15.0 cu132 (and 1 more): {CONFLICT}" in torch["reason"], torch
        assert _metadata_requests(served), served.requests


def test_a_range_that_does_not_admit_the_chosen_torch_passes_it_over_and_nothing_left_is_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with _index(tmp_path / "wheels", {"2.15.0": ["torch>=2.14,<2.15; python_version >= '3.9'"]}) as served:
        code, _, err = _resolve(capsys, _profile(tmp_path, served, '"==2.15.0"'))
    assert code == 3, err
    assert "the index's torchvision 0.29.2 requires torch<2.15,>=2.14; the catalog pairs it" in err, err


def test_a_companion_that_agrees_changes_nothing_and_a_rerender_asks_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Requirements whose markers do not hold for the target (another machine, an old Python,
    an extra) are not the companion's requirements there."""
    agrees = [
        "torch==2.15.0",
        "torch==2.0.0; platform_machine == 'aarch64'",
        "torch<2; python_version < '3.10'",
        "torch==1.0; extra == 'old'",
        "pillow>=5.3.0,!=8.3.*",
    ]
    with _index(tmp_path / "wheels", {"2.15.0": agrees}) as served:
        profile = _profile(tmp_path, served)
        code, resolution, err = _resolve(capsys, profile)
        assert code == 0, err
        torch = _torch(resolution)
        assert (torch["version"], torch["variant"]) == ("2.15.0", "cu130"), torch
        assert "passed over" not in torch["reason"] and "not checked" not in err
        assert "/files/cu130/torchvision-0.29.2+cu130-" in " ".join(_metadata_requests(served))
        assert main(["render", str(profile), "-o", str(tmp_path / "a.sh"), *H100_580]) == 0
        served.reset_requests()
        assert main(["render", str(profile), "-o", str(tmp_path / "b.sh"), *H100_580]) == 0
        assert served.requests == []
        capsys.readouterr()
    script = (tmp_path / "b.sh").read_text()
    assert script == (tmp_path / "a.sh").read_text()
    assert "torchvision==0.29.2+cu130" in script


def test_a_conflict_read_once_is_kept_and_a_rerender_asks_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with _index(tmp_path / "wheels", {"2.15.0": ["torch==2.14.1"]}) as served:
        profile = _profile(tmp_path, served)
        assert _torch(_resolve(capsys, profile)[1])["version"] == "2.14.1"
        served.reset_requests()
        code, resolution, err = _resolve(capsys, profile)
        assert code == 0, err
        assert served.requests == []
    assert _torch(resolution)["version"] == "2.14.1"
    assert CONFLICT in _torch(resolution)["reason"]


def test_a_page_without_metadata_files_is_left_as_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with _index(tmp_path / "wheels", {"2.15.0": ["torch==2.14.1"]}, metadata=False) as served:
        code, resolution, err = _resolve(capsys, _profile(tmp_path, served))
        assert code == 0, err
        assert _metadata_requests(served) == []
    torch = _torch(resolution)
    assert (torch["version"], torch["variant"]) == ("2.15.0", "cu130"), torch
    assert "not checked" not in err and "not checked" not in json.dumps(resolution)


def test_a_huge_or_malformed_metadata_file_is_bounded_and_says_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each of these files would pass torch 2.15.0 over if it were taken: one past the bound
    (its conflict at the start, the rest one long requirement), one whose other requirement is
    not a requirement. Each is ignored: the choice stands, no crash, no note."""
    huge = ["torch==2.14.1", "x" * (MAX_METADATA_BYTES + 1)]
    malformed = ["torch==2.14.1", "pillow (((>=5"]
    root = tmp_path / "wheels"
    for local, needs in (("cu130", huge), ("cu132", malformed)):
        build_wheel(root / local, "torch", f"2.15.0+{local}", tag=TAG)
        build_wheel(root / local, "torchvision", f"0.29.2+{local}", tag=TAG, requires=needs)
    build_wheel(root / "simple", "einops", "0.8.1")
    with LocalIndex(root) as served:
        profile = _profile(tmp_path, served)
        code, resolution, err = _resolve(capsys, profile)
        assert code == 0, err
        assert len(_metadata_requests(served)) == 2, served.requests
        served.reset_requests()
        assert _resolve(capsys, profile)[0] == 0
        assert served.requests == []  # what was refused is kept too
    torch = _torch(resolution)
    assert (torch["version"], torch["variant"]) == ("2.15.0", "cu130"), torch
    assert "passed over" not in torch["reason"] and "not checked" not in json.dumps(resolution)
    for entry in (tmp_path / "cache").rglob("*"):
        assert not entry.is_file() or entry.stat().st_size < MAX_METADATA_BYTES


def test_a_metadata_file_is_asked_with_the_index_credential_which_no_cache_entry_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "s3cr3t-t0ken-value"
    monkeypatch.setenv("IDX_TOKEN", secret)
    monkeypatch.setenv("IDX_USER", "team")
    with _index(tmp_path / "wheels", {"2.15.0": ["torch==2.14.1"]}) as served:
        base = served.base_url.replace("http://", "http://${IDX_USER}:${IDX_TOKEN}@")
        profile = tmp_path / "team.toml"
        profile.write_text(
            'name = "team"\n[frameworks]\ntorch = { version = "*", torchvision = "*" }\n'
            f'[install]\npytorch_index_url = "{base}"\n'
        )
        code, resolution, err = _resolve(capsys, profile)
        assert code == 0, err
        asked = [
            auth
            for path, auth in zip(served.requests, served.authorizations, strict=True)
            if path.endswith(".metadata")
        ]
    assert _torch(resolution)["version"] == "2.14.1"
    assert asked and all(auth.startswith("Basic ") for auth in asked), asked
    assert secret not in json.dumps(resolution) and secret not in err
    entries = [path for path in (tmp_path / "cache").rglob("*") if path.is_file()]
    assert entries and not any(secret.encode() in path.read_bytes() for path in entries)
