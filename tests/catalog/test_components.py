"""NVIDIA component facts: the loader of components.toml, the coverage a set of GPUs needs,
what a framework build pulls in, and the check ``verify`` runs on installed components."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.catalog.components import component_problems, coverage, nvidia_requirements, pulled_in
from colabenv.catalog.load import COMPONENTS_FILE, load_catalog, load_components
from colabenv.errors import CatalogError
from colabenv.lock.file import read_lock
from colabenv.models import ComponentFacts, ComputeCapability, Variant
from tests.support.catalogs import COMPONENTS, write_catalog
from tests.support.fixtures import Runner

P100, V100, T4, GTX1080TI, RTX3090 = (ComputeCapability.parse(c) for c in ("6.0", "7.0", "7.5", "6.1", "8.6"))
MAXWELL, BLACKWELL = ComputeCapability.parse("5.2"), ComputeCapability.parse("12.0")
KEPLER = ComputeCapability.parse("3.7")


def _facts(tmp_path: Path, text: str = COMPONENTS) -> ComponentFacts:
    return load_components(write_catalog(tmp_path / "catalog", components=text))


@pytest.fixture
def facts(tmp_path: Path) -> ComponentFacts:
    return _facts(tmp_path)


# ---------------------------------------------------------------------------------------------
# Loading


def test_components_load_in_order_with_their_ranges(facts: ComponentFacts) -> None:
    cudnn = facts.component("nvidia_cudnn_cu12")
    assert cudnn is not None
    assert [r.specifier for r in cudnn.ranges] == [">=8.9,<9.0", ">=9.0,<9.11", ">=9.11"]
    assert cudnn.range_of(Version("9.10.2.21")) is cudnn.ranges[1]
    assert cudnn.range_of(Version("8.8.1.3")) is None
    assert cudnn.ranges[2].checked == (Version("9.11.0.98"), Version("9.28.0.42"))
    meta = facts.toolkit_meta(Version("12.6.3"))
    assert meta is not None
    assert [str(p) for p in meta.pins("cublas")] == ["nvidia-cublas-cu12==12.6.4.1.*"]
    assert meta.pins("nvjpeg") == ()


def test_the_catalog_carries_component_facts_only_when_asked(tmp_path: Path) -> None:
    root = write_catalog(tmp_path / "catalog", components=COMPONENTS)
    assert load_catalog(root).components == ComponentFacts()
    assert load_catalog(root, components=True).components == load_components(root)


def _swap(old: str, new: str, count: int = 1) -> Callable[[str], str]:
    def mutate(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, count)

    return mutate


BROKEN = [
    pytest.param(
        _swap('versions = ">=9.0,<9.11"', 'versions = "~=9.0"'),
        "component[0].range[1].versions",
        id="not-a-range",
    ),
    pytest.param(
        _swap('versions = ">=9.0,<9.11"', 'versions = ">=9.0,<9.x1"'),
        "component[0].range[1].versions",
        id="bad-bound",
    ),
    pytest.param(
        _swap('versions = ">=9.0,<9.11"', 'versions = ">=9.0,>=9.1"'),
        "component[0].range[1].versions",
        id="two-lower-bounds",
    ),
    pytest.param(
        _swap('versions = ">=9.0,<9.11"', 'versions = ">=9.11,<9.0"'),
        "component[0].range[1].versions",
        id="empty-range",
    ),
    pytest.param(
        _swap('versions = ">=9.0,<9.11"', 'versions = ">=8.9.5,<9.11"'),
        "component[0].range",
        id="overlapping-ranges",
    ),
    pytest.param(
        _swap('checked = ["9.0.0.312", "9.10.2.21"]', 'checked = ["9.11.0.98"]'),
        "component[0].range[1].checked",
        id="checked-outside-range",
    ),
    pytest.param(
        _swap('checked = ["9.0.0.312", "9.10.2.21"]', "checked = []"),
        "component[0].range[1].checked",
        id="nothing-checked",
    ),
    pytest.param(
        _swap(
            'checked = ["9.0.0.312", "9.10.2.21"]\nsource = "test"\n',
            'checked = ["9.0.0.312", "9.10.2.21"]\n',
        ),
        "component[0].range[1].source",
        id="range-without-source",
    ),
    pytest.param(
        _swap('archs = ["sm_75", "sm_80", "sm_90", "sm_100", "sm_120", "compute_120"]', 'archs = ["sm_7.5"]'),
        "component[0].range[2].archs",
        id="bad-arch",
    ),
    pytest.param(
        _swap('archs = ["sm_75", "sm_80", "sm_90", "sm_100", "sm_120", "compute_120"]', "archs = []"),
        "component[0].range[2].archs",
        id="no-archs",
    ),
    pytest.param(
        _swap("cuda_major = 12", "cuda_major = 13"), "component[0].cuda_major", id="cuda-major-against-name"
    ),
    pytest.param(
        _swap('name = "nvidia-cusparselt-cu12"', 'name = "nvidia-cudnn-cu12"'),
        "component",
        id="duplicate-component",
    ),
    pytest.param(
        _swap('name = "nvidia-cusparselt-cu12"', 'name = "cusparselt"'), "component[1].name", id="not-nvidia"
    ),
    pytest.param(
        _swap("cuda_major = 12\n", 'cuda_major = 12\nlibrary = "x"\n'),
        "component[0].library",
        id="unknown-key",
    ),
    pytest.param(
        _swap('cublas = ["nvidia-cublas-cu12==12.6.4.1.*"]', 'cublas = ["cublas !!"]'),
        "toolkit_meta[0].extras.cublas",
        id="bad-meta-pin",
    ),
    pytest.param(
        _swap('cublas = ["nvidia-cublas-cu12==12.6.4.1.*"]', "cublas = []"),
        "toolkit_meta[0].extras.cublas",
        id="empty-meta-extra",
    ),
    pytest.param(lambda t: t + t[t.index("[[toolkit_meta]]") :], "toolkit_meta", id="duplicate-meta"),
]


@pytest.mark.parametrize(("mutate", "key"), BROKEN)
def test_broken_component_facts_are_refused(tmp_path: Path, mutate: Callable[[str], str], key: str) -> None:
    with pytest.raises(CatalogError) as caught:
        _facts(tmp_path, mutate(COMPONENTS))
    message = str(caught.value)
    assert message.startswith(f"catalog {COMPONENTS_FILE}: "), message
    assert key in message, message
    assert caught.value.exit_code == 70


# ---------------------------------------------------------------------------------------------
# Coverage for a set of GPUs


@pytest.mark.parametrize(
    ("gpus", "requirement", "held"),
    [
        pytest.param([P100], "nvidia-cudnn-cu12<9.11", [P100], id="p100"),
        pytest.param([GTX1080TI, RTX3090], "nvidia-cudnn-cu12<9.11", [GTX1080TI], id="mixed"),
        pytest.param([V100], "nvidia-cudnn-cu12<9.11", [V100], id="v100"),
        pytest.param([MAXWELL], "nvidia-cudnn-cu12<9.11", [MAXWELL], id="maxwell"),
        pytest.param([T4], None, [], id="t4-not-held-back"),
        pytest.param([RTX3090, BLACKWELL], None, [], id="ampere-blackwell"),
        pytest.param([], None, [], id="unknown-gpus"),
        pytest.param([KEPLER], None, [], id="never-covered"),
    ],
)
def test_cudnn_coverage(
    facts: ComponentFacts,
    gpus: list[ComputeCapability],
    requirement: str | None,
    held: list[ComputeCapability],
) -> None:
    cudnn = facts.component("nvidia-cudnn-cu12")
    assert cudnn is not None
    found = coverage(cudnn, gpus)
    if requirement is None:
        assert found is None
        return
    assert found is not None
    assert found.requirement == requirement
    assert list(found.gpus) == held
    assert found.last_covering == Version("9.10.2.21")
    assert "9.11 and later carry no kernels for" in found.reason
    assert "9.10.2.21 is the last release read" in found.reason
    assert found.admits(Version("9.10.2.21")) and not found.admits(Version("9.28.0.42"))
    assert found.admits_any(SpecifierSet(">=9.8,<10.0"))
    assert found.admits_any(SpecifierSet("==9.10.2.21"))
    assert found.admits_any(SpecifierSet("<10"))
    assert not found.admits_any(SpecifierSet("==9.19.0.56"))
    assert not found.admits_any(SpecifierSet(">=9.12.0.46,<10.0"))


def test_a_gpu_the_library_never_supported_holds_nothing_back(facts: ComponentFacts) -> None:
    """cuSPARSELt has kernels from Ampere on only: the frameworks use it only there."""
    lt = facts.component("nvidia-cusparselt-cu12")
    assert lt is not None
    assert coverage(lt, [P100]) is None
    assert coverage(lt, [T4, RTX3090]) is None
    assert component_problems({"nvidia-cusparselt-cu12": "0.8.1"}, [T4], facts) == ()


def test_a_new_gpu_is_held_to_newer_releases(tmp_path: Path) -> None:
    text = COMPONENTS.replace(
        'archs = ["sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "compute_90"]',
        'archs = ["sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]',
    )
    cudnn = _facts(tmp_path, text).component("nvidia-cudnn-cu12")
    assert cudnn is not None
    found = coverage(cudnn, [BLACKWELL])
    assert found is not None
    assert found.requirement == "nvidia-cudnn-cu12>=9.0"
    assert "before 9.0 carries no kernels for sm_120" in found.reason
    both = coverage(cudnn, [P100, BLACKWELL])
    assert both is not None and both.requirement == "nvidia-cudnn-cu12>=9.0,<9.11"


def test_gpus_no_single_release_covers(tmp_path: Path) -> None:
    text = COMPONENTS.replace(
        '"sm_50", "sm_60", "sm_61", "sm_70", "sm_80", "sm_90", "sm_100", "sm_120", "compute_120"',
        '"sm_50", "sm_60", "sm_61", "sm_70", "sm_80"',
    )
    text = text.replace(
        '"sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "compute_90"',
        '"sm_50", "sm_60", "sm_61"',
    )
    cudnn = _facts(tmp_path, text).component("nvidia-cudnn-cu12")
    assert cudnn is not None
    found = coverage(cudnn, [P100, BLACKWELL])
    assert found is not None and not found.possible
    assert not found.admits_any(SpecifierSet(">=8"))
    assert "no known nvidia-cudnn-cu12 release carries kernels for all of" in found.reason


# ---------------------------------------------------------------------------------------------
# What a build pulls in


def test_pins_and_cuda_toolkit_extras_become_components(facts: ComponentFacts) -> None:
    pins = [
        "cuda-toolkit[cublas,cudart,nvtx]==12.6.3",
        "nvidia-cudnn-cu12==9.10.2.21",
        "nvidia-nccl-cu12==2.27.5",
        "cuda-bindings>=12.9.4,<13",
    ]
    found = pulled_in(pins, facts)
    assert [(str(p.component.name), str(p.specifier)) for p in found] == [
        ("nvidia-cublas-cu12", "==12.6.4.1.*"),
        ("nvidia-cudnn-cu12", "==9.10.2.21"),
    ]
    through_cusolver = pulled_in(["cuda-toolkit[cusolver]==12.6.3.0"], facts)
    assert [p.pin for p in through_cusolver] == [
        "cuda-toolkit[cusolver]==12.6.3.0 (nvidia-cublas-cu12==12.6.4.1.*)"
    ]
    assert found[0].pin == "cuda-toolkit[cublas]==12.6.3 (nvidia-cublas-cu12==12.6.4.1.*)"
    assert pulled_in(["cuda-toolkit[cublas]==12.9.1", "cuda-toolkit[cublas]>=12.6"], facts) == ()
    only_cudnn = pulled_in([*pins, "not a requirement !!"], facts, {"nvidia-cudnn-cu12"})
    assert [str(p.component.name) for p in only_cudnn] == ["nvidia-cudnn-cu12"]


def test_nvidia_requirements_open_cuda_toolkit_pins_whether_or_not_a_component_is_read() -> None:
    """What a CUDA package's NVIDIA requirements are held to: a build's own pins, and for a
    ``cuda-toolkit[...]==X`` pin what each extra pins in release X, nvJitLink included (no GPU
    code, so no component of its own); a release the file lacks brings only the pin itself."""
    pins = (
        "cuda-toolkit[cublas,nvjitlink]==12.8.1; platform_system == 'Linux'",
        "nvidia-cudnn-cu12==9.19.0.56",
        "cuda-toolkit[nvjitlink]==12.9.1",
    )
    found = [(label, str(req)) for label, req in nvidia_requirements(pins, _SHIPPED.components)]
    assert found == [
        ('cuda-toolkit[cublas,nvjitlink]==12.8.1; platform_system == "Linux"',) * 2,
        ("cuda-toolkit[cublas]==12.8.1 (nvidia-cublas-cu12==12.8.4.1.*)", "nvidia-cublas-cu12==12.8.4.1.*"),
        (
            "cuda-toolkit[nvjitlink]==12.8.1 (nvidia-nvjitlink-cu12==12.8.93.*)",
            "nvidia-nvjitlink-cu12==12.8.93.*",
        ),
        ("nvidia-cudnn-cu12==9.19.0.56",) * 2,
        ("cuda-toolkit[nvjitlink]==12.9.1",) * 2,
    ]
    assert nvidia_requirements(pins, _SHIPPED.components) is nvidia_requirements(pins, _SHIPPED.components)


# ---------------------------------------------------------------------------------------------
# The verify check


_SHIPPED = load_catalog(components=True)


@pytest.mark.parametrize(
    "variant",
    [
        pytest.param(v, id=f"{r.framework}-{r.version}-{v.name}")
        for r in _SHIPPED.releases
        for v in r.variants
        if v.cuda is not None
    ],
)
def test_a_build_pulls_in_components_of_its_own_cuda_major_only(variant: Variant) -> None:
    """The resolver looks for a component's bounds only in builds of the component's CUDA major."""
    assert variant.cuda is not None
    pulled = pulled_in(variant.pin_texts, _SHIPPED.components)
    wrong = [str(item.component.name) for item in pulled if item.component.cuda_major != variant.cuda.major]
    assert wrong == []


def test_installed_components_without_kernels_for_a_gpu_are_problems(
    facts: ComponentFacts,
) -> None:
    installed = {
        "nvidia-cudnn-cu12": "9.28.0.42",
        "nvidia-cublas-cu12": "12.9.1.4",
        "torch": "2.8.0+cu126",
        "nvidia-nccl-cu12": "2.27.5",
    }
    problems = component_problems(installed, [GTX1080TI, RTX3090, GTX1080TI], facts)
    assert len(problems) == 1
    problem = problems[0]
    assert (problem.library, problem.version, problem.gpu) == ("nvidia-cudnn-cu12", "9.28.0.42", GTX1080TI)
    assert problem.last_covering == Version("9.10.2.21")
    assert problem.message == (
        "nvidia-cudnn-cu12 9.28.0.42 has no kernels for sm_61 (GPU 6.1); "
        "9.10.2.21 is the last release that covers it"
    )
    assert component_problems(installed, [T4], facts) == ()
    assert component_problems(installed, [], facts) == ()


@pytest.mark.parametrize(
    ("installed", "count"),
    [
        ({"nvidia-cudnn-cu12": "9.10.2.21"}, 0),
        ({"nvidia-cudnn-cu12": "8.8.1.3"}, 0),  # outside every known range: not judged
        ({"nvidia-cudnn-cu12": "not-a-version"}, 0),
        ({"nvidia-cudnn-cu12": "9.11.0.98"}, 2),
        ({"Nvidia_Cudnn_Cu12": "9.11.0.98+local"}, 2),
        ({"nvidia-cudnn-cu13": "9.28.0.42"}, 0),  # no facts for it here
    ],
)
def test_which_installs_are_judged(facts: ComponentFacts, installed: dict[str, str], count: int) -> None:
    assert len(component_problems(installed, [P100, V100], facts)) == count


# ---------------------------------------------------------------------------------------------
# The real index (pytest -m network)


@pytest.mark.network
@pytest.mark.parametrize("resolver", ["uv", "pip-tools"])
def test_a_jax_lock_for_a_p100_holds_cudnn_below_9_11(runner: Runner, tmp_path: Path, resolver: str) -> None:
    """The real ``colabenv lock`` path against the real package index: jax's cuda12 extra
    admits any cuDNN 9, and only the resolution's constraint keeps the lock on a release with
    Pascal kernels (without it the lock takes the newest cuDNN, which has none)."""
    profile = tmp_path / "jax.toml"
    profile.write_text('name = "jax-p100"\n[frameworks]\njax = "*"\n')
    target = ("--driver", "560.35.03", "--compute-capability", "6.0", "--python", "3.11")
    shown = runner("resolve", str(profile), "--json", *target)
    assert shown.returncode == 0, shown.stderr
    assert "nvidia-cudnn-cu12<9.11" in [c["requirement"] for c in json.loads(shown.stdout)["constraints"]]
    out = tmp_path / "jax.lock"
    done = runner(
        "lock",
        str(profile),
        "-o",
        str(out),
        "--resolver",
        resolver,
        "--quiet",
        *target,
        env={"UV_INDEX_URL": None, "PIP_INDEX_URL": None},
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    pins = dict(read_lock(out).pins)
    assert pins["jax-cuda12-plugin"], pins
    assert Version(pins["nvidia-cudnn-cu12"]) < Version("9.11"), pins["nvidia-cudnn-cu12"]
