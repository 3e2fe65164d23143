"""Support for the end-to-end journeys and fault tests: a Colab image mimicked in a venv.

``journey_specs`` is the stand-in set of ``tests.support.wheels`` widened with what the journeys
need: the framework releases the golden profiles resolve to (torch 2.11 cu128, tensorflow 2.21
with ``and-cuda``, read from the catalog so the pins are the real ones), plain stand-ins at
exactly the versions each Colab snapshot's ``pip-freeze.txt`` lists for the packages around the
frameworks, and every NVIDIA wheel those pins name. The torch, jax and tensorflow wheels carry the
CPU-behaving API of ``tests.support.standin_frameworks`` (behaviour ``no_gpu``), so that
``colabenv verify``'s smoke children import them and run their CPU matmul.

``image_host`` builds a host (``tests.support.scriptrun``) whose venv holds the snapshot's
frameworks and their neighbours at the snapshot's versions and local tags, installed with
``--no-deps`` from the local indexes the way the image has them (inconsistencies included), and
``add_colabenv`` makes colabenv runnable inside such a venv (``<venv>/bin/colabenv``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.support.checks import details as details_of
from tests.support.fixtures import console_runner
from tests.support.index import LocalIndex
from tests.support.isolation import clean_env, uv_bin
from tests.support.scriptrun import Host, make_host
from tests.support.standin_frameworks import SOURCES, Behaviour, Standin, link_runtime, venv_env
from tests.support.wheels import (
    ORDINARY,
    WheelSpec,
    _nvidia_specs,
    jax_specs,
    standin_specs,
    tensorflow_spec,
    torch_specs,
    with_marker,
)

REPO = Path(__file__).resolve().parents[2]
RUNTIMES = REPO / "tests" / "data" / "runtimes"
GOLDEN = REPO / "profiles" / "golden"
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
T4_DRIVER = "550.54.15"
T4 = ("--driver", T4_DRIVER, "--compute-capability", "7.5", "--python", PY)

TORCH_FAMILY = ("torch", "torchvision", "torchaudio")
JAX_FAMILY = ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt")
FRAMEWORK_DISTS = (*TORCH_FAMILY, *JAX_FAMILY, "tensorflow")
BEHAVING = ("torch", "jax", "tensorflow")
ORDINARY_NAMES = tuple(sorted({canonicalize_name(name) for name, _, _ in ORDINARY}))
ORDINARY_REQUIRES: dict[str, tuple[str, ...]] = {
    canonicalize_name(name): requires for name, _, requires in ORDINARY
}
INSTALL_LINE = "COLABENV: installing"
CHANGE_RE = re.compile(r"^COLABENV: (installed|upgraded|DOWNGRADED|changed|removed) (\S+) ")


def snapshots() -> list[str]:
    return sorted(p.parent.name for p in RUNTIMES.glob("*/pip-freeze.txt"))


def freeze_of(snapshot: str) -> dict[str, str]:
    """The snapshot's pip freeze, by canonical name (versions from ``name @ URL`` lines too)."""
    from colabenv.host.detect import read_freeze

    installed = read_freeze(RUNTIMES / snapshot / "pip-freeze.txt")
    return {dist.name: dist.version for dist in installed.dists}


def image_names(freeze: Mapping[str, str]) -> list[str]:
    """What the mimicked image holds: the frameworks and the packages around them."""
    wanted = set(FRAMEWORK_DISTS) | set(ORDINARY_NAMES)
    wanted |= {name for name in freeze if name.startswith("nvidia-") and name.endswith("-cu12")}
    return sorted(name for name in wanted if name in freeze)


# ---------------------------------------------------------------------------------------------
# The wheel set


def _behaviour_files(name: str, version: str) -> tuple[tuple[str, str], ...]:
    """The stand-in framework API, behaving as a CPU-only host would see it."""
    local = Version(version).local or ""
    cuda: str | None = None
    if name == "torch":
        match = re.fullmatch(r"cu(\d+)(\d)", local)
        cuda = f"{match.group(1)}.{match.group(2)}" if match else None
        if not local:
            cuda = "12.8"
    elif name == "tensorflow":
        cuda = "12.5"
    standin = Standin(name, version, Behaviour.NO_GPU, cuda=cuda)
    return tuple(sorted(SOURCES[name](standin).items()))


