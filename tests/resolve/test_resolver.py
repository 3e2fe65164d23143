"""The resolver over real targets: a scenario table in the light-the-torch style.

Each row is a host (driver, CUDA, GPUs, Python, what is installed) and a profile's
[frameworks]; it expects, per framework, the release line, the variant and whether the
installed copy is kept, or exit 3 with words from the message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.catalog.load import load_catalog, shipped_catalog
from colabenv.errors import ProfileError, ResolutionError
from colabenv.host.detect import read_freeze
from colabenv.models import Catalog, Framework, InstalledSet
from colabenv.profile.load import load_profile
from colabenv.resolve.resolver import resolve
from tests.support.catalogs import (
    COMPONENTS,
    component_entry,
    component_range,
    components_file,
    framework_file,
    release_entry,
    torch_variant,
    variant_entry,
    write_catalog,
)
from tests.support.paths import DATA
from tests.support.targets import cpu_target, nvidia_target

RUNTIMES = DATA / "runtimes"


def _colab(snapshot: str) -> InstalledSet:
    return read_freeze(RUNTIMES / snapshot / "pip-freeze.txt")


TARGETS = {
    "colab-t4": lambda: nvidia_target("550.54.15", "12.4", ("7.5",), "3.12"),
    "colab-t4-py311": lambda: nvidia_target("550.54.15", "12.4", ("7.5",), "3.11"),
    "colab-2025.07": lambda: nvidia_target("550.54.15", "12.4", ("7.5",), "3.11", _colab("colab-2025.07")),
    "colab-2025.10": lambda: nvidia_target("550.54.15", "12.4", ("7.5",), "3.12", _colab("colab-2025.10")),
    "kaggle-p100": lambda: nvidia_target("560.35.03", "12.6", ("6.0",), "3.11"),
    "kaggle-2xt4": lambda: nvidia_target("560.35.03", "12.6", ("7.5", "7.5"), "3.11"),
    "a100": lambda: nvidia_target("570.124.06", "12.8", ("8.0",), "3.12"),
    "h100-580": lambda: nvidia_target("580.65.06", "13.0", ("9.0",), "3.12"),
    "h200-580": lambda: nvidia_target("580.95.05", "13.0", ("9.0",), "3.12"),
    "t4-590": lambda: nvidia_target("590.44.01", "13.1", ("7.5",), "3.12"),
    "l4-590": lambda: nvidia_target("590.44.01", "13.1", ("8.9",), "3.12"),
    "old-470": lambda: nvidia_target("470.82.01", "11.4", ("7.5",), "3.10"),
    "mixed-1080ti-3090": lambda: nvidia_target("570.133.07", "12.8", ("6.1", "8.6"), "3.12"),
    "v100": lambda: nvidia_target("570.124.06", "12.8", ("7.0",), "3.12"),
    "pascal-575": lambda: nvidia_target("575.51.03", "12.9", ("6.1",), "3.12"),
    "maxwell-m60": lambda: nvidia_target("570.124.06", "12.8", ("5.2",), "3.12"),
    "kepler-k80": lambda: nvidia_target("470.82.01", "11.4", ("3.7",), "3.10"),
    "cuda-only-12.4": lambda: nvidia_target(None, "12.4", ("7.5",), "3.12"),
    "gpu-unknown-arch": lambda: nvidia_target("570.124.06", "12.8", (), "3.12"),
    "cpu": lambda: cpu_target("3.12"),
    "cpu-py311": lambda: cpu_target("3.11"),
}


@dataclass(frozen=True)
class Expect:
    """``release``: a specifier the chosen release must satisfy."""

    release: str
    variant: str
    installed: bool = False
    requirement: str | None = None


@dataclass(frozen=True)
class Scenario:
    id: str
    target: str
    frameworks: str
    expect: dict[str, Expect] = field(default_factory=dict)
    error: tuple[str, ...] = ()
    warning: str | None = None
    extra_toml: str = ""
    constraints: tuple[str, ...] | None = None
    """The resolution's component constraints, exactly (None: not checked)."""


PASCAL = ("nvidia-cudnn-cu12<9.11",)
VOLTA = ("nvidia-cudnn-cu12<9.11",)
MAXWELL = ("nvidia-cudnn-cu12<9.11", "nvidia-nccl-cu12<2.28")

