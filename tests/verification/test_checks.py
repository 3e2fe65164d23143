"""verify's checks, one at a time, in-process: no venv, no framework, no GPU."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from colabenv._util import processes
from colabenv.catalog.load import shipped_catalog
from colabenv.errors import StateError
from colabenv.host.framework_builds import FrameworkBuild, framework_build
from colabenv.host.installed import DistInfo, Installed, installed_distributions, scan_path
from colabenv.host.interpreter import same_environment
from colabenv.host.started import process_started_at, restarted_process
from colabenv.models import ComputeCapability, Framework, Gpu, Target, device_of
from colabenv.script.marker import parse_marker
from colabenv.verification.children import ChildRun, check_smoke, check_vram, stderr_tail
from colabenv.verification.closure import check_consistency, check_versions, dependency_closure
from colabenv.verification.components import check_components
from colabenv.verification.cuda import check_cuda
from colabenv.verification.duplicates import check_duplicates
from colabenv.verification.expectation import Expectation, ExpectationKind, ProfileIdentity
from colabenv.verification.report import Check, Status, VerifyReport
from colabenv.verification.restart import check_env, check_marker, marker_fit
from tests.support.checks import expect
from tests.support.fixtures import Runner
from tests.support.smoke import smoke_module
from tests.support.standin_frameworks import write_marker

compare = smoke_module("base").compare
matrices = smoke_module("base").matrices
max_abs_diff = smoke_module("base").max_abs_diff
reference_matmul = smoke_module("base").reference_matmul
largest_block = smoke_module("vram").largest_block

# ---------------------------------------------------------------------------------------------
# marker


def _marker(tmp_path: Path, written_at: float, changed: bool = True):  # type: ignore[no-untyped-def]
    path = write_marker(
        tmp_path,
        requirements=["torch==2.6.0+cu124"],
        frameworks={"torch": "2.6.0+cu124"},
        written_at=written_at,
        changed=changed,
    )
    return parse_marker(path.read_text(), path)


def test_marker_missing_fails_without_profile_and_warns_with_one(tmp_path: Path) -> None:
    where = tmp_path / "restart-marker.json"
    bare = check_marker(None, None, where, time.time(), "interpreter", explicit=False)
    assert bare.status is Status.FAIL and "no restart marker" in bare.detail
    named = check_marker(None, None, where, time.time(), "interpreter", explicit=True)
    assert named.status is Status.WARN


def test_marker_older_than_the_interpreter_passes(tmp_path: Path) -> None:
    marker = _marker(tmp_path, written_at=1000.0)
    check = check_marker(marker, None, marker.path, 2000.0, "kernel", explicit=False)
    assert check.status is Status.PASS
    assert "this kernel started" in check.detail


def test_a_marker_within_the_start_times_precision_is_not_after_it(tmp_path: Path) -> None:
    """The start time read from /proc is good to ticks of 10 ms: an interpreter started just
    after the script wrote its marker could read as started a few ms before it (a flaky verify
    in CI); within a second it is not "after", past it it is."""
    marker = _marker(tmp_path, written_at=2000.02)
    assert check_marker(marker, None, marker.path, 2000.0, "interpreter", explicit=True).status is Status.PASS
    later = _marker(tmp_path, written_at=2001.5)
    assert check_marker(later, None, later.path, 2000.0, "interpreter", explicit=True).status is Status.FAIL


def test_marker_newer_than_the_interpreter_means_restart_required(tmp_path: Path) -> None:
    marker = _marker(tmp_path, written_at=3000.0)
    check = check_marker(marker, None, marker.path, 2000.0, "kernel", explicit=True)
    assert check.status is Status.FAIL
    assert check.detail.startswith("restart required")


def test_marker_newer_but_nothing_changed_needs_no_restart(tmp_path: Path) -> None:
    marker = _marker(tmp_path, written_at=3000.0, changed=False)
    check = check_marker(marker, None, marker.path, 2000.0, "interpreter", explicit=False)
    assert check.status is Status.PASS and "no restart needed" in check.detail


def test_marker_corrupted_is_a_fail_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "restart-marker.json"
    path.write_text('{"schema": 1, "written_at": 12', encoding="utf-8")
    with pytest.raises(StateError) as caught:
        parse_marker(path.read_text(), path)
    check = check_marker(None, caught.value, path, time.time(), "interpreter", explicit=False)
    assert check.status is Status.FAIL
    assert check.detail.startswith("corrupted restart marker") and str(path) in check.detail


def test_marker_start_time_unknown_is_a_warning(tmp_path: Path) -> None:
    marker = _marker(tmp_path, written_at=1000.0)
    check = check_marker(marker, None, marker.path, None, "interpreter", explicit=False)
    assert check.status is Status.WARN


def _venv_python(root: Path) -> str:
    """An interpreter path inside a folder that PEP 405 calls a virtual environment."""
    (root / "bin").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text("home = /usr/bin\n")
    return str(root / "bin" / "python")


def test_a_marker_of_another_profile_fails_naming_both_and_the_env_hint_says_so(
    tmp_path: Path,
) -> None:
    path = write_marker(
        tmp_path, profile="team-b", profile_hash="sha256:" + "b" * 64, python=sys.executable, env={"X": "1"}
    )
    marker = parse_marker(path.read_text(), path)
    wanted = ProfileIdentity("team-a", "sha256:" + "a" * 64)
    fit = marker_fit(marker, wanted, sys.executable)
    check = check_marker(marker, None, path, time.time(), "kernel", explicit=True, fit=fit)
    assert check.status is Status.FAIL
    assert check.detail == (
        "the restart marker was written by profile 'team-b' (bbbbbbbbbbbb), not by this profile "
        "'team-a' (aaaaaaaaaaaa): run this profile's setup script (colabenv render team-a), "
        "then restart"
    )
    env = check_env((("X", "1"),), {}, hint=fit.hint)
    assert env.status is Status.FAIL
    assert "restart after setup" not in env.detail
    assert env.detail.endswith(
        "(the restart marker is profile 'team-b' (bbbbbbbbbbbb)'s: run this"
        " profile's setup script (colabenv render team-a), then restart)"
    )
    same = marker_fit(marker, ProfileIdentity("team-b", "sha256:" + "b" * 64), sys.executable)
    assert same.problem is None and same.hint == "restart after setup"


def test_a_marker_for_another_interpreter_fails_naming_both(tmp_path: Path) -> None:
    other = _venv_python(tmp_path / "other-venv")
    path = write_marker(tmp_path / "state", python=other)
    marker = parse_marker(path.read_text(), path)
    fit = marker_fit(marker, None, sys.executable)
    check = check_marker(marker, None, path, time.time(), "kernel", explicit=False, fit=fit)
    assert check.status is Status.FAIL
    assert f"written for the interpreter {other}, not for this one ({sys.executable})" in check.detail
    assert f"--interpreter {other}" in check.detail
    assert marker_fit(marker, None, other).problem is None
    assert marker_fit(marker, None, str(Path(other).with_name("python3"))).problem is None


def test_a_marker_without_its_interpreter_is_a_warning(tmp_path: Path) -> None:
    path = write_marker(tmp_path, written_at=1000.0)
    marker = parse_marker(path.read_text(), path)
    fit = marker_fit(marker, None, sys.executable)
    check = check_marker(marker, None, path, 2000.0, "kernel", explicit=False, fit=fit)
    assert check.status is Status.WARN
    assert "does not say which interpreter" in check.detail


def test_one_environment_per_venv_and_per_real_interpreter(tmp_path: Path) -> None:
    first, second = _venv_python(tmp_path / "a"), _venv_python(tmp_path / "b")
    assert not same_environment(first, second)
    assert same_environment(first, str(tmp_path / "a" / "bin" / "python3.99"))
    real = tmp_path / "python3.11"
    real.write_text("")
    link = tmp_path / "python3"
    link.symlink_to(real)
    assert same_environment(str(link), str(real))


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_this_process_started_before_now_and_after_boot() -> None:
    started = process_started_at(os.getpid())
    assert started is not None
    assert started <= time.time()
    assert started > time.time() - 7 * 24 * 3600 or Path("/proc/uptime").exists()


def _fake_proc(root: Path, pid: int, ppid: int, start_ticks: int, cmdline: list[str]) -> None:
    entry = root / str(pid)
    entry.mkdir(parents=True)
    name = Path(cmdline[0]).name
    fields = ["S", str(ppid)] + ["0"] * 17 + [str(start_ticks)] + ["0"] * 10
    (entry / "stat").write_text(f"{pid} ({name} x) " + " ".join(fields) + "\n")
    (entry / "cmdline").write_bytes(b"\0".join(a.encode() for a in cmdline) + b"\0")


def test_kernel_ancestor_and_its_start_time_from_a_fake_proc(tmp_path: Path) -> None:
    hertz = os.sysconf("SC_CLK_TCK")
    (tmp_path / "uptime").write_text("1000.00 500.00\n")
    _fake_proc(tmp_path, 10, 1, 100 * hertz, ["/usr/bin/python3", "-m", "colab_kernel_launcher"])
    _fake_proc(tmp_path, 20, 10, 900 * hertz, ["/bin/bash", "-c", "colabenv verify"])
    _fake_proc(tmp_path, 30, 20, 990 * hertz, ["/usr/bin/python3", "/usr/local/bin/colabenv"])
    assert restarted_process(tmp_path, 30) == (10, "kernel")
    started = process_started_at(10, tmp_path, now=5000.0)
    assert started == pytest.approx(5000.0 - 900.0)


def test_without_a_kernel_the_interpreter_itself_is_checked(tmp_path: Path) -> None:
    (tmp_path / "stat").write_text("cpu 1 2 3\nbtime 1700000000\n")
    _fake_proc(tmp_path, 40, 1, 250 * os.sysconf("SC_CLK_TCK"), ["python", "script.py"])
    assert restarted_process(tmp_path, 40) == (40, "interpreter")
    assert process_started_at(40, tmp_path) == pytest.approx(1700000250.0)
    assert process_started_at(41, tmp_path) is None


# ---------------------------------------------------------------------------------------------
# versions and consistency


def _lookup(mapping: dict[str, str]) -> Callable[[str], str | None]:
    return lambda name: mapping.get(name)


def _expect(*reqs: str) -> Expectation:
    return Expectation(
        source="test", requirements=tuple(Requirement(r) for r in reqs), kind=ExpectationKind.MARKER
    )


def test_versions_compare_local_tags_exactly() -> None:
    installed: dict[str, str] = {"torch": "2.6.0+cu126", "numpy": "2.1.0", "jax": "0.5.3"}
    check = check_versions(
        _expect("torch==2.6.0+cu124", "numpy>=1.26", "jax[cuda12]==0.5.3"), _lookup(installed)
    )
    assert check.status is Status.FAIL
    assert check.detail == "torch: installed 2.6.0+cu126, expected ==2.6.0+cu124"


def test_versions_pass_lists_the_frameworks() -> None:
    installed: dict[str, str] = {"torch": "2.6.0+cu124", "numpy": "2.1.0"}
    check = check_versions(_expect("torch==2.6.0+cu124", "numpy>=1.26"), _lookup(installed))
    assert check.status is Status.PASS
    assert "2 requirement(s)" in check.detail and "torch 2.6.0+cu124" in check.detail


def test_versions_a_public_pin_is_not_met_by_a_local_build() -> None:
    check = check_versions(_expect("torch==2.6.0"), _lookup({"torch": "2.6.0+cu124"}))
    assert check.status is Status.FAIL


def test_versions_missing_and_marker_excluded() -> None:
    check = check_versions(_expect("torch==2.6.0", 'pywin32==306; sys_platform == "win32"'), _lookup({}))
    assert check.status is Status.FAIL
    assert check.detail == "torch: not installed, expected ==2.6.0"


def test_versions_skip_without_expectation() -> None:
    check = check_versions(Expectation(source="nothing"), _lookup({}))
    assert check.status is Status.SKIP


def _dists(*items: tuple[str, str, tuple[str, ...]]) -> dict[str, DistInfo]:
    from packaging.utils import canonicalize_name

    return {canonicalize_name(n): DistInfo(canonicalize_name(n), v, r) for n, v, r in items}


def test_consistency_follows_the_closure_with_extras_and_markers() -> None:
    dists = _dists(
        (
            "jax",
            "0.5.3",
            (
                "jaxlib<=0.5.3,>=0.5.3",
                'jax-cuda12-plugin==0.5.3; extra == "cuda12"',
                'jax-cuda13-plugin==0.5.3; extra == "cuda13"',
            ),
        ),
        ("jaxlib", "0.5.3", ("ml-dtypes>=0.4",)),
        ("jax-cuda12-plugin", "0.5.3", ("nvidia-cudnn-cu12<10,>=9.1",)),
        ("nvidia-cudnn-cu12", "9.0.0", ()),
        ("ml-dtypes", "0.5.0", ('pywin32; sys_platform == "win32"',)),
        ("unrelated", "1.0", ("missing-thing",)),
    )
    closure = dependency_closure([("jax", frozenset({"cuda12"}))], dists.get)
    assert set(closure.names) == {"jax", "jaxlib", "jax-cuda12-plugin", "nvidia-cudnn-cu12", "ml-dtypes"}
    assert closure.problems == (
        "jax-cuda12-plugin 0.5.3 requires nvidia-cudnn-cu12<10,>=9.1, installed 9.0.0",
    )
    assert check_consistency(closure).status is Status.FAIL


def test_consistency_missing_dependency_and_pass() -> None:
    dists = _dists(
        ("torch", "2.6.0", ("filelock", "sympy==1.13.1")), ("filelock", "3.0", ()), ("sympy", "1.13.1", ())
    )
    ok = dependency_closure([("torch", frozenset())], dists.get)
    assert ok.problems == () and check_consistency(ok).status is Status.PASS
    del dists["sympy"]
    broken = dependency_closure([("torch", frozenset())], dists.get)
    assert broken.problems == ("torch 2.6.0 requires sympy==1.13.1, which is not installed",)


def test_an_inconsistency_the_image_shipped_is_a_warning_one_colabenv_made_fails() -> None:
    dists = _dists(
        ("torch", "2.6.0+cu124", ("nvidia-cudnn-cu12==9.1.0.70",)), ("nvidia-cudnn-cu12", "9.3.0.75", ())
    )
    closure = dependency_closure([("torch", frozenset())], dists.get)
    assert closure.involved == (("torch", "nvidia-cudnn-cu12"),)
    shipped = check_consistency(closure, frozenset({"requests"}))
    assert shipped.status is Status.WARN and "as the runtime image shipped it" in shipped.detail
    assert check_consistency(closure, frozenset({"nvidia-cudnn-cu12"})).status is Status.FAIL
    assert check_consistency(closure, frozenset({"torch"})).status is Status.FAIL
    assert check_consistency(closure, None).status is Status.FAIL


# ---------------------------------------------------------------------------------------------
# duplicates and shadowing on a constructed sys.path


def _site(
    root: Path,
    name: str,
    *,
    dists: dict[str, str] | None = None,
    modules: tuple[str, ...] = (),
    packages: tuple[str, ...] = (),
    namespaces: tuple[str, ...] = (),
) -> str:
    site = root / name
    site.mkdir(parents=True)
    for dist, version in (dists or {}).items():
        meta = site / f"{dist}-{version}.dist-info"
        meta.mkdir()
        (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    for module in modules:
        (site / module).write_text("")
    for package in packages:
        (site / package).mkdir()
        (site / package / "__init__.py").write_text("")
    for namespace in namespaces:
        (site / namespace).mkdir()
    return str(site)


def test_scan_finds_a_distribution_installed_twice(tmp_path: Path) -> None:
    user = _site(tmp_path, "user", dists={"numpy": "2.1.0"}, packages=("numpy",))
    system = _site(
        tmp_path, "system", dists={"numpy": "1.26.4", "torch": "2.6.0+cu124"}, packages=("numpy", "torch")
    )
    scan = scan_path([user, system])
    assert [name for name, _ in scan.duplicates] == ["numpy"]
    assert [(d.version, d.entry) for d in scan.duplicates[0][1]] == [("2.1.0", user), ("1.26.4", system)]
    assert [(s.module, s.used, s.hidden) for s in scan.shadows] == [("numpy", user, system)]
    relevant = check_duplicates(scan, relevant_dists=["numpy"], relevant_modules=["numpy"])
    assert relevant.status is Status.FAIL
    assert "numpy installed 2 times (2.1.0 in" in relevant.detail
    assert check_duplicates(scan).status is Status.WARN


def test_scan_finds_a_module_shadowing_an_installed_package(tmp_path: Path) -> None:
    cwd = _site(tmp_path, "notebook", modules=("torch.py", "helpers.py"))
    site = _site(tmp_path, "site", dists={"torch": "2.6.0"}, packages=("torch",))
    scan = scan_path([cwd, site])
    assert scan.duplicates == ()
    assert [(s.module, s.used, s.hidden) for s in scan.shadows] == [("torch", cwd, site)]
    check = check_duplicates(scan, relevant_dists=["torch"], relevant_modules=["torch"])
    assert check.status is Status.FAIL
    assert check.detail == f"module torch in {site} is shadowed by {cwd}"


def test_scan_ignores_namespace_packages_stdlib_backports_and_repeated_entries(
    tmp_path: Path,
) -> None:
    stdlib = _site(tmp_path, "stdlib", modules=("typing.py",))
    first = _site(tmp_path, "first", namespaces=("nvidia", "google"), dists={"nvidia-cudnn-cu12": "9.1.0.70"})
    second = _site(
        tmp_path,
        "second",
        namespaces=("nvidia",),
        modules=("typing.py",),
        dists={"nvidia-cublas-cu12": "12.4.5.8", "typing": "3.7.4.3"},
    )
    scan = scan_path([stdlib, first, first, second, str(tmp_path / "absent")], stdlib=[stdlib])
    assert scan.duplicates == () and scan.shadows == ()
    check = check_duplicates(scan)
    assert check.status is Status.PASS and check.detail.startswith("3 distributions")


def test_scan_sees_extension_modules_and_egg_info(tmp_path: Path) -> None:
    suffix = (
        next(s for s in __import__("importlib.machinery").machinery.EXTENSION_SUFFIXES if s.endswith(".so"))
        if sys.platform != "win32"
        else ".pyd"
    )
    first = _site(tmp_path, "a", modules=(f"_fast{suffix}",))
    second = _site(tmp_path, "b", modules=("_fast.py",))
    (Path(second) / "old_thing-1.0-py3.11.egg-info").mkdir()
    (Path(first) / "old_thing-0.9-py3.11.egg-info").mkdir()
    scan = scan_path([first, second])
    assert [s.module for s in scan.shadows] == ["_fast"]
    assert [name for name, _ in scan.duplicates] == ["old-thing"]


def _egg_info(site: str, dirname: str, name: str, version: str, *, as_file: bool = False) -> None:
    """An egg-info as setuptools (a folder with PKG-INFO) or Debian (one PKG-INFO file) writes it."""
    text = f"Metadata-Version: 1.2\nName: {name}\nVersion: {version}\n"
    if as_file:
        (Path(site) / dirname).write_text(text)
    else:
        (Path(site) / dirname).mkdir()
        (Path(site) / dirname / "PKG-INFO").write_text(text)


@pytest.mark.parametrize("as_file", [False, True], ids=["egg-info-folder", "egg-info-file"])
def test_a_dist_info_and_an_egg_info_in_one_folder_are_one_distribution(
    tmp_path: Path, as_file: bool
) -> None:
    """Debian's python3-cryptography ships both; verify's scan, detect's list and the check see
    one distribution, read from its dist-info."""
    site = _site(tmp_path, "dist-packages", dists={"cryptography": "41.0.7"}, packages=("cryptography",))
    _egg_info(site, "cryptography.egg-info", "cryptography", "41.0.7", as_file=as_file)
    scan = scan_path([site])
    assert scan.duplicates == ()
    assert [d.metadata_dir.name for d in scan.dists] == ["cryptography-41.0.7.dist-info"]
    assert [p.ignored.metadata_dir.name for p in scan.second_metadata] == ["cryptography.egg-info"]
    assert dict(installed_distributions([site])) == {"cryptography": "41.0.7"}
    check = check_duplicates(scan, relevant_dists=["cryptography"], relevant_modules=["cryptography"])
    assert check.status is Status.PASS
    assert check.detail == "1 distributions, none twice, no module shadowed"


def test_a_stale_egg_info_beside_a_dist_info_is_named_and_not_read(tmp_path: Path) -> None:
    """The egg-info sorts first here (``Foo_Bar`` before ``foo_bar``) and says another version:
    the dist-info is still the one read, and the check says so, as a warning."""
    site = _site(tmp_path, "site", dists={"foo_bar": "1.0"})
    _egg_info(site, "Foo_Bar.egg-info", "Foo-Bar", "0.9")
    scan = scan_path([site])
    assert scan.duplicates == ()
    assert Installed.of_scan(scan).version("foo-bar") == "1.0"
    assert dict(installed_distributions([site])) == {"foo-bar": "1.0"}
    check = check_duplicates(scan, relevant_dists=["foo-bar"])
    assert check.status is Status.WARN
    assert check.detail == (
        f"foo-bar 1.0 in {site}: its foo_bar-1.0.dist-info is read, not the Foo_Bar.egg-info beside it"
        " (which says 0.9)"
    )


def test_two_dist_infos_of_one_name_in_one_folder_stay_a_duplicate(tmp_path: Path) -> None:
    site = _site(tmp_path, "site", dists={"numpy": "2.1.0"})
    (Path(site) / "numpy-1.26.4.dist-info").mkdir()
    scan = scan_path([site])
    assert [name for name, _ in scan.duplicates] == ["numpy"]


def test_installed_uses_the_first_distribution_on_the_path(tmp_path: Path) -> None:
    first = _site(tmp_path, "first", dists={"numpy": "2.1.0"})
    second = _site(tmp_path, "second", dists={"numpy": "1.26.4"})
    installed = Installed.of_scan(scan_path([first, second]))
    assert installed.version("numpy") == "2.1.0"
    assert installed.version("NumPy") == "2.1.0"
    assert installed.version("scipy") is None


# ---------------------------------------------------------------------------------------------
# the CUDA a framework was built for


def _target(driver: str | None, cuda: str | None, *caps: str) -> Target:
    return Target(
        device_of(
            Version(driver) if driver else None,
            Version(cuda) if cuda else None,
            tuple(ComputeCapability.parse(c) for c in caps),
            None,
        ),
        Version("3.11"),
    )


def _torch(version: str, cuda: str | None, variant: str | None) -> FrameworkBuild:
    return FrameworkBuild(Framework.TORCH, "torch", version, Version(cuda) if cuda else None, variant, "test")


def _cu12_release() -> tuple[str, str, str]:
    for release in shipped_catalog().releases_of(Framework.TORCH):
        for variant in release.variants:
            if variant.cuda is not None and variant.cuda.major == 12 and variant.local_tag:
                return str(release.version), variant.local_tag, str(variant.cuda)
    raise AssertionError("the catalog has no torch CUDA 12 variant")


def test_cuda_fits() -> None:
    version, tag, cuda = _cu12_release()
    build = _torch(f"{version}+{tag}", cuda, tag)
    check = check_cuda(
        Framework.TORCH, build, _target("580.65.06", "13.0", "7.5"), shipped_catalog(), require_gpu=True
    )
    assert check.status is Status.PASS
    assert "kernels for sm_75" in check.detail


def test_cuda_newer_major_than_the_driver_fails() -> None:
    build = _torch("2.9.0+cu130", "13.0", "cu130")
    check = check_cuda(
        Framework.TORCH, build, _target("550.54.15", "12.4", "7.5"), shipped_catalog(), require_gpu=False
    )
    assert check.status is Status.FAIL
    assert "13" in check.detail and "550.54.15" in check.detail


def test_cuda_newer_minor_than_the_driver_warns() -> None:
    build = _torch("2.6.0+cu126", "12.6", "cu126")
    check = check_cuda(
        Framework.TORCH, build, _target("550.54.15", "12.4", "7.5"), shipped_catalog(), require_gpu=False
    )
    assert check.status is Status.WARN and "minor-version compatibility" in check.detail


def test_cuda_arch_list_without_the_gpu_fails() -> None:
    version, tag, cuda = _cu12_release()
    build = _torch(f"{version}+{tag}", cuda, tag)
    check = check_cuda(
        Framework.TORCH,
        build,
        _target("580.65.06", "13.0", "7.5", "3.5"),
        shipped_catalog(),
        require_gpu=False,
    )
    assert check.status is Status.FAIL
    assert "no kernels for sm_35" in check.detail


def test_cuda_without_gpu_skips_or_fails_when_required() -> None:
    build = _torch("2.6.0+cu124", "12.4", "cu124")
    cpu = _target(None, None)
    assert check_cuda(Framework.TORCH, build, cpu, shipped_catalog(), require_gpu=False).status is Status.SKIP
    assert check_cuda(Framework.TORCH, build, cpu, shipped_catalog(), require_gpu=True).status is Status.FAIL
    assert check_cuda(Framework.TORCH, None, cpu, shipped_catalog(), require_gpu=False).status is Status.FAIL


def test_cuda_cpu_build_on_a_gpu_host() -> None:
    build = _torch("2.6.0+cpu", None, "cpu")
    gpu = _target("550.54.15", "12.4", "7.5")
    assert check_cuda(Framework.TORCH, build, gpu, shipped_catalog(), require_gpu=False).status is Status.WARN
    assert check_cuda(Framework.TORCH, build, gpu, shipped_catalog(), require_gpu=True).status is Status.FAIL


def test_framework_build_reads_metadata_without_importing(tmp_path: Path) -> None:
    site = Path(
        _site(
            tmp_path,
            "site",
            dists={
                "torch": "2.7.0",
                "jax": "0.5.3",
                "jax_cuda12_plugin": "0.5.3",
                "nvidia_cuda_runtime_cu12": "12.8.90",
                "tensorflow": "2.18.0",
            },
        )
    )
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text(
        "from typing import Optional\n__version__ = '2.7.0'\ncuda: Optional[str] = '12.6'\n"
    )
    (site / "torch" / "__init__.py").write_text("raise SystemExit('imported!')\n")
    info = site / "tensorflow" / "python" / "platform"
    info.mkdir(parents=True)
    (info / "build_info.py").write_text(
        "build_info = collections.OrderedDict([('cuda_version', '12.5.1'), ('is_cuda_build', True)])\n"
    )
    installed = Installed.of_scan(scan_path([str(site)]))
    catalog = shipped_catalog()
    torch = framework_build(Framework.TORCH, installed, catalog)
    assert torch is not None and torch.cuda == Version("12.6") and torch.evidence == "torch/version.py"
    jax = framework_build(Framework.JAX, installed, catalog)
    assert jax is not None and jax.cuda == Version("12.8") and jax.variant == "cuda12"
    tf = framework_build(Framework.TENSORFLOW, installed, catalog)
    assert tf is not None and tf.cuda == Version("12.5")


# ---------------------------------------------------------------------------------------------
# smoke results, as the parent reads them


def _child(
    result: dict[str, object] | None,
    *,
    returncode: int = 0,
    stderr: str = "",
    timed_out: bool = False,
    noise: str = "",
) -> ChildRun:
    text = json.dumps(result) if result is not None else None
    return ChildRun(processes.Completed(("python",), returncode, noise, stderr, timed_out), text)


def _smoke_result(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "mode": "smoke",
        "framework": "torch",
        "stage": "done",
        "version": "2.6.0+cu124",
        "cuda": "12.4",
        "cudnn": "9.1.0",
        "arch_list": ["sm_75", "sm_80"],
        "devices": [
            {"index": 0, "name": "Tesla T4", "capability": "7.5", "max_abs_diff": 0.0, "error": None}
        ],
        "gpu_reason": None,
        "cpu_max_abs_diff": 0.0,
        "error": None,
        "notes": [],
    }
    base.update(changes)
    return base


def _smoke(completed: processes.Completed, *, gpu: bool = True, require: bool = False) -> Check:
    return check_smoke(Framework.TORCH, completed, timeout=30, host_has_gpu=gpu, require_gpu=require)


def test_smoke_pass_reports_device_and_versions() -> None:
    check = _smoke(_child(_smoke_result(), noise="framework chatter\n"))
    assert check.status is Status.PASS
    assert check.detail == (
        "Tesla T4 (sm_75): matmul agrees with CPU; torch 2.6.0+cu124, CUDA 12.4, cuDNN 9.1.0"
    )


def test_smoke_crash_hang_and_import_error_are_fails_with_their_cause() -> None:
    crash = _smoke(_child(None, returncode=-11, stderr="Fatal Python error\nSegmentation fault"))
    assert crash.status is Status.FAIL
    assert crash.detail == "crashed with SIGSEGV; stderr: Fatal Python error | Segmentation fault"
    hang = _smoke(_child(None, returncode=-1, timed_out=True))
    assert hang.status is Status.FAIL and hang.detail == "did not finish within 30s (killed)"
    failed = _smoke(
        _child(
            _smoke_result(stage="import", version=None, error="ImportError: libcudnn.so.9: cannot open"),
            returncode=3,
            stderr="Traceback\nImportError: libcudnn.so.9",
        )
    )
    assert failed.status is Status.FAIL
    assert failed.detail.startswith("import failed: ImportError: libcudnn.so.9: cannot open")
    mute = _smoke(_child(None, returncode=1, stderr="boom"))
    assert mute.detail == "exited 1 without a result; stderr: boom"


def test_smoke_without_gpu() -> None:
    cpu_only = _smoke_result(devices=[], gpu_reason="torch.cuda.is_available() is False")
    alone = _smoke(_child(cpu_only), gpu=False)
    assert alone.status is Status.PASS
    assert alone.detail == "CPU matmul ok (torch 2.6.0+cu124); no GPU on this host"
    assert _smoke(_child(cpu_only), gpu=False, require=True).status is Status.FAIL
    unseen = _smoke(_child(cpu_only, stderr="The NVIDIA driver on your system is too old"))
    assert unseen.status is Status.FAIL
    assert "sees no GPU although the host has one" in unseen.detail
    assert "too old" in unseen.detail


def test_smoke_wrong_results_and_device_errors() -> None:
    wrong_cpu = _smoke(_child(_smoke_result(cpu_max_abs_diff=3.0)))
    assert wrong_cpu.status is Status.FAIL
    assert wrong_cpu.detail == (
        "torch 2.6.0+cu124: CPU matmul differs from the exact product (max abs diff 3.0)"
    )
    device = {
        "index": 0,
        "name": "Tesla P100",
        "capability": "6.0",
        "max_abs_diff": None,
        "error": "RuntimeError: CUDA error: no kernel image is available",
    }
    no_kernel = _smoke(_child(_smoke_result(devices=[device])))
    assert no_kernel.status is Status.FAIL
    assert "no kernels for sm_60 in torch's arch list (sm_75 sm_80)" in no_kernel.detail
    differs = dict(device, error=None, max_abs_diff=0.5, capability="7.5")
    assert _smoke(_child(_smoke_result(devices=[differs]))).status is Status.FAIL


@pytest.mark.parametrize(
    "device_change",
    [
        {"max_abs_diff": None, "non_finite": 2304},
        {"max_abs_diff": None, "non_finite": 1},
        {"max_abs_diff": float("nan")},
        {"max_abs_diff": float("inf")},
    ],
)
def test_a_non_finite_gpu_result_is_a_fail_naming_the_device(
    device_change: dict[str, object],
) -> None:
    device = {
        "index": 0,
        "name": "Tesla T4",
        "capability": "7.5",
        "max_abs_diff": 0.0,
        "non_finite": 0,
        "error": None,
        **device_change,
    }
    check = _smoke(_child(_smoke_result(devices=[device])))
    assert check.status is Status.FAIL
    assert check.detail.startswith("torch 2.6.0+cu124: GPU0 Tesla T4 (sm_75): matmul ")
    count = device_change.get("non_finite")
    if count:
        assert f"returned {count} non-finite value" in check.detail


def test_a_non_finite_cpu_result_is_a_fail() -> None:
    check = _smoke(_child(_smoke_result(cpu_max_abs_diff=None, cpu_non_finite=1)))
    assert check.status is Status.FAIL
    assert check.detail == ("torch 2.6.0+cu124: CPU matmul returned 1 non-finite value (NaN or infinity)")
    nan = _smoke(_child(_smoke_result(cpu_max_abs_diff=float("nan"))))
    assert nan.status is Status.FAIL


def test_the_child_counts_non_finite_values_instead_of_comparing_them() -> None:
    a, b = matrices()
    exact = reference_matmul(a, b)
    one = [list(row) for row in exact]
    one[3][7] = float("nan")
    assert compare(exact, exact) == (0.0, 0)
    assert compare(one, exact) == (None, 1)
    assert compare([[float("nan")] * len(exact)] * len(exact), exact)[1] == len(exact) ** 2
    assert compare([[float("inf")]], exact) == (None, 1)
    assert compare([[1.0]], exact) == (float("inf"), 0)


def test_stderr_tail_drops_traceback_frames_and_the_reported_error() -> None:
    stderr = (
        "W0000 cuda_executor.cc: could not open libcuda\n"
        "Traceback (most recent call last):\n"
        '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
        "    import torch\n"
        "    ^^^^^^^^^^^^\n"
        "ImportError: libcudnn.so.9: cannot open shared object file\n"
    )
    assert (
        stderr_tail(stderr, skip="ImportError: libcudnn.so.9: cannot open shared object file")
        == "W0000 cuda_executor.cc: could not open libcuda"
    )


def test_check_detail_is_always_one_line() -> None:
    assert Check("versions", Status.FAIL, "a\n  b\tc").detail == "a b c"


def test_stderr_tail_is_one_bounded_line() -> None:
    text = "\n".join(f"line {i}" for i in range(100)) + "\n\n"
    assert stderr_tail(text) == "line 97 | line 98 | line 99"
    assert len(stderr_tail("x" * 1000)) <= 303


# ---------------------------------------------------------------------------------------------
# the child's own pieces


def test_child_matmul_reference_is_exact_in_float32() -> None:
    a, b = matrices()
    product = reference_matmul(a, b)
    assert max(abs(v) for row in product for v in row) < 2**24
    assert max_abs_diff(product, product) == 0.0
    assert max_abs_diff([[1.0]], product) == float("inf")


def test_largest_block_binary_search_is_bounded() -> None:
    limit = 5 * 1024**3 + 12345
    calls: list[int] = []

    def fits(size: int) -> bool:
        calls.append(size)
        return size <= limit

    size, complete = largest_block(fits, 16 * 1024**3, time.monotonic() + 10)
    assert complete and limit - 64 * 1024**2 <= size <= limit
    assert len(calls) <= 24
    assert largest_block(lambda n: True, 1024, time.monotonic() + 1) == (1024, True)
    cut, done = largest_block(lambda n: False, 16 * 1024**3, time.monotonic() - 1)
    assert (cut, done) == (0, False)


# ---------------------------------------------------------------------------------------------
# vram and env


def _probe(gpus: list[dict[str, object]], **extra: object) -> processes.Completed:
    return _child(
        {
            "mode": "vram",
            "framework": "torch",
            "gpus": gpus,
            "probed": True,
            "reason": None,
            "error": None,
            **extra,
        }
    )


def test_vram_uses_nvml_numbers_and_the_probe_largest_block() -> None:
    gib = 1024**3
    gpus = [Gpu("Tesla T4", ComputeCapability(7, 5), 15360, 14000)]
    probe = _probe([{"index": 0, "free": 14 * gib, "total": 15 * gib, "largest": 13 * gib, "complete": True}])
    check = check_vram(gpus, probe, probe_timeout=30, host_has_gpu=True, require_gpu=True, min_free_gib=8)
    assert check.status is Status.PASS
    assert check.detail == "GPU0 Tesla T4: 13.7 GiB free of 15.0 GiB, largest block 13.0 GiB"
    low = check_vram(gpus, probe, probe_timeout=30, host_has_gpu=True, require_gpu=True, min_free_gib=14)
    assert low.status is Status.WARN
    assert low.detail.startswith("GPU0 Tesla T4 has 13.7 GiB free, the profile asks for 14 GiB")


def test_vram_without_gpu_and_with_a_failed_probe() -> None:
    assert (
        check_vram([], None, probe_timeout=1, host_has_gpu=False, require_gpu=False, min_free_gib=None).status
        is Status.SKIP
    )
    assert (
        check_vram([], None, probe_timeout=1, host_has_gpu=False, require_gpu=True, min_free_gib=None).status
        is Status.FAIL
    )
    crashed = _child(None, returncode=-11)
    check = check_vram(
        [Gpu("A100", ComputeCapability(8, 0), 40960, 40000)],
        crashed,
        probe_timeout=1,
        host_has_gpu=True,
        require_gpu=False,
        min_free_gib=None,
    )
    assert check.status is Status.WARN and "probe crashed with SIGSEGV" in check.detail
    unprobed = check_vram(
        [Gpu("A100", ComputeCapability(8, 0), 40960, 40000)],
        None,
        probe_timeout=1,
        host_has_gpu=True,
        require_gpu=False,
        min_free_gib=None,
    )
    assert unprobed.status is Status.PASS
    assert unprobed.detail == (
        "GPU0 A100: 39.1 GiB free of 40.0 GiB; largest block not probed (no torch, cupy or jax here)"
    )


def test_env_check() -> None:
    wanted = (("XLA_PYTHON_CLIENT_PREALLOCATE", "false"), ("PYTORCH_CUDA_ALLOC_CONF", "x"))
    ok = check_env(wanted, {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "PYTORCH_CUDA_ALLOC_CONF": "x"})
    assert ok.status is Status.PASS
    bad = check_env(wanted, {"XLA_PYTHON_CLIENT_PREALLOCATE": "true"})
    assert bad.status is Status.FAIL
    assert bad.detail.startswith(
        "XLA_PYTHON_CLIENT_PREALLOCATE='true', expected 'false'; PYTORCH_CUDA_ALLOC_CONF is not set"
    )
    assert check_env((), {}).status is Status.SKIP


# ---------------------------------------------------------------------------------------------
# the report and the Python entry point


def test_report_json_shape_and_ok() -> None:
    report = VerifyReport((Check("marker", Status.PASS, "fine"), Check("vram", Status.WARN, "low")))
    assert report.ok
    assert report.to_json() == {
        "ok": True,
        "checks": [
            {"name": "marker", "status": "PASS", "detail": "fine"},
            {"name": "vram", "status": "WARN", "detail": "low"},
        ],
    }
    failed = VerifyReport((Check("env", Status.FAIL, "x"),))
    assert not failed.ok and "1 check(s) failed" in str(failed)


def test_python_entry_point_returns_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import colabenv

    monkeypatch.setenv("COLABENV_STATE_DIR", str(tmp_path))
    write_marker(
        tmp_path,
        requirements=["packaging>=20"],
        frameworks={},
        smoke=[],
        env={"COLABENV_TEST_FLAG": "on"},
        python=sys.executable,
    )
    monkeypatch.setenv("COLABENV_TEST_FLAG", "on")
    report = colabenv.verify()
    expect(report, marker=Status.PASS, versions=Status.PASS, consistency=Status.PASS, env=Status.PASS)
    assert [c.name for c in report.checks][:4] == ["marker", "versions", "duplicates", "consistency"]


def test_the_entry_point_survives_importing_the_module() -> None:
    import colabenv
    import colabenv.verification

    assert callable(colabenv.verify)
    assert colabenv.verify.__module__ == "colabenv"


def test_help_documents_the_interpreter_knob(runner: Runner) -> None:
    for command, words in (
        ("verify", "smoke tests run in it"),
        ("detect", "installed distributions from this interpreter"),
    ):
        done = runner(command, "--help", env={"COLUMNS": "200"})
        assert done.returncode == 0, done.stderr
        assert "--interpreter PYTHON" in done.stdout
        assert words in " ".join(done.stdout.split())


# ---------------------------------------------------------------------------------------------
# the hook for the components check (issue 13: the catalog provides the finder)


class _Gap:
    """A problem as the catalog's finder could return it."""

    def __str__(self) -> str:
        return "nvidia-cudnn-cu12 9.28.0.42 has no kernels for sm_60; the last version that has is 9.10.2.21"


