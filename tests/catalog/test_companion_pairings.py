"""The shipped catalog's companion pairings (torchvision, torchaudio) against a recorded index
snapshot of their releases (tests/data/catalog/companion_releases.toml): each torch release the
snapshot covers is paired by the rule ``catalog refresh torch`` follows (docs/catalog.md), and
the catalog must say the same. A companion release newer than the catalog's pairing (torchaudio
2.11.1 for torch 2.15.0, which the catalog kept at 2.11.0 while refresh reported it) fails."""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv._util import toml
from colabenv.catalog.load import shipped_catalog
from colabenv.models import Framework, Release
from tests.support.paths import DATA

SNAPSHOT = toml.loads((DATA / "catalog" / "companion_releases.toml").read_text(encoding="utf-8"))


def _paired(project: dict[str, object], release: Release, before: list[Release]) -> Version | None:
    """What refresh pairs with ``release``: the newest companion release pinning torch==X; else
    the newest admitting X whose wheel was built for X's default build; else, for a companion
    that does not follow the variant, the previous release's; None where nothing says."""
    entries = project["release"]
    assert isinstance(entries, list)
    admitting: list[dict[str, str]] = []
    for entry in sorted(entries, key=lambda e: Version(e["version"]), reverse=True):
        if "torch" not in entry:
            continue
        spec = SpecifierSet(entry["torch"])
        pins = [Version(s.version) for s in spec if s.operator == "=="]
        if pins:
            if pins[0] == release.version:
                return Version(entry["version"])
            if pins[0] < release.version:
                break
            continue
        if spec.contains(release.version, prereleases=True):
            admitting.append(entry)
    for entry in admitting:
        if "built" in entry and Version(entry["built"]).local == release.default_variant:
            return Version(entry["version"])
    for previous in sorted(before, key=lambda r: r.version, reverse=True):
        had = previous.companion(str(project["name"]))
        if had is not None and not had.follows_variant:
            return had.version
    return None


def test_the_shipped_pairings_are_those_the_recorded_index_gives() -> None:
    releases = sorted(
        shipped_catalog([Framework.TORCH]).releases_of(Framework.TORCH), key=lambda r: r.version
    )
    covered = SpecifierSet(SNAPSHOT["torch_releases"])
    checked, differing = [], []
    for release in releases:
        if not covered.contains(release.version):
            continue
        before = [r for r in releases if r.version < release.version]
        for project in SNAPSHOT["project"]:
            paired = _paired(project, release, before)
            had = release.companion(canonicalize_name(project["name"]))
            if paired is None:
                continue
            checked.append(f"{release.version} {project['name']}")
            if had is None or had.version != paired:
                shown = had.version if had is not None else "none"
                differing.append(
                    f"torch {release.version}: {project['name']} {shown}, the index pairs {paired}"
                )
    assert differing == []
    assert "2.15.0 torchaudio" in checked and "2.14.0 torchvision" in checked, checked


def test_the_snapshot_names_a_source_for_every_release() -> None:
    for project in SNAPSHOT["project"]:
        for entry in project["release"]:
            assert entry["source"].strip(), (project["name"], entry["version"])
            Version(entry["version"])
