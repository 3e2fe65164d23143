"""Stand-in indexes for what ``catalog refresh jax`` reads of jax's free-threaded wheels and of
ROCm builds the index no longer has, on top of :mod:`tests.support.refresh_jax_platform_standins`
(jax 9.x, far beyond any real release).

Free-threaded files, as the package index has them for jaxlib and the CUDA plugins
(``jaxlib-0.7.1-cp313-cp313t-manylinux_2_27_x86_64.whl``; only the file names are read):

- jaxlib 9.0.0: cp313t (x86-64), and jax-cuda12-plugin 9.0.0 cp313t (x86-64);
- jaxlib 9.1.0: cp313t and cp314t (x86-64), cp314t alone among its aarch64 wheels (as jaxlib
  0.5.x had cp313t for x86-64 alone);
- jax-cuda12-plugin 9.1.0: cp313t (x86-64), cp314t (aarch64); jax-cuda13-plugin 9.1.0: cp313t
  and cp314t; AMD's jax-rocm7-plugin 9.1.0 on the rocm-rel-7.9 page: cp313t.

``FT_BASE``: the platform stand-ins' base with free_threaded facts on 9.0.0's builds, for the
comparison. ``GONE_BASE``: jax 9.0.0 with a rocm7 build and a rocm6 build read from the index
itself (no ``find_links``): the index has neither plugin's 9.0.0 wheel for rocm7 (its PJRT alone,
:func:`tests.support.refresh_jax_platform_standins.build_index_rocm`), and rocm6's plugin
without the PJRT it pins.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.catalogs import variant_entry
from tests.support.refresh_jax_platform_standins import (
    AMD_PAGES,
    BASE_PLATFORMS,
    build_index_rocm,
    build_jax_platform_indexes,
)
from tests.support.refresh_standins import BASE_JAX
from tests.support.wheels import build_wheel

TESTED_ONLY = "upstream's CI tests 3.13t (stand-in)"

FT_BASE = BASE_JAX.replace(
    'source = "hand-written: jax 9.0.0 cuda12"',
    f'free_threaded = "==3.13.*"\nfree_threaded_unconfirmed = "{TESTED_ONLY}"\n'
    'source = "hand-written: jax 9.0.0 cuda12"',
).replace(
    'source = "hand-written: jax 9.0.0 cpu"',
    'free_threaded = ">=3.14"\nsource = "hand-written: jax 9.0.0 cpu"',
) + BASE_PLATFORMS.replace(
    'source = "hand-written: jax 9.0.0 cuda12 for linux_aarch64"',
    'free_threaded = ">=3.13,<3.14"\nsource = "hand-written: jax 9.0.0 cuda12 for linux_aarch64"',
)
"""9.0.0 as the base has it: cpu free-threaded for 3.14t (its files serve 3.13t), cuda12 for
3.13t from upstream's tests alone (its files serve it), cuda12 for linux_aarch64 for 3.13t
confirmed (no aarch64 cpXYt file)."""

GONE_BASE = BASE_JAX + "".join(
    variant_entry(
        f"rocm{major}",
        rocm=rocm,
        gfx=["gfx90a", "gfx942"],
        requires=[f"jax-rocm{major}-plugin==9.0.0", f"jax-rocm{major}-pjrt==9.0.0"],
        source=f"hand-written: jax 9.0.0 rocm{major}, read from the index",
    )
    for major, rocm in (("7", "7.12"), ("6", "6.4"))
)


def _free_threaded(dest: Path, project: str, version: str, pythons: tuple[str, ...], platform: str) -> None:
    for python in pythons:
        build_wheel(
            dest, project, version, tag=f"cp{python}-cp{python}t-{platform}", requires_python=">=3.12"
        )


def build_jax_ft_indexes(root: Path) -> Path:
    """The platform stand-ins (the ROCm plugin on the default index too) with the free-threaded
    files above; returns the base folder (``FT_BASE``); ``root/gone`` holds ``GONE_BASE``."""
    build_jax_platform_indexes(root)
    build_index_rocm(root)
    default = root / "default"
    x86, arm = "manylinux_2_28_x86_64", "manylinux_2_27_aarch64"
    _free_threaded(default, "jaxlib", "9.0.0", ("313",), x86)
    _free_threaded(default, "jax-cuda12-plugin", "9.0.0", ("313",), x86)
    _free_threaded(default, "jaxlib", "9.1.0", ("313", "314"), x86)
    build_wheel(default, "jaxlib", "9.1.0", tag=f"cp312-cp312-{arm}", requires_python=">=3.12")
    _free_threaded(default, "jaxlib", "9.1.0", ("314",), arm)
    _free_threaded(default, "jax-cuda12-plugin", "9.1.0", ("313",), x86)
    _free_threaded(default, "jax-cuda12-plugin", "9.1.0", ("314",), arm)
    _free_threaded(default, "jax-cuda13-plugin", "9.1.0", ("313", "314"), x86)
    _free_threaded(root / "amd" / AMD_PAGES / "rocm-rel-7.9", "jax-rocm7-plugin", "9.1.0", ("313",), x86)
    build_wheel(
        default,
        "jax-rocm6-plugin",
        "9.0.0",
        tag=f"cp312-cp312-{x86}",
        requires_python=">=3.12",
        requires=("jax-rocm6-pjrt==9.0.0",),
    )
    base = root / "base"
    (base / "jax.toml").write_text(FT_BASE, encoding="utf-8")
    gone = root / "gone"
    gone.mkdir()
    (gone / "jax.toml").write_text(GONE_BASE, encoding="utf-8")
    return base
