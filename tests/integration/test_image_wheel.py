"""The colabenv wheel ``render --format dockerfile -o DIR`` puts into the build folder, installed
by real pip into a fresh venv with no index: the image needs no colabenv release anywhere."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from colabenv import __version__
from tests.support.containers import dependency_wheelhouse
from tests.support.fixtures import Runner, copy_venv
from tests.support.isolation import clean_env

pytestmark = pytest.mark.slow

WORK_DIR = "/opt/colabenv-build"
LISTING = re.compile(r"echo '[0-9a-f]{64}  /opt/colabenv-build/(?P<name>[^']+)' > (?P<listing>\S+)")
CHECK = re.compile(r"\{ sha256sum --check --strict (?P<listing>\S+) \|\| \{ echo '[^']*' >&2; exit 1; \}; \}")


def run_hash_checks(build: Path, definition: str) -> subprocess.CompletedProcess[str]:
    """The definition's own hash checks (the listing it writes, then ``sha256sum --check``), run
    on the build folder in place of the image's build directory."""
    text = (build / definition).read_text(encoding="utf-8")
    listings, checks = list(LISTING.finditer(text)), list(CHECK.finditer(text))
    names = {match["name"] for match in listings}
    assert names == {f"colabenv-{__version__}-py3-none-any.whl", "setup.sh"}, names
    assert [m["listing"] for m in listings] == [m["listing"] for m in checks]
    commands = [command.group(0) for pair in zip(listings, checks, strict=True) for command in pair]
    script = "set -e\n" + "\n".join(commands).replace(WORK_DIR, str(build)) + "\n"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("form", "definition"), [("dockerfile", "Dockerfile"), ("apptainer", "apptainer.def")]
)
def test_the_definitions_hash_checks_pass_on_its_build_folder_and_fail_on_a_changed_file(
    tmp_path: Path, runner: Runner, form: str, definition: str
) -> None:
    done = runner("render", "cpu-only", "--cpu", "--python", "3.12", "--format", form, "-o", "ctx")
    assert done.returncode == 0, done.stderr
    checked = run_hash_checks(tmp_path / "ctx", definition)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count(": OK\n") == 2
    for name, words in (
        ("setup.sh", "is not the script"),
        (f"colabenv-{__version__}-py3-none-any.whl", "is not the wheel"),
    ):
        changed = tmp_path / f"changed-{name}"
        shutil.copytree(tmp_path / "ctx", changed)
        with (changed / name).open("ab") as file:
            file.write(b"\n")
        refused = run_hash_checks(changed, definition)
        assert refused.returncode == 1 and f"colabenv: {name} {words}" in refused.stderr, refused.stderr


def test_the_build_folder_wheel_installs_with_no_index_and_runs(
    tmp_path: Path, runner: Runner, pip_venv_template: Path
) -> None:
    done = runner("render", "cpu-only", "--cpu", "--python", "3.12", "--format", "dockerfile", "-o", "ctx")
    assert done.returncode == 0, done.stderr
    wheel = tmp_path / "ctx" / f"colabenv-{__version__}-py3-none-any.whl"
    checked = run_hash_checks(tmp_path / "ctx", "Dockerfile")
    assert checked.returncode == 0, checked.stdout + checked.stderr

    python = copy_venv(pip_venv_template, tmp_path / "venv")
    wheels = dependency_wheelhouse(tmp_path / "deps")
    env = clean_env()
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-index", "--find-links", str(wheels), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    version = subprocess.run(
        [str(python), "-m", "colabenv", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert version.returncode == 0, version.stderr
    assert __version__ in version.stdout
    command = subprocess.run(
        [str(python.parent / "colabenv"), "profiles", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert command.returncode == 0, command.stderr
    assert "cpu-only" in command.stdout, "the shipped profiles are in the wheel"
    site = subprocess.run(
        [str(python), "-c", "import colabenv; print(colabenv.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert str(tmp_path / "venv") in site.stdout, "colabenv runs from the venv, not from this checkout"
