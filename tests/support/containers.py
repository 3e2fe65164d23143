"""Build and run container images with podman, offline, for ``tests/test_container_build.py``.

No image registry is reachable from the tests, so the base image is made here:
``python_rootfs`` copies the Python running the tests (its standard library, its executable,
pip) into ``/usr/local`` of a small root file system, with bash, coreutils and the shared
libraries they load, the way ``python:X.Y-slim-bookworm`` holds Python; ``Podman.import_base``
imports it under that very name into a podman storage of the test's own (``--root``), so the
Dockerfile ``colabenv render --format dockerfile`` writes is built exactly as written, and no
image of the machine's storage is touched.

colabenv's dependencies get into the image from a local index (colabenv itself is the wheel
``render`` puts into the build folder): ``colabenv_wheelhouse`` writes wheels of each
distribution colabenv needs at run time, repacked from the environment running the tests (uv's
binary included), and a wheel of this checkout, and the base's ``/etc/pip.conf`` names that
index, as a company's base image names its mirror.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import resource
import shutil
import stat
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.wheels import build_wheel, wheel_name_part

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
TOOLS = (
    "bash",
    "env",
    "cat",
    "rm",
    "mkdir",
    "mktemp",
    "readlink",
    "tr",
    "tee",
    "id",
    "ls",
    "sha256sum",
    "chmod",
    "uname",
    "head",
    "dirname",
    "basename",
    "cp",
    "mv",
    "ln",
    "touch",
    "grep",
    "flock",
    "printenv",
    "sleep",
)
"""What the bootstrap script, the Dockerfile's RUN lines and pip use."""
STDLIB_SKIP = {
    "site-packages",
    "test",
    "tests",
    "idlelib",
    "tkinter",
    "turtledemo",
    "__pycache__",
    "ensurepip",
}
BASE_ENV_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


# ---------------------------------------------------------------------------------------------
# The base image's root file system


def _libraries(binary: Path) -> list[Path]:
    """The shared libraries ``binary`` loads, as ``ldd`` resolves them (the loader included)."""
    done = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=60)
    found = []
    for line in done.stdout.splitlines():
        match = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if match:
            found.append(Path(match.group(1)))
    return found


def _copy_file(source: Path, dest_root: Path, inside: Path) -> None:
    target = dest_root / inside.relative_to("/")
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(os.path.realpath(source), target)


def _copy_stdlib(stdlib: Path, dest: Path) -> list[Path]:
    """The standard library without tests, IDLE, Tk and bytecode; returns its extension modules."""
    extensions = []
    for directory, folders, files in os.walk(stdlib):
        folders[:] = [f for f in folders if f not in STDLIB_SKIP]
        here = Path(directory)
        target = dest / here.relative_to(stdlib)
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            if name.endswith((".pyc", ".a")):
                continue
            shutil.copy2(here / name, target / name)
            if name.endswith(".so"):
                extensions.append(here / name)
    return extensions


