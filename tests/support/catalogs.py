"""Catalog files for tests, in the catalog's own layout (docs/catalog.md): builders for a framework
file (``torch.toml``: its ``[[release]]`` and ``[[release.variant]]`` entries), ``drivers.toml``
and ``components.toml``, the small catalog the loader and resolver tests start from, and
:func:`write_catalog` / :func:`write_overlay` for the folders the real loader reads.

A key left None is left out, so a case writes only what it is about; a value is written as TOML
whatever it holds (:mod:`tests.support.toml_text`), so a case can give one the loader must refuse.
The loader tests mutate the text of :data:`TORCH`, :data:`DRIVERS` and :data:`COMPONENTS` line by
line: change their layout and those tests say which line they no longer find.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from colabenv.catalog.load import COMPONENTS_FILE, DRIVERS_FILE, FRAMEWORK_FILES
from colabenv.models import Framework
from tests.support.toml_text import Value, toml_entry, toml_keys

EXAMPLE_INDEX = "https://example.invalid/"
PYTORCH_INDEX = "https://download.pytorch.org/whl/"

# ---------------------------------------------------------------------------------------------
# Framework files


def variant_entry(
    name: str,
    *,
    cuda: str | None = None,
    index_url: str | None = None,
    local_tag: str | None = None,
    extra: str | None = None,
    archs: str | Sequence[str] | None = None,
    pins: Sequence[str] | None = None,
    rocm: str | None = None,
    gfx: Sequence[str] | None = None,
    requires: Sequence[str] | None = None,
    unconfirmed: bool | str | None = None,
    unconfirmed_reason: str | None = None,
    source: str | None = "test",
) -> str:
    """A ``[[release.variant]]``; ``archs`` a list, or the name of an ``[archs]`` list; a ROCm
    build's ``rocm`` and ``gfx``; ``requires``, the distributions it installs beside the
    framework's own."""
    return toml_entry(
        "release.variant",
        [
            ("name", name),
            ("cuda", cuda),
            ("index_url", index_url),
            ("local_tag", local_tag),
            ("extra", extra),
            ("archs", archs),
            ("pins", pins),
            ("rocm", rocm),
            ("gfx", gfx),
            ("requires", requires),
            ("unconfirmed", unconfirmed),
            ("unconfirmed_reason", unconfirmed_reason),
            ("source", source),
        ],
    )


def torch_variant(
    name: str = "cu124",
    *,
    index: str = EXAMPLE_INDEX,
    archs: str | Sequence[str] = "modern",
    pins: Sequence[str] | None = None,
    source: str = "test",
    unconfirmed: bool | str | None = None,
    unconfirmed_reason: str | None = None,
) -> str:
    """A torch build as the PyTorch index names it: its index URL (``index`` + name) and local
    tag are its name, its CUDA is read from the name (``cu124``: 12.4); ``cpu`` has no CUDA and
    no archs."""
    cpu = name == "cpu"
    return variant_entry(
        name,
        cuda=None if cpu else f"{name[2:-1]}.{name[-1]}",
        index_url=index + name,
        local_tag=name,
        archs=None if cpu else archs,
        pins=pins,
        unconfirmed=unconfirmed,
        unconfirmed_reason=unconfirmed_reason,
        source=source,
    )


def release_entry(
    version: str,
    *variants: str,
    python: str | None = ">=3.10",
    default_variant: str | None = "cu124",
    companions: Mapping[str, Value] | None = None,
    source: str | None = "test",
) -> str:
    """A ``[[release]]`` followed by its variants (:func:`variant_entry`); ``companions``:
    ``{"torchvision": "0.1.0"}`` or ``{"torchaudio": {"version": "2.0.0", "follows_variant":
    False}}``."""
    head = toml_entry(
        "release",
        [
            ("version", version),
            ("python", python),
            ("default_variant", default_variant),
            ("companions", companions),
            ("source", source),
        ],
    )
    return head + "".join(variants)


def framework_file(
    framework: str,
    *releases: str,
    archs: Mapping[str, Sequence[str]] | None = None,
    companions_follow_variant: bool | None = True,
) -> str:
    """A framework's whole file: ``schema = 1``, its header, the named arch lists, the releases
    (:func:`release_entry`)."""
    text = toml_keys(
        [("schema", 1), ("framework", framework), ("companions_follow_variant", companions_follow_variant)]
    )
    if archs:
        text += "\n[archs]\n" + toml_keys(list(archs.items()))
    return text + "".join(releases)


def empty_framework_file(framework: str) -> str:
    """A framework file with no release in it."""
    return framework_file(framework, companions_follow_variant=None)


TORCH = framework_file(
    "torch",
    release_entry(
        "1.0.0",
        torch_variant("cu124", pins=["nvidia-cudnn-cu12==9.1.0.70"]),
        variant_entry("cpu"),
        companions={"torchvision": "0.1.0"},
    ),
    archs={"modern": ["sm_80", "compute_90"]},
)
"""The smallest torch file the loader takes: release 1.0.0 with a cu124 build (arch list
``modern``, one pin) and a cpu build, torchvision beside it."""

# ---------------------------------------------------------------------------------------------
# drivers.toml


def major_line_entry(cuda_major: int | str, floor_driver: str, *, source: str | None = "test") -> str:
    """A ``[[major_line]]``: the oldest driver a CUDA major line runs on."""
    return toml_entry(
        "major_line", [("cuda_major", cuda_major), ("floor_driver", floor_driver), ("source", source)]
    )


