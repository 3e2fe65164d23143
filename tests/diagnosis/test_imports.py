"""Imports that fail after installs, in parts: which modules are imported, the restart a kernel
older than an install needs, names checked, the bound; and the helpers the end-to-end tests
(``tests/integration/test_doctor_imports.py``) build a broken venv with."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from colabenv.diagnosis.imports import ImportTarget, checked_module, restart_findings, scan_entries
from colabenv.diagnosis.run import doctor, find_import_failures
from colabenv.errors import UsageError
from colabenv.host.installed import scan_path
from tests.support.dists import add_dist


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


def test_top_level_modules_come_from_top_level_txt_else_record(tmp_path: Path) -> None:
    from colabenv.host.installed import top_level

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
    import colabenv.diagnosis.run as run

    monkeypatch.setattr(run, "MAX_MODULES", 2)
    report = doctor(imports=("json", "csv", "colabenv_no_such_module"), finders=(find_import_failures,))
    assert report.findings == ()
    assert report.notes[-2:] == (
        f"imports: 2 modules imported in {sys.executable}",
        "imports: 1 more not imported (at most 2)",
    )


def test_a_lock_names_its_frameworks_and_packages(tmp_path: Path) -> None:
    from colabenv.lock.content import Lock, LockedFile, LockedPackage, LockHeader, LockTarget
    from colabenv.lock.file import render_lock
    from colabenv.models import LockedFramework

    header = LockHeader(
        colabenv_version="0.1.0",
        profile_name="team",
        profile_hash="sha256:" + "1" * 64,
        target=LockTarget("560.35.03", "525.60.13", "12.6", ("7.5",), "3.11", "linux_x86_64"),
        frameworks=(LockedFramework("torch", "2.6.0", "cu124", None),),
        resolver="uv 0.8.0",
    )
    packages = tuple(
        LockedPackage(name, version, (LockedFile("0" * 64),), None)
        for name, version in (("torch", "2.6.0+cu124"), ("colabenv-fine", "1.0"))
    )
    lock = tmp_path / "team.lock"
    lock.write_text(render_lock(Lock(header, packages)), encoding="utf-8")
    site = tmp_path / "site"
    add_dist(site, "colabenv-fine", {"colabenv_fine.py": ""})
    from colabenv.diagnosis.run import _expected

    frameworks, dists = _expected(None, str(lock), None, lambda: scan_path([str(site)]))
    assert [f.value for f in frameworks] == ["torch"] and dists == ("colabenv-fine",)


def test_an_import_that_hangs_is_ended_and_the_time_for_all_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from colabenv.diagnosis.imports import import_findings, run_imports
    from colabenv.diagnosis.signatures import shipped_signatures

    (tmp_path / "hangs.py").write_text("import time\ntime.sleep(60)\n")
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    (hung,) = run_imports([ImportTarget("hangs")], sys.executable, timeout=1.0)
    assert time.monotonic() - started < 20
    assert hung.died == "did not finish within its time (killed)"
    (finding,) = import_findings([hung], scan_path([]), shipped_signatures())
    assert finding.cause == "unknown" and "did not finish" in finding.summary
    skipped = run_imports([ImportTarget("json"), ImportTarget("csv")], sys.executable, total=0)
    assert all(o.skipped for o in skipped)
    assert import_findings(skipped, scan_path([]), shipped_signatures()) == ()


def test_every_cause_a_signature_may_name_has_its_place_in_the_order() -> None:
    """A cause the signature table may name and the order leaves out would sort after
    ``unknown``: the most likely cause would not come first."""
    from colabenv.diagnosis.imports import CAUSE_ORDER
    from colabenv.diagnosis.signatures import MATCHED_CAUSES

    assert set(MATCHED_CAUSES) <= set(CAUSE_ORDER)
    assert CAUSE_ORDER[-1] == "unknown"
