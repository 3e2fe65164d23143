"""Stand-in torch, jax and tensorflow, installed for real into a throwaway virtual environment.

Each stand-in is a distribution (``*.dist-info`` with METADATA, RECORD, top_level.txt) plus a
pure-Python package that implements the part of the framework API that the smoke child
(``colabenv/_target/smoke/``) uses, with a behaviour fixed at install time: a healthy GPU (matmul
with Python lists, a pretend device with a compute capability and memory), no GPU, a driver too
old for the build, an arch list without the GPU's architecture, an import error, a segfault or a
hang on import.

:func:`make_venv` builds the environment with :func:`tests.support.fixtures.make_venv` (no pip,
a fraction of a second), links colabenv and the few distributions it needs at run time into a directory that a
``.pth`` file appends *after* site-packages, and writes a ``colabenv`` console script, so that
``import torch`` finds the stand-in and nothing is installed twice.
"""

from __future__ import annotations

import enum
import importlib.metadata
import json
import os
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.fixtures import make_venv as make_python_venv

REPO = Path(__file__).resolve().parents[2]
RUNTIME_ROOTS = ("packaging", "rich", "nvidia-ml-py", "tomlkit", "tomli")
GIB = 1024**3


class Behaviour(str, enum.Enum):
    HEALTHY = "healthy"
    NO_GPU = "no_gpu"
    DRIVER_TOO_OLD = "driver_too_old"
    MISSING_ARCH = "missing_arch"
    IMPORT_ERROR = "import_error"
    SEGFAULT = "segfault"
    HANG = "hang"
    GPU_NAN_ALL = "gpu_nan_all"
    """Every cell of a GPU matmul is NaN."""
    GPU_NAN_ONE = "gpu_nan_one"
    """One cell of a GPU matmul is NaN."""
    CPU_NAN = "cpu_nan"
    """One cell of the CPU matmul is NaN."""
    CHATTY = "chatty"
    """Prints to stdout without a trailing newline when imported."""
    DAEMON = "daemon"
    """Starts a detached process (setsid, double fork) when imported, then works."""
    DAEMON_HANG = "daemon_hang"
    """Starts a detached process when imported, then hangs."""
    NONDETERMINISTIC = "nondeterministic"
    """A GPU matmul whose last bits differ from one run to the next (atomics, split-K)."""
    FLOOD = "flood"
    """Prints 256 MiB to stdout and one 64 MiB line to stderr when imported, then works."""


@dataclass(frozen=True)
class Standin:
    """One stand-in framework and how it behaves."""

    framework: str
    version: str
    behaviour: Behaviour = Behaviour.HEALTHY
    cuda: str | None = "12.4"
    capability: str = "7.5"
    arch_list: tuple[str, ...] = ("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90")
    gpu_name: str = "Stand-in T4"
    gpus: int = 1
    total_bytes: int = 16 * GIB
    free_bytes: int = 15 * GIB
    largest_bytes: int = 12 * GIB
    requires: tuple[str, ...] = ()
    dist_name: str | None = None
    pid_dir: str | None = None
    """Where a DAEMON stand-in's detached processes each write a file named by their pid."""
    hip: str | None = None
    """torch's ``torch.version.hip`` (a ROCm build; set ``cuda`` to None beside it)."""
    gfx: str | None = None
    """Each GPU's ``gcnArchName`` on ROCm (``gfx942:sramecc+:xnack-``)."""
    jax_gpu: str = "Cuda"
    """How jax names its GPU devices (``CudaDevice(id=0)``; ``Rocm`` on AMD GPUs, as
    jax-ml/jax's build/rocm/README.md shows ``jax.devices()`` print there)."""
    gpu_error: str | None = None
    """The text of the RuntimeError every GPU kernel raises (a recorded failure's, such as
    ``HIP error: invalid device function``); None: the kernels run."""
    import_error: str = "libcudnn.so.9: cannot open shared object file: No such file or directory"
    """The text of the ImportError an IMPORT_ERROR stand-in raises."""
    no_gpu_error: str = "Found no NVIDIA driver on your system."
    """The text of the RuntimeError a first use of a GPU raises where none is visible
    (``torch.cuda.init()``; ROCm's torch says ``No HIP GPUs are available``)."""

    @property
    def name(self) -> str:
        return self.dist_name or self.framework