def release_specs(framework: str, version: str, variant: str) -> list[WheelSpec]:
    """Stand-ins for one catalog release and variant, with the catalog's pins and companions."""
    from colabenv.catalog.load import shipped_catalog
    from colabenv.models import Framework

    release = shipped_catalog().release(Framework(framework), Version(version))
    if release is None:
        raise LookupError(f"{framework} {version} is not in the catalog")
    chosen = release.variant(variant)
    if chosen is None:
        raise LookupError(f"{framework} {version} has no variant {variant}")
    pins = with_marker(chosen.pin_texts)
    companions = {str(c.name): str(c.version) for c in release.companions}
    if framework == "torch":
        local = f"+{chosen.local_tag or variant}"
        vision, audio = companions.get("torchvision"), companions.get("torchaudio")
        return torch_specs("pytorch", variant, version, local, pins, vision, audio)
    if framework == "tensorflow":
        return [tensorflow_spec(version, chosen.extra or variant, pins)]
    return jax_specs(version, companions.get("jaxlib", version), variant, pins)


def golden_choices(profiles: Sequence[str]) -> list[tuple[str, str, str]]:
    """(framework, version, variant) each golden profile resolves to on a T4 for each snapshot."""
    from colabenv.catalog.load import shipped_catalog, shipped_tpu
    from colabenv.host.detect import detect
    from colabenv.profile.files import find_profile
    from colabenv.profile.load import load_profile
    from colabenv.resolve.overrides import TargetFlags, resolve_overrides
    from colabenv.resolve.resolver import resolve

    found: dict[tuple[str, str, str], None] = {}
    for snapshot in snapshots():
        flags = TargetFlags(
            driver=T4_DRIVER,
            compute_capability=("7.5",),
            python=PY,
            installed_from=str(RUNTIMES / snapshot / "pip-freeze.txt"),
        )
        target = detect(resolve_overrides(flags, environ={}, tpu_facts=shipped_tpu)).target
        for name in profiles:
            resolution = resolve(load_profile(find_profile(name)), target, shipped_catalog())
            for choice in resolution.choices:
                found[(choice.framework.value, str(choice.release), choice.variant)] = None
    return list(found)


def _image_specs() -> list[WheelSpec]:
    """Plain stand-ins at each snapshot's versions of the packages around the frameworks."""
    specs = []
    for snapshot in snapshots():
        freeze = freeze_of(snapshot)
        for name in image_names(freeze):
            if name in FRAMEWORK_DISTS:
                continue
            specs.append(WheelSpec("default", "", name, freeze[name], ORDINARY_REQUIRES.get(name, ())))
    return specs


def _other_pin_specs(specs: Sequence[WheelSpec]) -> list[WheelSpec]:
    """A wheel for every requirement no spec provides and ``_nvidia_specs`` leaves out (for
    example torch 2.11's ``cuda-toolkit[cublas,...]==12.8.1``): the pinned version, else the
    lower bound, with every extra asked for declared (and empty)."""
    provided = {canonicalize_name(spec.name) for spec in specs}
    wanted: dict[str, tuple[set[str], set[str]]] = {}
    for spec in specs:
        for text in (*spec.requires, *(r for _, reqs in spec.extras for r in reqs)):
            req = Requirement(text)
            name = canonicalize_name(req.name)
            if name in provided or name.startswith("nvidia-"):
                continue
            versions, extras = wanted.setdefault(name, (set(), set()))
            extras.update(req.extras)
            exact = [i.version for i in req.specifier if i.operator in ("==", "===")]
            lower = [i.version for i in req.specifier if i.operator in (">=", "~=")]
            versions.add((exact or lower or ["1.0"])[0])
    return [
        WheelSpec("default", "", name, version, (), tuple((extra, ()) for extra in sorted(extras)))
        for name, (versions, extras) in sorted(wanted.items())
        for version in sorted(versions)
    ]


def journey_specs(golden: Sequence[tuple[str, str, str]] = ()) -> tuple[WheelSpec, ...]:
    """The stand-in set, the golden releases, the snapshots' neighbours; frameworks behaving."""
    specs = list(standin_specs())
    for framework, version, variant in golden:
        specs.extend(release_specs(framework, version, variant))
    specs.extend(_image_specs())
    specs.extend(_nvidia_specs(specs))
    specs.extend(_other_pin_specs(specs))
    unique: dict[tuple[str, str, str, str], WheelSpec] = {}
    for spec in specs:
        key = (spec.index, spec.folder, canonicalize_name(spec.name), str(Version(spec.version)))
        unique.setdefault(key, spec)
    behaving = []
    for spec in unique.values():
        if canonicalize_name(spec.name) in BEHAVING:
            spec = replace(spec, files=_behaviour_files(spec.name, spec.version))
        behaving.append(spec)
    return tuple(behaving)


# ---------------------------------------------------------------------------------------------
# Hosts


