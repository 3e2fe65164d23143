"""``colabenv verify --json`` in a real virtual environment holding stand-in frameworks.

Each case builds a venv (``--without-pip``, a fraction of a second), installs stand-in torch,
jax or tensorflow with one behaviour, writes a restart marker, pretends a GPU host through the
``COLABENV_*`` target variables where it needs one, and asserts every check's exact status,
the exit code, and for a crash or hang that the other smoke tests still report in time.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from colabenv.catalog.load import shipped_catalog
from colabenv.models import ComputeCapability, CpuTarget, Framework, NvidiaTarget, archs_cover, format_driver
from tests.support.checks import ANY, expect
from tests.support.checks import details as details_of
from tests.support.fixtures import Runner
from tests.support.pythons import oldest_python
from tests.support.standin_frameworks import (
    Behaviour,
    Standin,
    StandinVenv,
    make_venv,
    venv_env,
    write_marker,
)

pytestmark = pytest.mark.slow

GPU_HOST = {
    "COLABENV_DRIVER_VERSION": "560.35.03",
    "COLABENV_CUDA_VERSION": "12.6",
    "COLABENV_COMPUTE_CAPABILITY": "7.5",
}
TORCH = "2.6.0+cu124"
JAX = "0.5.3"
TF = "2.18.0"


def _real_gpu_here() -> bool:
    return Path("/proc/driver/nvidia/version").exists() or shutil.which("nvidia-smi") is not None


needs_no_gpu = pytest.mark.skipif(_real_gpu_here(), reason="this host has a real NVIDIA GPU")


class Case:
    """One venv, its marker and the environment verify runs in."""

    def __init__(self, tmp_path: Path) -> None:
        self.venv: StandinVenv = make_venv(tmp_path / "venv")
        self.state = tmp_path / "state"
        self.env = venv_env(COLABENV_STATE_DIR=str(self.state))
        self.order: list[str] = []
        self.report: dict[str, Any] = {}

    def gpu_host(self, **overrides: str) -> Case:
        self.env.update(GPU_HOST)
        self.env.update(overrides)
        return self

    def torch(self, behaviour: Behaviour = Behaviour.HEALTHY, version: str = TORCH, **fields: Any) -> Case:
        self.venv.install(Standin("torch", version, behaviour, **fields))
        return self

    def jax(self, behaviour: Behaviour = Behaviour.HEALTHY, *, plugin: bool = True, **fields: Any) -> Case:
        self.venv.install(Standin("jax", JAX, behaviour, requires=(f"jaxlib=={JAX}",), **fields))
        self.venv.install_plain("jaxlib", JAX)
        if plugin:
            self.venv.install_plain("jax-cuda12-plugin", JAX)
        return self

    def tensorflow(self, behaviour: Behaviour = Behaviour.HEALTHY, **fields: Any) -> Case:
        self.venv.install(Standin("tensorflow", TF, behaviour, cuda="12.5", **fields))
        return self

    def marker(self, requirements: list[str], **fields: Any) -> Case:
        frameworks = {}
        for req in requirements:
            name, _, version = req.partition("==")
            name = name.split("[")[0]
            if name in ("torch", "jax", "tensorflow"):
                frameworks[name] = version
        fields.setdefault("python", self.venv.python)
        write_marker(self.state, requirements=requirements, frameworks=frameworks, **fields)
        return self

    def verify(self, *args: str, timeout: float = 120) -> tuple[int, dict[str, Any], dict[str, str], float]:
        """The exit code, the report less its components and determinism rows (the whole one
        is ``self.report``), the details of those it holds, and the time verify took."""
        started = time.monotonic()
        result = self.venv.run_verify("--json", *args, env=self.env, timeout=timeout)
        elapsed = time.monotonic() - started
        assert result.returncode in (0, 1), result.stderr
        data = json.loads(result.stdout)
        assert set(data) == {"ok", "checks"}
        assert data["ok"] is (result.returncode == 0)
        assert all(set(c) == {"name", "status", "detail"} for c in data["checks"])
        self.report = data
        details = details_of(data)
        assert all("\n" not in d for d in details.values())
        self.order = list(details)
        # the components check (tests/test_verify.py covers it) judges the stand-in venv's
        # NVIDIA wheels; here it must only never fail
        if "components" in details:
            expect(data, components={"PASS", "SKIP"})
        # the checklist's determinism check (below, and tests/test_verify_checklist.py) is a
        # SKIP unless the marker or profile has [reproducibility]
        expect(data, determinism=ANY)
        rest = [c for c in data["checks"] if c["name"] not in ("components", "determinism")]
        return result.returncode, {**data, "checks": rest}, details_of({"checks": rest}), elapsed


def _all(status: str, *names: str) -> dict[str, str]:
    return {name: status for name in names}


STATIC_PASS = _all("PASS", "marker", "versions", "duplicates", "consistency")


def test_healthy_gpu_all_three_frameworks_pass(tmp_path: Path) -> None:
    case = (
        Case(tmp_path)
        .gpu_host()
        .torch()
        .jax()
        .tensorflow()
        .marker(
            [f"torch=={TORCH}", f"jax[cuda12]=={JAX}", f"tensorflow=={TF}"],
            env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
        )
    )
    case.env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    code, report, details, _ = case.verify()
    expect(
        report,
        {
            **STATIC_PASS,
            **_all("PASS", "cuda:torch", "cuda:tensorflow", "cuda:jax"),
            **_all("PASS", "smoke:torch", "smoke:tensorflow", "smoke:jax"),
            "vram": "PASS",
            "env": "PASS",
        },
        only=True,
    )
    assert code == 0
    assert case.order == [
        "marker",
        "versions",
        "duplicates",
        "consistency",
        "cuda:torch",
        "cuda:tensorflow",
        "cuda:jax",
        "components",
        "smoke:torch",
        "smoke:tensorflow",
        "smoke:jax",
        "determinism",
        "vram",
        "env",
    ]
    assert details["smoke:torch"] == (
        "Stand-in T4 (sm_75): matmul agrees with CPU; torch 2.6.0+cu124, CUDA 12.4, cuDNN 9.1.0"
    )
    assert details["vram"].startswith(
        "GPU0: 15.0 GiB free of 16.0 GiB, largest block 12.0 GiB; processes on the GPUs "
    )
    assert re.search(r"; host RAM [0-9.]+ GiB free of [0-9.]+ GiB$", details["vram"])
    assert "driver 560.35.03 (CUDA 12.6)" in details["cuda:torch"]


BOX_DRAWING = set("│┃─━┌┐└┘├┤┬┴┼╭╮╰╯┏┓┗┛┡┩")
MARKUP_GPU = "[bold]Evil[/] T4 [/] [link=x]"


def _on_a_terminal(argv: list[str], env: dict[str, str], cwd: Path, columns: int = 100) -> tuple[int, str]:
    """Run ``argv`` with a pseudo-terminal as its stdout; its exit status and what it showed."""
    import pty

    leader, follower = pty.openpty()
    with subprocess.Popen(
        argv,
        stdout=follower,
        stderr=subprocess.PIPE,
        env={**env, "COLUMNS": str(columns), "TERM": "dumb"},
        cwd=cwd,
    ) as child:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = child.wait(timeout=120)
    os.close(leader)
    return code, b"".join(chunks).decode("utf-8", "replace")


def test_plain_lines_for_a_pipe(tmp_path: Path) -> None:
    case = Case(tmp_path).gpu_host().torch(gpu_name=MARKUP_GPU).marker([f"torch=={TORCH}"])
    result = case.venv.run_verify(env=case.env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "colabenv verify: expected from restart marker (standin)"
    assert [line.split()[:2] for line in lines[1:-1]] == [
        ["PASS", name]
        for name in (
            "marker",
            "versions",
            "duplicates",
            "consistency",
            "cuda:torch",
            "components",
            "smoke:torch",
        )
    ] + [["SKIP", "determinism"], ["PASS", "vram"], ["SKIP", "env"]]
    smoke = next(line for line in lines if line.startswith("PASS  smoke:torch"))
    assert smoke.endswith(
        f"{MARKUP_GPU} (sm_75): matmul agrees with CPU; torch 2.6.0+cu124, CUDA 12.4, cuDNN 9.1.0"
    )
    assert lines[-1] == "all checks passed"
    assert not BOX_DRAWING & set(result.stdout)


def test_a_table_for_a_terminal_that_shows_markup_as_it_is(tmp_path: Path) -> None:
    case = Case(tmp_path).gpu_host().torch(gpu_name=MARKUP_GPU).marker([f"torch=={TORCH}"])
    code, shown = _on_a_terminal([str(case.venv.colabenv), "verify"], case.env, tmp_path, columns=200)
    assert code == 0, shown
    assert BOX_DRAWING & set(shown)
    assert "Traceback" not in shown and "MarkupError" not in shown
    assert MARKUP_GPU in shown
    assert "all checks passed" in shown


@needs_no_gpu
def test_no_gpu_the_cpu_matmul_passes_and_the_gpu_parts_skip(tmp_path: Path) -> None:
    case = (
        Case(tmp_path)
        .torch(Behaviour.NO_GPU)
        .jax(Behaviour.NO_GPU, plugin=False)
        .marker([f"torch=={TORCH}", f"jax=={JAX}"])
    )
    code, report, details, _ = case.verify()
    expect(
        report,
        {
            **STATIC_PASS,
            **_all("SKIP", "cuda:torch", "cuda:jax", "vram", "env"),
            **_all("PASS", "smoke:torch", "smoke:jax"),
        },
        only=True,
    )
    assert code == 0
    assert details["smoke:torch"] == "CPU matmul ok (torch 2.6.0+cu124); no GPU on this host"


def test_a_cpu_build_on_a_gpu_host_passes_its_cpu_matmul(tmp_path: Path) -> None:
    """A profile with variant = "cpu": the build sees no GPU by design."""
    case = (
        Case(tmp_path)
        .gpu_host()
        .torch(Behaviour.NO_GPU, version="2.6.0+cpu", cuda=None)
        .marker(["torch==2.6.0+cpu"])
    )
    code, report, details, _ = case.verify()
    expect(report, {"smoke:torch": "PASS", "cuda:torch": "WARN"})
    assert details["smoke:torch"] == "CPU matmul ok (torch 2.6.0+cpu, a CPU build)"
    assert code == 0


@needs_no_gpu
def test_no_gpu_fails_when_the_profile_requires_one(tmp_path: Path) -> None:
    case = Case(tmp_path).torch(Behaviour.NO_GPU).marker([f"torch=={TORCH}"], require_gpu=True)
    code, report, _, _ = case.verify()
    expect(
        report, {**STATIC_PASS, **_all("FAIL", "cuda:torch", "smoke:torch", "vram"), "env": "SKIP"}, only=True
    )
    assert code == 1


def _golden_gpu_profile_on_this_cpu_host(case: Case, name: str) -> None:
    """Install what the golden profile ``name`` resolves to on this CPU host (stand-ins), its
    ``[env]`` hook, and the marker its script would write."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    from colabenv.models import InstalledSet, Target
    from colabenv.profile.files import find_profile
    from colabenv.profile.load import load_profile
    from colabenv.resolve.resolver import resolve
    from colabenv.script.state import ENV_HOOK_NAME

    profile = load_profile(find_profile(name))
    assert profile.verify.require_gpu
    here = Version(f"{sys.version_info.major}.{sys.version_info.minor}")
    lines = resolve(
        profile, Target(CpuTarget(), here, installed=InstalledSet(())), shipped_catalog()
    ).requirements
    pinned = {}
    for line in lines:
        req = Requirement(line)
        version = next(iter(req.specifier)).version if req.name != "numpy" else "2.1.0"
        pinned[req.name] = version
        if req.name == "torch":
            case.torch(Behaviour.NO_GPU, version=version, cuda=None)
        else:
            case.venv.install_plain(req.name, version)
    assert pinned["torch"].endswith("+cpu")
    hook = dict(profile.env)
    (case.venv.site_packages / ENV_HOOK_NAME).write_text(f"import os; os.environ.update({hook!r})\n")
    case.marker(
        list(lines), env=hook, profile=profile.name, profile_hash=profile.content_hash, require_gpu=True
    )


