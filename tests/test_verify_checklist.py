"""The pre-training checklist in verify, one piece at a time, in-process where it can be: the
marker's checklist fields, the ``io:<path>`` checks, the ``determinism`` check and what joins
the ``vram`` check (who holds each GPU, host RAM)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from colabenv.catalog import shipped_catalog
from colabenv.errors import StateError
from colabenv.models import IoCheck, Reproducibility, Target
from colabenv.profile import load_profile
from colabenv.render import marker_record
from colabenv.resolver import resolve
from colabenv.restart_marker import parse_marker
from tests.support.standin_frameworks import write_marker

PY = f"{sys.version_info.major}.{sys.version_info.minor}"

CHECKLIST_PROFILE = """
name = "checklist"
[verify]
io_paths = ["/content/data", { path = "/content/drive/MyDrive/ds", min_read_mib_s = 20 }]
min_write_mib_s = 50
io_size_mib = 64
min_free_ram_gib = 8
max_other_vram_share = 0.25
[reproducibility]
seed = 1234
deterministic = true
"""


def _script_marker(record: str) -> str:
    """The record as the script's helper completes it (colabenv/script_helper.py)."""
    data = json.loads(record)
    data.update(installed=[], changed=True, written_at=1000.0, python=sys.executable)
    return json.dumps(data)


# ---------------------------------------------------------------------------------------------
# the marker


def test_the_marker_carries_the_checklist_settings(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(CHECKLIST_PROFILE)
    profile = load_profile(path)
    resolution = resolve(profile, Target(None, None, (), Version(PY)), shipped_catalog(()))
    text = _script_marker(marker_record(resolution, profile, "0.1.0"))
    marker = parse_marker(text, tmp_path / "restart-marker.json")
    assert marker.io == (IoCheck("/content/data", None, 50.0),
                         IoCheck("/content/drive/MyDrive/ds", 20.0, 50.0))
    assert marker.io_size_mib == 64
    assert marker.min_free_ram_gib == 8.0
    assert marker.max_other_vram_share == 0.25
    assert marker.reproducibility == Reproducibility(1234, True)


def test_an_older_marker_without_them_takes_the_defaults(tmp_path: Path) -> None:
    path = write_marker(tmp_path)
    marker = parse_marker(path.read_text(), path)
    assert marker.io == () and marker.io_size_mib == 256 and marker.min_free_ram_gib is None
    assert marker.max_other_vram_share == 0.1
    assert marker.reproducibility == Reproducibility(None, False)


@pytest.mark.parametrize(
    ("verify", "top", "key"),
    [
        ({"io": [{"path": "data"}]}, {}, "verify.io[0].path"),
        ({"io": "/data"}, {}, "verify.io"),
        ({"io": [{"path": "/d", "min_read_mib_s": float("nan")}]}, {},
         "verify.io[0].min_read_mib_s"),
        ({"io_size_mib": 10**30}, {}, "verify.io_size_mib"),
        ({"min_free_ram_gib": -1}, {}, "verify.min_free_ram_gib"),
        ({"max_other_vram_share": 2}, {}, "verify.max_other_vram_share"),
        ({}, {"reproducibility": {"seed": -5}}, "reproducibility.seed"),
        ({}, {"reproducibility": {"seed": 2**80}}, "reproducibility.seed"),
        ({}, {"reproducibility": {"deterministic": "yes"}}, "reproducibility.deterministic"),
        ({}, {"reproducibility": []}, "reproducibility"),
        ({"timeout_s": 0}, {}, "verify.timeout_s"),
        ({"smoke": "torch"}, {}, "verify.smoke"),
    ],
)
def test_a_corrupted_checklist_field_names_its_key(tmp_path: Path, verify: dict[str, Any],
                                                   top: dict[str, Any], key: str) -> None:
    path = write_marker(tmp_path)
    data = json.loads(path.read_text())
    data["verify"].update(verify)
    data.update(top)
    with pytest.raises(StateError) as caught:
        parse_marker(json.dumps(data), path)
    assert f"{path}: {key}: " in str(caught.value)
    assert str(caught.value).endswith("(corrupted marker)")
