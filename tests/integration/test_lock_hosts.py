"""Locks for AMD GPUs (ROCm) and for Linux on aarch64, made from this x86-64 host with real uv
(and pip-tools where it can) against indexes on 127.0.0.1 (issue 36): torch's ROCm build from
a ``rocm6.4`` sub-index, its header recording ROCm and gfx and read back equal, ``lock --check``
and ``render --lock`` naming a host whose gfx differs; an aarch64 CPU lock pinning the aarch64
wheels, its framework files checked against the aarch64 tags, and ``bundle`` fetching the
aarch64 files. The wheels are stand-ins built here with the real wheels' names."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from colabenv.lock.content import Lock, LockedFile, LockTarget
from colabenv.lock.file import read_lock, read_lock_file, render_lock
from colabenv.models import RocmTarget, Target
from colabenv.wheelhouse.plan import MANIFEST_NAME
from tests.support.index import LocalIndex
from tests.support.locking import colabenv
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.slow

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
CP = f"cp{sys.version_info.major}{sys.version_info.minor}"
AMD = ["--rocm", "6.4", "--gfx", "gfx942", "--python", PY, "--allow-unconfirmed"]
ANOTHER_GFX = [("gfx1100" if flag == "gfx942" else flag) for flag in AMD]
"""The same host with a Radeon RX 7900 (gfx1100) in place of the MI300X."""
GRACE = ["--platform", "linux_aarch64", "--cpu", "--python", PY]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _profile(folder: Path, body: str, default: LocalIndex, pytorch: LocalIndex) -> Path:
    path = folder / "p.toml"
    path.write_text(
        f'name = "hosts"\n{body}\n[install]\nindex_url = "{default.url}"\n'
        f'pytorch_index_url = "{pytorch.base_url}"\n',
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("resolver", ["uv", "pip-tools"])
def test_a_rocm_torch_lock_from_an_x86_host(tmp_path: Path, resolver: str) -> None:
    rocm = build_wheel(
        tmp_path / "pytorch" / "rocm6.4", "torch", "2.9.1+rocm6.4", tag=f"{CP}-{CP}-manylinux_2_28_x86_64"
    )
    (tmp_path / "default").mkdir()
    with LocalIndex(tmp_path / "default") as default, LocalIndex(tmp_path / "pytorch") as pytorch:
        profile = _profile(tmp_path, '[frameworks]\ntorch = "==2.9.1"', default, pytorch)
        out = tmp_path / "amd.lock"
        made = colabenv("lock", profile, "-o", out, "--resolver", resolver, *AMD)
        assert made.returncode == 0, made.stderr
        text = out.read_text()
        assert (
            "# target-accelerator: rocm\n# target-tpu: none\n# target-rocm: 6.4\n# target-gfx: gfx942\n"
            in text
        )
        assert f"# framework: torch 2.9.1 variant=rocm6.4 index={pytorch.base_url}/rocm6.4\n" in text
        lock = read_lock(out)
        wanted = LockTarget.from_target(Target(RocmTarget(Version("6.4"), ("gfx942",)), Version(PY)), None)
        assert lock.header.target == wanted
        assert lock.version_of("torch") == "2.9.1+rocm6.4"
        assert lock.package("torch").hashes == (f"sha256:{_sha(rocm)}",)  # type: ignore[union-attr]
        assert not any(p.name.startswith("nvidia-") for p in lock.packages)

        fresh = colabenv("lock", profile, "-o", out, "--check", *AMD)
        assert fresh.returncode == 0, fresh.stdout + fresh.stderr
        other = colabenv("lock", profile, "-o", out, "--check", "--gfx", "gfx1100", "--python", PY)
        assert other.returncode == 1
        assert "stale: target: gfx gfx942 in the lock, gfx1100 now" in other.stdout

        script = colabenv("render", profile, "--lock", out, *AMD)
        assert script.returncode == 0, script.stderr
        assert "torch==2.9.1+rocm6.4" in script.stdout
        refused = colabenv("render", profile, "--lock", out, *ANOTHER_GFX)
        assert refused.returncode == 2 and refused.stdout == ""
        assert "does not fit this script: target: gfx gfx942 in the lock, gfx1100 now" in refused.stderr


def _aarch64_wheels(root: Path) -> dict[str, Path]:
    """torch 2.9.1+cpu and fastops 1.0 for both machines; torch 2.9.0+cpu for x86-64 only."""
    built = {}
    for machine in ("x86_64", "aarch64"):
        tag = f"{CP}-{CP}-manylinux_2_28_{machine}"
        built[f"torch-{machine}"] = build_wheel(root / "pytorch" / "cpu", "torch", "2.9.1+cpu", tag=tag)
        built[f"fastops-{machine}"] = build_wheel(root / "default", "fastops", "1.0", tag=tag)
    built["torch-2.9.0"] = build_wheel(
        root / "pytorch" / "cpu", "torch", "2.9.0+cpu", tag=f"{CP}-{CP}-manylinux_2_28_x86_64"
    )
    return built


def test_an_aarch64_cpu_lock_pins_the_aarch64_wheels_and_bundle_fetches_them(tmp_path: Path) -> None:
    wheels = _aarch64_wheels(tmp_path)
    with LocalIndex(tmp_path / "default") as default, LocalIndex(tmp_path / "pytorch") as pytorch:
        body = '[frameworks]\ntorch = "==2.9.1"\n[packages]\nrequirements = ["fastops"]'
        profile = _profile(tmp_path, body, default, pytorch)
        out = tmp_path / "grace.lock"
        made = colabenv("lock", profile, "-o", out, *GRACE)
        assert made.returncode == 0, made.stderr
        text = out.read_text()
        assert "# target-platform: linux_aarch64\n# target-accelerator: cpu\n# target-tpu: none\n" in text
        lock = read_lock(out)
        assert lock.header.target.platform == "linux_aarch64"
        for name in ("torch", "fastops"):
            hashes = lock.package(name).hashes  # type: ignore[union-attr]
            assert hashes == (f"sha256:{_sha(wheels[f'{name}-aarch64'])}",), name
        assert (lock.version_of("torch"), lock.version_of("fastops")) == ("2.9.1+cpu", "1.0")

        # a lock recording both machines' files (as a hand-made or another tool's may): bundle
        # takes the target's
        made = colabenv("lock", profile, "-o", tmp_path / "pylock.toml", "--format", "pylock", *GRACE)
        assert made.returncode == 0, made.stderr
        both = _with_x86_files(read_lock(tmp_path / "pylock.toml"), wheels, default, pytorch)
        (tmp_path / "pylock.toml").write_text(render_lock(both, pylock=True), encoding="utf-8")
        for source in (out, tmp_path / "pylock.toml"):
            folder = tmp_path / f"wheelhouse-{source.suffix}"
            done = colabenv("bundle", source, "-o", folder)
            assert done.returncode == 0, done.stderr
            manifest = json.loads((folder / MANIFEST_NAME).read_text())
            assert manifest["sections"][0]["platform"] == "linux_aarch64"
            assert sorted(p.name for p in folder.glob("*.whl")) == sorted(
                (wheels["fastops-aarch64"].name, wheels["torch-aarch64"].name)
            )

        check = colabenv(
            "lock", profile, "-o", out, "--check", "--cpu", "--python", PY, "--platform", "linux_x86_64"
        )
        assert check.returncode == 1
        assert "stale: target: platform linux_aarch64 in the lock, linux_x86_64 now" in check.stdout

        pip_tools = colabenv("lock", profile, "-o", tmp_path / "pt.lock", "--resolver", "pip-tools", *GRACE)
        assert pip_tools.returncode == 2 and not (tmp_path / "pt.lock").exists()
        assert "on linux_aarch64" in pip_tools.stderr, pip_tools.stderr


def _with_x86_files(lock: Lock, wheels: dict[str, Path], default: LocalIndex, pytorch: LocalIndex) -> Lock:
    """``lock`` with each package's x86-64 wheel recorded first, beside its aarch64 one."""
    packages = []
    for package in lock.packages:
        wheel = wheels[f"{package.name}-x86_64"]
        url = (
            f"{pytorch.base_url}/files/cpu/{wheel.name}"
            if package.name == "torch"
            else f"{default.base_url}/files/{wheel.name}"
        )
        x86 = LockedFile(_sha(wheel), wheel.name, url)
        packages.append(dataclasses.replace(package, files=(x86, *package.files)))
    return dataclasses.replace(lock, packages=tuple(packages))