def toolkit_entry(version: str, label: str, driver: str, *, source: str | None = "test") -> str:
    """A ``[[toolkit]]``: a CUDA toolkit release and the driver it ships with."""
    return toml_entry(
        "toolkit", [("version", version), ("label", label), ("driver", driver), ("source", source)]
    )


def drivers_file(*entries: str) -> str:
    """The whole ``drivers.toml``: ``schema = 1`` and the entries."""
    return "schema = 1\n" + "".join(entries)


DRIVERS = drivers_file(major_line_entry(12, "525.60.13"), toolkit_entry("12.4.0", "12.4 GA", "550.54.14"))
"""CUDA 12 from driver 525.60.13, and the 12.4.0 toolkit's driver: enough for :data:`TORCH`."""

# ---------------------------------------------------------------------------------------------
# components.toml


def component_range(
    versions: str,
    archs: Sequence[str],
    checked: Sequence[str],
    *,
    source: str | None = "test",
    aarch64: Sequence[str] | None = None,
) -> str:
    """A ``[[component.range]]``: the GPU code of the releases in ``versions`` (``aarch64``: the
    list their aarch64 wheels carry, where it is another)."""
    return toml_entry(
        "component.range",
        [
            ("versions", versions),
            ("archs", archs),
            ("archs_aarch64", aarch64),
            ("checked", checked),
            ("source", source),
        ],
    )


def component_entry(name: str, cuda_major: int, *ranges: str) -> str:
    """A ``[[component]]`` followed by its ranges (:func:`component_range`)."""
    return toml_entry("component", [("name", name), ("cuda_major", cuda_major)]) + "".join(ranges)


def toolkit_meta_entry(version: str, extras: Mapping[str, Sequence[str]], *, source: str = "test") -> str:
    """A ``[[toolkit_meta]]``: what each extra of the ``cuda-toolkit`` release pins."""
    head = toml_entry("toolkit_meta", [("version", version), ("source", source)])
    return head + "\n[toolkit_meta.extras]\n" + toml_keys(list(extras.items()))


def components_file(*entries: str) -> str:
    """The whole ``components.toml``: ``schema = 1`` and the entries."""
    return "schema = 1\n" + "".join(entries)


COMPONENTS = components_file(
    component_entry(
        "nvidia-cudnn-cu12",
        12,
        component_range(
            ">=8.9,<9.0",
            ["sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "compute_90"],
            ["8.9.2.26", "8.9.7.29"],
        ),
        component_range(
            ">=9.0,<9.11",
            ["sm_50", "sm_60", "sm_61", "sm_70", "sm_80", "sm_90", "sm_100", "sm_120", "compute_120"],
            ["9.0.0.312", "9.10.2.21"],
        ),
        component_range(
            ">=9.11",
            ["sm_75", "sm_80", "sm_90", "sm_100", "sm_120", "compute_120"],
            ["9.11.0.98", "9.28.0.42"],
        ),
    ),
    component_entry(
        "nvidia-cusparselt-cu12",
        12,
        component_range(">=0.6", ["sm_80", "sm_86", "sm_90", "compute_90"], ["0.6.3", "0.8.1"]),
    ),
    component_entry(
        "nvidia-cublas-cu12",
        12,
        component_range("<12.8", ["sm_50", "sm_60", "sm_70", "sm_80", "sm_90"], ["12.1.3.1", "12.6.4.1"]),
        component_range(
            ">=12.8", ["sm_50", "sm_60", "sm_70", "sm_80", "sm_90", "sm_100", "sm_120"], ["12.8.4.1"]
        ),
    ),
    toolkit_meta_entry(
        "12.6.3",
        {
            "cublas": ["nvidia-cublas-cu12==12.6.4.1.*"],
            "cudart": ["nvidia-cuda-runtime-cu12==12.6.77.*"],
            "cusolver": ["nvidia-cusolver-cu12==11.7.1.2.*", "nvidia-cublas-cu12==12.6.4.1.*"],
        },
    ),
)
"""cuDNN 12 in three ranges (9.11 drops everything below sm_75), cuSPARSELt (Ampere and newer),
cuBLAS in two ranges, and the extras of cuda-toolkit 12.6.3."""

# ---------------------------------------------------------------------------------------------
# Folders the loader reads


def write_catalog(
    root: Path, *, torch: str = TORCH, drivers: str = DRIVERS, components: str | None = None
) -> Path:
    """A whole catalog folder: ``torch`` as the torch file, the other frameworks empty,
    ``drivers`` and, when given, ``components``; returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / DRIVERS_FILE).write_text(drivers, encoding="utf-8")
    for framework, filename in FRAMEWORK_FILES.items():
        text = torch if framework is Framework.TORCH else empty_framework_file(framework.value)
        (root / filename).write_text(text, encoding="utf-8")
    if components is not None:
        (root / COMPONENTS_FILE).write_text(components, encoding="utf-8")
    return root


def write_overlay(folder: Path, *releases: str, framework: str = "torch") -> Path:
    """A catalog overlay folder holding one framework file of ``releases``; returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / FRAMEWORK_FILES[Framework(framework)]
    path.write_text(framework_file(framework, *releases), encoding="utf-8")
    return folder