SCENARIOS = [
    # Colab T4 on driver 550.54.15: cu124 is the newest fully supported torch build; newer
    # torch releases only ship cu126+ and run by minor-version compatibility.
    Scenario(
        "t4-torch-any",
        "colab-t4",
        'torch = "*"',
        {"torch": Expect(">=2.11", "cu126")},
        warning="minor-version compatibility",
    ),
    # the CUDA 13 builds of torch 2.11-2.14.1 have no sm_75 code in libtorch_cuda_linalg.so: a
    # T4 on a CUDA 13 driver gets the CUDA 12 build, an L4 (sm_89, through sm_86) the CUDA 13 one
    Scenario(
        "t4-cuda13-driver-torch-2.14", "t4-590", 'torch = "==2.14.1"', {"torch": Expect("==2.14.1", "cu126")}
    ),
    Scenario(
        "l4-cuda13-driver-torch-2.14", "l4-590", 'torch = "==2.14.1"', {"torch": Expect("==2.14.1", "cu130")}
    ),
    Scenario(
        "t4-cuda13-driver-torch-2.15",
        "t4-590",
        'torch = "==2.15.0"',
        {"torch": Expect("==2.15.0", "cu132")},
        warning="minor-version compatibility",
    ),
    Scenario(
        "t4-torch-2.6",
        "colab-t4",
        'torch = "==2.6.*"',
        {"torch": Expect("==2.6.*", "cu124", requirement="torch==2.6.0+cu124")},
    ),
    Scenario(
        "t4-torch-2.5-cu121",
        "colab-t4",
        'torch = { version = "==2.5.*", variant = "cu121" }',
        {"torch": Expect("==2.5.*", "cu121")},
    ),
    Scenario(
        "colab-2025.07-keeps-torch",
        "colab-2025.07",
        'torch = "*"',
        {"torch": Expect("==2.6.0", "cu124", installed=True, requirement="torch==2.6.0+cu124")},
    ),
    Scenario(
        "colab-2025.07-keeps-all-three",
        "colab-2025.07",
        'torch = "*"\ntensorflow = "*"\njax = "*"',
        {
            "torch": Expect("==2.6.0", "cu124", installed=True),
            "tensorflow": Expect("==2.18.0", "and-cuda", installed=True),
            "jax": Expect("==0.5.2", "cuda12", installed=True),
        },
    ),
    Scenario(
        "colab-2025.10-keeps-torch-2.8",
        "colab-2025.10",
        'torch = ">=2.8"',
        {"torch": Expect("==2.8.0", "cu126", installed=True, requirement="torch==2.8.0+cu126")},
    ),
    Scenario(
        "colab-2025.10-upgrade-asked",
        "colab-2025.10",
        'torch = ">=2.9"',
        {"torch": Expect(">=2.9", "cu126")},
        warning="replaces the installed torch",
    ),
    Scenario(
        "colab-2025.10-downgrade-named",
        "colab-2025.10",
        'torch = "==2.6.*"',
        {"torch": Expect("==2.6.*", "cu124")},
        warning="downgrades the installed torch",
    ),
    Scenario("p100-torch-any", "kaggle-p100", 'torch = "*"', {"torch": Expect(">=2.11", "cu126")}),
    Scenario(
        "p100-torch-2.8-not-cu128", "kaggle-p100", 'torch = "==2.8.*"', {"torch": Expect("==2.8.*", "cu126")}
    ),
    Scenario(
        "p100-torch-cu128-refused",
        "kaggle-p100",
        'torch = { version = "==2.8.*", variant = "cu128" }',
        error=("frameworks.torch", "no kernels for sm_60"),
    ),
    Scenario("dual-t4-torch-2.8", "kaggle-2xt4", 'torch = "==2.8.*"', {"torch": Expect("==2.8.*", "cu126")}),
    Scenario("a100-torch-2.8", "a100", 'torch = "==2.8.*"', {"torch": Expect("==2.8.*", "cu128")}),
    # torch 2.15.0's confirmed GPU build is its CUDA 13.2 one (the PyPI default): on a 580
    # driver it runs by minor-version compatibility, and it is still the newest release; the
    # warning names the unconfirmed cu130 build the driver fully supports
    Scenario(
        "h100-torch-any",
        "h100-580",
        'torch = "*"',
        {"torch": Expect("==2.15.0", "cu132", requirement="torch==2.15.0+cu132")},
        warning="minor-version compatibility only; code that JIT-compiles PTX may fail (update the driver "
        "to >= 595.45.04 for full support); its cu130 build, which the driver fully supports, is "
        "unconfirmed: allow it with --allow-unconfirmed",
    ),
    Scenario("h100-torch-2.14-cu130", "h100-580", 'torch = "<2.15"', {"torch": Expect("==2.14.1", "cu130")}),
    # its cu130 build (unconfirmed: the release plan's, not read from the index) is taken when
    # unconfirmed builds are allowed: a 580 driver fully supports CUDA 13.0, and only runs 13.2
    # by minor-version compatibility
    Scenario(
        "h100-torch-2.15-cu130-allowed",
        "h100-580",
        'torch = ">=2.15"',
        {"torch": Expect("==2.15.0", "cu130", requirement="torch==2.15.0+cu130")},
        extra_toml="[catalog]\nallow_unconfirmed = true\n",
    ),
    Scenario(
        "h200-torch-jax",
        "h200-580",
        'torch = "*"\njax = "*"',
        {"torch": Expect("==2.15.0", "cu132"), "jax": Expect(">=0.12", "cuda13")},
    ),
    Scenario(
        "h200-torch-2.15-jax-0.12",
        "h200-580",
        'torch = ">=2.15"\njax = ">=0.12"',
        {
            "torch": Expect("==2.15.0", "cu132"),
            "jax": Expect("==0.12.0.1", "cuda13", requirement="jaxlib==0.12.0.1"),
        },
        constraints=(),
    ),
    Scenario(
        "a100-torch-2.15-needs-580",
        "a100",
        'torch = ">=2.15"',
        error=("frameworks.torch", "torch 2.15.0: cu132 needs driver >= 580.65.06"),
    ),
    Scenario(
        "cpu-torch-2.15-unconfirmed",
        "cpu",
        'torch = ">=2.15"',
        error=("torch 2.15.0: cpu is unconfirmed", "--allow-unconfirmed"),
    ),
    Scenario("h200-jax", "h200-580", 'jax = "*"', {"jax": Expect(">=0.7.2", "cuda13")}),
    Scenario("h200-tensorflow", "h200-580", 'tensorflow = "*"', {"tensorflow": Expect(">=2.20", "and-cuda")}),
    Scenario(
        "old-470-torch",
        "old-470",
        'torch = "*"',
        {"torch": Expect("<2.8", "cu118")},
        warning="minor-version compatibility",
    ),
    Scenario(
        "old-470-jax-refused", "old-470", 'jax = "*"', error=("frameworks.jax", "needs driver >= 525.60.13")
    ),
    Scenario("mixed-pascal-ampere", "mixed-1080ti-3090", 'torch = "*"', {"torch": Expect(">=2.11", "cu126")}),
    Scenario(
        "mixed-cu128-refused",
        "mixed-1080ti-3090",
        'torch = { version = ">=2.8", variant = "cu128" }',
        error=("frameworks.torch", "sm_61"),
    ),
    Scenario(
        "cuda-only-override", "cuda-only-12.4", 'torch = "==2.6.*"', {"torch": Expect("==2.6.*", "cu124")}
    ),
    Scenario(
        "unknown-arch-warns",
        "gpu-unknown-arch",
        'torch = "==2.8.*"',
        {"torch": Expect("==2.8.*", "cu128")},
        warning="compute capability unknown",
    ),
    Scenario(
        "cpu-torch", "cpu", 'torch = "*"', {"torch": Expect("==2.14.1", "cpu")}
    ),  # 2.15.0 cpu is unconfirmed
    Scenario(
        "cpu-jax", "cpu", 'jax = "==0.5.3"', {"jax": Expect("==0.5.3", "cpu", requirement="jax==0.5.3")}
    ),
    Scenario("cpu-tensorflow", "cpu", 'tensorflow = "==2.18.*"', {"tensorflow": Expect("==2.18.*", "cpu")}),
    Scenario(
        "cpu-require-gpu-warns",
        "cpu",
        'torch = "*"',
        {"torch": Expect(">=2.0", "cpu")},
        warning="requires a GPU",
        extra_toml="[verify]\nrequire_gpu = true\n",
    ),
    Scenario(
        "cpu-variant-on-gpu",
        "a100",
        'torch = { version = "==2.8.*", variant = "cpu" }',
        {"torch": Expect("==2.8.*", "cpu", requirement="torch==2.8.0+cpu")},
    ),
    Scenario(
        "t4-tensorflow", "colab-t4-py311", 'tensorflow = "*"', {"tensorflow": Expect(">=2.20", "and-cuda")}
    ),
    Scenario("t4-jax", "colab-t4", 'jax = "*"', {"jax": Expect(">=0.7.2", "cuda12")}),
    Scenario(
        "a100-torch-jax-joint",
        "a100",
        'torch = "*"\njax = "*"',
        {"torch": Expect(">=2.11", "cu126"), "jax": Expect(">=0.7.2", "cuda12")},
    ),
    Scenario(
        "clash-torch25-jax06",
        "a100",
        'torch = "==2.5.*"\njax = ">=0.6"',
        error=("nvidia-cudnn-cu12==9.1.0.70", "use torch>=", "jax<0."),
    ),
    Scenario(
        "clash-torch23-jax0430",
        "a100",
        'torch = "==2.3.*"\njax = ">=0.4.30,<0.5"',
        error=("nvidia-cudnn-cu12==8.9.2.26",),
    ),
    Scenario(
        "clash-torch26-tf218",
        "colab-t4-py311",
        'torch = "==2.6.*"\ntensorflow = "==2.18.*"',
        error=("nvidia-cudnn-cu12", "tensorflow"),
    ),
    Scenario(
        "joint-picks-older-jax",
        "a100",
        'torch = "==2.6.*"\njax = "*"',
        {"torch": Expect("==2.6.*", "cu126"), "jax": Expect("<0.6", "cuda12")},
    ),
    Scenario(
        "companions-follow-variant",
        "kaggle-p100",
        'torch = { version = "==2.8.*", torchvision = "*", torchaudio = "*" }',
        {"torch": Expect("==2.8.*", "cu126", requirement="torchvision==0.23.0+cu126")},
    ),
    Scenario(
        "companion-range-refused",
        "a100",
        'torch = { version = "==2.8.*", torchvision = ">=0.30" }',
        error=("frameworks.torch", "torchvision"),
    ),
    Scenario(
        "python-refused",
        "colab-t4-py311",
        'torch = "*"',
        error=("python", "3.11"),
        extra_toml='python = ">=3.12"\n',
    ),
    Scenario("no-such-release", "a100", 'torch = "==1.13.*"', error=("frameworks.torch", "no release")),
    # NVIDIA components (issue 13): jax[cuda12] and tensorflow[and-cuda] admit any cuDNN 9,
    # and cuDNN 9.11 and later carry no kernels below sm_75
    Scenario(
        "p100-jax-cudnn-held",
        "kaggle-p100",
        'jax = "*"',
        {"jax": Expect(">=0.7.2", "cuda12")},
        constraints=PASCAL,
    ),
    Scenario(
        "p100-tensorflow-cudnn-held",
        "kaggle-p100",
        'tensorflow = "*"',
        {"tensorflow": Expect(">=2.20", "and-cuda")},
        constraints=PASCAL,
    ),
    Scenario(
        "v100-jax-cudnn-held", "v100", 'jax = "*"', {"jax": Expect(">=0.7.2", "cuda12")}, constraints=VOLTA
    ),
    Scenario(
        "v100-tensorflow-cudnn-held",
        "v100",
        'tensorflow = "*"',
        {"tensorflow": Expect(">=2.20", "and-cuda")},
        constraints=VOLTA,
    ),
    Scenario(
        "mixed-jax-cudnn-held",
        "mixed-1080ti-3090",
        'jax = "*"',
        {"jax": Expect(">=0.7.2", "cuda12")},
        constraints=PASCAL,
    ),
    Scenario(
        "mixed-tensorflow-cudnn-held",
        "mixed-1080ti-3090",
        'tensorflow = "*"',
        {"tensorflow": Expect(">=2.20", "and-cuda")},
        constraints=PASCAL,
    ),
    Scenario(
        "pascal-575-jax-cudnn-held",
        "pascal-575",
        'jax = "*"',
        {"jax": Expect(">=0.7.2", "cuda12")},
        constraints=PASCAL,
    ),
    Scenario(
        "pascal-575-tensorflow-cudnn-held",
        "pascal-575",
        'tensorflow = "*"',
        {"tensorflow": Expect(">=2.20", "and-cuda")},
        constraints=PASCAL,
    ),
    Scenario(
        "t4-jax-not-held-back", "colab-t4", 'jax = "*"', {"jax": Expect(">=0.7.2", "cuda12")}, constraints=()
    ),
    Scenario(
        "t4-tensorflow-not-held-back",
        "colab-t4-py311",
        'tensorflow = "*"',
        {"tensorflow": Expect(">=2.20", "and-cuda")},
        constraints=(),
    ),
    Scenario(
        "h100-jax-not-held-back",
        "h100-580",
        'jax = "*"',
        {"jax": Expect(">=0.7.2", "cuda13")},
        constraints=(),
    ),
    Scenario(
        "p100-torch-jax-cudnn-held",
        "kaggle-p100",
        'torch = "*"\njax = "*"',
        {"torch": Expect(">=2.11", "cu126"), "jax": Expect(">=0.7.2", "cuda12")},
        constraints=PASCAL,
    ),
    Scenario(
        "maxwell-torch-passes-over-nccl-2.28",
        "maxwell-m60",
        'torch = "*"',
        {"torch": Expect("==2.10.*", "cu126")},
        constraints=MAXWELL,
    ),
    Scenario(
        "k80-torch-passes-over-cudnn-9",
        "kepler-k80",
        'torch = "*"',
        {"torch": Expect("==2.3.*", "cu118", requirement="torch==2.3.1+cu118")},
        constraints=("nvidia-cudnn-cu11<8.8",),
    ),
    Scenario(
        "k80-torch-2.6-clash",
        "kepler-k80",
        'torch = "==2.6.*"',
        error=(
            "torch 2.6.0: cu118 pins nvidia-cudnn-cu11==9.1.0.70",
            "sm_37",
            "nvidia-cudnn-cu11<8.8 has them",
            "to change: allow torch<2.4",
        ),
    ),
    Scenario(
        "maxwell-torch-2.11-clash",
        "maxwell-m60",
        'torch = "==2.11.*"',
        error=(
            "frameworks.torch",
            "torch 2.11.0: cu126 pins nvidia-nccl-cu12==2.28.9",
            "no kernels for sm_52",
            "nvidia-nccl-cu12<2.28 has them",
            "to change: allow torch<2.11",
        ),
    ),
]


