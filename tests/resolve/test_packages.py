"""The CUDA packages chosen jointly with the frameworks: torch pins, the CUDA major, kernels for
every GPU, the driver, NVIDIA wheels that must agree; what is refused and how it is said."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from packaging.version import Version

from colabenv.catalog.load import catalog_for
from colabenv.errors import CatalogOverlayError, ColabenvError, ProfileError, ResolutionError
from colabenv.lock.resolvers import index_plan
from colabenv.models import Resolution, Target
from colabenv.profile.load import load_profile
from colabenv.resolve.resolver import resolve
from tests.support.fixtures import Runner
from tests.support.package_entries import (
    build_entry,
    package_entry,
    packages_file,
    release_entry,
    write_packages,
)
from tests.support.targets import cpu_target, nvidia_target

T4 = ("550.54.15", "12.4", "7.5")
P100 = ("560.35.03", "12.6", "6.0")
H100 = ("580.65.06", "13.0", "9.0")


def _target(
    host: tuple[str, str, str], python: str = "3.12", installed: dict[str, str] | None = None
) -> Target:
    driver, cuda, cap = host
    return nvidia_target(driver, cuda, (cap,), python, installed)


def _resolve(
    tmp_path: Path, frameworks: str, host: tuple[str, str, str] = T4, *, overlay: str = "", **target: object
) -> Resolution:
    text = f'name = "team"\n[frameworks]\n{textwrap.dedent(frameworks)}'
    environ: dict[str, str] = {}
    tmp_path.mkdir(parents=True, exist_ok=True)
    if overlay:
        environ["COLABENV_CATALOG"] = str(write_packages(tmp_path / "catalog", packages_file(overlay)))
    path = tmp_path / "team.toml"
    path.write_text(text)
    profile = load_profile(path)
    goal = _target(host, **target)  # type: ignore[arg-type]
    return resolve(profile, goal, catalog_for(profile, environ, target=goal))


def _refusal(tmp_path: Path, frameworks: str, host: tuple[str, str, str] = T4, **kw: object) -> ColabenvError:
    with pytest.raises(ColabenvError) as caught:
        _resolve(tmp_path, frameworks, host, **kw)  # type: ignore[arg-type]
    return caught.value


def _chosen(resolution: Resolution) -> dict[str, tuple[str, str, str]]:
    found = {c.framework.value: (str(c.release), c.variant, c.requirements[0]) for c in resolution.choices}
    found.update((p.name, (str(p.release), p.variant, p.requirements[0])) for p in resolution.cuda_packages)
    return found


def test_xformers_follows_the_torch_the_profile_allows_and_its_cuda_build(tmp_path: Path) -> None:
    chosen = _chosen(_resolve(tmp_path, 'torch = "==2.8.*"\nxformers = "*"'))
    torch_version, torch_variant, _ = chosen["torch"]
    assert torch_version == "2.8.0"
    version, variant, requirement = chosen["xformers"]
    assert version == "0.0.32.post2"  # the release whose wheel requires torch==2.8.0
    assert variant == torch_variant  # the build of torch's own CUDA
    tag = "" if variant == "cu128" else f"+{variant}"  # the default CUDA's build carries no tag
    assert requirement == f"xformers==0.0.32.post2{tag}"


def test_the_newest_torch_that_fits_every_package_is_taken(tmp_path: Path) -> None:
    alone = _chosen(_resolve(tmp_path / "a", 'torch = "*"'))
    assert Version(alone["torch"][0]) > Version("2.9.1")
    chosen = _chosen(_resolve(tmp_path / "b", 'torch = "*"\nxformers = "==0.0.33.post2"'))
    assert chosen["torch"][0] == "2.9.1"  # xformers 0.0.33.post2 requires torch==2.9.1
    assert chosen["xformers"][0] == "0.0.33.post2"


def test_a_gpu_without_kernels_is_exit_3_naming_package_gpu_and_need(tmp_path: Path) -> None:
    error = _refusal(tmp_path, 'torch = "*"\nxformers = "*"', P100)
    assert isinstance(error, ResolutionError) and error.exit_code == 3
    text = str(error)
    assert text.startswith("team.toml: frameworks.xformers: no release of xformers")
    assert "no kernels for sm_60 (needs 7.5+)" in text


def test_a_pin_no_allowed_torch_meets_is_exit_3_saying_which_torch(tmp_path: Path) -> None:
    error = _refusal(tmp_path, 'torch = "==2.8.*"\nxformers = "==0.0.34"')
    assert isinstance(error, ResolutionError)
    text = str(error)
    assert "xformers 0.0.34 needs torch==2.10.0 (torch 2.8.0 tried)" in text
    assert "allow a torch that xformers is built against (==2.10.0)" in text


def test_a_cuda_13_build_is_left_out_on_a_driver_that_cannot_run_it(tmp_path: Path) -> None:
    old = _chosen(_resolve(tmp_path / "a", 'cupy = "*"', T4))
    assert old["cupy"] == ("14.2.0", "cuda12", "cupy-cuda12x==14.2.0")
    new = _chosen(_resolve(tmp_path / "b", 'cupy = "*"', H100))
    assert new["cupy"] == ("14.2.0", "cuda13", "cupy-cuda13x==14.2.0")


def test_cupy_takes_the_cuda_major_of_torch(tmp_path: Path) -> None:
    cu13 = _chosen(_resolve(tmp_path / "a", 'torch = "*"\ncupy = "*"', H100))
    assert cu13["torch"][1].startswith("cu13") and cu13["cupy"][1] == "cuda13"
    cu12 = _chosen(_resolve(tmp_path / "b", 'torch = { version = "*", variant = "cu128" }\ncupy = "*"', H100))
    assert cu12["cupy"] == ("14.2.0", "cuda12", "cupy-cuda12x==14.2.0")


def test_a_build_asked_for_by_name(tmp_path: Path) -> None:
    chosen = _chosen(_resolve(tmp_path, 'cupy = { version = "<14.1", variant = "cuda12" }', H100))
    assert chosen["cupy"] == ("14.0.1", "cuda12", "cupy-cuda12x==14.0.1")
    error = _refusal(tmp_path / "x", 'cupy = { variant = "cuda11" }')
    assert isinstance(
        error, ProfileError
    ) and "'cuda11' is not a build of cupy (known: cuda12, cuda13, rocm7.0)" in str(error)


def test_an_installed_release_that_fits_is_kept(tmp_path: Path) -> None:
    resolution = _resolve(tmp_path, 'cupy = "*"', T4, installed={"cupy-cuda12x": "14.0.1"})
    (choice,) = resolution.cuda_packages
    assert (str(choice.release), choice.installed, choice.requirements) == (
        "14.0.1",
        True,
        ("cupy-cuda12x==14.0.1",),
    )
    assert choice.reason.startswith("already installed (cupy-cuda12x 14.0.1)")


def _team_ext(
    cuda: str = "12.6",
    requires: tuple[str, ...] = ("nvidia-nccl-cu12>=2.26,<2.27",),
    index_url: str | None = None,
    min_driver: str | None = None,
) -> str:
    """A team's own CUDA package: one release (1.0), one build (cu12) of CUDA ``cuda``."""
    build = build_entry(
        "cu12",
        cuda=cuda,
        index_url=index_url,
        min_driver=min_driver,
        archs=["sm_75", "sm_80", "compute_80"],
        requires=requires,
        source="https://example.org/team-ext",
    )
    release = release_entry("1.0", build, source="https://example.org/team-ext")
    return package_entry("team-ext", release, distribution="team-ext-cu{major}")


