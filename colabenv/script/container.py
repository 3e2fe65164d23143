"""An install plan + its rendered bootstrap script -> a Dockerfile or an Apptainer definition. No I/O.

The image runs the very script ``colabenv render`` prints, copied in as ``setup.sh``: one
script, tested once, for the notebook and the image. The definition records the script's
SHA-256 and the build refuses any other ``setup.sh``, so a Dockerfile and a script rendered
from different inputs never make an image together. The script is a file beside the
definition rather than a ``RUN <<EOF`` here-document: that needs Dockerfile syntax 1.4 or newer
(``# syntax=docker/dockerfile:1.4``, a frontend image BuildKit pulls from Docker Hub, which a
cluster without the internet cannot), Apptainer has no such form, and a file stays byte for
byte the one ``colabenv render`` prints.

What the image is, and why:

- The base is the table's (``base_images.toml``, each entry with its source) for the target's
  platform, accelerator kind, ROCm and Python; for x86-64 and aarch64 (CPU, NVIDIA) a slim
  Python image of the target's Python (``python:3.12-slim-bookworm``, pinned by tag): the
  framework wheels bring their CUDA libraries (cuDNN, cuBLAS, NCCL ... as
  ``nvidia-*`` wheels), so only the NVIDIA driver comes from the host (``docker run --gpus
  all``, ``apptainer --nv``) and no CUDA base image is needed. Bookworm is the Debian closest
  to the Ubuntu 22.04 of Colab and Kaggle (glibc 2.36 against 2.35), and every Python from
  3.10 to 3.14 has a slim bookworm image. ``FROM`` names the target's platform: the wheels
  were resolved for it. For AMD GPUs it is AMD's ROCm image of the target's ROCm, whose
  ``python3`` is the distribution's (marked EXTERNALLY-MANAGED): pip and uv are told to install
  into it all the same (``PIP_BREAK_SYSTEM_PACKAGES``, ``UV_BREAK_SYSTEM_PACKAGES``), as the
  image is the environment. A target the table has no entry for is exit 2, naming the entries;
  a free-threaded Python has none (no official python image is), so it needs ``--base-image``,
  whose ``python3`` the build checks for ``Py_GIL_DISABLED``.
- colabenv goes in first, the way the notebook's first cell installs it before running the
  script: a wheel in the build folder, checked by its SHA-256 (the colabenv that rendered the
  definition, made into a wheel from its own installed files, or ``--colabenv-wheel``'s), so
  the image needs no colabenv release on any index, holds what the notebook held, and
  ``colabenv verify`` runs in it with no flags. Its ``uv`` dependency is then beside
  ``python3``, where the script's ``auto`` installer finds it.
- The script runs as it runs on a notebook, told what differs by variables it already
  honours: ``COLABENV_STATE_DIR`` (a fixed state directory, kept in the image's environment so
  that ``verify`` finds the restart marker) and ``COLABENV_SKIP_PREFLIGHT`` (a build host has
  no NVIDIA driver; that variable skips the Python check too, so the definition checks the
  Python itself), with the installers' own no-cache switches. As root, its apt step needs no
  sudo.
- ``[env]`` becomes ``ENV`` (``%environment``) as well as the ``.pth`` hook the script writes,
  so that processes other than Python see it too. A value must be one printable line: a
  Dockerfile cannot hold a line break in a value, and in a definition file a line break could
  start a new section. A value with ``${VAR}`` references, and any value of a secret-like name
  (:data:`colabenv.profile.env.SECRET_NAME_PARTS`), is left to the hook, which expands it from
  the container's environment when Python starts (``docker run -e HF_TOKEN``): an ``ENV`` would
  bake it into the image. A name hadolint's DL3064 flags (:data:`DL3064_PARTS`:
  ``TOKENIZERS_PARALLELISM``) is left out of the Dockerfile's ``ENV`` too; a comment names them.
- Index URLs that need ``${VAR}`` get their variables as build secrets (BuildKit and buildah
  ``RUN --mount=type=secret``; for Apptainer, files beside the definition that ``%post``
  reads and removes), never as build arguments, which image history keeps.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator, Sequence

from colabenv.accelerators.registry import accelerator, accelerator_of
from colabenv.errors import ProfileError, UsageError, printable
from colabenv.models import Accelerator, BaseImage, Profile, Target
from colabenv.models.base import FREE_THREADED_SINCE, TextEnum
from colabenv.models.frozen import model, record
from colabenv.profile.env import is_secret_name, references
from colabenv.script.bash import q
from colabenv.script.plan import InstallPlan, installed_target, installed_target_line


class ImageFormat(TextEnum):
    DOCKERFILE = "dockerfile"
    APPTAINER = "apptainer"


SCRIPT_NAME = "setup.sh"
FILE_NAMES = {ImageFormat.DOCKERFILE: "Dockerfile", ImageFormat.APPTAINER: "apptainer.def"}
STATE_DIR = "/var/lib/colabenv"
WORK_DIR = "/opt/colabenv-build"
"""Where the build keeps setup.sh (and the colabenv wheel, secrets) until the script has run."""
SECRETS_DIR = "secrets"
"""Apptainer: the folder beside the definition holding one file per index URL variable."""
BASE_IMAGE = "python:{python}-slim-bookworm"
"""The base where no table is given (the table's entry for x86-64 without ROCm)."""
BREAK_SYSTEM_PACKAGES = "PIP_BREAK_SYSTEM_PACKAGES=1 UV_BREAK_SYSTEM_PACKAGES=1 "
"""Before pip and the script where the base's python3 is marked EXTERNALLY-MANAGED (PEP 668)."""
MIN_PYTHON = (3, 10)
"""colabenv itself runs in the image, so the target's Python must be one colabenv runs on."""

_PLATFORMS = {"x86_64": "amd64", "aarch64": "arm64", "ppc64le": "ppc64le", "s390x": "s390x"}
_IMAGE_RE = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::[0-9]{1,5})?/)?"
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?",
    re.ASCII,
)
_TEMPLATE_RE = re.compile(r"\{\{\s*\w+\s*\}\}")
"""What ``apptainer build`` replaces with a ``--build-arg`` value, anywhere in a definition."""


