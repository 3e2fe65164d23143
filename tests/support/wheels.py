"""Build small, valid, deterministic wheels for tests and benchmarks.

``build_wheel`` writes one wheel (METADATA with Requires-Dist and extras, WHEEL, RECORD with
sha256 hashes, fixed zip timestamps: the same arguments give the same bytes).
``build_standins`` writes a realistic stand-in set: torch-family wheels with local version tags
and their real NVIDIA pins in per-variant folders of a "pytorch" index, and jax, tensorflow,
NVIDIA wheels and a few ordinary packages in a "default" index.
"""

from __future__ import annotations

import base64
import hashlib
import random
import re
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import Version

ZIP_DATE = (2020, 1, 1, 0, 0, 0)
LINUX_X86_64 = 'platform_system == "Linux" and platform_machine == "x86_64"'


def wheel_name_part(name: str) -> str:
    """The distribution part of a wheel file name (PEP 427 escaping of the normalized name)."""
    return canonicalize_name(name).replace("-", "_")


def import_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", canonicalize_name(name))


def wheel_filename(name: str, version: str, tag: str = "py3-none-any") -> str:
    return f"{wheel_name_part(name)}-{Version(version)}-{tag}.whl"


def _record_hash(data: bytes) -> str:
    return _record_digest(hashlib.sha256(data).digest())


