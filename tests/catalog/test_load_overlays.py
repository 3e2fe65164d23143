"""Catalog overlays (a team's own catalog files, named by COLABENV_CATALOG or a profile's
[catalog] paths) and builds marked unconfirmed: merging, precedence along the extends chain,
what resolve says about where a choice came from, and what is refused."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from packaging.version import Version

from colabenv.catalog.load import (
    DRIVERS_FILE,
    catalog_for,
    load_overlay,
    overlay_folders,
    shipped_catalog,
    with_overlays,
)
from colabenv.errors import CatalogOverlayError, ResolutionError
from colabenv.models import Framework, Target
from colabenv.profile.load import load_profile
from colabenv.resolve.resolver import resolve
from tests.support.catalogs import (
    PYTORCH_INDEX,
    drivers_file,
    release_entry,
    toolkit_entry,
    torch_variant,
    write_overlay,
)
from tests.support.checks import ANY, expect
from tests.support.checks import details as details_of
from tests.support.fixtures import Runner
from tests.support.targets import nvidia_target, tpu_target

H200 = ("--driver", "580.95.05", "--compute-capability", "9.0", "--python", "3.12")


def _h200() -> Target:
    return nvidia_target("580.95.05", "13.0", ("9.0",), "3.12")


def torch_release(
    version: str,
    *,
    variant: str = "cu130",
    source: str = "team build",
    pins: tuple[str, ...] = ("nvidia-cudnn-cu13==9.24.0.43",),
    unconfirmed: bool | str | None = None,
    unconfirmed_reason: str | None = None,
) -> str:
    """One torch release with one CUDA variant (and a cpu one), as an overlay file holds it."""
    build = torch_variant(
        variant,
        index=PYTORCH_INDEX,
        archs=["sm_75", "sm_80", "sm_90", "sm_100", "sm_120"],
        pins=pins,
        source=source,
        unconfirmed=unconfirmed,
        unconfirmed_reason=unconfirmed_reason,
    )
    return release_entry(
        version,
        build,
        torch_variant("cpu", index=PYTORCH_INDEX, source=source),
        python=">=3.8,<3.16",
        default_variant=variant,
        companions={"torchvision": "0.29.2"},
        source=source,
    )


def write_profile(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def torch_profile(path: Path, torch: str = "*", *, paths: list[str] | None = None) -> Path:
    """A profile named after its file that asks for torch ``torch``, with the catalog overlay
    folders ``paths``."""
    body = f'name = "{path.stem}"\n[frameworks]\ntorch = "{torch}"\n'
    if paths is not None:
        body += f"[catalog]\npaths = {json.dumps(paths)}\n"
    return write_profile(path, body)


# ---------------------------------------------------------------------------------------------
# Merging


def test_an_overlay_adds_a_release_and_the_shipped_ones_stay(tmp_path: Path) -> None:
    folder = write_overlay(tmp_path / "team", torch_release("2.99.0"))
    merged = with_overlays(
        shipped_catalog([Framework.TORCH]), [load_overlay(folder, "test", [Framework.TORCH])]
    )
    added = merged.release(Framework.TORCH, Version("2.99.0"))
    assert added is not None
    assert added.overlay == str(folder / "torch.toml")
    assert {v.overlay for v in added.variants} == {str(folder / "torch.toml")}
    shipped = shipped_catalog([Framework.TORCH]).releases_of(Framework.TORCH)
    assert set(shipped) <= set(merged.releases_of(Framework.TORCH))
    assert merged.components == shipped_catalog([Framework.TORCH]).components


def test_same_version_and_variant_the_overlay_wins_and_other_variants_stay(tmp_path: Path) -> None:
    folder = write_overlay(
        tmp_path / "team",
        torch_release("2.14.1", pins=("nvidia-cudnn-cu13==9.26.0.51",), source="our rebuild"),
    )
    merged = with_overlays(
        shipped_catalog([Framework.TORCH]), [load_overlay(folder, "test", [Framework.TORCH])]
    )
    release = merged.release(Framework.TORCH, Version("2.14.1"))
    assert release is not None
    assert {v.name for v in release.variants} == {"cu130", "cu126", "cu132", "cpu", "rocm7.2", "rocm7.14"}
    cu130 = release.variant("cu130")
    assert cu130 is not None and cu130.pin_texts == ("nvidia-cudnn-cu13==9.26.0.51",)
    assert cu130.overlay == str(folder / "torch.toml")
    cu126 = release.variant("cu126")
    assert cu126 is not None and cu126.overlay is None, "a variant the overlay lacks stays shipped"
    assert release.source.text == "our rebuild"
    assert {str(c.name) for c in release.companions} == {"torchvision", "torchaudio"}


def test_overlays_apply_in_order_the_later_winning(tmp_path: Path) -> None:
    first = write_overlay(tmp_path / "a", torch_release("2.99.0", source="first"))
    second = write_overlay(tmp_path / "b", torch_release("2.99.0", source="second"))
    overlays = [load_overlay(f, "test", [Framework.TORCH]) for f in (first, second)]
    merged = with_overlays(shipped_catalog([Framework.TORCH]), overlays)
    release = merged.release(Framework.TORCH, Version("2.99.0"))
    assert release is not None and release.source.text == "second"


def test_an_overlay_drivers_file_admits_a_new_cuda_line(tmp_path: Path) -> None:
    folder = write_overlay(tmp_path / "team", torch_release("2.99.0", variant="cu139"))
    with pytest.raises(CatalogOverlayError) as caught:
        with_overlays(shipped_catalog([Framework.TORCH]), [load_overlay(folder, "test", [Framework.TORCH])])
    assert "no toolkit driver for CUDA 13.9" in str(caught.value)
    assert str(folder / "torch.toml") in str(caught.value)
    assert caught.value.exit_code == 2
    (folder / DRIVERS_FILE).write_text(
        drivers_file(toolkit_entry("13.9.0", "13.9 GA", "599.1.1", source="team note")), encoding="utf-8"
    )
    merged = with_overlays(
        shipped_catalog([Framework.TORCH]), [load_overlay(folder, "test", [Framework.TORCH])]
    )
    assert merged.toolkit_driver(Version("13.9")) == Version("599.1.1")
    assert merged.floor_driver(Version("13.9")) == Version("580.65.06"), "shipped line kept"


def test_overlay_folders_profile_paths_first_then_the_variable_its_first_folder_last(
    tmp_path: Path,
) -> None:
    profile_path = write_profile(
        tmp_path / "p.toml",
        """\
        name = "p"
        [catalog]
        paths = ["one", "two"]
        """,
    )
    profile = load_profile(profile_path)
    found = overlay_folders(profile, {"COLABENV_CATALOG": "/x:/y::"})
    assert [str(p) for p, _ in found] == [str(tmp_path / "one"), str(tmp_path / "two"), "/y", "/x"]
    assert found[0][1] == "p.toml [catalog] paths"
    assert found[-1][1] == "COLABENV_CATALOG"
    assert overlay_folders(profile, {}) == found[:2]


def test_catalog_for_without_overlays_is_the_shipped_catalog(tmp_path: Path) -> None:
    profile = load_profile(torch_profile(tmp_path / "p.toml"))
    assert catalog_for(profile, {}) is shipped_catalog([Framework.TORCH])


# ---------------------------------------------------------------------------------------------
# Precedence through the environment, the profile key and extends chains


def _torch_choice(profile: Path, environ: dict[str, str]) -> tuple[str, str | None, str]:
    loaded = load_profile(profile)
    resolution = resolve(loaded, _h200(), catalog_for(loaded, environ))
    (choice,) = resolution.choices
    return str(choice.release), choice.catalog_file, choice.reason


def test_extends_chain_child_overlay_beats_parent_and_variable_beats_both(tmp_path: Path) -> None:
    parent_overlay = write_overlay(tmp_path / "base" / "catalog", torch_release("2.99.0", source="parent"))
    child_overlay = write_overlay(tmp_path / "team" / "catalog", torch_release("2.99.0", source="child"))
    env_overlay = write_overlay(tmp_path / "env", torch_release("2.99.0", source="env"))
    torch_profile(tmp_path / "base" / "base.toml", ">=2.99", paths=["catalog"])
    parent_only = write_profile(
        tmp_path / "base" / "only.toml",
        """\
        name = "only"
        extends = "base.toml"
        """,
    )
    child = write_profile(
        tmp_path / "team" / "team.toml",
        """\
        name = "team"
        extends = "../base/base.toml"
        [catalog]
        paths = ["catalog/"]
        """,
    )
    version, source_file, reason = _torch_choice(parent_only, {})
    assert (version, source_file) == ("2.99.0", str(parent_overlay / "torch.toml"))
    assert f"from the catalog overlay {parent_overlay / 'torch.toml'}" in reason
    _, source_file, _ = _torch_choice(child, {})
    assert source_file == str(child_overlay / "torch.toml")
    _, source_file, _ = _torch_choice(child, {"COLABENV_CATALOG": str(env_overlay)})
    assert source_file == str(env_overlay / "torch.toml")


def test_colabenv_catalog_adds_a_release_resolve_names_the_file(runner: Runner, tmp_path: Path) -> None:
    folder = write_overlay(tmp_path / "team catalog", torch_release("2.99.0"))
    profile = torch_profile(tmp_path / "p.toml", ">=2.99")
    without = runner("resolve", profile, *H200)
    assert without.returncode == 3
    assert "the catalog has no torch release matching it" in without.stderr
    done = runner(
        "resolve",
        profile,
        "--json",
        *H200,
        env={"COLABENV_CATALOG": f"{tmp_path / 'missing-is-checked-first'}"},
    )
    assert done.returncode == 2
    assert "missing-is-checked-first: not a folder (named by COLABENV_CATALOG)" in done.stderr
    assert done.stdout == ""
    done = runner("resolve", profile, "--json", *H200, env={"COLABENV_CATALOG": str(folder)})
    assert done.returncode == 0, done.stderr
    torch = json.loads(done.stdout)["frameworks"]["torch"]
    assert torch["version"] == "2.99.0"
    assert torch["variant"] == "cu130"
    assert torch["catalog_file"] == str(folder / "torch.toml")
    assert f"from the catalog overlay {folder / 'torch.toml'}" in torch["reason"]
    plain = runner("resolve", profile, *H200, env={"COLABENV_CATALOG": str(folder)})
    assert "from the catalog overlay" in plain.stdout
    script = runner("render", profile, *H200, env={"COLABENV_CATALOG": str(folder)})
    assert script.returncode == 0, script.stderr
    assert "torch==2.99.0+cu130" in script.stdout


def test_a_broken_overlay_file_is_exit_2_naming_file_and_key(runner: Runner, tmp_path: Path) -> None:
    folder = write_overlay(
        tmp_path / "team", torch_release("2.99.0").replace('archs = ["sm_75"', 'archs = ["sm75"')
    )
    profile = torch_profile(tmp_path / "p.toml", paths=["team"])
    done = runner("resolve", profile, *H200)
    assert done.returncode == 2
    assert done.stdout == ""
    assert f"catalog overlay {folder / 'torch.toml'}: release[0].variant[0].archs:" in done.stderr
    assert "Traceback" not in done.stderr
    (folder / "torch.toml").write_bytes(b"schema = 1\nframework = \xff\n")
    done = runner("resolve", profile, *H200)
    assert done.returncode == 2
    assert "invalid TOML" in done.stderr


def test_a_profile_overlay_folder_that_holds_no_catalog_file_is_refused(
    runner: Runner, tmp_path: Path
) -> None:
    (tmp_path / "empty").mkdir()
    profile = torch_profile(tmp_path / "p.toml", paths=["empty"])
    done = runner("resolve", profile, *H200)
    assert done.returncode == 2
    assert "no catalog file in it (named by p.toml [catalog] paths" in done.stderr


def test_profiles_check_validates_the_overlays(runner: Runner, tmp_path: Path) -> None:
    folder = write_overlay(tmp_path / "catalog", torch_release("2.99.0"))
    jax = folder / "jax.toml"
    jax.write_text('schema = 1\nframework = "torch"\n', encoding="utf-8")
    profile = torch_profile(tmp_path / "p.toml", paths=["catalog"])
    done = runner("profiles", "check", profile)
    assert done.returncode == 2, done.stdout
    assert f"catalog overlay {jax}: framework: expected 'jax'" in done.stderr
    jax.unlink()
    done = runner("profiles", "check", profile)
    assert done.returncode == 0, done.stderr
    assert "1 catalog overlay" in done.stdout
    done = runner("profiles", "check", profile, env={"COLABENV_CATALOG": str(tmp_path / "nope")})
    assert done.returncode == 2
    assert "not a folder (named by COLABENV_CATALOG)" in done.stderr


OVERLAY_INDEX = "https://download.pytorch.org/whl/cu130"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://team:s3cr3t-pass@mirror.example.org/whl/cu130", "literal credentials in a URL"),
        ("https://mirror.example.org:99999/whl/cu130", "port 99999 is not a port (1 to 65535)"),
        ("https://mirror.example.org/whl/cu130 https://other.example.org/simple", "percent-encode"),
        ("https://mirror.example.org/whl/cu130?token=s3cr3t-pass", "literal secret in the query (token=)"),
        ("http://mirror.example.org/whl/cu130", "scheme 'http' not allowed (use https)"),
    ],
)
def test_an_overlay_index_url_passes_the_rules_a_profile_index_url_does(
    runner: Runner, tmp_path: Path, url: str, problem: str
) -> None:
    folder = write_overlay(tmp_path / "team", torch_release("2.99.0").replace(OVERLAY_INDEX, url, 1))
    with pytest.raises(CatalogOverlayError) as refused:
        load_overlay(folder, "test", [Framework.TORCH])
    assert str(refused.value).startswith(
        f"catalog overlay {folder / 'torch.toml'}: release[0].variant[0].index_url: "
    )
    assert problem in str(refused.value)
    assert "s3cr3t" not in str(refused.value)
    profile = torch_profile(tmp_path / "p.toml", ">=2.99")
    done = runner("render", profile, *H200, env={"COLABENV_CATALOG": str(folder)})
    assert (done.returncode, done.stdout) == (2, "")
    assert problem in done.stderr
    assert "s3cr3t" not in done.stderr
    assert "Traceback" not in done.stderr


def test_an_overlay_index_url_may_take_its_credentials_from_variables(tmp_path: Path) -> None:
    url = "https://${TEAM_USER}:${TEAM_TOKEN}@mirror.example.org:8443/whl/cu130?token=${TEAM_TOKEN}"
    folder = write_overlay(tmp_path / "team", torch_release("2.99.0").replace(OVERLAY_INDEX, url, 1))
    overlay = load_overlay(folder, "test", [Framework.TORCH])
    assert [v.index_url for v in overlay.releases[0].variants] == [
        url,
        "https://download.pytorch.org/whl/cpu",
    ]


# ---------------------------------------------------------------------------------------------
# Unconfirmed builds


UNCONFIRMED = torch_release(
    "2.99.0", unconfirmed=True, unconfirmed_reason="archs carried over from 2.14.1 cu130"
)
"""torch 2.99.0 whose cu130 build is unconfirmed, and why."""


def test_an_unconfirmed_build_is_refused_with_the_reason_unless_allowed(tmp_path: Path) -> None:
    folder = write_overlay(tmp_path / "team", UNCONFIRMED)
    profile = load_profile(torch_profile(tmp_path / "p.toml", ">=2.99"))
    catalog = catalog_for(profile, {"COLABENV_CATALOG": str(folder)})
    with pytest.raises(ResolutionError) as caught:
        resolve(profile, _h200(), catalog)
    message = str(caught.value)
    assert "torch 2.99.0: cu130 is unconfirmed (archs carried over from 2.14.1 cu130)" in message
    assert "--allow-unconfirmed" in message and "[catalog] allow_unconfirmed = true" in message
    allowed = resolve(profile, _h200(), catalog, allow_unconfirmed=True)
    (choice,) = allowed.choices
    assert choice.variant == "cu130"
    assert (
        "unconfirmed (archs carried over from 2.14.1 cu130), allowed by --allow-unconfirmed" in choice.reason
    )
    assert any("is unconfirmed" in w for w in allowed.warnings)
    with_key = load_profile(
        write_profile(
            tmp_path / "q.toml",
            """\
        name = "q"
        [frameworks]
        torch = ">=2.99"
        [catalog]
        allow_unconfirmed = true
        """,
        )
    )
    choice = resolve(with_key, _h200(), catalog).choices[0]
    assert "allowed by the profile's [catalog] allow_unconfirmed" in choice.reason


def test_an_unconfirmed_build_is_passed_over_for_a_confirmed_one(tmp_path: Path) -> None:
    folder = write_overlay(tmp_path / "team", UNCONFIRMED)
    profile = load_profile(torch_profile(tmp_path / "p.toml"))
    resolution = resolve(profile, _h200(), catalog_for(profile, {"COLABENV_CATALOG": str(folder)}))
    assert resolution.choices[0].release == Version("2.15.0")


def test_allow_unconfirmed_flag_on_the_command_line(runner: Runner, tmp_path: Path) -> None:
    folder = write_overlay(tmp_path / "team", UNCONFIRMED)
    profile = torch_profile(tmp_path / "p.toml", ">=2.99")
    env = {"COLABENV_CATALOG": str(folder)}
    refused = runner("render", profile, *H200, env=env)
    assert refused.returncode == 3
    assert "is unconfirmed" in refused.stderr
    for command in ("render", "resolve"):
        done = runner(command, profile, "--allow-unconfirmed", *H200, env=env)
        assert done.returncode == 0, done.stderr
        assert "torch==2.99.0+cu130" in done.stdout or "2.99.0" in done.stdout


@pytest.mark.parametrize(
    ("unconfirmed", "reason", "key", "problem"),
    [
        pytest.param(
            True, None, "unconfirmed_reason", "an unconfirmed entry needs the reason", id="no-reason"
        ),
        pytest.param(None, "x", "unconfirmed_reason", "only with unconfirmed = true", id="reason-alone"),
        pytest.param("yes", "x", "unconfirmed", "expected true or false", id="not-a-boolean"),
    ],
)
def test_unconfirmed_marking_is_checked(
    tmp_path: Path, unconfirmed: bool | str | None, reason: str | None, key: str, problem: str
) -> None:
    release = torch_release("2.99.0", unconfirmed=unconfirmed, unconfirmed_reason=reason)
    folder = write_overlay(tmp_path / "team", release)
    with pytest.raises(CatalogOverlayError) as caught:
        load_overlay(folder, "test", [Framework.TORCH])
    assert f"release[0].variant[0].{key}: {problem}" in str(caught.value)


def test_allow_unconfirmed_in_a_profile_must_be_a_boolean(tmp_path: Path) -> None:
    from colabenv.errors import ProfileError

    path = write_profile(
        tmp_path / "p.toml",
        """\
        name = "p"
        [catalog]
        allow_unconfirmed = "yes"
        """,
    )
    with pytest.raises(ProfileError) as caught:
        load_profile(path)
    assert "catalog.allow_unconfirmed" in str(caught.value)


# ---------------------------------------------------------------------------------------------
# verify --profile and TPU targets resolve against the overlays too


def test_verify_profile_resolves_with_the_profile_overlays(runner: Runner, tmp_path: Path) -> None:
    """``verify --profile`` expects what render would install: the profile's overlay release."""
    write_overlay(tmp_path / "catalog", torch_release("2.99.0"))
    profile = torch_profile(tmp_path / "p.toml", ">=2.99", paths=["catalog"])
    done = runner(
        "verify",
        "--json",
        "--profile",
        profile,
        "--timeout",
        "30",
        env={"COLABENV_STATE_DIR": str(tmp_path / "state"), "COLABENV_CATALOG": None},
    )
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    expect(report, versions=ANY)
    detail = details_of(report)["versions"]
    assert "no resolution" not in detail, detail
    assert "torch: not installed, expected ==2.99.0+cpu" in detail


