"""Stand-in indexes for what ``catalog refresh jax`` reads beyond x86-64 CUDA: the plugin's and
PJRT's ``manylinux_2_27_aarch64`` wheels on the default index (as the package index has them for
jax-cudaNN-plugin and -pjrt), and AMD's ``jax-rocm7-plugin``/``-pjrt`` wheels on a flat
find-links page per ROCm release (``repo.radeon.com/rocm/manylinux/rocm-rel-X.Y/``, read through
``--find-links-mirror``), their shared objects' HIP offload bundles naming their gfx targets.
Built on :mod:`tests.support.refresh_standins` (jax 9.x, far beyond any real release; ROCm 7.9
and 7.10 likewise): ``build_jax_platform_indexes(root)`` writes ``root/default``, ``root/amd``
(a folder per page, under the page's host and path) and ``root/base``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tests.curation.test_archs import gpu_library
from tests.curation.test_offload_bundles import hip_library, offload_bundle
from tests.support.refresh_standins import BASE_JAX, JAX12, JAX_PLUGIN_PINS, build_jax, build_jax_patch
from tests.support.wheels import build_wheel

AMD_PAGES = "repo.radeon.com/rocm/manylinux"
"""Where AMD's per-release find-links pages are (host and path, under ``root/amd``)."""
ROCM_PAGE = f"https://{AMD_PAGES}/rocm-rel-7.9/"
"""The page the base catalog's ROCm build names."""
OTHER_ROCM_PAGE = f"https://{AMD_PAGES}/rocm-rel-7.10/"
"""A page of another ROCm release, with jax 9.0.0's plugin built for it."""
ARM12 = ["sm_80", "sm_90", "sm_100", "sm_120", "compute_120"]
"""The GPU code of the stand-in aarch64 cuda12 plugin and PJRT 9.1.0 (unlike the x86-64 list)."""
ROCM_910_GFX = ("gfx90a", "gfx942:sramecc+:xnack-", "gfx950", "gfx1201")
ROCM_900_PLUGIN_GFX = ("gfx90a", "gfx942")
ROCM_900_PJRT_GFX = ("gfx90a", "gfx942", "gfx1100")
BASE_GFX = ["gfx90a", "gfx942", "gfx1100"]
"""The base catalog's gfx list of 9.0.0 rocm7: the plugin's bundles do not name gfx1100."""
AARCH64_ONLY_PIN = "nvidia-nvshmem-cu12>=3.2.5"
X86_ONLY_PIN = "nvidia-cufile-cu12>=1.11"

BASE_PLATFORMS = f"""
[[release.variant]]
name = "cuda12"
cuda = "12.9"
extra = "cuda12"
archs = {JAX12!r}
pins = {list(JAX_PLUGIN_PINS)!r}
platforms = ["linux_aarch64"]
requires = ["jax-cuda12-plugin==9.0.0", "jax-cuda12-pjrt==9.0.0"]
unconfirmed = true
unconfirmed_reason = "the aarch64 plugin wheel of jax-cuda12-plugin 9.0.0 was not seen"
source = "hand-written: jax 9.0.0 cuda12 for linux_aarch64"

[[release.variant]]
name = "rocm7"
rocm = "7.9"
gfx = {BASE_GFX!r}
python = ">=3.12,<3.13"
requires = ["jax-rocm7-plugin==9.0.0", "jax-rocm7-pjrt==9.0.0"]
find_links = "{ROCM_PAGE}"
source = "hand-written: jax 9.0.0 rocm7"
""".replace("'", '"')
"""jax 9.0.0's aarch64 cuda12 build (unconfirmed, as the shipped file's are) and ROCm build, as
the base catalog has them (appended to BASE_JAX's 9.0.0)."""


def _aarch64_cuda12(dest: Path, version: str, archs: Sequence[str], pins: Sequence[str]) -> None:
    """jax-cuda12-plugin ``version`` (cp312, cp313) and jax-cuda12-pjrt for linux_aarch64, each
    with GPU code for ``archs``; the plugin's ``with-cuda`` pins are ``pins``."""
    for python in ("312", "313"):
        build_wheel(
            dest,
            "jax-cuda12-plugin",
            version,
            tag=f"cp{python}-cp{python}-manylinux_2_27_aarch64",
            requires_python=">=3.12",
            requires=(f"jax-cuda12-pjrt=={version}",),
            extras={"with-cuda": list(pins)},
            files={"jax_cuda12_plugin/__init__.py": "", "jax_cuda12_plugin/_linalg.so": gpu_library(archs)},
        )
    build_wheel(
        dest,
        "jax-cuda12-pjrt",
        version,
        tag="py3-none-manylinux_2_27_aarch64",
        files={"jax_plugins/xla_cuda12/xla_cuda_plugin.so": gpu_library(archs)},
    )