TEAM_EXT = _team_ext()


def test_nvidia_wheels_everyone_requires_must_agree(tmp_path: Path) -> None:
    chosen = _chosen(_resolve(tmp_path, 'torch = "<2.10"\nteam-ext = "*"', overlay=TEAM_EXT))
    # torch 2.8 and 2.9 pin nvidia-nccl-cu12 2.27.x; 2.7.1 pins 2.26.2
    assert chosen["torch"][0] == "2.7.1"
    assert chosen["team-ext"] == ("1.0", "cu12", "team-ext-cu12==1.0")
    error = _refusal(tmp_path / "x", 'torch = "==2.8.*"\nteam-ext = "*"', overlay=TEAM_EXT)
    assert (
        "team-ext 1.0 requires nvidia-nccl-cu12<2.27,>=2.26; torch 2.8.0 pins nvidia-nccl-cu12==2.27.3"
        in str(error)
    )


def test_an_overlay_package_is_named_in_the_reason_and_json(tmp_path: Path) -> None:
    resolution = _resolve(tmp_path, 'torch = "<2.10"\nteam-ext = "*"', overlay=TEAM_EXT)
    shown = resolution.to_json()["frameworks"]
    assert isinstance(shown, dict)
    entry = shown["team-ext"]
    assert set(entry) == {
        "distribution",
        "version",
        "variant",
        "index_url",
        "requirements",
        "installed",
        "reason",
        "catalog_file",
    }
    assert entry["distribution"] == "team-ext-cu12" and entry["index_url"] is None
    assert "from the catalog overlay" in entry["reason"]
    assert resolution.requirements[-1] == "team-ext-cu12==1.0"


def test_packages_share_one_cuda_major(tmp_path: Path) -> None:
    only_13 = _team_ext(cuda="13.0", requires=("nvidia-nccl-cu13>=2",))
    chosen = _chosen(_resolve(tmp_path, 'cupy = "*"\nteam-ext = "*"', H100, overlay=only_13))
    assert chosen["cupy"][1] == "cuda13"
    error = _refusal(tmp_path / "x", 'cupy = { variant = "cuda12" }\nteam-ext = "*"', H100, overlay=only_13)
    assert "team-ext cu12 is built for CUDA 13; cupy cuda12 for CUDA 12" in str(error)


def test_a_torch_package_without_torch_and_an_unknown_package_are_exit_2(tmp_path: Path) -> None:
    error = _refusal(tmp_path, 'xformers = "*"')
    assert isinstance(error, ProfileError) and error.exit_code == 2
    assert (
        str(error)
        == "team.toml: frameworks.xformers: xformers is built against torch: name torch in [frameworks] too"
    )
    error = _refusal(tmp_path / "x", 'torch = "*"\nteam-ext = "*"')
    assert isinstance(error, ProfileError)
    assert "frameworks.team-ext: the catalog has no CUDA package team-ext (known: bitsandbytes, " in str(
        error
    )


