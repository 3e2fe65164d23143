"""A lock for a target whose image has packages installed (a Colab runtime, `--installed-from`)
keeps the image's versions where they satisfy the profile, as the script does, and replaces
only what the profile asks for, saying so (issue 34). Real uv and pip-tools, a local index."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from colabenv.lock.file import read_lock, read_lock_file
from tests.support.fixtures import *  # noqa: F403
from tests.support.index import LocalIndex
from tests.support.locking import PYTHON, colabenv
from tests.support.wheels import Standins, build_wheel

pytestmark = pytest.mark.slow

FREEZE = "numpy==1.26.4\nsix==1.17.0\nnumba==0.60.0\n"


def _lock(
    tmp_path: Path, index: LocalIndex, requirements: str, resolver: str, freeze_text: str = FREEZE
) -> tuple[Path, str]:
    profile = tmp_path / "p.toml"
    profile.write_text(
        f'name = "p"\n[packages]\nrequirements = {requirements}\n[install]\nindex_url = "{index.url}"\n'
    )
    freeze = tmp_path / "freeze.txt"
    freeze.write_text(freeze_text)
    out = tmp_path / "p.lock"
    flags = ["--cpu", "--python", PYTHON, "--installed-from", str(freeze)]
    done = colabenv("lock", profile, "-o", out, "--resolver", resolver, *flags)
    assert done.returncode == 0, done.stderr
    return out, done.stderr


@pytest.mark.parametrize("resolver", ["uv", "pip-tools"])
def test_the_images_versions_are_kept_where_they_satisfy(
    tmp_path: Path, default_index: LocalIndex, resolver: str
) -> None:
    out, stderr = _lock(tmp_path, default_index, '["numpy", "python-dateutil"]', resolver)
    lock = read_lock(out)
    assert lock.version_of("numpy") == "1.26.4"  # not the index's newest, 2.0.2
    assert lock.version_of("six") == "1.17.0"
    assert lock.version_of("numba") is None  # the image's, not the closure's: not locked
    assert "replaced" not in stderr


def test_what_the_profile_asks_for_replaces_the_images_and_says_so(
    tmp_path: Path, default_index: LocalIndex
) -> None:
    out, stderr = _lock(tmp_path, default_index, '["numpy>=2", "six"]', "uv")
    lock = read_lock(out)
    assert lock.version_of("numpy") == "2.0.2"
    assert lock.version_of("six") == "1.17.0"
    assert "colabenv: the image's numpy 1.26.4 is replaced: the profile asks numpy>=2" in stderr


@pytest.mark.parametrize(
    ("resolver", "said"), [("uv", "no version of six==1.99.0"), ("pip-tools", "Cannot install six")]
)
def test_an_image_version_no_index_has_is_let_go_saying_why(
    tmp_path: Path, default_index: LocalIndex, resolver: str, said: str
) -> None:
    """The image's six 1.99.0 is on no index: no set of pins keeps it, so the lock is made
    without the image's versions, and the notice says the resolver's reason (not its heading).
    The pages are read again first, as after any failed run: a broken index is exit 4, not a
    version let go (tests/integration/test_lock_hostile.py)."""
    freeze = "numpy==1.26.4\nsix==1.99.0\n"
    out, stderr = _lock(tmp_path, default_index, '["numpy", "six"]', resolver, freeze)
    lock = read_lock(out)
    assert lock.version_of("six") == "1.17.0"
    assert lock.version_of("numpy") == "2.0.2"  # every image version let go, numpy's too
    notice = next(line for line in stderr.splitlines() if "cannot all be kept" in line)
    assert said in notice, notice
    assert not notice.endswith(":): locked without them"), notice


def test_a_colab_runtime_target_keeps_the_images_numpy(tmp_path: Path, standin_wheels: Standins) -> None:
    """The issue's case: the index has a numpy newer than colab-2026.07's 2.0.2, which its
    numba 0.60.0 would not take (numpy<2.1); the unlocked script installs nothing."""
    root = tmp_path / "index"
    shutil.copytree(standin_wheels.default, root)
    build_wheel(root / "numpy", "numpy", "2.5.5")
    with LocalIndex(root) as index:
        profile = tmp_path / "p.toml"
        profile.write_text(
            'name = "p"\n[packages]\nrequirements = ["numpy"]\n'
            f'[install]\nindex_url = "{index.url}"\n'
            '[targets]\ncolab = { runtime = "colab-2026.07", cpu = true }\n'
        )
        out = tmp_path / "p.lock"
        done = colabenv("lock", profile, "-o", out, "--target", "colab")
    assert done.returncode == 0, done.stderr
    section = read_lock_file(out).section("colab")
    assert section is not None
    assert section.version_of("numpy") == "2.0.2"
