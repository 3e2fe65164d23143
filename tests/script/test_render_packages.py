"""The script for a profile with CUDA packages: they are installed after every framework, from
their own index or find-links page, constrained by every framework pin, binary only; the header
and the marker name them; the script is shellcheck clean."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from packaging.version import Version

from colabenv import __version__
from colabenv._util.resources import helper_source
from colabenv.catalog.load import catalog_for
from colabenv.models import ComputeCapability, NvidiaTarget, Target
from colabenv.profile.load import load_profile
from colabenv.resolve.resolver import resolve
from colabenv.script.render import render_script

SHELLCHECK = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
T4 = Target(NvidiaTarget(Version("560.35.03"), Version("12.6"), (ComputeCapability(7, 5),)), Version("3.12"))


def _script(tmp_path: Path, frameworks: str, extra: str = "") -> str:
    path = tmp_path / "team.toml"
    path.write_text(f'name = "team"\n[frameworks]\n{frameworks}\n{extra}')
    profile = load_profile(path)
    resolution = resolve(profile, T4, catalog_for(profile, {}, target=T4))
    lines = render_script(resolution, profile, colabenv_version=__version__, helper_source=helper_source())
    return "\n".join(lines) + "\n"


def _groups(text: str) -> list[tuple[str, list[str], str]]:
    """(label, constraints, install line) per install group, in order."""
    found = []
    for block in text.split("announce 'pip: ")[1:]:
        label = block.split("'", 1)[0]
        constraints = re.findall(r"constraints=\(\n((?:\s+\S+\n)+)\s+\)", block)
        install = next(line.strip() for line in block.splitlines() if "run_install" in line)
        found.append((label, constraints[0].split() if constraints else [], install))
    return found


def test_packages_come_after_the_frameworks_each_from_its_place_binary_only(tmp_path: Path) -> None:
    text = _script(
        tmp_path, 'torch = "==2.8.*"\nxformers = "*"\ncupy = "*"', '[packages]\nrequirements = ["rich"]\n'
    )
    groups = _groups(text)
    labels = [label for label, _, _ in groups]
    assert labels == ["torch", "default index", "CUDA packages: xformers", "CUDA packages: cupy-cuda12x"]
    _, xformers_bound, xformers_install = groups[2]
    assert "torch==2.8.0+cu126" in xformers_bound and "cupy-cuda12x==14.2.0" in xformers_bound
    assert xformers_install.endswith("--only-binary xformers; then")
    _, cupy_bound, cupy_install = groups[3]
    assert "torch==2.8.0+cu126" in cupy_bound and "xformers==0.0.32.post2+cu126" in cupy_bound
    assert "--only-binary cupy-cuda12x" in cupy_install and "xformers" not in cupy_install
    # the default group is held to the packages' pins too: a plain package cannot pull another
    _, default_bound, default_install = groups[1]
    assert "xformers==0.0.32.post2+cu126" in default_bound and "--only-binary" not in default_install
    assert "#   xformers (xformers) 0.0.32.post2 cu126 (to install)" in text
    record = json.loads(re.search(r"marker_record='(.*)'", text).group(1))  # type: ignore[union-attr]
    assert record["frameworks"]["cupy"]["distribution"] == "cupy-cuda12x"
    assert "xformers==0.0.32.post2+cu126" in record["requirements"]


def test_the_script_is_shellcheck_clean(tmp_path: Path) -> None:
    script = tmp_path / "setup.sh"
    script.write_text(_script(tmp_path, 'torch = "==2.8.*"\nxformers = "*"\nbitsandbytes = "*"\ncudf = "*"'))
    result = subprocess.run(
        [SHELLCHECK, "--severity=style", str(script)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout


def test_without_packages_the_groups_are_as_before(tmp_path: Path) -> None:
    labels = [label for label, _, _ in _groups(_script(tmp_path, 'torch = "==2.8.*"'))]
    assert labels == ["torch"]