def _record_digest(sha256: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(sha256).rstrip(b"=").decode("ascii")


PAYLOAD_CHUNK = 1 << 20
PAYLOAD_PERIOD = 16 << 20


def _payload_chunks(seed: str, size: int) -> Iterator[bytes]:
    """``size`` deterministic, incompressible bytes, in pieces: the first ``PAYLOAD_PERIOD``
    bytes drawn 1 MiB at a time from a generator seeded with ``seed``, then that run repeated,
    so a wheel of real size (hundreds of MB) streams to disk at disk speed."""
    rng = random.Random(seed)
    drawn: list[bytes] = []
    for start in range(0, min(size, PAYLOAD_PERIOD), PAYLOAD_CHUNK):
        drawn.append(rng.randbytes(min(PAYLOAD_CHUNK, size - start)))
        yield drawn[-1]
    if size <= PAYLOAD_PERIOD:
        return
    period = memoryview(b"".join(drawn))
    for start in range(PAYLOAD_PERIOD, size, PAYLOAD_PERIOD):
        yield bytes(period[: min(PAYLOAD_PERIOD, size - start)])


def _zip_info(path: str, compression: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(path, date_time=ZIP_DATE)
    info.compress_type = compression
    info.external_attr = 0o644 << 16
    return info


def _write_payload(archive: zipfile.ZipFile, path: str, seed: str, size: int) -> str:
    """Stream the payload into ``archive`` (stored) and return its RECORD line."""
    info = _zip_info(path, zipfile.ZIP_STORED)
    info.file_size = size
    digest = hashlib.sha256()
    with archive.open(info, "w") as sink:
        for piece in _payload_chunks(seed, size):
            digest.update(piece)
            sink.write(piece)
    return f"{path},{_record_digest(digest.digest())},{size}"


def _metadata(
    name: str,
    version: str,
    requires: Sequence[str],
    extras: Mapping[str, Sequence[str]],
    requires_python: str | None,
    summary: str | None = None,
) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines.append(f"Summary: {summary or f'stand-in for {name} built by the colabenv tests'}")
    if requires_python:
        lines.append(f"Requires-Python: {requires_python}")
    lines.extend(f"Requires-Dist: {req}" for req in requires)
    for extra, reqs in extras.items():
        lines.append(f"Provides-Extra: {extra}")
        for req in reqs:
            base, _, marker = req.partition(";")
            condition = f'extra == "{extra}"'
            if marker.strip():
                condition = f"({marker.strip()}) and {condition}"
            lines.append(f"Requires-Dist: {base.strip()} ; {condition}")
    return "\n".join(lines) + "\n\n"


def build_wheel(
    dest: Path,
    name: str,
    version: str,
    *,
    requires: Sequence[str] = (),
    extras: Mapping[str, Sequence[str]] | None = None,
    files: Mapping[str, str | bytes] | None = None,
    requires_python: str | None = None,
    tag: str = "py3-none-any",
    payload_bytes: int = 0,
    summary: str | None = None,
) -> Path:
    """Write ``<name>-<version>-<tag>.whl`` into ``dest`` and return its path (``summary``: its
    METADATA Summary, else one naming it a stand-in).

    ``files`` defaults to an importable ``<import_name>/__init__.py`` defining ``__version__``.
    ``payload_bytes`` adds that many incompressible bytes (stored, not deflated, streamed to
    disk) so a wheel can have a realistic size, up to a real torch wheel's.
    """
    dest.mkdir(parents=True, exist_ok=True)
    normalized_version = str(Version(version))
    module = import_name(name)
    if files is None:
        files = {f"{module}/__init__.py": f'__version__ = "{normalized_version}"\n'}
    dist_info = f"{wheel_name_part(name)}-{normalized_version}.dist-info"
    python_tag, _, rest = tag.partition("-")
    abi_tag, _, platform_tag = rest.partition("-")
    pure = platform_tag == "any"
    contents = [
        (path, content.encode("utf-8") if isinstance(content, str) else content)
        for path, content in sorted(files.items())
    ]
    metadata = _metadata(name, normalized_version, requires, extras or {}, requires_python, summary)
    wheel_text = (
        "Wheel-Version: 1.0\n"
        "Generator: colabenv-tests\n"
        f"Root-Is-Purelib: {'true' if pure else 'false'}\n"
        f"Tag: {python_tag}-{abi_tag}-{platform_tag}\n\n"
    )
    dist_files = [
        (f"{dist_info}/METADATA", metadata.encode("utf-8")),
        (f"{dist_info}/WHEEL", wheel_text.encode("utf-8")),
    ]

    target = dest / wheel_filename(name, normalized_version, tag)
    partial = target.with_name(target.name + ".part")
    record_lines = []
    with zipfile.ZipFile(partial, "w") as archive:
        for path, data in contents:
            archive.writestr(_zip_info(path, zipfile.ZIP_DEFLATED), data)
            record_lines.append(f"{path},{_record_hash(data)},{len(data)}")
        if payload_bytes > 0:
            record_lines.append(
                _write_payload(
                    archive, f"{module}/_payload.bin", f"{name}-{normalized_version}-{tag}", payload_bytes
                )
            )
        for path, data in dist_files:
            archive.writestr(_zip_info(path, zipfile.ZIP_DEFLATED), data)
            record_lines.append(f"{path},{_record_hash(data)},{len(data)}")
        record_lines.append(f"{dist_info}/RECORD,,")
        record = ("\n".join(record_lines) + "\n").encode("utf-8")
        archive.writestr(_zip_info(f"{dist_info}/RECORD", zipfile.ZIP_DEFLATED), record)
    partial.replace(target)
    return target


# ---------------------------------------------------------------------------------------------
# The stand-in set


@dataclass(frozen=True)
class WheelSpec:
    """One stand-in wheel: where it goes (index and sub-folder) and what its metadata says."""

    index: str
    folder: str
    name: str
    version: str
    requires: tuple[str, ...] = ()
    extras: tuple[tuple[str, tuple[str, ...]], ...] = ()
    requires_python: str | None = None
    tag: str = "py3-none-any"
    payload_bytes: int = 0
    files: tuple[tuple[str, str], ...] = ()

    def build(self, root: Path) -> Path:
        folder = root / self.index / self.folder if self.folder else root / self.index
        return build_wheel(
            folder,
            self.name,
            self.version,
            requires=self.requires,
            extras={extra: list(reqs) for extra, reqs in self.extras},
            requires_python=self.requires_python,
            tag=self.tag,
            payload_bytes=self.payload_bytes,
            files=dict(self.files) if self.files else None,
        )


@dataclass(frozen=True)
class Standins:
    """Where ``build_standins`` put things: ``default`` and ``pytorch`` index roots.

    ``pytorch`` holds one folder per variant (``cu124``, ``cu126``, ``cu128``, ``cpu``), the layout
    of the PyTorch index, so a local index serving it answers ``<url>/cu124/torch/``.
    """

    root: Path
    wheels: tuple[Path, ...] = field(default=())

    @property
    def default(self) -> Path:
        return self.root / "default"

    @property
    def pytorch(self) -> Path:
        return self.root / "pytorch"


# Fallbacks for when the catalog does not (yet) list a release: the NVIDIA pins of each
# variant (torch wheel METADATA; compat-facts.md, section 2) and the companions.
TORCH_PINS: dict[tuple[str, str], tuple[str, ...]] = {
    ("2.6.0", "cu124"): (
        "nvidia-cudnn-cu12==9.1.0.70",
        "nvidia-cuda-runtime-cu12==12.4.127",
        "nvidia-nccl-cu12==2.21.5",
    ),
    ("2.8.0", "cu126"): (
        "nvidia-cudnn-cu12==9.10.2.21",
        "nvidia-cuda-runtime-cu12==12.6.77",
        "nvidia-nccl-cu12==2.27.3",
    ),
    ("2.8.0", "cu128"): (
        "nvidia-cudnn-cu12==9.10.2.21",
        "nvidia-cuda-runtime-cu12==12.8.90",
        "nvidia-nccl-cu12==2.27.3",
    ),
    ("2.6.0", "cpu"): (),
    ("2.8.0", "cpu"): (),
}
TORCH_DEFAULT_VARIANT = {"2.6.0": "cu124", "2.8.0": "cu128"}
TORCH_COMPANIONS = {"2.6.0": ("0.21.0", "2.6.0"), "2.8.0": ("0.23.0", "2.8.0")}
TENSORFLOW_PINS: dict[str, tuple[str, ...]] = {
    "2.18.0": ("nvidia-cudnn-cu12==9.3.0.75", "nvidia-cuda-runtime-cu12==12.5.82"),
    "2.19.0": ("nvidia-cudnn-cu12==9.3.0.75", "nvidia-cuda-runtime-cu12==12.5.82"),
}
JAX_PLUGIN_PINS: dict[str, tuple[str, ...]] = {
    "0.5.2": ("nvidia-cudnn-cu12>=9.1,<10", "nvidia-cuda-runtime-cu12>=12.1"),
    "0.5.3": ("nvidia-cudnn-cu12>=9.1,<10", "nvidia-cuda-runtime-cu12>=12.1"),
}
JAXLIB_OF = {"0.5.2": "0.5.1", "0.5.3": "0.5.3"}

ORDINARY: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("numpy", "1.26.4", ()),
    ("numpy", "2.0.2", ()),
    ("filelock", "3.18.0", ()),
    ("typing-extensions", "4.14.1", ()),
    ("idna", "3.10", ()),
    ("urllib3", "2.5.0", ()),
    ("certifi", "2025.8.3", ()),
    ("charset-normalizer", "3.4.3", ()),
    (
        "requests",
        "2.32.4",
        ("charset-normalizer>=2,<4", "idna>=2.5,<4", "urllib3>=1.21.1,<3", "certifi>=2017.4.17"),
    ),
    ("pillow", "11.3.0", ()),
    ("six", "1.17.0", ()),
    ("python-dateutil", "2.9.0.post0", ("six>=1.5",)),
)
# NVIDIA wheels beyond those the pins need, so that ranges have more than one candidate. The
# two cuDNN releases stand either side of the Pascal/Volta cut (issue 13): 9.10.2.21 is the last
# with kernels for sm_60/sm_70, 9.28.0.42 newer (what an unbounded ``>=9.1,<10`` picks).
CUDNN_LAST_FOR_SM60 = "9.10.2.21"
CUDNN_NEWEST = "9.28.0.42"
NVIDIA_EXTRA: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("nvidia-cublas-cu12", "12.6.4.1", ()),
    ("nvidia-cudnn-cu12", CUDNN_LAST_FOR_SM60, ("nvidia-cublas-cu12",)),
    ("nvidia-cudnn-cu12", CUDNN_NEWEST, ("nvidia-cublas-cu12",)),
    ("nvidia-cuda-runtime-cu12", "12.8.90", ()),
    ("nvidia-nccl-cu12", "2.27.3", ()),
)


