"""The parsed-TOML cache: an entry that is not what it claims to be is parsed again and
rewritten, never an error and never a different catalog."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from colabenv._util import toml
from colabenv._util.cache import parsed_toml
from tests.support.fixtures import Runner

SHIPPED_INDEX = b"download.pytorch.org"


def _entries(cache: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in sorted((cache / "parsed").iterdir())}


def _overwrite(path: Path, data: bytes) -> None:
    """``data`` in place of the entry, its owner and mode kept (private, so it is read)."""
    mode = os.stat(path).st_mode & 0o777
    path.write_bytes(data)
    os.chmod(path, mode)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(SHIPPED_INDEX, b"download.pytorch.orx", id="an-index-url-altered"),
        pytest.param(b"schema", b"schemb", id="a-key-renamed"),
    ],
)
def test_an_altered_entry_is_parsed_again_and_rewritten(
    runner: Runner, tmp_path: Path, old: bytes, new: bytes
) -> None:
    cache = tmp_path / "cache"
    env = {"COLABENV_CACHE_DIR": str(cache)}
    first = runner("render", "pytorch", "--cpu", env=env)
    assert first.returncode == 0, first.stderr
    assert SHIPPED_INDEX.decode() in first.stdout
    written = _entries(cache)
    assert written
    for path, data in written.items():
        assert old in data or old == SHIPPED_INDEX, path
        _overwrite(path, data.replace(old, new))

    second = runner("render", "pytorch", "--cpu", env=env)
    assert (second.returncode, second.stderr) == (first.returncode, first.stderr)
    assert second.stdout == first.stdout
    rebuilt = _entries(cache)
    assert list(rebuilt) == list(written)
    assert all(new not in data for data in rebuilt.values())
    assert rebuilt == written


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(b"team-mirror", b"evil-mirror", id="a-string"),
        pytest.param(b"twelve-chars", b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", id="a-key-zeroed"),
    ],
)
def test_an_entry_altered_in_place_means_parsing_again(tmp_path: Path, old: bytes, new: bytes) -> None:
    environ = {"COLABENV_CACHE_DIR": str(tmp_path)}
    source = b'schema = 1\nurl = "https://team-mirror/simple"\ntwelve-chars = [1, 2.5, { four = 4 }]\n'
    parsed = parsed_toml(source, toml.loads_utf8, environ)
    (entry,) = (tmp_path / "parsed").iterdir()
    good = entry.read_bytes()
    assert old in good
    _overwrite(entry, good.replace(old, new))
    calls: list[bytes] = []

    def parse(data: bytes) -> dict[str, object]:
        calls.append(data)
        return toml.loads_utf8(data)

    assert parsed_toml(source, parse, environ) == parsed
    assert calls == [source]
    assert entry.read_bytes() == good
    assert parsed_toml(source, parse, environ) == parsed
    assert calls == [source], "the rewritten entry is read, not parsed again"


def test_an_entry_under_the_name_of_other_bytes_is_not_taken(tmp_path: Path) -> None:
    """An entry is checked against the bytes it claims to be the parse of, not only itself."""
    environ = {"COLABENV_CACHE_DIR": str(tmp_path)}
    one, two = b'url = "https://one/simple"\n', b'url = "https://two/simple"\n'
    parsed_toml(one, toml.loads_utf8, environ)
    parsed_toml(two, toml.loads_utf8, environ)
    entries = {path.read_bytes(): path for path in (tmp_path / "parsed").iterdir()}
    assert len(entries) == 2
    first, second = entries.values()
    _overwrite(second, first.read_bytes())
    assert parsed_toml(one, toml.loads_utf8, environ) == {"url": "https://one/simple"}
    assert parsed_toml(two, toml.loads_utf8, environ) == {"url": "https://two/simple"}
