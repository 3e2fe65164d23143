"""colabenv.profile.load: schema 1, extends, hashing, golden lookup, and refusing bad input cleanly."""

from __future__ import annotations

import os
import string
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet

from colabenv._util.reader import MAX_PROBLEMS
from colabenv._util.resources import golden_dir
from colabenv.errors import ColabenvError, ProfileError, UsageError
from colabenv.models import Framework, FrameworkRequest, Installer, InstallSettings, Profile, VerifySettings
from colabenv.profile.files import MAX_PROFILE_BYTES, find_profile, golden_names, golden_path, shadowed_file
from colabenv.profile.load import golden_profiles, load_profile, read_profile_text
from colabenv.profile.sections import TOP_KEYS
from tests.support.paths import DATA, REPO

MALFORMED = DATA / "malformed"

FULL = """\
schema = 1
name = "team-gpu"
description = "  everything at once  "
python = ">=3.10,<3.14"

[frameworks]
torch = { version = ">=2.8,<2.11", variant = "cu126", torchvision = "*", TorchAudio = ">=2.8" }
tensorflow = false
jax = "==0.7.*"

[packages]
requirements = [
    "numpy>=1.26",
    "pandas[performance]; python_version >= '3.11'",
    "pandas<2; python_version < '3.11'",
    "wheelpkg @ https://files.example.org/wheelpkg-1.0-py3-none-any.whl",
    "gitpkg @ git+https://git.example.org/org/gitpkg@v1.0",
    "localpkg @ file:///content/wheels/localpkg-1.0-py3-none-any.whl",
]

[apt]
packages = ["libsndfile1", "ffmpeg=7:4.4.2-0ubuntu0.22.04.1", "g++"]

[env]
PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True"
_UNDERSCORE = ""
MULTI = "line one\\nline two $(not run) `nor this`"

[install]
installer = "uv"
index_url = "https://${PYPI_USER}:${PYPI_TOKEN}@pypi.example.org/simple"
pytorch_index_url = "http://mirror.example.org:8080/pytorch/whl"
extra_index_urls = ["https://${TOKEN}@extra.example.org/simple", "https://[::1]:3141/simple"]

[verify]
smoke = ["jax", "torch"]
require_gpu = true
min_free_vram_gib = 0
timeout_s = 30.5
"""


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def refused(path: Path) -> ProfileError:
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    return info.value


# ---------------------------------------------------------------------------------------------
# Valid profiles


def test_full_profile(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, "team.toml", FULL))
    assert profile.name == "team-gpu"
    assert profile.description == "everything at once"
    assert profile.path == tmp_path / "team.toml"
    assert profile.python == SpecifierSet(">=3.10,<3.14")
    assert [r.framework for r in profile.frameworks] == [Framework.TORCH, Framework.JAX]
    torch = profile.framework(Framework.TORCH)
    assert torch is not None
    assert torch.specifier == SpecifierSet(">=2.8,<2.11")
    assert torch.variant == "cu126"
    assert torch.companions == (
        ("torchaudio", SpecifierSet(">=2.8")),
        ("torchvision", SpecifierSet()),
    )
    jax = profile.framework(Framework.JAX)
    assert jax is not None and jax.specifier == SpecifierSet("==0.7.*") and jax.variant is None
    assert profile.framework(Framework.TENSORFLOW) is None
    assert [r.name for r in profile.requirements] == [
        "numpy",
        "pandas",
        "pandas",
        "wheelpkg",
        "gitpkg",
        "localpkg",
    ]
    assert profile.requirements[4].url == "git+https://git.example.org/org/gitpkg@v1.0"
    assert profile.apt == ("libsndfile1", "ffmpeg=7:4.4.2-0ubuntu0.22.04.1", "g++")
    assert dict(profile.env) == {
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "_UNDERSCORE": "",
        "MULTI": "line one\nline two $(not run) `nor this`",
    }
    assert profile.install.installer is Installer.UV
    assert profile.install.index_url == "https://${PYPI_USER}:${PYPI_TOKEN}@pypi.example.org/simple"
    assert profile.install.pytorch_index_url == "http://mirror.example.org:8080/pytorch/whl"
    assert profile.install.extra_index_urls == (
        "https://${TOKEN}@extra.example.org/simple",
        "https://[::1]:3141/simple",
    )
    assert profile.verify.smoke == (Framework.JAX, Framework.TORCH)
    assert profile.smoke_frameworks == (Framework.JAX, Framework.TORCH)
    assert profile.verify.require_gpu is True
    assert profile.verify.min_free_vram_gib == 0.0
    assert profile.verify.timeout_s == 30.5
    assert profile.content_hash.startswith("sha256:") and len(profile.content_hash) == 71


def test_minimal_profile_has_defaults(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, "min.toml", 'name = "m"\n'))
    assert profile.description == ""
    assert profile.python is None
    assert profile.frameworks == () and profile.requirements == () and profile.apt == ()
    assert profile.env == ()
    assert profile.install.installer is Installer.AUTO and profile.install.index_url is None
    assert profile.verify.smoke is None and profile.verify.require_gpu is False
    assert profile.verify.timeout_s == 120.0 and profile.verify.min_free_vram_gib is None
    assert profile.smoke_frameworks == ()


def test_star_means_any_version_and_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.toml"
    path.write_bytes(b'\xef\xbb\xbfname = "bom"\n[frameworks]\ntensorflow = " * "\n')
    request = load_profile(path).framework(Framework.TENSORFLOW)
    assert request is not None and request.specifier == SpecifierSet()


def test_profile_is_frozen_and_hashable(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, "team.toml", FULL))
    assert isinstance(hash(profile.frameworks), int)
    with pytest.raises(AttributeError):
        profile.name = "other"  # type: ignore[misc]


# ---------------------------------------------------------------------------------------------
# extends