def test_without_a_gpu_the_packages_are_left_out_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "team.toml"
    path.write_text('name = "team"\n[frameworks]\ntorch = "==2.8.*"\ncupy = "*"\nxformers = "*"\n')
    profile = load_profile(path)
    target = cpu_target("3.12")
    resolution = resolve(profile, target, catalog_for(profile, {}, target=target))
    assert resolution.cuda_packages == () and resolution.choices[0].variant == "cpu"
    assert [w for w in resolution.warnings if "left out" in w] == [
        "team.toml: frameworks.cupy: left out: cupy needs an NVIDIA GPU and the target has no GPU",
        "team.toml: frameworks.xformers: left out: xformers needs an NVIDIA GPU and the target has no GPU",
    ]
    path.write_text('name = "team"\n[frameworks]\nteam-ext = "*"\n')
    with pytest.raises(ProfileError, match="the catalog has no CUDA package team-ext"):
        resolve(load_profile(path), target, catalog_for(load_profile(path), {}, target=target))


def test_a_python_no_release_has_is_named(tmp_path: Path) -> None:
    error = _refusal(tmp_path, 'cupy = ">=14"', T4, python="3.9")
    assert "cupy 14.0.1 to 14.2.0: no wheel for Python 3.9" in str(error)


def test_the_driver_floor_of_a_package_is_the_resolutions(tmp_path: Path) -> None:
    resolution = _resolve(tmp_path, 'cupy = "*"', H100)
    assert resolution.required_driver == Version("580.65.06")


def test_a_cuda_package_in_requirements_gets_a_warning_to_move_it(tmp_path: Path) -> None:
    path = tmp_path / "team.toml"
    path.write_text(
        'name = "team"\n[frameworks]\ntorch = "*"\n[packages]\nrequirements = ["cupy-cuda12x>=13", "rich"]\n'
    )
    profile = load_profile(path)
    target = _target(T4)
    resolution = resolve(profile, target, catalog_for(profile, {}, target=target))
    moved = [w for w in resolution.warnings if "packages.requirements" in w]
    assert moved == [
        "team.toml: packages.requirements: cupy-cuda12x is a CUDA package colabenv chooses for the GPU "
        'and the frameworks; move it to [frameworks] as cupy = ">=13"'
    ]


@pytest.mark.parametrize(
    ("torch", "bitsandbytes", "loaded"),
    [
        ("cu129", "==0.50.1", "cuda128"),  # no 12.9 library in 0.50.1: the newest older one of 12
        ("cu129", "==0.49.2", "cuda129"),
        ("cu126", "==0.50.1", "cuda126"),
    ],
)
def test_one_wheel_with_a_library_per_cuda_is_held_to_the_library_it_loads(
    tmp_path: Path, torch: str, bitsandbytes: str, loaded: str
) -> None:
    frameworks = f'torch = {{ version = "==2.8.*", variant = "{torch}" }}\nbitsandbytes = "{bitsandbytes}"'
    chosen = _chosen(_resolve(tmp_path, frameworks, ("580.65.06", "13.0", "7.5")))
    assert chosen["bitsandbytes"] == (bitsandbytes[2:], loaded, f"bitsandbytes{bitsandbytes}")


def test_a_library_without_the_gpus_kernels_is_refused_even_though_torch_has_them(tmp_path: Path) -> None:
    # torch 2.8.0 cu128 has no sm_60; cu126 has, and so has bitsandbytes' CUDA 12.6 library
    chosen = _chosen(_resolve(tmp_path, 'torch = "==2.8.*"\nbitsandbytes = "*"', P100))
    assert chosen["torch"][1] == "cu126" and chosen["bitsandbytes"][1] == "cuda126"
    error = _refusal(
        tmp_path / "x",
        'torch = { version = "==2.8.*", variant = "cu126" }\nbitsandbytes = { variant = "cuda128" }',
        P100,
    )
    assert "no kernels for sm_60 (needs 7.0+)" in str(error)


def test_a_library_the_wheel_would_not_load_beside_torch_is_not_taken(tmp_path: Path) -> None:
    frameworks = (
        'torch = { version = "==2.8.*", variant = "cu126" }\n'
        'bitsandbytes = { version = "==0.50.1", variant = "cuda128" }'
    )
    error = _refusal(tmp_path, frameworks, ("580.65.06", "13.0", "7.5"))
    assert "bitsandbytes 0.50.1 loads its cuda126 library here, not cuda128" in str(error)


A_T4_ON_580 = ("580.65.06", "13.0", "7.5")