def _copy_distribution(dist: importlib.metadata.Distribution, site: Path) -> None:
    base = Path(str(dist.locate_file("")))
    for file in dist.files or ():
        if file.parts[0] == ".." or "__pycache__" in file.parts:
            continue
        source = base / file
        if source.is_file():
            target = site / file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def python_rootfs(dest: Path, pip_conf: str, loads_for: Sequence[Path] = ()) -> Path:
    """A root file system with this Python in ``/usr/local`` (pip included) and the tools the
    script needs; returns ``dest``. ``pip_conf`` becomes ``/etc/pip.conf``; the shared
    libraries the programs ``loads_for`` need are there too (uv's libgcc_s, say)."""
    executable = Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    local = dest / "usr" / "local"
    extensions = _copy_stdlib(stdlib, local / "lib" / f"python{PY}")
    site = local / "lib" / f"python{PY}" / "site-packages"
    site.mkdir(parents=True, exist_ok=True)
    _copy_distribution(importlib.metadata.distribution("pip"), site)
    (local / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy2(executable, local / "bin" / f"python{PY}")
    for alias in ("python3", "python"):
        (local / "bin" / alias).symlink_to(f"python{PY}")
    binaries = [executable, *extensions, *loads_for]
    (dest / "usr" / "bin").mkdir(parents=True, exist_ok=True)
    (dest / "bin").mkdir(parents=True, exist_ok=True)
    for tool in TOOLS:
        found = shutil.which(tool)
        if found is None:
            raise FileNotFoundError(f"{tool} is not on PATH")
        shutil.copy2(os.path.realpath(found), dest / "usr" / "bin" / tool)
        binaries.append(Path(found))
    for alias in ("sh", "bash"):
        (dest / "bin" / alias).symlink_to("/usr/bin/bash")
    for binary in binaries:
        for library in _libraries(binary):
            _copy_file(library, dest, library)
    etc = dest / "etc"
    etc.mkdir(exist_ok=True)
    (etc / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (etc / "group").write_text("root:x:0:\n")
    (etc / "pip.conf").write_text(pip_conf)
    for folder, mode in (("tmp", 0o1777), ("var/tmp", 0o1777), ("root", 0o700)):
        (dest / folder).mkdir(parents=True, exist_ok=True)
        (dest / folder).chmod(mode)
    return dest


def tar_rootfs(rootfs: Path, tarball: Path) -> Path:
    with tarfile.open(tarball, "w") as archive:
        for entry in sorted(rootfs.iterdir()):
            archive.add(entry, arcname=entry.name)
    return tarball


# ---------------------------------------------------------------------------------------------
# colabenv and what it needs, as wheels


def _console_scripts(dist: importlib.metadata.Distribution) -> set[str]:
    return {entry.name for entry in dist.entry_points if entry.group == "console_scripts"}


def _wheel_tag(dist: importlib.metadata.Distribution) -> str:
    text = dist.read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Tag:")]
    return tags[0] if tags else "py3-none-any"


def repack(dist: importlib.metadata.Distribution, dest: Path) -> Path:
    """A wheel of an installed distribution: its files, its metadata's requirements, and the
    executables it installed beside Python that are not console-script wrappers (uv's)."""
    name = dist.metadata["Name"]
    version = dist.version
    base = Path(str(dist.locate_file("")))
    dist_info = f"{wheel_name_part(name)}-{version}.dist-info"
    data_scripts = f"{wheel_name_part(name)}-{version}.data/scripts"
    wrappers = _console_scripts(dist)
    files: dict[str, str | bytes] = {}
    for file in dist.files or ():
        source = base / file
        if "__pycache__" in file.parts or not source.is_file():
            continue
        if file.parts[0] == "..":
            if file.parent.name == "bin" and file.name not in wrappers:
                files[f"{data_scripts}/{file.name}"] = source.read_bytes()
            continue
        if file.parts[0].endswith(".dist-info"):
            if file.name in ("METADATA", "WHEEL", "RECORD", "INSTALLER", "REQUESTED", "direct_url.json"):
                continue
            files[f"{dist_info}/{Path(*file.parts[1:])}"] = source.read_bytes()
            continue
        files[file.as_posix()] = source.read_bytes()
    wheel = build_wheel(
        dest,
        name,
        version,
        requires=tuple(dist.requires or ()),
        files=files,
        requires_python=dist.metadata.get("Requires-Python"),
        tag=_wheel_tag(dist),
    )
    return _executable(wheel, f"{data_scripts}/")


def _executable(wheel: Path, prefix: str) -> Path:
    """The wheel again with its members under ``prefix`` marked executable, as the real wheel
    has them (pip and uv give an installed script the mode its zip entry records)."""
    partial = wheel.with_name(wheel.name + ".part")
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(partial, "w") as target:
        for info in source.infolist():
            if info.filename.startswith(prefix):
                info.external_attr = (stat.S_IFREG | 0o755) << 16
            target.writestr(info, source.read(info))
    partial.replace(wheel)
    return wheel


def _closure(roots: Iterable[str]) -> list[importlib.metadata.Distribution]:
    seen: dict[str, importlib.metadata.Distribution] = {}
    queue = list(roots)
    while queue:
        requirement = Requirement(queue.pop())
        name = canonicalize_name(requirement.name)
        if name in seen or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen[name] = importlib.metadata.distribution(name)
        queue.extend(seen[name].requires or ())
    return list(seen.values())


def colabenv_wheel(dest: Path, version: str) -> Path:
    """A wheel of this checkout, laid out as the real build lays it out (pyproject.toml)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    files: dict[str, str | bytes] = {}
    for source in sorted((REPO / "colabenv").rglob("*")):
        if source.is_file() and "__pycache__" not in source.parts:
            files[source.relative_to(REPO).as_posix()] = source.read_bytes()
    for source in sorted((REPO / "profiles").rglob("*")):
        if source.is_file():
            files["colabenv/_profiles/" + source.relative_to(REPO / "profiles").as_posix()] = (
                source.read_bytes()
            )
    files[f"colabenv-{version}.dist-info/entry_points.txt"] = (
        "[console_scripts]\ncolabenv = colabenv.cli.entry:main\n"
    )
    return build_wheel(
        dest,
        "colabenv",
        version,
        requires=tuple(project["dependencies"]),
        files=files,
        requires_python=project["requires-python"],
    )


def dependency_wheelhouse(dest: Path) -> Path:
    """A wheel of each distribution colabenv needs at run time (not colabenv's), in ``dest``."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    dest.mkdir(parents=True, exist_ok=True)
    for dist in _closure(project["dependencies"]):
        repack(dist, dest)
    return dest


def colabenv_wheelhouse(dest: Path, version: str) -> Path:
    """colabenv's wheel and a wheel of each distribution it needs, in ``dest``."""
    colabenv_wheel(dest, version)
    return dependency_wheelhouse(dest)


# ---------------------------------------------------------------------------------------------
# podman, in a storage of its own


def _limits() -> list[str]:
    """``--ulimit`` at or below this process's soft limits: lowering a limit is always allowed,
    and some sandboxes refuse even the hard limit they report (podman's default asks for more)."""
    limits = []
    for name, which, cap in (
        ("nofile", resource.RLIMIT_NOFILE, 1 << 16),
        ("nproc", resource.RLIMIT_NPROC, 4096),
    ):
        soft, _hard = resource.getrlimit(which)
        value = cap if soft == resource.RLIM_INFINITY else min(soft, cap)
        limits += ["--ulimit", f"{name}={value}:{value}"]
    return limits


class Podman:
    """``podman`` with its own storage under ``home`` and this process's limits: a container
    engine's defaults ask for more open files and processes than a CI sandbox may grant."""

    def __init__(self, home: Path, runtime: str | None = None) -> None:
        self.home = home
        self.runtime = runtime
        self.global_args = [
            "podman",
            "--root",
            str(home / "storage"),
            "--runroot",
            str(home / "run"),
            "--tmpdir",
            str(home / "tmp"),
        ]
        if runtime is not None:
            self.global_args += ["--runtime", runtime]
        (home / "tmp").mkdir(parents=True, exist_ok=True)
        self.limits = _limits()

    def __call__(
        self, *args: str | Path, timeout: float = 300, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.global_args, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env
        )

    def import_base(self, tarball: Path, name: str) -> subprocess.CompletedProcess[str]:
        return self(
            "import", "--change", f"ENV PATH={BASE_ENV_PATH}", "--change", 'CMD ["python3"]', tarball, name
        )

    def build(
        self, context: Path, tag: str, *extra: str, timeout: float = 900
    ) -> subprocess.CompletedProcess[str]:
        runtime = ["--runtime", self.runtime] if self.runtime else []
        return self(
            "build",
            "--pull=never",
            "--network",
            "host",
            *runtime,
            *self.limits,
            *extra,
            "-t",
            tag,
            context,
            timeout=timeout,
        )

    def run(self, image: str, *command: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return self("run", "--rm", "--network", "none", *self.limits, image, *command, timeout=timeout)

    def reset(self) -> None:
        self("system", "reset", "--force", timeout=300)
        shutil.rmtree(self.home, ignore_errors=True)


def podman_problem() -> str | None:
    """Why podman cannot build images here at all, or None."""
    if not sys.platform.startswith("linux"):
        return "container images are built on Linux"
    if shutil.which("podman") is None:
        return "podman is not installed (Debian: apt-get install podman)"
    if shutil.which("ldd") is None:
        return "ldd is not installed, so no base image can be made from this Python"
    return None


def runtimes() -> Sequence[str | None]:
    """The OCI runtimes to try: podman's default, then runc where it is installed (crun
    refuses a host whose cgroups are in hybrid mode)."""
    return [None, *(["runc"] if shutil.which("runc") else [])]
