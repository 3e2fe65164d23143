"""The README's quickstart renders what its sentence claims (issue 34: it said "for a Colab T4"
and targeted the Python of the machine it ran on, so the script refused to run on Colab)."""

from __future__ import annotations

import shlex
from pathlib import Path

from colabenv.catalog.runtimes import shipped_runtimes
from tests.integration.test_journeys import quickstart_commands
from tests.support.fixtures import Runner
from tests.support.paths import REPO


def test_the_quickstart_render_targets_the_colab_it_names(runner: Runner, tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    install = quickstart_commands(readme)[0]
    render = shlex.split(install.split("&&")[-1])
    assert render[0].endswith("colabenv") and render[1] == "render"
    runtime = render[render.index("--runtime") + 1]
    driver = render[render.index("--driver") + 1]
    capability = render[render.index("--compute-capability") + 1]
    python = next(r for r in shipped_runtimes().runtimes if r.id == runtime).python
    claim = readme.split("## Quickstart", 1)[1].split("    python3 -m venv", 1)[0]
    claim = " ".join(claim.split())
    for said in (
        f"`{runtime}`",
        f"Python {python.major}.{python.minor}",
        driver,
        f"compute capability {capability}",
    ):
        assert said in claim, said
    done = runner(*render[1:-1], tmp_path / "setup.sh")
    assert done.returncode == 0, done.stderr
    header = (tmp_path / "setup.sh").read_text().splitlines()
    target = next(line for line in header if line.startswith("# target: "))
    wanted = (
        f"driver {driver}, CUDA 12.4, compute capability {capability}, Python {python.major}.{python.minor},"
    )
    assert wanted in target, target
