"""``colabenv/_target/importcheck.py``, doctor's import child: run by its path, in this Python
and the old ones colabenv looks into, it says where a module came from or what its import
raised (its own frames and importlib's left out)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from colabenv._util.resources import IMPORT_PROGRAM
from tests.support.pythons import child_pythons


def _check(module: str, cwd: Path, python: str = sys.executable) -> dict[str, object]:
    result = cwd / "result.json"
    done = subprocess.run(
        [python, str(IMPORT_PROGRAM), module, str(result)], cwd=cwd, timeout=60, check=False
    )
    assert done.returncode == 0
    data = json.loads(result.read_text())
    assert isinstance(data, dict) and data["mode"] == "import" and data["module"] == module
    return data


@pytest.mark.parametrize("python", child_pythons())
def test_the_working_directory_comes_first(tmp_path: Path, python: str) -> None:
    (tmp_path / "json.py").write_text("SHADOW = True\n")
    data = _check("json", tmp_path, python)
    assert data["ok"] is True and data["origin"] == str(tmp_path / "json.py")


@pytest.mark.parametrize("python", child_pythons())
def test_a_failing_import_says_what_it_raised(tmp_path: Path, python: str) -> None:
    (tmp_path / "inner.py").write_text("def boom():\n    raise ValueError('numpy.dtype size changed')\n")
    (tmp_path / "outer.py").write_text("import inner\ninner.boom()\n")
    data = _check("outer", tmp_path, python)
    assert data["ok"] is False and data["type"] == "ValueError"
    assert data["text"] == "numpy.dtype size changed"
    tail = data["tail"]
    assert isinstance(tail, list)
    assert [line.rsplit(":", 1)[0].rsplit("/", 1)[-1] for line in tail] == ["outer.py", "inner.py"]


def test_a_package_and_a_namespace_report_their_place(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "space").mkdir()
    assert _check("pkg", tmp_path)["origin"] == str(tmp_path / "pkg" / "__init__.py")
    assert _check("space", tmp_path)["origin"] == str(tmp_path / "space")


def test_bad_arguments_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(IMPORT_PROGRAM), "json"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and "usage" in done.stderr


def test_its_json_reads_back_whatever_the_error_text() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("importcheck_under_test", IMPORT_PROGRAM)
    assert spec is not None and spec.loader is not None
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    value = {"text": 'quote " back \\ nl \n tab \t nul \x00 é 中 \U0001f600 \udcff', "ok": False, "n": None}
    value["tail"] = ["a", "b"]  # type: ignore[assignment]
    assert json.loads(program.dumps(value)) == value
    assert program.dumps(value).isascii()


@pytest.mark.parametrize("python", child_pythons())
def test_the_module_checked_finds_only_what_any_interpreter_has_loaded(tmp_path: Path, python: str) -> None:
    """The child imports nothing heavy before the module checked nor after its failure (what
    the process holds at exit): a failure's frames are read from the traceback objects, not
    through ``traceback``, whose linecache, tokenize and re cost each of doctor's children
    some 6 ms."""
    seen = tmp_path / "seen.txt"
    (tmp_path / "probe.py").write_text(
        "import atexit, sys\n"
        f"atexit.register(lambda: open({str(seen)!r}, 'w').write(' '.join(sorted(sys.modules))))\n"
        "raise KeyError('x')\n"
    )
    data = _check("probe", tmp_path, python)
    assert data["ok"] is False and data["type"] == "KeyError"
    loaded = set(seen.read_text().split())
    assert sorted(loaded & {"traceback", "linecache", "tokenize", "textwrap"}) == []