@dataclass
class StandinVenv:
    root: Path
    python: Path
    site_packages: Path
    colabenv: Path
    installed: list[str] = field(default_factory=list)

    def install_dist(
        self,
        name: str,
        version: str,
        *,
        requires: Sequence[str] = (),
        files: Mapping[str, str] | None = None,
        top_level: Sequence[str] = (),
        site: Path | None = None,
    ) -> Path:
        """Write ``files`` (relative path -> text) and a dist-info for them, as pip would."""
        target = site or self.site_packages
        written: list[str] = []
        for relative, text in (files or {}).items():
            path = target / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(relative)
        dist_info = f"{canonicalize_name(name).replace('-', '_')}-{version}.dist-info"
        meta = target / dist_info
        meta.mkdir(parents=True, exist_ok=True)
        lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        lines += [f"Requires-Dist: {req}" for req in requires]
        (meta / "METADATA").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (meta / "INSTALLER").write_text("colabenv-tests\n", encoding="utf-8")
        tops = list(top_level) or sorted({r.split("/")[0].removesuffix(".py") for r in written})
        (meta / "top_level.txt").write_text("".join(f"{t}\n" for t in tops), encoding="utf-8")
        record = [f"{r},," for r in written]
        record += [f"{dist_info}/{n},," for n in ("METADATA", "INSTALLER", "top_level.txt")]
        record.append(f"{dist_info}/RECORD,,")
        (meta / "RECORD").write_text("\n".join(record) + "\n", encoding="utf-8")
        self.installed.append(f"{canonicalize_name(name)}=={version}")
        return meta

    def install(self, standin: Standin) -> None:
        files = SOURCES[standin.framework](standin)
        self.install_dist(
            standin.name,
            standin.version,
            requires=standin.requires,
            files=files,
            top_level=[standin.framework],
        )

    def install_plain(self, name: str, version: str, requires: Sequence[str] = ()) -> None:
        """A distribution with an empty package of the same import name."""
        module = canonicalize_name(name).replace("-", "_")
        self.install_dist(
            name, version, requires=requires, files={f"{module}/__init__.py": f"__version__ = {version!r}\n"}
        )

    def run_verify(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        timeout: float = 120,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.colabenv), "verify", *args],
            capture_output=True,
            text=True,
            env=dict(env) if env is not None else venv_env(),
            timeout=timeout,
            cwd=cwd or self.root,
            check=False,
        )


