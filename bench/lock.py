#!/usr/bin/env python3
"""How long `colabenv lock` takes with uv against pip-tools, on the same input, same indexes.

Both lock one profile (torch + torchvision + torchaudio from a local "PyTorch" index, jax with
its CUDA plugin from the default index, and a web of ordinary packages with several versions
each) against indexes served on 127.0.0.1 by the test support code, each run with a fresh,
empty cache (what CI sees), for a T4 target with nothing installed (``--installed-from`` an
empty freeze: not this host's packages). Runs alternate between the resolvers, after one unrecorded uv run.
Prints the median of each and ends with ``lock: X s (Rx vs pip-tools)``.

What makes pip-tools slow in real life is the size of the wheels it has to download, so the
wheels of the locked closure that are big in reality have their real size here (``REAL_SIZES``,
3.3 GB together; ``--scale N`` divides them by N):

- the default index serves PEP 658 metadata and ``#sha256=`` fragments, as PyPI does, but no
  PyPI JSON API, so ``pip-compile --generate-hashes`` downloads every wheel of the closure to
  hash it (against PyPI itself it takes PyPI's hashes from the JSON API, but it still downloads
  every matching file served from another host, e.g. the PyTorch index); uv takes the
  hashes from the index page and downloads none of them;
- the local PyTorch index offers no PEP 658 metadata but answers range requests, so pip also
  downloads the torch wheel a second time to read its metadata, and uv reads it with a few
  range requests. The real PyTorch index serves ``.metadata`` files for torch 2.6.0 and
  later (PyTorch's uploads add them since pytorch/pytorch#143677, pytorch/test-infra#6116, Dec
  2024; pip logs show it reading them for torch, torchvision, torchaudio, triton) but still not
  for most of the NVIDIA wheels it mirrors (pip downloads those whole); ``--pytorch-metadata``
  serves metadata on the local PyTorch index too.

The stand-in torch wheel also requires triton, as the real one does on Linux x86_64.

Real sizes (bytes; Python 3.11, manylinux x86_64, the versions the stand-ins use):

  torch 2.6.0+cu124 ......... 768.5 MB   pip log [1]   nvidia-cublas-cu12 12.4.5.8 ... 363,438,805
  torchvision 0.21.0+cu124 .... 7.3 MB   pip log [1]   nvidia-cuda-cupti-cu12 12.4.127 13,813,957
  torchaudio 2.6.0+cu124 ...... 3.4 MB   pip log [1]   nvidia-cuda-nvcc-cu12 12.6.85 . 21,172,353
  triton 3.2.0 ............ 253,157,636  PyPI [2]      nvidia-cuda-nvrtc-cu12 12.4.127 24,640,306
  jaxlib 0.5.3 ............ 105,119,259  PyPI [2]      nvidia-cuda-runtime-cu12 12.4.127 883,737
  jax-cuda12-pjrt 0.5.3 ... 104,655,464  PyPI [2]      nvidia-cudnn-cu12 9.1.0.70 .... 664,752,741
  jax-cuda12-plugin 0.5.3 .. 16,699,554  PyPI [2]      nvidia-cufft-cu12 11.2.1.3 .... 211,459,117
  jax 0.5.3 ................. 2,406,371  PyPI [2]      nvidia-curand-cu12 10.3.5.147 .. 56,305,206
  numpy 2.0.2 .............. 19,534,895  PyPI [2]      nvidia-cusolver-cu12 11.6.1.9 . 127,936,057
  pillow 11.3.0 ............. 6,640,273  PyPI [2]      nvidia-cusparse-cu12 12.3.1.170 207,454,763
                                                       nvidia-cusparselt-cu12 0.6.2 .. 150,057,751
                                                       nvidia-nccl-cu12 2.21.5 ....... 188,654,414
                                                       nvidia-nvjitlink-cu12 12.4.127 . 21,066,810
                                                       nvidia-nvtx-cu12 12.4.127 ......... 99,144

[1] pip's "Downloading ... (N MB)" lines of a public `pip install torch==2.6.0 torchvision==0.21.0
    torchaudio==2.6.0` log from the PyTorch index's cu124 folder (Python 3.11,
    2026), which also shows pip reading the torch, torchvision and torchaudio ``.metadata`` files
    there and downloading the mirrored NVIDIA wheels whole; its NVIDIA sizes agree with [2].
    (Its triton is that index's own 166.7 MB manylinux_2_28 build; the stand-in is PyPI's.)
[2] The PyPI simple API's file sizes (PEP 700), as ``uv lock`` records them; pip prints the same
    figures rounded (e.g. NVIDIA/TensorRT#4398: cublas 363.4 MB, cupti 13.8 MB).
"""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

