"""Every golden profile rendered for every recorded host, byte for byte as it was.

The refactor of issue 33 changed no behaviour; this is the comparison that says so, kept. Each
case runs the real command line in-process (``render``, ``resolve --json``, the container
definitions, a lock installed from a wheelhouse) for one host described by the flags its
recording gives (``tests/data/detect/smi/*/expected.json``, ``tests/data/tpu/*/expected.json``,
the catalog's Colab runtimes), and compares exit code, stdout and stderr with
``tests/data/renders/``. The embedded helper and wheelhouse program stand there as their
SHA-256 and length (the rendered heredoc's body), and the colabenv wheel an
image copies as a placeholder (it is made from the installed files, so it changes with any
source file).

A change that means to change what users get regenerates them and shows the diff in review:
``COLABENV_REGENERATE_RENDERS=1 python -m pytest tests/script/test_render_snapshots.py``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from colabenv.cli.main import main

TESTS = Path(__file__).resolve().parents[1]
DATA = TESTS / "data"
SNAPSHOTS = DATA / "renders"
REGENERATE = os.environ.get("COLABENV_REGENERATE_RENDERS") == "1"
PROFILES = ("all-three", "cpu-only", "jax", "jax-tpu", "pytorch", "tensorflow")
PYTHON = "3.12"
NOTHING_INSTALLED = SNAPSHOTS / "nothing-installed.freeze"
"""What a host without a runtime has installed: nothing (not the test's own venv)."""


def _gpu_hosts() -> dict[str, list[str]]:
    """The recorded x86-64 NVIDIA hosts (the aarch64 ones, a GH200 and a DGX Spark, are
    resolved from their detection in ``tests/host/test_detect_aarch64.py``)."""
    hosts: dict[str, list[str]] = {}
    for folder in sorted((DATA / "detect" / "smi").iterdir()):
        expected = json.loads((folder / "expected.json").read_text())
        if expected["driver"] is None or expected.get("platform", "linux_x86_64") != "linux_x86_64":
            continue
        caps = ",".join(expected["compute_capabilities"])
        hosts[folder.name] = ["--driver", expected["driver"], "--compute-capability", caps]
    return hosts


def _tpu_hosts() -> dict[str, list[str]]:
    hosts: dict[str, list[str]] = {}
    for folder in sorted((DATA / "tpu").iterdir()):
        path = folder / "expected.json"
        if not path.is_file():
            continue
        tpu = json.loads(path.read_text()).get("tpu")
        if not tpu or not tpu.get("generation"):
            continue
        kind = tpu["accelerator_type"] or f"{tpu['generation']}-{tpu['chips'] or 1}"
        hosts[f"tpu-{folder.name}"] = ["--tpu", kind]
    return hosts


T4 = ["--driver", "550.54.15", "--compute-capability", "7.5"]
HOSTS: dict[str, list[str]] = {
    **_gpu_hosts(),
    **_tpu_hosts(),
    "cpu": ["--cpu"],
    "cpu-py3.10": ["--cpu", "--python", "3.10"],
    "colab-t4-py3.14": [*T4, "--python", "3.14"],
    "runtime-2026.07-t4": ["--runtime", "colab-2026.07", *T4],
    "runtime-2026.04-cpu": ["--runtime", "colab-2026.04", "--cpu"],
    "runtime-2026.07-tpu": ["--runtime", "colab-2026.07", "--tpu", "v5e-1"],
}
"""Each host as target flags; where no runtime names them, a Python is added where the host has
none, and nothing installed."""

IMAGE_HOSTS = ("colab-t4", "h200-580", "cpu", "tpu-colab-v6e-1")


def _argv(host: str) -> list[str]:
    flags = list(HOSTS[host])
    if "--runtime" not in flags:
        flags += ["--installed-from", str(NOTHING_INSTALLED)]
        if "--python" not in flags:
            flags += ["--python", PYTHON]
    return flags


def _cases() -> list[tuple[str, list[str]]]:
    cases: list[tuple[str, list[str]]] = []
    for profile in PROFILES:
        for host in HOSTS:
            cases.append((f"render/{profile}/{host}", ["render", profile, *_argv(host)]))
            cases.append((f"resolve/{profile}/{host}", ["resolve", profile, "--json", *_argv(host)]))
        for host in IMAGE_HOSTS:
            for form in ("dockerfile", "apptainer"):
                argv = ["render", profile, "--format", form, *_argv(host)]
                cases.append((f"{form}/{profile}/{host}", argv))
    lock = ["--lock", str(DATA / "lock" / "schema2.lock")]
    t4 = [*T4, "--python", "3.11"]
    schema2 = str(DATA / "lock" / "schema2.toml")
    cases.append(("lock/schema2/colab-t4", ["render", schema2, *lock, *t4]))
    cases.append(("lock/schema2/colab-t4-wheelhouse", ["render", schema2, *lock, *t4, "--wheelhouse", "/wh"]))
    cases.append(("lock/schema2/dockerfile", ["render", schema2, *lock, *t4, "--format", "dockerfile"]))
    return cases


CASES = _cases()


def _normalised(text: str) -> str:
    """The output with the embedded programs as their hashes and the image's wheel hash out."""

    text = re.sub(r"(<<'(COLABENV_(?:HELPER|WHEELHOUSE)_EOF)'\n)(.*?)\n(\2)", _embedded, text, flags=re.S)
    text = text.replace(str(DATA), "<tests/data>")
    return re.sub(r"[0-9a-f]{64}(  /opt/colabenv-build/colabenv-[^ ]+\.whl)", r"<own wheel sha256>\1", text)


def _embedded(match: re.Match[str]) -> str:
    """A heredoc's body as its length and SHA-256."""
    body = match.group(3)
    digest = hashlib.sha256(body.encode()).hexdigest()
    return f"{match.group(1)}<{len(body)} characters, sha256:{digest}>\n{match.group(4)}"


@contextlib.contextmanager
def _environment(home: Path) -> Iterator[None]:
    saved = dict(os.environ)
    for key in list(os.environ):
        if key.startswith(("COLABENV_", "COLAB_", "KAGGLE_", "TPU_")) or key in ("PIP_INDEX_URL",):
            del os.environ[key]
    os.environ["HOME"] = str(home)
    os.environ["XDG_CACHE_HOME"] = str(home / "cache")
    os.environ["COLABENV_OFFLINE"] = "1"  # rendered as before: no index confirms the choices
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _run(argv: list[str], home: Path) -> str:
    out, err = io.StringIO(), io.StringIO()
    with _environment(home), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return f"exit {code}\n--- stdout\n{_normalised(out.getvalue())}--- stderr\n{_normalised(err.getvalue())}"


def test_every_case_has_a_snapshot_and_every_snapshot_a_case() -> None:
    if REGENERATE:
        pytest.skip("regenerating")
    kept = {str(p.relative_to(SNAPSHOTS).with_suffix("")) for p in SNAPSHOTS.rglob("*.txt")}
    assert kept == {name for name, _argv in CASES}
    assert len(CASES) > 200


@pytest.mark.parametrize(("name", "argv"), CASES, ids=[name for name, _ in CASES])
def test_rendered_as_before(name: str, argv: list[str], tmp_path: Path) -> None:
    got = _run(argv, tmp_path)
    path = SNAPSHOTS / f"{name}.txt"
    if REGENERATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got)
        return
    assert path.read_text() == got
