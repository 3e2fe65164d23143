"""One engine for "what CUDA was this framework built for", used by detect and verify alike."""

from __future__ import annotations

from pathlib import Path

from packaging.version import Version

from colabenv.catalog.load import shipped_catalog
from colabenv.host.detect import build_warnings
from colabenv.host.framework_builds import FrameworkBuild, framework_build, framework_builds
from colabenv.host.installed import Installed, scan_path
from colabenv.models import ComputeCapability, Framework, InstalledSet, NvidiaTarget, Target


def _site(root: Path, dists: dict[str, str], files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True)
    for name, version in dists.items():
        meta = root / f"{name}-{version}.dist-info"
        meta.mkdir()
        (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    for relative, text in (files or {}).items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def test_a_freeze_and_a_live_environment_are_judged_by_the_same_rules(tmp_path: Path) -> None:
    versions = {
        "torch": "2.6.0+cu126",
        "jax": "0.5.3",
        "jax_cuda12_pjrt": "0.5.3",
        "tensorflow_cpu": "2.18.0",
    }
    live = Installed.of_scan(scan_path([str(_site(tmp_path / "site", versions))]))
    freeze = InstalledSet.from_mapping(versions)
    catalog = shipped_catalog()
    from_freeze = framework_builds(freeze, catalog)
    from_live = framework_builds(live, catalog)
    assert from_freeze == from_live
    assert all(isinstance(b, FrameworkBuild) for b in from_live)
    builds = {b.framework: b for b in from_live}
    assert builds[Framework.TORCH].cuda == Version("12.6")
    assert builds[Framework.JAX].variant == "cuda12"
    assert builds[Framework.JAX].build == "CUDA 12.1 (jax-cuda12-pjrt 0.5.3)"
    assert builds[Framework.TENSORFLOW].build == "CPU (tensorflow-cpu)"


def test_files_outrank_the_catalog_and_only_the_live_environment_has_them(tmp_path: Path) -> None:
    site = _site(
        tmp_path / "site", {"torch": "2.6.0"}, {"torch/version.py": "__version__ = '2.6.0'\ncuda = '11.8'\n"}
    )
    catalog = shipped_catalog()
    live = framework_build(Framework.TORCH, Installed.of_scan(scan_path([str(site)])), catalog)
    frozen = framework_build(Framework.TORCH, InstalledSet.from_mapping({"torch": "2.6.0"}), catalog)
    assert live is not None and frozen is not None
    assert (live.cuda, live.evidence) == (Version("11.8"), "torch/version.py")
    assert (frozen.cuda, frozen.evidence) == (Version("12.4"), "the catalog's default variant")


def test_detect_warns_about_a_default_index_torch_the_driver_cannot_load() -> None:
    """A torch without a local tag is the catalog's default variant: 2.9.0 from the default index
    is a CUDA 12.8 build, which a 470 driver cannot load (detect used to say nothing)."""
    target = Target(
        NvidiaTarget(Version("470.256.02"), None, (ComputeCapability(7, 5),)),
        Version("3.11"),
        installed=InstalledSet.from_mapping({"torch": "2.9.0"}),
    )
    warnings = build_warnings(target, shipped_catalog())
    assert any(w.startswith("torch 2.9.0 is built for CUDA 12, which needs driver >=") for w in warnings), (
        warnings
    )
