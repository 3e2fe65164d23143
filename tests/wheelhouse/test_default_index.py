"""A lock that names no index was made against the installer's default index: bundle searches
that one (issue 34), and says so when there is none to search (no I/O: no index is asked)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from colabenv.errors import IndexUnavailableError
from colabenv.index.client import SimpleClient
from colabenv.lock.content import (
    Lock,
    LockedFile,
    LockedPackage,
    LockFile,
    LockHeader,
    LockSection,
    LockTarget,
)
from colabenv.wheelhouse.fetch import Folder, default_index, lock_indexes, plan

TARGET = LockTarget(None, None, None, (), "3.12", "linux_x86_64")
HEADER = LockHeader("0.1.0", "p", "sha256:" + "0" * 64, TARGET, (), "uv 0.8.0")
SIX = LockedPackage(canonicalize_name("six"), "1.17.0", (LockedFile("a" * 64),))


def _lock(index_url: str | None = None, extras: tuple[str, ...] = ()) -> Lock:
    return Lock(HEADER, (SIX,), index_url, extras)


def test_a_lock_that_names_no_index_is_searched_on_the_default_index() -> None:
    environ = {"PIP_INDEX_URL": "https://mirror.example/simple"}
    assert lock_indexes(_lock(), default_index(environ)) == ("https://mirror.example/simple",)
    with_extra = _lock(extras=("https://extra.example/simple",))
    assert lock_indexes(with_extra, "https://d.example/simple") == (
        "https://d.example/simple",
        "https://extra.example/simple",
    )
    named = _lock("https://own.example/simple")
    assert lock_indexes(named, "https://d.example/simple") == ("https://own.example/simple",)


def test_the_default_index_is_the_installers_then_pips() -> None:
    assert default_index({"UV_DEFAULT_INDEX": "https://uv.example/simple"}) == "https://uv.example/simple"
    assert default_index({"PIP_INDEX_URL": " https://p.example/simple "}) == "https://p.example/simple"
    assert default_index({}) is not None  # pip's own default


def test_no_index_to_search_says_so_not_a_hash_mismatch(tmp_path: Path) -> None:
    lock_file = LockFile((LockSection(None, _lock()),), tmp_path / "x.lock")
    client = SimpleClient({}, lambda text: text)
    with pytest.raises(IndexUnavailableError) as raised:
        plan(lock_file, None, client, lambda text: text, {}, Folder(tmp_path), default=None)
    message = str(raised.value)
    assert message.startswith("six==1.17.0: no index to search: the lock names none")
    assert "sha256" not in message
