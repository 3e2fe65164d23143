"""colabenv._util.files: bounded reads of regular files only; outputs that never replace a device,
a link or a directory."""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from colabenv._util.files import FileProblem, open_own, read_limited, read_own, write_output
from tests.support.fixtures import Runner


def test_reads_a_regular_file_and_a_link_to_one(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_bytes(b"hello")
    (tmp_path / "link.txt").symlink_to(real)
    assert read_limited(real) == b"hello"
    assert read_limited(tmp_path / "link.txt") == b"hello"


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_a_device_is_refused_without_reading(device: str) -> None:
    if not Path(device).exists():
        pytest.skip(f"{device} missing")
    started = time.monotonic()
    with pytest.raises(FileProblem, match="character device"):
        read_limited(Path(device), limit=1024)
    assert time.monotonic() - started < 1


def test_a_fifo_without_a_writer_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(FileProblem, match="FIFO"):
        read_limited(fifo)
    assert time.monotonic() - started < 1


def test_size_bound_holds_even_when_the_file_grows(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(FileProblem, match="at most 1024 bytes"):
        read_limited(big, limit=1024)
    assert read_limited(big, limit=2048) == b"x" * 2048


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "no such file"),
        (lambda p: p.mkdir(), "directory"),
        (lambda p: p.symlink_to(p), "loop"),
    ],
    ids=["missing", "directory", "symlink-loop"],
)
def test_unreadable_paths_are_explained(tmp_path: Path, make: object, message: str) -> None:
    path = tmp_path / "thing"
    make(path)  # type: ignore[operator]
    with pytest.raises(FileProblem, match=message):
        read_limited(path)


def test_output_to_a_new_file_and_replacing_one_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.sh"
    assert write_output(target, b"one", mode=0o755) == target
    assert target.read_bytes() == b"one"
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    target.chmod(0o700)
    write_output(target, b"two")
    assert target.read_bytes() == b"two"
    assert stat.S_IMODE(target.stat().st_mode) == 0o700
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.sh"]


def test_output_through_a_link_writes_its_target_and_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real" / "setup.sh"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "setup.sh"
    link.symlink_to(real)
    written = write_output(link, b"new")
    assert link.is_symlink()
    assert os.readlink(link) == str(real)
    assert real.read_bytes() == b"new"
    assert written == real.resolve()


def test_output_through_a_dangling_link_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "setup.sh"
    link.symlink_to(tmp_path / "made.sh")
    write_output(link, b"new")
    assert link.is_symlink() and (tmp_path / "made.sh").read_bytes() == b"new"


def test_output_to_dev_null_writes_through_and_leaves_the_device() -> None:
    before = os.stat("/dev/null")
    assert write_output(Path("/dev/null"), b"script") == Path("/dev/null")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode)
    assert (before.st_ino, before.st_rdev) == (after.st_ino, after.st_rdev)


def test_output_to_a_fifo_writes_through(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as handle:
            received.append(handle.read())

    reader = threading.Thread(target=read)
    reader.start()
    write_output(fifo, b"through the pipe")
    reader.join(5)
    assert received == [b"through the pipe"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: None, "does not exist"),
    ],
    ids=["directory", "missing-directory"],
)
def test_output_refusals(tmp_path: Path, make: object, message: str) -> None:
    place = tmp_path / "place"
    make(place)  # type: ignore[operator]
    target = place if message == "is a directory" else place / "out.sh"
    with pytest.raises(FileProblem, match=message):
        write_output(target, b"x")


def test_exclusive_output_refuses_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "profile.toml"
    target.write_text("mine")
    with pytest.raises(FileExistsError):
        write_output(target, b"theirs", exclusive=True)
    assert target.read_text() == "mine"


def test_render_to_dev_null_and_through_a_link(runner: Runner, tmp_path: Path) -> None:
    done = runner("render", "cpu-only", "--cpu", "--python", "3.11", "-o", "/dev/null")
    assert done.returncode == 0, done.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    real = tmp_path / "scripts" / "setup.sh"
    real.parent.mkdir()
    real.write_text("old")
    (tmp_path / "setup.sh").symlink_to(real)
    done = runner("render", "cpu-only", "--cpu", "--python", "3.11", "-o", "setup.sh")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "setup.sh").is_symlink()
    assert real.read_text().startswith("#!/usr/bin/env bash")


def test_render_into_a_directory_is_exit_2(runner: Runner, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    done = runner("render", "cpu-only", "--cpu", "--python", "3.11", "-o", "out")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip() == "colabenv: out: cannot write: is a directory"


def test_read_own_reads_only_a_regular_file_of_this_user_never_through_a_link(tmp_path: Path) -> None:
    """The rule of every watch file: a link (even to a file of this user), a FIFO (at once, no
    wait for a writer), another user's file and a file past the bound are refused."""
    own = tmp_path / "own.json"
    own.write_text('{"pid": 1}')
    assert read_own(own, 1024) == b'{"pid": 1}'
    link = tmp_path / "link.json"
    link.symlink_to(own)
    with pytest.raises(FileProblem, match="is a symbolic link"):
        read_own(link, 1024)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(FileProblem, match="is a FIFO, not a regular file"):
        read_own(fifo, 1024)
    with pytest.raises(FileProblem, match="is 10 bytes; at most 4 bytes is read"):
        read_own(own, 4)
    if os.geteuid() == 0:
        other = tmp_path / "other.json"
        other.write_text("{}")
        os.chown(other, 65534, 65534)
        with pytest.raises(FileProblem, match="is owned by user 65534, not by this user"):
            read_own(other, 1024)


def test_open_own_truncates_only_what_it_accepts(tmp_path: Path) -> None:
    target = tmp_path / "kept"
    target.write_text("kept\n")
    link = tmp_path / "log"
    link.symlink_to(target)
    with pytest.raises(FileProblem, match="is a symbolic link"):
        open_own(link, write=True, create=True, truncate=True)
    assert target.read_text() == "kept\n"
    os.close(open_own(target, write=True, truncate=True))
    assert target.read_text() == ""
