"""A lock of several named targets (schema 3), in both forms: written and read back, refused when
truncated or edited, its files listed per section, the section a host fits chosen (or every
section named with why not), and verify's expectation taken from that section."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest
import tomlkit
from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv._util import toml
from colabenv.errors import LockError, UsageError
from colabenv.lock.content import (
    Lock,
    LockedFile,
    LockedPackage,
    LockFile,
    LockHeader,
    LockSection,
    LockTarget,
)
from colabenv.lock.file import (
    locked_files,
    parse_lock,
    parse_lock_file,
    read_lock_file,
    render_lock,
    render_lock_file,
)
from colabenv.lock.fit import fitting_section, named_section
from colabenv.models import (
    ComputeCapability,
    CpuTarget,
    Framework,
    LockedFramework,
    NvidiaTarget,
    Target,
    TpuTarget,
)
from colabenv.verification.expectation import expectation_from_lock

NB = LockTarget("550.54.15", "525.60.13", "12.4", ("7.5",), "3.12", "linux_x86_64")
CLUSTER = LockTarget("580.65.06", "525.60.13", "12.6", ("9.0",), "3.12", "linux_x86_64")
CI = LockTarget(None, None, None, (), "3.13", "linux_x86_64")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _file(wheel: str) -> LockedFile:
    return LockedFile(_sha(wheel), wheel, f"https://files.example/{wheel}")


def _lock(target: LockTarget, torch: str, python_tag: str) -> Lock:
    fastops = f"fastops-1.0-{python_tag}-{python_tag}-manylinux_2_28_x86_64.whl"
    packages = (
        LockedPackage(canonicalize_name("fastops"), "1.0", (_file(fastops),)),
        LockedPackage(
            canonicalize_name("torch"),
            torch,
            (_file(f"torch-{torch}-{python_tag}-{python_tag}-linux_x86_64.whl"),),
        ),
    )
    if target.driver:
        packages += (
            LockedPackage(
                canonicalize_name("nvidia-nccl-cu12"),
                "2.21.5",
                (_file("nvidia_nccl_cu12-2.21.5-py3-none-any.whl"),),
                marker='platform_release != "5"',
            ),
        )
    variant = torch.partition("+")[2]
    header = LockHeader(
        colabenv_version="0.1.0",
        profile_name="team-targets",
        profile_hash="sha256:" + _sha("profile"),
        target=target,
        frameworks=(
            LockedFramework(Framework.TORCH, "2.6.0", variant, f"https://mirror.example/whl/{variant}"),
        ),
        resolver="uv 0.13.9",
        schema=3,
    )
    return Lock(header, packages, "https://pypi.example/simple", (f"https://mirror.example/whl/{variant}",))


def lock_file() -> LockFile:
    return LockFile(
        (
            LockSection("nb", _lock(NB, "2.6.0+cu124", "cp312")),
            LockSection("cluster", _lock(CLUSTER, "2.6.0+cu126", "cp312")),
            LockSection("ci", _lock(CI, "2.6.0+cpu", "cp313")),
        )
    )


def _pins(found: LockFile) -> dict[str | None, tuple[tuple[str, str], ...]]:
    return {s.name: s.lock.pins for s in found.sections}


@pytest.mark.parametrize("pylock", [False, True], ids=["requirements", "pylock"])
def test_round_trip(tmp_path: Path, pylock: bool) -> None:
    path = tmp_path / ("pylock.toml" if pylock else "team.lock")
    written = lock_file()
    text = render_lock_file(written, pylock=pylock)
    path.write_text(text)
    found = read_lock_file(path)
    assert found.names == ("nb", "cluster", "ci")
    assert _pins(found) == _pins(written)
    for name in found.names:
        mine, theirs = found.section(name), written.section(name)
        assert mine is not None and theirs is not None
        assert mine.header.target == theirs.header.target
        assert mine.header.frameworks == theirs.header.frameworks
        assert mine.index_urls == theirs.index_urls
        assert [p.marker for p in mine.packages] == [p.marker for p in theirs.packages]
        assert mine.pins_digest == theirs.pins_digest
    assert render_lock_file(found, pylock=pylock) == text


def test_requirements_form_layout() -> None:
    text = render_lock_file(lock_file())
    lines = text.splitlines()
    assert "# lock-schema: 3" in lines and "# targets: nb cluster ci" in lines
    assert [line for line in lines if line.startswith("# [target ")] == [
        "# [target nb]",
        "# [target cluster]",
        "# [target ci]",
    ]
    assert text.count("# profile-hash:") == 1 and text.count("# pins-sha256:") == 3
    assert text.count("--index-url https://pypi.example/simple") == 3


def test_a_lock_of_one_target_is_one_unnamed_section() -> None:
    single = lock_file().sections[0].lock
    one = LockFile(
        (LockSection(None, dataclasses.replace(single, header=dataclasses.replace(single.header, schema=2))),)
    )
    text = render_lock_file(one)
    assert "# lock-schema: 2" in text and "[target" not in text
    found = parse_lock_file(text)
    assert not found.sectioned and found.names == () and found.first.pins == single.pins


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "# targets: nb cluster ci",
            "# targets: nb ci",
            "targets: lists nb ci, but the sections are nb cluster ci",
        ),
        (
            "torch==2.6.0+cu126",
            "torch==2.6.1+cu126",
            "section cluster: the pins do not match the lock's pins-sha256",
        ),
        ("# [target cluster]", "# [target Cluster]", "expected '# [target NAME]' with a target name"),
        ("# resolver: uv 0.13.9\n", "# resolver: uv 0.13.9\n# target-python: 3.12\n", "belongs in a section"),
        (
            "# target-python: 3.13",
            '# target-python: 3.13\n# profile: "x"',
            "profile belongs in the shared header",
        ),
        ("# target-cuda: 12.6", "# target-cuda: twelve", "section cluster: line"),
        (
            "\n\n# [target nb]",
            "\n--index-url https://evil.example/simple\n\n# [target nb]",
            "an index line before the first",
        ),
    ],
)
def test_edited_sectioned_locks_are_refused(old: str, new: str, message: str) -> None:
    text = render_lock_file(lock_file())
    assert old in text
    with pytest.raises(LockError) as caught:
        parse_lock_file(text.replace(old, new, 1))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_truncated_sectioned_lock_is_refused() -> None:
    text = render_lock_file(lock_file())
    cut = text[: text.index("# [target ci]")]
    with pytest.raises(LockError, match="targets: lists nb cluster ci, but the sections are nb cluster"):
        parse_lock_file(cut)


def test_a_reader_of_one_target_refuses_a_sectioned_lock() -> None:
    with pytest.raises(LockError, match="a lock of several targets"):
        parse_lock(render_lock_file(lock_file()))


CI_MARKER = 'marker = "\\"ci\\" in dependency_groups"'
"""How a package of section ci is marked in the PEP 751 form (a TOML string of a marker)."""


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            CI_MARKER,
            CI_MARKER.replace("ci", "gpu"),
            r"packages\[6\]\.marker: expected '\"TARGET\" in dependency_groups'.*\(nb, cluster, ci\)",
        ),
        (CI_MARKER, CI_MARKER.replace("ci", "nb"), "fastops is pinned twice"),
        (
            CI_MARKER,
            CI_MARKER[:-1] + ' and \\"nb\\" in dependency_groups"',
            r"packages\[6\]\.marker: expected",
        ),
        (CI_MARKER + "\n", "", r"packages\[6\]\.marker: expected"),
        (
            'default-groups = ["nb"]',
            'default-groups = ["gpu"]',
            r"default-groups\[0\]: 'gpu' names no target",
        ),
        ('default-groups = ["nb"]', 'default-groups = ["nb", "ci"]', "default-groups: expected one target"),
        ('"cluster", "ci"]', '"ci", "cluster"]', "dependency-groups: expected the targets"),
    ],
)
def test_edited_sectioned_pylocks_are_refused(old: str, new: str, message: str) -> None:
    text = render_lock_file(lock_file(), pylock=True)
    assert old in text, old
    with pytest.raises(LockError, match=message) as caught:
        parse_lock_file(text.replace(old, new, 1), Path("pylock.toml"))
    assert str(caught.value).startswith("pylock.toml: ") and "\n" not in str(caught.value)


def test_a_sectioned_pylock_installs_its_first_target_by_default() -> None:
    text = render_lock_file(lock_file(), pylock=True)
    document = toml.loads(text)
    assert document["dependency-groups"] == ["nb", "cluster", "ci"]
    assert document["default-groups"] == ["nb"]
    assert "a plain install installs\n# the default group, target nb" in text
    assert all("tool" not in package for package in document["packages"])


def _without_package_tools(text: str) -> str:
    import tomlkit

    document = tomlkit.parse(text)
    for package in document["packages"]:  # type: ignore[union-attr]
        package.pop("tool", None)
    return tomlkit.dumps(document)


def test_the_sections_come_from_the_markers_not_from_tool_tables() -> None:
    written = lock_file()
    text = render_lock_file(written, pylock=True)
    assert parse_lock_file(_without_package_tools(text), Path("pylock.toml")) == written
    # a file colabenv wrote before: a [packages.tool.colabenv] table each, no default group
    document = tomlkit.parse(text)
    document["default-groups"] = []
    section_of = [s.name for s in written.sections for _ in s.lock.packages]
    own_markers = [p.marker for s in written.sections for p in s.lock.packages]
    for package, section, own in zip(document["packages"], section_of, own_markers, strict=True):  # type: ignore[arg-type]
        package["tool"] = {"colabenv": {"target": section, **({"marker": own} if own else {})}}
    older = tomlkit.dumps(document)
    assert parse_lock_file(older, Path("pylock.toml")) == written
    assert parse_lock_file(_without_package_tools(older), Path("pylock.toml")) == written


def test_locked_files_name_their_sections() -> None:
    every = list(locked_files(lock_file()))
    assert {e.section for e in every} == {"nb", "cluster", "ci"}
    assert len(every) == 3 + 3 + 2
    ci = list(locked_files(lock_file(), "ci"))
    assert [(e.name, e.version) for e in ci] == [("fastops", "1.0"), ("torch", "2.6.0+cpu")]
    assert ci[0].filename == "fastops-1.0-cp313-cp313-manylinux_2_28_x86_64.whl"
    assert ci[0].indexes == ("https://pypi.example/simple", "https://mirror.example/whl/cpu")
    with pytest.raises(LockError, match=r"no section 'gpu' \(sections: nb, cluster, ci\)"):
        list(locked_files(lock_file(), "gpu"))


def test_the_fitting_section_is_chosen_or_every_one_is_named() -> None:
    found = lock_file()
    assert fitting_section(found, CLUSTER, "team.lock").name == "cluster"
    assert fitting_section(found, CI, "team.lock").name == "ci"
    assert named_section(found, "nb", "team.lock").name == "nb"
    other = LockTarget("570.86.10", None, "12.8", ("8.0",), "3.12", "linux_x86_64")
    with pytest.raises(LockError) as caught:
        fitting_section(found, other, "team.lock")
    message = str(caught.value)
    assert message.startswith(
        "team.lock: no section fits this host (nb: target: driver 550.54.15 in the lock"
    )
    assert "; cluster: target: driver 580.65.06 in the lock, 570.86.10 now" in message
    assert "; ci: target: driver none in the lock, 570.86.10 now" in message


def test_verify_takes_the_section_of_this_host(tmp_path: Path) -> None:
    path = tmp_path / "team.lock"
    path.write_text(render_lock_file(lock_file()))
    host = Target(
        NvidiaTarget(Version("580.65.06"), Version("12.6"), (ComputeCapability(9, 0),)), Version("3.12.3")
    )
    expectation = expectation_from_lock(str(path), None, host)
    assert expectation.source == "lock team.lock (section cluster)"
    assert {str(r) for r in expectation.requirements} >= {"torch==2.6.0+cu126", "fastops==1.0"}
    cpu = Target(CpuTarget(), Version("3.13.0"))
    assert "torch==2.6.0+cpu" in {str(r) for r in expectation_from_lock(str(path), None, cpu).requirements}
    with pytest.raises(LockError, match="no section fits this host"):
        expectation_from_lock(str(path), None, Target(CpuTarget(), Version("3.11.2")))
    with pytest.raises(UsageError):
        expectation_from_lock(str(path), None, None)


def test_verify_of_a_lock_of_one_target_names_how_this_host_differs(tmp_path: Path) -> None:
    """A lock of one target has no section to choose: ``verify`` checks its pins, and the
    ``lock-target`` check WARNs naming how this host is not the target it was made for."""
    path = tmp_path / "one.lock"
    one = lock_file().sections[1].lock
    path.write_text(render_lock(one))
    made_for = one.header.target.to_target()
    assert expectation_from_lock(str(path), None, made_for).target_differences == ()
    other = Target(CpuTarget(), Version("3.11.2"))
    differences = expectation_from_lock(str(path), None, other).target_differences
    assert differences and "Python 3.12 in the lock, 3.11 now" in "; ".join(differences), differences
    assert expectation_from_lock(str(path), None, None).target_differences == ()


@pytest.mark.parametrize("pylock", [False, True], ids=["requirements", "pylock"])
def test_a_tpu_section_round_trips_and_is_told_from_the_cpu_one(pylock: bool) -> None:
    pod = LockTarget(None, None, None, (), "3.13", "linux_x86_64", tpu=TpuTarget("v5e", "v5e-8", 2))
    written = LockFile((*lock_file().sections, LockSection("pod", _lock(pod, "2.6.0+cpu", "cp313"))))
    found = parse_lock_file(
        render_lock_file(written, pylock=pylock), Path("pylock.toml" if pylock else "x.lock")
    )
    assert found.section("pod").header.target.tpu == TpuTarget("v5e", "v5e-8", 2)  # type: ignore[union-attr]
    host = LockTarget(None, None, None, (), "3.13", "linux_x86_64", tpu=TpuTarget("v5e", "v5e-1", 1))
    assert fitting_section(found, host, "x.lock").name == "pod"
    assert fitting_section(found, CI, "x.lock").name == "ci"