def test_a_broken_overlay_of_the_verified_profile_is_exit_2(runner: Runner, tmp_path: Path) -> None:
    profile = torch_profile(tmp_path / "p.toml")
    done = runner(
        "verify",
        "--profile",
        profile,
        env={
            "COLABENV_STATE_DIR": str(tmp_path / "state"),
            "COLABENV_CATALOG": str(tmp_path / "nothing-here"),
        },
    )
    assert done.returncode == 2
    assert "nothing-here: not a folder (named by COLABENV_CATALOG)" in done.stderr
    assert done.stdout == ""


def test_overlays_keep_the_tpu_builds(tmp_path: Path) -> None:
    folder = write_overlay(tmp_path / "team", torch_release("2.99.0"))
    profile = load_profile(
        write_profile(
            tmp_path / "p.toml",
            """\
        name = "p"
        [frameworks]
        jax = "==0.6.2"
        torch = "==2.9.0"
        """,
        )
    )
    shipped = catalog_for(profile, {})
    merged = catalog_for(profile, {"COLABENV_CATALOG": str(folder)})
    assert merged.tpu == shipped.tpu and merged.tpu.builds
    target = tpu_target("v5e", "v5e-1", 1, "3.11")
    resolution = resolve(profile, target, merged)
    assert [(c.framework.value, c.variant) for c in resolution.choices] == [("torch", "tpu"), ("jax", "tpu")]