@needs_no_gpu
def test_a_golden_gpu_profile_passes_its_cpu_checks_with_cpu(tmp_path: Path) -> None:
    """``verify --cpu``: the GPU checks SKIP with the reason, every other check runs and
    passes; without it the same venv fails as a GPU profile on a CPU host must."""
    case = Case(tmp_path)
    _golden_gpu_profile_on_this_cpu_host(case, "pytorch")
    reason = "--cpu: GPU checks skipped on request"
    code, report, details, _ = case.verify("--profile", "pytorch", "--cpu")
    expect(
        case.report,
        {
            **STATIC_PASS,
            "cuda:torch": ("SKIP", reason),
            "components": ("SKIP", reason),
            "smoke:torch": "PASS",
            "determinism": "SKIP",
            "vram": ("SKIP", reason),
            "env": "PASS",
        },
        only=True,
    )
    assert details["cuda:torch"] == reason
    assert details["vram"].startswith(reason + "; host RAM ")
    assert details["smoke:torch"].startswith("CPU matmul ok (torch 2.11")
    assert code == 0

    code, report, details, _ = case.verify("--profile", "pytorch")
    expect(
        report, {**STATIC_PASS, **_all("FAIL", "cuda:torch", "smoke:torch", "vram"), "env": "PASS"}, only=True
    )
    assert code == 1


