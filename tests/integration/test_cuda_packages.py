"""CUDA packages installed for real: stand-in wheels with the real packages' metadata shapes
(xformers' exact ``Requires-Dist: torch==X``, one CuPy distribution per CUDA major,
Requires-Python) on local indexes laid out like the package index and the PyTorch index, a
real venv and the real script. The joint choice, a refusal, and the constraint that keeps
torch when a package's wheel would pull in another."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fixtures import Runner, venv_template
from tests.support.index import LocalIndex
from tests.support.package_entries import (
    build_entry,
    package_entry,
    packages_file,
    release_entry,
    write_packages,
)
from tests.support.scriptrun import make_host
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.slow

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
T4 = ("--driver", "560.35.03", "--compute-capability", "7.5", "--python", PY)


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cuda-package-wheels")
    default, cu126 = root / "default", root / "pytorch" / "cu126"
    for version in ("2.7.1+cu126", "2.8.0+cu126"):
        build_wheel(cu126, "torch", version, requires_python=">=3.9")
    build_wheel(default, "torch", "2.8.0", requires_python=">=3.9")  # the package index's torch
    # xformers: the default CUDA's build on the package index, the others on the PyTorch index
    build_wheel(
        default, "xformers", "0.0.31.post1", requires=["torch==2.7.1", "numpy"], requires_python=">=3.9"
    )
    build_wheel(
        default, "xformers", "0.0.32.post2", requires=["torch==2.8.0", "numpy"], requires_python=">=3.9"
    )
    build_wheel(cu126, "xformers", "0.0.32.post2+cu126", requires=["torch==2.8.0", "numpy"])
    # a release a team's overlay says is built against torch 2.7.1, whose wheel requires 2.8.0
    build_wheel(default, "xformers", "0.0.99", requires=["torch==2.8.0"], requires_python=">=3.9")
    build_wheel(default, "numpy", "2.1.0")
    for dist in ("cupy-cuda12x", "cupy-cuda13x"):
        build_wheel(default, dist, "14.2.0", requires=["numpy>=2.0,<2.6"], requires_python=">=3.10")
    return root


@pytest.fixture
def indexes(wheels: Path) -> Iterator[tuple[LocalIndex, LocalIndex]]:
    with LocalIndex(wheels / "default") as default, LocalIndex(wheels / "pytorch") as pytorch:
        yield default, pytorch


def _profile(path: Path, indexes: tuple[LocalIndex, LocalIndex], frameworks: str) -> Path:
    default, pytorch = indexes
    path.write_text(
        textwrap.dedent(f"""\
            name = "cuda-packages"
            [frameworks]
            {frameworks}
            [install]
            installer = "uv"
            index_url = "{default.url}"
            pytorch_index_url = "{pytorch.base_url}"
            """)
    )
    return path


OVERLAY = packages_file(
    package_entry(
        "xformers",
        release_entry(
            "0.0.99",
            build_entry(
                "cu126",
                cuda="12.6",
                archs=["sm_75", "sm_80", "compute_80"],
                source="https://example.org/team-build",
            ),
            torch="==2.7.1",
            source="https://example.org/team-build",
        ),
    )
)


def test_the_joint_choice_is_installed_and_nothing_replaces_torch(
    tmp_path: Path, runner: Runner, indexes: tuple[LocalIndex, LocalIndex]
) -> None:
    profile = _profile(tmp_path / "p.toml", indexes, 'torch = ">=2.6,<2.9"\nxformers = "<0.0.32"\ncupy = "*"')
    resolved = runner("resolve", profile, "--json", *T4, timeout=60)
    assert resolved.returncode == 0, resolved.stderr
    script = tmp_path / "setup.sh"
    rendered = runner("render", profile, "-o", script, *T4, timeout=60)
    assert rendered.returncode == 0, rendered.stderr
    text = script.read_text()
    assert "--only-binary xformers" in text and "--only-binary cupy-cuda12x" in text

    host = make_host(tmp_path / "host", with_pip=False)
    result = host.run(script)
    assert result.returncode == 0, result.stdout + result.stderr
    installed = host.installed()
    # xformers 0.0.31.post1 requires torch==2.7.1: the newest torch the profile allows (2.8.0)
    # is passed over for it; its cu126 build is the one on the package index
    assert installed["torch"] == "2.7.1+cu126"
    assert installed["xformers"] == "0.0.31.post1"
    assert installed["cupy-cuda12x"] == "14.2.0"
    assert "cupy-cuda13x" not in installed
    lines = result.stdout.splitlines()
    torch_at = next(i for i, line in enumerate(lines) if "installing" in line and "torch==2.7.1" in line)
    xformers_at = next(i for i, line in enumerate(lines) if "installing" in line and "xformers==" in line)
    assert torch_at < xformers_at  # the packages come after the frameworks


def test_a_wheel_that_would_pull_another_torch_fails_and_torch_stays(
    tmp_path: Path, runner: Runner, indexes: tuple[LocalIndex, LocalIndex]
) -> None:
    overlay = write_packages(tmp_path / "catalog", OVERLAY)
    profile = _profile(tmp_path / "p.toml", indexes, 'torch = "==2.7.1"\nxformers = "==0.0.99"')
    script = tmp_path / "setup.sh"
    rendered = runner(
        "render", profile, "-o", script, *T4, timeout=60, env={"COLABENV_CATALOG": str(overlay)}
    )
    assert rendered.returncode == 0, rendered.stderr

    host = make_host(tmp_path / "host", with_pip=False)
    result = host.run(script)
    assert result.returncode != 0
    assert "CUDA packages: xformers failed" in result.stderr
    installed = host.installed()
    assert installed["torch"] == "2.7.1+cu126"  # the constraint kept it
    assert "xformers" not in installed
    assert host.marker() is None


def test_a_gpu_the_package_has_no_kernels_for_is_refused_before_anything_runs(
    tmp_path: Path, runner: Runner, indexes: tuple[LocalIndex, LocalIndex]
) -> None:
    profile = _profile(tmp_path / "p.toml", indexes, 'torch = ">=2.6,<2.9"\nxformers = "*"')
    script = tmp_path / "setup.sh"
    p100 = ("--driver", "560.35.03", "--compute-capability", "6.0", "--python", PY)
    result = runner("render", profile, "-o", script, *p100, timeout=60)
    assert result.returncode == 3
    assert result.stdout == "" and not script.exists()
    assert (
        "frameworks.xformers: no release of xformers satisfying any version runs on the target"
        in result.stderr
    )
    assert "no kernels for sm_60 (needs 7.5+)" in result.stderr


@pytest.fixture(scope="module")
def image_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Colab 2026.07's GPU image in small: torch 2.11.0+cu128 with cudf-cu12 26.2.1 and
    cupy-cuda12x 14.0.1 (runtimes.toml), and newer torch builds on a PyTorch-like index."""
    root = tmp_path_factory.mktemp("image-wheels")
    image, default = root / "image", root / "default"
    build_wheel(image, "torch", "2.11.0+cu128")
    build_wheel(image, "cudf-cu12", "26.2.1", requires=["cupy-cuda12x>=13.6.0"], requires_python=">=3.10")
    build_wheel(image, "cupy-cuda12x", "14.0.1", requires_python=">=3.10")
    build_wheel(root / "pytorch" / "cu126", "torch", "2.14.1+cu126", requires_python=">=3.10")
    build_wheel(root / "pytorch" / "cu132", "torch", "2.15.0+cu132", requires_python=">=3.11")
    build_wheel(default, "numpy", "2.1.0")
    return root


