"""``colabenv resolve --json`` with a CUDA package whose NVIDIA requirement the frameworks' pins
(through ``cuda-toolkit[...]``) cannot meet: exit 3, nothing on stdout, one message naming the
package, its requirement and torch's pin; and the JSON of the choice where one fits."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.fixtures import Runner

A_T4_ON_570 = ("--driver", "570.133.07", "--compute-capability", "7.5", "--python", "3.12")


def _profile(tmp_path: Path, cudf: str) -> Path:
    path = tmp_path / "rapids.toml"
    path.write_text(f'name = "rapids"\n[frameworks]\ntorch = "==2.11.*"\ncudf = "{cudf}"\n')
    return path


def test_an_nvjitlink_no_torch_build_meets_is_exit_3_naming_both(runner: Runner, tmp_path: Path) -> None:
    result = runner("resolve", _profile(tmp_path, "==26.8.*"), "--json", *A_T4_ON_570)
    assert result.returncode == 3, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert (
        "cudf 26.8.0 requires nvidia-nvjitlink-cu12<13,>=12.9; torch 2.11.0 pins "
        "cuda-toolkit[nvjitlink]==12.8.1 (nvidia-nvjitlink-cu12==12.8.93.*)"
    ) in result.stderr


def test_where_one_fits_the_json_names_the_package_and_why_not_the_newer(
    runner: Runner, tmp_path: Path
) -> None:
    result = runner("resolve", _profile(tmp_path, "*"), "--json", *A_T4_ON_570)
    assert result.returncode == 0, result.stderr
    chosen = json.loads(result.stdout)["frameworks"]
    assert (chosen["torch"]["version"], chosen["torch"]["variant"]) == ("2.11.0", "cu128")
    cudf = chosen["cudf"]
    assert (cudf["distribution"], cudf["variant"]) == ("cudf-cu12", "cuda12")
    assert cudf["version"] == "26.6.0"
    assert "not 26.10.2: cudf 26.10.2 requires nvidia-nvjitlink-cu12<13,>=12.9" in cudf["reason"]
