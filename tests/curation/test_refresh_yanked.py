"""``colabenv catalog refresh`` and yanked files (PEP 592), on the refresh stand-ins
(tests/support/refresh_standins.py) served on 127.0.0.1 with some of their files yanked.

How the package index marks a wholly yanked release, read from jaxlib's PEP 691 JSON page on
2026-11-29: every file of jaxlib 0.4.32 (cp310 to cp312; macOS, manylinux2014 x86_64 and
aarch64, Windows) says ``"yanked": true``, no reason given, and every file of 0.4.31 and 0.4.33
says ``"yanked": false``; jax 0.4.32's wheel and sdist and jax-cuda12-plugin 0.4.32's six files
say ``"yanked": true`` too. A reason is a string in its place (jax 0.4.15's sdist:
``"yanked": "accidentally required JAX_RELEASE=1"``). The stand-in pages write it so
(:meth:`tests.support.index.LocalIndex.yank`): jax 9.2.0, its jaxlib and its plugin wholly
yanked with no reason, as 0.4.32; jax 9.0.0, a release the file has, yanked with a reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.catalog.load import load_overlay
from colabenv.models import Framework, Release
from tests.curation.test_archs import gpu_library
from tests.support.fixtures import Runner
from tests.support.refresh_standins import JAX12, JAX_PLUGIN_PINS, build_refresh_indexes
from tests.support.refreshing import Served, refresh_standins
from tests.support.wheels import build_wheel

X86 = "manylinux_2_28_x86_64"
REASON = "a stand-in reason: data corruption on TPU \x1b[2J"


@pytest.fixture(scope="module")
def standins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The refresh stand-ins, with jax 9.2.0 (jax, jaxlib, the cuda12 plugin) beside them, and
    jaxlib 9.1.0's and the cuda12 plugin 9.1.0's cp313t and cp314t files."""
    root = tmp_path_factory.mktemp("refresh-yanked")
    build_refresh_indexes(root)
    default = root / "default"
    build_wheel(
        default,
        "jax",
        "9.2.0",
        requires=("jaxlib<=9.2.0,>=9.2.0", "numpy"),
        extras={"cuda12": ["jaxlib<=9.2.0,>=9.2.0", "jax-cuda12-plugin[with-cuda]<=9.2.0,>=9.2.0"]},
        requires_python=">=3.12",
    )
    build_wheel(default, "jaxlib", "9.2.0", tag=f"cp312-cp312-{X86}", requires_python=">=3.12")
    build_wheel(
        default,
        "jax-cuda12-plugin",
        "9.2.0",
        tag=f"cp312-cp312-{X86}",
        requires_python=">=3.12",
        requires=("jax-cuda12-pjrt==9.2.0",),
        extras={"with-cuda": [f'{p} ; sys_platform == "linux"' for p in JAX_PLUGIN_PINS]},
        files={"jax_cuda12_plugin/__init__.py": "", "jax_cuda12_plugin/_linalg.so": gpu_library(JAX12)},
    )
    pjrt = {"jax_plugins/xla_cuda12/xla_cuda_plugin.so": gpu_library(JAX12)}
    build_wheel(default, "jax-cuda12-pjrt", "9.2.0", tag="py3-none-manylinux_2_27_x86_64", files=pjrt)
    for project in ("jaxlib", "jax-cuda12-plugin"):
        for python in ("313", "314"):
            build_wheel(
                default, project, "9.1.0", tag=f"cp{python}-cp{python}t-{X86}", requires_python=">=3.12"
            )
    return root


def _yank(served: Served) -> None:
    default = served.default
    for wheel in default.root.glob("*-9.2.0-*.whl"):
        default.yank(wheel.name)
    for wheel in default.root.glob("jax-9.0.0-*.whl"):
        default.yank(wheel.name, REASON)
    default.yank(f"jaxlib-9.1.0-cp314-cp314t-{X86}.whl")


def _refresh(runner: Runner, root: Path, out: Path, *, yank: bool) -> tuple[int, str, str]:
    return refresh_standins(runner, "jax", root, out, "--releases", ">=9.0.0", before=_yank if yank else None)