def venv_env(**extra: str) -> dict[str, str]:
    """The calling environment without anything that would change which Python or packages run,
    and without ``COLABENV_*`` overrides except those passed in."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
        and not (key.startswith("COLABENV_") and key != "COLABENV_STATE_DIR")
        and not key.startswith(("XLA_", "TF_", "PYTORCH_"))
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def _runtime_closure(roots: Iterable[str]) -> list[importlib.metadata.Distribution]:
    """The distributions colabenv needs at run time, from the environment running the tests."""
    seen: dict[str, importlib.metadata.Distribution] = {}
    queue = list(roots)
    while queue:
        name = canonicalize_name(queue.pop())
        if name in seen:
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        seen[name] = dist
        for text in dist.requires or ():
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                queue.append(req.name)
    return list(seen.values())


def link_runtime(deps: Path) -> None:
    deps.mkdir(parents=True, exist_ok=True)
    (deps / "colabenv").symlink_to(REPO / "colabenv", target_is_directory=True)
    for dist in _runtime_closure(RUNTIME_ROOTS):
        base = Path(str(dist.locate_file("")))
        tops = {f.parts[0] for f in dist.files or () if f.parts and f.parts[0] not in ("..",)}
        for top in sorted(tops):
            source = base / top
            if top == "__pycache__" or top.endswith(".pth") or not source.exists():
                continue
            link = deps / top
            if not link.exists():
                link.symlink_to(source, target_is_directory=source.is_dir())


def make_venv(root: Path, *, base: str | Path | None = None, with_colabenv: bool = True) -> StandinVenv:
    """A fresh virtual environment at ``root`` with no framework yet: made from ``base`` (this
    Python by default), with colabenv runnable in it unless ``with_colabenv`` is False (a venv
    that colabenv looks into from outside, with ``--interpreter``)."""
    python = make_python_venv(root, base=base)
    (site,) = root.glob("lib/python*/site-packages")
    script = root / "bin" / "colabenv"
    if with_colabenv:
        deps = root / "colabenv-runtime"
        link_runtime(deps)
        (site / "_colabenv_runtime.pth").write_text(f"{deps}\n", encoding="utf-8")
        script.write_text(
            f"#!{python}\nimport sys\nfrom colabenv.cli.main import main\nsys.exit(main())\n",
            encoding="utf-8",
        )
        script.chmod(0o755)
    return StandinVenv(root, python, site, script)


def write_marker(
    state_dir: Path,
    *,
    requirements: Sequence[str] = (),
    frameworks: Mapping[str, str] | None = None,
    written_at: float | None = None,
    changed: bool = True,
    env: Mapping[str, str] | None = None,
    smoke: Sequence[str] | None = None,
    require_gpu: bool = False,
    min_free_vram_gib: float | None = None,
    timeout_s: float | None = None,
    profile: str = "standin",
    profile_hash: str = "sha256:" + "0" * 64,
    python: str | Path | None = None,
    verify: Mapping[str, object] | None = None,
    reproducibility: Mapping[str, object] | None = None,
) -> Path:
    """A schema-1 restart marker as the bootstrap script writes it (``colabenv/script/marker.py``);
    ``python`` is the interpreter it was written for (left out when None, as old markers did);
    ``verify`` adds keys to its ``verify`` table (``io``, ``min_free_ram_gib`` ...) and
    ``reproducibility`` is its table of that name (left out when None, as old markers did)."""
    chosen = dict(frameworks or {})
    record = {
        "schema": 1,
        "colabenv": "0.1.0",
        "profile": profile,
        "profile_hash": profile_hash,
        "written_at": time.time() - 3600 if written_at is None else written_at,
        "changed": changed,
        "installed": list(requirements),
        "requirements": list(requirements),
        "frameworks": {
            name: {
                "version": version.split("+")[0],
                "variant": version.split("+")[1] if "+" in version else "default",
                "requirements": [r for r in requirements if r.startswith(f"{name}")],
            }
            for name, version in chosen.items()
        },
        "target": {},
        "env": dict(env or {}),
        "verify": {
            "smoke": list(smoke) if smoke is not None else list(chosen),
            "require_gpu": require_gpu,
            "min_free_vram_gib": min_free_vram_gib,
            "timeout_s": timeout_s,
            **dict(verify or {}),
        },
    }
    if python is not None:
        record["python"] = str(python)
    if reproducibility is not None:
        record["reproducibility"] = dict(reproducibility)
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / "restart-marker.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# The stand-in packages' sources

_COMMON = '''\
import os
import random as _random
import signal
import sys
import time

BEHAVIOUR = {behaviour!r}
CUDA = {cuda!r}
CAPABILITY = {capability!r}
ARCH_LIST = {arch_list!r}
GPU_NAME = {gpu_name!r}
GPUS = {gpus!r}
TOTAL = {total!r}
FREE = {free!r}
LARGEST = {largest!r}
PID_DIR = {pid_dir!r}
HIP = {hip!r}
GFX = {gfx!r}
JAX_GPU = {jax_gpu!r}
GPU_ERROR = {gpu_error!r}
IMPORT_ERROR = {import_error!r}
NO_GPU_ERROR = {no_gpu_error!r}

DAEMON = """
import os, sys, time
os.setsid()
if os.fork():
    os._exit(0)
