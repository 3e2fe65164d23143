"""``colabenv catalog refresh runtimes``: the Colab runtime versions upstream lists that the file
lacks, read over real HTTP from a stand-in googlecolab/backend-info served on 127.0.0.1 whose
files are the real ones of tests/data/runtimes."""

from __future__ import annotations

import functools
import http.server
import json
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
HEAD = "a72407924822ea377410b69f0a290150bcb5c9c2"
"""The shipped colab-latest's commit: upstream's head as the fixture serves it unless moved."""
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
    image's too); the head of main as GitHub's API answers, at ``URL/api/commits``: the shipped
    colab-latest's commit (see :func:`_move_head`)."""
    root = tmp_path / "upstream"
    (root / "main").mkdir(parents=True)
    _move_head(root, HEAD, "2026-08-19T19:33:29Z")
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


def _move_head(root: Path, commit: str, date: str) -> None:
    (root / "api").mkdir(exist_ok=True)
    answer = [{"sha": commit, "commit": {"committer": {"date": date}}, "files_left_out": True}]
    (root / "api" / "commits").write_text(json.dumps(answer), encoding="utf-8")


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
    at = shipped.index('[[runtime]]\nid = "colab-2026.07"')
    assert text.endswith(shipped[at:])  # every shipped entry, as it was
    assert shipped[shipped.index("[[runtime]]") : at] in text  # colab-latest too: the head is its
    facts = load_runtimes(folder / RUNTIMES_FILE, text.encode())
    assert facts.ids[:3] == ("colab-latest", "colab-2026.10", "colab-2026.07")
    new = facts.get("colab-2026.10")
    assert new is not None and new.python == Version("3.12.12")
    recorded = read_freeze(DATA / "runtimes" / "colab-2025.10" / "pip-freeze.txt")
    assert new.image(Accelerator.NVIDIA).installed == recorded
    assert new.image(Accelerator.CPU).installed == recorded
    assert new.image(Accelerator.NVIDIA).cuda_toolkit == Version("12.5")  # cuda-cudart-12-5 in apt-list.txt
    assert new.glibc == Version("2.35")  # libc6 2.35-0ubuntu3.11 in apt-list.txt
    assert all(r.glibc == Version("2.35") for r in facts.runtimes)  # every shipped image: jammy

    again = runner("catalog", "refresh", "runtimes", "--backend-info", url, "-o", folder)
    assert (again.returncode, (folder / RUNTIMES_FILE).read_text(encoding="utf-8")) == (0, text)
    assert "nothing to add" in again.stdout


def test_an_entry_an_older_writer_made_is_written_again_from_its_commit_with_its_glibc(
    runner: Runner, tmp_path: Path, upstream: tuple[str, Path]
) -> None:
    """An entry without ``glibc`` (written before it was recorded) is written again from the
    files of its own commit: the same entry, with the glibc of the image's libc6."""
    url, root = upstream
    shutil.copytree(root / NEW, root / CURRENT)
    shipped = (catalog_dir() / RUNTIMES_FILE).read_text(encoding="utf-8")
    start = shipped.index('[[runtime]]\nid = "colab-2026.07"')
    end = shipped.index("[[runtime]]", start + 1)
    entry = shipped[start:end]
    older = entry.replace('glibc = "2.35"\n', "")
    assert older != entry
    folder = tmp_path / "catalog"
    folder.mkdir()
    (folder / RUNTIMES_FILE).write_text(shipped.replace(entry, older), encoding="utf-8")
    done = runner("catalog", "refresh", "runtimes", "--backend-info", url, "--catalog", folder, "-o", folder)
    assert done.returncode == 0, done.stderr
    assert "colab-2026.07 written again from ec53f93f's files (glibc recorded)" in done.stderr
    text = (folder / RUNTIMES_FILE).read_text(encoding="utf-8")
    facts = load_runtimes(folder / RUNTIMES_FILE, text.encode())
    again = facts.get("colab-2026.07")
    assert again is not None and again.glibc == Version("2.35")


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


def test_the_head_moved_is_written_as_colab_latest_with_its_date(
    runner: Runner, tmp_path: Path, upstream: tuple[str, Path]
) -> None:
    """Upstream's head moves to a commit no README heading names yet: its files are written as
    colab-latest, dated, in place of the old head's; a render for colab-latest then uses them."""
    url, root = upstream
    moved = "abcdef0123456789abcdef0123456789abcdef01"
    shutil.copytree(root / NEW, root / moved)
    _move_head(root, moved, "2026-11-20T08:00:00Z")
    folder = tmp_path / "catalog"
    folder.mkdir()
    done = runner("catalog", "refresh", "runtimes", "--backend-info", url, "-o", folder)
    assert done.returncode == 0, done.stderr
    assert f"colab-latest (the head, {moved[:12]} of 2026-11-20)" in done.stdout
    text = (folder / RUNTIMES_FILE).read_text(encoding="utf-8")
    facts = load_runtimes(folder / RUNTIMES_FILE, text.encode())
    assert facts.ids[:3] == ("colab-latest", "colab-2026.10", "colab-2026.07")
    latest = facts.get("colab-latest")
    assert latest is not None and (latest.commit, latest.date) == (moved, "2026-11-20")
    assert latest.python == Version("3.12.12")  # the 2025.10 files stand for the head's
    assert HEAD not in text, "the old head's entry is replaced"


def test_a_head_that_is_a_listed_version_drops_colab_latest(
    runner: Runner, tmp_path: Path, upstream: tuple[str, Path]
) -> None:
    url, root = upstream
    _move_head(root, NEW, "2026-10-01T08:00:00Z")
    done = runner("catalog", "refresh", "runtimes", "--backend-info", url)
    assert done.returncode == 0, done.stderr
    assert "colab-latest dropped (the head is colab-2026.10's commit)" in done.stderr
    assert '-id = "colab-latest"' in done.stdout


def test_a_head_answer_that_is_no_commit_is_exit_4(runner: Runner, upstream: tuple[str, Path]) -> None:
    url, root = upstream
    (root / "api" / "commits").write_text('{"message": "rate limited"}', encoding="utf-8")
    done = runner("catalog", "refresh", "runtimes", "--backend-info", url)
    assert done.returncode == 4
    assert "the head of main: not a list of commits" in done.stderr


def test_render_for_colab_latest_says_which_image_and_its_date(runner: Runner) -> None:
    done = runner("resolve", "pytorch", "--runtime", "colab-latest", "--cpu", "--json")
    assert done.returncode == 0, done.stderr
    assert "--runtime colab-latest is googlecolab/backend-info's head as of 2026-08-19" in done.stderr
    assert "Python 3.13.15" in done.stderr
    assert json.loads(done.stdout)["target"]["python"] == "3.13"