def _releases(out: Path) -> dict[str, Release]:
    return {str(r.version): r for r in load_overlay(out, "test", [Framework.JAX]).releases}


def _free_threaded(release: Release, name: str) -> str | None:
    variant = release.variant(name)
    assert variant is not None
    return None if variant.free_threaded is None else str(SpecifierSet(str(variant.free_threaded)))


def test_refresh_never_proposes_a_wholly_yanked_release_and_reports_a_known_one(
    runner: Runner, standins: Path, tmp_path: Path
) -> None:
    code, _stdout, stderr = _refresh(runner, standins, tmp_path / "out", yank=True)
    assert code == 0, stderr
    releases = _releases(tmp_path / "out")
    assert "9.2.0" not in releases, "every file of it is yanked: never proposed"
    assert "9.0.0" in releases, "a release the file has is kept, yanked or not"
    assert "jax 9.2.0 left out: every wheel of it on the pages read is yanked (no reason given)" in stderr
    said = "jax 9.0.0: every wheel of it on the pages read is yanked (reason: a stand-in reason: data"
    assert said in stderr and "\x1b" not in stderr, stderr
    assert "TPU \\x1b[2J); the catalog's entry is kept" in stderr
    # a yanked cp314t file of jaxlib 9.1.0 is not read as 9.1.0's: 3.13t alone
    assert _free_threaded(releases["9.1.0"], "cpu") == "<3.14,>=3.13"
    assert _free_threaded(releases["9.1.0"], "cuda12") == "<3.14,>=3.13"


def test_the_same_files_not_yanked_are_read(runner: Runner, standins: Path, tmp_path: Path) -> None:
    """What the test above holds apart: without the flags, 9.2.0 is proposed and jaxlib 9.1.0's
    cp314t file widens its builds' free-threaded range."""
    code, _stdout, stderr = _refresh(runner, standins, tmp_path / "out", yank=False)
    assert code in (0, 1), stderr
    releases = _releases(tmp_path / "out")
    assert "9.2.0" in releases, stderr
    assert _free_threaded(releases["9.1.0"], "cpu") == "<3.15,>=3.13"
    assert "yanked" not in stderr


def test_a_package_release_is_wholly_yanked_only_where_every_distribution_s_wheels_are() -> None:
    """The CUDA packages' notes read every distribution of a package (cupy-cuda12x and
    cupy-cuda13x are one cupy): a release one of them still has unyanked is not said."""
    from colabenv.curation.refresh.sources import RefreshOptions
    from colabenv.curation.refresh.yanked_files import YankedFiles
    from colabenv.index.client import IndexFile

    def wheel(name: str, version: str, yanked: str | None) -> IndexFile:
        filename = f"{name}-{version}-cp312-cp312-{X86}.whl"
        return IndexFile(filename, f"https://i.example/{filename}", None, yanked=yanked)

    found = YankedFiles()
    kept = found.kept(
        [
            wheel("cupy_cuda12x", "99.1.0", ""),
            wheel("cupy_cuda13x", "99.1.0", None),
            wheel("cupy_cuda12x", "99.2.0", ""),
            wheel("cupy_cuda13x", "99.2.0", "bad \x07 build"),
            wheel("cupy_cuda12x", "99.0.0", "withdrawn"),
        ]
    )
    assert [f.filename.split("-")[:2] for f in kept] == [["cupy_cuda13x", "99.1.0"]]
    options = RefreshOptions(None, "https://i.example/simple/", "the index", None, None, False, 1, 1.0)
    notes = found.notes("cupy", ["cupy-cuda12x", "cupy-cuda13x"], [Version("99.0.0")], options)
    assert notes == [
        "cupy 99.0.0: every wheel of it on the pages read is yanked (reason: withdrawn); the catalog's "
        "entry is kept (installers take a yanked file only for an exact pin, with a warning: PEP 592)",
        "cupy 99.2.0 left out: every wheel of it on the pages read is yanked (reason: bad \\x07 build)",
    ]
    assert found.notes("cupy", ["cupy-cuda12x"], [Version("99.0.0")], options)[1].startswith(
        "cupy 99.1.0 left out"
    )
