"""The profile keys of the pre-training checklist and of catalog overlays: [verify] io_paths and
thresholds, [reproducibility], [catalog] paths (relative to each file of an extends chain)."""

from __future__ import annotations

from pathlib import Path

import pytest

from colabenv.errors import ProfileError
from colabenv.models import IoCheck, Reproducibility
from colabenv.profile.load import load_profile


def _write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_io_paths_with_shared_and_own_thresholds(tmp_path: Path) -> None:
    profile = load_profile(
        _write(
            tmp_path,
            "p.toml",
            """
name = "x"
[verify]
io_paths = ["/content/data", { path = "/content/drive/MyDrive/ds", min_read_mib_s = 20 }]
min_read_mib_s = 200
min_write_mib_s = 50
io_size_mib = 512
min_free_ram_gib = 8
max_other_vram_share = 0.25
""",
        )
    )
    verify = profile.verify
    assert verify.io == (
        IoCheck("/content/data", 200.0, 50.0),
        IoCheck("/content/drive/MyDrive/ds", 20.0, 50.0),
    )
    assert verify.io_size_mib == 512
    assert verify.min_free_ram_gib == 8.0
    assert verify.max_other_vram_share == 0.25


def test_defaults_when_absent(tmp_path: Path) -> None:
    profile = load_profile(_write(tmp_path, "p.toml", 'name = "x"\n'))
    assert profile.verify.io == () and profile.verify.io_size_mib == 256
    assert profile.verify.max_other_vram_share == 0.1
    assert profile.reproducibility == Reproducibility(None, False)
    assert profile.catalog_paths == ()


def test_reproducibility(tmp_path: Path) -> None:
    profile = load_profile(
        _write(tmp_path, "p.toml", 'name = "x"\n[reproducibility]\nseed = 1234\ndeterministic = true\n')
    )
    assert profile.reproducibility == Reproducibility(1234, True)


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        ('[verify]\nio_paths = ["data"]\n', "verify.io_paths[0]", "not an absolute path"),
        ('[verify]\nio_paths = "/data"\n', "verify.io_paths", "a list of paths"),
        ('[verify]\nio_paths = ["/d", "/d"]\n', "verify.io_paths[1]", "listed twice"),
        ("[verify]\nio_paths = [{ min_read_mib_s = 3 }]\n", "verify.io_paths[0]", "missing path"),
        ('[verify]\nio_paths = [{ path = "/d", speed = 3 }]\n', "verify.io_paths[0].speed", "unknown"),
        ("[verify]\nmin_read_mib_s = inf\n", "verify.min_read_mib_s", "finite"),
        ("[verify]\nmin_write_mib_s = -1\n", "verify.min_write_mib_s", "0 or more"),
        ("[verify]\nio_size_mib = 0\n", "verify.io_size_mib", "from 1 to 65536"),
        ("[verify]\nio_size_mib = 1.5\n", "verify.io_size_mib", "whole number"),
        ("[verify]\nmax_other_vram_share = 2\n", "verify.max_other_vram_share", "too large"),
        ("[reproducibility]\nseed = -1\n", "reproducibility.seed", "from 0 to 4294967295"),
        (
            "[reproducibility]\nseed = 99999999999999999999999\n",
            "reproducibility.seed",
            "from 0 to 4294967295",
        ),
        ('[reproducibility]\ndeterministic = "yes"\n', "reproducibility.deterministic", "true or false"),
        ("[reproducibility]\nsalt = 1\n", "reproducibility.salt", "unknown"),
        ('[catalog]\npaths = ["/abs"]\n', "catalog.paths[0]", "relative to the profile file"),
        ('[catalog]\npaths = "cat"\n', "catalog.paths", "array of strings"),
    ],
)
def test_refusals(tmp_path: Path, text: str, key: str, words: str) -> None:
    with pytest.raises(ProfileError) as caught:
        load_profile(_write(tmp_path, "p.toml", 'name = "x"\n' + text))
    error = caught.value
    assert (error.key or "") == key, str(error)
    assert words in str(error)


@pytest.mark.parametrize(
    ("toml_path", "problem"),
    [
        (r'"/data\nmore"', r'"/data\nmore" contains a line break (U+000A): a path is one line'),
        (r'"/data\r"', r'"/data\r" contains a line break (U+000D): a path is one line'),
        (r'"/da\u001bta"', r'"/da\u001bta" contains a control character (U+001B)'),
        (r'"/da\u0000ta"', r'"/da\u0000ta" contains a NUL character'),
        (r'"/da\u00a0ta"', r'"/da\u00a0ta" contains a character that cannot be shown (U+00A0)'),
        ('"data"', '"data" is not an absolute path (it does not start with /)'),
        ('""', '"" is not an absolute path (it does not start with /)'),
    ],
)
def test_an_io_path_refused_says_what_is_wrong_with_it(tmp_path: Path, toml_path: str, problem: str) -> None:
    for written in (f"io_paths = [{toml_path}]", f"io_paths = [{{ path = {toml_path} }}]"):
        with pytest.raises(ProfileError) as caught:
            load_profile(_write(tmp_path, "p.toml", f'name = "x"\n[verify]\n{written}\n'))
        assert str(caught.value).endswith(f": {problem}")
        assert len(str(caught.value).splitlines()) == 1


def test_catalog_paths_gather_along_the_extends_chain(tmp_path: Path) -> None:
    _write(tmp_path, "golden/base.toml", 'name = "base"\n[catalog]\npaths = ["catalog"]\n')
    child = _write(
        tmp_path,
        "team/team.toml",
        'name = "team"\nextends = "../golden/base.toml"\n[catalog]\npaths = ["overlay", "catalog"]\n',
    )
    profile = load_profile(child)
    assert profile.catalog_paths == (
        tmp_path / "golden" / "catalog",
        tmp_path / "team" / "overlay",
        tmp_path / "team" / "catalog",
    )


def test_new_keys_change_the_profile_hash(tmp_path: Path) -> None:
    plain = load_profile(_write(tmp_path, "a.toml", 'name = "x"\n'))
    seeded = load_profile(_write(tmp_path, "b.toml", 'name = "x"\n[reproducibility]\nseed = 1\n'))
    assert plain.content_hash != seeded.content_hash