open(os.path.join(sys.argv[1], str(os.getpid())), "w").close()
time.sleep(600)
"""

if BEHAVIOUR in ("daemon", "daemon_hang"):
    import subprocess

    before = set(os.listdir(PID_DIR))
    subprocess.Popen([sys.executable, "-c", DAEMON, PID_DIR], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)
    deadline = time.time() + 10
    while set(os.listdir(PID_DIR)) == before and time.time() < deadline:
        time.sleep(0.01)
if BEHAVIOUR == "daemon_hang":
    time.sleep(3600)
if BEHAVIOUR == "flood":
    _block = b"stand-in: kernel log line\\n" * (1 << 15)
    for _ in range((256 << 20) // len(_block)):
        sys.stdout.buffer.write(_block)
    sys.stdout.buffer.flush()
    _line = b"y" * (1 << 20)
    for _ in range(64):  # one 64 MiB line, written without holding it: the child stays small
        sys.stderr.buffer.write(_line)
    sys.stderr.buffer.write(b"\\n")
    sys.stderr.buffer.flush()
    del _block, _line
if BEHAVIOUR == "chatty":
    sys.stdout.write("stand-in: loading kernels... ")
    sys.stdout.flush()
if BEHAVIOUR == "import_error":
    raise ImportError(IMPORT_ERROR)
if BEHAVIOUR == "segfault":
    sys.stderr.write("stand-in: about to crash\\n")
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGSEGV)
if BEHAVIOUR == "hang":
    sys.stderr.write("stand-in: hanging on import\\n")
    sys.stderr.flush()
    time.sleep(3600)


def _gpu_visible():
    if BEHAVIOUR == "driver_too_old":
        sys.stderr.write(
            "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old"
            " (found version 12040).\\n"
        )
        return False
    return BEHAVIOUR != "no_gpu"


def _kernels_for_gpu():
    major, minor = (int(x) for x in CAPABILITY.split("."))
    for arch in ARCH_LIST:
        kind, _, digits = arch.partition("_")
        a_major, a_minor = int(digits[:-1]), int(digits[-1])
        if kind == "sm" and a_major == major and a_minor <= minor:
            return True
        if kind == "compute" and (a_major, a_minor) <= (major, minor):
            return True
    return False


_RUNS = [0]
_GENERATOR = _random.Random(0)


def _matmul(left, right, on_gpu):
    if on_gpu and GPU_ERROR:
        raise RuntimeError(GPU_ERROR)
    if on_gpu and not _kernels_for_gpu():
        raise RuntimeError(
            "CUDA error: no kernel image is available for execution on the device"
        )
    columns = list(zip(*right))
    product = [[float(sum(x * y for x, y in zip(row, col))) for col in columns] for row in left]
    if on_gpu and BEHAVIOUR == "gpu_nan_all":
        product = [[float("nan") for _ in row] for row in product]
    if (on_gpu and BEHAVIOUR == "gpu_nan_one") or (not on_gpu and BEHAVIOUR == "cpu_nan"):
        product[len(product) // 2][1] = float("nan")
    if on_gpu and BEHAVIOUR == "nondeterministic":
        _RUNS[0] += 1
        product[0][0] += _RUNS[0] * 2.0 ** -20
    return product


def _seed(value):
    _GENERATOR.seed(value)


def _normal(rows, columns, generator=None):
    source = generator or _GENERATOR
    return [[source.gauss(0.0, 1.0) for _ in range(columns)] for _ in range(rows)]


def _integers(low, high, count, generator=None):
    source = generator or _GENERATOR
    return [source.randrange(low, high) for _ in range(count)]


def _index_add(target, rows, source):
    out = [list(row) for row in target]
    for position, row in enumerate(rows):
        out[row] = [a + b for a, b in zip(out[row], source[position])]
    return out
'''

_TORCH = """\
from types import SimpleNamespace

import os

from ._standin import (
    ARCH_LIST, CAPABILITY, CUDA, FREE, GFX, GPU_NAME, GPUS, HIP, LARGEST, NO_GPU_ERROR, TOTAL,
    _gpu_visible, _index_add, _integers, _matmul, _normal, _seed,
)

__version__ = {version!r}
version = SimpleNamespace(cuda=CUDA, hip=HIP, __version__=__version__)
float32 = "float32"
uint8 = "uint8"


class OutOfMemoryError(RuntimeError):
    pass


