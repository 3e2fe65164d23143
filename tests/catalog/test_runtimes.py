"""``runtimes.toml``: the shipped Colab runtime versions, held to upstream's files, and the
rules of the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv.catalog.runtimes import RUNTIMES_FILE, load_runtimes, shipped_runtimes
from colabenv.errors import CatalogError
from colabenv.host.detect import read_freeze
from colabenv.models import Accelerator, InstalledDist, RuntimeFacts
from tests.support.paths import DATA

COMMIT = "ec53f93fe44a9cab118dc5451527b18e36e1a643"


def test_the_shipped_versions_newest_first_with_their_python_and_cuda() -> None:
    facts = shipped_runtimes()
    assert facts.ids == (
        "colab-latest",
        "colab-2026.07",
        "colab-2026.04",
        "colab-2026.01",
        "colab-2025.10",
        "colab-2025.07",
    )
    current = facts.get("colab-2026.07")
    assert current is not None
    assert current.python == Version("3.12.13")
    assert current.source.text == f"https://github.com/googlecolab/backend-info/tree/{COMMIT}"
    gpu, cpu, tpu = (current.image(a) for a in (Accelerator.NVIDIA, Accelerator.CPU, Accelerator.TPU))
    assert gpu.cuda_toolkit == Version("12.8")
    assert "cuda-compat-12-8=570.124.06-0ubuntu1" in gpu.apt
    assert (gpu.installed.get("torch"), cpu.installed.get("torch")) == (
        InstalledDist(canonicalize_name("torch"), "2.11.0+cu128"),
        InstalledDist(canonicalize_name("torch"), "2.11.0+cpu"),
    )
    assert tpu.installed.get("tensorflow") is None  # "not included in TPU runtimes"
    assert facts.get("colab-2025.07").python == Version("3.11.13")  # type: ignore[union-attr]


@pytest.mark.parametrize("runtime", ["colab-2025.07", "colab-2025.10"])
def test_an_image_holds_what_its_recorded_pip_freeze_lists(runtime: str) -> None:
    """tests/data/runtimes holds the real files of these two versions, copied separately: the
    shipped facts are theirs, ``name @ URL`` lines (torch in 2025.07) included."""
    shipped = shipped_runtimes().get(runtime)
    assert shipped is not None
    recorded = read_freeze(DATA / "runtimes" / runtime / "pip-freeze.txt")
    assert shipped.image(Accelerator.NVIDIA).installed == recorded
    assert shipped.image(Accelerator.CPU).installed == recorded  # one image before 2026.01
    assert recorded.get("torch") is not None


ENTRY = """
[[runtime]]
id = "colab-2026.07"
python = "3.12.13"
os = "Ubuntu 22.04.5 LTS"
commit = "{commit}"
source = "https://github.com/googlecolab/backend-info/tree/{commit}"

[runtime.gpu]
freeze_file = "pip-freeze.gpu.txt"
cuda_toolkit = "12.8"
apt = []
freeze = '''
numpy==2.0.2
'''

[runtime.cpu]
same_as = "gpu"

