"""``colabenv catalog refresh`` against stand-in indexes on 127.0.0.1 (tests/support/
refresh_standins.py): wheels with METADATA, tags, local versions, version.py / build_info.py and
GPU code; the file it writes loads, validates and resolves; what the catalog has is kept and a
contradiction is reported; an index that cannot be read is exit 4. The ``network`` test refreshes
jax from the real index."""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from colabenv.catalog.load import load_overlay
from colabenv.curation.refresh.frameworks import build_info
from colabenv.curation.refresh.sources import (
    Metadata,
    cuda_of_tag,
    parse_metadata,
    pin_text,
    python_range,
    requirements_of,
)
from colabenv.index.client import parse_project_page
from colabenv.models import Framework
from tests.support.fixtures import Runner
from tests.support.index import LocalIndex
from tests.support.refresh_standins import (
    BASE_TORCH,
    CUDA_NOTES,
    CUDA_NOTES_139,
    CUDA_NOTES_ROWS,
    JAX_PLUGIN_PINS,
    TORCH_91_CU130_PINS,
    build_refresh_indexes,
    notes_page,
)

H200 = ("--driver", "580.95.05", "--compute-capability", "9.0", "--python", "3.12")


@pytest.fixture(scope="module")
def standins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("refresh-standins")
    build_refresh_indexes(root)
    return root


@pytest.fixture
def indexes(standins: Path) -> Iterator[tuple[LocalIndex, LocalIndex]]:
    with LocalIndex(standins / "default") as default, LocalIndex(standins / "pytorch") as pytorch:
        yield default, pytorch


def _refresh(
    runner: Runner, standins: Path, indexes: tuple[LocalIndex, LocalIndex], framework: str, *args: str | Path
) -> tuple[int, str, str]:
    default, pytorch = indexes
    extra: list[str | Path] = []
    if framework == "torch":
        extra = ["--pytorch-index", pytorch.url]
        if "--cuda-notes" not in args:
            extra += ["--cuda-notes", f"{pytorch.base_url}/files/{CUDA_NOTES}"]
    done = runner(
        "catalog",
        "refresh",
        framework,
        "--index",
        default.url,
        *extra,
        "--catalog",
        standins / "base",
        *args,
        timeout=300,
    )
    return done.returncode, done.stdout, done.stderr


def _profile(tmp_path: Path, frameworks: str) -> Path:
    path = tmp_path / "p.toml"
    path.write_text(f'name = "p"\n[frameworks]\n{frameworks}\n', encoding="utf-8")
    return path