@model
class ColabenvWheel:
    """The colabenv wheel in the build folder that the image installs: the rendering colabenv's
    own (``colabenv._util.own_wheel``), or the one ``--colabenv-wheel`` names."""

    name: str
    sha256: str


@model
class _Image:
    """What either definition says, before it is written in its syntax."""

    comments: tuple[str, ...]
    base_image: str
    platform: str
    python: str
    free_threaded: bool
    """A free-threaded Python (3.14t): the build checks its ``python3`` for ``Py_GIL_DISABLED``."""
    accelerator: Accelerator
    externally_managed: bool
    note: str
    labels: tuple[tuple[str, str], ...]
    env: tuple[tuple[str, str], ...]
    """The ``[env]`` pairs for ``ENV`` (``%environment``): not those :func:`_hook_only` names."""
    hook_only: tuple[str, ...]
    secrets: tuple[str, ...]
    script_sha256: str
    wheel: ColabenvWheel


@record
class _Syntax:
    """What differs between the formats: their words for the same build, as data; ``body``
    writes the instructions after the comments that every definition opens with."""

    title: tuple[str, str]
    """The first two comment lines, ``{version}`` filled in."""
    host_driver: str
    build: tuple[str, ...]
    """How to build, ``{name}`` (the file), ``{platform}`` and ``{arch}`` (the build tool's
    option for an architecture other than amd64, with a space before it; none for amd64)
    filled in."""
    other_arch: tuple[str, ...]
    """What building for another architecture than amd64 needs, ``{arch}`` (``arm64``) filled in."""
    secrets: str
    """The build's secrets, ``{secrets}`` filled in with ``secret`` of each, joined by ``join``."""
    secret: str
    join: str
    check: str
    secret_path: str
    """Where a secret is read from while the script runs, ``{name}`` filled in."""
    secret_hint: str
    opening: Callable[[_Image], Iterator[str]]
    body: Callable[[_Image, Sequence[str], Sequence[str]], Iterator[str]]
    """``(image, the install's commands, the script's)`` -> the instructions."""
    templates_refused: bool
    """Whether ``{{ ... }}`` is refused anywhere (apptainer build would replace it)."""


