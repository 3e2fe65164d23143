"""The wheelhouse program's pieces, in process: the lock's hashes per pin, wheel names, which
wheel tags fit this interpreter, and the check that runs before anything installs."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from colabenv._target import wheelhouse as program
from colabenv._util.resources import WHEELHOUSE_PROGRAM

SIX = "six-1.17.0-py2.py3-none-any.whl"


def _lock(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "lock.txt"
    path.write_text("# header\n--index-url https://i.example/simple\n" + "\n".join(lines) + "\n")
    return path


def test_lock_entries_keep_every_hash_of_each_pin_marker_included(tmp_path: Path) -> None:
    lock = _lock(
        tmp_path,
        "six==1.17.0 \\",
        f"    --hash=sha256:{'a' * 64} \\",
        f"    --hash=sha256:{'B' * 64}",
        f'idna==3.10 ; python_version >= "3.8" --hash=sha256:{"c" * 64}',
    )
    assert program._lock_entries(str(lock)) == {
        "six==1.17.0": ["a" * 64, "b" * 64],
        'idna==3.10 ; python_version >= "3.8"': ["c" * 64],
    }


def test_wheel_file_pin_reads_a_plain_wheel_name_and_nothing_else() -> None:
    assert program.wheel_file_pin(SIX) == ("six", "1.17.0")
    assert program.wheel_file_pin("Torch-2.5.1+cu121-1-cp311-cp311-linux_x86_64.whl") == (
        "torch",
        "2.5.1+cu121",
    )
    for name in (
        f".{SIX}.123-4-5-0123abcd.0.part",
        f".{SIX}",
        "six-1.17.0.tar.gz",
        f"../{SIX}",
        f"/../../tmp/{SIX}",
        f"sub/{SIX}",
        f"a\\{SIX}",
        f"{SIX}\n",
        "six-1.17.0-py2.py3-none-any.whl/../x-1-py3-none-any.whl",
        "x" * 170 + "-1.0-py3-none-any.whl",
    ):
        assert program.wheel_file_pin(name) is None, name


def test_bundle_takes_the_fill_rule_for_the_names_it_writes() -> None:
    """``colabenv bundle`` chooses a wheel by the program's rule: one rule, one function."""
    from colabenv.wheelhouse import fetch

    assert fetch.wheel_file_pin is program.wheel_file_pin
    assert fetch.write_wheel is program.write_wheel
    assert fetch.remove_dead_parts is program.remove_dead_parts


def test_tag_rank_prefers_this_cpython_and_refuses_another() -> None:
    cp = f"cp{sys.version_info.major}{sys.version_info.minor}"
    specific = program._tag_rank(f"x-1-{cp}-{cp}-manylinux2014_x86_64.whl")
    pure = program._tag_rank("x-1-py3-none-any.whl")
    assert pure is not None
    if specific is not None:  # an x86_64 machine
        assert specific < pure
    assert program._tag_rank("x-1-cp27-cp27mu-manylinux1_x86_64.whl") is None
    assert program._tag_rank("x-1-py3-none-win_amd64.whl") is None


def _ranks_in_a_child(filenames: list[str], env: dict[str, str]) -> list[int | None]:
    """``_tag_rank`` of each name, in a child of this interpreter that runs the program as a
    script runs it (by its folder, beside the helper), with ``env`` over this environment."""
    import json
    import os
    import subprocess

    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(WHEELHOUSE_PROGRAM.parent)!r})\n"
        "import wheelhouse\n"
        "print(json.dumps([wheelhouse._tag_rank(name) for name in json.loads(sys.argv[1])]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(filenames)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
        check=True,
    )
    ranks: list[int | None] = json.loads(done.stdout)
    return ranks


