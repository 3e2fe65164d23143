"""Locks for TPU hosts (issue 16): the header records the accelerator and the TPU, staleness
compares them, ``lock --check`` re-resolves for the TPU recorded, ``render --lock`` tells a TPU
lock from a CPU one, a release's find-links page reaches both resolvers (and the lock), and the
framework-file check looks for torch_xla where it is served: against the local index, with
stand-in jax, libtpu and torch_xla wheels."""

from __future__ import annotations

import dataclasses
import hashlib
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv._util import toml
from colabenv.app import resolution as app_resolution
from colabenv.cli.main import main
from colabenv.errors import LockError
from colabenv.lock.content import Lock, LockedFile, LockedPackage, LockHeader, LockTarget
from colabenv.lock.file import parse_lock, render_lock
from colabenv.lock.fit import current_target
from colabenv.lock.make import make_lock
from colabenv.lock.requirements import parse_requirements
from colabenv.models import (
    Accelerator,
    Catalog,
    Framework,
    LockedFramework,
    Target,
    TargetOverrides,
    TpuTarget,
)
from colabenv.profile.load import load_profile
from colabenv.resolve.resolver import resolve
from tests.support.fixtures import Runner, venv_template
from tests.support.index import LocalIndex
from tests.support.isolation import clean_env
from tests.support.scriptrun import make_host
from tests.support.tpu_catalog import tpu_catalog
from tests.support.wheels import WheelSpec, build_standins

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
V5E = TpuTarget("v5e", "v5e-1", 1)
LINKS = "https://links.example/libtpu_releases.html"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _lock(target: LockTarget, *, files: bool = False, find_links: tuple[str, ...] = ()) -> Lock:
    def file(name: str, version: str) -> LockedFile:
        wheel = f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
        return LockedFile(
            _sha(name), wheel if files else None, f"https://files.example/{wheel}" if files else None
        )

    packages = tuple(
        LockedPackage(canonicalize_name(name), version, (file(name, version),))
        for name, version in (("jax", "0.6.2"), ("jaxlib", "0.6.2"), ("libtpu", "0.0.17.1"))
    )
    header = LockHeader(
        "0.1.0",
        "jax-tpu",
        "sha256:" + _sha("profile"),
        target,
        (LockedFramework(Framework.JAX, "0.6.2", "tpu", None),),
        "uv 0.8.0",
    )
    return Lock(header, packages, "https://pypi.example/simple", (), find_links=find_links)


TPU = LockTarget(None, None, None, (), "3.12", "linux_x86_64", tpu=V5E)
CPU = LockTarget(None, None, None, (), "3.12", "linux_x86_64")


# ---------------------------------------------------------------------------------------------
# The header


def test_the_header_records_the_accelerator_and_the_tpu() -> None:
    lock = _lock(TPU)
    text = render_lock(lock)
    assert "# target-accelerator: tpu\n" in text
    assert "# target-tpu: generation=v5e type=v5e-1 chips=1\n" in text
    again = parse_lock(text, Path("jax.lock"))
    assert again == lock
    assert again.header.target.tpu == V5E
    assert again.header.target.accelerator is Accelerator.TPU
    cpu = render_lock(_lock(CPU))
    assert "# target-accelerator: cpu\n# target-tpu: none\n" in cpu
    assert parse_lock(cpu).header.target.tpu is None


def test_an_unknown_tpu_field_is_written_none_and_read_back() -> None:
    target = dataclasses.replace(TPU, tpu=TpuTarget(None, None, 4))
    text = render_lock(_lock(target))
    assert "# target-tpu: generation=none type=none chips=4\n" in text
    assert parse_lock(text).header.target.tpu == TpuTarget(None, None, 4)


def test_the_pylock_form_records_them_too() -> None:
    lock = _lock(TPU, files=True, find_links=(LINKS,))
    text = render_lock(lock, pylock=True)
    tool = toml.loads(text)["tool"]["colabenv"]
    assert tool["target"]["accelerator"] == "tpu"
    assert tool["target"]["tpu"] == {"generation": "v5e", "type": "v5e-1", "chips": 1}
    assert tool["find-links"] == [LINKS]
    again = parse_lock(text, Path("pylock.toml"))
    assert again.header == lock.header and again.find_links == (LINKS,)
    assert again.pins_digest == lock.pins_digest