def is_image_reference(text: str) -> bool:
    """``[registry[:port]/]name[:tag][@sha256:digest]``, the grammar ``FROM`` accepts."""
    return len(text) <= 512 and _IMAGE_RE.fullmatch(text) is not None


def check_wheel_name(name: str, colabenv_version: str) -> str | None:
    """Why ``name`` cannot be the colabenv wheel for this version; None when it can."""
    match = re.fullmatch(r"colabenv-([0-9A-Za-z.+!_]+)-py3-none-any\.whl", name)
    if match is None:
        return "not a colabenv wheel file name (colabenv-VERSION-py3-none-any.whl)"
    if match.group(1) != colabenv_version:
        return (
            f"is colabenv {match.group(1)}, but this is colabenv {colabenv_version}: render "
            "with the colabenv that goes into the image"
        )
    return None


def _docker_platform(platform: str) -> str | None:
    system, _, machine = platform.partition("_")
    if system != "linux" or machine not in _PLATFORMS:
        return None
    return f"linux/{_PLATFORMS[machine]}"


def _frameworks_text(frameworks: dict[str, dict[str, object]]) -> str:
    return (
        ", ".join(f"{name} {item.get('version')} {item.get('variant')}" for name, item in frameworks.items())
        or "none"
    )


def _secret_names(plan: InstallPlan) -> tuple[str, ...]:
    from colabenv.index.urls import reference_names

    names: dict[str, None] = {}
    for url in plan.index_urls:
        names.update(dict.fromkeys(reference_names(url)))
    return tuple(names)


def _checked_env(
    profile: Profile, env: Sequence[tuple[str, str]], templates_refused: bool
) -> tuple[tuple[str, str], ...]:
    """The ``[env]`` pairs for ``ENV`` (``%environment``): every value checked, those with
    ``${VAR}`` references and those of secret-like names left out (the hook sets them)."""
    for name, value in env:
        if not value.isprintable():
            raise ProfileError(
                profile.path,
                f"env.{name}",
                (
                    f"a value for a container image must be one printable line: "
                    f"{printable(value)} has a line break or a control character"
                ),
            )
        if templates_refused and _TEMPLATE_RE.search(value):
            raise ProfileError(
                profile.path,
                f"env.{name}",
                ("holds {{ ... }}, which apptainer build would replace with a --build-arg value"),
            )
    return tuple(env)


def _hook_only(name: str, value: str) -> bool:
    """Whether an ``[env]`` pair is left to the ``.pth`` hook alone: a value with ``${VAR}``
    references (expanded from the container's environment when Python starts) or a name that
    says it holds a secret. An ``ENV`` or ``%environment`` line would bake a secret into the
    image, or hold the reference unexpanded."""
    return bool(references(value)) or is_secret_name(name)


DL3064_PARTS = ("api_key", "client_key", "password", "private", "secret", "token", "username")
"""What in an ``ENV`` name hadolint's DL3064 ("Potentially sensitive data should not be used in
the ARG or ENV commands", a warning by default) flags, compared lower-case anywhere in the name
(``TOKENIZERS_PARALLELISM`` too): such a name is left out of the Dockerfile's ``ENV`` and set
by the hook alone."""


def _dl3064_flags(name: str) -> bool:
    return any(part in name.lower() for part in DL3064_PARTS)


def _base(target: Target, images: Sequence[BaseImage] | None) -> BaseImage:
    """The table's entry for the target; without a table, the slim Python image (x86-64). A
    free-threaded Python has none unless an entry lists it (``3.14t``): no official python
    image is free-threaded (docs/containers.md)."""
    platform, accelerator = target.platform, accelerator_of(target).kind.value
    rocm_text = str(target.rocm) if target.rocm is not None else None
    python = target.python_shown
    for entry in images or ():
        if entry.serves(platform, accelerator, rocm_text, python):
            return entry
    if target.free_threaded:
        raise UsageError(
            f"no base image for a free-threaded Python ({python}) in the table (base_images.toml; "
            "the official python images have none): give --base-image IMAGE with a free-threaded CPython"
        )
    if images is None:
        return BaseImage((platform,), (accelerator,), BASE_IMAGE, "")
    wanted = f"{printable(platform)}, {printable(accelerator)}"
    if rocm_text is not None:
        wanted += f", ROCm {printable(rocm_text)}"
    has = "; ".join(entry.described() for entry in images)
    raise UsageError(
        f"no base image for this target ({wanted}, Python {printable(python)}) in base_images.toml,"
        f" which has: {has}; give --base-image IMAGE"
    )