@needs_no_gpu
def test_the_python_api_verifies_a_golden_gpu_profile_with_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import colabenv

    case = Case(tmp_path)
    _golden_gpu_profile_on_this_cpu_host(case, "pytorch")
    monkeypatch.setenv("COLABENV_STATE_DIR", str(case.state))
    monkeypatch.chdir(tmp_path)
    report = colabenv.verify("pytorch", interpreter=str(case.venv.python), cpu=True)
    reason = "--cpu: GPU checks skipped on request"
    expect(
        report,
        {**STATIC_PASS, "cuda:torch": ("SKIP", reason), "smoke:torch": "PASS", "env": "PASS"},
    )
    assert report.ok


def test_gpu_host_but_the_framework_sees_none(tmp_path: Path) -> None:
    case = Case(tmp_path).gpu_host().torch(Behaviour.NO_GPU).marker([f"torch=={TORCH}"])
    code, report, details, _ = case.verify()
    expect(
        report,
        {
            **STATIC_PASS,
            "cuda:torch": "PASS",
            "smoke:torch": "FAIL",
            "vram": "WARN",
            "env": "SKIP",
        },
        only=True,
    )
    assert "sees no GPU although the host has one" in details["smoke:torch"]
    assert details["vram"].startswith("no memory information (torch sees no GPU); ")
    assert code == 1


def test_wrong_cuda_build_for_the_driver(tmp_path: Path) -> None:
    case = (
        Case(tmp_path)
        .gpu_host(COLABENV_DRIVER_VERSION="550.54.15", COLABENV_CUDA_VERSION="12.4")
        .torch(Behaviour.DRIVER_TOO_OLD, version="2.6.0+cu130", cuda="13.0")
        .marker(["torch==2.6.0+cu130"])
    )
    code, report, details, _ = case.verify()
    expect(
        report,
        {
            **STATIC_PASS,
            "cuda:torch": "FAIL",
            "smoke:torch": "FAIL",
            "vram": "WARN",
            "env": "SKIP",
        },
        only=True,
    )
    assert "CUDA 13" in details["cuda:torch"] and "550.54.15" in details["cuda:torch"]
    assert "driver on your system is too old" in details["smoke:torch"]
    # the cause as doctor names it, from the same failure signatures (verification/causes.py)
    assert "; cause: driver-too-old (https://" in details["smoke:torch"], details["smoke:torch"]
    assert code == 1


