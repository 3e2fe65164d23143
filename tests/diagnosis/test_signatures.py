"""The signature table of import errors: the shipped file loads, each cause is read from the
text its library really raises, and a table that breaks the rules is refused."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from colabenv.diagnosis.signatures import (
    MAX_LINE,
    MAX_LINES,
    MAX_PATTERN,
    classify,
    error_lines,
    parse_signatures,
    shipped_signatures,
    wheel_for,
)
from colabenv.errors import CatalogError

NUMPY_ABI = """ImportError:
A module that was compiled using NumPy 1.x cannot be run in
NumPy 2.0.0 as it may crash. To support both 1.x and 2.x
versions of NumPy, modules must be compiled with NumPy 2.0."""

CASES = [
    (NUMPY_ABI, "numpy-abi"),
    ("AttributeError: _ARRAY_API not found", "numpy-abi"),
    (
        "ImportError: /usr/lib/python3/site-packages/ext/_C.cpython-311-x86_64-linux-gnu.so:"
        " undefined symbol: _ZN2at19UndefinedTensorImpl10_singletonE",
        "undefined-symbol",
    ),
    (
        "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory",
        "missing-library",
    ),
    (
        "OSError: libcublasLt.so.12: cannot open shared object file: No such file or directory",
        "missing-library",
    ),
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "no-kernel-image"),
    ("RuntimeError: CUDA error: invalid device function", "invalid-device-function"),
    (
        "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your"
        " GPU driver",
        "driver-too-old",
    ),
    ("RuntimeError: CUDA driver version is insufficient for CUDA runtime version", "driver-too-old"),
    ("ModuleNotFoundError: No module named 'einops'", "not-installed"),
]


@pytest.mark.parametrize(("text", "cause"), CASES, ids=[c for _, c in CASES])
def test_each_cause_is_read_from_the_text_its_library_raises(text: str, cause: str) -> None:
    found = classify(error_lines([text]), shipped_signatures())
    assert found is not None and found.cause == cause


def test_a_missing_library_names_the_wheel_that_ships_it() -> None:
    signatures = shipped_signatures()
    found = classify(
        ["ImportError: libcudnn_ops.so.9: cannot open shared object file: No such file"], signatures
    )
    assert found is not None and "nvidia-cudnn-cu12" in found.remedy
    assert "libcudnn_ops.so.9" in found.remedy
    assert wheel_for("libcublas.so.12", signatures) == "nvidia-cublas-cu12"
    assert wheel_for("libfoo.so.1", signatures) == "the package that ships it"


def test_an_error_nothing_matches_is_not_classified() -> None:
    assert classify(["RuntimeError: something else entirely"], shipped_signatures()) is None


def test_the_first_signature_wins_over_a_later_line() -> None:
    lines = error_lines([NUMPY_ABI, "ImportError: /x/_m.so: undefined symbol: PyArray_API"])
    found = classify(lines, shipped_signatures())
    assert found is not None and found.cause == "numpy-abi"


def test_every_shipped_entry_has_a_source() -> None:
    signatures = shipped_signatures()
    assert all(s.source.strip() for s in signatures.signatures)
    assert all(entry.source.strip() for entry in signatures.libraries)
    assert all(s.pattern.pattern.startswith("^") for s in signatures.signatures)


def test_the_lines_read_are_bounded() -> None:
    lines = error_lines(["x" * (MAX_LINE * 3)] + [f"line {i}" for i in range(MAX_LINES * 2)])
    assert len(lines) == MAX_LINES
    assert max(len(line) for line in lines) <= MAX_LINE
    assert lines[-1] == f"line {MAX_LINES * 2 - 1}"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ('cause = "numpy-abi"\npattern = "no anchor"\nremedy = "r"\nsource = "s"', r"starting with \^"),
        (
            'cause = "numpy-abi"\npattern = "^(unclosed"\nremedy = "r"\nsource = "s"',
            "not a regular expression",
        ),
        ('cause = "bad-luck"\npattern = "^x"\nremedy = "r"\nsource = "s"', "expected one of"),
        ('cause = "numpy-abi"\npattern = "^x"\nremedy = "r"', "source"),
    ],
)
def test_a_table_that_breaks_the_rules_is_refused(body: str, problem: str) -> None:
    data = f"schema = 1\n[[signature]]\n{body}\n".encode()
    with pytest.raises(CatalogError, match=problem):
        parse_signatures(data, Path("import_failures.toml"))


# The CUDA packages around the frameworks: each text as its package (or its issue thread) shows
# it, with the cause it is classified to and a word the remedy must name.
CUDA_PACKAGE_CASES = [
    pytest.param(
        "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
        "    PyTorch 2.2.0+cu121 with CUDA 1201 (you have 2.2.0+cpu)\n"
        "    Python  3.11.7 (you have 3.11.0)",
        "undefined-symbol",
        "xformers",
        id="xformers-built-for-another-torch",
    ),
    pytest.param(
        "WARNING:xformers:WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions."
        " xFormers was built for:\n"
        "    PyTorch 2.9.1+cu128 with CUDA 1208 (you have 2.8.0+cu128)\n"
        "ImportError: undefined symbol: _ZNK3c106SymInt22maybe_as_int_slow_pathEv",
        "undefined-symbol",
        "xformers",
        id="xformers-through-logging",
    ),
    pytest.param(
        "ImportError: /home/linjl/anaconda3/envs/sd/lib/python3.10/site-packages/"
        "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: "
        "_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
        "undefined-symbol",
        "flash-attn",
        id="flash-attn-undefined-symbol",
    ),
    pytest.param(
        "/home/ligy/anaconda3/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so:"
        " undefined symbol: _ZN3c104cuda9SetDeviceEi",
        "undefined-symbol",
        "flash-attn",
        id="flash-attn-through-transformers",
    ),
    pytest.param(
        "RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
        "unsupported-gpu",
        "Ampere",
        id="flash-attn-ampere",
    ),
    pytest.param(
        "WARNING 06-13 11:42:20 _custom_ops.py:11] Failed to import from vllm._C with ImportError("
        "'/usr/local/lib/python3.8/dist-packages/vllm/_C.abi3.so: undefined symbol: "
        "_ZN5torch7LibraryC1ENS0_4KindESsSt8optionalIN3c1011DispatchKeyEEPKcj')",
        "undefined-symbol",
        "vllm",
        id="vllm-warning",
    ),
    pytest.param(
        "ImportError: /workspace/vllm-abo/vllm/_C.abi3.so: undefined symbol:"
        " _ZN5torch3jit17parseSchemaOrNameERKSsb",
        "undefined-symbol",
        "vllm",
        id="vllm-import-error",
    ),
    pytest.param(
        "WARNING 11-25 10:20:00 [cuda.py:244] Failed to import from vllm._C_stable_libtorch: ImportError("
        "'/usr/local/lib/python3.12/dist-packages/vllm/_C_stable_libtorch.abi3.so: undefined symbol: "
        "_ZN3c104cuda9SetDeviceEi')",
        "undefined-symbol",
        "vllm",
        id="vllm-stable-libtorch-warning",
    ),
    pytest.param(
        "ImportError: /usr/local/lib/python3.12/dist-packages/vllm/_C_stable_libtorch.abi3.so: undefined"
        " symbol: _ZN3c104cuda9SetDeviceEi",
        "undefined-symbol",
        "vllm",
        id="vllm-stable-libtorch-import-error",
    ),
    pytest.param(
        "2024-03-27 06:33:23.219728338 [E:onnxruntime:Default, provider_bridge_ort.cc:1548 "
        "TryGetProviderInfo_CUDA] /onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1209 "
        "onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed "
        "to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.12: cannot open shared "
        "object file: No such file or directory",
        "missing-library",
        "nvidia-cublas-cu12",
        id="onnxruntime-cublaslt-12",
    ),
    pytest.param(
        "FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot "
        "open shared object file: No such file or directory",
        "missing-library",
        "nvidia-cudnn-cu12",
        id="onnxruntime-cudnn-9",
    ),
    pytest.param(
        "2024-08-22 13:01:04.2871671 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:965 "
        "onnxruntime::python::CreateExecutionProviderInstance] Failed to create CUDAExecutionProvider. "
        "Require cuDNN 9.* and CUDA 12.*, and the latest MSVC runtime. Please install all dependencies as "
        "mentioned in the GPU requirements page",
        "missing-library",
        "sessions run on the CPU",
        id="onnxruntime-cuda-provider-fallback",
    ),
    pytest.param(
        "/venv/lib/python3.10/site-packages/onnxruntime/capi/onnxruntime_inference_collection.py:118: "
        "UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider names."
        "Available providers: 'AzureExecutionProvider, CPUExecutionProvider'\n  warnings.warn(",
        "duplicate",
        "pip uninstall onnxruntime onnxruntime-gpu",
        id="onnxruntime-cpu-package",
    ),
    pytest.param(
        'File "cupy/cuda/runtime.pyx", line 136, in cupy.cuda.runtime.check_status\n'
        "cupy.cuda.runtime.CUDARuntimeError: cudaErrorNoDevice: no CUDA-capable device is detected",
        "no-gpu",
        "sees no GPU",
        id="cupy-no-device",
    ),
    pytest.param(
        "cupy_backends.cuda.api.driver.CUDADriverError: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is"
        " detected",
        "no-gpu",
        "CUDA_VISIBLE_DEVICES",
        id="cupy-driver-no-device",
    ),
    pytest.param(
        '    assert arch // 10 in [9, 10, 11], "Unsupported compute capability. Supported: 9.x, 10.x, 11.x"\n'
        "AssertionError: Unsupported compute capability. Supported: 9.x, 10.x, 11.x",
        "unsupported-gpu",
        "flash-attn-4",
        id="flash-attn-4-capability",
    ),
    pytest.param(
        'File ".../flash_attn/cute/flash_fwd_sm100.py", line 142, in __init__\n'
        "AssertionError: Only SM 10.x and 11.x are supported",
        "unsupported-gpu",
        "flash-attn-4",
        id="flash-attn-4-sm100-kernel",
    ),
    pytest.param(
        "ImportError: libcudf.so: cannot open shared object file: No such file or directory",
        "missing-library",
        "libcudf-cu12",
        id="cudf-libcudf",
    ),
    pytest.param(
        "ImportError: libcuml++.so: cannot open shared object file: No such file or directory",
        "missing-library",
        "libcuml-cu12",
        id="cuml-libcuml",
    ),
    pytest.param(
        "RuntimeError: CuPy failed to load libnvrtc.so.12: OSError: libnvrtc.so.12: cannot open shared "
        "object file: No such file or directory",
        "missing-library",
        "nvidia-cuda-nvrtc-cu12",
        id="cupy-nvrtc-12",
    ),
    pytest.param(
        "CuPy failed to load libnvrtc.so.13: OSError: libnvrtc.so.13: cannot open shared object file: No such"
        " file or directory",
        "missing-library",
        "nvidia-cuda-nvrtc (CUDA 13",
        id="cupy-nvrtc-13",
    ),
    pytest.param(
        "/usr/local/lib/python3.12/dist-packages/cupy/_environment.py:670: UserWarning:\n"
        "--------------------------------------------------------------------------------\n"
        "  CuPy may not function correctly because multiple CuPy packages are installed\n"
        "  in your environment:\n"
        "    cupy-cuda12x, cupy-cuda13x",
        "duplicate",
        "uninstall",
        id="cupy-two-packages",
    ),
    pytest.param(
        "ImportError: CuPy is not correctly installed.\n\nIf you are using wheel distribution (cupy-cudaXX),"
        " make sure that the version of CuPy you installed matches with the version of CUDA on your host.",
        "missing-library",
        "cupy-cudaNNx",
        id="cupy-not-correctly-installed",
    ),
    pytest.param(
        "Could not find the bitsandbytes CUDA binary at "
        "PosixPath('/notebooks/bitsandbytes/bitsandbytes/libbitsandbytes_cuda124.so')\n"
        "Could not load bitsandbytes native library:"
        " /notebooks/bitsandbytes/bitsandbytes/libbitsandbytes_cpu.so:"
        " cannot open shared object file: No such file or directory",
        "missing-library",
        "libbitsandbytes_cuda124.so",
        id="bitsandbytes-binary",
    ),
    pytest.param(
        "CUDA SETUP: Required library version not found: libbitsandbytes_cuda121_nocublaslt.so."
        " Maybe you need to compile it from source?",
        "missing-library",
        "libbitsandbytes_cuda121_nocublaslt.so",
        id="bitsandbytes-old-setup",
    ),
    pytest.param(
        "RuntimeError: \n        CUDA Setup failed despite GPU being available. Please run the following"
        " command to get more information:",
        "missing-library",
        "bitsandbytes",
        id="bitsandbytes-setup-failed",
    ),
    pytest.param(
        "cudf.errors.UnsupportedCUDAError: A GPU with NVIDIA Volta™ (Compute Capability 7.0) or newer"
        " architecture is required.\nDetected GPU 0: Tesla P100-SXM2-16GB",
        "unsupported-gpu",
        "RAPIDS",
        id="cudf-unsupported-gpu",
    ),
    pytest.param(
        "UserWarning: A GPU with NVIDIA Pascal™ (Compute Capability 6.0) or newer architecture is required.",
        "unsupported-gpu",
        "RAPIDS",
        id="cudf-unsupported-gpu-warning",
    ),
    pytest.param(
        "RuntimeError: This cuDF installation is missing the necessary PTX files that are <=52.",
        "unsupported-gpu",
        "RAPIDS",
        id="cudf-missing-ptx",
    ),
    pytest.param(
        "cudf.errors.UnSupportedCUDAError: Please update your NVIDIA GPU Driver to support CUDA"
        "      Runtime.\n"
        "Detected CUDA Runtime version : 11020\nLatest version of CUDA supported by current NVIDIA GPU Driver"
        " : 11000",
        "driver-too-old",
        "driver",
        id="cudf-driver-too-old",
    ),
]


@pytest.mark.parametrize(("text", "cause", "named"), CUDA_PACKAGE_CASES)
def test_the_cuda_packages_failures_are_read_from_their_own_text(text: str, cause: str, named: str) -> None:
    found = classify(error_lines([text]), shipped_signatures())
    assert found is not None, text
    assert found.cause == cause
    assert named in found.remedy


def test_a_package_signature_wins_over_the_generic_one() -> None:
    """flash-attn's undefined symbol is also the generic one's: the specific remedy is given."""
    found = classify(
        [
            "ImportError: /x/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined symbol:"
            " _ZN3c104cuda9SetDeviceEi"
        ],
        shipped_signatures(),
    )
    assert found is not None and "flash-attn" in found.remedy and "_ZN3c104cuda9SetDeviceEi" in found.remedy
    generic = classify(["ImportError: /x/_ext.so: undefined symbol: _Zfoo"], shipped_signatures())
    assert generic is not None and generic.cause == "undefined-symbol" and "flash-attn" not in generic.remedy


def test_the_cuda_libraries_name_the_wheels_that_ship_them() -> None:
    signatures = shipped_signatures()
    assert wheel_for("libcublasLt.so.13", signatures).startswith("nvidia-cublas ")
    assert wheel_for("libcublas.so.13", signatures).startswith("nvidia-cublas ")
    assert wheel_for("libnvrtc.so.12", signatures) == "nvidia-cuda-nvrtc-cu12"
    assert wheel_for("libnvrtc-builtins.so.13", signatures).startswith("nvidia-cuda-nvrtc ")
    assert wheel_for("libcublasLt.so.12", signatures) == "nvidia-cublas-cu12"


def test_every_entry_is_anchored_cheap_and_matches_its_own_example() -> None:
    signatures = shipped_signatures()
    entries = [*signatures.signatures, *signatures.libraries]
    causes = {s.cause for s in signatures.signatures}
    assert {"unsupported-gpu", "duplicate"} <= causes
    hostile = [
        "x" * MAX_LINE,
        " " * MAX_LINE,
        "/" * MAX_LINE,
        "ImportError: " + "/a" * (MAX_LINE // 2),
        "WARNING " + "]" * MAX_LINE,
        "Failed to import from vllm._C with ImportError(" + "a: " * (MAX_LINE // 3),
    ]
    for entry in entries:
        assert entry.pattern.pattern.startswith("^"), entry.pattern.pattern
        assert len(entry.pattern.pattern) <= MAX_PATTERN
        assert entry.example, f"no example for {entry.pattern.pattern}"
        assert entry.pattern.match(entry.example) is not None, entry.pattern.pattern
        assert entry.source.strip().startswith(("https://", "profiles/catalog/"))
        started = time.perf_counter()
        for line in hostile:
            entry.pattern.match(line[:MAX_LINE])
        assert time.perf_counter() - started < 0.25, f"slow pattern: {entry.pattern.pattern}"


def test_an_example_its_pattern_does_not_match_is_refused() -> None:
    data = (
        b'schema = 1\n[[signature]]\ncause = "duplicate"\npattern = "^CuPy may not"\nremedy = "r"\n'
        b'source = "s"\nexample = "cupy may not"\n'
    )
    with pytest.raises(CatalogError, match="pattern matches"):
        parse_signatures(data, Path("import_failures.toml"))
    library = (
        b'schema = 1\n[[signature]]\ncause = "duplicate"\npattern = "^x"\nremedy = "r"\nsource = "s"\n'
        b'[[library]]\npattern = "^libnvrtc\\\\.so\\\\.12"\nwheel = "w"\nsource = "s"\n'
        b'example = "libnvrtc.so.13"\n'
    )
    with pytest.raises(CatalogError, match=r"library\[0\]\.example"):
        parse_signatures(library, Path("import_failures.toml"))


def test_a_real_import_that_fails_with_a_cuda_package_text_is_classified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real children import modules that fail as the packages do (the text on stderr, or in the
    error raised): doctor's import findings name the module and the package's own cause."""
    from colabenv.diagnosis.imports import ImportTarget, import_findings, run_imports
    from colabenv.host.installed import scan_path

    (tmp_path / "fake_flash_attn.py").write_text(
        "raise ImportError('/site/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined symbol:"
        " _ZN3c104cuda9SetDeviceEi')\n"
    )
    (tmp_path / "fake_cupy.py").write_text(
        "import sys\n"
        "sys.stderr.write('UserWarning:\\n  CuPy may not function correctly because multiple CuPy packages"
        " are installed\\n  in your environment:\\n    cupy-cuda12x, cupy-cuda13x\\n')\n"
        "raise ImportError('CuPy is not correctly installed.')\n"
    )
    (tmp_path / "fake_bnb.py").write_text(
        "import sys\n"
        'sys.stderr.write("Could not find the bitsandbytes CUDA binary at'
        " PosixPath('/site/bitsandbytes/libbitsandbytes_cuda124.so')\\n\")\n"
        "raise RuntimeError('CUDA Setup failed despite GPU being available.')\n"
    )
    (tmp_path / "fake_cudf.py").write_text(
        "raise RuntimeError('A GPU with NVIDIA Volta\\u2122 (Compute Capability 7.0) or newer architecture is"
        " required.')\n"
    )
    monkeypatch.chdir(tmp_path)
    names = ["fake_flash_attn", "fake_cupy", "fake_bnb", "fake_cudf"]
    outcomes = run_imports([ImportTarget(n) for n in names], sys.executable, timeout=60.0)
    found = {f.module: f for f in import_findings(outcomes, scan_path([]), shipped_signatures())}
    assert {m: found[m].cause for m in names} == {
        "fake_flash_attn": "undefined-symbol",
        "fake_cupy": "duplicate",
        "fake_bnb": "missing-library",
        "fake_cudf": "unsupported-gpu",
    }
    assert "flash-attn" in found["fake_flash_attn"].remedy
    assert "libbitsandbytes_cuda124.so" in found["fake_bnb"].remedy