def add_colabenv(host: Host) -> Path:
    """Make colabenv (this checkout) importable in the host's venv, behind its site-packages,
    and return the venv's ``colabenv`` console script."""
    venv = host.python.parent.parent
    deps = venv / "colabenv-runtime"
    if not deps.exists():
        link_runtime(deps)
        site = venv / "lib" / f"python{PY}" / "site-packages"
        (site / "_colabenv_runtime.pth").write_text(f"{deps}\n", encoding="utf-8")
    script = venv / "bin" / "colabenv"
    script.write_text(
        f"#!{host.python}\nimport sys\nfrom colabenv.cli.main import main\nsys.exit(main())\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


def image_pins(snapshot: str) -> list[str]:
    freeze = freeze_of(snapshot)
    return [f"{name}=={freeze[name]}" for name in image_names(freeze)]


def install_no_deps(host: Host, pins: Sequence[str], index_url: str) -> None:
    if not pins:
        return
    argv = [
        uv_bin(),
        "pip",
        "install",
        "--python",
        str(host.python),
        "--no-deps",
        "--index-url",
        index_url,
        *pins,
    ]
    done = subprocess.run(argv, capture_output=True, text=True, env=clean_env(), timeout=300)
    assert done.returncode == 0, done.stderr


def image_host(root: Path, snapshot: str, default: LocalIndex, pytorch: LocalIndex) -> Host:
    """A host whose venv holds what the snapshot has around its frameworks, exactly."""
    host = make_host(root, with_pip=False)
    host.driver = T4_DRIVER
    pins = image_pins(snapshot)
    by_variant: dict[str, list[str]] = {}
    plain = []
    for pin in pins:
        name, _, version = pin.partition("==")
        local = Version(version).local
        if name in TORCH_FAMILY and local:
            by_variant.setdefault(local, []).append(pin)
        else:
            plain.append(pin)
    for variant, group in sorted(by_variant.items()):
        install_no_deps(host, group, pytorch.sub_url(variant))
    install_no_deps(host, plain, default.url)
    add_colabenv(host)
    return host


# ---------------------------------------------------------------------------------------------
# Running and reading


def installs(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith(INSTALL_LINE)]


def changed_names(stdout: str) -> set[str]:
    """The distributions the script's change report names (installed, upgraded, ...)."""
    found: set[str] = set()
    for line in stdout.splitlines():
        match = CHANGE_RE.match(line)
        if match:
            found.add(canonicalize_name(match.group(2)))
    return found


def colabenv_cli(
    *args: str | Path, cwd: Path | None = None, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The real console script of the environment running the tests, isolated from pip config."""
    return console_runner(cwd)(
        *args, base=env or clean_env(UV_HTTP_RETRIES="0", PIP_RETRIES="0"), timeout=timeout
    )


def render(profile: Path | str, out: Path, *extra: str) -> float:
    """``colabenv render`` for a T4 into ``out``; returns its wall time in seconds."""
    started = time.perf_counter()
    done = colabenv_cli("render", profile, "-o", out, *T4, *extra)
    elapsed = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    return elapsed


@dataclass(frozen=True)
class VerifyResult:
    """verify's exit code, its JSON report (for ``tests.support.checks.expect``) and stderr."""

    code: int
    report: dict[str, Any]
    stderr: str

    @property
    def details(self) -> dict[str, str]:
        return details_of(self.report)


def verify(host: Host, *args: str, timeout: float = 120) -> VerifyResult:
    """``colabenv verify --json`` inside the host's venv, in a fresh process (the restart),
    on this GPU-less machine: the stand-ins behave as CPU builds."""
    exe = add_colabenv(host)
    done = subprocess.run(
        [str(exe), "verify", "--json", *args],
        capture_output=True,
        text=True,
        env=venv_env(COLABENV_STATE_DIR=str(host.state)),
        cwd=host.root,
        timeout=timeout,
    )
    assert done.returncode in (0, 1), done.stderr
    return VerifyResult(done.returncode, json.loads(done.stdout), done.stderr)


def real_gpu_here() -> bool:
    return Path("/proc/driver/nvidia/version").exists() or shutil.which("nvidia-smi") is not None


def project_profile(
    directory: Path,
    name: str,
    default: LocalIndex,
    pytorch: LocalIndex,
    *,
    body: str = "",
    extends: str | None = None,
) -> Path:
    """A profile file pointing at the local indexes, optionally extending another file."""
    lines = [f'name = "{name}"']
    if extends is not None:
        lines.append(f'extends = "{extends}"')
    text = "\n".join(lines) + "\n" + body.strip("\n") + "\n"
    if "[install]" not in body:
        text += "\n[install]\n"
    text = text.replace(
        "[install]\n",
        f'[install]\nindex_url = "{default.url}"\npytorch_index_url = "{pytorch.base_url}"\n',
        1,
    )
    path = directory / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def copy_golden(directory: Path, name: str) -> Path:
    """A copy of a shipped golden profile, as a team keeps one in its repository."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{name}.toml"
    shutil.copyfile(GOLDEN / f"{name}.toml", target)
    return target