@pytest.mark.parametrize("threaded", [False, True])
def test_tag_rank_takes_the_tags_interpreter_tags_gives_a_free_threaded_python(
    tmp_path: Path, threaded: bool
) -> None:
    """On a free-threaded interpreter (this one told so through ``sysconfig``, as the other
    tests do) only its own ``cp3XYt`` ABI and ``abi3t`` are eligible, never ``abi3`` nor the
    ABI of the build with the GIL: the wheels ``interpreter_tags(free_threaded=True)`` gives,
    and the same ones as it with the GIL."""
    import platform

    from packaging.utils import parse_wheel_filename

    from colabenv.lock.wheel_tags import interpreter_tags
    from tests.support.interpreter_facts import free_threaded

    major, minor = sys.version_info[:2]
    cp, plat = f"cp{major}{minor}", f"linux_{platform.machine()}"
    names = [
        f"x-1-{cp}-{cp}t-{plat}.whl",
        f"x-1-{cp}-{cp}-{plat}.whl",
        f"x-1-{cp}-abi3t-{plat}.whl",
        f"x-1-{cp}-abi3-{plat}.whl",
        f"x-1-cp38-abi3t-{plat}.whl",
        f"x-1-cp38-abi3-{plat}.whl",
        f"x-1-{cp}-none-{plat}.whl",
        "x-1-py3-none-any.whl",
    ]
    ranks = _ranks_in_a_child(names, free_threaded(tmp_path / "facts") if threaded else {})
    eligible = set(interpreter_tags((major, minor), plat, 0, free_threaded=threaded))
    expected = [bool(parse_wheel_filename(name)[3] & eligible) for name in names]
    assert [rank is not None for rank in ranks] == expected
    own, stable, other = (f"{cp}t", "abi3t", "abi3") if threaded else (cp, "abi3", "abi3t")
    rank = dict(zip(names, ranks, strict=True))
    assert rank[f"x-1-{cp}-{other}-{plat}.whl"] is None and rank[f"x-1-cp38-{other}-{plat}.whl"] is None
    ordered = [
        rank[f"x-1-{cp}-{own}-{plat}.whl"],
        rank[f"x-1-{cp}-{stable}-{plat}.whl"],
        rank["x-1-py3-none-any.whl"],
    ]
    assert ordered == sorted(ordered) and len(set(ordered)) == 3


def test_the_check_names_a_file_whose_hash_the_lock_does_not_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "wheels"
    folder.mkdir()
    (folder / SIX).write_bytes(b"six")
    good = hashlib.sha256(b"six").hexdigest()
    missing = tmp_path / "missing.txt"
    missing.write_text("six==1.17.0\n")
    assert (
        program._wheelhouse_check(
            str(_lock(tmp_path, f"six==1.17.0 --hash=sha256:{good}")),
            str(missing),
            str(folder),
            str(tmp_path / "offered"),
        )
        == 0
    )
    assert "1 wheels, each with the lock's sha256" in capsys.readouterr().out
    other = _lock(tmp_path, f"six==1.17.0 --hash=sha256:{'0' * 64}")
    assert (
        program._wheelhouse_check(str(other), str(missing), str(folder), str(tmp_path / "offered"))
        == program.WHEELHOUSE_REFUSED
    )
    said = capsys.readouterr().out
    assert said.startswith(f"refused, nothing installed: {folder / SIX}: sha256 {good} is not the lock's")
    (folder / SIX).unlink()
    assert (
        program._wheelhouse_check(str(other), str(missing), str(folder), str(tmp_path / "offered"))
        == program.WHEELHOUSE_REFUSED
    )
    assert "has no wheel of six==1.17.0" in capsys.readouterr().out


def test_the_check_passes_over_another_pythons_wheel_of_a_pin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A wheelhouse of a lock with named targets holds each section's wheels: another Python's
    wheel of a pin (its hash not in this section) is none this interpreter installs."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    (folder / SIX).write_bytes(b"six")
    (folder / "six-1.17.0-cp27-cp27mu-manylinux1_x86_64.whl").write_bytes(b"another section's")
    good = hashlib.sha256(b"six").hexdigest()
    missing = tmp_path / "missing.txt"
    missing.write_text("six==1.17.0\n")
    lock = _lock(tmp_path, f"six==1.17.0 --hash=sha256:{good}")
    assert program._wheelhouse_check(str(lock), str(missing), str(folder), str(tmp_path / "offered")) == 0
    assert "1 wheels, each with the lock's sha256" in capsys.readouterr().out


def test_a_part_file_of_an_older_name_is_removed_only_when_a_day_old(tmp_path: Path) -> None:
    import os

    old, fresh, wheel = tmp_path / f".{SIX}.1.part", tmp_path / f".{SIX}.2.part", tmp_path / SIX
    for path in (old, fresh, wheel):
        path.write_bytes(b"x")
    os.utime(old, (1, 1))
    os.utime(wheel, (1, 1))
    assert program.remove_dead_parts(str(tmp_path)) == [old.name]
    assert fresh.exists() and wheel.exists()