sys.path.insert(0, str(REPO / "bench"))

from common import alternate  # noqa: E402

from tests.support.index import LocalIndex  # noqa: E402
from tests.support.isolation import clean_env  # noqa: E402
from tests.support.wheels import LINUX_X86_64, WheelSpec, build_standins, standin_specs  # noqa: E402

GOAL = 0.05
TRITON = "3.2.0"

# (index, name, version) -> real size in bytes of the wheel the stand-in replaces (see above).
REAL_SIZES: dict[tuple[str, str, str], int] = {
    ("pytorch", "torch", "2.6.0+cu124"): 768_500_000,
    ("pytorch", "torchvision", "0.21.0+cu124"): 7_300_000,
    ("pytorch", "torchaudio", "2.6.0+cu124"): 3_400_000,
    ("default", "triton", TRITON): 253_157_636,
    ("default", "jaxlib", "0.5.3"): 105_119_259,
    ("default", "jax-cuda12-pjrt", "0.5.3"): 104_655_464,
    ("default", "jax-cuda12-plugin", "0.5.3"): 16_699_554,
    ("default", "jax", "0.5.3"): 2_406_371,
    ("default", "numpy", "2.0.2"): 19_534_895,
    ("default", "pillow", "11.3.0"): 6_640_273,
    ("default", "nvidia-cublas-cu12", "12.4.5.8"): 363_438_805,
    ("default", "nvidia-cuda-cupti-cu12", "12.4.127"): 13_813_957,
    ("default", "nvidia-cuda-nvcc-cu12", "12.6.85"): 21_172_353,
    ("default", "nvidia-cuda-nvrtc-cu12", "12.4.127"): 24_640_306,
    ("default", "nvidia-cuda-runtime-cu12", "12.4.127"): 883_737,
    ("default", "nvidia-cudnn-cu12", "9.1.0.70"): 664_752_741,
    ("default", "nvidia-cufft-cu12", "11.2.1.3"): 211_459_117,
    ("default", "nvidia-curand-cu12", "10.3.5.147"): 56_305_206,
    ("default", "nvidia-cusolver-cu12", "11.6.1.9"): 127_936_057,
    ("default", "nvidia-cusparse-cu12", "12.3.1.170"): 207_454_763,
    ("default", "nvidia-cusparselt-cu12", "0.6.2"): 150_057_751,
    ("default", "nvidia-nccl-cu12", "2.21.5"): 188_654_414,
    ("default", "nvidia-nvjitlink-cu12", "12.4.127"): 21_066_810,
    ("default", "nvidia-nvtx-cu12", "12.4.127"): 99_144,
}


def web_specs(count: int) -> list[WheelSpec]:
    """``count`` packages in three versions each; package i depends on i+1 and i+2 (ranges)."""
    specs = []
    for i in range(count):
        for minor in range(3):
            requires = tuple(f"bench-pkg-{j:03d}>=1.{max(0, minor - 1)}" for j in (i + 1, i + 2) if j < count)
            specs.append(WheelSpec("default", "", f"bench-pkg-{i:03d}", f"1.{minor}.0", requires))
    return specs


PROFILE = """\
schema = 1
name = "bench"
description = "lock benchmark"

[frameworks]
torch = {{ version = "==2.6.0", torchvision = "*", torchaudio = "*" }}
jax = "==0.5.3"

[packages]
requirements = ["requests>=2", "python-dateutil", "bench-pkg-000"]

[install]
index_url = "{default}"
pytorch_index_url = "{pytorch}"
"""


def lock_once(exe: Path, profile: Path, resolver: str, out: Path) -> float:
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    with tempfile.TemporaryDirectory(prefix="colabenv-bench-cache-") as cache:
        env = clean_env(
            UV_CACHE_DIR=f"{cache}/uv",
            PIP_CACHE_DIR=f"{cache}/pip",
            XDG_CACHE_HOME=f"{cache}/xdg",
            TMPDIR=cache,
        )
        started = time.perf_counter()
        subprocess.run(
            [
                str(exe),
                "lock",
                str(profile),
                "-o",
                str(out),
                "--resolver",
                resolver,
                "--quiet",
                "--driver",
                "550.54.15",
                "--compute-capability",
                "7.5",
                "--python",
                python,
                "--installed-from",
                str(_empty_freeze(profile.parent)),
            ],
            check=True,
            env=env,
            capture_output=True,
            timeout=1200,
        )
        return time.perf_counter() - started