def test_the_framework_files_are_checked_against_the_aarch64_tags(tmp_path: Path) -> None:
    """torch 2.9.0+cpu has an x86-64 wheel only: an aarch64 lock is refused before the resolver
    runs, naming the index, the wheel wanted and the file it has."""
    wheels = _aarch64_wheels(tmp_path)
    with LocalIndex(tmp_path / "default") as default, LocalIndex(tmp_path / "pytorch") as pytorch:
        profile = _profile(tmp_path, '[frameworks]\ntorch = "==2.9.0"', default, pytorch)
        out = tmp_path / "old.lock"
        refused = colabenv("lock", profile, "-o", out, *GRACE)
        assert refused.returncode == 4 and not out.exists(), refused.stderr
        assert (
            "(for Python " + PY + " on linux_aarch64); it has " + wheels["torch-2.9.0"].name in refused.stderr
        )


def test_named_amd_and_aarch64_targets_lock_one_section_each(tmp_path: Path) -> None:
    wheels = _aarch64_wheels(tmp_path)
    build_wheel(
        tmp_path / "pytorch" / "rocm6.4", "torch", "2.9.1+rocm6.4", tag=f"{CP}-{CP}-manylinux_2_28_x86_64"
    )
    with LocalIndex(tmp_path / "default") as default, LocalIndex(tmp_path / "pytorch") as pytorch:
        body = (
            '[frameworks]\ntorch = "==2.9.1"\n[packages]\nrequirements = ["fastops"]\n'
            "[catalog]\nallow_unconfirmed = true\n[targets]\n"
            f'amd = {{ rocm = "6.4", gfx = ["gfx942"], python = "{PY}" }}\n'
            f'grace = {{ platform = "linux_aarch64", cpu = true, python = "{PY}" }}'
        )
        profile = _profile(tmp_path, body, default, pytorch)
        out = tmp_path / "team.lock"
        made = colabenv("lock", profile, "--all-targets", "-o", out)
        assert made.returncode == 0, made.stderr
        lock_file = read_lock_file(out)
        amd, grace = lock_file.section("amd"), lock_file.section("grace")
        assert amd is not None and grace is not None
        assert (amd.header.target.rocm, amd.header.target.gfx) == ("6.4", ("gfx942",))
        assert (amd.version_of("torch"), grace.version_of("torch")) == ("2.9.1+rocm6.4", "2.9.1+cpu")
        assert grace.header.target.platform == "linux_aarch64" and grace.header.target.rocm is None
        assert grace.package("fastops").hashes == (f"sha256:{_sha(wheels['fastops-aarch64'])}",)  # type: ignore[union-attr]
        assert amd.package("fastops").hashes == (f"sha256:{_sha(wheels['fastops-x86_64'])}",)  # type: ignore[union-attr]

        fresh = colabenv("lock", profile, "-o", out, "--check")
        assert fresh.returncode == 0, fresh.stdout + fresh.stderr
        fits = colabenv("render", profile, "--lock", out, *AMD)
        assert fits.returncode == 0, fits.stderr
        assert "torch==2.9.1+rocm6.4" in fits.stdout
        refused = colabenv("render", profile, "--lock", out, *ANOTHER_GFX)
        assert refused.returncode == 2 and refused.stdout == ""
        assert "no section fits this host (amd: target: gfx gfx942 in the lock, gfx1100 now" in refused.stderr