def _image(
    plan: InstallPlan,
    script: str,
    syntax: _Syntax,
    wheel: ColabenvWheel,
    base_image: str | None,
    images: Sequence[BaseImage] | None = None,
) -> _Image:
    resolution = plan.resolution
    marker = json.loads(plan.marker)
    target: dict[str, object] = marker["target"]
    python = str(target["python"])
    parts = tuple(int(p) for p in python.split(".")[:2])
    if parts < MIN_PYTHON:
        raise UsageError(
            f"a container image needs a target Python of 3.10 or newer, where "
            f"colabenv itself runs; this target's is {python}"
        )
    platform = _docker_platform(str(target["platform"]))
    if platform is None:
        raise UsageError(
            f"a container image runs Linux, and this target's platform is "
            f"{printable(target['platform'])}: render on the Linux host the "
            "image is for, or give its target flags there"
        )
    if base_image is not None and not is_image_reference(base_image):
        raise UsageError(
            f"--base-image: {printable(base_image)} is not an image reference "
            "([registry/]name[:tag][@sha256:digest])"
        )
    installed = installed_target(plan.resolution, plan.lock)
    base = _base(installed, images) if base_image is None else None
    required = plan.required_driver
    frameworks = _frameworks_text(marker["frameworks"])
    target_json = json.dumps(target, sort_keys=True, separators=(",", ":"))
    labels = [
        ("colabenv.profile", resolution.profile_name),
        ("colabenv.profile-hash", resolution.profile_hash),
        ("colabenv.target", target_json),
        ("colabenv.frameworks", frameworks),
        ("colabenv.version", plan.colabenv_version),
    ]
    if required is not None:
        labels.append(("colabenv.required-driver", required))
    comments = [
        f"profile: {resolution.profile_name} ({resolution.profile_hash})",
        f"target: {installed_target_line(plan)}",
        f"frameworks: {frameworks}",
    ]
    if plan.lock_name is not None:
        labels.append(("colabenv.lock", printable(plan.lock_name)))
        comments.append(f"installs exactly the lockfile {printable(plan.lock_name)}, hash-checked")
    if required is not None:
        comments.append(f"needs NVIDIA driver >= {required} on the host that runs it")
    comments.extend(f"warning: {printable(warning)}" for warning in resolution.warnings)
    return _Image(
        comments=tuple(comments),
        base_image=base_image or (base.image if base is not None else BASE_IMAGE).format(python=python),
        platform=platform,
        python=python,
        free_threaded=installed.free_threaded,
        accelerator=accelerator_of(installed).kind,
        externally_managed=base is not None and base.externally_managed,
        note=base.note if base is not None else "",
        labels=tuple(labels),
        env=tuple(
            (name, value)
            for name, value in _checked_env(plan.profile, resolution.env, syntax.templates_refused)
            if not _hook_only(name, value)
        ),
        hook_only=tuple(name for name, value in resolution.env if _hook_only(name, value)),
        secrets=_secret_names(plan),
        script_sha256=hashlib.sha256(script.encode("utf-8")).hexdigest(),
        wheel=wheel,
    )


# ---------------------------------------------------------------------------------------------
# The build's shell commands, the same in both formats