def _release_missing_an_arch() -> tuple[str, str, str, str, list[str]]:
    """A torch release+variant of the catalog and a compute capability its arch list lacks."""
    catalog = shipped_catalog()
    candidates = ["6.0", "3.7", "12.0", "10.0"]
    for release in catalog.releases_of(Framework.TORCH):
        for variant in release.variants:
            if variant.cuda is None or not variant.local_tag:
                continue
            for text in candidates:
                cap = ComputeCapability.parse(text)
                if not archs_cover(variant.archs, cap):
                    driver = catalog.toolkit_driver(variant.cuda)
                    assert driver is not None
                    version = f"{release.version}+{variant.local_tag}"
                    return (
                        version,
                        str(variant.cuda),
                        text,
                        format_driver(driver),
                        [str(a) for a in variant.archs],
                    )
    raise AssertionError("every torch variant in the catalog covers every candidate GPU")


def test_missing_arch_for_the_gpu(tmp_path: Path) -> None:
    version, cuda, cap, driver, archs = _release_missing_an_arch()
    case = (
        Case(tmp_path)
        .gpu_host(COLABENV_DRIVER_VERSION=driver, COLABENV_CUDA_VERSION=cuda, COLABENV_COMPUTE_CAPABILITY=cap)
        .torch(Behaviour.MISSING_ARCH, version=version, cuda=cuda, capability=cap, arch_list=tuple(archs))
        .marker([f"torch=={version}"])
    )
    code, report, details, _ = case.verify()
    expect(
        report,
        {
            **STATIC_PASS,
            "cuda:torch": "FAIL",
            "smoke:torch": "FAIL",
            "vram": "PASS",
            "env": "SKIP",
        },
        only=True,
    )
    sm = "sm_" + cap.replace(".", "")
    assert f"no kernels for {sm}" in details["cuda:torch"]
    assert "no kernel image is available" in details["smoke:torch"]
    assert f"no kernels for {sm}" in details["smoke:torch"]
    assert "; cause: no-kernel-image (https://" in details["smoke:torch"], details["smoke:torch"]
    assert code == 1


def test_import_error_fails_that_framework_only(tmp_path: Path) -> None:
    case = (
        Case(tmp_path)
        .gpu_host()
        .torch(Behaviour.IMPORT_ERROR)
        .jax()
        .marker([f"torch=={TORCH}", f"jax[cuda12]=={JAX}"])
    )
    code, report, details, _ = case.verify()
    expect(
        report,
        {
            **STATIC_PASS,
            "cuda:torch": "PASS",
            "cuda:jax": "PASS",
            "smoke:torch": "FAIL",
            "smoke:jax": "PASS",
            "vram": "WARN",
            "env": "SKIP",
        },
        only=True,
    )
    assert details["smoke:torch"].startswith(
        "import failed: ImportError: libcudnn.so.9: cannot open shared object file"
    )
    assert "probe failed: ImportError" in details["vram"]
    assert code == 1


def test_segfault_on_import_is_a_fail_and_the_others_still_report(tmp_path: Path) -> None:
    case = (
        Case(tmp_path)
        .gpu_host()
        .torch(Behaviour.SEGFAULT)
        .jax()
        .tensorflow()
        .marker([f"torch=={TORCH}", f"jax[cuda12]=={JAX}", f"tensorflow=={TF}"])
    )
    code, report, details, _ = case.verify()
    expect(
        report,
        {
            **STATIC_PASS,
            **_all("PASS", "cuda:torch", "cuda:tensorflow", "cuda:jax"),
            "smoke:torch": "FAIL",
            "smoke:tensorflow": "PASS",
            "smoke:jax": "PASS",
            "vram": "WARN",
            "env": "SKIP",
        },
        only=True,
    )
    assert details["smoke:torch"] == "crashed with SIGSEGV; stderr: stand-in: about to crash"
    assert "probe crashed with SIGSEGV" in details["vram"]
    assert code == 1


def test_hang_on_import_is_killed_at_the_timeout_and_the_others_still_report(
    tmp_path: Path,
) -> None:
    timeout = 4
    case = (
        Case(tmp_path)
        .gpu_host()
        .torch(Behaviour.HANG)
        .jax()
        .marker([f"torch=={TORCH}", f"jax[cuda12]=={JAX}"], timeout_s=600)
    )
    code, report, details, elapsed = case.verify("--timeout", str(timeout))
    expect(
        report,
        {
            **STATIC_PASS,
            "cuda:torch": "PASS",
            "cuda:jax": "PASS",
            "smoke:torch": "FAIL",
            "smoke:jax": "PASS",
            "vram": "WARN",
            "env": "SKIP",
        },
        only=True,
    )
    assert details["smoke:torch"] == (
        "did not finish within 4s (killed); stderr: stand-in: hanging on import"
    )
    assert "importing torch did not finish within 4s" in details["vram"]
    assert code == 1
    assert elapsed < timeout + 4, f"verify took {elapsed:.1f}s with --timeout {timeout}"


def test_marker_timeout_bounds_the_smoke_tests(tmp_path: Path) -> None:
    case = Case(tmp_path).jax(Behaviour.HANG, plugin=False).marker([f"jax=={JAX}"], timeout_s=2)
    code, report, details, elapsed = case.verify()
    expect(report, {"smoke:jax": "FAIL"})
    assert details["smoke:jax"].startswith("did not finish within 2s")
    assert elapsed < 2 + 4
    assert code == 1