def test_without_a_profile_the_variable_overlays_still_apply(tmp_path: Path) -> None:
    """``verify`` from the marker and ``detect`` have no profile: ``COLABENV_CATALOG`` is still
    the team's catalog there."""
    folder = write_overlay(tmp_path / "team", torch_release("2.99.0"))
    catalog = catalog_for(None, {"COLABENV_CATALOG": str(folder)})
    assert catalog.release(Framework.TORCH, Version("2.99.0")) is not None
    assert {r.framework for r in catalog.releases} == set(Framework)
    assert catalog_for(None, {}) is shipped_catalog(tuple(Framework))


def test_plain_verify_reads_the_variable_overlays(runner: Runner, tmp_path: Path) -> None:
    done = runner(
        "verify",
        env={
            "COLABENV_STATE_DIR": str(tmp_path / "state"),
            "COLABENV_CATALOG": str(tmp_path / "nothing-here"),
        },
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert "nothing-here: not a folder (named by COLABENV_CATALOG)" in done.stderr


def test_detect_with_a_broken_overlay_says_why_and_goes_on(runner: Runner, tmp_path: Path) -> None:
    done = runner("detect", env={"COLABENV_CATALOG": str(tmp_path / "nothing-here")})
    assert done.returncode == 0, done.stderr
    assert "catalog unavailable, no build warnings: catalog overlay " in done.stdout
    assert "nothing-here: not a folder (named by COLABENV_CATALOG)" in done.stdout