def test_refresh_torch_writes_a_file_that_loads_resolves_and_keeps_the_catalog(
    runner: Runner, standins: Path, indexes: tuple[LocalIndex, LocalIndex], tmp_path: Path
) -> None:
    out = tmp_path / "team-catalog"
    out.mkdir()
    code, stdout, stderr = _refresh(runner, standins, indexes, "torch", "-o", out)
    assert code == 1, stderr  # a contradiction was found
    written = (out / "torch.toml").read_text(encoding="utf-8")
    assert written.startswith(BASE_TORCH.rstrip("\n").rsplit("\n", 1)[0]), (
        "the catalog's text stays as it was, comments included"
    )
    assert (
        f"wrote {out / 'torch.toml'}: 1 release(s) added (9.2.0); 1 build(s) added to "
        "known releases (9.1.0 cu126); 1 contradiction(s) reported" in stdout
    )
    assert (
        "contradiction: torch 9.1.0 cu130: pins: the catalog has [nvidia-cudnn-cu13==9.20.0.48" in stderr
        and "the index says [nvidia-cudnn-cu13==9.24.0.43" in stderr
    )
    assert "note: torch 9.2.0 cu139 left out: drivers.toml has no driver for CUDA 13.9" in stderr
    assert "name no driver for CUDA 13.9" in stderr, "the release notes were read, and lack it"
    assert not (out / "drivers.toml").exists()

    overlay = load_overlay(out, "test", [Framework.TORCH])
    releases = {str(r.version): r for r in overlay.releases}
    new = releases["9.2.0"]
    assert new.default_variant == "cu132"
    assert new.python == SpecifierSet(">=3.12,<3.14,!=3.12.4"), "the patch release the wheels exclude"
    assert 'python = ">=3.12,!=3.12.4,<3.14"' in written
    assert [v.name for v in new.variants] == ["cu132", "cu130", "cpu"]
    companions = {str(c.name): (str(c.version), c.follows_variant, c.python) for c in new.companions}
    assert companions == {
        "torchvision": ("0.99.1", True, SpecifierSet(">=3.10,!=3.13.1")),
        "torchaudio": ("9.0.0", False, None),
    }, "a companion's own range is written where it leaves out a Python the release has"
    assert 'torchvision = { version = "0.99.1", python = ">=3.10,!=3.13.1" }' in written
    cu132 = new.variant("cu132")
    assert cu132 is not None and cu132.unconfirmed is None
    assert cu132.cuda == Version("13.2")
    assert cu132.pin_texts == (
        "cuda-toolkit[cublas,cudart]==13.2.1",
        "nvidia-cudnn-cu13==9.26.0.51",
        "nvidia-nccl-cu13==2.30.7",
    )
    assert [str(a) for a in cu132.archs] == ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
    assert 'archs = "turing"' in written, "an arch list equal to a named one is written by name"
    assert cu132.index_url == "https://download.pytorch.org/whl/cu132"
    known = releases["9.1.0"]
    cu130 = known.variant("cu130")
    assert cu130 is not None and cu130.pin_texts[0] == "nvidia-cudnn-cu13==9.20.0.48", (
        "the contradicted entry is kept as the catalog has it"
    )
    assert TORCH_91_CU130_PINS[0] not in cu130.pin_texts
    assert {v.name for v in known.variants} == {"cu130", "cu126", "cpu"}

    profile = _profile(tmp_path, 'torch = ">=9.2"')
    done = runner("resolve", profile, "--json", *H200, env={"COLABENV_CATALOG": str(out)})
    assert done.returncode == 0, done.stderr
    torch = json.loads(done.stdout)["frameworks"]["torch"]
    assert torch["version"] == "9.2.0"
    assert torch["catalog_file"] == str(out / "torch.toml")

    again = runner(
        "catalog",
        "refresh",
        "torch",
        "--index",
        indexes[0].url,
        "--pytorch-index",
        indexes[1].url,
        "--cuda-notes",
        f"{indexes[1].base_url}/files/{CUDA_NOTES}",
        "-o",
        out,
        timeout=300,
    )
    assert again.returncode == 0, "9.2.0, now the newest in the file, is all it examines"
    assert "nothing to add" in again.stdout, "a second run starts from -o DIR's file"
    assert (out / "torch.toml").read_text(encoding="utf-8") == written


def test_refresh_proposes_the_driver_entries_the_release_notes_give(
    runner: Runner, standins: Path, indexes: tuple[LocalIndex, LocalIndex], tmp_path: Path
) -> None:
    """A build whose CUDA line the driver table lacks: Table 3 of the release notes gives every
    release of that line (GA and updates), written to drivers.toml, and the build is kept."""
    out = tmp_path / "team-catalog"
    out.mkdir()
    notes = f"{indexes[1].base_url}/files/{CUDA_NOTES_139}"
    code, stdout, stderr = _refresh(runner, standins, indexes, "torch", "-o", out, "--cuda-notes", notes)
    assert code == 1, stderr
    assert "2 driver entries added to drivers.toml (13.9 GA, 13.9 Update 1)" in stdout
    assert "cu139 left out" not in stderr
    drivers = (out / "drivers.toml").read_text(encoding="utf-8")
    assert 'version = "13.9.1"\nlabel = "13.9 Update 1"\ndriver = "699.20.03"' in drivers
    assert "13.3" not in drivers, "only the line a build needs, and only what the table lacks"
    overlay = load_overlay(out, "test", [Framework.TORCH])
    assert {str(t.version): str(t.toolkit_driver) for t in overlay.toolkits} == {
        "13.9.0": "699.10.1",
        "13.9.1": "699.20.3",
    }
    assert all("Table 3" in t.source.text and notes in t.source.text for t in overlay.toolkits)
    release = next(r for r in overlay.releases if r.version == Version("9.2.0"))
    assert "cu139" in [v.name for v in release.variants]
    profile = _profile(tmp_path, 'torch = { version = ">=9.2", variant = "cu139" }')
    new_driver = ("--driver", "699.20.03", "--compute-capability", "9.0", "--python", "3.12")
    done = runner("resolve", profile, "--json", *new_driver, env={"COLABENV_CATALOG": str(out)})
    assert done.returncode == 0, done.stderr
    torch = json.loads(done.stdout)["frameworks"]["torch"]
    assert (torch["version"], torch["variant"]) == ("9.2.0", "cu139")

    code, stdout, stderr = _refresh(runner, standins, indexes, "torch", "--cuda-notes", notes)
    assert "+++ b/drivers.toml" in stdout and '+label = "13.9 GA"' in stdout, "without -o: a diff"