def _profile(tmp_path: Path, scenario: Scenario) -> Path:
    path = tmp_path / f"{scenario.id}.toml"
    text = f'name = "{scenario.id}"\n'
    extra = scenario.extra_toml
    top = "".join(line + "\n" for line in extra.splitlines() if line.startswith("python"))
    rest = "".join(line + "\n" for line in extra.splitlines() if not line.startswith("python"))
    path.write_text(text + top + "[frameworks]\n" + scenario.frameworks + "\n" + rest)
    return path


def test_table_is_big_enough() -> None:
    assert len(SCENARIOS) >= 30
    assert len({s.id for s in SCENARIOS}) == len(SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_scenario(scenario: Scenario, tmp_path: Path) -> None:
    profile = load_profile(_profile(tmp_path, scenario))
    target = TARGETS[scenario.target]()
    if scenario.error:
        with pytest.raises(ResolutionError) as caught:
            resolve(profile, target, shipped_catalog())
        message = str(caught.value)
        for words in scenario.error:
            assert words in message, message
        assert caught.value.exit_code == 3
        return
    resolution = resolve(profile, target, shipped_catalog())
    chosen = {c.framework.value: c for c in resolution.choices}
    assert set(chosen) == set(scenario.expect)
    for name, expect in scenario.expect.items():
        choice = chosen[name]
        assert choice.release in SpecifierSet(expect.release), (name, choice)
        assert choice.variant == expect.variant, (name, choice.variant, choice.reason)
        assert choice.installed is expect.installed, (name, choice)
        assert choice.reason
        if expect.requirement:
            assert expect.requirement in choice.requirements, choice.requirements
    if scenario.warning:
        assert any(scenario.warning in w for w in resolution.warnings), resolution.warnings
    if scenario.constraints is not None:
        assert sorted(resolution.constraint_lines) == sorted(scenario.constraints)
        for constraint in resolution.constraints:
            assert constraint.reason
            assert any(constraint.requirement in c.reason for c in resolution.choices)


def test_resolver_keeps_newest_first_and_explains(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('name = "p"\n[frameworks]\ntorch = "*"\n')
    resolution = resolve(load_profile(path), TARGETS["a100"](), shipped_catalog())
    newest = next(
        r.version
        for r in shipped_catalog().releases_of(Framework.TORCH)
        if any(v.cuda is not None and v.cuda.major == 12 for v in r.variants)
    )
    assert resolution.choices[0].release == newest, "the newest release with a CUDA 12 build"
    assert "driver 570.124.06" in resolution.choices[0].reason
    assert resolution.required_driver == Version("525.60.13")


def test_framework_in_packages_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('name = "p"\n[packages]\nrequirements = ["numpy", "torch>=2"]\n')
    with pytest.raises(ProfileError) as caught:
        load_profile(path)
    assert "packages.requirements" in str(caught.value)
    assert "frameworks.torch" in str(caught.value)


def test_every_golden_profile_resolves_for_colab_t4() -> None:
    from colabenv.profile.load import golden_profiles

    for name, _description, path in golden_profiles():
        profile = load_profile(path)
        python = "3.12" if profile.python is None or profile.python.contains("3.12") else "3.11"
        target = nvidia_target("550.54.15", "12.4", ("7.5",), python)
        if name.startswith("cpu"):
            target = cpu_target(python)
        resolution = resolve(profile, target, shipped_catalog())
        assert len(resolution.choices) == len(profile.frameworks), name


def test_optional_companions_come_only_when_asked_or_installed(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('name = "p"\n[frameworks]\ntorch = ">=2.12"\njax = "*"\n')
    resolution = resolve(load_profile(path), TARGETS["a100"](), shipped_catalog())
    torch, jax = resolution.choices
    assert [r.split("==")[0] for r in torch.requirements] == ["torch"]
    assert any(r.startswith("jaxlib==") for r in jax.requirements)
    installed = InstalledSet.from_mapping({"torchaudio": "2.6.0+cu124"})
    target = nvidia_target("570.124.06", "12.8", ("8.0",), "3.12", installed)
    again = resolve(load_profile(path), target, shipped_catalog())
    assert any(r.startswith("torchaudio==") for r in again.choices[0].requirements)


def test_resolution_is_deterministic(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('name = "p"\n[frameworks]\ntorch = "*"\njax = "*"\ntensorflow = "*"\n')
    profile = load_profile(path)
    first = resolve(profile, TARGETS["a100"](), shipped_catalog())
    second = resolve(profile, TARGETS["a100"](), shipped_catalog())
    assert first == second


# ---------------------------------------------------------------------------------------------
# NVIDIA component bounds, on a small catalog whose newest release pins a cuDNN without Pascal
# kernels (as torch 2.11.0+cu128 pins nvidia-cudnn-cu12==9.19.0.56)


def _classic_release(version: str, cudnn: str) -> str:
    """A release with a cu124 build (arch list ``classic``) pinning cuDNN ``cudnn``, and a cpu build."""
    pins = [f"nvidia-cudnn-cu12=={cudnn}", "nvidia-nccl-cu12==2.21.5"]
    return release_entry(version, torch_variant("cu124", archs="classic", pins=pins), variant_entry("cpu"))


COMPONENT_TORCH = framework_file(
    "torch",
    _classic_release("1.1.0", "9.19.0.56"),
    _classic_release("1.0.0", "9.10.2.21"),
    archs={"classic": ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]},
)


def _component_catalog(tmp_path: Path) -> Catalog:
    root = write_catalog(tmp_path / "catalog", torch=COMPONENT_TORCH, components=COMPONENTS)
    return load_catalog(root, components=True)


def _torch_profile(tmp_path: Path, spec: str) -> Path:
    path = tmp_path / "p.toml"
    path.write_text(f'name = "p"\n[frameworks]\ntorch = "{spec}"\n')
    return path


def test_a_release_pinning_a_cudnn_without_the_gpus_kernels_is_passed_over(tmp_path: Path) -> None:
    catalog = _component_catalog(tmp_path)
    profile = load_profile(_torch_profile(tmp_path, "*"))
    p100 = nvidia_target("560.35.03", "12.6", ("6.0",), "3.11")
    resolution = resolve(profile, p100, catalog)
    (choice,) = resolution.choices
    assert choice.release == Version("1.0.0")
    assert resolution.constraint_lines == ("nvidia-cudnn-cu12<9.11",)
    (constraint,) = resolution.constraints
    assert "sm_60" in constraint.reason and "9.10.2.21" in constraint.reason
    assert "nvidia-cudnn-cu12<9.11" in choice.reason
    shown = resolution.to_json()["constraints"]
    assert shown == [{"requirement": "nvidia-cudnn-cu12<9.11", "reason": constraint.reason}]
    t4 = resolve(profile, nvidia_target("560.35.03", "12.6", ("7.5",), "3.11"), catalog)
    assert t4.choices[0].release == Version("1.1.0")
    assert t4.constraints == ()
    unknown = resolve(profile, nvidia_target("560.35.03", "12.6", (), "3.11"), catalog)
    assert unknown.choices[0].release == Version("1.1.0")
    assert unknown.constraints == ()


def test_a_pinned_release_without_the_gpus_kernels_exits_3_naming_pin_gpu_and_fix(
    tmp_path: Path,
) -> None:
    catalog = _component_catalog(tmp_path)
    profile = load_profile(_torch_profile(tmp_path, "==1.1.*"))
    p100 = nvidia_target("560.35.03", "12.6", ("6.0",), "3.11")
    with pytest.raises(ResolutionError) as caught:
        resolve(profile, p100, catalog)
    message = str(caught.value)
    assert caught.value.exit_code == 3
    assert "frameworks.torch" in message
    assert "torch 1.1.0: cu124 pins nvidia-cudnn-cu12==9.19.0.56" in message
    assert "no kernels for sm_60" in message
    assert "nvidia-cudnn-cu12<9.11 has them" in message
    assert "to change: allow torch<1.1" in message


def test_unknown_variant_is_named_with_the_known_ones(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('name = "p"\n[frameworks]\ntorch = { version = "*", variant = "cu999" }\n')
    with pytest.raises(ResolutionError) as caught:
        resolve(load_profile(path), TARGETS["a100"](), shipped_catalog())
    message = str(caught.value)
    assert "frameworks.torch.variant: 'cu999' is not a torch variant the catalog knows" in message
    assert "known: cu117, cu118, cu121, cu124, cu126, cu128, cu129, cu130, cu132, rocm6.0," in message
    assert "rocm6.2.4, rocm6.3, rocm6.4, rocm7.0, rocm7.1, rocm7.2, rocm7.14, rocm10.0, cpu)" in message
    assert "no torch release matching it" not in message
    path.write_text('name = "p"\n[frameworks]\ntorch = { version = "==2.8.*", variant = "cu118" }\n')
    with pytest.raises(ResolutionError) as caught:
        resolve(load_profile(path), TARGETS["a100"](), shipped_catalog())
    assert (
        "no torch release satisfying ==2.8.* has the variant cu118 (they have: cu126, cu128, "
        "cu129, rocm6.3, rocm6.4, cpu)" in str(caught.value)
    )


def test_gpus_no_component_release_covers_together_exit_3(tmp_path: Path) -> None:
    cudnn = component_entry(
        "nvidia-cudnn-cu12",
        12,
        component_range("<9.11", ["sm_60", "sm_90"], ["9.10.2.21"]),
        component_range(">=9.11", ["sm_80", "sm_90"], ["9.19.0.56"]),
    )
    root = write_catalog(tmp_path / "catalog", torch=COMPONENT_TORCH, components=components_file(cudnn))
    catalog = load_catalog(root, components=True)
    profile = load_profile(_torch_profile(tmp_path, "*"))
    with pytest.raises(ResolutionError) as caught:
        resolve(profile, nvidia_target("570.124.06", "12.8", ("6.0", "8.6"), "3.11"), catalog)
    message = str(caught.value)
    assert (
        "pins nvidia-cudnn-cu12==9.10.2.21: no nvidia-cudnn-cu12 release has kernels for all "
        "of sm_60, sm_86" in message
    )
    assert "no release in the catalog pins components with kernels for these GPUs" in message
    either = resolve(profile, nvidia_target("570.124.06", "12.8", ("9.0",), "3.11"), catalog)
    assert either.constraints == ()
    with pytest.raises(ResolutionError) as caught:
        resolve(profile, nvidia_target("570.124.06", "12.8", ("6.0", "12.0"), "3.11"), catalog)
    assert "has no kernels for sm_120" in str(caught.value)
    assert "to change" not in str(caught.value), "the arch list turned it down, not the pins"


# ---------------------------------------------------------------------------------------------
# The target's full Python version against each release's and each companion's range

PYTHON_TORCH = framework_file(
    "torch",
    release_entry(
        "1.2.0",
        torch_variant("cu124"),
        companions={"torchvision": {"version": "0.3.0", "python": ">=3.10,<3.14"}},
    ),
    release_entry(
        "1.1.0",
        torch_variant("cu124"),
        python=">=3.10,!=3.14.1",
        companions={"torchvision": {"version": "0.2.0", "python": ">=3.10,!=3.14.2"}},
    ),
    release_entry("1.0.0", torch_variant("cu124"), companions={"torchvision": "0.1.0"}),
    archs={"modern": ["sm_80", "compute_90"]},
)


def _python_catalog(tmp_path: Path) -> Catalog:
    return load_catalog(write_catalog(tmp_path / "catalog", torch=PYTHON_TORCH))


@pytest.mark.parametrize(
    ("python", "torch_only", "with_torchvision"),
    [
        ("3.13", "1.2.0", "1.2.0"),
        ("3.14", "1.2.0", "1.1.0"),  # only major.minor known: as 3.14.0
        ("3.14.0", "1.2.0", "1.1.0"),
        ("3.14.1", "1.2.0", "1.0.0"),  # 1.1.0's wheels exclude 3.14.1
        ("3.14.2", "1.2.0", "1.0.0"),  # torchvision 0.2.0 excludes 3.14.2; torch 1.1.0 does not
        ("3.14.3", "1.2.0", "1.1.0"),
    ],
)
def test_full_python_version_meets_each_release_and_companion_range(
    tmp_path: Path, python: str, torch_only: str, with_torchvision: str
) -> None:
    catalog = _python_catalog(tmp_path)
    target = nvidia_target("550.54.15", "12.4", ("8.0",), python)
    alone = resolve(load_profile(_torch_profile(tmp_path, "*")), target, catalog)
    assert alone.choices[0].release == Version(torch_only)
    assert alone.choices[0].requirements == (f"torch=={torch_only}+cu124",)
    path = tmp_path / "tv.toml"
    path.write_text('name = "p"\n[frameworks]\ntorch = { version = "*", torchvision = "*" }\n')
    paired = resolve(load_profile(path), target, catalog)
    (choice,) = paired.choices
    assert choice.release == Version(with_torchvision)
    vision = {"1.2.0": "0.3.0", "1.1.0": "0.2.0", "1.0.0": "0.1.0"}[with_torchvision]
    assert f"torchvision=={vision}+cu124" in choice.requirements


def test_an_installed_companion_without_a_wheel_for_the_python_holds_the_release_back(
    tmp_path: Path,
) -> None:
    catalog = _python_catalog(tmp_path)
    installed = InstalledSet.from_mapping({"torchvision": "0.1.0+cu124"})
    target = nvidia_target("550.54.15", "12.4", ("8.0",), "3.14.1", installed)
    resolution = resolve(load_profile(_torch_profile(tmp_path, "*")), target, catalog)
    assert resolution.choices[0].release == Version("1.0.0")


def test_python_refusals_name_the_full_version_and_the_companion(tmp_path: Path) -> None:
    catalog = _python_catalog(tmp_path)
    path = tmp_path / "tv.toml"
    path.write_text('name = "p"\n[frameworks]\ntorch = { version = ">=1.1", torchvision = "*" }\n')
    with pytest.raises(ResolutionError) as caught:
        resolve(load_profile(path), nvidia_target("550.54.15", "12.4", ("8.0",), "3.14.1"), catalog)
    message = str(caught.value)
    assert "no wheel for Python 3.14.1" in message
    assert "torchvision 0.3.0, which has no wheel for Python 3.14.1" in message


def test_shipped_torchvision_has_no_wheel_for_python_3_14_1(tmp_path: Path) -> None:
    """torchvision 0.26.0 and later declare Requires-Python >=3.10,!=3.14.1 (pytorch/vision#9317):
    on 3.14.1 a profile that wants torchvision gets the newest torch whose torchvision installs."""
    path = tmp_path / "tv.toml"
    path.write_text('name = "p"\n[frameworks]\ntorch = { version = "*", torchvision = "*" }\n')
    profile = load_profile(path)
    on_3141 = resolve(profile, nvidia_target("580.95.05", "13.0", ("8.0",), "3.14.1"), shipped_catalog())
    (choice,) = on_3141.choices
    assert choice.release < Version("2.11")
    assert any(r.startswith("torchvision==0.25.") for r in choice.requirements)
    on_3142 = resolve(profile, nvidia_target("580.95.05", "13.0", ("8.0",), "3.14.2"), shipped_catalog())
    assert on_3142.choices[0].release >= Version("2.14")
    target = nvidia_target("580.95.05", "13.0", ("8.0",), "3.14.1")
    alone = resolve(load_profile(_torch_profile(tmp_path, "*")), target, shipped_catalog())
    assert alone.choices[0].release >= Version("2.14")


def test_a_choice_below_a_release_the_python_rules_out_says_why(tmp_path: Path) -> None:
    """The reason names the newest release passed over for the target's Python and what ruled
    it out; a target Python that rules nothing out adds nothing."""
    path = tmp_path / "tv.toml"
    path.write_text('name = "p"\n[frameworks]\ntorch = { version = ">=2.9,<2.12", torchvision = "*" }\n')
    profile = load_profile(path)
    on_3141 = resolve(profile, nvidia_target("580.95.05", "13.0", ("8.0",), "3.14.1"), shipped_catalog())
    (choice,) = on_3141.choices
    assert choice.release == Version("2.10.0")
    assert (
        "; not 2.11.0: pairs with torchvision 0.26.0, which has no wheel for Python 3.14.1" in choice.reason
    )
    on_3142 = resolve(profile, nvidia_target("580.95.05", "13.0", ("8.0",), "3.14.2"), shipped_catalog())
    assert on_3142.choices[0].release == Version("2.11.0")
    assert "; not " not in on_3142.choices[0].reason
