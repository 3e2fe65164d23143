"""Locks of jax for AMD GPUs (ROCm) and for NVIDIA on aarch64, made from this x86-64 host with
real uv and pip-tools against an index and a flat find-links page on 127.0.0.1 (issue 36).

The ROCm build (0.7.1 ``rocm7``) takes its plugin and PJRT from AMD's find-links page, here a
local page standing for it (the catalog's page is replaced in this process only): the page
reaches the resolver as ``--find-links`` and is recorded in the lock, so ``bundle`` and ``render
--lock`` read it. The aarch64 CUDA build (0.8.0 ``cuda13``) is marked unconfirmed in the
catalog until the plugin's aarch64 wheel is seen: ``lock`` confirms it against the index, as
``render`` does. The wheels are stand-ins built here with the real wheels' names."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from packaging.specifiers import SpecifierSet

from colabenv.app import resolution as app_resolution
from colabenv.cli.main import main
from colabenv.lock.file import read_lock
from colabenv.models import Catalog, Variant
from colabenv.wheelhouse.plan import MANIFEST_NAME
from tests.support.index import LocalIndex
from tests.support.isolation import clean_env
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.slow

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
ROCM_PAGE = "https://repo.radeon.com/rocm/manylinux/rocm-rel-7.1/"
GRACE = ["--platform", "linux_aarch64", "--driver", "580.65.06", "--compute-capability", "9.0"]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> None:
    """The index check on (the suite turns it off), the user's pip and uv settings gone."""
    for key in list(os.environ):
        if key not in (clean := clean_env()):
            monkeypatch.delenv(key)
    for key, value in clean.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("COLABENV_OFFLINE", raising=False)
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")


def _rocm_page_at(page: str, any_python: bool) -> Callable[..., Catalog]:
    """``load_catalog`` with jax's ROCm builds on ``page`` instead of AMD's (and, with
    ``any_python``, taking the running Python, for pip-tools, which resolves for it alone)."""
    shipped = app_resolution.load_catalog

    def load(*args: object, **kwargs: object) -> Catalog:
        catalog = shipped(*args, **kwargs)  # type: ignore[arg-type]
        releases = []
        for release in catalog.releases:
            variants = tuple(
                _on_page(v, page, any_python) if v.find_links == ROCM_PAGE else v for v in release.variants
            )
            moved = variants != release.variants
            python = SpecifierSet() if moved and any_python else release.python  # the release's too (3.10)
            releases.append(dataclasses.replace(release, variants=variants, python=python))
        return dataclasses.replace(catalog, releases=tuple(releases))

    return load


def _on_page(variant: Variant, page: str, any_python: bool) -> Variant:
    moved = dataclasses.replace(variant, find_links=page)
    return dataclasses.replace(moved, python=SpecifierSet()) if any_python else moved


def _rocm_wheels(root: Path, cp: str, any_python: bool = False) -> dict[str, Path]:
    """jax 0.7.1 and jaxlib on the index (jax's own rocm extra names the ROCm 6 plugin, as the
    real one does); the ROCm 7 plugin and PJRT on the find-links folder only. Each requires
    Python 3.11 or newer, as the real ones do, but with ``any_python`` (pip-tools, which
    resolves for the running Python alone, on 3.10 too)."""
    requires_python = None if any_python else ">=3.11"
    build_wheel(
        root / "default",
        "jax",
        "0.7.1",
        requires=["jaxlib<=0.7.1,>=0.7.1"],
        extras={"rocm": ["jax-rocm60-plugin<=0.7.1,>=0.7.1"]},
        requires_python=requires_python,
    )
    links = root / "radeon" / "rocm-rel-7.1"
    return {
        "jaxlib": build_wheel(
            root / "default",
            "jaxlib",
            "0.7.1",
            tag=f"{cp}-{cp}-manylinux_2_27_x86_64",
            requires_python=requires_python,
        ),
        "plugin": build_wheel(
            links,
            "jax-rocm7-plugin",
            "0.7.1",
            tag=f"{cp}-{cp}-manylinux_2_28_x86_64",
            requires=["jax-rocm7-pjrt==0.7.1"],
            requires_python=requires_python,
        ),
        "pjrt": build_wheel(links, "jax-rocm7-pjrt", "0.7.1", tag="py3-none-manylinux_2_28_x86_64"),
    }