def test_a_rapids_release_needing_a_newer_nvjitlink_than_torch_pins_is_passed_over_and_said(
    tmp_path: Path,
) -> None:
    frameworks = 'torch = { version = "==2.8.*", variant = "cu128" }\ncudf = "*"\ncuml = "*"'
    resolution = _resolve(tmp_path, frameworks, A_T4_ON_580)
    chosen = _chosen(resolution)
    # cudf 26.8 and later and cuml 26.4 and later require nvidia-nvjitlink-cu12>=12.9; torch cu128
    # pins 12.8.93;
    # cuml 26.2.0 requires cudf==26.2.*
    assert chosen["cudf"] == ("26.2.1", "cuda12", "cudf-cu12==26.2.1")
    assert chosen["cuml"] == ("26.2.0", "cuda12", "cuml-cu12==26.2.0")
    (cudf, _) = resolution.cuda_packages
    assert cudf.reason.endswith(
        "; not 26.10.2: cudf 26.10.2 requires nvidia-nvjitlink-cu12<13,>=12.9; "
        "torch 2.8.0 pins nvidia-nvjitlink-cu12==12.8.93"
    )


def test_with_a_torch_whose_nvjitlink_fits_the_newest_rapids_is_taken(tmp_path: Path) -> None:
    chosen = _chosen(_resolve(tmp_path, 'torch = "==2.8.*"\ncudf = "*"\ncuml = "*"\ncupy = "*"', A_T4_ON_580))
    assert chosen["torch"][1] == "cu129"  # the build whose nvjitlink pin (12.9.86) fits
    assert (chosen["cudf"][0], chosen["cuml"][0], chosen["cupy"][1]) == ("26.10.2", "26.10.0", "cuda12")


A_T4_ON_570 = ("570.133.07", "12.8", "7.5")


def test_an_nvjitlink_torch_pins_through_cuda_toolkit_is_held_against_rapids(tmp_path: Path) -> None:
    """torch 2.11 pins nvJitLink through ``cuda-toolkit[...,nvjitlink,...]==12.8.1`` (cu128) and
    ``==12.6.3`` (cu126), not by name; cuDF 26.08 requires nvidia-nvjitlink-cu12>=12.9. On a
    driver of CUDA 12.8 no torch 2.11 build fits: exit 3, naming the two requirements."""
    error = _refusal(tmp_path, 'torch = "==2.11.*"\ncudf = "==26.8.*"', A_T4_ON_570)
    assert isinstance(error, ResolutionError)
    assert (
        "cudf 26.8.0 requires nvidia-nvjitlink-cu12<13,>=12.9; torch 2.11.0 pins "
        "cuda-toolkit[nvjitlink]==12.8.1 (nvidia-nvjitlink-cu12==12.8.93.*)"
    ) in str(error)
    # the same torch beside a cuDF whose nvJitLink floor it meets
    chosen = _chosen(_resolve(tmp_path / "older", 'torch = "==2.11.*"\ncudf = "==26.6.*"', A_T4_ON_570))
    assert chosen["torch"][1] == "cu128"
    assert chosen["cudf"][0] == "26.6.0"


def test_with_cuda_toolkit_pins_the_newest_rapids_is_passed_over_and_said(tmp_path: Path) -> None:
    resolution = _resolve(tmp_path, 'torch = "==2.11.*"\ncudf = "*"', A_T4_ON_570)
    chosen = _chosen(resolution)
    assert chosen["torch"][:2] == ("2.11.0", "cu128")
    assert chosen["cudf"][0] == "26.6.0"
    (cudf,) = resolution.cuda_packages
    assert (
        "not 26.10.2: cudf 26.10.2 requires nvidia-nvjitlink-cu12<13,>=12.9; torch 2.11.0 pins "
        in cudf.reason
    )


def test_packages_that_require_each_other_are_held_together(tmp_path: Path) -> None:
    error = _refusal(tmp_path, 'cudf = "==26.6.*"\ncuml = "==26.8.*"', A_T4_ON_580)
    assert "cuml 26.8.0 requires cudf==26.8.*; cudf 26.6.0 tried" in str(error)
    error = _refusal(tmp_path / "x", 'cudf = "==26.8.*"\ncupy = "==13.6.0"', A_T4_ON_580)
    assert "cudf 26.8.1 requires cupy!=14.1.0,>=14.0.1; cupy 13.6.0 tried" in str(error)
    chosen = _chosen(_resolve(tmp_path / "y", 'cudf = "==26.8.*"\ncupy = "*"', A_T4_ON_580))
    assert chosen["cupy"][0] == "14.2.0"


def test_python_3_10_keeps_rapids_26_02(tmp_path: Path) -> None:
    chosen = _chosen(_resolve(tmp_path, 'cudf = "*"', A_T4_ON_580, python="3.10"))
    assert chosen["cudf"][0] == "26.2.1"


def test_flash_attn_has_no_kernels_for_a_t4(tmp_path: Path) -> None:
    error = _refusal(tmp_path, 'torch = "==2.8.*"\nflash-attn = "*"', T4)
    assert "flash-attn 2.8.3 to 2.8.3.post1: no kernels for sm_75 (needs 8.0+)" in str(error)