def test_a_lock_made_before_the_tpu_keys_is_read_as_before() -> None:
    """A schema-2 lock of an earlier colabenv has neither key: its accelerator is what its
    driver says, and it has no TPU."""
    for target, accelerator in (
        (CPU, Accelerator.CPU),
        (
            dataclasses.replace(CPU, driver="550.54.15", cuda="12.4", compute_capabilities=("7.5",)),
            Accelerator.NVIDIA,
        ),
    ):
        text = render_lock(_lock(target))
        old = "".join(
            line
            for line in text.splitlines(keepends=True)
            if not line.startswith(("# target-accelerator", "# target-tpu"))
        )
        lock = parse_lock(old, Path("old.lock"))
        assert lock.header.schema == 2
        assert lock.header.target == target and lock.header.target.accelerator is accelerator


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "# target-accelerator: tpu",
            "# target-accelerator: cpu",
            "target-accelerator: 'cpu' but the target is a TPU host",
        ),
        (
            "# target-accelerator: tpu",
            "# target-accelerator: gpu",
            "target-accelerator: 'gpu' is not nvidia, rocm, tpu or cpu",
        ),
        (
            "# target-tpu: generation=v5e type=v5e-1 chips=1",
            "# target-tpu: none",
            "target-accelerator: 'tpu' but the target is not a TPU host",
        ),
        ("generation=v5e ", "generation=V5E;rm ", "target-tpu: 'V5E;rm' is not a TPU generation"),
        ("type=v5e-1 ", "type=v5e-1$(x) ", "target-tpu: 'v5e-1\\$\\(x\\)' is not a TPU type"),
        ("chips=1", "chips=" + "9" * 5000, "target-tpu: chips="),
        ("chips=1", "chips=0", "target-tpu: chips=0 is not a number of chips"),
        ("chips=1", "chips=1 cores=2", "target-tpu: expected generation=, type= and chips="),
        (
            "# target-driver: none",
            "# target-driver: 550.54.15",
            "target-tpu: a TPU host has no NVIDIA driver or CUDA",
        ),
    ],
)
def test_a_malformed_tpu_header_is_refused(old: str, new: str, message: str) -> None:
    text = render_lock(_lock(TPU))
    assert old in text
    with pytest.raises(LockError, match=message) as error:
        parse_lock(text.replace(old, new, 1), Path("jax.lock"))
    assert str(error.value).startswith("jax.lock: line ")
    assert "\n" not in str(error.value)


def test_find_links_lines_are_written_read_and_in_the_digest() -> None:
    lock = _lock(TPU, find_links=(LINKS,))
    text = render_lock(lock)
    assert f"--index-url https://pypi.example/simple\n--find-links {LINKS}\n\n" in text
    again = parse_lock(text, Path("jax.lock"))
    assert again.find_links == (LINKS,) and again == lock
    assert lock.pins_digest != _lock(TPU).pins_digest
    _, _, _, links = parse_requirements(
        f"-f {LINKS}\n--find-links={LINKS}\nsix==1.17.0 --hash=sha256:{_sha('six')}\n"
    )
    assert links == (LINKS, LINKS)
    with pytest.raises(LockError, match="'/somewhere' is not a find-links URL"):
        parse_requirements(f"--find-links /somewhere\nsix==1 --hash=sha256:{_sha('six')}\n")


# ---------------------------------------------------------------------------------------------
# Staleness and the target lock --check compares with


def test_staleness_sees_the_accelerator_and_the_generation() -> None:
    v6e = dataclasses.replace(TPU, tpu=TpuTarget("v6e", "v6e-1", 1))
    v5e_8 = dataclasses.replace(TPU, tpu=TpuTarget("v5e", "v5litepod-8", 8))
    assert TPU.differences(CPU) == ["accelerator tpu in the lock, cpu now"]
    assert CPU.differences(TPU) == ["accelerator cpu in the lock, tpu now"]
    assert TPU.differences(v6e) == ["TPU generation v5e in the lock, v6e now"]
    assert TPU.differences(v5e_8) == [], "the same generation runs the same wheels"
    nvidia = dataclasses.replace(CPU, driver="550.54.15", cuda="12.4")
    assert nvidia.differences(CPU) == [
        "driver 550.54.15 in the lock, none now",
        "CUDA 12.4 in the lock, none now",
    ]


