"""The resolver on TPU hosts: a scenario table (Colab v5e-1 and v6e-1, Kaggle v3-8, Cloud v4,
v5p and TPU7x VMs) and what the TPU build adds to the choice."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.catalog.load import shipped_catalog
from colabenv.errors import ResolutionError
from colabenv.models import Accelerator, Catalog, TpuFacts
from colabenv.profile.files import golden_path
from colabenv.profile.load import load_profile
from colabenv.resolve.resolver import resolve
from tests.support.targets import nvidia_target, tpu_target

CATALOG = shipped_catalog()


TARGETS = {
    "colab-v5e-1": lambda: tpu_target("v5e", "v5e-1", 1),
    "colab-v6e-1": lambda: tpu_target("v6e", "v6e-1", 1),
    "colab-v6e-1-py311": lambda: tpu_target("v6e", "v6e-1", 1, "3.11"),
    "colab-v6e-1-py313": lambda: tpu_target("v6e", "v6e-1", 1, "3.13"),
    "kaggle-v3-8": lambda: tpu_target("v3", "v3-8", 4, "3.11"),
    "cloud-v4-8": lambda: tpu_target("v4", "v4-8", 4, "3.11"),
    "cloud-v5p-8-py311": lambda: tpu_target("v5p", "v5p-8", 4, "3.11"),
    "cloud-tpu7x-8": lambda: tpu_target("tpu7x", "tpu7x-8", 4, "3.12"),
    "v2-or-v3": lambda: tpu_target(None, None, 4, "3.11"),
}


@dataclass(frozen=True)
class Expect:
    release: str
    variant: str = "tpu"
    requirements: tuple[str, ...] = ()
    find_links: str | None = None
    installed: bool = False


@dataclass(frozen=True)
class Scenario:
    id: str
    target: str
    frameworks: str
    expect: dict[str, Expect] = field(default_factory=dict)
    error: tuple[str, ...] = ()
    warning: str | None = None


JAX_LINKS = "https://storage.googleapis.com/jax-releases/libtpu_releases.html"
XLA_LINKS = "https://storage.googleapis.com/libtpu-releases/index.html"

SCENARIOS = [
    # Colab TPU v5e-1 and v6e-1: jax[tpu] with the libtpu its release pins, from PyPI
    Scenario(
        "v5e-jax-any",
        "colab-v5e-1",
        'jax = "*"',
        {
            "jax": Expect(
                "==0.12.0.1", requirements=("jax[tpu]==0.12.0.1", "jaxlib==0.12.0.1", "libtpu==0.0.50.*")
            )
        },
    ),
    Scenario(
        "v6e-jax-0.6",
        "colab-v6e-1",
        'jax = "==0.6.*"',
        {"jax": Expect("==0.6.2", requirements=("jax[tpu]==0.6.2", "jaxlib==0.6.2", "libtpu==0.0.17.*"))},
    ),
    Scenario(
        "v6e-jax-golden-range",
        "colab-v6e-1",
        'jax = ">=0.7.2,<0.9"',
        {"jax": Expect("==0.8.3", requirements=("libtpu==0.0.32.*",))},
    ),
    # v6e came with jax 0.4.35 (libtpu from the find-links page then): older releases are refused
    Scenario(
        "v6e-jax-0.4.31-refused",
        "colab-v6e-1",
        'jax = "==0.4.31"',
        error=("jax 0.4.31: tpu does not run on TPU v6e",),
    ),
    Scenario(
        "v6e-jax-0.4-newest-that-runs",
        "colab-v6e-1-py311",
        'jax = "<0.5"',
        {
            "jax": Expect(
                "==0.4.38",
                find_links=JAX_LINKS,
                requirements=("libtpu-nightly==0.1.dev20241010+nightly.cleanup", "libtpu==0.0.7"),
            )
        },
    ),
    Scenario(
        "v5e-jax-0.4.30-find-links",
        "colab-v5e-1",
        'jax = "==0.4.30"',
        {"jax": Expect("==0.4.30", find_links=JAX_LINKS, requirements=("libtpu-nightly==0.1.dev20240617",))},
    ),
    # torch: the CPU wheel with torch_xla[tpu] of the same minor
    Scenario(
        "v6e-torch-any",
        "colab-v6e-1",
        'torch = { version = "*", torchvision = "*" }',
        {
            "torch": Expect(
                "==2.9.0",
                requirements=(
                    "torch==2.9.0+cpu",
                    "torchvision==0.24.0+cpu",
                    "torch-xla[tpu]==2.9.0",
                    "libtpu==0.0.21",
                ),
            )
        },
    ),
    Scenario(
        "v6e-torch-py313",
        "colab-v6e-1-py313",
        'torch = "*"',
        {"torch": Expect("==2.8.0", requirements=("torch-xla[tpu]==2.8.1", "libtpu==0.0.17"))},
    ),
    Scenario(
        "v5e-torch-2.6-py312-refused",
        "colab-v5e-1",
        'torch = "==2.6.*"',
        error=("torch 2.6.0: tpu has no wheel for Python 3.12",),
    ),
    Scenario(
        "kaggle-torch-2.6",
        "kaggle-v3-8",
        'torch = "==2.6.*"',
        {
            "torch": Expect(
                "==2.6.0", find_links=XLA_LINKS, requirements=("torch==2.6.0+cpu", "torch-xla[tpu]==2.6.1")
            )
        },
    ),
    Scenario(
        "torch-2.10-has-no-torch-xla",
        "colab-v6e-1",
        'torch = ">=2.10"',
        error=("torch 2.10.0 to 2.15.0: no TPU build", "TPU builds of torch are 2.1.0 to 2.9.0"),
    ),
    Scenario(
        "torch-cuda-variant-on-a-tpu",
        "colab-v6e-1",
        'torch = { version = "==2.9.0", variant = "cu128" }',
        error=("cu128 needs an NVIDIA GPU; the target is a TPU host",),
    ),
    Scenario(
        "torch-cpu-asked",
        "colab-v6e-1",
        'torch = { version = "==2.9.0", variant = "cpu" }',
        {"torch": Expect("==2.9.0", variant="cpu", requirements=("torch==2.9.0+cpu",))},
    ),
    Scenario("tpu7x-torch-2.9", "cloud-tpu7x-8", 'torch = "*"', {"torch": Expect("==2.9.0")}),
    Scenario(
        "tpu7x-torch-2.8-refused",
        "cloud-tpu7x-8",
        'torch = "==2.8.0"',
        error=("torch 2.8.0: tpu does not run on TPU tpu7x",),
    ),
    # tensorflow: exit 3 with the reason, or its CPU build when asked for
    Scenario(
        "v5e-tensorflow",
        "colab-v5e-1",
        'tensorflow = "*"',
        error=("no TPU build colabenv installs", "tensorflow-tpu", 'variant = "cpu"'),
    ),
    Scenario(
        "v5e-tensorflow-cpu",
        "colab-v5e-1",
        'tensorflow = { version = "*", variant = "cpu" }',
        {"tensorflow": Expect("==2.21.0", variant="cpu")},
    ),
    # Kaggle TPU VM v3-8, Cloud v4 and v5p
    Scenario("kaggle-v3-8-jax", "kaggle-v3-8", 'jax = "*"', {"jax": Expect("==0.10.2")}),
    Scenario(
        "kaggle-v3-8-torch",
        "kaggle-v3-8",
        'torch = "*"',
        {"torch": Expect("==2.9.0", requirements=("torch-xla[tpu]==2.9.0",))},
    ),
    Scenario(
        "v4-jax-and-torch",
        "cloud-v4-8",
        'jax = "*"\ntorch = "*"',
        {"jax": Expect("==0.10.2"), "torch": Expect("==2.9.0")},
    ),
    Scenario(
        "v5p-torch-2.1-refused",
        "cloud-v5p-8-py311",
        'torch = "==2.1.0"',
        error=("torch 2.1.0: tpu does not run on TPU v5p",),
    ),
    Scenario(
        "v5p-torch-2.2",
        "cloud-v5p-8-py311",
        'torch = "==2.2.*"',
        {"torch": Expect("==2.2.2", find_links=XLA_LINKS, requirements=("torch-xla[tpu]==2.2.0",))},
    ),
    # a TPU whose generation is unknown: not checked, and said so
    Scenario(
        "unknown-generation",
        "v2-or-v3",
        'jax = "==0.6.*"',
        {"jax": Expect("==0.6.2")},
        warning="TPU generation unknown",
    ),
]


def _profile(tmp_path: Path, frameworks: str) -> Path:
    path = tmp_path / "p.toml"
    path.write_text(f'name = "p"\n[frameworks]\n{frameworks}\n')
    return path


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_scenario(scenario: Scenario, tmp_path: Path) -> None:
    profile = load_profile(_profile(tmp_path, scenario.frameworks))
    target = TARGETS[scenario.target]()
    if scenario.error:
        with pytest.raises(ResolutionError) as caught:
            resolve(profile, target, CATALOG)
        for words in scenario.error:
            assert words in str(caught.value), str(caught.value)
        assert caught.value.exit_code == 3
        return
    resolution = resolve(profile, target, CATALOG)
    chosen = {c.framework.value: c for c in resolution.choices}
    assert set(chosen) == set(scenario.expect)
    for name, expect in scenario.expect.items():
        choice = chosen[name]
        assert choice.release in SpecifierSet(expect.release), (name, choice.release)
        assert choice.variant == expect.variant, (name, choice.variant, choice.reason)
        for requirement in expect.requirements:
            assert requirement in choice.requirements, choice.requirements
        assert choice.find_links == expect.find_links
        assert choice.installed is expect.installed
        assert choice.cuda is None and choice.pins == ()
    assert resolution.required_driver is None
    assert resolution.constraints == ()
    assert resolution.target.accelerator is Accelerator.TPU
    if scenario.warning:
        assert any(scenario.warning in w for w in resolution.warnings), resolution.warnings
    else:
        assert not any("TPU" in w for w in resolution.warnings), resolution.warnings


def test_the_reason_names_the_tpu_build_and_the_generation(tmp_path: Path) -> None:
    profile = load_profile(_profile(tmp_path, 'jax = "==0.6.*"'))
    choice = resolve(profile, TARGETS["colab-v6e-1"](), CATALOG).choices[0]
    assert "tpu build with libtpu==0.0.17.*" in choice.reason
    assert "runs on TPU v6e" in choice.reason
    as_json = choice.to_json()
    assert "find_links" not in as_json
    old = resolve(
        load_profile(_profile(tmp_path, 'jax = "==0.4.30"')), TARGETS["colab-v5e-1"](), CATALOG
    ).choices[0]
    assert old.to_json()["find_links"] == JAX_LINKS
    assert JAX_LINKS in old.reason


@pytest.mark.parametrize(
    ("installed", "kept"),
    [
        ({"jax": "0.6.2", "jaxlib": "0.6.2", "libtpu": "0.0.17.1"}, True),
        ({"jax": "0.6.2", "jaxlib": "0.6.2", "libtpu": "0.0.13"}, False),
        ({"jax": "0.6.2", "jaxlib": "0.6.2"}, False),
    ],
)
def test_an_installed_tpu_build_is_kept(tmp_path: Path, installed: dict[str, str], kept: bool) -> None:
    profile = load_profile(_profile(tmp_path, 'jax = ">=0.6"'))
    target = tpu_target("v6e", "v6e-1", 1, installed=installed)
    choice = resolve(profile, target, CATALOG).choices[0]
    assert choice.installed is kept
    assert choice.variant == "tpu"
    if kept:
        assert choice.release == Version("0.6.2")
        assert choice.requirements == ("jax==0.6.2", "jaxlib==0.6.2", "libtpu==0.0.17.*")
    else:
        assert choice.release == Version("0.12.0.1")


def test_torch_with_torch_xla_installed_is_kept(tmp_path: Path) -> None:
    profile = load_profile(_profile(tmp_path, 'torch = ">=2.8"'))
    target = tpu_target(
        "v5e", "v5litepod-8", 8, "3.11", {"torch": "2.8.0+cpu", "torch-xla": "2.8.1", "libtpu": "0.0.17"}
    )
    choice = resolve(profile, target, CATALOG).choices[0]
    assert choice.installed and choice.release == Version("2.8.0")
    assert choice.requirements[0] == "torch==2.8.0+cpu"


def test_a_catalog_without_tpu_facts_resolves_nothing_for_a_tpu(tmp_path: Path) -> None:
    bare = Catalog(CATALOG.toolkits, CATALOG.major_lines, CATALOG.releases, CATALOG.components, TpuFacts())
    profile = load_profile(_profile(tmp_path, 'jax = "*"'))
    with pytest.raises(ResolutionError, match="the catalog has no TPU build of it"):
        resolve(profile, TARGETS["colab-v5e-1"](), bare)


def test_a_gpu_target_is_unchanged_by_the_tpu_facts(tmp_path: Path) -> None:
    profile = load_profile(_profile(tmp_path, 'jax = "==0.6.*"'))
    target = nvidia_target("550.54.15", "12.4")
    choice = resolve(profile, target, CATALOG).choices[0]
    assert choice.variant == "cuda12"
    assert not any("libtpu" in r for r in choice.requirements)


def test_the_jax_tpu_golden_profile() -> None:
    profile = load_profile(golden_path("jax-tpu"))
    for name in ("colab-v5e-1", "colab-v6e-1", "kaggle-v3-8", "cloud-tpu7x-8"):
        resolution = resolve(profile, TARGETS[name](), CATALOG)
        (choice,) = resolution.choices
        assert choice.variant == "tpu", name
        assert choice.requirements[0].startswith("jax[tpu]==")
        assert any(r.startswith("libtpu==") for r in choice.requirements)
        assert not resolution.warnings, resolution.warnings


NO_AARCH64_TPU_WHEEL = "tpu has no linux_aarch64 wheel in the catalog (linux_x86_64 only)"


@pytest.mark.parametrize(
    ("frameworks", "words"),
    [
        ('torch = "==2.9.0"', f"torch 2.9.0: {NO_AARCH64_TPU_WHEEL}"),
        ('jax = "==0.8.*"', NO_AARCH64_TPU_WHEEL),
    ],
)
def test_a_tpu_build_is_refused_on_aarch64(frameworks: str, words: str, tmp_path: Path) -> None:
    """tpu.toml lists linux_x86_64 builds alone: an aarch64 TPU target is exit 3 naming that,
    as a CUDA build without an aarch64 wheel is (the TPU build was taken as if it were a CPU
    build, which serves every platform)."""
    profile = load_profile(_profile(tmp_path, frameworks))
    target = dataclasses.replace(TARGETS["colab-v5e-1"](), platform="linux_aarch64")
    with pytest.raises(ResolutionError) as caught:
        resolve(profile, target, CATALOG)
    assert words in str(caught.value), str(caught.value)
    assert caught.value.exit_code == 3


def test_a_cpu_build_asked_for_still_serves_an_aarch64_tpu_target(tmp_path: Path) -> None:
    profile = load_profile(_profile(tmp_path, 'torch = { version = "==2.9.0", variant = "cpu" }'))
    target = dataclasses.replace(TARGETS["colab-v5e-1"](), platform="linux_aarch64")
    (choice,) = resolve(profile, target, CATALOG).choices
    assert choice.variant == "cpu" and not any("torch-xla" in r for r in choice.requirements), choice
