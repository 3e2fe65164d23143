"""The base image of ``render --format dockerfile|apptainer`` for aarch64 and ROCm targets,
from ``profiles/catalog/base_images.toml`` (each entry with its source); a target the table has
no entry for is exit 2, naming what it has. x86-64 NVIDIA and CPU output is the snapshots'
(``tests/script/test_render_snapshots.py``), unchanged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from colabenv.catalog.base_images import load_base_images, shipped_base_images
from colabenv.errors import CatalogError
from colabenv.models import BaseImage
from colabenv.script.container import BASE_IMAGE
from tests.support.fixtures import Runner
from tests.support.interpreter_facts import free_threaded

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


def test_an_aarch64_definition_says_how_to_build_it_for_arm64(runner: Runner, tmp_path: Path) -> None:
    """apptainer build pulls the base for the build host's architecture (a definition file has
    no header for another: Apptainer's ``validHeaders``); Apptainer 1.4 added ``build --arch``
    (its CHANGELOG), which the comment names, with the binfmt_misc an x86-64 host needs. The
    Dockerfile's ``FROM --platform=linux/arm64`` names it in the file itself."""
    apptainer = rendered(runner, tmp_path, "apptainer", *AARCH64)
    assert (
        "# build, in DIR: apptainer build --arch arm64 --notest IMAGE.sif apptainer.def  (for linux/arm64;\n"
        in apptainer
    )
    assert (
        "# --arch arm64: Apptainer 1.4 or later; on an x86-64 host with binfmt_misc (QEMU) for arm64\n"
        in (apptainer)
    )
    docker = rendered(runner, tmp_path, "dockerfile", *AARCH64)
    assert "FROM --platform=linux/arm64 " in docker
    assert "# on an x86-64 host the RUN steps need binfmt_misc (QEMU) for arm64\n" in docker
    # an x86-64 definition keeps its line (the snapshots' too)
    x86 = rendered(runner, tmp_path, "apptainer", "--cpu", "--python", "3.12", "--offline")
    assert "apptainer build --notest IMAGE.sif apptainer.def  (for linux/amd64;" in x86
    assert "--arch" not in x86 and "binfmt_misc" not in x86


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


FREE_THREADED = ("--cpu", "--python", "3.14t", "--allow-unconfirmed", "--offline")
NO_FREE_THREADED_BASE = (
    "colabenv: no base image for a free-threaded Python (3.14t) in the table (base_images.toml; "
    "the official python images have none): give --base-image IMAGE with a free-threaded CPython"
)


@pytest.mark.parametrize("form", ["dockerfile", "apptainer"])
@pytest.mark.parametrize("platform", ["linux_x86_64", "linux_aarch64"])
def test_a_free_threaded_target_has_no_base_in_the_table(
    runner: Runner, tmp_path: Path, form: str, platform: str
) -> None:
    """``python:3.14-slim-bookworm`` is a Python with the GIL: an image from it would install
    the cp314t pins into the wrong interpreter. No official python image is free-threaded
    (docker-library/python#1082), so the table has none: exit 2, one line, nothing written."""
    flags = (*FREE_THREADED, "--platform", platform)
    done = runner("render", "cpu-only", *flags, "--format", form, "-o", "ctx")
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert not (tmp_path / "ctx").exists()
    assert done.stderr.splitlines() == [NO_FREE_THREADED_BASE]


@pytest.mark.parametrize("form", ["dockerfile", "apptainer"])
def test_a_free_threaded_target_renders_from_the_base_image_given(
    runner: Runner, tmp_path: Path, form: str
) -> None:
    """With ``--base-image`` it renders, and the build checks that the image's ``python3`` is
    the free-threaded Python X.Y (the script's preflight is skipped in a build): that check is
    run here by ``sh`` with this Python, told it is free-threaded
    (``tests/support/interpreter_facts.py``) or not."""
    image = "registry.example/python:3.14t-slim"
    done = runner("render", "cpu-only", *FREE_THREADED, "--format", form, "--base-image", image)
    assert done.returncode == 0, done.stderr
    assert (
        f"FROM --platform=linux/amd64 {image}\n" if form == "dockerfile" else f"From: {image}\n"
    ) in done.stdout
    with_gil, done_ft = _python_checks(done.stdout, tmp_path)
    assert with_gil.returncode == 1
    assert with_gil.stderr.strip() == (
        "python3 here is not Python 3.14t (free-threaded), which the profile was resolved for"
    )
    assert done_ft.returncode == 0, done_ft.stderr


def _python_checks(
    definition: str, tmp_path: Path
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """The build's check of its ``python3`` (a 3.14 target's) run by ``sh`` with this Python as
    ``python3``, told it is 3.14: once as it is (with the GIL), once told it is free-threaded
    (``tests/support/interpreter_facts.py``)."""
    (check,) = [line for line in definition.splitlines() if "python3 -c" in line]
    command = check.strip().removeprefix("RUN ").removesuffix(" \\")
    command = command.replace("(3, 14)", f"({sys.version_info[0]}, {sys.version_info[1]})")
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "python3").symlink_to(sys.executable)
    path = {"PATH": f"{tools}:/usr/bin:/bin"}
    facts = {**path, **free_threaded(tmp_path / "facts")}
    gil = subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=path, timeout=60)
    ft = subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=facts, timeout=60)
    return gil, ft


@pytest.mark.parametrize("form", ["dockerfile", "apptainer"])
def test_a_target_with_the_gil_refuses_a_free_threaded_base_image(
    runner: Runner, tmp_path: Path, form: str
) -> None:
    """The other way round: a Python 3.14 target with the GIL, given a free-threaded
    ``--base-image``, would install cp314 wheels its ``python3`` cannot load; the build's check
    wants ``Py_GIL_DISABLED`` unset there (from 3.13, the first minor with a free-threaded
    build), run here as above."""
    image = "registry.example/python:3.14t-slim"
    flags = ("--cpu", "--python", "3.14", "--allow-unconfirmed", "--offline")
    done = runner("render", "cpu-only", *flags, "--format", form, "--base-image", image)
    assert done.returncode == 0, done.stderr
    with_gil, refused = _python_checks(done.stdout, tmp_path)
    assert with_gil.returncode == 0, with_gil.stderr
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "python3 here is not Python 3.14 with the GIL, which the profile was resolved for"
    )


def test_a_python_before_3_13_is_not_asked_about_the_gil(runner: Runner, tmp_path: Path) -> None:
    """3.12 has no free-threaded build: its check is the version alone (every golden image's,
    byte for byte as before)."""
    done = runner("render", "cpu-only", "--cpu", "--python", "3.12", "--offline", "--format", "dockerfile")
    assert done.returncode == 0, done.stderr
    (check,) = [line for line in done.stdout.splitlines() if "python3 -c" in line]
    assert "sysconfig" not in check and "(3, 12)" in check


def test_an_entry_without_pythons_serves_pythons_with_the_gil_only() -> None:
    (x86,) = [e for e in shipped_base_images() if e.serves("linux_x86_64", "cpu", None, "3.14")]
    assert not x86.serves("linux_x86_64", "cpu", None, "3.14t")
    listed = BaseImage(("linux_x86_64",), ("cpu",), "ft:{python}", "s", pythons=("3.14t",))
    assert listed.serves("linux_x86_64", "cpu", None, "3.14t")
    assert not listed.serves("linux_x86_64", "cpu", None, "3.14")