def test_the_target_lock_check_compares_with_keeps_or_replaces_the_tpu() -> None:
    assert current_target(TPU, TargetOverrides()) == TPU
    assert current_target(TPU, TargetOverrides(python=Version("3.11"))).tpu == V5E
    assert current_target(TPU, TargetOverrides(cpu=True)).tpu is None
    assert current_target(TPU, TargetOverrides(driver=Version("550.54.15"))).tpu is None
    v6e = TpuTarget("v6e", "v6e-1", 1)
    nvidia = dataclasses.replace(CPU, driver="550.54.15", cuda="12.4", compute_capabilities=("7.5",))
    moved = current_target(nvidia, TargetOverrides(tpu=v6e))
    assert (moved.driver, moved.cuda, moved.compute_capabilities, moved.tpu) == (None, None, (), v6e)
    assert moved.to_target().device == v6e


def test_from_target_and_back_keep_the_tpu() -> None:
    target = Target(V5E, Version("3.12"))
    recorded = LockTarget.from_target(target, None)
    assert recorded == TPU
    assert recorded.to_target() == target


# ---------------------------------------------------------------------------------------------
# Real locks against the local index: stand-in jax[tpu], libtpu, torch_xla


def _tpu_wheels(root: Path) -> Path:
    specs = [
        WheelSpec(
            "default",
            "",
            "jax",
            "0.6.2",
            ("jaxlib<=0.6.2,>=0.6.2",),
            (("tpu", ("jaxlib<=0.6.2,>=0.6.2", "libtpu==0.0.17.*")),),
            requires_python=">=3.10",
        ),
        WheelSpec("default", "", "jaxlib", "0.6.2", requires_python=">=3.10"),
        WheelSpec("default", "", "libtpu", "0.0.17.1"),
        WheelSpec("default", "", "libtpu", "0.0.21"),
        WheelSpec(
            "default",
            "",
            "jax",
            "0.4.30",
            ("jaxlib<=0.4.30,>=0.4.30",),
            (("tpu", ("jaxlib<=0.4.30,>=0.4.30", "libtpu-nightly==0.1.dev20240617")),),
            requires_python=">=3.9",
        ),
        WheelSpec("default", "", "jaxlib", "0.4.30", requires_python=">=3.9"),
        WheelSpec("default", "", "libtpu-nightly", "0.0.1"),
        # libtpu-nightly lives on the find-links page only (PyPI has a 0.0.1 placeholder)
        WheelSpec("links", "", "libtpu-nightly", "0.1.dev20240617"),
        WheelSpec("pytorch", "cpu", "torch", "2.9.0+cpu"),
        WheelSpec("default", "", "torch-xla", "2.9.0", (), (("tpu", ("libtpu==0.0.21",)),)),
    ]
    return build_standins(root, specs).root


def _profile(path: Path, body: str, default: LocalIndex, pytorch: LocalIndex | None = None) -> Path:
    mirror = f'pytorch_index_url = "{pytorch.base_url}"\n' if pytorch is not None else ""
    path.write_text(
        f'name = "tpu-lock"\n[frameworks]\n{body}\n[install]\nindex_url = "{default.url}"\n{mirror}',
        encoding="utf-8",
    )
    return path


def _env() -> dict[str, str]:
    return clean_env(UV_HTTP_RETRIES="0", PIP_RETRIES="0")