def test_release_notes_rows() -> None:
    from colabenv.curation.refresh.sources import toolkit_rows

    page = notes_page(*CUDA_NOTES_ROWS, ("CUDA 11.3.1 Update 1", "&gt;=465.19.01"))
    found = {(str(t.version), t.label, str(t.toolkit_driver)) for t in toolkit_rows(page.encode(), "u")}
    assert found == {
        ("13.3.1", "13.3 Update 1", "610.43.2"),
        ("13.3.0", "13.3 GA", "610.43.2"),
        ("13.2.1", "13.2 Update 1", "595.58.3"),
        ("13.0.2", "13.0 Update 2", "580.95.5"),
        ("11.3.1", "11.3 Update 1", "465.19.1"),
    }, "the Developer Preview row names no driver and is left out"
    assert toolkit_rows(b"<table><tr><td>CUDA 13.3 GA</td></tr></table>", "u") == ()


def test_refresh_without_o_prints_a_diff_and_writes_nothing(
    runner: Runner, standins: Path, indexes: tuple[LocalIndex, LocalIndex]
) -> None:
    before = (standins / "base" / "torch.toml").read_bytes()
    code, stdout, stderr = _refresh(runner, standins, indexes, "torch")
    assert code == 1
    assert stdout.startswith("--- a/torch.toml\n+++ b/torch.toml\n")
    assert '+version = "9.2.0"' in stdout
    assert '+name = "cu126"' in stdout
    assert not any(line.startswith("-") and not line.startswith("---") for line in stdout.splitlines()), (
        "nothing the catalog has is taken away"
    )
    assert "1 release(s) added (9.2.0)" in stderr
    assert (standins / "base" / "torch.toml").read_bytes() == before


def test_refresh_an_unreachable_index_is_exit_4_and_writes_nothing(
    runner: Runner, standins: Path, tmp_path: Path
) -> None:
    with LocalIndex(standins / "default") as gone:
        url = gone.url
    out = tmp_path / "out"
    out.mkdir()
    started = time.monotonic()
    done = runner("catalog", "refresh", "jax", "--index", url, "--catalog", standins / "base", "-o", out)
    assert done.returncode == 4
    assert "unreachable" in done.stderr
    assert done.stdout == ""
    assert list(out.iterdir()) == []
    assert time.monotonic() - started < 60