@pytest.mark.parametrize(
    ("spec", "release"), [("*", "2.8.3.post1"), ("==2.8.3", "2.8.3")], ids=["newest", "pinned"]
)
def test_flash_attn_takes_the_asset_of_the_torch_minor_from_its_find_links_page(
    tmp_path: Path, spec: str, release: str
) -> None:
    path = tmp_path / "team.toml"
    text = f'name = "team"\n[frameworks]\ntorch = "==2.7.*"\nflash-attn = "{spec}"\n'
    path.write_text(text + "[catalog]\nallow_unconfirmed = true\n")
    profile = load_profile(path)
    target = _target(("580.65.06", "13.0", "8.0"))
    (choice,) = resolve(profile, target, catalog_for(profile, {}, target=target)).cuda_packages
    assert choice.requirements == (f"flash-attn=={release}+cu12torch2.7cxx11abiTRUE",)
    assert (
        choice.find_links
        == f"https://github.com/Dao-AILab/flash-attention/releases/expanded_assets/v{release}"
    )
    assert choice.index_url is None and "unconfirmed" in choice.reason


COLAB_2026_07 = {
    "torch": "2.11.0+cu128",
    "cudf-cu12": "26.2.1",
    "cuml-cu12": "26.2.0",
    "cupy-cuda12x": "14.0.1",
}


def test_an_images_cuda_package_the_catalog_lacks_is_named_not_passed_over_silently(tmp_path: Path) -> None:
    installed = {"torch": "2.11.0+cu128", "cudf-cu12": "25.6.0", "cupy-cuda12x": "14.0.1"}
    resolution = _resolve(tmp_path, 'torch = "*"', T4, installed=installed)
    (warning,) = [w for w in resolution.warnings if "not in the catalog" in w]
    assert warning == (
        "the image's cudf-cu12 25.6.0 is not in the catalog (cudf 26.2.1 to 26.10.2 there): it is not "
        "held to the chosen frameworks and may fail to import; name it in [frameworks] "
        '(cudf = "*") to have a release the catalog knows chosen with them'
    )
    # named in [frameworks], it is chosen with them and nothing is said of the image's release
    named = _resolve(tmp_path / "named", 'torch = "*"\ncudf = "*"', T4, installed=installed)
    assert not [w for w in named.warnings if "not in the catalog" in w]


def test_the_images_cuda_packages_are_named_when_no_allowed_frameworks_keep_them(tmp_path: Path) -> None:
    resolution = _resolve(tmp_path, 'torch = ">=2.15"', H100, installed=COLAB_2026_07)
    torch = resolution.choices[0]
    assert torch.variant.startswith("cu13")  # torch 2.15 has CUDA 13 builds only
    image = [w for w in resolution.warnings if w.startswith("the image's")]
    assert len(image) == 3
    (cudf,) = [w for w in image if "cudf-cu12" in w]
    assert cudf == (
        f"the image's cudf-cu12 26.2.1 does not fit the chosen frameworks (cudf 26.2.1 cuda12 is built for "
        f"CUDA 12; torch {torch.release} {torch.variant} is CUDA 13); name it in [frameworks] "
        '(cudf = "*") to move it to cudf-cu13 26.10.2'
    )
    assert not [w for w in resolution.warnings if w.startswith("chose ")]


def test_the_newest_frameworks_that_keep_the_images_cuda_packages_are_taken_and_said(tmp_path: Path) -> None:
    free = _resolve(tmp_path / "free", 'torch = ">=2.12"', H100)
    assert free.choices[0].variant.startswith("cu13")
    resolution = _resolve(tmp_path, 'torch = ">=2.12"', H100, installed=COLAB_2026_07)
    torch = resolution.choices[0]
    assert torch.variant.startswith("cu12") and torch.release >= Version("2.12")
    assert not [w for w in resolution.warnings if w.startswith("the image's")]
    (held,) = [w for w in resolution.warnings if w.startswith("chose ")]
    assert held == (
        f"chose torch {torch.release} {torch.variant}, not torch {free.choices[0].release} "
        f"{free.choices[0].variant}, so that the image's cudf-cu12 26.2.1, cuml-cu12 26.2.0, "
        "cupy-cuda12x 14.0.1 keep working; name them in [frameworks] to have them chosen with the "
        "frameworks instead"
    )


def test_the_images_cuda_packages_that_fit_are_not_named(tmp_path: Path) -> None:
    resolution = _resolve(tmp_path, 'torch = "==2.11.*"', T4, installed=COLAB_2026_07)
    assert resolution.choices[0].installed
    assert not [w for w in resolution.warnings if w.startswith("the image's")]
    named = _resolve(tmp_path / "x", 'torch = ">=2.12"\ncudf = "*"', H100, installed=COLAB_2026_07)
    assert not [w for w in named.warnings if "cudf-cu12" in w]


def test_a_lock_reads_the_index_of_a_package_off_the_frameworks_indexes(tmp_path: Path) -> None:
    overlay = _team_ext(index_url="https://pypi.example.org/simple")
    resolution = _resolve(tmp_path, 'torch = "<2.10"\nteam-ext = "*"', overlay=overlay)
    assert resolution.cuda_packages[0].index_url == "https://pypi.example.org/simple"
    assert "https://pypi.example.org/simple" in index_plan(resolution).extras


