"""Where the tests find the repository and their recorded data, wherever a test file lives."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
"""The checkout: README.md, docs/, profiles/."""
DATA = REPO / "tests" / "data"
"""Recorded outputs and corpora (``detect/``, ``runtimes/``, ``hostile/``, ``malformed/``, ``tpu/``)."""