class Tensor:
    def __init__(self, rows, device):
        self.rows = rows
        self.device = device

    def __matmul__(self, other):
        if self.device != other.device:
            raise RuntimeError("Expected all tensors to be on the same device")
        workspace = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
        if self.device != "cpu" and _deterministic[0] and workspace not in (":4096:8", ":16:8"):
            raise RuntimeError(
                "Deterministic behavior was enabled with either `torch.use_deterministic_algorithms"
                "(True)` or `at::Context::setDeterministicAlgorithms(true)`, but this operation is "
                "not deterministic because it uses CuBLAS and you have CUDA >= 10.2."
            )
        return Tensor(_matmul(self.rows, other.rows, self.device != "cpu"), self.device)

    def index_add_(self, dim, index, source):
        self.rows = _index_add(self.rows, index.rows, source.rows)
        return self

    def cpu(self):
        return Tensor(self.rows, "cpu")

    def tolist(self):
        return [list(row) for row in self.rows]


def _check_device(device):
    if device != "cpu":
        if not _gpu_visible():
            raise RuntimeError(NO_GPU_ERROR)
        index = int(device.split(":")[1]) if ":" in device else 0
        if index >= GPUS:
            raise RuntimeError("CUDA error: invalid device ordinal")


def tensor(data, dtype=None, device="cpu"):
    _check_device(device)
    return Tensor([[float(x) for x in row] for row in data], device)


_deterministic = [False]


def manual_seed(value):
    _seed(value)


def use_deterministic_algorithms(flag):
    _deterministic[0] = bool(flag)


def randn(shape, dtype=None, device="cpu"):
    _check_device(device)
    return Tensor(_normal(*shape), device)


def randint(low, high, size, device="cpu"):
    _check_device(device)
    return Tensor(_integers(low, high, size[0]), device)


def zeros(shape, dtype=None, device="cpu"):
    _check_device(device)
    return Tensor([[0.0] * shape[1] for _ in range(shape[0])], device)


def empty(size, dtype=None, device="cpu"):
    _check_device(device)
    if device != "cpu" and size > LARGEST:
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate %d bytes" % size)
    return Tensor([], device)


class _Cuda:
    OutOfMemoryError = OutOfMemoryError

    @staticmethod
    def is_available():
        return _gpu_visible()

    @staticmethod
    def init():
        if not _gpu_visible():
            raise RuntimeError(NO_GPU_ERROR)

    @staticmethod
    def device_count():
        return GPUS if _gpu_visible() else 0

    @staticmethod
    def get_device_name(index=0):
        return GPU_NAME

    @staticmethod
    def get_device_capability(index=0):
        major, minor = CAPABILITY.split(".")
        return int(major), int(minor)

    @staticmethod
    def get_device_properties(index=0):
        return SimpleNamespace(name=GPU_NAME, gcnArchName=GFX) if GFX else SimpleNamespace(name=GPU_NAME)

    @staticmethod
    def get_arch_list():
        return list(ARCH_LIST) if _gpu_visible() else []

    @staticmethod
    def mem_get_info(index=0):
        _check_device("cuda:%d" % index)
        return FREE, TOTAL

    @staticmethod
    def empty_cache():
        return None

    @staticmethod
    def manual_seed_all(value):
        return None


cuda = _Cuda()
backends = SimpleNamespace(cudnn=SimpleNamespace(version=lambda: 90100))
"""

_JAX = """\
import contextlib
import threading

import random as _random_module

from ._standin import (
    CAPABILITY, GFX, GPU_NAME, GPUS, JAX_GPU, LARGEST, TOTAL, _gpu_visible, _index_add, _integers, _matmul,
    _normal,
)

__version__ = {version!r}


class Device:
    def __init__(self, platform, index):
        self.platform = platform
        self.id = index
        self.device_kind = GPU_NAME if platform == "gpu" else "cpu"
        if platform == "gpu":  # jax on ROCm says the gfx name here
            self.compute_capability = GFX if JAX_GPU == "Rocm" and GFX else CAPABILITY

    def memory_stats(self):
        return {{"bytes_limit": TOTAL, "bytes_in_use": 0}} if self.platform == "gpu" else None

    def __repr__(self):
        return "%sDevice(id=%d)" % (JAX_GPU if self.platform == "gpu" else "Cpu", self.id)


