"""`colabenv pin` and `colabenv init`: round trips that keep comments and order, and validate."""

from __future__ import annotations

import difflib
import json
import subprocess
from pathlib import Path

import pytest

from colabenv.lock.file import read_lock
from tests.support.fixtures import *  # noqa: F403
from tests.support.index import LocalIndex
from tests.support.isolation import clean_env
from tests.support.locking import PYTHON, T4, colabenv, lock_profile, write_profile


def _changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    diff = [
        line
        for line in difflib.ndiff(before.splitlines(), after.splitlines())
        if line.startswith(("- ", "+ "))
    ]
    removed = [line[2:] for line in diff if line.startswith("- ")]
    added = [line[2:] for line in diff if line.startswith("+ ")]
    return list(zip(removed, added, strict=True))


def test_pin_round_trip(tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex) -> None:
    profile = write_profile(tmp_path, default_index, pytorch_index)
    lock = lock_profile(profile, tmp_path / "team.lock", "uv")
    before = profile.read_text()
    result = colabenv("pin", profile, "--lock", tmp_path / "team.lock")
    assert result.returncode == 0, result.stderr
    after = profile.read_text()
    assert _changed_lines(before, after) == [
        (
            'torch = { version = ">=2.5,<2.7", torchvision = "*" }  # the torch line',
            'torch = { version = "==2.6.0", torchvision = "==0.21.0" }  # the torch line',
        ),
        ('jax = ">=0.5,<0.6"  # jax from the default index', 'jax = "==0.5.3"  # jax from the default index'),
    ]
    check = colabenv("profiles", "check", profile)
    assert check.returncode == 0, check.stderr
    resolved = colabenv("resolve", profile, "--json", *T4)
    assert resolved.returncode == 0, resolved.stderr
    frameworks = json.loads(resolved.stdout)["frameworks"]
    assert frameworks["torch"]["version"] == "2.6.0"
    assert frameworks["torch"]["variant"] == "cu124"
    assert frameworks["jax"]["version"] == "0.5.3"
    relocked = lock_profile(profile, tmp_path / "again.lock", "uv")
    assert relocked.pins == lock.pins
    again = colabenv("pin", profile, "--lock", tmp_path / "team.lock")
    assert again.returncode == 0
    assert "already pinned" in again.stderr
    assert profile.read_text() == after