def _profile(folder: Path, version: str, default: LocalIndex) -> Path:
    path = folder / "p.toml"
    path.write_text(
        f'name = "jax-hosts"\n[frameworks]\njax = "=={version}"\n[install]\nindex_url = "{default.url}"\n',
        encoding="utf-8",
    )
    return path


@pytest.mark.usefixtures("online")
@pytest.mark.parametrize(("resolver", "python"), [("uv", "3.12"), ("pip-tools", PY)])
def test_a_rocm_jax_lock_takes_the_plugin_from_the_find_links_page(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    resolver: str,
    python: str,
) -> None:
    cp = f"cp{python.replace('.', '')}"
    wheels = _rocm_wheels(tmp_path, cp, python == PY)
    amd = ["--rocm", "7.1", "--gfx", "gfx942", "--python", python]
    with LocalIndex(tmp_path / "default") as default, LocalIndex(tmp_path / "radeon") as radeon:
        page = radeon.links_url("rocm-rel-7.1")
        monkeypatch.setattr(app_resolution, "load_catalog", _rocm_page_at(page, python == PY))
        profile = _profile(tmp_path, "0.7.1", default)
        out = tmp_path / "amd.lock"
        assert main(["lock", str(profile), "-o", str(out), "--resolver", resolver, *amd]) == 0
        text = out.read_text(encoding="utf-8")
        assert (
            f"# target-python: {python}\n# target-platform: linux_x86_64\n# target-accelerator: rocm\n"
            "# target-tpu: none\n# target-rocm: 7.1\n# target-gfx: gfx942\n"
        ) in text
        assert "# framework: jax 0.7.1 variant=rocm7 index=default\n" in text
        assert f"--find-links {page}\n" in text
        lock = read_lock(out)
        assert lock.find_links == (page,)
        for name, key in {"jax-rocm7-plugin": "plugin", "jax-rocm7-pjrt": "pjrt", "jaxlib": "jaxlib"}.items():
            wheel = wheels[key]
            assert lock.package(name).hashes == (f"sha256:{_sha(wheel)}",), name  # type: ignore[union-attr]
        assert not any(p.name.startswith("nvidia-") for p in lock.packages)

        pylock = tmp_path / "pylock.toml"
        assert (
            main(
                ["lock", str(profile), "-o", str(pylock), "--resolver", resolver, "--format", "pylock", *amd]
            )
            == 0
        )
        plugin = read_lock(pylock).package("jax-rocm7-plugin")
        assert plugin is not None and plugin.files[0].url is not None
        assert urlsplit(plugin.files[0].url).netloc == urlsplit(page).netloc
        assert f'find-links = ["{page}"]' in pylock.read_text(encoding="utf-8")

        for source in (out, pylock):
            folder = tmp_path / f"wheelhouse{source.suffix}"
            radeon.reset_requests()
            assert main(["bundle", str(source), "-o", str(folder)]) == 0
            assert sorted(p.name for p in folder.glob("*.whl")) == sorted(
                [*(w.name for w in wheels.values()), "jax-0.7.1-py3-none-any.whl"]
            )
            assert any(r.startswith("/files/rocm-rel-7.1/jax_rocm7_plugin") for r in radeon.requests)
            manifest = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
            assert manifest["sections"][0]["platform"] == "linux_x86_64"

        script = tmp_path / "setup.sh"
        capsys.readouterr()
        assert main(["render", str(profile), "--lock", str(out), *amd, "-o", str(script)]) == 0
        body = script.read_text(encoding="utf-8")
        assert f"--find-links {page}\n" in body and "jax-rocm7-plugin==0.7.1 \\\n" in body
        pinned = [line for line in body.splitlines() if line.startswith(("nvidia-", "#   pin nvidia-"))]
        assert pinned == [], "a ROCm environment installs no nvidia-* wheel"


