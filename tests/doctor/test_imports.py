"""Imports that fail after installs, with real parts: a real venv, C extensions compiled here
with gcc (one with an undefined symbol, one linked against a library then deleted), a module
raising NumPy 2's own message (NumPy 1.x and 2 cannot both be here), a module shadowed by a file
in the working directory, a distribution installed twice, a crash; each imported in a child of
the venv's interpreter and classified."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from colabenv.doctor.imports import ImportTarget, checked_module, restart_findings, scan_entries
from colabenv.doctor.run import DoctorReport, doctor, find_import_failures
from colabenv.errors import UsageError
from colabenv.host.installed import scan_path
from colabenv.models import Finding

GCC = shutil.which("gcc")
needs_gcc = pytest.mark.skipif(GCC is None, reason="no gcc on this machine")
EXT = sysconfig.get_config_var("EXT_SUFFIX")
INCLUDE = sysconfig.get_paths()["include"]


def site_packages(python: Path) -> Path:
    found = sorted((python.parent.parent / "lib").glob("python3*/site-packages"))
    assert found, python
    return found[0]


def add_dist(site: Path, name: str, files: dict[str, str | bytes], version: str = "1.0") -> None:
    """A distribution as an installer leaves it: its files and a dist-info naming them."""
    for relative, content in files.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "INSTALLER").write_text("pip\n")
    tops = sorted({Path(r).parts[0].split(".")[0] for r in files})
    (info / "top_level.txt").write_text("\n".join(tops) + "\n")
    (info / "RECORD").write_text("".join(f"{r},,\n" for r in files))


def compile_extension(source: str, name: str, out: Path, *extra: str) -> Path:
    assert GCC is not None
    c_file = out / f"{name}.c"
    c_file.write_text(source)
    target = out / f"{name}{EXT}"
    subprocess.run(
        [GCC, "-shared", "-fPIC", f"-I{INCLUDE}", "-o", str(target), str(c_file), *extra], check=True
    )
    return target


def module_source(name: str, body: str) -> str:
    return (
        "#include <Python.h>\n"
        f"{body}\n"
        f'static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, "{name}", NULL, -1, NULL}};\n'
        f"PyMODINIT_FUNC PyInit_{name}(void) {{ return PyModule_Create(&def); }}\n"
    )


def by_module(report: DoctorReport) -> dict[str, list[Finding]]:
    found: dict[str, list[Finding]] = {}
    for finding in report.findings:
        found.setdefault(finding.module or "", []).append(finding)
    return found


def causes(findings: Iterable[Finding]) -> set[str | None]:
    return {f.cause for f in findings}


@pytest.fixture
def broken_venv(fresh_venv: Callable[..., Path], tmp_path: Path) -> tuple[Path, Path]:
    """A venv whose distributions fail to import, each in its own way; returns its interpreter
    and a profile naming them."""
    python = fresh_venv()
    site = site_packages(python)
    build = tmp_path / "build"
    build.mkdir()
    if GCC is not None:
        undefined = compile_extension(
            module_source(
                "undefext",
                "extern int colabenv_not_there(void);\nint use(void) { return colabenv_not_there(); }",
            ),
            "undefext",
            build,
        )
        add_dist(site, "undefext", {undefined.name: undefined.read_bytes()})
        helper = build / "libcolabenvgone.so"
        subprocess.run(
            [GCC, "-shared", "-fPIC", "-o", str(helper), "-x", "c", "-"],
            input=b"int gone(void){return 1;}\n",
            check=True,
        )
        linked = compile_extension(
            module_source("libgoneext", "extern int gone(void);\nint use(void) { return gone(); }"),
            "libgoneext",
            build,
            f"-L{build}",
            "-lcolabenvgone",
            f"-Wl,-rpath,{build}",
        )
        add_dist(site, "libgoneext", {linked.name: linked.read_bytes()})
        helper.unlink()
    add_dist(
        site,
        "oldabi",
        {
            "oldabi.py": "raise ImportError('\\nA module that was compiled using NumPy 1.x cannot be run"
            " in\\n'"
            " 'NumPy 2.0.0 as it may crash. To support both 1.x and 2.x\\n'"
            " 'versions of NumPy, modules must be compiled with NumPy 2.0.')\n"
        },
    )
    add_dist(site, "shadowme", {"shadowme.py": "VALUE = 'installed'\n"})
    add_dist(site, "oddity", {"oddity.py": "raise RuntimeError('the flux capacitor is unplugged')\n"})
    add_dist(site, "crasher", {"crasher.py": "import os\nos.abort()\n"})
    add_dist(site, "twice", {"twice.py": "X = 1\n"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    add_dist(elsewhere, "twice", {"twice.py": "X = 2\n"}, version="2.0")
    (site / "zz-elsewhere.pth").write_text(f"{elsewhere}\n")
    add_dist(site, "fine", {"fine.py": "OK = True\n"})
    names = ["undefext", "libgoneext", "oldabi", "shadowme", "oddity", "crasher", "twice", "fine"]
    profile = tmp_path / "team.toml"
    requirements = ", ".join(f'"{n}"' for n in names)
    profile.write_text(f'schema = 1\nname = "team"\n\n[packages]\nrequirements = [{requirements}]\n')
    return python, profile


def test_each_failure_is_named_with_its_cause(
    broken_venv: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python, profile = broken_venv
    work = tmp_path / "work"
    work.mkdir()
    (work / "shadowme.py").write_text("VALUE = 'a stray file'\n")
    monkeypatch.chdir(work)
    report = doctor(
        interpreter=str(python), profile=str(profile), finders=(find_import_failures,), import_timeout=60
    )
    found = by_module(report)
    assert all(f.kind == "import-failure" for f in report.findings)
    if GCC is not None:
        assert causes(found["undefext"]) == {"undefined-symbol"}
        assert any("colabenv_not_there" in e.text for e in found["undefext"][0].evidence)
        assert causes(found["libgoneext"]) == {"missing-library"}
        assert "libcolabenvgone.so" in found["libgoneext"][0].remedy
        assert "the package that ships it" in found["libgoneext"][0].remedy
    assert causes(found["oldabi"]) == {"numpy-abi"}
    assert "numpy<2" in found["oldabi"][0].remedy
    shadow = found["shadowme"][0]
    assert shadow.cause == "shadowed" and shadow.path == str(work)
    assert str(site_packages(python)) in shadow.summary
    odd = found["oddity"][0]
    assert odd.cause == "unknown"
    assert any("the flux capacitor is unplugged" in e.text for e in odd.evidence), "shown whole"
    crash = found["crasher"][0]
    assert crash.cause == "unknown" and "crashed with SIGABRT" in crash.summary
    assert causes(found["twice"]) == {"duplicate", "shadowed"}
    dup = next(f for f in found["twice"] if f.cause == "duplicate")
    assert "2 times" in dup.summary and len(dup.evidence) == 2
    assert "fine" not in found
    ranked = [f.cause for f in report.findings]
    assert ranked.index("shadowed") < ranked.index("numpy-abi") < ranked.index("unknown")


def test_a_venv_that_imports_well_has_no_finding(fresh_venv: Callable[..., Path], tmp_path: Path) -> None:
    python = fresh_venv()
    add_dist(site_packages(python), "fine", {"fine/__init__.py": "OK = True\n"})
    report = doctor(interpreter=str(python), imports=("fine", "json"), finders=(find_import_failures,))
    assert report.findings == ()
    assert any("2 modules imported" in note for note in report.notes)


def test_a_distribution_installed_after_the_kernel_started_needs_a_restart(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    add_dist(site, "newer", {"newer.py": ""})
    add_dist(site, "older", {"older.py": ""})
    started = time.time() - 600
    os.utime(site / "older-1.0.dist-info", (started - 60, started - 60))
    scan = scan_path([str(site)])
    targets = [ImportTarget("newer", "newer"), ImportTarget("older", "older")]  # type: ignore[arg-type]
    found = restart_findings(targets, scan, started, "kernel", None)
    assert [(f.module, f.cause) for f in found] == [("newer", "restart-needed")]
    assert "after this kernel started" in found[0].summary
    assert restart_findings(targets, scan, None, "kernel", None) == []


def test_module_names_are_checked() -> None:
    assert checked_module("torch.cuda") == "torch.cuda"
    for bad in ("a b", "1abc", "x;rm", "", "a." * 20 + "b"):
        with pytest.raises(UsageError, match="--import"):
            checked_module(bad)


def test_the_child_sees_the_working_directory_first() -> None:
    assert scan_entries(["", "/a", "/b"], "/here") == ["/here", "/a", "/b"]


def test_a_marker_written_after_the_kernel_started_needs_a_restart(tmp_path: Path) -> None:
    from colabenv.script.marker import read_marker
    from tests.support.standin_frameworks import write_marker

    started = time.time() - 600
    write_marker(tmp_path, requirements=["fine==1.0"], written_at=started + 60)
    marker = read_marker(tmp_path)
    scan = scan_path([str(tmp_path / "nothing-here")])
    (found,) = restart_findings([ImportTarget("fine")], scan, started, "kernel", marker)
    assert found.cause == "restart-needed" and found.time == started + 60
    assert "the setup script finished" in found.summary
    write_marker(tmp_path, requirements=["fine==1.0"], written_at=started + 60, changed=False)
    assert restart_findings([ImportTarget("fine")], scan, started, "kernel", read_marker(tmp_path)) == []


def test_without_a_profile_the_marker_says_what_to_import(
    fresh_venv: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.standin_frameworks import write_marker

    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    python = fresh_venv()
    site = site_packages(python)
    add_dist(site, "fine", {"fine/__init__.py": "OK = True\n"})
    write_marker(Path(os.environ["COLABENV_STATE_DIR"]), requirements=["fine==1.0"])
    report = doctor(interpreter=str(python), finders=(find_import_failures,))
    assert report.findings == ()
    assert any("1 module imported" in note for note in report.notes)
    assert not (site / "fine" / "__pycache__").exists(), "doctor writes no bytecode"


def test_top_level_modules_come_from_top_level_txt_else_record(tmp_path: Path) -> None:
    from colabenv.doctor.imports import top_level

    add_dist(tmp_path, "listed", {"listed_mod/__init__.py": ""})
    add_dist(
        tmp_path, "recorded", {"rec_pkg/__init__.py": "", "rec_single.py": "", "rec_ext.cpython-311-x.so": ""}
    )
    (tmp_path / "recorded-1.0.dist-info" / "top_level.txt").unlink()
    record = tmp_path / "recorded-1.0.dist-info" / "RECORD"
    record.write_text(record.read_text() + "recorded-1.0.dist-info/METADATA,,\n../../bin/tool,,\n")
    dists = {d.name: d for d in scan_path([str(tmp_path)]).dists}
    assert top_level(dists["listed"]) == ("listed_mod",)
    assert top_level(dists["recorded"]) == ("rec_pkg", "rec_single", "rec_ext")


def test_the_modules_imported_are_bounded_and_the_rest_said(monkeypatch: pytest.MonkeyPatch) -> None:
    import colabenv.doctor.run as run

    monkeypatch.setattr(run, "MAX_MODULES", 2)
    report = doctor(imports=("json", "csv", "colabenv_no_such_module"), finders=(find_import_failures,))
    assert report.findings == ()
    assert report.notes[-2:] == (
        f"imports: 2 modules imported in {sys.executable}",
        "imports: 1 more not imported (at most 2)",
    )
