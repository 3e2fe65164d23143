"""``colabenv catalog refresh runtimes``: the Colab runtime versions upstream lists that the file
lacks, read over real HTTP from a stand-in googlecolab/backend-info served on 127.0.0.1 whose
files are the real ones of tests/data/runtimes."""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.version import Version

from colabenv._util.resources import catalog_dir
from colabenv.catalog.runtimes import RUNTIMES_FILE, load_runtimes
from colabenv.curation.refresh.runtimes import RuntimeRefreshProblem, listed_versions
from colabenv.host.detect import read_freeze
from colabenv.models import Accelerator
from tests.support.fixtures import Runner
from tests.support.paths import DATA

NEW = "1234567890abcdef1234567890abcdef12345678"
CURRENT = "ec53f93fe44a9cab118dc5451527b18e36e1a643"
README = """# Backend Information

## Colab's Past Runtime Versions

### 2026.10

*   Python 3.12.12

For the exact details ... at this
[GitHub commit](https://github.com/googlecolab/backend-info/tree/{new}).

### 2026.07

*   Python 3.12.13

[GitHub commit](https://github.com/googlecolab/backend-info/tree/{current}).
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """backend-info as ``URL/REF/FILE``: README.md on main; at NEW the real files of the
    2025.10 image (one pip freeze for GPU and CPU, as before 2026.01; it stands for the TPU
    image's too)."""
    root = tmp_path / "upstream"
    (root / "main").mkdir(parents=True)
    (root / "main" / "README.md").write_text(README.format(new=NEW, current=CURRENT), encoding="utf-8")
    shutil.copytree(DATA / "runtimes" / "colab-2025.10", root / NEW)
    shutil.copy(root / NEW / "pip-freeze.txt", root / NEW / "pip-freeze.tpu.txt")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.mark.slow
def test_refresh_proposes_the_version_the_shipped_file_lacks_and_keeps_the_rest(
    runner: Runner, tmp_path: Path, upstream: tuple[str, Path]
) -> None:
    url, _root = upstream
    shipped = (catalog_dir() / RUNTIMES_FILE).read_text(encoding="utf-8")
    diff = runner("catalog", "refresh", "runtimes", "--backend-info", url)
    assert diff.returncode == 0, diff.stderr
    assert '+id = "colab-2026.10"' in diff.stdout
    assert f'+source = "https://github.com/googlecolab/backend-info/tree/{NEW}"' in diff.stdout
    assert '+python = "3.12.12"' in diff.stdout
    removed = [line for line in diff.stdout.splitlines() if line.startswith("-")]
    assert removed == [f"--- a/{RUNTIMES_FILE}"]
    assert "1 runtime version(s) added (colab-2026.10)" in diff.stderr

    folder = tmp_path / "catalog"
    folder.mkdir()
    written = runner("catalog", "refresh", "runtimes", "--backend-info", url, "-o", folder)
    assert written.returncode == 0, written.stderr
    text = (folder / RUNTIMES_FILE).read_text(encoding="utf-8")
    assert text.endswith(shipped[shipped.index("[[runtime]]") :])  # every shipped entry, as it was
    facts = load_runtimes(folder / RUNTIMES_FILE, text.encode())
    assert facts.ids[:2] == ("colab-2026.10", "colab-2026.07")
    new = facts.get("colab-2026.10")
    assert new is not None and new.python == Version("3.12.12")
    recorded = read_freeze(DATA / "runtimes" / "colab-2025.10" / "pip-freeze.txt")
    assert new.image(Accelerator.NVIDIA).installed == recorded
    assert new.image(Accelerator.CPU).installed == recorded
    assert new.image(Accelerator.NVIDIA).cuda_toolkit == Version("12.5")  # cuda-cudart-12-5 in apt-list.txt

    again = runner("catalog", "refresh", "runtimes", "--backend-info", url, "-o", folder)
    assert (again.returncode, (folder / RUNTIMES_FILE).read_text(encoding="utf-8")) == (0, text)
    assert "nothing to add" in again.stdout


def test_a_commit_upstream_names_differently_is_reported_not_rewritten(
    runner: Runner, tmp_path: Path, upstream: tuple[str, Path]
) -> None:
    url, root = upstream
    readme = root / "main" / "README.md"
    readme.write_text(readme.read_text().replace(CURRENT, "f" * 40), encoding="utf-8")
    done = runner("catalog", "refresh", "runtimes", "--backend-info", url)
    assert done.returncode == 1
    assert f"colab-2026.07: the file has commit {CURRENT}, upstream's README names {'f' * 40}" in done.stderr


def test_a_missing_file_upstream_is_exit_4_and_writes_nothing(
    runner: Runner, tmp_path: Path, upstream: tuple[str, Path]
) -> None:
    url, root = upstream
    (root / NEW / "os-info.txt").unlink()
    folder = tmp_path / "catalog"
    folder.mkdir()
    done = runner("catalog", "refresh", "runtimes", "--backend-info", url, "-o", folder)
    assert (done.returncode, done.stdout) == (4, "")
    assert f"os-info.txt at {NEW}: not found upstream" in done.stderr
    assert list(folder.iterdir()) == []


def test_listed_versions_read_each_heading_and_its_commit() -> None:
    listed = listed_versions(README.format(new=NEW, current=CURRENT))
    assert [(v.id, v.commit) for v in listed] == [("colab-2026.10", NEW), ("colab-2026.07", CURRENT)]
    with pytest.raises(RuntimeRefreshProblem, match=r"runtime 2026\.10 links no commit"):
        listed_versions("### 2026.10\n\nno link\n### 2026.07\n")