@dataclass(frozen=True)
class _CatalogRelease:
    variants: tuple[tuple[str, tuple[str, ...]], ...]
    companions: tuple[tuple[str, str], ...]
    default_variant: str | None


def _catalog_releases() -> dict[tuple[str, str], _CatalogRelease]:
    """(framework, version) -> variants with their pins, companions, as the catalog has them."""
    try:
        from colabenv.catalog.load import load_catalog

        catalog = load_catalog()
    except Exception:  # the catalog is someone else's moving part; the tables above stand in
        return {}
    found = {}
    for release in catalog.releases:
        found[(release.framework.value, str(release.version))] = _CatalogRelease(
            tuple((v.name, tuple(str(pin) for pin in v.pins)) for v in release.variants),
            tuple((str(c.name), str(c.version)) for c in release.companions),
            release.default_variant,
        )
    return found


def with_marker(pins: Iterable[str]) -> tuple[str, ...]:
    """``pins`` as a Linux x86-64 wheel's METADATA has them, each with that marker."""
    return tuple(f"{pin} ; {LINUX_X86_64}" for pin in pins)


def torch_specs(
    index: str,
    folder: str,
    version: str,
    local: str,
    pins: Sequence[str],
    vision: str | None,
    audio: str | None,
    *,
    requires_python: str | None = None,
    payload_bytes: int = 0,
) -> list[WheelSpec]:
    """torch ``version`` + ``local`` (``+cu128``, or "") requiring ``pins`` (markers included),
    and torchvision ``vision`` and torchaudio ``audio`` of the same build where not None."""
    specs = [
        WheelSpec(
            index,
            folder,
            "torch",
            version + local,
            ("filelock", "typing-extensions>=4.10.0", *pins),
            requires_python=requires_python,
            payload_bytes=payload_bytes,
        )
    ]
    if vision is not None:
        vision_requires = ("numpy", f"torch=={version}", "pillow>=5.3.0,!=8.3.*")
        specs.append(
            WheelSpec(
                index, folder, "torchvision", vision + local, vision_requires, requires_python=requires_python
            )
        )
    if audio is not None:
        specs.append(
            WheelSpec(
                index,
                folder,
                "torchaudio",
                audio + local,
                (f"torch=={version}",),
                requires_python=requires_python,
            )
        )
    return specs


