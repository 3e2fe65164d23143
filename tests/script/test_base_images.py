"""The base image of ``render --format dockerfile|apptainer`` for aarch64 and ROCm targets,
from ``profiles/catalog/base_images.toml`` (each entry with its source); a target the table has
no entry for is exit 2, naming what it has. x86-64 NVIDIA and CPU output is the snapshots'
(``tests/script/test_render_snapshots.py``), unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from colabenv.catalog.base_images import load_base_images, shipped_base_images
from colabenv.errors import CatalogError
from colabenv.script.container import BASE_IMAGE
from tests.support.fixtures import Runner

ROCM = ("--rocm", "6.4", "--gfx", "gfx942", "--python", "3.12", "--allow-unconfirmed", "--offline")
AARCH64 = ("--platform", "linux_aarch64", "--cpu", "--python", "3.12", "--offline")


def rendered(runner: Runner, tmp_path: Path, form: str, *flags: str) -> str:
    done = runner("render", "pytorch", *flags, "--format", form, "-o", "ctx")
    assert done.returncode == 0, done.stderr
    return (tmp_path / "ctx" / ("Dockerfile" if form == "dockerfile" else "apptainer.def")).read_text()


def test_a_rocm_target_starts_from_amds_rocm_image(runner: Runner, tmp_path: Path) -> None:
    text = rendered(runner, tmp_path, "dockerfile", *ROCM)
    assert "FROM --platform=linux/amd64 rocm/dev-ubuntu-24.04:6.4-complete\n" in text
    assert "# target: AMD GPU, ROCm 6.4, gfx942, Python 3.12, linux_x86_64\n" in text
    assert "# check: docker run --rm --device=/dev/kfd --device=/dev/dri" in text
    assert "--gpus all" not in text and "slim Python image" not in text
    installs = [
        line for line in text.splitlines() if "pip install" in line or "bash /opt/colabenv-build" in line
    ]
    assert len(installs) == 2
    assert all("PIP_BREAK_SYSTEM_PACKAGES=1 UV_BREAK_SYSTEM_PACKAGES=1" in line for line in installs)
    apptainer = rendered(runner, tmp_path, "apptainer", *ROCM)
    assert "From: rocm/dev-ubuntu-24.04:6.4-complete\n" in apptainer
    assert "apptainer test --rocm IMAGE.sif" in apptainer and "--nv" not in apptainer


def test_an_aarch64_target_starts_from_the_arm64_python_image(runner: Runner, tmp_path: Path) -> None:
    text = rendered(runner, tmp_path, "dockerfile", *AARCH64)
    assert "FROM --platform=linux/arm64 python:3.12-slim-bookworm\n" in text
    assert "BREAK_SYSTEM_PACKAGES" not in text
    assert "From: python:3.12-slim-bookworm\n" in rendered(runner, tmp_path, "apptainer", *AARCH64)


def test_a_rocm_the_table_lacks_is_exit_2_naming_what_it_has(runner: Runner, tmp_path: Path) -> None:
    flags = ("--rocm", "6.3", "--gfx", "gfx942", "--python", "3.12", "--allow-unconfirmed", "--offline")
    done = runner("render", "pytorch", *flags, "--format", "dockerfile", "-o", "ctx")
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and not (tmp_path / "ctx").exists()
    assert "no base image for this target (linux_x86_64, rocm, ROCm 6.3, Python 3.12)" in done.stderr
    assert "rocm/dev-ubuntu-24.04:6.4-complete (linux_x86_64; rocm; ROCm 6.4; Python 3.12)" in done.stderr
    assert "--base-image" in done.stderr
    given = runner(
        "render", "pytorch", *flags, "--format", "dockerfile", "--base-image", "registry.example/rocm:6.3"
    )
    assert given.returncode == 0, given.stderr
    assert "FROM --platform=linux/amd64 registry.example/rocm:6.3\n" in given.stdout


def test_every_entry_has_its_source_and_x86_64_keeps_the_slim_image() -> None:
    images = shipped_base_images()
    for entry in images:
        assert entry.source.startswith("https://github.com/"), entry.image
    x86 = [e for e in images if e.serves("linux_x86_64", "nvidia", None, "3.12")]
    assert x86[0].image == BASE_IMAGE and not x86[0].note and not x86[0].externally_managed
    (arm,) = [e for e in images if "linux_aarch64" in e.platforms]
    assert "arm64v8" in arm.source and "3.12.12-slim-bookworm" in arm.source
    (rocm,) = [e for e in images if e.rocm is not None]
    assert "rocm/dev-ubuntu-${UBUNTU_VERSION}:${ROCM_VERSION}-complete" in rocm.source


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ('platforms = ["linux_x86_64"]\naccelerators = ["nvidia"]\nrocm = "6.4"', "rocm"),
        ('platforms = ["linux_x86_64"]\naccelerators = ["rocm"]', "rocm"),
        ('platforms = ["linux_armv7"]\naccelerators = ["cpu"]', "platforms"),
        ('platforms = ["linux_x86_64"]\naccelerators = ["rocm"]\nrocm = "6.4a"', "ROCm version"),
    ],
)
def test_a_table_entry_that_breaks_the_rules_is_refused(body: str, problem: str) -> None:
    data = f'schema = 1\n[[image]]\n{body}\nimage = "x"\nsource = "s"\n'.encode()
    with pytest.raises(CatalogError, match=problem):
        load_base_images(Path("base_images.toml"), data)