def test_pin_adds_frameworks_inherited_from_a_parent(
    tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    write_profile(tmp_path, default_index, pytorch_index, name="base.toml")
    child = tmp_path / "child.toml"
    child.write_text(
        '# the project profile\nextends = "base.toml"\nname = "team-gpu"\n'
        '\n[packages]\n# our extra needs\nrequirements = ["requests>=2", "six"]\n'
    )
    lock_profile(child, tmp_path / "child.lock", "uv")
    result = colabenv("pin", child, "--lock", tmp_path / "child.lock")
    assert result.returncode == 0, result.stderr
    text = child.read_text()
    assert text.startswith('# the project profile\nextends = "base.toml"\n')
    assert "# our extra needs\n" in text
    assert '[frameworks]\ntorch = "==2.6.0"\njax = "==0.5.3"\n' in text
    assert colabenv("profiles", "check", child).returncode == 0
    resolved = json.loads(colabenv("resolve", child, "--json", *T4).stdout)
    assert resolved["frameworks"]["torch"]["requirements"] == [
        "torch==2.6.0+cu124",
        "torchvision==0.21.0+cu124",
    ]


def test_pin_refuses_a_lock_of_another_profile(
    tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    profile = write_profile(tmp_path, default_index, pytorch_index)
    lock_profile(profile, tmp_path / "team.lock", "uv")
    other = tmp_path / "other.toml"
    other.write_text(profile.read_text().replace('name = "team-gpu"', 'name = "other"'))
    before = other.read_text()
    result = colabenv("pin", other, "--lock", tmp_path / "team.lock")
    assert result.returncode == 2
    assert "made for profile 'team-gpu'" in result.stderr
    assert other.read_text() == before
    missing = colabenv("pin", other, "--lock", tmp_path / "nope.lock")
    assert missing.returncode == 2 and "nope.lock: lockfile: no such file" in missing.stderr
    assert read_lock(tmp_path / "team.lock").header.profile_name == "team-gpu"


# ---------------------------------------------------------------------------------------------
# init: what is installed here, through a site directory of distribution metadata on PYTHONPATH


def _dist(site: Path, name: str, version: str, *requires: str, direct: bool = False) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")
    if direct:
        (info / "direct_url.json").write_text('{"url": "file:///src/x", "dir_info": {}}')


def _colab_site(site: Path) -> Path:
    """A runtime's site-packages: frameworks, their dependencies, and what a user added."""
    _dist(site, "torch", "2.8.0+cu126", "nvidia-cudnn-cu12==9.10.2.21", "numpy")
    _dist(site, "torchvision", "0.23.0+cu126", "torch==2.8.0")
    _dist(site, "torchaudio", "2.8.0+cu126", "torch==2.8.0")
    _dist(site, "nvidia-cudnn-cu12", "9.10.2.21")
    _dist(site, "tensorflow", "2.19.0", "numpy")
    _dist(site, "jax", "0.5.3", "jaxlib<=0.5.3")
    _dist(site, "jaxlib", "0.5.3", "numpy")
    _dist(site, "numpy", "2.0.2")
    _dist(site, "tokenizers", "0.21.0")
    _dist(site, "transformers", "4.50.0", "numpy>=1.17", "tokenizers<0.22,>=0.21")
    _dist(site, "peft", "0.15.2", "transformers", "torch>=1.13")
    _dist(site, "datasets", "3.0.0", "numpy>=1.17")
    _dist(site, "docs-tool", "1.0", 'datasets; extra == "data"', 'tokenizers; python_version < "3"')
    _dist(site, "my-project", "0.1.0", "numpy", direct=True)
    return site


def _image_freeze(path: Path, *extra: str) -> Path:
    """The runtime image's `pip freeze`: this test environment, and what ``extra`` adds."""
    from importlib.metadata import distributions

    lines = {f"{d.metadata['Name']}=={d.version}" for d in distributions() if d.metadata["Name"]}
    path.write_text("\n".join(sorted(lines) + list(extra)) + "\n")
    return path


def _init(*args: str | Path, site: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = clean_env()
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return colabenv("init", *args, env=env)


def test_init_captures_frameworks_and_what_the_user_added(tmp_path: Path) -> None:
    site = _colab_site(tmp_path / "site")
    image = _image_freeze(
        tmp_path / "image.txt", "datasets==2.0.0", "tokenizers==0.21.0", "torch==2.6.0+cu124"
    )
    out = tmp_path / "colab.toml"
    result = _init(
        "-o",
        out,
        "--name",
        "colab-oct",
        "--installed-from",
        image,
        "--driver",
        "550.54.15",
        "--compute-capability",
        "7.5",
        "--python",
        "3.12",
        site=site,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == f"colabenv: wrote {out} (colab-oct)\n"
    text = out.read_text()
    assert 'name = "colab-oct"' in text
    assert 'python = "==3.12.*"' in text
    assert ('torch = { version = "==2.8.0", torchvision = "==0.23.0", torchaudio = "==2.8.0" }') in text
    assert "# torch 2.8.0+cu126 is installed in this runtime." in text
    assert 'tensorflow = "==2.19.0"' in text
    assert 'jax = { version = "==0.5.3", jaxlib = "==0.5.3" }' in text
    assert (
        'requirements = [\n    "datasets==3.0.0",\n    "docs-tool==1.0",\n    "peft==0.15.2",\n]\n'
    ) in text
    assert "# my-project 0.1.0: installed from a URL or a local path" in text
    assert 'smoke = ["torch", "tensorflow", "jax"]' in text
    assert "require_gpu = true" in text
    for section in ("[frameworks]", "[packages]", "[apt]", "[env]", "[install]", "[verify]"):
        position = text.index(section)
        assert text[position + len(section) + 1] == "#", f"{section} has no comment"
    check = colabenv("profiles", "check", out)
    assert check.returncode == 0, check.stderr
    again = _init("-o", out, "--cpu", site=site)
    assert again.returncode == 2
    assert "already exists" in again.stderr
    assert out.read_text() == text


def test_init_without_an_image_freeze_lists_every_top_level_package(tmp_path: Path) -> None:
    site = _colab_site(tmp_path / "site")
    result = _init("--cpu", "--python", PYTHON, site=site)
    assert result.returncode == 0, result.stderr
    assert '    "peft==0.15.2",\n' in result.stdout
    assert '    "pytest==' in result.stdout, "this environment's own top-level packages"
    assert '"colabenv==' not in result.stdout and '"pip==' not in result.stdout
    assert '"transformers==' not in result.stdout, "peft needs it"
    assert "give --installed-from with the runtime image's `pip freeze`" in result.stderr


def test_init_to_stdout_without_a_gpu(tmp_path: Path) -> None:
    image = _image_freeze(tmp_path / "freeze.txt")
    result = _init("--cpu", "--installed-from", image, "--python", PYTHON)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert 'name = "generic"' in result.stdout
    assert "# No framework was found in this runtime." in result.stdout
    assert "\nrequirements = []\n" in result.stdout
    assert "require_gpu = false" in result.stdout
    (tmp_path / "p.toml").write_text(result.stdout)
    assert colabenv("profiles", "check", tmp_path / "p.toml").returncode == 0


def test_init_through_a_device_writes_through() -> None:
    result = _init("--cpu", "-o", "/dev/stdout")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("# A starter profile, written by `colabenv init`")


def test_init_into_a_missing_directory_is_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "no" / "such" / "dir" / "p.toml"
    result = _init("--cpu", "-o", out)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"colabenv: {out}: cannot write: directory {out.parent} does not exist"
    ]


def _refuses_new_files(directory: Path) -> bool:
    probe = directory / ".colabenv-write-probe"
    try:
        probe.touch(exist_ok=False)
    except OSError:
        return True
    probe.unlink()
    return False


def test_init_into_a_read_only_directory_is_exit_2(tmp_path: Path) -> None:
    directory = tmp_path / "ro"
    directory.mkdir()
    directory.chmod(0o555)
    if not _refuses_new_files(directory):  # root writes anywhere; sysfs refuses new files to all
        directory = Path("/sys/kernel")
        if not directory.is_dir() or not _refuses_new_files(directory):
            pytest.skip("no directory here refuses new files to this user")
    out = directory / "p.toml"
    result = _init("--cpu", "-o", out)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"colabenv: {out}: cannot write: "), lines
    assert not out.exists()


@pytest.mark.parametrize("name", ["bad name", "x" * 65, 'quote"d'])
def test_init_rejects_bad_names(tmp_path: Path, name: str) -> None:
    result = colabenv("init", "-o", tmp_path / "p.toml", "--name", name, "--cpu")
    assert result.returncode == 2
    assert "--name" in result.stderr
    assert not (tmp_path / "p.toml").exists()