def tensorflow_spec(
    version: str,
    extra: str,
    pins: Sequence[str],
    *,
    requires_python: str | None = None,
    payload_bytes: int = 0,
) -> WheelSpec:
    """tensorflow ``version`` on the default index, its NVIDIA wheels ``pins`` (markers
    included) in its extra ``extra`` (``and-cuda``)."""
    return WheelSpec(
        "default",
        "",
        "tensorflow",
        version,
        ("numpy>=1.26.0,<2.2.0", "requests>=2.21.0,<3", "six>=1.12.0"),
        ((extra, tuple(pins)),),
        requires_python=requires_python,
        payload_bytes=payload_bytes,
    )


def jax_specs(
    version: str,
    jaxlib: str,
    extra: str,
    pins: Sequence[str],
    *,
    requires_python: str | None = None,
    payload_bytes: int = 0,
) -> list[WheelSpec]:
    """jax ``version`` on the default index, with jaxlib ``jaxlib`` and the CUDA 12 plugin and
    PJRT wheels of that version: jax's extra ``extra`` (``cuda12``) asks for the plugin, whose
    extra ``with-cuda`` asks for the NVIDIA wheels ``pins`` (markers included);
    ``payload_bytes`` goes to jaxlib."""
    return [
        WheelSpec(
            "default",
            "",
            "jax",
            version,
            (f"jaxlib<={version},>={jaxlib}", "numpy>=1.25"),
            (
                (extra, (f"jaxlib=={jaxlib}", f"jax-cuda12-plugin[with-cuda]=={jaxlib}")),
                ("cpu", (f"jaxlib=={jaxlib}",)),
            ),
            requires_python=requires_python,
        ),
        WheelSpec(
            "default",
            "",
            "jaxlib",
            jaxlib,
            ("numpy>=1.25",),
            requires_python=requires_python,
            payload_bytes=payload_bytes,
        ),
        WheelSpec(
            "default",
            "",
            "jax-cuda12-plugin",
            jaxlib,
            (f"jax-cuda12-pjrt=={jaxlib}",),
            (("with-cuda", tuple(pins)),),
            requires_python=requires_python,
        ),
        WheelSpec("default", "", "jax-cuda12-pjrt", jaxlib),
    ]


def _torch_specs(catalog: dict[tuple[str, str], _CatalogRelease], big: int) -> list[WheelSpec]:
    specs = []
    for version in TORCH_DEFAULT_VARIANT:
        known = catalog.get(("torch", version))
        if known is not None:
            variants = dict(known.variants)
            companions = dict(known.companions)
            vision = companions.get("torchvision", TORCH_COMPANIONS[version][0])
            audio = companions.get("torchaudio", TORCH_COMPANIONS[version][1])
            default = known.default_variant or TORCH_DEFAULT_VARIANT[version]
        else:
            variants = {v: pins for (ver, v), pins in TORCH_PINS.items() if ver == version}
            vision, audio = TORCH_COMPANIONS[version]
            default = TORCH_DEFAULT_VARIANT[version]
        for variant, pins in variants.items():
            marked = with_marker(pins)
            specs += torch_specs(
                "pytorch",
                variant,
                version,
                f"+{variant}",
                marked,
                vision,
                audio,
                requires_python=">=3.9",
                payload_bytes=big,
            )
            if variant == default:
                specs += torch_specs(
                    "default",
                    "",
                    version,
                    "",
                    marked,
                    vision,
                    audio,
                    requires_python=">=3.9",
                    payload_bytes=big,
                )
    return specs