def build_aarch64(root: Path) -> None:
    """The default index's aarch64 plugin wheels: cuda12 9.0.0 (the x86-64 list: it confirms the
    base's unconfirmed build), cuda12 9.1.0 (its own list, an aarch64-only pin and an
    x86-64-only one), and jax-cuda13-pjrt 9.1.0 alone (no plugin: no cuda13 build for aarch64)."""
    default = root / "default"
    linux = 'sys_platform == "linux"'
    _aarch64_cuda12(default, "9.0.0", JAX12, [f"{p} ; {linux}" for p in JAX_PLUGIN_PINS])
    pins = [
        *(f"{p} ; {linux}" for p in JAX_PLUGIN_PINS),
        f'{AARCH64_ONLY_PIN} ; platform_machine == "aarch64"',
        f'{X86_ONLY_PIN} ; platform_machine == "x86_64"',
    ]
    _aarch64_cuda12(default, "9.1.0", ARM12, pins)
    build_wheel(
        default,
        "jax-cuda13-pjrt",
        "9.1.0",
        tag="py3-none-manylinux_2_27_aarch64",
        files={"jax_plugins/xla_cuda13/xla_cuda_plugin.so": gpu_library(ARM12)},
    )


def _rocm_plugin(
    page: Path,
    version: str,
    plugin_gfx: Sequence[str],
    pjrt_gfx: Sequence[str],
    pythons: Sequence[str],
    summary: str | None = None,
) -> None:
    """jax-rocm7-plugin ``version`` for each of ``pythons`` and jax-rocm7-pjrt (pure Python tag,
    as AMD's are), their shared objects' offload bundles naming ``plugin_gfx`` and ``pjrt_gfx``;
    ``summary``: the plugin's METADATA Summary."""
    for python in pythons:
        build_wheel(
            page,
            "jax-rocm7-plugin",
            version,
            tag=f"cp{python}-cp{python}-manylinux_2_28_x86_64",
            requires_python=">=3.11",
            requires=(f"jax-rocm7-pjrt=={version}",),
            summary=summary,
            files={
                "jax_rocm7_plugin/__init__.py": "",
                "jax_rocm7_plugin/_linalg.so": hip_library(offload_bundle(plugin_gfx)),
            },
        )
    build_wheel(
        page,
        "jax-rocm7-pjrt",
        version,
        tag="py3-none-manylinux_2_28_x86_64",
        files={"jax_plugins/xla_rocm7/xla_rocm_plugin.so": hip_library(offload_bundle(pjrt_gfx))},
    )


def build_rocm(root: Path) -> None:
    """AMD's stand-in pages: rocm-rel-7.9 with jax 9.0.0's plugin (cp312) and 9.1.0's (cp312,
    cp313), and a wheel file name with a part missing; rocm-rel-7.10 with 9.0.0's plugin."""
    page = root / "amd" / AMD_PAGES / "rocm-rel-7.9"
    _rocm_plugin(page, "9.0.0", ROCM_900_PLUGIN_GFX, ROCM_900_PJRT_GFX, ("312",))
    _rocm_plugin(page, "9.1.0", ROCM_910_GFX, ROCM_910_GFX, ("312", "313"))
    good = page / "jax_rocm7_plugin-9.1.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    (page / "jax_rocm7_plugin-9.1.0-cp312-manylinux_2_28_x86_64.whl").write_bytes(good.read_bytes())
    other = root / "amd" / AMD_PAGES / "rocm-rel-7.10"
    _rocm_plugin(other, "9.0.0", BASE_GFX, BASE_GFX, ("312",))


INDEX_ROCM_GFX = ("gfx908", "gfx90a", "gfx9-4-generic:sramecc+:xnack-", "gfx12-generic")
"""The bundles of the default index's jax-rocm7-plugin 9.1.0: named and generic targets, as the
package index's 0.9.2 and 0.10.0 plugins carry them."""
INDEX_ROCM_SUMMARY = "JAX Plugin for AMD GPUs (ROCm: Legacy ROCm 7.12.0)"
"""ROCm/rocm-jax ``plugin_setup.py``'s Summary, in the form the package index's 0.9.2 plugin has."""


def build_index_rocm(root: Path) -> None:
    """The ROCm plugin on the default index itself, as the package index has jax-rocm7-plugin
    from 0.9.2: 9.1.0's plugin (cp312, cp313) and PJRT; for 9.0.0 the PJRT alone (no plugin)."""
    default = root / "default"
    _rocm_plugin(default, "9.1.0", INDEX_ROCM_GFX, INDEX_ROCM_GFX, ("312", "313"), INDEX_ROCM_SUMMARY)
    build_wheel(
        default,
        "jax-rocm7-pjrt",
        "9.0.0",
        tag="py3-none-manylinux_2_28_x86_64",
        files={"jax_plugins/xla_rocm7/xla_rocm_plugin.so": hip_library(offload_bundle(BASE_GFX))},
    )


def build_jax_platform_indexes(root: Path) -> Path:
    """The stand-in indexes under ``root``; returns the catalog folder refresh starts from."""
    build_jax(root)
    build_jax_patch(root)
    build_aarch64(root)
    build_rocm(root)
    base = root / "base"
    base.mkdir(parents=True, exist_ok=True)
    (base / "jax.toml").write_text(BASE_JAX + BASE_PLATFORMS, encoding="utf-8")
    return base