_CPU = [Device("cpu", 0)]
_GPU = [Device("gpu", i) for i in range(GPUS)]
_state = threading.local()


def devices(backend=None):
    if backend == "cpu":
        return list(_CPU)
    if _gpu_visible():
        return list(_GPU)
    if backend == "gpu":
        raise RuntimeError(
            "Unknown backend: 'gpu' requested, but no platforms that are instances of gpu are"
            " present. Platforms present are: cpu"
        )
    return list(_CPU)


def _current():
    stack = getattr(_state, "stack", [])
    return stack[-1] if stack else devices()[0]


@contextlib.contextmanager
def default_device(device):
    stack = _state.__dict__.setdefault("stack", [])
    stack.append(device)
    try:
        yield device
    finally:
        stack.pop()


class Array:
    def __init__(self, rows, device):
        self.rows = rows
        self.device = device

    def block_until_ready(self):
        return self

    def delete(self):
        self.rows = None

    def tolist(self):
        return [list(row) if isinstance(row, list) else row for row in self.rows]

    @property
    def at(self):
        return _At(self)


class _At:
    def __init__(self, array):
        self.array = array

    def __getitem__(self, rows):
        return _AtRows(self.array, rows)


class _AtRows:
    def __init__(self, array, rows):
        self.array, self.rows = array, rows

    def add(self, values):
        return Array(_index_add(self.array.rows, self.rows.rows, values.rows), self.array.device)


class _Random:
    @staticmethod
    def PRNGKey(seed):
        return int(seed)

    @staticmethod
    def split(key, num=2):
        return [(key * 1000003 + index + 1) % 2 ** 32 for index in range(num)]

    @staticmethod
    def normal(key, shape, dtype=None):
        return Array(_normal(shape[0], shape[1], _random_module.Random(key)), _current())

    @staticmethod
    def randint(key, shape, minval, maxval, dtype=None):
        return Array(_integers(minval, maxval, shape[0], _random_module.Random(key)), _current())


random = _Random()


def _asarray(data, dtype=None):
    return Array([[float(x) for x in row] for row in data], _current())


def _matmul_arrays(left, right):
    return Array(_matmul(left.rows, right.rows, left.device.platform == "gpu"), left.device)


def _zeros(shape, dtype=None):
    device = _current()
    if device.platform == "gpu" and shape[0] > LARGEST:
        raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate")
    if len(shape) == 2:
        return Array([[0.0] * shape[1] for _ in range(shape[0])], device)
    return Array([], device)
"""

_JAX_NUMPY = """\
from jax import _asarray as asarray, _matmul_arrays as matmul, _zeros as zeros

float32 = "float32"
uint8 = "uint8"
"""

_JAX_LIB = """\
from types import SimpleNamespace

from jax._standin import _gpu_visible

cuda_versions = SimpleNamespace(
    cuda_runtime_get_version=lambda: 12040,
    cudnn_get_version=lambda: 90100,
) if _gpu_visible() else None
"""

_TENSORFLOW = """\
import contextlib
import os
import threading
from types import SimpleNamespace

from ._standin import CAPABILITY, CUDA, GPU_NAME, GPUS, _gpu_visible, _matmul, _normal, _seed

__version__ = {version!r}
float32 = "float32"
_state = threading.local()
_initialized = []
_growth = {{}}


class PhysicalDevice:
    def __init__(self, kind, index):
        self.name = "/physical_device:%s:%d" % (kind, index)
        self.device_type = kind


_GPUS = [PhysicalDevice("GPU", i) for i in range(GPUS)]


def _list_physical_devices(kind=None):
    if kind == "GPU":
        return list(_GPUS) if _gpu_visible() else []
    return [PhysicalDevice("CPU", 0)]


def _set_memory_growth(device, enable):
    if _initialized:
        raise RuntimeError("Physical devices cannot be modified after being initialized")
    _growth[device.name] = enable


def _get_device_details(device):
    major, minor = CAPABILITY.split(".")
    return {{"device_name": GPU_NAME, "compute_capability": (int(major), int(minor))}}