def test_torch_scatter_takes_the_find_links_page_of_torchs_own_build(tmp_path: Path) -> None:
    resolution = _resolve(tmp_path, 'torch = "==2.8.*"\ntorch-scatter = "*"', P100, python="3.11")
    (choice,) = resolution.cuda_packages
    assert resolution.choices[0].variant == "cu126"
    assert choice.requirements == ("torch-scatter==2.1.2+pt28cu126",)
    assert choice.find_links == "https://data.pyg.org/whl/torch-2.8.0+cu126.html"
    error = _refusal(tmp_path / "x", 'torch = "==2.9.*"\ntorch-scatter = "*"', P100, python="3.11")
    assert "torch-scatter 2.1.2 needs torch==2.8.* (torch 2.9.1 tried)" in str(error)


def test_colabs_preinstalled_rapids_is_named_by_resolve_for_its_runtime(
    tmp_path: Path, runner: Runner
) -> None:
    """The recorded Colab 2026.07 image (runtimes.toml: cudf-cu12 26.2.1, cuml-cu12 26.2.0,
    cupy-cuda12x 14.0.1 beside torch 2.11.0+cu128) and profiles that move torch."""
    target = ("--runtime", "colab-2026.07", "--driver", "580.65.06", "--compute-capability", "9.0")
    found = {}
    for spec in (">=2.15", ">=2.12"):
        profile = tmp_path / "team.toml"
        profile.write_text(f'name = "team"\n[frameworks]\ntorch = "{spec}"\n')
        result = runner("resolve", profile, "--json", *target, timeout=60)
        assert result.returncode == 0, result.stderr
        shown = json.loads(result.stdout)
        found[spec] = (shown["frameworks"]["torch"]["variant"], shown["warnings"])
    variant, warnings = found[">=2.15"]  # CUDA 13 only: nothing keeps them
    image = sorted(w.split(" does not fit")[0] for w in warnings if w.startswith("the image's"))
    assert variant.startswith("cu13") and image == [
        "the image's cudf-cu12 26.2.1",
        "the image's cuml-cu12 26.2.0",
        "the image's cupy-cuda12x 14.0.1",
    ]
    variant, warnings = found[">=2.12"]  # a CUDA 12 build keeps them
    assert variant.startswith("cu12")
    assert not [w for w in warnings if w.startswith("the image's")]
    assert [w for w in warnings if w.startswith("chose torch")]


def test_pyg_lib_takes_the_page_of_the_installed_torch(tmp_path: Path) -> None:
    installed = {"torch": "2.11.0+cu128"}
    resolution = _resolve(tmp_path, 'torch = "==2.11.*"\npyg-lib = "*"', T4, installed=installed)
    assert resolution.choices[0].installed
    (choice,) = resolution.cuda_packages
    assert choice.requirements == ("pyg-lib==0.8.0+pt211cu128",)
    assert choice.find_links == "https://data.pyg.org/whl/torch-2.11.0+cu128.html"


def test_torch_scatter_past_torch_2_8_takes_the_torch_release_its_page_is_for(tmp_path: Path) -> None:
    """Its builds for torch 2.9 to 2.12 are unconfirmed: taken when allowed, with any patch release
    of the torch minor their page is for (2.9.1 from the torch-2.9.0 page, as the project's README
    says its binaries serve 2.4.0/2.4.1); none for torch 2.13 and later, so 2.12.1 on an H100."""
    (tmp_path / "p100").mkdir()
    (tmp_path / "h100").mkdir()
    chosen = _chosen(_unconfirmed_allowed(tmp_path / "p100", 'torch = "==2.9.*"\ntorch-scatter = "*"', P100))
    assert chosen["torch"][:2] == ("2.9.1", "cu126"), "the P100's sm_60 is in the cu126 builds only"
    assert chosen["torch-scatter"] == ("2.1.2", "pt29cu126", "torch-scatter==2.1.2+pt29cu126")
    chosen = _chosen(_unconfirmed_allowed(tmp_path / "h100", 'torch = "*"\ntorch-scatter = "*"', H100))
    assert chosen["torch"][:2] == ("2.12.1", "cu130")
    assert chosen["torch-scatter"][1] == "pt212cu130"


def test_pyg_lib_0_7_serves_torch_2_9_but_not_python_3_14(tmp_path: Path) -> None:
    chosen = _chosen(_resolve(tmp_path / "py312", 'torch = "==2.9.*"\npyg-lib = "*"', T4, python="3.12"))
    assert chosen["torch"][0] == "2.9.1", "the torch-2.9.0 page's wheels serve 2.9.1 too"
    assert chosen["pyg-lib"][:2] == ("0.7.0", f"pt29{chosen['torch'][1]}")
    error = _refusal(tmp_path / "py314", 'torch = "==2.9.*"\npyg-lib = "*"', T4, python="3.14")
    # the refusal names the builds made for the chosen torch that Python 3.14 rules out, not
    # only the newer release that needs another torch
    assert "pyg-lib 0.8.0 needs torch==" in str(error)
    assert "pyg-lib 0.7.0: pt29cu126 has no wheel for Python 3.14" in str(error)