def test_wrong_version_installed(tmp_path: Path) -> None:
    case = Case(tmp_path).gpu_host().torch(version="2.5.1+cu124").marker([f"torch=={TORCH}"])
    code, report, details, _ = case.verify()
    expect(
        report,
        {
            "marker": "PASS",
            "versions": "FAIL",
            "duplicates": "PASS",
            "consistency": "PASS",
            "cuda:torch": "PASS",
            "smoke:torch": "PASS",
            "vram": "PASS",
            "env": "SKIP",
        },
        only=True,
    )
    assert details["versions"] == "torch: installed 2.5.1+cu124, expected ==2.6.0+cu124"
    assert code == 1


def test_unmet_dependency_of_a_framework(tmp_path: Path) -> None:
    case = (
        Case(tmp_path)
        .gpu_host()
        .torch(requires=("nvidia-cudnn-cu12==9.1.0.70", "filelock"))
        .marker([f"torch=={TORCH}"])
    )
    case.venv.install_plain("nvidia-cudnn-cu12", "9.3.0.75")
    code, report, details, _ = case.verify()
    expect(report, consistency="FAIL")
    assert details["consistency"] == (
        "torch 2.6.0+cu124 requires nvidia-cudnn-cu12==9.1.0.70, installed 9.3.0.75; "
        "torch 2.6.0+cu124 requires filelock, which is not installed"
    )
    assert code == 1