def test_a_rocm_lock_pins_the_cuda_packages_rocm_builds_and_no_nvidia_wheel(tmp_path: Path) -> None:
    """xformers' ``rocm6.4`` wheel from the PyTorch index's ``rocm6.4`` folder beside torch's, and
    CuPy's ``cupy-rocm-7-0`` from the default index on a ROCm 7 host: the lock pins them, records
    them in its header, and the script installs them."""
    tag = f"{CP}-{CP}-manylinux_2_28_x86_64"
    build_wheel(tmp_path / "pytorch" / "rocm6.4", "torch", "2.9.1+rocm6.4", tag=tag)
    build_wheel(
        tmp_path / "pytorch" / "rocm6.4",
        "xformers",
        "0.0.33.post2+rocm6.4",
        tag=tag,
        requires=("torch==2.9.1",),
    )
    cupy = build_wheel(tmp_path / "default", "cupy-rocm-7-0", "14.2.0", tag=tag)
    with LocalIndex(tmp_path / "default") as default, LocalIndex(tmp_path / "pytorch") as pytorch:
        profile = _profile(tmp_path, '[frameworks]\ntorch = "==2.9.1"\nxformers = "*"', default, pytorch)
        out = tmp_path / "amd.lock"
        made = colabenv("lock", profile, "-o", out, *AMD)
        assert made.returncode == 0, made.stderr
        text = out.read_text()
        header = "# cuda-package: xformers xformers 0.0.33.post2 variant=rocm6.4"
        assert f"{header} index={pytorch.base_url}/rocm6.4\n" in text
        lock = read_lock(out)
        assert lock.version_of("xformers") == "0.0.33.post2+rocm6.4"
        assert not any(p.name.startswith(("nvidia-", "cuda-")) for p in lock.packages)
        script = colabenv("render", profile, "--lock", out, *AMD)
        assert script.returncode == 0, script.stderr
        assert "xformers==0.0.33.post2+rocm6.4" in script.stdout

        profile = _profile(tmp_path, '[frameworks]\ncupy = "*"', default, pytorch)
        rocm7 = ["--rocm", "7.2", "--gfx", "gfx942", "--python", PY]
        made = colabenv("lock", profile, "-o", out, *rocm7)
        assert made.returncode == 0, made.stderr
        lock = read_lock(out)
        assert lock.version_of("cupy-rocm-7-0") == "14.2.0"
        assert lock.package("cupy-rocm-7-0").hashes == (f"sha256:{_sha(cupy)}",)  # type: ignore[union-attr]
        assert "# target-rocm: 7.2\n" in out.read_text()