def _python_check(python: str, free_threaded: bool) -> str:
    """The build's check of the base's ``python3``: Python X.Y and, from 3.13 (the first with a
    free-threaded build), ``Py_GIL_DISABLED`` set for a free-threaded target and unset for one
    with the GIL, whose cp3XY wheels a 3.13t cannot load (the script's preflight, which would
    check both, is skipped there)."""
    major, minor = python.split(".")[:2]
    imports, test, shown = "import sys", f"sys.version_info[:2] == ({major}, {minor})", python
    if free_threaded:
        imports += "; import sysconfig"
        test += " and sysconfig.get_config_var('Py_GIL_DISABLED')"
        shown = f"{python}t (free-threaded)"
    elif int(major) == 3 and int(minor) >= FREE_THREADED_SINCE:
        imports += "; import sysconfig"
        test += " and not sysconfig.get_config_var('Py_GIL_DISABLED')"
        shown = f"{python} with the GIL"
    message = f"python3 here is not Python {shown}, which the profile was resolved for"
    return f'python3 -c "{imports}; sys.exit(0 if {test} else {message!r})"'


def _hash_check(path: str, sha256: str, problem: str) -> list[str]:
    listing = f"{path}.sha256"
    return [
        f"echo '{sha256}  {path}' > {listing}",
        f"{{ sha256sum --check --strict {listing} || {{ echo {q(problem)} >&2; exit 1; }}; }}",
    ]


def _colabenv_install(image: _Image) -> list[str]:
    pip = "PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip install --no-cache-dir"
    if image.externally_managed:
        pip = BREAK_SYSTEM_PACKAGES + pip
    path = f"{WORK_DIR}/{image.wheel.name}"
    problem = f"colabenv: {image.wheel.name} is not the wheel this definition was rendered with"
    return [
        _python_check(image.python, image.free_threaded),
        *_hash_check(path, image.wheel.sha256, problem),
        f"{pip} {path}",
        f"rm -f {path} {path}.sha256",
    ]


def _script_run(image: _Image, secret_path: str, secret_hint: str) -> list[str]:
    script = f"{WORK_DIR}/{SCRIPT_NAME}"
    problem = (
        f"colabenv: {SCRIPT_NAME} is not the script this definition was rendered with: "
        "render both again with one command (colabenv render PROFILE --format ... -o DIR)"
    )
    commands = _hash_check(script, image.script_sha256, problem)
    for name in image.secrets:
        path = secret_path.format(name=name)
        missing = f"colabenv: the index URLs need {name}: {secret_hint.format(name=name)}"
        commands.append(
            f'if [ -f {path} ]; then {name}="$(cat {path})"; export {name}; '
            f"else echo {q(missing)} >&2; exit 1; fi"
        )
    commands.append(
        (BREAK_SYSTEM_PACKAGES if image.externally_managed else "")
        + f"COLABENV_STATE_DIR={STATE_DIR} COLABENV_SKIP_PREFLIGHT=1 PIP_NO_CACHE_DIR=1 "
        f"UV_NO_CACHE=1 PIP_ROOT_USER_ACTION=ignore bash {script}"
    )
    commands.append(f"rm -rf {WORK_DIR} /var/lib/apt/lists/*")
    return commands


# ---------------------------------------------------------------------------------------------
# The two syntaxes


def _docker_word(value: str) -> str:
    """``value`` as one double-quoted Dockerfile word, read back exactly by the Dockerfile lexer
    (BuildKit's and buildah's): there a backslash escapes only ``"``, ``$`` and a backslash,
    and stays as it is before any other character. So ``"`` and ``$`` are escaped (nothing is
    substituted), and a backslash only where it would otherwise escape what follows it (another
    backslash, ``"``, ``$``, or the closing quote); the others are left alone, since hadolint's
    parser misreads an escaped backslash before a quote or a space."""
    out = []
    for index, char in enumerate(value):
        if char in '"$':
            out.append("\\" + char)
        elif char == "\\":
            following = value[index + 1 : index + 2]
            out.append("\\\\" if following in ("", "\\", '"', "$") else char)
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _comment(text: str) -> str:
    """One comment line: control characters escaped, and never a trailing backslash."""
    safe = printable(text).rstrip()
    return f"# {safe} ." if safe.endswith("\\") else f"# {safe}".rstrip()


def _continued(lines: Sequence[str]) -> Iterator[str]:
    """One instruction over several lines: each but the last ends with a continuation."""
    for index, line in enumerate(lines):
        yield line + (" \\" if index < len(lines) - 1 else "")


