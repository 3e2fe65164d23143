"""ROCm's failure signatures, each read from the text of the upstream thread its entry in
``profiles/catalog/import_failures.toml`` cites, and ``HSA_OVERRIDE_GFX_VERSION`` read from the
notebook's environment and judged against the installed torch's gfx list (the catalog's), with
the values those threads set it to."""

from __future__ import annotations

from pathlib import Path

import pytest

from colabenv.catalog.load import shipped_catalog
from colabenv.diagnosis.gpu_variables import gpu_variable_findings, installed_torch_gfx, override_gfx
from colabenv.diagnosis.run import doctor, find_gpu_variables
from colabenv.diagnosis.signatures import classify, error_lines, parse_signatures, shipped_signatures
from colabenv.errors import CatalogError
from colabenv.host.installed import scan_path
from colabenv.models import Catalog, Framework
from tests.support.dists import add_dist

ROCM_CASES = [
    pytest.param(
        # https://github.com/pytorch/pytorch/issues/132570 (a Radeon 5700 XT, gfx1010)
        "RuntimeError: HIP error: invalid device function\n"
        "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below"
        " might be incorrect.\n"
        "For debugging consider passing AMD_SERIALIZE_KERNEL=3\n"
        "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertion",
        "invalid-device-function",
        ("torch ROCm build whose gfx list has it", "--gfx", "unset HSA_OVERRIDE_GFX_VERSION"),
        id="hip-invalid-device-function",
    ),
    pytest.param(
        # https://github.com/ROCm/hip/issues/3799 (torch.cuda's lazy init on an MI300 host)
        '  File "/home/guest/project/pytorch/torch/cuda/__init__.py", line 383, in _lazy_init\n'
        "    torch._C._cuda_init()\n"
        "RuntimeError: No HIP GPUs are available",
        "no-gpu",
        ("render and video groups", "--device=/dev/kfd", "ROCR_VISIBLE_DEVICES", "CUDA or CPU build"),
        id="no-hip-gpus",
    ),
    pytest.param(
        # https://github.com/ROCm/legacy-rocm-build/issues/1753 (its title)
        "ImportError: libamdhip64.so.5: cannot open shared object file: No such file or directory",
        "missing-library",
        ("libamdhip64.so.5 is ROCm's HIP runtime", "LD_LIBRARY_PATH=/opt/rocm/lib", "--rocm X.Y"),
        id="libamdhip64-importerror",
    ),
    pytest.param(
        # https://github.com/ROCm/tensorflow-upstream/issues/1207 (tensorflow-rocm on ROCm 4.0)
        '  File "/home/cheny_admin/.pyenv/versions/py3.8-rocm/lib/python3.8/site-packages/tensorflow/python/'
        'pywrap_tensorflow.py", line 64, in <module>\n'
        "    from tensorflow.python._pywrap_tensorflow_internal import *\n"
        "ImportError: libamdhip64.so.3: cannot open shared object file: No such file or directory",
        "missing-library",
        ("libamdhip64.so.3 is ROCm's HIP runtime", "ldconfig"),
        id="libamdhip64-tensorflow-rocm",
    ),
    pytest.param(
        # https://github.com/mozilla-ai/llamafile/issues/547 (the loader's text, not an exception's)
        "link_cuda_dso: warning: libamdhip64.so.6: cannot open shared object file: No such file or directory:"
        " failed to load library",
        "missing-library",
        ("libamdhip64.so.6 is ROCm's HIP runtime",),
        id="libamdhip64-dlopen",
    ),
]


@pytest.mark.parametrize(("text", "cause", "named"), ROCM_CASES)
def test_rocm_failures_are_read_from_the_text_their_threads_quote(
    text: str, cause: str, named: tuple[str, ...]
) -> None:
    found = classify(error_lines([text]), shipped_signatures())
    assert found is not None, text
    assert found.cause == cause
    for words in named:
        assert words in found.remedy, words


def test_the_rocm_signatures_win_over_the_cuda_ones() -> None:
    """The generic invalid-device-function remedy speaks of compute capabilities, the generic
    missing-library one of a wheel: a HIP text gets ROCm's."""
    hip = classify(["RuntimeError: HIP error: invalid device function"], shipped_signatures())
    cuda = classify(["RuntimeError: CUDA error: invalid device function"], shipped_signatures())
    assert hip is not None and cuda is not None and hip.cause == cuda.cause
    assert "gfx" in hip.remedy and "gfx" not in cuda.remedy
    library = classify(
        ["ImportError: libamdhip64.so.6: cannot open shared object file"], shipped_signatures()
    )
    assert library is not None and "the package that ships it" not in library.remedy


def test_each_rocm_entry_has_its_thread_and_example() -> None:
    signatures = shipped_signatures()
    rocm = [s for s in signatures.signatures if "HIP" in s.example or "libamdhip64" in s.example]
    assert len(rocm) == 3
    for entry in rocm:
        assert entry.source.startswith("https://github.com/")
        assert entry.pattern.match(entry.example)
    (variable,) = signatures.variables
    assert variable.name == "HSA_OVERRIDE_GFX_VERSION" and variable.cause == "hsa-override"
    assert variable.example == "HSA_OVERRIDE_GFX_VERSION=10.3.0"
    assert "https://github.com/pytorch/pytorch/issues/132570" in variable.source