def test_refresh_torch_unreachable_pytorch_index_is_exit_4_unless_not_read(
    runner: Runner, standins: Path, indexes: tuple[LocalIndex, LocalIndex], tmp_path: Path
) -> None:
    default, _ = indexes
    with LocalIndex(standins / "pytorch") as gone:
        url = gone.url
    done = runner(
        "catalog",
        "refresh",
        "torch",
        "--index",
        default.url,
        "--pytorch-index",
        url,
        "--catalog",
        standins / "base",
    )
    assert done.returncode == 4, done.stderr
    out = tmp_path / "out"
    out.mkdir()
    done = runner(
        "catalog",
        "refresh",
        "torch",
        "--index",
        default.url,
        "--no-variant-index",
        "--catalog",
        standins / "base",
        "-o",
        out,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr  # the 9.1.0 pins still contradict
    release = next(
        r for r in load_overlay(out, "t", [Framework.TORCH]).releases if r.version == Version("9.2.0")
    )
    assert [v.name for v in release.variants] == ["cu132", "cpu"]
    cpu = release.variant("cpu")
    assert cpu is not None and cpu.unconfirmed is not None
    assert "carried over from 9.1.0" in cpu.unconfirmed
    assert (
        "the PyTorch index was not read, so the builds 9.1.0 has besides (cu130) are not "
        "listed" in done.stderr
    )
    assert "9.1.0 cu126" not in done.stdout, "no build is added to 9.1.0 without the index"


def test_refresh_archs_carry_marks_unconfirmed_and_the_resolver_asks_for_the_flag(
    runner: Runner, standins: Path, indexes: tuple[LocalIndex, LocalIndex], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    code, _, stderr = _refresh(runner, standins, indexes, "jax", "--archs", "carry", "-o", out)
    assert code == 0, stderr
    release = next(
        r for r in load_overlay(out, "t", [Framework.JAX]).releases if r.version == Version("9.1.0")
    )
    cuda12 = release.variant("cuda12")
    assert cuda12 is not None
    assert cuda12.unconfirmed == (
        "archs carried over from 9.0.0 cuda12: the wheels were not read (--archs carry)"
    )
    assert "the catalog lists" not in stderr, "a build left out is not a build the index lacks"
    assert release.variant("cuda13") is None
    assert "jax 9.1.0 cuda13 left out: no arch list" in stderr
    written = (out / "jax.toml").read_text(encoding="utf-8")
    assert 'unconfirmed = true\nunconfirmed_reason = "archs carried over from 9.0.0 cuda12' in written
    profile = _profile(tmp_path, 'jax = ">=9.1"')
    env = {"COLABENV_CATALOG": str(out)}
    refused = runner("resolve", profile, *H200, env=env)
    assert refused.returncode == 3
    assert "jax 9.1.0: cuda12 is unconfirmed (archs carried over from 9.0.0 cuda12" in refused.stderr
    assert "jax 9.1.1: cuda12 is unconfirmed (archs carried over from 9.1.0 cuda12" in refused.stderr
    allowed = runner("resolve", profile, "--allow-unconfirmed", *H200, env=env)
    assert allowed.returncode == 0, allowed.stderr
    assert "jax 9.1.1 cuda12" in allowed.stdout


def test_refresh_jax_without_pep_658_reads_metadata_from_the_wheels(
    runner: Runner, standins: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with LocalIndex(standins / "default", metadata=False) as index:
        done = runner(
            "catalog",
            "refresh",
            "jax",
            "--index",
            index.url,
            "--catalog",
            standins / "base",
            "-o",
            out,
            timeout=300,
        )
        assert not any(path.endswith(".metadata") for path in index.requests)
        assert any(path.endswith(".whl") for path in index.requests)
    assert done.returncode == 0, done.stderr
    assert "2 release(s) added (9.1.0, 9.1.1)" in done.stdout
    releases = {str(r.version): r for r in load_overlay(out, "t", [Framework.JAX]).releases}
    patch = releases["9.1.1"]
    assert {str(c.name): str(c.version) for c in patch.companions} == {"jaxlib": "9.1.0"}
    patch_cuda12 = patch.variant("cuda12")
    assert patch_cuda12 is not None
    assert patch_cuda12.pin_texts == ("nvidia-cuda-nvcc-cu12>=12.6.85", *JAX_PLUGIN_PINS), (
        "the extra's own pins, then the 9.1.0 plugin's (the newest the extra admits)"
    )
    assert "jax_cuda12_plugin-9.1.0-" in patch_cuda12.source.text
    release = releases["9.1.0"]
    assert release.python == SpecifierSet(">=3.12,<3.15")
    assert release.default_variant == "cuda12"
    assert [v.name for v in release.variants] == ["cuda12", "cuda13", "cpu"]
    assert {str(c.name): str(c.version) for c in release.companions} == {"jaxlib": "9.1.0"}
    cuda12, cuda13 = release.variant("cuda12"), release.variant("cuda13")
    assert cuda12 is not None and cuda13 is not None
    assert cuda12.cuda == Version("12.9"), "carried over from 9.0.0, said so in its source"
    assert "cuda: carried over from 9.0.0" in cuda12.source.text
    assert cuda13.cuda == Version("13.0")
    assert cuda13.pin_texts == (
        "nvidia-cudnn-cu13>=9.12.0.46,<10.0",
        "nvidia-cuda-runtime>=13.0.48",
        "nvidia-nvvm",
    )
    assert "sm_75" in [str(a) for a in cuda13.archs]
    assert cuda12.extra == "cuda12" and cuda12.unconfirmed is None
    profile = _profile(tmp_path, 'jax = ">=9.1"')
    resolved = runner("resolve", profile, "--json", *H200, env={"COLABENV_CATALOG": str(out)})
    assert resolved.returncode == 0, resolved.stderr
    jax = json.loads(resolved.stdout)["frameworks"]["jax"]
    assert (jax["version"], jax["variant"]) == ("9.1.1", "cuda12")
    assert "jaxlib==9.1.0" in jax["requirements"]


def test_refresh_tensorflow_reads_build_info_and_the_libraries(
    runner: Runner, standins: Path, indexes: tuple[LocalIndex, LocalIndex], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    code, stdout, stderr = _refresh(runner, standins, indexes, "tensorflow", "-o", out)
    assert code == 0, stderr
    assert "1 release(s) added (9.1.0)" in stdout, "a file without releases: the newest one"
    (release,) = load_overlay(out, "t", [Framework.TENSORFLOW]).releases
    gpu = release.variant("and-cuda")
    assert gpu is not None
    assert gpu.cuda == Version("12.5")
    assert gpu.pin_texts == (
        "nvidia-cudnn-cu12>=9.3.0.75,<10.0",
        "nvidia-cuda-runtime-cu12>=12.5.82,<13.0",
    ), "tensorrt left out"
    assert [str(a) for a in gpu.archs] == ["sm_60", "sm_70", "sm_80", "sm_89", "sm_90", "compute_90"]
    assert release.python == SpecifierSet(">=3.11,<3.14")
    carried = tmp_path / "carried"
    carried.mkdir()
    code, _, _ = _refresh(runner, standins, indexes, "tensorflow", "--archs", "carry", "-o", carried)
    (release,) = load_overlay(carried, "t", [Framework.TENSORFLOW]).releases
    gpu = release.variant("and-cuda")
    assert gpu is not None and gpu.unconfirmed is None, "build_info.py is upstream's own word"
    assert "build_info.py cuda_compute_capabilities" in gpu.source.text
    assert [str(a) for a in gpu.archs] == ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"]


def test_refresh_releases_star_examines_every_release(
    runner: Runner, standins: Path, indexes: tuple[LocalIndex, LocalIndex]
) -> None:
    code, _, stderr = _refresh(runner, standins, indexes, "torch", "--releases", "*")
    assert code == 1
    assert "note: torch 9.0.0: no torchvision release pins torch==9.0.0" in stderr
    code, stdout, stderr = _refresh(runner, standins, indexes, "torch", "--releases", "==9.0.0")
    assert code == 0, stderr
    assert stdout == ""
    assert "nothing to add" in stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--releases", "2.x"), "--releases: '2.x' is not a version specifier"),
        (("--index", "ftp://example.invalid/simple"), "--index: expected an http(s) URL"),
        (("--max-mib", "0"), "--max-mib and --timeout must be positive"),
    ],
)
def test_refresh_bad_arguments_are_exit_2(runner: Runner, args: tuple[str, ...], words: str) -> None:
    done = runner("catalog", "refresh", "jax", *args)
    assert done.returncode == 2
    assert words in done.stderr
    assert done.stdout == ""


def test_refresh_output_must_be_a_folder(runner: Runner, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    done = runner("catalog", "refresh", "jax", "-o", tmp_path / "file")
    assert done.returncode == 2
    assert "not a folder" in done.stderr


# ---------------------------------------------------------------------------------------------
# The pieces


def test_requirements_of_a_wheel_and_of_an_extra_on_linux_x86_64() -> None:
    metadata = parse_metadata(
        textwrap.dedent("""\
        Metadata-Version: 2.1
        Name: x
        Version: 1
        Requires-Python: >=3.11
        Requires-Dist: filelock
        Requires-Dist: nvidia-cudnn-cu13==9.26.0.51; platform_system == "Linux"
        Requires-Dist: cuda-bindings<14,>=13.0.3; platform_system == "Linux" and python_version < "3.15"
        Requires-Dist: pywin32; sys_platform == "win32"
        Provides-Extra: with-cuda
        Requires-Dist: nvidia-nccl-cu13>=2.27.7; sys_platform == "linux" and extra == "with-cuda"
        Requires-Dist: nvidia-mac; sys_platform == "darwin" and extra == "with-cuda"

        body
        """).encode(),
        "x.whl",
    )
    assert metadata.requires_python == ">=3.11"
    assert metadata.extras == ("with-cuda",)
    assert [r.name for r in requirements_of(metadata)] == ["filelock", "nvidia-cudnn-cu13", "cuda-bindings"]
    assert [r.name for r in requirements_of(metadata, "with-cuda")] == ["nvidia-nccl-cu13"]
    assert (
        pin_text(Requirement("cuda-bindings<14,>=13.0.3; python_version < '3.15'"))
        == "cuda-bindings>=13.0.3,<14"
    )
    assert pin_text(Requirement("Cuda_Toolkit[nvrtc,cublas]==13.2.2")) == "cuda-toolkit[cublas,nvrtc]==13.2.2"


def test_metadata_that_is_not_metadata_is_an_index_problem() -> None:
    from colabenv.errors import IndexUnavailableError

    with pytest.raises(IndexUnavailableError, match="is not a requirement"):
        parse_metadata(b"Name: x\nRequires-Dist: ???\n\n", "x.whl")
    assert parse_metadata(b"\xff\xfe garbage", "x.whl") == Metadata(None, (), ())


def test_cuda_of_a_local_tag() -> None:
    assert cuda_of_tag("cu126") == Version("12.6")
    assert cuda_of_tag("cu118") == Version("11.8")
    assert cuda_of_tag("cu132") == Version("13.2")
    assert cuda_of_tag("cpu") is None
    assert cuda_of_tag("rocm6.2") is None


def test_build_info_is_read_without_running_it() -> None:
    text = (
        "build_info = collections.OrderedDict([('cuda_version', '12.5.1'), "
        "('cuda_compute_capabilities', ['sm_60', 'compute_90'])])"
    )
    assert build_info(text) == {
        "cuda_version": "12.5.1",
        "cuda_compute_capabilities": ["sm_60", "compute_90"],
    }
    assert build_info("build_info = collections.OrderedDict([(__import__('os'), 1)])") == {}
    assert build_info("nothing here") == {}


def test_python_range_from_tags_and_requires_python(standins: Path) -> None:
    from colabenv.curation.refresh.sources import Wheel

    def wheel(tag: str) -> Wheel:
        from packaging.tags import parse_tag

        from colabenv.index.client import IndexFile

        return Wheel("i", IndexFile(f"x-1-{tag}.whl", "u", None), Version("1"), frozenset(parse_tag(tag)))

    tags = [
        "cp311-cp311-manylinux_2_28_x86_64",
        "cp315-cp315-manylinux_2_28_x86_64",
        "cp315-cp315t-manylinux_2_28_x86_64",
        "cp312-cp312-manylinux_2_28_x86_64",
    ]
    assert python_range([wheel(t) for t in tags], ">=3.11") == SpecifierSet(">=3.11,<3.16")
    assert python_range([wheel(t) for t in tags], ">=3.12") == SpecifierSet(">=3.12,<3.16")
    assert python_range([wheel("py3-none-any")], ">=3.12") == SpecifierSet(">=3.12")
    excluding = python_range([wheel(t) for t in tags], ">=3.11,!=3.14.1,!=3.9.2,!=3.17.*")
    assert excluding == SpecifierSet(">=3.11,<3.16,!=3.14.1"), "a patch release inside the range is kept"


def test_a_companion_range_is_kept_only_where_it_leaves_out_a_python_of_the_release() -> None:
    from colabenv.curation.refresh.sources import narrower_python

    release = SpecifierSet(">=3.11,<3.16")
    assert narrower_python(SpecifierSet(">=3.10,!=3.14.1"), release)
    assert narrower_python(SpecifierSet(">=3.12"), release)
    assert not narrower_python(SpecifierSet(">=3.10"), release)
    assert not narrower_python(SpecifierSet(">=3.10,!=3.9.1"), release)
    assert not narrower_python(None, release)


def test_project_pages_say_which_files_offer_pep_658_metadata() -> None:
    page = json.dumps(
        {
            "meta": {"api-version": "1.1"},
            "name": "x",
            "files": [
                {
                    "filename": "x-1-py3-none-any.whl",
                    "url": "x-1-py3-none-any.whl",
                    "hashes": {},
                    "core-metadata": {"sha256": "ab"},
                    "requires-python": ">=3.12",
                },
                {
                    "filename": "x-2-py3-none-any.whl",
                    "url": "x-2-py3-none-any.whl",
                    "hashes": {},
                    "core-metadata": False,
                },
            ],
        }
    ).encode()
    first, second = parse_project_page(
        page, "application/vnd.pypi.simple.v1+json", "https://i.example/simple/x/"
    )
    assert (first.metadata, first.requires_python) == (True, ">=3.12")
    assert (second.metadata, second.requires_python) == (False, None)
    html = (
        b'<a href="x-1-py3-none-any.whl" data-dist-info-metadata="sha256=ab" '
        b'data-requires-python="&gt;=3.12">x</a><a href="x-2-py3-none-any.whl" '
        b'data-core-metadata="false">y</a><a href="x-3-py3-none-any.whl">z</a>'
    )
    one, two, three = parse_project_page(html, "text/html", "https://i.example/simple/x/")
    assert (one.metadata, one.requires_python) == (True, ">=3.12")
    assert not two.metadata and not three.metadata


# ---------------------------------------------------------------------------------------------
# The real index (pytest -m network)


@pytest.mark.network
def test_refresh_jax_from_the_real_index_resolves_jax_0_12(runner: Runner, tmp_path: Path) -> None:
    """Starts from a jax.toml without 0.12 (the shipped one, its 0.12 releases taken out), so
    that 0.12 can only come from what refresh read."""
    from colabenv._util.resources import catalog_dir

    base = tmp_path / "base"
    base.mkdir()
    shipped = (catalog_dir() / "jax.toml").read_text(encoding="utf-8")
    (base / "jax.toml").write_text(
        shipped.split('\n[[release]]\nversion = "0.12.0"')[0] + "\n", encoding="utf-8"
    )
    out = tmp_path / "out"
    out.mkdir()
    started = time.monotonic()
    done = runner(
        "catalog",
        "refresh",
        "jax",
        "--catalog",
        base,
        "-o",
        out,
        "--quiet",
        env={"PIP_INDEX_URL": None},
        timeout=900,
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "0.12.0" in done.stdout, done.stdout
    releases = {str(r.version): r for r in load_overlay(out, "t", [Framework.JAX]).releases}
    assert "0.12.0" in releases
    profile = _profile(tmp_path, 'jax = ">=0.12,<0.13"')
    env = {"COLABENV_CATALOG": str(out)}
    resolved = runner("resolve", profile, "--json", *H200, env=env)
    assert resolved.returncode == 0, resolved.stderr
    jax = json.loads(resolved.stdout)["frameworks"]["jax"]
    assert Version(jax["version"]) >= Version("0.12")
    assert jax["catalog_file"] == str(out / "jax.toml")
    print(f"refresh jax against the real index: {took:.1f} s")


def test_arch_lists_are_compared_by_the_gpus_they_cover() -> None:
    from colabenv.curation.refresh.sources import Derived, variant_model
    from colabenv.curation.refresh.writer import compare
    from colabenv.models import Arch, Release, Source

    def release(archs: list[str]) -> Release:
        variant = variant_model(
            "cu128", cuda=Version("12.8"), archs=tuple(sorted(Arch.parse(a) for a in archs)), source="s"
        )
        return Release(
            Framework.TORCH, Version("2.8.0"), SpecifierSet(">=3.10"), (variant,), "cu128", (), Source("s")
        )

    catalog = release(["sm_70", "sm_75", "sm_80", "sm_90"])
    read = Derived((), (), frozenset({(Version("2.8.0"), "cu128")}))
    same_gpus, note = compare(catalog, release(["sm_70", "sm_80", "sm_90"]), read, True)
    assert same_gpus == [], "sm_70 machine code runs on a 7.5 GPU: nothing contradicts"
    assert note == [
        "torch 2.8.0 cu128: the catalog's arch list (sm_70 sm_75 sm_80 sm_90) and "
        "the wheel's (sm_70 sm_80 sm_90) differ but cover the same GPUs"
    ]
    found, _ = compare(catalog, release(["sm_80", "sm_90"]), read, True)
    assert found == [
        "torch 2.8.0 cu128: archs: the catalog has sm_70 sm_75 sm_80 sm_90, the "
        "wheel's libraries all carry only sm_80 sm_90 (no kernels for sm_70, sm_72, "
        "sm_75 in every library)"
    ]
    not_read = Derived((), (), frozenset())
    assert compare(catalog, release(["sm_80"]), not_read, True) == ([], [])


def test_a_companion_range_differing_only_outside_the_release_is_no_contradiction() -> None:
    """The index's torchvision 0.29.1 range ends at <3.15 where torch 2.14.1's does too: the
    same Pythons, not a contradiction (a real refresh reported one); a patch release the index
    no longer excludes is one."""
    import dataclasses

    from colabenv.catalog.load import shipped_catalog
    from colabenv.curation.refresh.sources import Derived
    from colabenv.curation.refresh.writer import compare

    old = next(r for r in shipped_catalog([Framework.TORCH]).releases if str(r.version) == "2.14.1")
    assert old.python == SpecifierSet(">=3.10,<3.15")

    def with_vision(python: str) -> list[str]:
        companions = tuple(
            dataclasses.replace(c, python=SpecifierSet(python)) if c.name == "torchvision" else c
            for c in old.companions
        )
        found, _ = compare(old, dataclasses.replace(old, companions=companions), Derived((), ()), True)
        return [f for f in found if "companions" in f]

    assert with_vision(">=3.10,!=3.14.1,<3.15") == []
    assert with_vision(">=3.10,!=3.14.1,<3.16") == []
    (dropped,) = with_vision(">=3.10,<3.15")
    assert "companions.torchvision.python: the catalog has >=3.10,!=3.14.1" in dropped
    (narrower,) = with_vision(">=3.11,!=3.14.1")
    assert "the index says >=3.11,!=3.14.1" in narrower


def test_a_newer_companion_release_the_index_pairs_is_written_not_only_reported(tmp_path: Path) -> None:
    """The index pairs torch 9.1.0 with torchaudio 9.0.1 where the catalog has 9.0.0 (as it
    paired torch 2.15.0 with torchaudio 2.11.1 while the catalog kept 2.11.0): refresh writes
    the newer pairing, keeping the entry's follows_variant, and says so in the release's source;
    an older companion the index names stays a contradiction."""
    import dataclasses

    from packaging.utils import canonicalize_name

    from colabenv.catalog.load import framework_releases, parse_document
    from colabenv.curation.refresh.sources import Derived
    from colabenv.curation.refresh.writer import merged_text
    from colabenv.errors import CatalogOverlayError
    from colabenv.models import Companion

    path = tmp_path / "torch.toml"
    known = framework_releases(
        parse_document(path, BASE_TORCH.encode(), CatalogOverlayError), Framework.TORCH
    )
    old = next(r for r in known if str(r.version) == "9.1.0")
    audio = Companion(canonicalize_name("torchaudio"), Version("9.0.1"), True, SpecifierSet(">=3.13"))
    vision = Companion(canonicalize_name("torchvision"), Version("0.97.0"), True)
    derived = Derived((dataclasses.replace(old, companions=(vision, audio)),), ())

    outcome = merged_text(Framework.TORCH, BASE_TORCH, known, {}, True, derived, True)
    assert outcome.paired == ("9.1.0 torchaudio 9.0.0 -> 9.0.1",)
    assert outcome.contradictions == (
        "torch 9.1.0: companions.torchvision: the catalog has 0.98.0, the index says 0.97.0",
    )
    assert (
        'companions = { torchvision = "0.98.0", torchaudio = { version = "9.0.1", '
        'follows_variant = false, python = ">=3.13" } }'
    ) in outcome.text
    assert "companions.torchaudio 9.0.1 (was 9.0.0): the index's pairing, read by colabenv" in outcome.text
    assert outcome.text.count("9.0.1") == 2, "9.0.0's pairing and every other line are as they were"
    written = framework_releases(
        parse_document(path, outcome.text.encode(), CatalogOverlayError), Framework.TORCH
    )
    release = next(r for r in written if str(r.version) == "9.1.0")
    assert release.companion("torchaudio") == Companion(
        canonicalize_name("torchaudio"), Version("9.0.1"), False, SpecifierSet(">=3.13")
    )
    unchanged = [line for line in BASE_TORCH.splitlines() if "9.1.0" not in line and "companions" not in line]
    assert all(line in outcome.text.splitlines() for line in unchanged)
