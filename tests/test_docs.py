"""The documents point at things that exist: every relative link resolves (to a file, and to a
heading when it names one), and every path of the checkout a document names in backticks
(``colabenv/...``, ``tests/...``, ``bench/...``, ``profiles/...``, ``docs/...``) is there. A move
that leaves a document behind fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.paths import REPO

DOCUMENTS = sorted(
    [
        REPO / "README.md",
        REPO / "CONTRIBUTING.md",
        REPO / "CHANGELOG.md",
        REPO / "bench" / "README.md",
        *(REPO / "docs").rglob("*.md"),
    ]
)
LINK = re.compile(r"\]\(([^)\s]+)\)")
NAMED_PATH = re.compile(r"`((?:colabenv|tests|bench|profiles|docs)/[\w./-]*[\w/])`")
WHEEL_ONLY = {"colabenv/_profiles"}
"""Paths that exist in the installed wheel, not in the checkout."""


def _anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(document: Path) -> set[str]:
    return {
        _anchor(line.lstrip("#"))
        for line in document.read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    }


def test_every_document_is_read() -> None:
    names = {p.relative_to(REPO).as_posix() for p in DOCUMENTS}
    assert {"README.md", "docs/architecture.md", "docs/glossary.md", "bench/README.md"} <= names
    assert len(DOCUMENTS) >= 10


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_links_resolve(document: Path) -> None:
    broken = []
    for target in LINK.findall(document.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (document.parent / path).resolve() if path else document
        if not resolved.exists() or (
            anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved)
        ):
            broken.append(target)
    assert broken == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_named_paths_exist(document: Path) -> None:
    missing = [
        path
        for path in NAMED_PATH.findall(document.read_text(encoding="utf-8"))
        if path.rstrip("/") not in WHEEL_ONLY and "*" not in path and not (REPO / path).exists()
    ]
    assert missing == []


def test_the_readme_is_an_introduction() -> None:
    """Issue 21: at most 200 lines; the guides live in docs/."""
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 200
