"""Wheel-variant file names (the WheelNext draft: a wheel name with one more label) are named
in a note, one line per project, by the lock's framework file check and by `catalog refresh`,
not skipped without a word (issue 34)."""

from __future__ import annotations

import shutil
from pathlib import Path

from packaging.version import Version

from colabenv.catalog.load import shipped_catalog
from colabenv.curation.refresh.sources import IndexReader, RefreshOptions
from colabenv.index.client import SimpleClient
from colabenv.lock.make import check_framework_files
from colabenv.lock.resolvers import index_plan
from colabenv.lock.wheel_tags import variant_note, variant_wheel
from colabenv.models import ComputeCapability, Framework, NvidiaTarget, Target
from colabenv.profile.load import load_profile
from colabenv.resolve.resolver import resolve
from tests.support.fixtures import *  # noqa: F403
from tests.support.index import LocalIndex
from tests.support.locking import PYTHON, write_jax_profile
from tests.support.wheels import Standins

VARIANT = "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64-cu128.whl"


def test_a_variant_name_is_told_from_a_wheel_name_with_a_build_tag() -> None:
    assert variant_wheel(VARIANT) == ("torch", Version("2.9.0"), "cu128")
    assert variant_wheel("torch-2.9.0-1-cp312-cp312-manylinux_2_28_x86_64-x86_64_v3.whl") == (
        "torch",
        Version("2.9.0"),
        "x86_64_v3",
    )
    assert variant_wheel("torch-2.9.0-1-cp312-cp312-linux_x86_64.whl") is None
    assert variant_wheel("torch-2.9.0-cp312-cp312-linux_x86_64.whl") is None
    assert variant_wheel("x-1.0-py3-none-any-NOT_LOWER.whl") is None
    assert variant_wheel("x-1.0-py3-none-any-cu128.tar.gz") is None


def test_the_note_is_one_line_per_project_and_bounded() -> None:
    names = [f"torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64-cu12{n}.whl" for n in range(6)]
    note = variant_note("torch", names + names[:1])
    assert note is not None and "\n" not in note
    assert note.startswith("torch: 6 wheel-variant file(s) left aside")
    assert note.endswith(f"{names[2]} (and 3 more)")
    assert variant_note("torch", []) is None


def _index_with_a_variant(tmp_path: Path, standin_wheels: Standins) -> tuple[Path, str]:
    root = tmp_path / "index"
    shutil.copytree(standin_wheels.default, root)
    jax = next(p for p in root.rglob("jax-0.5.3-*.whl"))
    variant = jax.name.removesuffix(".whl") + "-cu12.whl"
    shutil.copy(jax, jax.with_name(variant))
    return root, variant


def test_the_lock_file_check_names_the_variant_files_it_leaves_aside(
    tmp_path: Path, standin_wheels: Standins
) -> None:
    root, variant = _index_with_a_variant(tmp_path, standin_wheels)
    with LocalIndex(root) as index:
        profile = load_profile(write_jax_profile(tmp_path, index))
        target = Target(
            NvidiaTarget(Version("550.54.15"), Version("12.4"), (ComputeCapability(7, 5),)), Version(PYTHON)
        )
        resolution = resolve(profile, target, shipped_catalog([Framework.JAX]))
        said: list[str] = []
        client = SimpleClient({}, lambda text: text)
        check_framework_files(resolution, index_plan(resolution), client, lambda _: None, said.append)
    assert said == [variant_note("jax", [variant])]


def test_refresh_names_the_variant_files_it_leaves_aside(tmp_path: Path, standin_wheels: Standins) -> None:
    root, variant = _index_with_a_variant(tmp_path, standin_wheels)
    with LocalIndex(root) as index:
        options = RefreshOptions(Framework.JAX, index.url, "the index", None, None, False, 1 << 30, 10.0)
        reader = IndexReader(SimpleClient({}, lambda text: text), options, lambda _: None)
        wheels = reader.wheels(index.url, "jax")
    assert wheels and variant not in [w.file.filename for w in wheels]
    assert reader.variants.notes() == [variant_note("jax", [variant])]