[runtime.tpu]
freeze_file = "pip-freeze.tpu.txt"
freeze = '''
numpy==2.0.2
'''
"""


def _load(text: str) -> RuntimeFacts:
    return load_runtimes(Path(RUNTIMES_FILE), ("schema = 1\n" + text).encode())


def test_a_minimal_file_loads_and_same_as_shares_the_image() -> None:
    facts = _load(ENTRY.format(commit=COMMIT))
    runtime = facts.get("colab-2026.07")
    assert runtime is not None
    assert runtime.image(Accelerator.CPU).installed == runtime.image(Accelerator.NVIDIA).installed
    assert runtime.image(Accelerator.CPU).accelerator is Accelerator.CPU


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ('id = "colab-2026.07"', 'id = "2026.07"', "runtime[0].id: '2026.07' is not a runtime id"),
        ('python = "3.12.13"', 'python = "3.12"', "runtime[0].python: expected a full Python version"),
        ('python = "3.12.13"', 'python = "3.12.13"\nglibc = "2.35a"', "runtime[0].glibc: expected the glibc"),
        ("numpy==2.0.2\n'''\n\n[runtime.cpu]", "numpy>=2\n'''\n\n[runtime.cpu]", "gpu.freeze: line 1"),
        ('same_as = "gpu"', 'same_as = "tpu"', "cpu.same_as: expected an image listed before it"),
        (f'tree/{COMMIT}"', '"', "runtime[0].source: expected the URL of commit"),
        (
            'id = "colab-2026.07"',
            'id = "colab-2026.07"\ndate = "2026-02-30"',
            "runtime[0].date: '2026-02-30'",
        ),
        ('id = "colab-2026.07"', 'id = "colab-latest"', "runtime[0].date: colab-latest needs the date"),
    ],
)
def test_a_bad_entry_names_its_key(old: str, new: str, words: str) -> None:
    text = ENTRY.format(commit=COMMIT)
    assert old in text
    with pytest.raises(CatalogError) as caught:
        _load(text.replace(old, new, 1))
    assert words in str(caught.value)
    assert str(caught.value).startswith(f"catalog {RUNTIMES_FILE}: ")


def test_a_version_listed_twice_or_out_of_order_is_refused() -> None:
    first = ENTRY.format(commit=COMMIT)
    older = first.replace("colab-2026.07", "colab-2026.04")
    with pytest.raises(CatalogError, match="listed twice"):
        _load(first + first)
    with pytest.raises(CatalogError, match="newest first"):
        _load(older + first)
    assert _load(first + older).ids == ("colab-2026.07", "colab-2026.04")


def test_every_shipped_image_lists_each_distribution_once() -> None:
    """The file is checked line by line when read and parsed only when an image is used: each
    of its pins is one distribution, by canonical name, so none is lost in the parsing."""
    for runtime in shipped_runtimes().runtimes:
        for image in runtime.images:
            assert len(image.installed) == len(image.pins.split()), (runtime.id, image.accelerator)


HEAD = "a72407924822ea377410b69f0a290150bcb5c9c2"


def test_colab_latest_is_upstreams_head_on_python_3_13_and_dated() -> None:
    """googlecolab/backend-info's head, a7240792 ("Upgrade to Python 3.13", 2026-08-19): the
    image a fresh notebook runs, newer than any version a notebook can pin (2026.07: 3.12)."""
    facts = shipped_runtimes()
    latest = facts.get("colab-latest")
    assert latest is not None and latest is facts.runtimes[0]
    assert (latest.commit, latest.date, latest.dated) == (HEAD, "2026-08-19", "2026-08-19")
    assert latest.python == Version("3.13.15")
    gpu = latest.image(Accelerator.NVIDIA)
    assert gpu.cuda_toolkit == Version("12.8")
    assert gpu.installed.get("torch") == InstalledDist(canonicalize_name("torch"), "2.11.0+cu128")
    assert gpu.installed.get("numpy") == InstalledDist(canonicalize_name("numpy"), "2.1.3")
    assert facts.get("colab-2026.07").dated == "2026.07"  # type: ignore[union-attr]


def test_colab_latest_names_the_newest_runtime_and_says_when_it_is_old() -> None:
    import datetime

    from colabenv.catalog.runtimes import latest_note

    pinned_only = _load(ENTRY.format(commit=COMMIT))
    assert pinned_only.get("colab-latest") is pinned_only.runtimes[0]  # no head entry: the newest
    latest = shipped_runtimes().get("colab-latest")
    assert latest is not None
    fresh = latest_note(latest, datetime.date(2026, 9, 1))
    assert "googlecolab/backend-info's head as of 2026-08-19 (commit a72407924822, Python 3.13.15)" in fresh
    assert "days old" not in fresh
    old = latest_note(latest, datetime.date(2026, 11, 28))
    assert "that is 101 days old" in old and "colabenv catalog refresh runtimes" in old
    version = latest_note(pinned_only.runtimes[0], datetime.date(2026, 7, 20))
    assert "is colab-2026.07 as of 2026.07" in version and "days old" not in version