def test_components_check_reports_what_the_catalog_finds() -> None:
    seen: list[tuple[dict[str, str], tuple[ComputeCapability, ...]]] = []

    def finder(installed: Mapping[str, str], caps: tuple[ComputeCapability, ...]) -> list[_Gap]:
        seen.append((dict(installed), caps))
        return [_Gap()] if ComputeCapability(6, 0) in caps else []

    installed = {"nvidia-cudnn-cu12": "9.28.0.42", "numpy": "2.1.0"}
    pascal = check_components(installed, [ComputeCapability(7, 5), ComputeCapability(6, 0)], finder)
    assert pascal.status is Status.FAIL
    assert pascal.detail == str(_Gap())
    assert seen[0] == (installed, (ComputeCapability(6, 0), ComputeCapability(7, 5)))
    turing = check_components(installed, [ComputeCapability(7, 5)], finder)
    assert turing.status is Status.PASS and turing.detail.endswith("kernels for sm_75")
    assert check_components(installed, [], finder).status is Status.SKIP


def test_verify_judges_installed_components_by_the_shipped_facts(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cuDNN without Pascal kernels installed on a P100: the components check FAILs, naming
    the library, its version, the GPU and the last release that has its kernels."""
    from colabenv.verification.run import verify

    site = tmp_path / "site"
    dist = site / "nvidia_cudnn_cu12-9.28.0.42.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: nvidia-cudnn-cu12\nVersion: 9.28.0.42\n")
    monkeypatch.syspath_prepend(str(site))
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setenv("COLABENV_STATE_DIR", str(state))
    monkeypatch.setenv("COLABENV_DRIVER_VERSION", "550.54.15")
    monkeypatch.setenv("COLABENV_COMPUTE_CAPABILITY", "6.0")
    write_marker(state, smoke=[], python=sys.executable)
    report = verify(timeout=30)
    expect(
        report,
        components=(
            Status.FAIL,
            "nvidia-cudnn-cu12 9.28.0.42 has no kernels for sm_60",
            "9.10.2.21 is the last release that covers it",
        ),
    )
    names = [c.name for c in report.checks]
    assert names.index("components") == names.index("consistency") + 1

    monkeypatch.setenv("COLABENV_COMPUTE_CAPABILITY", "7.5")
    expect(verify(timeout=30), components=Status.PASS)

    injected = verify(timeout=30, component_problems=lambda installed, caps: [_Gap()])
    assert injected.check("components") == Check("components", Status.FAIL, str(_Gap()))

    monkeypatch.delenv("COLABENV_DRIVER_VERSION")
    monkeypatch.delenv("COLABENV_COMPUTE_CAPABILITY")
    if not Path("/proc/driver/nvidia/version").exists():
        expect(verify(timeout=30), components=None)


def test_env_check_of_references_compares_the_expansion_and_never_shows_it() -> None:
    """A ``${VAR}`` value passes when the variable holds it as the hook expands it; the detail
    shows the reference, never the value (the secret) it stands for."""
    secret = "hf_s3cret-0123"
    wanted = (("HF_TOKEN", "${HF_TOKEN}"), ("AUTH_HEADER", "Bearer ${HF_TOKEN}"))
    ok = check_env(wanted, {"HF_TOKEN": secret, "AUTH_HEADER": f"Bearer {secret}"})
    assert ok.status is Status.PASS and ok.detail == "HF_TOKEN, AUTH_HEADER set as asked"
    wrong = check_env(wanted, {"HF_TOKEN": secret, "AUTH_HEADER": f"Basic {secret}"})
    assert wrong.status is Status.FAIL and secret not in wrong.detail
    assert wrong.detail.startswith(
        "AUTH_HEADER is not Bearer ${HF_TOKEN} as expanded from the environment (its value is not shown)"
    )
    missing = check_env(wanted, {})
    assert missing.status is Status.FAIL
    assert missing.detail.startswith(
        "HF_TOKEN=${HF_TOKEN} needs $HF_TOKEN, which is not set: set it in the environment"
        " (on Colab, in Colab's secrets, and run colabenv.bootstrap() again); AUTH_HEADER="
    )
    unset = check_env((("AUTH_HEADER", "Bearer ${T}"),), {"T": secret})
    assert unset.detail.startswith("AUTH_HEADER is not set (expected Bearer ${T})")
    assert secret not in unset.detail
    child = check_env(wanted, {}, resolved={"HF_TOKEN": "same", "AUTH_HEADER": "same"})
    assert child.status is Status.PASS, "the smoke child's statuses stand for the values it kept"


def test_env_check_masks_a_literal_secret_of_an_old_marker() -> None:
    old = check_env((("HF_TOKEN", "hf_literal"),), {"HF_TOKEN": "hf_other"})
    assert old.status is Status.FAIL and old.detail.startswith("HF_TOKEN=****, expected ****")
    assert "hf_" not in old.detail