def test_env_variable_missing(tmp_path: Path) -> None:
    case = (
        Case(tmp_path)
        .gpu_host()
        .torch()
        .marker([f"torch=={TORCH}"], env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    )
    code, report, details, _ = case.verify()
    expect(report, env="FAIL")
    assert details["env"].startswith("PYTORCH_CUDA_ALLOC_CONF is not set")
    assert code == 1


def test_low_free_vram_warns(tmp_path: Path) -> None:
    case = (
        Case(tmp_path)
        .gpu_host()
        .torch(free_bytes=2 * 1024**3, largest_bytes=1024**3)
        .marker([f"torch=={TORCH}"], min_free_vram_gib=8)
    )
    code, report, details, _ = case.verify()
    expect(report, vram="WARN")
    assert details["vram"].startswith("GPU0 has 2.0 GiB free, the profile asks for 8 GiB")
    assert code == 0


def test_no_marker(tmp_path: Path) -> None:
    case = Case(tmp_path).gpu_host().torch()
    code, report, details, _ = case.verify()
    expect(
        report,
        {
            "marker": "FAIL",
            "versions": "SKIP",
            "duplicates": "PASS",
            "consistency": "PASS",
            "cuda:torch": "PASS",
            "smoke:torch": "PASS",
            "vram": "PASS",
            "env": "SKIP",
        },
        only=True,
    )
    assert details["marker"].startswith("no restart marker at ")
    assert code == 1


def test_corrupted_marker_fails_and_the_rest_still_runs(tmp_path: Path) -> None:
    case = Case(tmp_path).gpu_host().torch()
    case.state.mkdir()
    (case.state / "restart-marker.json").write_text('{"schema": 1, "profile": "x", "writ', encoding="utf-8")
    code, report, details, _ = case.verify()
    expect(
        report,
        {
            "marker": "FAIL",
            "versions": "SKIP",
            "duplicates": "PASS",
            "consistency": "PASS",
            "cuda:torch": "PASS",
            "smoke:torch": "PASS",
            "vram": "PASS",
            "env": "SKIP",
        },
        only=True,
    )
    assert details["marker"].startswith("corrupted restart marker: ")
    assert "restart-marker.json" in details["marker"]
    assert code == 1


def test_marker_newer_than_the_interpreter(tmp_path: Path) -> None:
    case = Case(tmp_path).gpu_host().torch().marker([f"torch=={TORCH}"], written_at=time.time() + 3600)
    code, report, details, _ = case.verify()
    expect(report, marker="FAIL")
    assert details["marker"].startswith("restart required: setup finished ")
    assert code == 1


def test_duplicate_framework_on_the_path_fails(tmp_path: Path) -> None:
    case = Case(tmp_path).gpu_host().torch().marker([f"torch=={TORCH}"])
    extra = tmp_path / "extra-site"
    case.venv.install_dist("torch", "2.5.1+cu121", files={"torch/__init__.py": ""}, site=extra)
    case.env["PYTHONPATH"] = str(extra)
    code, report, details, _ = case.verify()
    expect(report, duplicates="FAIL", versions="FAIL")
    assert "torch installed 2 times (2.5.1+cu121 in " in details["duplicates"]
    assert f"module torch in {case.venv.site_packages} is shadowed by {extra}" in details["duplicates"]
    assert code == 1


def _profile(tmp_path: Path, version: str) -> Path:
    path = tmp_path / "team.toml"
    path.write_text(
        "\n".join(
            [
                'name = "team"',
                "[frameworks]",
                f'torch = "=={version}"',
                "[env]",
                'PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True"',
                "[verify]",
                'smoke = ["torch"]',
                "require_gpu = true",
                "min_free_vram_gib = 1.0",
                "timeout_s = 60",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    return path


def _catalog_torch() -> tuple[str, str, str, str]:
    catalog = shipped_catalog()
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    for release in catalog.releases_of(Framework.TORCH):
        if not release.python.contains(here):
            continue
        for variant in release.variants:
            if variant.python is not None and not variant.python.contains(here):
                continue
            if (
                variant.cuda is not None
                and variant.local_tag
                and archs_cover(variant.archs, ComputeCapability(7, 5))
            ):
                driver = catalog.toolkit_driver(variant.cuda)
                assert driver is not None
                return (str(release.version), variant.local_tag, str(variant.cuda), format_driver(driver))
    raise AssertionError("no torch CUDA variant for sm_75 in the catalog")


def _install_companions(case: Case, profile: Path, torch: str, driver: str, cuda: str) -> None:
    """Whatever else the resolver pairs with this torch (torchaudio ...), as plain stand-ins."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    from colabenv.models import InstalledSet, Target
    from colabenv.profile.load import load_profile
    from colabenv.resolve.resolver import resolve

    target = Target(
        NvidiaTarget(Version(driver), Version(cuda), (ComputeCapability(7, 5),)),
        Version(f"{sys.version_info.major}.{sys.version_info.minor}"),
        installed=InstalledSet.from_mapping({"torch": torch}),
    )
    for line in resolve(load_profile(profile), target, shipped_catalog()).requirements:
        req = Requirement(line)
        if req.name != "torch":
            case.venv.install_plain(req.name, next(iter(req.specifier)).version)


def test_profile_resolved_for_this_host(tmp_path: Path) -> None:
    version, tag, cuda, driver = _catalog_torch()
    case = (
        Case(tmp_path)
        .gpu_host(COLABENV_DRIVER_VERSION=driver, COLABENV_CUDA_VERSION=cuda)
        .torch(version=f"{version}+{tag}", cuda=cuda)
    )
    case.env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    profile = _profile(tmp_path, version)
    _install_companions(case, profile, f"{version}+{tag}", driver, cuda)
    code, report, details, _ = case.verify("--profile", str(profile))
    expect(
        report,
        {
            "marker": "WARN",
            "versions": "PASS",
            "duplicates": "PASS",
            "consistency": "PASS",
            "cuda:torch": "PASS",
            "smoke:torch": "PASS",
            "vram": "PASS",
            "env": "PASS",
        },
        only=True,
    )
    assert f"torch {version}+{tag}" in details["versions"]
    assert code == 0


def test_profile_expecting_another_version(tmp_path: Path) -> None:
    version, _, cuda, driver = _catalog_torch()
    case = (
        Case(tmp_path)
        .gpu_host(COLABENV_DRIVER_VERSION=driver, COLABENV_CUDA_VERSION=cuda)
        .torch(version="1.13.1+cu117", cuda="11.7")
    )
    profile = _profile(tmp_path, version)
    code, report, details, _ = case.verify("--profile", str(profile))
    expect(report, versions="FAIL", env="FAIL")
    assert details["versions"].startswith("torch: installed 1.13.1+cu117, expected ==")
    assert code == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--timeout", "0"], "--timeout"),
        (["--profile", "no-such-profile-anywhere"], "no-such-profile-anywhere"),
        (["--lock", "missing.lock"], "missing.lock"),
        (["--profile", "a", "--lock", "b"], "not allowed with"),
    ],
)
def test_bad_input_exits_2_with_nothing_on_stdout(tmp_path: Path, args: list[str], message: str) -> None:
    venv = make_venv(tmp_path / "venv")
    result = subprocess.run(
        [str(venv.colabenv), "verify", "--json", *args],
        capture_output=True,
        text=True,
        env=venv_env(COLABENV_STATE_DIR=str(tmp_path)),
        timeout=60,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert message in result.stderr
    assert "Traceback" not in result.stderr


LOCK_PROFILE_HASH = "sha256:" + "1" * 64


PYTHON_XY = f"{sys.version_info.major}.{sys.version_info.minor}"


def _write_lock(path: Path, pins: list[tuple[str, str, str | None]]) -> Path:
    from packaging.utils import canonicalize_name

    from colabenv.lock.content import Lock, LockedFile, LockedPackage, LockHeader, LockTarget
    from colabenv.lock.file import render_lock
    from colabenv.models import LockedFramework

    header = LockHeader(
        colabenv_version="0.1.0",
        profile_name="team",
        profile_hash=LOCK_PROFILE_HASH,
        # the stand-in GPU host's driver, CUDA and GPU, and this Python: the lock is this host's
        target=LockTarget("560.35.03", "525.60.13", "12.6", ("7.5",), PYTHON_XY, "linux_x86_64"),
        frameworks=(LockedFramework("torch", "2.6.0", "cu124", None),),
        resolver="uv 0.8.0",
    )
    packages = tuple(
        LockedPackage(canonicalize_name(name), version, (LockedFile("0" * 64),), marker)
        for name, version, marker in pins
    )
    path.write_text(render_lock(Lock(header, packages)), encoding="utf-8")
    return path


def test_lock_pins_are_the_expectation(tmp_path: Path) -> None:
    case = (
        Case(tmp_path)
        .gpu_host()
        .torch()
        .marker(
            [f"torch=={TORCH}"],
            env={"PYTORCH_CUDA_ALLOC_CONF": "x"},
            profile="team",
            profile_hash=LOCK_PROFILE_HASH,
        )
    )
    case.env["PYTORCH_CUDA_ALLOC_CONF"] = "x"
    lock = _write_lock(
        tmp_path / "team.lock",
        [
            ("torch", TORCH, None),
            ("pywin32", "306", 'sys_platform == "win32"'),
        ],
    )
    code, report, details, _ = case.verify("--lock", str(lock))
    expect(
        report,
        {
            **STATIC_PASS,
            "cuda:torch": "PASS",
            "smoke:torch": "PASS",
            "vram": "PASS",
            "env": "PASS",
        },
        only=True,
    )
    assert details["versions"] == "1 requirement(s) of the lock team.lock met (torch 2.6.0+cu124)"
    assert code == 0
    stale = _write_lock(tmp_path / "stale.lock", [("torch", "2.7.0+cu126", None)])
    code, report, details, _ = case.verify("--lock", str(stale))
    expect(report, versions="FAIL")
    assert details["versions"] == "torch: installed 2.6.0+cu124, expected ==2.7.0+cu126"
    assert code == 1


ALL_THREE = [f"torch=={TORCH}", f"jax[cuda12]=={JAX}", f"tensorflow=={TF}"]


@pytest.mark.parametrize("behaviour", [Behaviour.GPU_NAN_ALL, Behaviour.GPU_NAN_ONE, Behaviour.CPU_NAN])
def test_a_nan_anywhere_in_a_matmul_is_a_fail_for_every_framework(
    tmp_path: Path,
    behaviour: Behaviour,
) -> None:
    case = Case(tmp_path).gpu_host().torch(behaviour).jax(behaviour).tensorflow(behaviour).marker(ALL_THREE)
    code, report, details, _ = case.verify()
    size = 48
    for framework in ("torch", "jax", "tensorflow"):
        name = f"smoke:{framework}"
        expect(report, {name: "FAIL"})
        if behaviour is Behaviour.CPU_NAN:
            assert "CPU matmul returned 1 non-finite value (NaN or infinity)" in details[name]
        else:
            count = size * size if behaviour is Behaviour.GPU_NAN_ALL else 1
            assert f"GPU0 Stand-in T4 (sm_75): matmul returned {count} non-finite value" in details[name]
    assert code == 1


def test_a_framework_printing_without_a_newline_still_reports(tmp_path: Path) -> None:
    case = Case(tmp_path).gpu_host().torch(Behaviour.CHATTY).marker([f"torch=={TORCH}"])
    code, report, _, _ = case.verify()
    expect(report, {"smoke:torch": "PASS"})
    assert code == 0


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rindex(")") + 2] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux's /proc")
@pytest.mark.parametrize("behaviour", [Behaviour.DAEMON, Behaviour.DAEMON_HANG])
def test_no_process_a_smoke_test_started_outlives_verify(
    tmp_path: Path,
    behaviour: Behaviour,
) -> None:
    """A framework that starts a detached process (setsid, double fork), whether it then
    finishes or hangs past the timeout: verify leaves none of them running."""
    pids = tmp_path / "pids"
    pids.mkdir()
    case = Case(tmp_path).gpu_host().torch(behaviour, pid_dir=str(pids)).marker([f"torch=={TORCH}"])
    try:
        _, report, details, elapsed = case.verify("--timeout", "4")
        started = [int(p.name) for p in pids.iterdir()]
        assert started, "the stand-in started no process"
        deadline = time.monotonic() + 2
        while any(_alive(pid) for pid in started) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [pid for pid in started if _alive(pid)] == []
        if behaviour is Behaviour.DAEMON:
            expect(report, {"smoke:torch": "PASS"})
        else:
            assert details["smoke:torch"].startswith("did not finish within 4s (killed)")
            assert elapsed < 4 + 8
    finally:
        for entry in pids.iterdir():
            with contextlib.suppress(OSError):
                os.kill(int(entry.name), signal.SIGKILL)


def test_the_marker_of_another_profile_does_not_pass(tmp_path: Path) -> None:
    """Profile A's lock, profile B's marker: verify of A fails the marker and says why."""
    case = (
        Case(tmp_path)
        .gpu_host()
        .torch()
        .marker(
            [f"torch=={TORCH}"],
            env={"PYTORCH_CUDA_ALLOC_CONF": "x"},
            profile="team-b",
            profile_hash="sha256:" + "b" * 64,
        )
    )
    lock = _write_lock(tmp_path / "team.lock", [("torch", TORCH, None)])
    code, report, details, _ = case.verify("--lock", str(lock))
    expect(report, marker="FAIL", env=("FAIL", "restart marker is profile 'team-b'"))
    assert details["marker"] == (
        "the restart marker was written by profile 'team-b' (bbbbbbbbbbbb), not by this profile "
        "'team' (111111111111): run this profile's setup script (colabenv render team), then "
        "restart"
    )
    assert code == 1


def test_the_marker_of_another_interpreter_does_not_pass(tmp_path: Path) -> None:
    other = make_venv(tmp_path / "other")
    case = Case(tmp_path).gpu_host().torch().marker([f"torch=={TORCH}"], python=other.python)
    code, report, details, _ = case.verify()
    expect(report, marker="FAIL")
    assert details["marker"].startswith(
        f"the restart marker was written for the interpreter {other.python}, not for this one "
        f"({case.venv.python})"
    )
    assert code == 1


OLDEST_PYTHON = oldest_python()


def _target_venv(tmp_path: Path, base: str) -> StandinVenv:
    """A venv colabenv is not installed in, holding stand-in torch."""
    target = make_venv(tmp_path / "target", base=base, with_colabenv=False)
    target.install(Standin("torch", TORCH))
    return target


@pytest.mark.parametrize(
    "base",
    [
        pytest.param(sys.executable, id="this-python"),
        pytest.param(
            OLDEST_PYTHON,
            id="python3.8",
            marks=pytest.mark.skipif(OLDEST_PYTHON is None, reason="no python3.8 on this machine"),
        ),
    ],
)
def test_verify_another_interpreter_without_colabenv(runner: Runner, tmp_path: Path, base: str) -> None:
    """``--interpreter``: the scan, the smoke test, the VRAM probe and the marker's interpreter
    are that Python's, which has neither colabenv nor anything but the stand-in installed."""
    target = _target_venv(tmp_path, base)
    state = tmp_path / "state"
    write_marker(state, requirements=[f"torch=={TORCH}"], frameworks={"torch": TORCH}, python=target.python)
    env = venv_env(COLABENV_STATE_DIR=str(state), **GPU_HOST)
    done = runner("verify", "--json", "--interpreter", target.python, base=env)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    expect(
        report,
        {
            **STATIC_PASS,
            "cuda:torch": "PASS",
            "components": "SKIP",
            "smoke:torch": ("PASS", "torch 2.6.0+cu124"),
            "determinism": "SKIP",
            "vram": "PASS",
            "env": "SKIP",
        },
        only=True,
    )
    details = details_of(report)
    assert details["components"] == "no NVIDIA component wheel installed"
    assert details["vram"].startswith("GPU0: 15.0 GiB free of 16.0 GiB, largest block 12.0 GiB; ")

    here = runner("verify", "--json", base=env)
    mine = json.loads(here.stdout)
    expect(mine, marker=("FAIL", f"written for the interpreter {target.python}"))
    assert details_of(mine)["versions"].startswith("torch: not installed")


def test_another_interpreters_env_is_its_own_never_colabenvs(runner: Runner, tmp_path: Path) -> None:
    """The ``[env]`` and the determinism variables set in the shell that runs colabenv are not
    the other interpreter's: without its ``.pth`` hook both checks fail; with it they pass."""
    from colabenv.script.state import ENV_HOOK_NAME

    target = _target_venv(tmp_path, sys.executable)
    state = tmp_path / "state"
    asked = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    seeded = {"COLABENV_SEED": "7", "PYTHONHASHSEED": "7"}
    write_marker(
        state,
        requirements=[f"torch=={TORCH}"],
        frameworks={"torch": TORCH},
        python=target.python,
        env=asked,
        reproducibility={"seed": 7, "deterministic": False},
    )
    shell = venv_env(COLABENV_STATE_DIR=str(state), **asked, **seeded, **GPU_HOST)
    done = runner("verify", "--json", "--interpreter", target.python, base=shell)
    assert done.returncode == 1, done.stdout + done.stderr
    expect(
        json.loads(done.stdout),
        {**STATIC_PASS, "smoke:torch": "PASS"},
        env=(
            "FAIL",
            f"XLA_PYTHON_CLIENT_PREALLOCATE is not set (expected 'false') (not set by {target.python} when it"
            " starts: the setup script's .pth hook sets them",
        ),
        determinism=("FAIL", "COLABENV_SEED is not set (expected 7); PYTHONHASHSEED is not set"),
    )

    hook = {**asked, **seeded}
    (target.site_packages / ENV_HOOK_NAME).write_text(f"import os; os.environ.update({hook!r})\n")
    done = runner("verify", "--json", "--interpreter", target.python, base=shell)
    assert done.returncode == 0, done.stdout + done.stderr
    expect(
        json.loads(done.stdout),
        env=("PASS", f"XLA_PYTHON_CLIENT_PREALLOCATE set as asked in a new {target.python}"),
        determinism=("PASS", "seed 7: COLABENV_SEED, PYTHONHASHSEED set"),
    )


@pytest.mark.skipif(OLDEST_PYTHON is None, reason="no python3.8 on this machine")
def test_detect_reads_another_interpreters_python_and_distributions(runner: Runner, tmp_path: Path) -> None:
    assert OLDEST_PYTHON is not None
    target = _target_venv(tmp_path, OLDEST_PYTHON)
    done = runner("detect", "--json", "--cpu", "--interpreter", target.python, base=venv_env())
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["target"]["python"] == "3.8"
    assert data["python_full"].startswith("3.8.")
    assert data["installed"] == {"torch": TORCH}


def test_the_python_entry_point_verifies_another_interpreter(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import colabenv

    target = _target_venv(tmp_path, sys.executable)
    write_marker(
        tmp_path / "state",
        requirements=[f"torch=={TORCH}"],
        frameworks={"torch": TORCH},
        python=target.python,
    )
    monkeypatch.setenv("COLABENV_STATE_DIR", str(tmp_path / "state"))
    for name, value in GPU_HOST.items():
        monkeypatch.setenv(name, value)
    report = colabenv.verify(interpreter=str(target.python), timeout=60)
    expect(report, {"marker": "PASS", "versions": "PASS", "smoke:torch": "PASS"})


@pytest.mark.parametrize(
    ("interpreter", "message"),
    [
        ("/no/such/python", "--interpreter /no/such/python: not found"),
        ("/bin/true", "--interpreter /bin/true: not a Python interpreter colabenv can read"),
    ],
)
def test_an_interpreter_that_is_not_one_exits_2(runner: Runner, interpreter: str, message: str) -> None:
    for command in ("verify", "detect"):
        done = runner(command, "--interpreter", interpreter, base=venv_env(), timeout=60)
        assert done.returncode == 2
        assert done.stdout == ""
        assert message in done.stderr
        assert "Traceback" not in done.stderr