@pytest.mark.slow
@pytest.mark.parametrize("resolver", ["uv", "pip-tools"])
def test_a_jax_tpu_lock_and_its_check(runner: Runner, tmp_path: Path, resolver: str) -> None:
    wheels = _tpu_wheels(tmp_path / "wheels")
    with LocalIndex(wheels / "default") as default:
        profile = _profile(tmp_path / "p.toml", 'jax = "==0.6.2"', default)
        out = tmp_path / "jax.lock"
        made = runner(
            "lock",
            profile,
            "-o",
            out,
            "--tpu",
            "v5e-1",
            "--python",
            PY,
            "--resolver",
            resolver,
            base=_env(),
            timeout=600,
        )
        assert made.returncode == 0, made.stderr
        text = out.read_text()
        assert "# target-accelerator: tpu\n" in text
        assert "# target-tpu: generation=v5e type=v5e-1 chips=1\n" in text
        assert "# framework: jax 0.6.2 variant=tpu index=default\n" in text
        lock = parse_lock(text, out)
        assert (lock.version_of("jax"), lock.version_of("libtpu")) == ("0.6.2", "0.0.17.1")

        fresh = runner("lock", profile, "-o", out, "--check", base=_env())
        assert (fresh.returncode, fresh.stdout.split(": ", 1)[1]) == (0, "up to date with p.toml\n")
        on_tpu = runner("lock", profile, "-o", out, "--check", base={**_env(), "COLABENV_TPU": "v5e-4"})
        assert on_tpu.returncode == 0, on_tpu.stdout + on_tpu.stderr
        cpu = runner("lock", profile, "-o", out, "--check", "--cpu", base=_env())
        assert cpu.returncode == 1
        assert "stale: target: accelerator tpu in the lock, cpu now" in cpu.stdout
        other = runner("lock", profile, "-o", out, "--check", "--tpu", "v6e-1", base=_env())
        assert other.returncode == 1
        assert "stale: target: TPU generation v5e in the lock, v6e now" in other.stdout

        script = runner("render", profile, "--lock", out, "--tpu", "v5e-1", "--python", PY, base=_env())
        assert script.returncode == 0, script.stderr
        assert "# target (the lock's): TPU v5e (v5e-1, 1 chip), Python" in script.stdout
        refused = runner("render", profile, "--lock", out, "--cpu", "--python", PY, base=_env())
        assert refused.returncode == 2 and refused.stdout == ""
        assert "does not fit this script: target: accelerator tpu in the lock, cpu now" in refused.stderr


def _old_jax_resolution(tmp_path: Path, default: LocalIndex, page: str) -> tuple[Catalog, Path]:
    """jax 0.4.30's TPU build with its find-links page at ``page`` (the catalog's is not
    reachable from tests)."""
    profile = _profile(tmp_path / "old.toml", 'jax = "==0.4.30"', default)
    return tpu_catalog(Framework.JAX, "0.4.30", find_links=page), profile


@pytest.mark.slow
@pytest.mark.parametrize(
    ("resolver", "pylock"), [("uv", False), ("pip-tools", False), ("uv", True), ("pip-tools", True)]
)
def test_the_find_links_page_reaches_both_resolvers_and_the_lock(
    tmp_path: Path, resolver: str, pylock: bool
) -> None:
    wheels = _tpu_wheels(tmp_path / "wheels")
    with LocalIndex(wheels / "default") as default, LocalIndex(wheels / "links") as links:
        page = f"{links.url}/libtpu-nightly/"
        catalog, profile = _old_jax_resolution(tmp_path, default, page)
        target = Target(V5E, Version(PY))
        resolution = resolve(load_profile(profile), target, catalog)
        assert resolution.choices[0].find_links == page
        lock = make_lock(
            resolution, resolver=resolver, colabenv_version="0.1.0", environ=_env(), with_files=pylock
        )
        assert lock.version_of("libtpu-nightly") == "0.1.dev20240617"
        assert lock.find_links == (page,)
        text = render_lock(lock, pylock=pylock)
        again = parse_lock(text, Path("pylock.toml" if pylock else "old.lock"))
        assert again.find_links == (page,) and again.pins == lock.pins
        if not pylock:
            assert f"--find-links {page}\n" in text
        else:
            nightly = again.package("libtpu-nightly")
            assert nightly is not None and nightly.files[0].url is not None
            assert urlsplit(nightly.files[0].url).netloc == urlsplit(links.url).netloc


@pytest.mark.slow
@pytest.mark.parametrize("resolver", ["uv", "pip-tools"])
def test_torch_xla_is_looked_for_on_the_default_index(tmp_path: Path, resolver: str) -> None:
    """torch's TPU build takes torch from the PyTorch CPU index and torch_xla from the default
    index: the framework-file check asks each index for its own."""
    wheels = _tpu_wheels(tmp_path / "wheels")
    with LocalIndex(wheels / "default") as default, LocalIndex(wheels / "pytorch") as pytorch:
        profile = _profile(tmp_path / "p.toml", 'torch = "==2.9.0"', default, pytorch)
        target = Target(TpuTarget("v6e", "v6e-1", 1), Version(PY))
        resolution = resolve(load_profile(profile), target, tpu_catalog(Framework.TORCH, "2.9.0"))
        lock = make_lock(resolution, resolver=resolver, colabenv_version="0.1.0", environ=_env())
        assert lock.version_of("torch") == "2.9.0+cpu"
        assert (lock.version_of("torch-xla"), lock.version_of("libtpu")) == ("2.9.0", "0.0.21")
        again = parse_lock(render_lock(lock), tmp_path / "torch.lock")
        assert again.header.target.tpu == TpuTarget("v6e", "v6e-1", 1)