def test_a_variable_entry_that_breaks_the_rules_is_refused() -> None:
    head = b'schema = 1\n[[signature]]\ncause = "duplicate"\npattern = "^x"\nremedy = "r"\nsource = "s"\n'
    bad_example = head + (
        b'[[variable]]\nname = "HSA_OVERRIDE_GFX_VERSION"\ncause = "hsa-override"\nremedy = "r"\n'
        b'source = "s"\nexample = "HSA_OVERRIDE=10.3.0"\n'
    )
    with pytest.raises(CatalogError, match="HSA_OVERRIDE_GFX_VERSION=VALUE"):
        parse_signatures(bad_example, Path("import_failures.toml"))
    bad_cause = bad_example.replace(b'"hsa-override"', b'"unknown"')
    with pytest.raises(CatalogError, match="hsa-override"):
        parse_signatures(bad_cause, Path("import_failures.toml"))


@pytest.mark.parametrize(
    ("value", "gfx"),
    [
        ("10.3.0", "gfx1030"),
        ("11.0.0", "gfx1100"),
        ("11.5.1", "gfx1151"),
        ("9.4.2", "gfx942"),
        ("9.0.10", "gfx90a"),
    ],
)
def test_an_override_is_read_as_rocm_reads_it(value: str, gfx: str) -> None:
    assert override_gfx(value) == gfx


@pytest.mark.parametrize("value", ["", "gfx1030", "10.3", "10.3.0.1", "11.0.x", "9.0.16"])
def test_a_value_rocm_refuses_spells_no_gfx(value: str) -> None:
    assert override_gfx(value) is None


def torch_site(tmp_path: Path, version: str) -> Path:
    site = tmp_path / "site"
    add_dist(site, "torch", {"torch/__init__.py": ""}, version=version)
    return site


def test_an_override_to_a_gfx_the_installed_build_lacks_is_a_finding(tmp_path: Path) -> None:
    """likelovewant/ROCmLibs-for-gfx1103-AMD780M-APU#37: 11.5.1 (gfx1151) with a torch build that
    has no gfx1151 kernels; torch 2.4.1's rocm6.1 list is the catalog's, read at the release."""
    installed = installed_torch_gfx(scan_path([str(torch_site(tmp_path, "2.4.1+rocm6.1"))]), catalog())
    assert installed is not None and installed.gfx is not None and "gfx1151" not in installed.gfx
    findings, notes = gpu_variable_findings(
        {"HSA_OVERRIDE_GFX_VERSION": "11.5.1"}, installed, shipped_signatures().variables
    )
    (finding,) = findings
    assert notes == ()
    assert (finding.kind, finding.cause) == ("gpu-variable", "hsa-override")
    assert (
        "as gfx1151" in finding.summary
        and "torch 2.4.1+rocm6.1 has no kernels for gfx1151" in finding.summary
    )
    assert finding.remedy.startswith("unset HSA_OVERRIDE_GFX_VERSION")
    assert "gfx1030, gfx1100, gfx942" in finding.remedy and "--gfx" in finding.remedy
    assert any("HSA_OVERRIDE_GFX_VERSION=11.5.1" in e.text for e in finding.evidence)


def test_an_override_the_build_has_kernels_for_is_said_not_found(tmp_path: Path) -> None:
    """pytorch/pytorch#132570: HSA_OVERRIDE_GFX_VERSION=10.3.0 (gfx1030) with torch 2.5.1+rocm6.2."""
    installed = installed_torch_gfx(scan_path([str(torch_site(tmp_path, "2.5.1+rocm6.2"))]), catalog())
    findings, notes = gpu_variable_findings(
        {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}, installed, shipped_signatures().variables
    )
    assert findings == ()
    assert notes == (
        "GPU variables: HSA_OVERRIDE_GFX_VERSION=10.3.0 makes ROCm report every AMD GPU as gfx1030, which"
        " torch 2.5.1+rocm6.2 has kernels for",
    )


def test_an_override_is_said_where_the_gfx_list_is_not_known(tmp_path: Path) -> None:
    entries = shipped_signatures().variables
    cuda = installed_torch_gfx(scan_path([str(torch_site(tmp_path, "2.4.1+cu121"))]), catalog())
    _, notes = gpu_variable_findings({"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}, cuda, entries)
    assert notes == (
        "GPU variables: HSA_OVERRIDE_GFX_VERSION=11.0.0 makes ROCm report every AMD GPU as gfx1100; the"
        " installed build's gfx list is not known (torch 2.4.1+cu121: it is not a ROCm build (no +rocmX.Y"
        " local tag))",
    )
    _, notes = gpu_variable_findings({"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}, None, entries)
    assert notes[0].endswith("(no torch is installed)")
    assert gpu_variable_findings({}, None, entries) == ((), ())


def test_an_empty_override_is_a_finding() -> None:
    """ROCm/rocm-systems#5686: an empty value (set so by a container) fell back to gfx000."""
    (finding,), _ = gpu_variable_findings(
        {"HSA_OVERRIDE_GFX_VERSION": ""}, None, shipped_signatures().variables
    )
    assert finding.cause == "hsa-override" and "is not major.minor.stepping" in finding.summary


def test_doctor_reads_the_override_from_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole finder: the variable from this process's environment, torch from the path."""
    monkeypatch.syspath_prepend(str(torch_site(tmp_path, "2.4.1+rocm6.1")))
    monkeypatch.setenv("HSA_OVERRIDE_GFX_VERSION", "11.5.1")
    report = doctor(finders=(find_gpu_variables,))
    assert [(f.kind, f.cause) for f in report.findings] == [("gpu-variable", "hsa-override")]
    monkeypatch.delenv("HSA_OVERRIDE_GFX_VERSION")
    assert doctor(finders=(find_gpu_variables,)).findings == ()


def catalog() -> Catalog:
    return shipped_catalog([Framework.TORCH])