config = SimpleNamespace(
    list_physical_devices=_list_physical_devices,
    experimental=SimpleNamespace(
        set_memory_growth=_set_memory_growth, get_device_details=_get_device_details,
        enable_op_determinism=lambda: None,
    ),
)
keras = SimpleNamespace(utils=SimpleNamespace(set_random_seed=_seed))
sysconfig = SimpleNamespace(
    get_build_info=lambda: {{"is_cuda_build": CUDA is not None, "cuda_version": CUDA,
                             "cudnn_version": "9"}}
)


@contextlib.contextmanager
def device(name):
    stack = _state.__dict__.setdefault("stack", [])
    stack.append(name)
    try:
        yield
    finally:
        stack.pop()


def _current():
    stack = getattr(_state, "stack", [])
    return stack[-1] if stack else "/CPU:0"


class _Value:
    def __init__(self, rows):
        self.rows = rows

    def tolist(self):
        return [list(row) for row in self.rows]


class Tensor:
    def __init__(self, rows, where):
        self.rows = rows
        self.where = where

    def numpy(self):
        return _Value(self.rows)


def constant(data, dtype=None):
    where = _current()
    if "GPU" in where:
        _initialized.append(where)
        grown = os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH") == "true" or all(_growth.values())
        if not grown:
            raise RuntimeError("stand-in: GPU used without memory growth")
    return Tensor([[float(x) for x in row] for row in data], where)


def matmul(left, right):
    return Tensor(_matmul(left.rows, right.rows, "GPU" in left.where), left.where)


def reduce_sum(tensor, axis=0):
    return Tensor([[sum(column) for column in zip(*tensor.rows)]], tensor.where)


random = SimpleNamespace(normal=lambda shape, dtype=None: Tensor(_normal(*shape), _current()))
"""

_TF_BUILD_INFO = """\
import collections

build_info = collections.OrderedDict([{entries}])
"""


def _common(standin: Standin) -> str:
    return _COMMON.format(
        behaviour=standin.behaviour.value,
        cuda=standin.cuda,
        capability=standin.capability,
        arch_list=list(standin.arch_list),
        gpu_name=standin.gpu_name,
        gpus=standin.gpus,
        total=standin.total_bytes,
        free=standin.free_bytes,
        largest=standin.largest_bytes,
        pid_dir=standin.pid_dir,
        hip=standin.hip,
        gfx=standin.gfx,
        jax_gpu=standin.jax_gpu,
        gpu_error=standin.gpu_error,
        import_error=standin.import_error,
        no_gpu_error=standin.no_gpu_error,
    )


def _torch_files(standin: Standin) -> dict[str, str]:
    return {
        "torch/_standin.py": _common(standin),
        "torch/__init__.py": _TORCH.format(version=standin.version),
        "torch/version.py": f"__version__ = {standin.version!r}\ncuda = {standin.cuda!r}\n",
    }


def _jax_files(standin: Standin) -> dict[str, str]:
    return {
        "jax/_standin.py": _common(standin),
        "jax/__init__.py": _JAX.format(version=standin.version),
        "jax/numpy/__init__.py": _JAX_NUMPY,
        "jax/_src/__init__.py": "",
        "jax/_src/lib.py": _JAX_LIB,
    }


def _tensorflow_files(standin: Standin) -> dict[str, str]:
    entries: list[tuple[str, object]] = [("is_cuda_build", standin.cuda is not None)]
    if standin.cuda is not None:
        entries.append(("cuda_version", f"{standin.cuda}.1"))
    return {
        "tensorflow/_standin.py": _common(standin),
        "tensorflow/__init__.py": _TENSORFLOW.format(version=standin.version),
        "tensorflow/python/__init__.py": "",
        "tensorflow/python/platform/__init__.py": "",
        "tensorflow/python/platform/build_info.py": _TF_BUILD_INFO.format(
            entries=", ".join(repr(e) for e in entries)
        ),
    }


SOURCES = {"torch": _torch_files, "jax": _jax_files, "tensorflow": _tensorflow_files}