def test_unconfirmed_builds_are_refused_in_one_line_with_the_way_to_allow_them(tmp_path: Path) -> None:
    error = _refusal(tmp_path, 'torch = "==2.8.*"\nflash-attn = "*"', (*A_T4_ON_580[:2], "8.0"))
    lines = str(error).splitlines()
    assert len(lines) == 2
    assert lines[1].startswith(
        "  flash-attn 2.8.3 to 2.8.3.post1: cu12torch2.8, cu12torch2.7, cu12torch2.6, cu12torch2.5, "
        "cu12torch2.4 are unconfirmed ("
    )
    assert lines[1].endswith("; allow it with --allow-unconfirmed or [catalog] allow_unconfirmed = true")


def _unconfirmed_allowed(tmp_path: Path, frameworks: str, host: tuple[str, str, str]) -> Resolution:
    path = tmp_path / "team.toml"
    path.write_text(f'name = "team"\n[frameworks]\n{frameworks}\n[catalog]\nallow_unconfirmed = true\n')
    profile = load_profile(path)
    target = _target(host)
    return resolve(profile, target, catalog_for(profile, {}, target=target))


def test_vllm_takes_the_newest_release_read_from_its_wheel_and_holds_torch_to_its_pin(
    tmp_path: Path,
) -> None:
    chosen = _chosen(_resolve(tmp_path / "any", 'torch = "*"\nvllm = "*"', H100))
    assert chosen["torch"][:2] == ("2.14.0", "cu130"), "vllm 0.33.0 pins torch==2.14.0"
    assert chosen["vllm"] == ("0.33.0", "cu130", "vllm==0.33.0")
    chosen = _chosen(_resolve(tmp_path / "older", 'torch = "==2.13.*"\nvllm = "*"', H100))
    assert chosen["torch"][0] == "2.13.0" and chosen["vllm"][0] == "0.32.0", "0.32.0 pins torch==2.13.0"


def test_vllm_0_31_is_the_newest_for_python_3_10_and_its_cu129_build_unconfirmed(tmp_path: Path) -> None:
    chosen = _chosen(_resolve(tmp_path / "py310", 'torch = "*"\nvllm = "*"', H100, python="3.10"))
    assert chosen["torch"][0] == "2.13.0", "vllm 0.31.0 pins torch==2.13.0"
    assert chosen["vllm"] == ("0.31.0", "cu130", "vllm==0.31.0")
    a100_on_570 = ("570.86.15", "12.8", "8.0")
    error = _refusal(tmp_path / "cu12", 'torch = "*"\nvllm = ">=0.31"', a100_on_570)
    assert "vllm 0.31.0: cu129 is unconfirmed" in str(error)
    # a CUDA 12 driver: the newest confirmed vLLM with a CUDA 12 build, 0.19.1 (torch 2.10.0)
    resolution = _resolve(tmp_path / "cu12-any", 'torch = "*"\nvllm = "*"', a100_on_570)
    chosen = _chosen(resolution)
    assert chosen["vllm"] == ("0.19.1", "cu129", "vllm==0.19.1") and chosen["torch"][0] == "2.10.0"
    (tmp_path / "allowed").mkdir()
    chosen = _chosen(_unconfirmed_allowed(tmp_path / "allowed", 'torch = "*"\nvllm = "*"', a100_on_570))
    assert chosen["vllm"] == ("0.31.0", "cu129", "vllm==0.31.0+cu129")


def test_vllm_from_0_32_has_no_wheel_for_python_3_10_nor_kernels_for_volta(tmp_path: Path) -> None:
    error = _refusal(tmp_path / "py310", 'torch = "*"\nvllm = ">=0.32"', H100, python="3.10")
    assert "vllm 0.32.0 to 0.33.0: no wheel for Python 3.10" in str(error)
    v100 = ("580.65.06", "13.0", "7.0")
    error = _refusal(tmp_path / "v100", 'torch = "*"\nvllm = ">=0.26"', v100)
    assert "no kernels for sm_70 (needs 7.5+)" in str(error)
    # the CUDA 12.9 builds to 0.19.1 still carry Volta kernels
    chosen = _chosen(_resolve(tmp_path / "v100-any", 'torch = "*"\nvllm = "*"', v100))
    assert chosen["vllm"] == ("0.19.1", "cu129", "vllm==0.19.1")


def test_onnxruntime_gpu_takes_the_cuda_major_of_torch_and_its_index(tmp_path: Path) -> None:
    resolution = _unconfirmed_allowed(tmp_path, 'torch = "*"\nonnxruntime-gpu = "*"', T4)
    (choice,) = resolution.cuda_packages
    torch = next(c for c in resolution.choices if c.framework.value == "torch")
    assert choice.cuda.major == 12 and str(torch.variant).startswith("cu12"), "a T4 on driver 550"
    assert (str(choice.release), choice.variant) == ("1.29.0", "cuda12")
    assert choice.index_url is not None and "onnxruntime-cuda-12" in choice.index_url, (
        "from 1.27 the CUDA 12 build lives on its own feed, PyPI's is CUDA 13"
    )


