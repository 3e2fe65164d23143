"""The host layer's reader of installed distributions, against the script helper's own reader."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from colabenv._util.resources import HELPER_PROGRAM as HELPER
from colabenv.host.installed import installed_distributions


def _sys_path(python: str, cwd: Path) -> list[str]:
    done = subprocess.run(
        [python, "-c", "import json, sys; print(json.dumps(sys.path))"],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        check=True,
    )
    found: list[str] = json.loads(done.stdout)
    return found


def test_the_script_helper_and_colabenv_read_the_same_distributions(tmp_path: Path) -> None:
    """On this test environment, a real venv holding every test dependency and colabenv itself
    (installed editable), the helper's ``snapshot`` and the host layer agree name for name."""
    snapshot = tmp_path / "snapshot.txt"
    wanted = tmp_path / "wanted.txt"
    wanted.write_text("colabenv-test-absent-dist==1\n")
    subprocess.run(
        [sys.executable, str(HELPER), "missing", str(wanted), str(tmp_path / "out"), str(snapshot)],
        cwd=tmp_path,
        timeout=60,
        check=True,
    )
    helper = dict(line.split("==", 1) for line in snapshot.read_text().splitlines() if line)
    ours = dict(installed_distributions(_sys_path(sys.executable, tmp_path)))
    assert len(ours) > 20
    assert {"colabenv", "packaging", "pytest"} <= set(ours)
    assert helper == ours


def test_detect_and_verify_see_the_same_distributions(tmp_path: Path) -> None:
    """One reader: the scan verify makes and the list detect makes give the same first names
    and versions, metadata-only directories included."""
    from colabenv.host.installed import Installed, scan_path

    first, second = tmp_path / "a", tmp_path / "b"
    for directory in (first, second):
        directory.mkdir()
    (first / "torch-2.6.0+cu124.dist-info").mkdir()
    (first / "Legacy_Pkg-1.2-py3.11.egg-info").mkdir()
    odd = first / "odd.dist-info"
    odd.mkdir()
    (odd / "METADATA").write_text("Metadata-Version: 2.1\nName: Odd-Thing\nVersion: 0.3\n")
    (first / "nometadata.dist-info").mkdir()
    (second / "torch-2.5.1.dist-info").mkdir()
    (second / "numpy-2.0.2.dist-info").mkdir()
    entries = [str(first), str(second)]
    listed = dict(installed_distributions(entries))
    assert listed == {"torch": "2.6.0+cu124", "legacy-pkg": "1.2", "odd-thing": "0.3", "numpy": "2.0.2"}
    installed = Installed.of_scan(scan_path(entries))
    assert {name: installed.version(name) for name in installed.names()} == listed
    assert [name for name, _ in scan_path(entries).duplicates] == ["torch"]


def test_the_script_helper_reads_the_dist_info_beside_an_egg_info_too(tmp_path: Path) -> None:
    """In one folder a dist-info wins over an egg-info of the same name, for the helper as for
    colabenv, even where the egg-info's name sorts first."""
    site = tmp_path / "site"
    (site / "foo_bar-1.0.dist-info").mkdir(parents=True)
    (site / "Foo_Bar.egg-info").mkdir()
    pkg_info = "Metadata-Version: 1.2\nName: Foo-Bar\nVersion: 0.9\n"
    (site / "Foo_Bar.egg-info" / "PKG-INFO").write_text(pkg_info)
    snapshot = tmp_path / "snapshot.txt"
    wanted = tmp_path / "wanted.txt"
    wanted.write_text("colabenv-test-absent-dist==1\n")
    subprocess.run(
        [sys.executable, "-S", str(HELPER), "missing", str(wanted), str(tmp_path / "out"), str(snapshot)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=True,
    )
    helper = dict(line.split("==", 1) for line in snapshot.read_text().splitlines() if line)
    assert helper["foo-bar"] == "1.0"
    assert dict(installed_distributions([str(site)])) == {"foo-bar": "1.0"}