def _nvidia_specs(specs: Sequence[WheelSpec]) -> list[WheelSpec]:
    """A wheel for every NVIDIA requirement of ``specs``: each ``==`` pin's version, and for a
    range no pinned version satisfies, its lower bound."""
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    wanted: dict[str, list[SpecifierSet]] = {}
    for spec in specs:
        for text in (*spec.requires, *(r for _, reqs in spec.extras for r in reqs)):
            requirement = Requirement(text)
            canonical = canonicalize_name(requirement.name)
            if canonical.startswith("nvidia-"):
                wanted.setdefault(canonical, []).append(requirement.specifier)
    for extra_name, version, _ in NVIDIA_EXTRA:
        wanted.setdefault(extra_name, []).append(SpecifierSet(f"=={version}"))
    versions: dict[str, set[str]] = {}
    for name, specifiers in wanted.items():
        chosen = versions.setdefault(name, set())
        for specifier in specifiers:
            for item in specifier:
                if item.operator in ("==", "==="):
                    chosen.add(item.version)
        for specifier in specifiers:
            if any(specifier.contains(v, prereleases=True) for v in chosen):
                continue
            bounds = [i.version for i in specifier if i.operator in (">=", "~=")]
            chosen.add(bounds[0] if bounds else "1.0")
    requires_of = {name: requires for name, _, requires in NVIDIA_EXTRA}
    found = []
    for name in sorted(versions):
        for version in sorted(versions[name], key=Version):
            found.append(WheelSpec("default", "", name, version, requires_of.get(name, ())))
    return found


def standin_specs(*, payload_scale: int = 0) -> tuple[WheelSpec, ...]:
    """The stand-in set as data: torch 2.6.0 and 2.8.0 in every variant the catalog lists
    (local tags, real NVIDIA pins), tensorflow 2.18.0/2.19.0 with ``and-cuda``, jax 0.5.2/0.5.3
    with ``cuda12`` (plugin, pjrt, jaxlib), every NVIDIA wheel those pins name, and ordinary
    packages. ``payload_scale`` > 0 gives framework wheels that many KiB."""
    catalog = _catalog_releases()
    big = payload_scale * 1024
    specs = _torch_specs(catalog, big)
    for version, table_pins in TENSORFLOW_PINS.items():
        known = catalog.get(("tensorflow", version))
        pins = dict(known.variants).get("and-cuda", table_pins) if known else table_pins
        specs.append(
            tensorflow_spec(
                version, "and-cuda", with_marker(pins), requires_python=">=3.9", payload_bytes=big
            )
        )
    for version, table_pins in JAX_PLUGIN_PINS.items():
        known = catalog.get(("jax", version))
        pins = dict(known.variants).get("cuda12", table_pins) if known else table_pins
        jaxlib = dict(known.companions).get("jaxlib", JAXLIB_OF[version]) if known else JAXLIB_OF[version]
        specs += jax_specs(
            version, jaxlib, "cuda12", with_marker(pins), requires_python=">=3.10", payload_bytes=big
        )
    for name, version, requires in ORDINARY:
        specs.append(WheelSpec("default", "", name, version, requires))
    specs.extend(_nvidia_specs(specs))
    unique = {(s.index, s.folder, canonicalize_name(s.name), s.version): s for s in specs}
    return tuple(unique.values())


def build_standins(dest: Path, specs: Sequence[WheelSpec] | None = None) -> Standins:
    """Build ``specs`` (the default stand-in set when None) under ``dest``."""
    chosen = standin_specs() if specs is None else specs
    built = tuple(spec.build(dest) for spec in chosen)
    (dest / "default").mkdir(parents=True, exist_ok=True)
    (dest / "pytorch").mkdir(parents=True, exist_ok=True)
    return Standins(dest, built)