IMAGE_FREEZE = "torch==2.11.0+cu128\ncudf-cu12==26.2.1\ncupy-cuda12x==14.0.1\n"
H100 = ("--driver", "580.65.06", "--compute-capability", "9.0", "--python", PY)


NEEDS_TORCH_2_15_PYTHON = pytest.mark.skipif(
    sys.version_info < (3, 11),
    reason="the script runs in a venv of this Python, and torch 2.15.0 requires Python >=3.11"
    " (torch.toml): the choice between 2.14.1 and 2.15.0 these cases show does not arise",
)


@pytest.mark.parametrize(
    ("spec", "torch", "said"),
    [
        # a CUDA 12 torch keeps the image's cuDF and CuPy working: taken, and said
        pytest.param(
            ">=2.12",
            "2.14.1+cu126",
            "chose torch 2.14.1 cu126, not torch 2.15.0 cu132, so that the image's",
            marks=NEEDS_TORCH_2_15_PYTHON,
        ),
        # torch 2.15 has CUDA 13 builds only: nothing keeps them, and each is named
        pytest.param(
            ">=2.15",
            "2.15.0+cu132",
            "the image's cudf-cu12 26.2.1 does not fit the chosen frameworks",
            marks=NEEDS_TORCH_2_15_PYTHON,
        ),
    ],
)
def test_the_images_rapids_is_kept_where_the_profile_allows_and_named_where_not(
    tmp_path: Path,
    runner: Runner,
    image_wheels: Path,
    request: pytest.FixtureRequest,
    spec: str,
    torch: str,
    said: str,
) -> None:
    host = make_host(tmp_path / "host", with_pip=True, venv_from=venv_template(request, True))
    host.driver = "580.65.06"
    wheels = sorted(str(w) for w in (image_wheels / "image").glob("*.whl"))
    subprocess.run(
        [str(host.python), "-m", "pip", "install", "-q", "--no-index", "--no-deps", *wheels], check=True
    )
    freeze = tmp_path / "image.txt"
    freeze.write_text(IMAGE_FREEZE)
    with LocalIndex(image_wheels / "default") as default, LocalIndex(image_wheels / "pytorch") as pytorch:
        profile = _profile(tmp_path / "p.toml", (default, pytorch), f'torch = "{spec}"')
        script = tmp_path / "setup.sh"
        rendered = runner("render", profile, "-o", script, "--installed-from", freeze, *H100, timeout=60)
        assert rendered.returncode == 0, rendered.stderr
        assert said in rendered.stderr
        result = host.run(script)
    assert result.returncode == 0, result.stdout + result.stderr
    installed = host.installed()
    assert installed["torch"] == torch
    assert (installed["cudf-cu12"], installed["cupy-cuda12x"]) == ("26.2.1", "14.0.1")  # left as they were