def _aarch64_wheels(root: Path, *, plugin: bool = True) -> dict[str, Path]:
    """jax 0.8.0's cuda13 closure for both machines (the plugin's aarch64 wheel only with
    ``plugin``), its with-cuda extra cut to two NVIDIA wheels."""
    index = root / "default"
    build_wheel(
        index,
        "jax",
        "0.8.0",
        requires=["jaxlib<=0.8.0,>=0.8.0"],
        extras={"cuda13": ["jaxlib<=0.8.0,>=0.8.0", "jax-cuda13-plugin[with-cuda]<=0.8.0,>=0.8.0"]},
        requires_python=">=3.11",
    )
    built = {}
    for machine in ("x86_64", "aarch64"):
        tag = f"manylinux_2_27_{machine}"
        built[f"jaxlib-{machine}"] = build_wheel(index, "jaxlib", "0.8.0", tag=f"cp312-cp312-{tag}")
        if plugin or machine == "x86_64":
            built[f"plugin-{machine}"] = build_wheel(
                index,
                "jax-cuda13-plugin",
                "0.8.0",
                tag=f"cp312-cp312-{tag}",
                requires=["jax-cuda13-pjrt==0.8.0"],
                extras={"with-cuda": ["nvidia-cublas>=13.0.0.19", "nvidia-cuda-runtime>=13.0.48"]},
            )
        built[f"pjrt-{machine}"] = build_wheel(index, "jax-cuda13-pjrt", "0.8.0", tag=f"py3-none-{tag}")
        built[f"cublas-{machine}"] = build_wheel(index, "nvidia-cublas", "13.0.0.19", tag=f"py3-none-{tag}")
        built[f"runtime-{machine}"] = build_wheel(
            index, "nvidia-cuda-runtime", "13.0.48", tag=f"py3-none-{tag}"
        )
    return built


@pytest.mark.usefixtures("online")
def test_an_aarch64_jax_lock_is_confirmed_by_the_index_and_bundles_the_aarch64_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wheels = _aarch64_wheels(tmp_path)
    with LocalIndex(tmp_path / "default") as default:
        profile = _profile(tmp_path, "0.8.0", default)
        out = tmp_path / "grace.lock"
        assert main(["lock", str(profile), "-o", str(out), *GRACE, "--python", "3.12"]) == 0
        text = out.read_text(encoding="utf-8")
        assert (
            "# target-driver: 580.65.06\n# target-requires-driver: 580.65.06\n# target-cuda: 13.0\n"
            "# target-compute-capabilities: 9.0\n# target-python: 3.12\n# target-platform: linux_aarch64\n"
            "# target-accelerator: nvidia\n"
        ) in text
        assert "# framework: jax 0.8.0 variant=cuda13 index=default\n" in text
        assert "unconfirmed" not in capsys.readouterr().err
        lock = read_lock(out)
        names = {"jaxlib": "jaxlib", "jax-cuda13-plugin": "plugin", "jax-cuda13-pjrt": "pjrt"}
        names |= {"nvidia-cublas": "cublas", "nvidia-cuda-runtime": "runtime"}
        for name, key in names.items():
            hashes = lock.package(name).hashes  # type: ignore[union-attr]
            assert hashes == (f"sha256:{_sha(wheels[f'{key}-aarch64'])}",), name

        folder = tmp_path / "wheelhouse"
        assert main(["bundle", str(out), "-o", str(folder)]) == 0
        fetched = sorted(p.name for p in folder.glob("*.whl"))
        assert fetched == sorted(
            ["jax-0.8.0-py3-none-any.whl", *(wheels[f"{key}-aarch64"].name for key in names.values())]
        )

        monkeypatch.setenv("COLABENV_OFFLINE", "1")
        unchecked = main(
            ["lock", str(profile), "-o", str(tmp_path / "offline.lock"), *GRACE, "--python", "3.12"]
        )
        # the catalog's aarch64 build was read from the package index's wheels: confirmed without
        # the index check too
        assert unchecked == 0, capsys.readouterr().err
        assert "unconfirmed" not in capsys.readouterr().err


@pytest.mark.usefixtures("online")
def test_an_aarch64_jax_build_whose_plugin_has_no_aarch64_wheel_is_passed_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _aarch64_wheels(tmp_path, plugin=False)
    with LocalIndex(tmp_path / "default") as default:
        profile = _profile(tmp_path, "0.8.0", default)
        out = tmp_path / "grace.lock"
        code = main(["lock", str(profile), "-o", str(out), *GRACE, "--python", "3.12"])
        err = capsys.readouterr().err
        assert code == 3 and not out.exists(), err
        assert "jax_cuda13_plugin-0.8.0-*.whl for cp312 on linux_aarch64" in err, err