BASE = """\
name = "base"
description = "the base"
python = ">=3.10"

[frameworks]
torch = { version = ">=2.8", variant = "cu126", torchvision = "*", torchaudio = "*" }
jax = ">=0.7.2"

[packages]
requirements = ["numpy", "scipy"]

[env]
A = "from base"
B = "from base"

[verify]
require_gpu = true
timeout_s = 60
"""


def test_extends_child_wins_key_by_key(tmp_path: Path) -> None:
    write(tmp_path, "base.toml", BASE)
    (tmp_path / "team").mkdir()
    child = write(
        tmp_path / "team",
        "child.toml",
        """\
name = "child"
extends = "../base.toml"

[frameworks]
torch = { variant = "cpu", torchaudio = false }
jax = false
tensorflow = "==2.21.*"

[packages]
requirements = ["pandas"]

[env]
B = "from child"
C = "from child"

[verify]
timeout_s = 10
""",
    )
    profile = load_profile(child)
    assert profile.name == "child"
    assert profile.description == "the base"
    assert profile.python == SpecifierSet(">=3.10")
    assert profile.path == child
    torch = profile.framework(Framework.TORCH)
    assert torch is not None
    assert torch.specifier == SpecifierSet(">=2.8")
    assert torch.variant == "cpu"
    assert torch.companions == (("torchvision", SpecifierSet()),)
    assert profile.framework(Framework.JAX) is None
    tensorflow = profile.framework(Framework.TENSORFLOW)
    assert tensorflow is not None and tensorflow.specifier == SpecifierSet("==2.21.*")
    assert [str(r) for r in profile.requirements] == ["pandas"]
    assert dict(profile.env) == {"A": "from base", "B": "from child", "C": "from child"}
    assert profile.verify.require_gpu is True
    assert profile.verify.timeout_s == 10.0


def test_extends_string_replaces_version_only(tmp_path: Path) -> None:
    write(tmp_path, "base.toml", BASE)
    child = write(tmp_path, "c.toml", 'extends = "base.toml"\n[frameworks]\ntorch = "==2.9.*"\n')
    profile = load_profile(child)
    torch = profile.framework(Framework.TORCH)
    assert profile.name == "base"
    assert torch is not None
    assert (torch.specifier, torch.variant) == (SpecifierSet("==2.9.*"), "cu126")


def test_extends_chain_of_three_and_switching_back_on(tmp_path: Path) -> None:
    write(tmp_path, "a.toml", 'name = "a"\n[frameworks]\njax = "==0.7.2"\n')
    write(tmp_path, "b.toml", 'name = "b"\nextends = "a.toml"\n[frameworks]\njax = false\n')
    c = write(tmp_path, "c.toml", 'name = "c"\nextends = "b.toml"\n[frameworks]\njax = "*"\n')
    jax = load_profile(c).framework(Framework.JAX)
    assert jax is not None and jax.specifier == SpecifierSet()


def test_error_in_parent_names_parent_and_child(tmp_path: Path) -> None:
    write(tmp_path, "base.toml", 'name = "b"\n[verify]\nsmoke = ["torch", "torch"]\n')
    error = refused(write(tmp_path, "child.toml", 'name = "c"\nextends = "base.toml"\n'))
    assert error.path == tmp_path / "base.toml"
    assert error.key == "verify.smoke[1]"
    assert str(error).startswith("base.toml: verify.smoke[1]: ")
    assert "extended by child.toml" in str(error)


def test_extends_cycle_of_three(tmp_path: Path) -> None:
    for this, parent in (("a", "b"), ("b", "c"), ("c", "a")):
        write(tmp_path, f"{this}.toml", f'name = "{this}"\nextends = "{parent}.toml"\n')
    error = refused(tmp_path / "a.toml")
    assert error.key == "extends"
    assert "cycle: a.toml -> b.toml -> c.toml -> a.toml" in str(error)


def test_extends_too_deep(tmp_path: Path) -> None:
    for index in range(70):
        write(tmp_path, f"p{index}.toml", f'name = "p{index}"\nextends = "p{index + 1}.toml"\n')
    write(tmp_path, "p70.toml", 'name = "last"\n')
    error = refused(tmp_path / "p0.toml")
    assert error.key == "extends" and "levels of extends" in str(error)


