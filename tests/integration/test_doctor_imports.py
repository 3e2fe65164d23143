"""Imports that fail after installs, end to end with real parts: a real venv, C extensions
compiled here with gcc (one with an undefined symbol, one linked against a library then
deleted), a module raising NumPy 2's own message (NumPy 1.x and 2 cannot both be here), a module
shadowed by a file in the working directory, a distribution installed twice, an unknown error, a
crash; each imported in a child of the venv's interpreter and classified."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from colabenv.diagnosis.run import DoctorReport, doctor, find_import_failures
from colabenv.models import Finding
from tests.support.dists import GCC, add_dist, compile_extension, module_source, site_packages

pytestmark = pytest.mark.slow


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


def test_a_file_named_like_the_standard_library_never_runs_in_the_child_and_is_named(
    fresh_venv: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stray ``importlib.py`` in the working directory (issue 35) ran in the import child,
    which imported importlib after putting the folder first on sys.path: it could fake every
    import, and doctor then said nothing. Now it never runs there, and it is a finding."""
    python = fresh_venv()
    add_dist(
        site_packages(python), "broken", {"broken/__init__.py": "raise ImportError('broken on purpose')\n"}
    )
    work, ran = tmp_path / "work", tmp_path / "ran"
    work.mkdir()
    ran.mkdir()
    for name in ("importlib", "traceback"):
        (work / f"{name}.py").write_text(
            f"open({str(ran / name)!r}, 'w').close()\n"
            "import types\n"
            "def import_module(name):\n    return types.ModuleType(name)\n"
        )
    monkeypatch.chdir(work)
    report = doctor(interpreter=str(python), imports=("broken",), finders=(find_import_failures,))
    assert sorted(p.name for p in ran.iterdir()) == [], "a stray file ran in doctor's child"
    found = by_module(report)
    assert causes(found["broken"]) == {"unknown"}
    assert any("broken on purpose" in e.text for e in found["broken"][0].evidence)
    for name in ("importlib", "traceback"):
        (shadow,) = found[name]
        assert shadow.cause == "shadowed" and shadow.path == str(work)
        assert "the standard library" in shadow.summary


def test_a_helper_an_import_leaves_running_does_not_hold_doctor(
    fresh_venv: Callable[..., Path], tmp_path: Path
) -> None:
    """A module whose import starts a helper that keeps the inherited stdout and stderr held
    ``doctor`` as long as the helper lived (issue 35, 40 s); the import child's run now ends
    soon after the child."""
    python = fresh_venv()
    pid_file = tmp_path / "helper.pid"
    source = (
        "import subprocess\n"
        "helper = subprocess.Popen(['sleep', '40'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(helper.pid))\n"
    )
    add_dist(site_packages(python), "spawner", {"spawner.py": source})
    started = time.monotonic()
    try:
        report = doctor(interpreter=str(python), imports=("spawner",), finders=(find_import_failures,))
        took = time.monotonic() - started
    finally:
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert took < 15, took
    assert report.findings == ()
    assert any("1 module imported" in note for note in report.notes), report.notes


def test_a_failure_caused_by_a_file_in_the_working_directory_names_the_file(
    fresh_venv: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``numpy.py`` in the working directory breaks an import that needs the installed numpy;
    doctor said cause ``unknown`` and "restart once" (issue 34). It names the file."""
    python = fresh_venv()
    site = site_packages(python)
    add_dist(site, "numpy", {"numpy/__init__.py": "__version__ = '2.0.2'\n"}, version="2.0.2")
    add_dist(site, "frames", {"frames.py": "import numpy\nVERSION = numpy.__version__\n"})
    work = tmp_path / "work"
    work.mkdir()
    (work / "numpy.py").write_text("# my scratch file\n")
    monkeypatch.chdir(work)
    report = doctor(interpreter=str(python), imports=("frames",), finders=(find_import_failures,))
    found = by_module(report)
    failure = next(f for f in found["frames"] if f.kind == "import-failure")
    assert failure.cause == "shadowed", failure
    assert str(work / "numpy.py") in failure.summary + " ".join(e.text for e in failure.evidence)
    assert "restart" not in failure.remedy and "numpy.py" in failure.remedy
    assert report.findings[0] is failure or report.findings[0].cause == "shadowed"
