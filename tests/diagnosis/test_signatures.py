"""The signature table of import errors: the shipped file loads, each cause is read from the
text its library really raises, and a table that breaks the rules is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from colabenv.diagnosis.signatures import (
    MAX_LINE,
    MAX_LINES,
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