def _run(commands: Sequence[str], mounts: Sequence[str] = ()) -> Iterator[str]:
    """``RUN [mounts] first && second && ...``, a command a line."""
    heads = [*mounts, commands[0]]
    lines = [("RUN " if i == 0 else "    ") + head for i, head in enumerate(heads)]
    lines.extend(f" && {command}" for command in commands[1:])
    yield from _continued(lines)


def _docker_body(image: _Image, install: Sequence[str], run: Sequence[str]) -> Iterator[str]:
    yield "# the platform the wheels were resolved for"
    yield "# hadolint ignore=DL3029"
    yield f"FROM --platform={image.platform} {image.base_image}"
    yield ""
    labels = [f"{key}={_docker_word(value)}" for key, value in image.labels]
    yield from _continued([f"LABEL {labels[0]}", *(f"      {label}" for label in labels[1:])])
    yield ""
    yield f"ENV COLABENV_STATE_DIR={STATE_DIR}"
    yield ""
    yield f"COPY {image.wheel.name} {WORK_DIR}/{image.wheel.name}"
    yield from _run(install)
    yield ""
    yield f"COPY {SCRIPT_NAME} {WORK_DIR}/{SCRIPT_NAME}"
    yield from _run(run, [f"--mount=type=secret,id={name}" for name in image.secrets])
    env = [(name, value) for name, value in image.env if not _dl3064_flags(name)]
    hook_only = [*image.hook_only, *(name for name, _ in image.env if _dl3064_flags(name))]
    if hook_only:
        yield ""
        yield _comment(f"[env] set by the .pth hook when Python starts, not by ENV: {', '.join(hook_only)}")
    if env:
        yield ""
        pairs = [f"{name}={_docker_word(value)}" for name, value in env]
        yield from _continued([f"ENV {pairs[0]}", *(f"    {pair}" for pair in pairs[1:])])
    yield ""
    yield 'CMD ["colabenv", "verify"]'


def _apptainer_opening(image: _Image) -> Iterator[str]:
    yield "Bootstrap: docker"
    yield f"From: {image.base_image}"
    yield ""


def _apptainer_body(image: _Image, install: Sequence[str], run: Sequence[str]) -> Iterator[str]:
    """``%files`` names its sources relative to the folder ``apptainer build`` runs in (the
    build folder); ``%post`` runs in a clean environment, so what the script needs is set
    there; ``%environment`` is sourced by ``/bin/sh`` when the container starts."""
    yield "%labels"
    for key, value in image.labels:
        yield f"    {key} {value}"
    yield ""
    yield "%files"
    yield f"    {image.wheel.name} {WORK_DIR}/{image.wheel.name}"
    yield f"    {SCRIPT_NAME} {WORK_DIR}/{SCRIPT_NAME}"
    for secret in image.secrets:
        yield f"    {SECRETS_DIR}/{secret} {WORK_DIR}/{SECRETS_DIR}/{secret}"
    yield ""
    yield "%post"
    yield "    set -eu"
    yield from (f"    {command}" for command in (*install, *run))
    yield ""
    yield "%environment"
    yield f"    export COLABENV_STATE_DIR={STATE_DIR}"
    yield "    export PYTHONNOUSERSITE=1"
    for variable, value in image.env:
        yield f"    export {variable}={q(value)}"
    yield ""
    yield "%runscript"
    yield '    exec colabenv verify "$@"'
    yield ""
    yield "%test"
    yield "    colabenv verify"


def _nothing(image: _Image) -> Iterator[str]:
    return iter(())