def _empty_freeze(folder: Path) -> Path:
    """A fresh target's ``pip freeze``: nothing installed. Without it the target would have this
    host's distributions, and a lock keeps an image's versions (issue 34): where the host has
    one no index here serves (its ``requests``), each lock would run its resolver twice."""
    path = folder / "fresh-target.txt"
    path.write_text("")
    return path


def _real_size(spec: WheelSpec) -> int | None:
    if spec.index == "pytorch" and spec.folder != "cu124":
        return None
    return REAL_SIZES.get((spec.index, spec.name, spec.version))


def bench_specs(count: int, scale: int = 1) -> list[WheelSpec]:
    """The stand-in set with the closure's big wheels at their real size divided by ``scale``,
    triton required by torch 2.6.0+cu124 as in reality, and ``count`` web packages."""
    triton = f"triton=={TRITON} ; {LINUX_X86_64}"
    specs = []
    for spec in standin_specs():
        size = _real_size(spec)
        if size is not None:
            spec = dataclasses.replace(spec, payload_bytes=size // scale)
        if spec.index == "pytorch" and spec.folder == "cu124" and spec.name == "torch":
            spec = dataclasses.replace(spec, requires=(*spec.requires, triton))
        specs.append(spec)
    specs.append(
        WheelSpec(
            "default",
            "",
            "triton",
            TRITON,
            requires_python=">=3.9",
            payload_bytes=REAL_SIZES[("default", "triton", TRITON)] // scale,
        )
    )
    return [*specs, *web_specs(count)]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5, help="runs of each (default 5)")
    parser.add_argument("--packages", type=int, default=60, help="synthetic packages (60)")
    parser.add_argument(
        "--scale", type=int, default=1, help="divide the real wheel sizes by this (default 1: real sizes)"
    )
    parser.add_argument(
        "--pytorch-metadata", action="store_true", help="the local PyTorch index serves PEP 658 metadata too"
    )
    parser.add_argument("--quick", action="store_true", help="3 runs of each, 30 packages")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    count = 30 if args.quick else args.packages
    scale = max(1, args.scale)

    exe = Path(sys.executable).parent / "colabenv"
    with tempfile.TemporaryDirectory(prefix="colabenv-bench-lock-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        standins = build_standins(root / "wheels", bench_specs(count, scale))
        built_s = time.perf_counter() - started
        with (
            LocalIndex(standins.default) as default,
            LocalIndex(standins.pytorch, metadata=args.pytorch_metadata) as pytorch,
        ):
            profile = root / "bench.toml"
            profile.write_text(PROFILE.format(default=default.url, pytorch=pytorch.base_url))
            lock_once(exe, profile, "uv", root / "warmup.lock")
            uv, pip_tools = alternate(
                runs,
                lambda: lock_once(exe, profile, "uv", root / "uv.lock"),
                lambda: lock_once(exe, profile, "pip-tools", root / "pip-tools.lock"),
                ("colabenv lock --resolver uv", "colabenv lock --resolver pip-tools"),
                warmup=False,
            )
            uv_pins = (root / "uv.lock").read_text().split("\n\n", 1)[1]
            pip_tools_pins = (root / "pip-tools.lock").read_text().split("\n\n", 1)[1]
            same = uv_pins == pip_tools_pins
            pinned = {
                line.split("==")[0]: line.split("==")[1].split()[0]
                for line in uv_pins.splitlines()
                if "==" in line
            }
        wheel_sizes = {(p.parent.name, p.name): p.stat().st_size for p in standins.wheels}

    closure_bytes = sum(
        size
        for (_, name), size in wheel_sizes.items()
        if any(name.startswith(f"{n.replace('-', '_')}-{v}-") for n, v in pinned.items())
    )
    ratio = uv.median / pip_tools.median
    sizes = "real sizes" if scale == 1 else f"real sizes / {scale}"
    print(
        f"runs: {runs} each, fresh cache per run; closure of {len(pinned)} packages, "
        f"{closure_bytes / 1e9:.2f} GB of wheels ({sizes}; torch "
        f"{REAL_SIZES[('pytorch', 'torch', '2.6.0+cu124')] / scale / 1e6:.0f} MB); PyTorch "
        f"index metadata: {'PEP 658' if args.pytorch_metadata else 'none, range requests'}; "
        f"wheels built in {built_s:.1f} s; identical pins: {'yes' if same else 'NO'}"
    )
    print(uv.describe())
    print(pip_tools.describe())
    print(f"goal (<= {GOAL}x): {'met' if ratio <= GOAL else 'NOT met'}")
    print(f"lock: {uv.median:.2f} s ({ratio:.3f}x vs pip-tools)")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
