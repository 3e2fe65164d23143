"""The bootstrap script for a TPU host: what it installs (jax[tpu] with libtpu, torch with
torch_xla), the find-links page of an old release, shellcheck, and a real run against stand-in
wheels served from a local index."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from colabenv import __version__
from colabenv._util.resources import helper_source
from colabenv.catalog.load import shipped_catalog
from colabenv.models import Catalog, Framework, InstalledSet, Target, TpuTarget
from colabenv.profile.files import golden_path
from colabenv.profile.load import load_profile
from colabenv.resolve.resolver import resolve
from colabenv.script.render import render_script
from tests.support.fixtures import Runner, venv_template
from tests.support.index import LocalIndex
from tests.support.paths import REPO
from tests.support.scriptrun import make_host
from tests.support.tpu_catalog import tpu_catalog
from tests.support.wheels import WheelSpec, build_standins

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
SHELLCHECK = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")


def _script(profile_path: Path, target: Target, catalog: Catalog | None = None) -> str:
    profile = load_profile(profile_path)
    resolution = resolve(profile, target, catalog or shipped_catalog())
    return (
        "\n".join(
            render_script(resolution, profile, colabenv_version=__version__, helper_source=helper_source())
        )
        + "\n"
    )


def _tpu(generation: str, accelerator_type: str, chips: int, python: str = "3.12") -> Target:
    return Target(TpuTarget(generation, accelerator_type, chips), Version(python), installed=InstalledSet())


def test_render_for_a_v5e_installs_jax_tpu_with_libtpu(runner: Runner) -> None:
    done = runner("render", "jax-tpu", "--tpu", "v5e-1", "--python", "3.12")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "# target: TPU v5e (v5e-1, 1 chip), Python 3.12, linux_x86_64" in text
    group = text.split("announce 'pip: default index'", 1)[1].split("\nfi\n", 1)[0]
    assert "  'jax[tpu]==0.11.2'\n" in group
    assert "  jaxlib==0.11.2\n" in group
    assert "  'libtpu==0.0.48.*'\n" in group
    assert "--find-links" not in text
    resolved = runner("resolve", "jax-tpu", "--tpu", "v5e-1", "--python", "3.12")
    assert "jax 0.11.2 tpu with jaxlib 0.11.2 (to install, index default)" in resolved.stdout
    assert resolved.stdout.splitlines()[0] == "jax-tpu for TPU v5e (v5e-1, 1 chip), Python 3.12"


def test_render_for_torch_on_a_tpu_names_torch_xla(runner: Runner) -> None:
    done = runner("render", "pytorch", "--tpu", "v6e-1", "--python", "3.11")
    assert done.returncode == 0, done.stderr
    assert "  torch==2.9.0+cpu\n" in done.stdout
    assert "  'torch-xla[tpu]==2.9.0'\n" in done.stdout
    assert "  libtpu==0.0.21\n" in done.stdout
    resolved = runner("resolve", "pytorch", "--tpu", "v6e-1", "--python", "3.11", "--json")
    assert "torch-xla[tpu]==2.9.0" in resolved.stdout


def test_an_old_release_installs_with_its_find_links_page(tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text('name = "old"\n[frameworks]\njax = "==0.4.30"\n')
    text = _script(profile, _tpu("v5e", "v5e-1", 1, "3.11"))
    page = "https://storage.googleapis.com/jax-releases/libtpu_releases.html"
    assert f"#     find-links: {page}\n" in text
    assert f'run_install -r "${{work}}/missing.txt" --find-links {page}; then' in text
    assert "constraints.txt" not in text  # nothing bounds this group: no empty file for uv


@pytest.mark.parametrize(
    ("name", "target"),
    [
        ("jax-tpu", _tpu("v5e", "v5e-1", 1)),
        ("jax-tpu", _tpu("v6e", "v6e-1", 1)),
        ("pytorch", _tpu("v6e", "v6e-8", 8, "3.11")),
        ("jax", _tpu("v3", "v3-8", 4, "3.11")),
    ],
    ids=["jax-tpu-v5e", "jax-tpu-v6e", "pytorch-v6e", "jax-kaggle-v3"],
)
def test_tpu_scripts_are_shellcheck_clean(name: str, target: Target, tmp_path: Path) -> None:
    script = tmp_path / "setup.sh"
    script.write_text(_script(golden_path(name), target))
    result = subprocess.run(
        [SHELLCHECK, "--severity=style", str(script)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout


def test_find_links_script_is_shellcheck_clean(tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text('name = "old"\n[frameworks]\ntorch = "==2.5.1"\n')
    script = tmp_path / "setup.sh"
    script.write_text(_script(profile, _tpu("v5e", "v5litepod-4", 4, "3.11")))
    assert "--find-links https://storage.googleapis.com/libtpu-releases/index.html" in script.read_text()
    result = subprocess.run(
        [SHELLCHECK, "--severity=style", str(script)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout


# ---------------------------------------------------------------------------------------------
# The script run for real: stand-in jax, jaxlib and libtpu wheels on a local index


def _tpu_wheels(root: Path) -> Path:
    specs = [
        WheelSpec(
            "default",
            "",
            "jax",
            "0.6.2",
            ("jaxlib<=0.6.2,>=0.6.2",),
            (
                ("tpu", ("jaxlib<=0.6.2,>=0.6.2", "libtpu==0.0.17.*", "requests")),
                ("cuda12", ("jaxlib==0.6.2", "jax-cuda12-plugin[with-cuda]==0.6.2")),
            ),
            requires_python=">=3.10",
        ),
        WheelSpec("default", "", "jaxlib", "0.6.2", requires_python=">=3.10"),
        WheelSpec("default", "", "libtpu", "0.0.17"),
        WheelSpec("default", "", "libtpu", "0.0.17.1"),
        WheelSpec("default", "", "libtpu", "0.0.18"),
        WheelSpec("default", "", "requests", "2.32.3"),
        WheelSpec(
            "default",
            "",
            "jax",
            "0.4.30",
            ("jaxlib<=0.4.30,>=0.4.30",),
            (("tpu", ("jaxlib<=0.4.30,>=0.4.30", "libtpu-nightly==0.1.dev20240617", "requests")),),
            requires_python=">=3.9",
        ),
        WheelSpec("default", "", "jaxlib", "0.4.30", requires_python=">=3.9"),
        # libtpu-nightly lives on the find-links page only, as on PyPI (a 0.0.1 placeholder)
        WheelSpec("links", "", "libtpu-nightly", "0.1.dev20240617"),
        WheelSpec("default", "", "libtpu-nightly", "0.0.1"),
    ]
    return build_standins(root, specs).root


@pytest.mark.slow
@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_the_script_installs_jax_tpu_with_libtpu(
    installer: str, tmp_path: Path, runner: Runner, request: pytest.FixtureRequest
) -> None:
    wheels = _tpu_wheels(tmp_path / "wheels")
    pip = installer == "pip"
    host = make_host(tmp_path / "host", with_pip=pip, venv_from=venv_template(request, pip))
    with LocalIndex(wheels / "default") as index:
        profile = tmp_path / "p.toml"
        profile.write_text(
            f'name = "tpu-run"\n[frameworks]\njax = "==0.6.2"\n'
            f'[install]\ninstaller = "{installer}"\nindex_url = "{index.url}"\n'
        )
        script = tmp_path / "setup.sh"
        done = runner("render", profile, "--tpu", "v6e-1", "--python", PY, "-o", script, timeout=60)
        assert done.returncode == 0, done.stderr
        first = host.run(script)
        assert first.returncode == 0, first.stdout + first.stderr
        assert first.stdout.splitlines()[-1] == "COLABENV: restart required"
        installed = host.installed()
        assert installed["jax"] == "0.6.2"
        assert installed["jaxlib"] == "0.6.2"
        assert installed["libtpu"] == "0.0.17.1"
        assert not any(name.startswith(("jax-cuda", "nvidia-")) for name in installed)
        marker = host.marker()
        assert marker is not None
        assert marker["target"]["accelerator"] == "tpu"  # type: ignore[index]
        second = host.run(script)
        assert second.returncode == 0, second.stderr
        assert second.stdout.splitlines()[-1] == "COLABENV: nothing changed, no restart needed"


@pytest.mark.slow
def test_the_script_takes_libtpu_nightly_from_the_find_links_page(tmp_path: Path) -> None:
    """jax 0.4.30's libtpu-nightly is on the find-links page only: the script passes the page
    (a local folder here, as the catalog's page is not reachable from tests)."""
    wheels = _tpu_wheels(tmp_path / "wheels")
    host = make_host(tmp_path / "host", with_pip=False)
    catalog = tpu_catalog(Framework.JAX, "0.4.30", find_links=str(wheels / "links"))
    with LocalIndex(wheels / "default") as index:
        profile = tmp_path / "p.toml"
        profile.write_text(
            f'name = "old"\n[frameworks]\njax = "==0.4.30"\n'
            f'[install]\ninstaller = "uv"\nindex_url = "{index.url}"\n'
        )
        script = tmp_path / "setup.sh"
        script.write_text(_script(profile, _tpu("v5e", "v5e-1", 1, PY), catalog))
        done = host.run(script)
        assert done.returncode == 0, done.stdout + done.stderr
        installed = host.installed()
        assert installed["jax"] == "0.4.30"
        assert installed["libtpu-nightly"] == "0.1.dev20240617"


def test_the_readme_shows_what_resolve_prints_for_a_v5e(runner: Runner) -> None:
    readme = (REPO / "docs" / "tpu.md").read_text(encoding="utf-8")
    section = readme.split("## TPU runtimes", 1)[1].split("\n## ", 1)[0]
    shown = section.split("    $ colabenv resolve jax-tpu --tpu v5e-1 --python 3.12\n", 1)[1]
    lines = [line[4:] for line in shown.split("\n\n", 1)[0].splitlines()]
    done = runner("resolve", "jax-tpu", "--tpu", "v5e-1", "--python", "3.12")
    # an interpreter other than 3.12 adds a note that none of its installed versions was read
    printed = [line for line in done.stdout.splitlines() if not line.startswith("note: installed versions")]
    assert printed == lines
    assert "`jax[tpu]==0.11.2`" in section and "`libtpu==0.0.48.*`" in section
    assert "torch-xla[tpu]==2.9.0" in section