def test_extends_a_loop_of_links_or_a_dangling_link_says_so(tmp_path: Path) -> None:
    (tmp_path / "loop.toml").symlink_to("loop.toml")
    error = refused(write(tmp_path, "c.toml", 'name = "c"\nextends = "loop.toml"\n'))
    assert str(error) == 'c.toml: extends: "loop.toml" is a loop of symbolic links'
    (tmp_path / "gone.toml").symlink_to("nowhere.toml")
    error = refused(write(tmp_path, "d.toml", 'name = "d"\nextends = "gone.toml"\n'))
    assert str(error) == ('d.toml: extends: "gone.toml" is a symbolic link to a file that does not exist')
    error = refused(write(tmp_path, "e.toml", 'name = "e"\nextends = "none.toml"\n'))
    assert str(error) == 'e.toml: extends: "none.toml" not found next to e.toml'


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads anything")
def test_extends_behind_an_unreadable_directory_says_so(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    write(locked, "base.toml", 'name = "b"\n')
    locked.chmod(0)
    try:
        error = refused(write(tmp_path, "c.toml", 'name = "c"\nextends = "locked/base.toml"\n'))
    finally:
        locked.chmod(0o755)
    assert str(error) == 'c.toml: extends: "locked/base.toml" cannot be read: permission denied'


def test_extends_a_directory(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    error = refused(write(tmp_path, "c.toml", 'name = "c"\nextends = "sub"\n'))
    assert error.path == tmp_path / "sub" and "directory" in str(error)


def test_extends_a_bare_name_is_the_shipped_golden_profile(tmp_path: Path) -> None:
    """A team's profile outside this repository extends a golden one by its name, as the
    command line names it; a file of that name beside it does not shadow it."""
    team = tmp_path / "team-repo"
    team.mkdir()
    write(team, "jax.toml", 'name = "not-golden"\n')
    child = write(team, "t.toml", 'name = "team"\nextends = "jax"\n[packages]\nrequirements = ["optax"]\n')
    assert not str(child.resolve()).startswith(str(REPO))
    golden = load_profile(golden_path("jax"))
    profile = load_profile(child)
    assert profile.name == "team"
    assert profile.frameworks == golden.frameworks and profile.frameworks
    assert profile.description == golden.description
    assert [str(r) for r in profile.requirements] == ["optax"]


def test_the_readme_profile_loads_from_a_team_repository(tmp_path: Path) -> None:
    """The README's example, saved in a team's own repository, extends what it says."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    example = readme.split("## A profile", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    team = tmp_path / "team-repo" / "profiles"
    team.mkdir(parents=True)
    profile = load_profile(write(team, "my-project.toml", example))
    assert profile.name == "my-project"
    assert profile.description == load_profile(golden_path("pytorch")).description


def test_extends_a_path_is_a_file_even_with_a_golden_name(tmp_path: Path) -> None:
    write(tmp_path, "jax", 'name = "beside"\ndescription = "a file called jax"\n')
    write(tmp_path, "jax.toml", 'name = "beside-toml"\ndescription = "a file called jax.toml"\n')
    for extends, description in (("./jax", "a file called jax"), ("jax.toml", "a file called jax.toml")):
        child = write(tmp_path, "c.toml", f'name = "c"\nextends = "{extends}"\n')
        assert load_profile(child).description == description
    write(tmp_path, "team-base", 'name = "team-base"\ndescription = "a bare name that is no golden"\n')
    child = write(tmp_path, "c.toml", 'name = "c"\nextends = "team-base"\n')
    assert load_profile(child).description == "a bare name that is no golden"


def test_extends_a_bare_name_that_is_nothing_lists_the_golden_names(tmp_path: Path) -> None:
    error = refused(write(tmp_path, "t.toml", 'name = "t"\nextends = "jaxx"\n'))
    names = ", ".join(golden_names())
    assert str(error) == (
        f't.toml: extends: "jaxx" is neither a golden profile ({names}) nor a file next to t.toml'
    )
    assert error.key == "extends" and "jax" in golden_names()


# ---------------------------------------------------------------------------------------------
# content hash


def test_hash_ignores_order_whitespace_comments_and_spelling(tmp_path: Path) -> None:
    one = write(
        tmp_path,
        "one.toml",
        'name = "h"\n[frameworks]\ntorch = ">=2.8"\njax = "*"\n[env]\nA = "1"\nB = "2"\n',
    )
    two = write(
        tmp_path,
        "two.toml",
        'name = "h"\n# a comment\n[env]\nB   =   "2" # why\nA = "1"\n\n[frameworks]\n'
        'jax = "*"\ntorch = { version = ">=2.8" }\n',
    )
    assert load_profile(one).content_hash == load_profile(two).content_hash


def test_hash_of_child_equals_hash_of_flattened_profile(tmp_path: Path) -> None:
    write(tmp_path, "base.toml", 'name = "x"\n[frameworks]\ntorch = ">=2.8"\n')
    child = write(tmp_path, "child.toml", 'extends = "base.toml"\n[env]\nA = "1"\n')
    flat = write(tmp_path, "flat.toml", 'name = "x"\n[frameworks]\ntorch = ">=2.8"\n[env]\nA = "1"\n')
    assert load_profile(child).content_hash == load_profile(flat).content_hash


def test_hash_changes_with_content(tmp_path: Path) -> None:
    one = write(tmp_path, "one.toml", 'name = "h"\n[frameworks]\ntorch = ">=2.8"\n')
    two = write(tmp_path, "two.toml", 'name = "h"\n[frameworks]\ntorch = ">=2.9"\n')
    assert load_profile(one).content_hash != load_profile(two).content_hash


# ---------------------------------------------------------------------------------------------
# Refusals that need more than a file in the corpus


def test_directory(tmp_path: Path) -> None:
    error = refused(tmp_path)
    assert error.key is None and "is a directory" in str(error)


def test_missing_file(tmp_path: Path) -> None:
    error = refused(tmp_path / "nope.toml")
    assert str(error) == "nope.toml: no such file"


def test_huge_file(tmp_path: Path) -> None:
    path = tmp_path / "huge.toml"
    path.write_text('name = "h"\n' + "# padding\n" * (MAX_PROFILE_BYTES // 10 + 1))
    assert "at most 1 MiB" in str(refused(path))


def test_fifo_is_not_read(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    assert "not a regular file" in str(refused(fifo))


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads anything")
def test_unreadable_file(tmp_path: Path) -> None:
    path = write(tmp_path, "secret.toml", 'name = "s"\n')
    path.chmod(0)
    try:
        assert "cannot read" in str(refused(path))
    finally:
        path.chmod(0o600)


def test_utf32_file(tmp_path: Path) -> None:
    path = tmp_path / "u32.toml"
    path.write_bytes('name = "x"\n'.encode("utf-32"))
    assert "UTF-32" in str(refused(path))


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        (
            'name = "x"\n[frameworks]\njax = { variant = "and-cuda" }\n',
            "frameworks.jax.variant",
            "not a jax variant",
        ),
        (
            'name = "x"\n[frameworks]\ntensorflow = { variant = "cu126" }\n',
            "frameworks.tensorflow.variant",
            "not a tensorflow variant",
        ),
        (
            'name = "x"\n[frameworks]\ntorch = { torch = "*" }\n',
            "frameworks.torch.torch",
            "own companion",
        ),
        (
            'name = "x"\n[frameworks]\ntorch = { torchvision = { version = "*" } }\n',
            "frameworks.torch.torchvision",
            "unknown key",
        ),
        (
            'name = "x"\n[frameworks]\ntorch = { version = "*", torchvison = "*" }\n',
            "frameworks.torch.torchvison",
            "did you mean 'torchvision'?",
        ),
        (
            'name = "x"\n[frameworks]\ntorch = { flash_attn = "*" }\n',
            "frameworks.torch.flash_attn",
            'did you mean [packages] requirements = ["flash_attn"]? a torch table takes version, variant,'
            " torchvision, torchaudio",
        ),
        (
            'name = "x"\n[frameworks]\ntensorflow = { tensorboard = "*" }\n',
            "frameworks.tensorflow.tensorboard",
            "a tensorflow table takes version, variant)",
        ),
        (
            'name = "x"\n[frameworks]\ntorch = { "torch vision" = "*" }\n',
            'frameworks.torch."torch vision"',
            "neither version, variant nor a package name",
        ),
        ('name = "x"\n[frameworks]\ntorch = 2.5\n', "frameworks.torch", "got a number"),
        (
            'name = "x"\n[packages]\nrequirements = ["jaxlib"]\n',
            "packages.requirements[0]",
            "frameworks.jax.jaxlib",
        ),
        (
            'name = "x"\n[packages]\nrequirements = [" "]\n',
            "packages.requirements[0]",
            "empty requirement",
        ),
        (
            'name = "x"\n[packages]\nrequirements = ["p @ ssh://host/p.whl"]\n',
            "packages.requirements[0]",
            "scheme 'ssh' not allowed",
        ),
        (
            'name = "x"\n[packages]\nrequirements = ["p @ file://host/p.whl"]\n',
            "packages.requirements[0]",
            "names no host",
        ),
        ('name = "x"\n[packages]\nother = []\n', "packages.other", "unknown key"),
        (
            'name = "x"\n[packages]\nrequirements = ["p; os_name == \'`id`\'"]\n',
            "packages.requirements[0]",
            "shell characters",
        ),
        ('name = "x"\ndescription = "a\\u2028b"\n', "description", "one line"),
        (
            'name = "x"\n[apt]\npackages = ["curl", "curl=8.5.0-2"]\n',
            "apt.packages[1]",
            "duplicate apt package",
        ),
        ('name = "x"\n[apt]\npackage = ["curl"]\n', "apt.package", "did you mean 'packages'?"),
        (
            'name = "x"\n[apt]\npackages = [' + ", ".join(f'"p{i}"' for i in range(501)) + "]\n",
            "apt.packages",
            "501 apt packages; at most 500",
        ),
        (
            'name = "x"\n[apt]\npackages = ["' + "a" * 201 + '"]\n',
            "apt.packages[0]",
            "longer than 200 characters",
        ),
        (
            'name = "x"\n[env]\ncolabenv_state_dir = "/x"\n',
            "env.colabenv_state_dir",
            "colabenv's own",
        ),
        ('name = "x"\n[env]\n"" = "x"\n', 'env.""', "not an environment variable name"),
        ('name = "x"\n[env]\n"A\\u001b[31m" = "x"\n', 'env."A\\u001b[31m"', "not an environment"),
        (
            'name = "x"\n[install]\nindex_url = "https:///simple"\n',
            "install.index_url",
            "invalid host",
        ),
        (
            'name = "x"\n[install]\nindex_url = "https://a:b:c@host/simple"\n',
            "install.index_url",
            "literal credentials",
        ),
        (
            'name = "x"\n[install]\nindex_url = "https://${1X}@host/simple"\n',
            "install.index_url",
            "literal credentials",
        ),
        (
            'name = "x"\n[install]\nindex_url = "https://host/si mple"\n',
            "install.index_url",
            "percent-encode",
        ),
        (
            'name = "x"\n[install]\nindex_url = "https://host/${A}$B"\n',
            "install.index_url",
            "percent-encode",
        ),
        (
            'name = "x"\n[install]\nextra_index_urls = ["https://h/s", "https://h/s"]\n',
            "install.extra_index_urls[1]",
            "duplicate",
        ),
        (
            'name = "x"\n[install]\nextra_index_urls = "https://h/s"\n',
            "install.extra_index_urls",
            "expected an array",
        ),
        (
            'name = "x"\n[verify]\nmin_free_vram_gib = true\n',
            "verify.min_free_vram_gib",
            "expected a number",
        ),
        ('name = "x"\n[verify]\nmin_free_vram_gib = nan\n', "verify.min_free_vram_gib", "finite"),
        ('name = "x"\n[verify]\ntimeout_s = -1.5\n', "verify.timeout_s", "more than 0"),
        ('name = "x"\n[verify]\nsmoke = "torch"\n', "verify.smoke", "expected an array"),
        ('name = "x"\n[verify]\ntimeout = 5\n', "verify.timeout", "did you mean 'timeout_s'?"),
        ('name = "x"\nschema = true\n', "schema", "the integer 1"),
        ('name = "x"\nschema = "1"\n', "schema", "the integer 1"),
        ('name = ""\n', "name", "not a profile name"),
        (f'name = "{"x" * 65}"\n', "name", "not a profile name"),
        ('name = "x"\ndescription = "' + "d" * 201 + '"\n', "description", "longer than"),
        ('name = "x"\nextends = ""\n', "extends", "path of another profile"),
        ('name = "x"\nextends = 3\n', "extends", "expected a string"),
        ('name = "x"\npython = 3.12\n', "python", "version specifier"),
        ('name = "x"\nNAME = "y"\n', "NAME", "did you mean 'name'?"),
        # PEP 508's grammar for every specifier, as in [packages]
        ('name = "x"\n[frameworks]\ntorch = ">=2.5,,<3"\n', "frameworks.torch", "not a version specifier"),
        (
            'name = "x"\n[frameworks]\njax = { version = ",>=0.5" }\n',
            "frameworks.jax.version",
            "not a version specifier",
        ),
        (
            'name = "x"\n[frameworks]\ntorch = { torchvision = ">=0.2,,<1" }\n',
            "frameworks.torch.torchvision",
            "not a version specifier",
        ),
        ('name = "x"\npython = ">=3.10,,<4"\n', "python", "not a version specifier"),
        # numbers within what they can mean
        ('name = "x"\n[verify]\ntimeout_s = 1e12\n', "verify.timeout_s", "at most 86400"),
        ('name = "x"\n[verify]\ntimeout_s = inf\n', "verify.timeout_s", "finite"),
        ('name = "x"\n[verify]\nmin_free_vram_gib = 1e300\n', "verify.min_free_vram_gib", "at most 4096"),
        ('name = "x"\n[verify]\nmin_free_vram_gib = -inf\n', "verify.min_free_vram_gib", "finite"),
        # [env]: names read before the hook runs, and values that look expanded but are not
        ('name = "x"\n[env]\nPATH = "/opt/bin"\n', "env.PATH", "before Python starts"),
        ('name = "x"\n[env]\nLD_PRELOAD = "/x.so"\n', "env.LD_PRELOAD", "dynamic loader"),
        ('name = "x"\n[env]\nLD_LIBRARY_PATH = "/x"\n', "env.LD_LIBRARY_PATH", "dynamic loader"),
        ('name = "x"\n[env]\nld_audit = "/x"\n', "env.ld_audit", "dynamic loader"),
        ('name = "x"\n[env]\nPYTHONPATH = "/x"\n', "env.PYTHONPATH", "Python reads"),
        ('name = "x"\n[env]\nPYTHONHOME = "/x"\n', "env.PYTHONHOME", "Python reads"),
        ('name = "x"\n[env]\nPYTHONSTARTUP = "/x"\n', "env.PYTHONSTARTUP", "Python reads"),
        ('name = "x"\n[env]\nBASH_ENV = "/x"\n', "env.BASH_ENV", "shell"),
        (
            'name = "x"\n[env]\n"BASH_FUNC_ls%%" = "() { id; }"\n',
            'env."BASH_FUNC_ls%%"',
            "not an environment variable name",
        ),
        ('name = "x"\n[env]\nHOME = "/x"\n', "env.HOME", "before Python starts"),
        ('name = "x"\n[env]\nIFS = ":"\n', "env.IFS", "shell"),
        ('name = "x"\n[env]\nA = "/x:${PATH"\n', "env.A", "not a ${VAR} reference"),
        ('name = "x"\n[env]\nA = "${1X}"\n', "env.A", "not a ${VAR} reference"),
        ('name = "x"\n[env]\nHF_TOKEN = "hf_x"\n', "env.HF_TOKEN", 'use "${HF_TOKEN}"'),
        # direct references and URLs
        (
            'name = "x"\n[packages]\nrequirements = ["p @ https://${U}:${T}@h.example/p.whl"]\n',
            "packages.requirements[0]",
            "not expanded in a direct reference",
        ),
        (
            'name = "x"\n[packages]\nrequirements = ["p @ https://h.example/${V}/p.whl"]\n',
            "packages.requirements[0]",
            "not expanded in a direct reference",
        ),
        (
            'name = "x"\n[packages]\nrequirements = ["p; os_name == \'${X}\'"]\n',
            "packages.requirements[0]",
            "holds shell characters",
        ),
        (
            'name = "x"\n[packages]\nrequirements = ["p @ git+ssh://git@h.example/o/p"]\n',
            "packages.requirements[0]",
            "scheme 'git+ssh' not allowed",
        ),
        (
            'name = "x"\n[install]\nindex_url = "https://h.example/simple?token=abc123"\n',
            "install.index_url",
            "literal secret in the query (token=)",
        ),
        (
            'name = "x"\n[install]\nextra_index_urls = ["https://h.example/s?a=1&API_KEY=k"]\n',
            "install.extra_index_urls[0]",
            "literal secret in the query (API_KEY=)",
        ),
        (
            'name = "x"\n[packages]\nrequirements = ["p @ https://h.example/p.whl?sig=abc"]\n',
            "packages.requirements[0]",
            "literal secret in the query (sig=)",
        ),
        (
            'name = "x"\n[install]\nindex_url = "https://h.example:99999/simple"\n',
            "install.index_url",
            "port 99999",
        ),
        ('name = "x"\n[install]\nindex_url = "https://h.example:0/simple"\n', "install.index_url", "port 0"),
    ],
)
def test_refusals(tmp_path: Path, text: str, key: str, words: str) -> None:
    error = refused(write(tmp_path, "p.toml", text))
    assert error.key == key
    assert words in str(error)
    assert str(error).startswith(f"p.toml: {key}: ")
    assert "\n" not in str(error) and "\x1b" not in str(error)
    for secret in ("abc123", "${T}", "=k"):
        assert secret not in str(error)


@pytest.mark.parametrize(
    ("text", "table", "expected"),
    [
        pytest.param(
            'name = "x"\n[install]\nindex_url = "https://h.example/simple?token=${TOKEN}"\n',
            "install",
            InstallSettings(index_url="https://h.example/simple?token=${TOKEN}"),
            id="index-url-variable-in-query",
        ),
        pytest.param(
            'name = "x"\n[install]\nindex_url = "https://h.example:65535/simple?page=2&sort=asc"\n',
            "install",
            InstallSettings(index_url="https://h.example:65535/simple?page=2&sort=asc"),
            id="index-url-highest-port-and-query",
        ),
        pytest.param(
            'name = "x"\n[env]\nPYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True"\n',
            "env",
            (("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),),
            id="env-colon-in-value",
        ),
        pytest.param(
            'name = "x"\n[env]\nLANG = "C.UTF-8"\nHF_HOME = "/content/hf"\nA = "$5 and {x}"\n',
            "env",
            (("LANG", "C.UTF-8"), ("HF_HOME", "/content/hf"), ("A", "$5 and {x}")),
            id="env-as-written-in-order",
        ),
        pytest.param(
            'name = "x"\n[verify]\ntimeout_s = 86400\nmin_free_vram_gib = 4096\n',
            "verify",
            VerifySettings(timeout_s=86400.0, min_free_vram_gib=4096.0),
            id="verify-largest-bounds",
        ),
        pytest.param(
            'name = "x"\n[frameworks]\ntorch = ">=2.5, <3"\n',
            "frameworks",
            (FrameworkRequest(Framework.TORCH, SpecifierSet(">=2.5,<3")),),
            id="specifier-with-space",
        ),
    ],
)
def test_acceptances_near_the_refusals(tmp_path: Path, text: str, table: str, expected: object) -> None:
    """Values just inside what the loader refuses load as written, and the rest of the profile
    stays at its defaults."""
    profile = load_profile(write(tmp_path, "p.toml", text))
    assert getattr(profile, table) == expected
    defaults = load_profile(write(tmp_path, "defaults.toml", 'name = "x"\n'))
    for other in ("install", "env", "verify", "frameworks", "requirements", "apt", "python"):
        if other != table:
            assert getattr(profile, other) == getattr(defaults, other), other


def test_refused_env_names_are_listed_in_one_place() -> None:
    from colabenv.profile.env import REFUSED_ENV

    assert {"PATH", "HOME", "BASH_ENV", "IFS"} <= set(REFUSED_ENV.names)
    assert {"LD_", "PYTHON"} <= set(REFUSED_ENV.prefixes)
    readme = (REPO / "README.md").read_text()
    assert "LD_*" in readme and "PYTHON*" in readme and "set literally" in readme


def test_long_values_are_shortened_in_messages(tmp_path: Path) -> None:
    error = refused(write(tmp_path, "p.toml", f'name = "x"\npython = "{"y" * 5000}"\n'))
    assert len(str(error)) < 300 and "..." in str(error)


def test_malformed_corpus_errors_are_profile_errors() -> None:
    for path in sorted(MALFORMED.glob("*.toml")):
        if path.name == "expected.toml":
            continue
        with pytest.raises(ProfileError):
            load_profile(path)


# ---------------------------------------------------------------------------------------------
# Every mistake of one read, together


def test_every_mistake_is_reported_one_line_each(tmp_path: Path) -> None:
    error = refused(
        write(
            tmp_path,
            "t.toml",
            'name = "t"\npythn = ">=3.10"\n[frameworks]\ntorch = "2.x"\n'
            '[env]\nPATH = "/opt"\nOK = "1"\n[verify]\ntimeout_s = -1\nrequire_gpu = "yes"\n',
        )
    )
    assert str(error).split("\n") == [
        "t.toml: pythn: unknown key (did you mean 'python'?)",
        't.toml: frameworks.torch: "2.x" is not a version specifier (examples: ">=2.5,<2.7", "==2.6.*", "*")',
        "t.toml: env.PATH: refused: it is read before Python starts and by every child process:"
        " set by the .pth hook, it cannot work from there",
        "t.toml: verify.require_gpu: expected true or false, got a string",
        "t.toml: verify.timeout_s: must be more than 0",
    ]
    assert isinstance(error, ProfileError) and error.exit_code == 2
    assert (error.path, error.key) == (tmp_path / "t.toml", "pythn")


def test_several_mistakes_in_one_table_and_one_list_each_get_a_line(tmp_path: Path) -> None:
    error = refused(
        write(
            tmp_path,
            "t.toml",
            'name = "t"\n[packages]\nrequirements = ["ok", "--index-url x", 3, "ok", "torch"]\n'
            '[apt]\npackages = ["Curl", "curl", "curl"]\n',
        )
    )
    assert [line.split(": ")[1] for line in str(error).split("\n")] == [
        "packages.requirements[1]",
        "packages.requirements[2]",
        "packages.requirements[3]",
        "packages.requirements[4]",
        "apt.packages[0]",
        "apt.packages[2]",
    ]


def test_past_twenty_mistakes_the_rest_are_counted(tmp_path: Path) -> None:
    bad_env = "".join(f'{n}X = "a"\n' for n in range(10))
    bad_apt = ", ".join(f'"Bad{n}"' for n in range(10))
    bad_requirements = ", ".join(f'"-r req{n}.txt"' for n in range(5))
    error = refused(
        write(
            tmp_path,
            "t.toml",
            f'name = "t"\n[packages]\nrequirements = [{bad_requirements}]\n'
            f"[apt]\npackages = [{bad_apt}]\n[env]\n{bad_env}",
        )
    )
    lines = str(error).split("\n")
    assert len(lines) == 21 and lines[-1] == "... and 5 more"
    keys = [line.split(": ")[1] for line in lines[:-1]]
    assert keys == [f"packages.requirements[{n}]" for n in range(5)] + [
        f"apt.packages[{n}]" for n in range(10)
    ] + [f"env.{n}X" for n in range(5)]
    assert all(line.startswith("t.toml: ") for line in lines[:-1])


def test_mistakes_in_a_parent_are_reported_before_its_child_is_merged(tmp_path: Path) -> None:
    write(tmp_path, "base.toml", 'name = "b"\npython = "3"\n[verify]\nsmoke = ["torch", "torch"]\n')
    error = refused(write(tmp_path, "child.toml", 'name = "c"\nextends = "base.toml"\n'))
    assert str(error) == (
        'base.toml: python: "3" is not a version specifier (did you mean "==3" or "==3.*"?)'
        " (extended by child.toml)\n"
        "base.toml: verify.smoke[1]: torch listed twice (extended by child.toml)"
    )


# ---------------------------------------------------------------------------------------------
# Golden profiles and lookup


def test_every_golden_profile_loads_and_is_named_after_its_file() -> None:
    paths = sorted(golden_dir().glob("*.toml"))
    assert {p.stem for p in paths} >= {"pytorch", "jax", "tensorflow", "all-three", "cpu-only"}
    for path in paths:
        profile = load_profile(path)
        assert profile.name == path.stem
        assert profile.description and "\n" not in profile.description
        assert profile.frameworks
        assert "#" in path.read_text(encoding="utf-8"), f"{path.name} has no comments"


def test_golden_profiles_listing() -> None:
    listing = golden_profiles()
    assert [name for name, _, _ in listing] == sorted(name for name, _, _ in listing)
    assert [name for name, _, _ in listing] == list(golden_names())
    for name, description, path in listing:
        assert path == golden_path(name)
        assert description == load_profile(path).description


def test_golden_all_three_stays_where_the_pins_meet() -> None:
    """torch 2.8-2.10 pin NCCL below TF 2.21's floor; TF 2.18/2.19 pin cuDNN below jax 0.6+'s."""
    profile = load_profile(golden_path("all-three"))
    torch = profile.framework(Framework.TORCH)
    jax = profile.framework(Framework.JAX)
    tensorflow = profile.framework(Framework.TENSORFLOW)
    assert torch is not None and jax is not None and tensorflow is not None
    candidates = ["2.6.0", "2.8.0", "2.10.0", "2.11.0", "2.12.0"]
    assert list(torch.specifier.filter(candidates)) == ["2.11.0"]
    assert jax.variant == "cuda12"
    assert not jax.specifier.contains("0.6.2") and jax.specifier.contains("0.7.2")
    assert tensorflow.variant == "and-cuda"
    assert not tensorflow.specifier.contains("2.19.0") and tensorflow.specifier.contains("2.21.0")
    assert profile.python is not None
    assert not profile.python.contains("3.10") and not profile.python.contains("3.14")


def test_golden_cpu_only_needs_no_gpu() -> None:
    profile = load_profile(golden_path("cpu-only"))
    assert profile.verify.require_gpu is False
    assert all(request.variant == "cpu" for request in profile.frameworks)


def test_a_bare_name_is_the_golden_profile_and_a_path_is_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert find_profile("pytorch") == golden_path("pytorch")
    assert shadowed_file("pytorch") is None
    write(tmp_path, "pytorch", 'name = "mine"\n')
    assert find_profile("pytorch") == golden_path("pytorch")
    assert shadowed_file("pytorch") == Path("pytorch")
    assert load_profile(find_profile("./pytorch")).name == "mine"
    write(tmp_path, "team", 'name = "team"\n')
    assert find_profile("team") == Path("team")
    assert shadowed_file("team") is None
    (tmp_path / "jax").mkdir()
    assert find_profile("jax") == golden_path("jax")
    write(tmp_path, "jax.toml", 'name = "local-jax"\n')
    assert load_profile(find_profile("jax.toml")).name == "local-jax"


def test_find_profile_unknown_lists_golden() -> None:
    with pytest.raises(UsageError) as info:
        find_profile("../nope")
    for name in ("all-three", "cpu-only", "jax", "pytorch", "tensorflow"):
        assert name in str(info.value)
    assert info.value.exit_code == 2


def test_golden_path_rejects_paths() -> None:
    with pytest.raises(UsageError):
        golden_path("../golden/pytorch")


def test_read_profile_text_is_the_file() -> None:
    path = golden_path("jax")
    assert read_profile_text(path) == path.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Property tests: anything in, a Profile or a ProfileError out


def _check_outcome(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "fuzz.toml"
        path.write_bytes(data)
        try:
            profile = load_profile(path)
        except ProfileError as error:
            event(f"error at {error.key or 'file level'}")
            lines = str(error).split("\n")
            event(f"{min(len(lines), 3)} or more lines" if len(lines) >= 3 else f"{len(lines)} line(s)")
            if lines[-1].startswith("... and "):
                assert len(lines) == MAX_PROBLEMS + 1
                lines.pop()
            assert 1 <= len(lines) <= MAX_PROBLEMS
            assert len(set(lines)) == len(lines)
            for line in lines:
                assert line.startswith("fuzz.toml: ") or "extended by fuzz.toml" in line
                assert line.isprintable()
            return
        event("valid profile")
        assert isinstance(profile, Profile)
        assert profile.content_hash.startswith("sha256:")


SCHEMA_WORDS = [
    *TOP_KEYS,
    "torch",
    "tensorflow",
    "jax",
    "version",
    "variant",
    "torchvision",
    "requirements",
    "packages",
    "installer",
    "index_url",
    "pytorch_index_url",
    "extra_index_urls",
    "smoke",
    "require_gpu",
    "min_free_vram_gib",
    "timeout_s",
    "PATH",
    "A B",
]
SCHEMA_VALUES = [
    "*",
    ">=2.5",
    "2.x",
    "cu126",
    "cpu",
    "cuda12",
    "and-cuda",
    "numpy",
    "--index-url x",
    "https://h/simple",
    "https://u:p@h/s",
    "https://${U}@h/s",
    "uv",
    "pip",
    "torch",
    "1",
    "",
    "team",
    "../x.toml",
    "x.toml",
]
REQUIREMENT_VALUES = [
    *SCHEMA_VALUES,
    "numpy>=1",
    "p @ https://h/p.whl",
    "p @ file:///p.whl",
    "numpy; $(id)",
]
keys = st.one_of(st.sampled_from(SCHEMA_WORDS), st.text(max_size=8))
scalars = st.one_of(
    st.sampled_from(SCHEMA_VALUES),
    st.text(max_size=12),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
)
documents = st.dictionaries(
    keys,
    st.recursive(
        scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
        max_leaves=12,
    ),
    max_size=6,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_arbitrary_toml_documents(document: dict[str, object]) -> None:
    import tomlkit

    try:
        text = tomlkit.dumps(document)
    except Exception:  # tomlkit cannot write every dict (e.g. mixed arrays of tables)
        return
    _check_outcome(text.encode("utf-8"))


specifiers = st.sampled_from(["*", ">=2.5", "==0.7.*", " * ", ">=1,<0"] * 3 + ["2.x", "", "latest"])
framework_values = st.one_of(
    specifiers,
    st.booleans(),
    st.fixed_dictionaries(
        {},
        optional={
            "version": specifiers,
            "variant": st.sampled_from(["cpu", "cu126", "cuda12", "and-cuda", "rocm"]),
            "torchvision": st.one_of(specifiers, st.just(False)),
            "jaxlib": specifiers,
            "verison": specifiers,
        },
    ),
)
near_valid = st.fixed_dictionaries(
    {"name": st.sampled_from(["team"] * 8 + ["t.x-1_2", "bad name", ""])},
    optional={
        "schema": st.sampled_from([1] * 8 + [2, True]),
        "description": st.sampled_from(["one line"] * 8 + ["two\nlines", ""]),
        "python": specifiers,
        "frameworks": st.dictionaries(
            st.sampled_from(["torch", "tensorflow", "jax", "pytorch"]), framework_values
        ),
        "packages": st.fixed_dictionaries(
            {}, optional={"requirements": st.lists(st.sampled_from(REQUIREMENT_VALUES))}
        ),
        "apt": st.fixed_dictionaries(
            {}, optional={"packages": st.lists(st.sampled_from(["curl", "g++", "Curl", "a=1.0"]))}
        ),
        "env": st.dictionaries(
            st.sampled_from(["A", "B_1", "A B", "COLABENV_X", "1X"]),
            st.one_of(st.text(max_size=5), st.integers()),
        ),
        "install": st.fixed_dictionaries(
            {},
            optional={
                "installer": st.sampled_from(["auto", "uv", "pip", "conda"]),
                "index_url": st.sampled_from(SCHEMA_VALUES),
                "extra_index_urls": st.lists(st.sampled_from(SCHEMA_VALUES), max_size=3),
            },
        ),
        "verify": st.fixed_dictionaries(
            {},
            optional={
                "smoke": st.lists(st.sampled_from(["torch", "jax", "tensorflow", "pytorch"])),
                "require_gpu": st.one_of(st.booleans(), st.just("yes")),
                "min_free_vram_gib": st.one_of(st.floats(), st.integers()),
                "timeout_s": st.one_of(st.floats(), st.integers(min_value=-5, max_value=10**30)),
            },
        ),
    },
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(near_valid)
def test_near_valid_documents(document: dict[str, object]) -> None:
    import tomlkit

    _check_outcome(tomlkit.dumps(document).encode("utf-8"))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes(data: bytes) -> None:
    _check_outcome(data)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=string.printable + "é€\u0000\u202e", max_size=300))
def test_arbitrary_text(text: str) -> None:
    _check_outcome(('name = "t"\n' + text).encode("utf-8"))


def test_errors_are_colabenv_errors_with_exit_code_2(tmp_path: Path) -> None:
    error = refused(write(tmp_path, "p.toml", "name = 1\n"))
    assert isinstance(error, ColabenvError) and error.exit_code == 2


# ---------------------------------------------------------------------------------------------
# Pure after reading the files; one reader's messages


def test_profiles_are_read_without_the_parsed_toml_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache is for the shipped catalog: reading a profile writes nothing anywhere."""
    from colabenv._util import cache as cache_module

    cache = tmp_path / "cache"
    monkeypatch.setenv("COLABENV_CACHE_DIR", str(cache))

    def no_cache(*_: object) -> object:
        raise AssertionError("a profile went through the parsed-TOML cache")

    monkeypatch.setattr(cache_module, "parsed_toml", no_cache)
    parent = write(tmp_path, "base.toml", 'name = "base"\n[frameworks]\ntorch = "*"\n')
    child = write(tmp_path, "child.toml", f'name = "child"\nextends = "{parent.name}"\n')
    assert load_profile(child).name == "child"
    assert load_profile(golden_path("pytorch")).name == "pytorch"
    assert not cache.exists()


def test_a_paths_own_zero_threshold_beats_the_shared_one(tmp_path: Path) -> None:
    """``min_read_mib_s = 0`` on one path means no minimum there, not "use the shared one"."""
    profile = load_profile(
        write(
            tmp_path,
            "p.toml",
            """\
name = "x"
[verify]
min_read_mib_s = 200
min_write_mib_s = 50
io_paths = ["/a", { path = "/b", min_read_mib_s = 0 }, { path = "/c", min_write_mib_s = 7 }]
""",
        )
    )
    thresholds = [(c.path, c.min_read_mib_s, c.min_write_mib_s) for c in profile.verify.io]
    assert thresholds == [("/a", 200, 50), ("/b", 0, 50), ("/c", 200, 7)]


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        ('name = "x"\n[verify]\ntimeout_s = "5"\n', "verify.timeout_s", "expected a number, got a string"),
        (
            'name = "x"\n[verify]\nio_size_mib = 2.5\n',
            "verify.io_size_mib",
            "expected a whole number, got a number",
        ),
        (
            'name = "x"\n[verify]\nio_paths = [{ path = 5 }]\n',
            "verify.io_paths[0].path",
            "expected a string, got an integer",
        ),
        (
            'name = "x"\n[verify]\nio_paths = [5]\n',
            "verify.io_paths[0]",
            "expected a path or a table with path, got an integer",
        ),
        (
            'name = "x"\n[apt]\npackages = ["curl", 1]\n',
            "apt.packages[1]",
            "expected a string, got an integer",
        ),
        ('name = "x"\n[install]\nindex_url = []\n', "install.index_url", "expected a string, got an array"),
        (
            'name = "x"\n[reproducibility]\nseed = "1"\n',
            "reproducibility.seed",
            "expected a whole number, got a string",
        ),
        ('name = "x"\n["odd key"]\na = 1\n', '"odd key"', "unknown key (expected one of:"),
    ],
)
def test_type_errors_say_what_was_expected_and_found(
    tmp_path: Path, text: str, key: str, message: str
) -> None:
    error = refused(write(tmp_path, "p.toml", text))
    assert error.key == key
    assert str(error).startswith(f"p.toml: {key}: {message}")