@pytest.mark.slow
@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_a_find_links_lock_installs_through_the_script(
    tmp_path: Path, installer: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """``render --lock``: the lock's ``--find-links`` line reaches the installer, which takes
    libtpu-nightly from the page and not the index's 0.0.1 placeholder. The command runs in
    this process, its catalog the one that lets jax 0.4.30 run on this Python."""
    wheels = _tpu_wheels(tmp_path / "wheels")
    pip = installer == "pip"
    host = make_host(tmp_path / "host", with_pip=pip, venv_from=venv_template(request, pip))
    with LocalIndex(wheels / "default") as default, LocalIndex(wheels / "links") as links:
        page = f"{links.url}/libtpu-nightly/"
        catalog, profile = _old_jax_resolution(tmp_path, default, page)
        with profile.open("a", encoding="utf-8") as handle:
            handle.write(f'installer = "{installer}"\n')
        target = Target(V5E, Version(PY))
        lock = make_lock(
            resolve(load_profile(profile), target, catalog),
            resolver="uv",
            colabenv_version="0.1.0",
            environ=_env(),
        )
        out = tmp_path / "old.lock"
        out.write_text(render_lock(lock), encoding="utf-8")
        script = tmp_path / "setup.sh"
        monkeypatch.setattr(app_resolution, "load_catalog", lambda profile, *_, **__: catalog)
        argv = [
            "render",
            str(profile),
            "--lock",
            str(out),
            "--tpu",
            "v5e-1",
            "--python",
            PY,
            "-o",
            str(script),
        ]
        assert main(argv) == 0
        ran = host.run(script)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        installed = host.installed()
        assert (installed["jax"], installed["libtpu-nightly"]) == ("0.4.30", "0.1.dev20240617")


def test_a_tpu_image_says_its_target_as_the_script_does(runner: Runner) -> None:
    done = runner("render", "jax-tpu", "--tpu", "v5e-1", "--python", "3.12", "--format", "dockerfile")
    assert done.returncode == 0, done.stderr
    assert "# target: TPU v5e (v5e-1, 1 chip), Python 3.12, linux_x86_64\n" in done.stdout


@pytest.mark.parametrize("on_the_page", [True, False])
def test_the_index_check_looks_for_a_find_links_pin_on_its_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_the_page: bool
) -> None:
    """jax 0.4.30's TPU build needs libtpu-nightly 0.1.dev20240617, which only its find-links
    page serves (the default index has a 0.0.1 placeholder): the index check reads that page
    too, so the build is kept; where the page lacks it as well, the build is passed over,
    naming the page (issue 34: every chosen distribution, find-links builds included)."""
    from colabenv.app.confirmation import confirmed_resolution
    from colabenv.errors import ResolutionError
    from colabenv.index.check import IndexCheck

    monkeypatch.setenv("COLABENV_CACHE_DIR", str(tmp_path / "cache"))
    wheels = _tpu_wheels(tmp_path / "wheels")
    if not on_the_page:
        for wheel in (wheels / "links").rglob("libtpu_nightly-*.whl"):
            wheel.unlink()
    with LocalIndex(wheels / "default") as default, LocalIndex(wheels / "links") as links:
        page = f"{links.url}/libtpu-nightly/"
        catalog, profile = _old_jax_resolution(tmp_path, default, page)
        target = Target(V5E, Version(PY))
        check = IndexCheck(clean_env())
        if on_the_page:
            resolution = confirmed_resolution(
                load_profile(profile), target, catalog, check, allow_unconfirmed=False
            )
            assert resolution.choices[0].find_links == page
            assert "libtpu-nightly==0.1.dev20240617" in resolution.choices[0].requirements
            assert links.requests, "the find-links page was not read"
        else:
            with pytest.raises(ResolutionError) as caught:
                confirmed_resolution(load_profile(profile), target, catalog, check, allow_unconfirmed=False)
            shown = page.rstrip("/")
            assert f"the find-links page {shown} has no file libtpu_nightly-0.1.dev20240617-*.whl" in str(
                caught.value
            )