_SYNTAXES = {
    ImageFormat.DOCKERFILE: _Syntax(
        title=(
            "Dockerfile generated by colabenv {version}. Do not edit: re-render it",
            "with setup.sh beside it: colabenv render PROFILE --format dockerfile -o DIR",
        ),
        host_driver="only the NVIDIA driver comes from the host.",
        build=("build: docker build -t IMAGE DIR",),
        # FROM --platform makes the image the target's; its RUN steps run that architecture's code
        other_arch=("on an x86-64 host the RUN steps need binfmt_misc (QEMU) for {arch}",),
        secrets="       with the index URLs' variables as secrets: {secrets}",
        secret="--secret id={name},env={name}",
        join=" ",
        check="check: docker run --rm --gpus all IMAGE colabenv verify",
        secret_path="/run/secrets/{name}",
        secret_hint="build with --secret id={name},env={name}",
        opening=_nothing,
        body=_docker_body,
        templates_refused=False,
    ),
    ImageFormat.APPTAINER: _Syntax(
        title=(
            "Apptainer definition generated by colabenv {version}. Do not edit:",
            "re-render it with setup.sh beside it: colabenv render PROFILE --format apptainer -o DIR",
        ),
        host_driver="only the NVIDIA driver comes from the host (apptainer --nv).",
        build=(
            "build, in DIR: apptainer build{arch} --notest IMAGE.sif {name}  (for {platform};",
            "  --notest where the build host has no GPU the profile needs)",
        ),
        # a definition has no header for the architecture: apptainer build pulls the build
        # host's unless told (--arch, Apptainer 1.4.0's CHANGELOG)
        other_arch=(
            "--arch {arch}: Apptainer 1.4 or later; on an x86-64 host with binfmt_misc (QEMU) for {arch}",
        ),
        secrets="  with the index URLs' variables in {secrets} (read, then removed)",
        secret=SECRETS_DIR + "/{name}",
        join=", ",
        check="check: apptainer test --nv IMAGE.sif  (or apptainer run --nv IMAGE.sif)",
        secret_path=f"{WORK_DIR}/{SECRETS_DIR}/{{name}}",
        secret_hint=f"put it in {SECRETS_DIR}/{{name}} beside {FILE_NAMES[ImageFormat.APPTAINER]}",
        opening=_apptainer_opening,
        body=_apptainer_body,
        templates_refused=True,
    ),
}


def render_image(
    form: ImageFormat,
    plan: InstallPlan,
    script: str,
    *,
    wheel: ColabenvWheel,
    base_image: str | None = None,
    images: Sequence[BaseImage] | None = None,
) -> Iterator[str]:
    """Yield the lines of the ``form`` definition that builds ``plan`` by running ``script``
    (the rendered ``setup.sh``); deterministic. ``images``: the base image table
    (``base_images.toml``); without it the slim Python image is the base."""
    syntax = _SYNTAXES[form]
    image = _image(plan, script, syntax, wheel, base_image, images)
    lines = list(_definition(syntax, image, FILE_NAMES[form], plan.colabenv_version))
    if syntax.templates_refused:
        for line in lines:
            if _TEMPLATE_RE.search(line):
                raise UsageError(
                    f"{printable(line.strip())}: holds {{{{ ... }}}}, which apptainer "
                    "build would replace with a --build-arg value"
                )
    yield from lines


def _definition(syntax: _Syntax, image: _Image, name: str, colabenv_version: str) -> Iterator[str]:
    yield from syntax.opening(image)
    for line in syntax.title:
        yield _comment(line.format(version=colabenv_version))
    for line in image.comments:
        yield _comment(line)
    if image.note:
        yield _comment(image.note)
    else:
        yield _comment("The base is a slim Python image: the pip wheels bring their CUDA libraries and")
        yield _comment(syntax.host_driver)
    arch = image.platform.partition("/")[2]
    option = "" if arch == "amd64" else f" --arch {arch}"
    for line in syntax.build:
        yield _comment(line.format(name=name, platform=image.platform, arch=option))
    if option:
        yield from (_comment(line.format(arch=arch)) for line in syntax.other_arch)
    if image.secrets:
        secrets = syntax.join.join(syntax.secret.format(name=secret) for secret in image.secrets)
        yield _comment(syntax.secrets.format(secrets=secrets))
    traits = accelerator(image.accelerator).traits
    check = syntax.check.replace("--gpus all", traits.docker_devices).replace(
        "--nv", traits.apptainer_devices
    )
    yield _comment(check)
    yield ""
    install = _colabenv_install(image)
    run = _script_run(image, syntax.secret_path, syntax.secret_hint)
    yield from syntax.body(image, install, run)
