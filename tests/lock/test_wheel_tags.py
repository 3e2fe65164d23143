"""The one wheel-tag rule (:mod:`colabenv.lock.wheel_tags`) and the ceiling each use gives it."""

from __future__ import annotations

from packaging.tags import Tag
from packaging.version import Version

from colabenv.lock import make
from colabenv.lock.content import LockTarget
from colabenv.lock.resolvers import uv_python_platform
from colabenv.lock.wheel_tags import (
    LOCK_GLIBC_MINOR,
    WHEELHOUSE_GLIBC_MINOR,
    interpreter_tags,
    platform_tags,
)
from colabenv.models import CpuTarget, Target
from colabenv.wheelhouse import plan


def test_a_linux_platform_takes_manylinux_up_to_the_ceiling_most_specific_first() -> None:
    assert platform_tags("linux_aarch64", 6) == (
        "manylinux_2_6_aarch64",
        "manylinux_2_5_aarch64",
        "manylinux1_aarch64",
        "linux_aarch64",
    )
    tags = platform_tags("linux_x86_64", 28)
    assert tags[0] == "manylinux_2_28_x86_64"
    assert tags[-4:] == ("manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64")
    assert "manylinux_2_29_x86_64" not in tags
    assert len(tags) == len(set(tags)) == (28 - 5 + 1) + 3 + 1


def test_a_legacy_manylinux_name_is_taken_only_within_the_ceiling() -> None:
    tags = platform_tags("linux_x86_64", 16)
    assert "manylinux2014_x86_64" not in tags
    assert "manylinux2010_x86_64" in tags
    assert "manylinux1_x86_64" in tags


def test_any_other_platform_takes_its_own_tag_alone() -> None:
    for platform in ("macosx_11_0_arm64", "win_amd64", "linux", "linux_"):
        assert platform_tags(platform, 40) == (platform,)


def test_the_tags_of_an_interpreter_are_its_own_alone_most_specific_first() -> None:
    tags = interpreter_tags((3, 13), "linux_x86_64", 40)
    assert tags[0] == Tag("cp313", "cp313", "manylinux_2_40_x86_64")
    assert tags[-1] == Tag("py30", "none", "any")
    assert Tag("py3", "none", "any") in tags
    assert len(tags) == len(set(tags))
    assert Tag("cp39", "abi3", "manylinux_2_17_x86_64") in tags
    assert Tag("py313", "none", "linux_x86_64") in tags
    # the target's ABI, whatever interpreter runs colabenv (a free-threaded or debug build)
    assert {tag.abi for tag in tags} == {"cp313", "abi3", "none"}
    assert not any(tag.interpreter == "cp314" for tag in tags)
    assert interpreter_tags((3, 7), "linux_x86_64", 28)[0] == Tag("cp37", "cp37m", "manylinux_2_28_x86_64")


def test_a_lock_is_made_for_glibc_2_28_and_its_resolver_is_told_so() -> None:
    assert uv_python_platform("linux_x86_64") == f"x86_64-manylinux_2_{LOCK_GLIBC_MINOR}"
    tags = make.target_tags(Target(CpuTarget(), Version("3.12"), platform="linux_x86_64"))
    assert Tag("cp312", "cp312", "manylinux_2_28_x86_64") in tags
    assert Tag("cp312", "cp312", "manylinux_2_29_x86_64") not in tags


def test_a_wheelhouse_ranks_wheels_up_to_glibc_2_40_and_agrees_with_the_lock_below() -> None:
    target = LockTarget(None, None, None, (), "3.12", "linux_x86_64")
    ranked = plan.target_tags(target)
    assert ranked[0] == f"cp312-cp312-manylinux_2_{WHEELHOUSE_GLIBC_MINOR}_x86_64"
    assert "cp312-cp312-manylinux_2_41_x86_64" not in ranked
    locked = make.target_tags(Target(CpuTarget(), Version("3.12"), platform="linux_x86_64"))
    assert {str(tag) for tag in locked} < set(ranked)