def test_onnxruntime_gpu_from_pypi_is_confirmed_cuda_13_and_has_no_kernels_for_sm_100(
    tmp_path: Path,
) -> None:
    chosen = _chosen(_resolve(tmp_path / "h100", 'torch = "*"\nonnxruntime-gpu = "*"', H100))
    assert chosen["onnxruntime-gpu"] == ("1.31.1", "cuda13", "onnxruntime-gpu==1.31.1")
    assert chosen["torch"][1].startswith("cu13")
    b200 = ("580.65.06", "13.0", "10.0")
    error = _refusal(tmp_path / "b200", 'torch = "*"\nonnxruntime-gpu = ">=1.29"', b200)
    assert "no kernels for sm_100" in str(error)
    error = _refusal(tmp_path / "py310", 'torch = "*"\nonnxruntime-gpu = "==1.26.0"', T4, python="3.10")
    assert "onnxruntime-gpu 1.26.0: no wheel for Python 3.10" in str(error)


def test_flash_attn_4_takes_its_cu13_extra_beside_a_cuda_13_torch(tmp_path: Path) -> None:
    """flash-attn-4's CUDA 13 form is an extra (``flash-attn-4[cu13]``): the build of the
    chosen torch's CUDA major is taken, and its requirement carries the extra."""
    h100 = _chosen(_resolve(tmp_path / "h100", 'torch = "*"\nflash-attn-4 = "*"', H100))
    assert h100["torch"][1].startswith("cu13")
    assert h100["flash-attn-4"] == ("4.0.0b36", "cu13", "flash-attn-4[cu13]==4.0.0b36")
    cuda12 = ("570.124.06", "12.8", "9.0")
    older = _chosen(_resolve(tmp_path / "h100-570", 'torch = "*"\nflash-attn-4 = "*"', cuda12))
    assert older["torch"][1].startswith("cu12")
    assert older["flash-attn-4"] == ("4.0.0b36", "cu12", "flash-attn-4==4.0.0b36")


def test_flash_attn_4_is_refused_below_hopper_saying_what_it_needs(tmp_path: Path) -> None:
    error = _refusal(tmp_path, 'torch = "*"\nflash-attn-4 = "*"', T4)
    assert "frameworks.flash-attn-4" in str(error)
    assert "flash-attn-4 4.0.0b36: no kernels for sm_75 (needs 9.0+)" in str(error)


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("extra", "cu12; rm -rf /", "is not an extra name like cu13"),
        ("extra", "CU13", "is not an extra name like cu13"),
        ("local_tag", "cu128; touch /tmp/x", "is not a local version label like cu128"),
        ("local_tag", "cu128 ", "is not a local version label like cu128"),
    ],
)
def test_a_builds_extra_and_local_tag_in_an_overlay_are_checked_where_read(
    tmp_path: Path, field: str, value: str, problem: str
) -> None:
    """Both end up in a requirement the script installs: a value that is not one is refused
    when the overlay is read, naming the key, not left to the installer."""
    build = build_entry("cu12", cuda="12", archs=["sm_75"], **{field: value})  # type: ignore[arg-type]
    overlay = package_entry("team-ext", release_entry("1.0", build), distribution="team-ext")
    error = _refusal(tmp_path, 'team-ext = "*"', overlay=overlay)
    assert isinstance(error, CatalogOverlayError)
    assert f"build[0].{field}" in str(error) and problem in str(error)
    assert "\n" not in str(error)


def test_a_package_whose_project_documents_a_higher_driver_floor_is_held_to_it(tmp_path: Path) -> None:
    """A build whose project documents driver >= 560.28.03 (above CUDA 12's 525.60.13) is not
    taken on a T4's 550.54.15, saying why; on a T4 with driver 570.86.10 it is, and the floor is
    the resolution's."""
    overlay = _team_ext(min_driver="560.28.03")
    error = _refusal(tmp_path / "t4", 'torch = "<2.10"\nteam-ext = "*"', overlay=overlay)
    assert "cu12: its project documents driver >= 560.28.03 (host 550.54.15)" in str(error)
    newer = ("570.86.10", "12.8", "7.5")
    resolution = _resolve(tmp_path / "newer", 'torch = "<2.10"\nteam-ext = "*"', newer, overlay=overlay)
    assert _chosen(resolution)["team-ext"] == ("1.0", "cu12", "team-ext-cu12==1.0")
    assert resolution.required_driver == Version("560.28.03")
    shown = resolution.to_json()["frameworks"]
    assert isinstance(shown, dict) and "driver 570.86.10 >= 560.28.03" in shown["team-ext"]["reason"]


def test_rapids_cuda_12_builds_are_held_to_the_535_branch_rapids_documents(tmp_path: Path) -> None:
    """RAPIDS documents driver 535+ for CUDA 12 from 25.12 on (above CUDA 12's 525.60.13): the
    shipped cudf and cuml cuda12 builds carry it, so a 530 driver gets none of them, saying so;
    a 535 driver gets them, and the resolution needs 535."""
    old = ("530.30.02", "12.1", "8.0")
    error = _refusal(tmp_path / "old", 'cudf = "*"', old)
    assert "its project documents driver >= 535 (host 530.30.02)" in str(error), error
    resolution = _resolve(tmp_path / "new", 'cudf = "*"', ("535.54.03", "12.2", "8.0"))
    assert _chosen(resolution)["cudf"][1] == "cuda12"
    assert resolution.required_driver == Version("535")
