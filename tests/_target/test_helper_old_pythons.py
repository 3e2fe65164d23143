"""The embedded script helper on the oldest Pythons it promises (3.8 and 3.9), held to packaging.

The helper decides, in the target's own Python, which requirements the environment does not
satisfy yet, with its own PEP 440 / 508 reading (the target may have no packaging). Here it runs
as the script runs it (``python helper.py missing REQFILE OUT``) under each interpreter named in
``COLABENV_TEST_OLD_PYTHONS`` (``:``-separated; ``.ci/run`` sets it to the pyenv 3.8 and 3.9 it
finds) and under this one, over a table of requirements and a folder of fake ``*.dist-info`` on
``PYTHONPATH``; its answers are compared with packaging's, computed here with that
interpreter's marker environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from colabenv._util.resources import HELPER_PROGRAM, helper_source
from colabenv.script.render import helper_program

OLD_PYTHONS = [p for p in os.environ.get("COLABENV_TEST_OLD_PYTHONS", "").split(os.pathsep) if p]
NO_OLD_PYTHON = pytest.param(
    "",
    marks=pytest.mark.skip(
        reason="COLABENV_TEST_OLD_PYTHONS names no interpreter (.ci/run sets it to the pyenv 3.8 "
        "and 3.9 where they are installed)"
    ),
)
PYTHONS = [*(OLD_PYTHONS or [NO_OLD_PYTHON]), pytest.param(sys.executable, id="this-python")]

ENVIRONMENT_PROBE = """\
import json, os, platform, sys
info = sys.implementation.version
version = "{0.major}.{0.minor}.{0.micro}".format(info)
if info.releaselevel != "final":
    version += info.releaselevel[0] + str(info.serial)
print(json.dumps({
    "implementation_name": sys.implementation.name,
    "implementation_version": version,
    "os_name": os.name,
    "platform_machine": platform.machine(),
    "platform_release": platform.release(),
    "platform_system": platform.system(),
    "platform_version": platform.version(),
    "python_full_version": platform.python_version(),
    "platform_python_implementation": platform.python_implementation(),
    "python_version": ".".join(platform.python_version_tuple()[:2]),
    "sys_platform": sys.platform,
}))
"""
"""packaging.markers.default_environment(), written out for an interpreter without packaging."""

INSTALLED: dict[str, tuple[str, tuple[str, ...]]] = {
    "alpha-1.0.dist-info": ("1.0", ()),
    "beta-2.0rc1.dist-info": ("2.0rc1", ()),
    "gamma-1.0.post0.dist-info": ("1.0.post0", ()),
    "delta-2.6.0+cu124.dist-info": ("2.6.0+cu124", ()),
    "eta-1.0rc1.post0.dist-info": ("1.0rc1.post0", ()),
    "Under_Score.Pkg-3.1.dist-info": ("3.1", ()),
    "epsilon-0.5-py3.8.egg-info": ("0.5", ()),
    "zeta-1.0.dist-info": (
        "1.0",
        (
            'alpha>=1.0; extra == "fast"',
            'omega; extra == "needs-omega"',
            'beta>=2.0; extra == "final-beta"',
            'gamma>=1.0; extra == "fast" and python_version >= "3"',
            "delta",
        ),
    ),
    "theta-2.0.dist-info": ("2.0", ('zeta[needs-omega]; extra == "deep"',)),
}
"""Folder name -> (the version it says, its Requires-Dist lines)."""

REQUIREMENTS = [
    "alpha",
    "alpha==1.0",
    "alpha==1.0.0",
    "alpha==1.0+local",
    "alpha>=1.1",
    "alpha<1.0",
    "alpha<=1.0",
    "alpha~=1.0",
    "alpha!=1.0",
    "alpha==1.*",
    "alpha!=1.*",
    "alpha===1.0",
    "alpha>0.9,<1.0.1",
    "ALPHA>=0.1",
    "beta>=2.0",
    "beta>=2.0rc1",
    "beta<2.0",
    "beta==2.0rc1",
    "beta>1.9",
    "beta~=2.0",
    "gamma==1.0",
    "gamma>1.0",
    "gamma>=1.0",
    "gamma==1.0.post0",
    "gamma<=1.0",
    "delta==2.6.0",
    "delta==2.6.0+cu124",
    "delta==2.6.0+cu126",
    "delta>=2.5,<2.7",
    "delta==2.6.*",
    "delta!=2.6.0",
    "eta==1.0rc1",
    "eta==1.0rc1.post0",
    "eta>1.0rc1",
    "eta<1.0",
    "under-score-pkg==3.1",
    "under_score.pkg>=3",
    "epsilon>=0.5",
    "epsilon==0.5",
    "epsilon<0.5",
    "zeta",
    "zeta[fast]",
    "zeta[Fast]",
    "zeta[needs-omega]",
    "zeta[final-beta]",
    "zeta[fast,needs-omega]",
    "zeta[unknown-extra]",
    "theta[deep]",
    "omega",
    "omega; python_version < '3'",
    "omega; python_version >= '3.8'",
    "omega; sys_platform == 'win32'",
    "omega; os_name == 'posix' and python_version > '3.7'",
    "omega; extra == 'x'",
    "alpha>=9; python_full_version < '3.0'",
    "omega; platform_machine == 'no-such-machine' or implementation_name == 'cpython'",
]


def _fake_site(root: Path) -> Path:
    site = root / "site"
    for folder, (version, requires) in INSTALLED.items():
        directory = site / folder
        directory.mkdir(parents=True)
        name = folder.split("-", 1)[0]
        lines = [
            "Metadata-Version: 2.1",
            f"Name: {name}",
            f"Version: {version}",
            *(f"Requires-Dist: {line}" for line in requires),
        ]
        metadata = "PKG-INFO" if folder.endswith(".egg-info") else "METADATA"
        (directory / metadata).write_text("\n".join(lines) + "\n\nA description.\n")
    return site


def _installed() -> dict[str, tuple[Version, tuple[str, ...]]]:
    found = {}
    for folder, (version, requires) in INSTALLED.items():
        found[canonicalize_name(folder.split("-", 1)[0])] = (Version(version), requires)
    return found


def expected_unmet(text: str, environment: dict[str, str], depth: int = 0) -> bool:
    """Whether ``text`` is unmet by :data:`INSTALLED`, by packaging: its marker decides whether
    it applies; a single ``==`` pin without a wildcard means exactly that version, local tag
    included; any other specifier admits pre-releases; an extra's requirements must be met."""
    requirement = Requirement(text)
    if requirement.marker is not None and not requirement.marker.evaluate({**environment, "extra": ""}):
        return False
    installed = _installed().get(canonicalize_name(requirement.name))
    if installed is None:
        return True
    version, requires = installed
    specifiers = list(requirement.specifier)
    if len(specifiers) == 1 and specifiers[0].operator == "==" and "*" not in specifiers[0].version:
        if version != Version(specifiers[0].version):
            return True
    elif not requirement.specifier.contains(version, prereleases=True):
        return True
    if requirement.extras and depth < 4:
        for line in requires:
            needed = Requirement(line)
            if needed.marker is None or needed.marker.evaluate({**environment, "extra": ""}):
                continue
            if not any(
                needed.marker.evaluate({**environment, "extra": extra}) for extra in requirement.extras
            ):
                continue
            extras = f"[{','.join(sorted(needed.extras))}]" if needed.extras else ""
            if expected_unmet(f"{needed.name}{extras}{needed.specifier}", environment, depth + 1):
                return True
    return False


def _run(python: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
    )


def test_the_environment_probe_is_packagings() -> None:
    done = _run(sys.executable, "-c", ENVIRONMENT_PROBE)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == dict(default_environment())


def test_the_expectation_is_not_trivial() -> None:
    """The table holds both answers, and the near misses packaging tells apart."""
    environment = dict(default_environment())
    answers = {text: expected_unmet(text, environment) for text in REQUIREMENTS}
    assert answers["alpha==1.0"] is False and answers["alpha==1.0.0"] is False
    assert answers["eta==1.0rc1"] is True, "1.0rc1.post0 is not 1.0rc1"
    assert answers["gamma==1.0"] is True and answers["gamma>1.0"] is True
    assert answers["delta==2.6.0"] is True and answers["delta==2.6.0+cu124"] is False
    assert answers["zeta[fast]"] is False and answers["zeta[needs-omega]"] is True
    assert answers["theta[deep]"] is True and answers["zeta[unknown-extra]"] is False
    assert 10 < sum(answers.values()) < len(answers) - 10


@pytest.mark.parametrize("python", PYTHONS)
def test_missing_answers_as_packaging_does(python: str, tmp_path: Path) -> None:
    helper = tmp_path / "helper.py"
    helper.write_text(helper_program(helper_source()))
    reqs = tmp_path / "reqs.txt"
    reqs.write_text("".join(f"{text}\n" for text in REQUIREMENTS))
    out = tmp_path / "missing.txt"
    site = _fake_site(tmp_path)

    probe = _run(python, "-c", ENVIRONMENT_PROBE)
    assert probe.returncode == 0, probe.stderr
    environment = json.loads(probe.stdout)
    done = _run(python, str(helper), "missing", str(reqs), str(out), env={"PYTHONPATH": str(site)})
    assert done.returncode == 0, done.stderr

    unmet = out.read_text().splitlines()
    expected = [text for text in REQUIREMENTS if expected_unmet(text, environment)]
    assert unmet == expected, f"Python {environment['python_full_version']}"


@pytest.mark.parametrize("python", PYTHONS)
def test_the_helper_compiles(python: str, tmp_path: Path) -> None:
    """The file as shipped and as the script embeds it, both byte-compiled by ``python``
    (nothing written next to the package)."""
    embedded = tmp_path / "helper.py"
    embedded.write_text(helper_program(helper_source()))
    for source in (HELPER_PROGRAM, embedded):
        done = _run(
            python,
            "-c",
            "import sys; compile(open(sys.argv[1]).read(), sys.argv[1], 'exec', dont_inherit=True)",
            str(source),
        )
        assert done.returncode == 0, (source.name, done.stderr)


def test_the_old_pythons_are_old() -> None:
    """What ``COLABENV_TEST_OLD_PYTHONS`` names are the Pythons the helper promises, no newer."""
    if not OLD_PYTHONS:
        pytest.skip("COLABENV_TEST_OLD_PYTHONS names no interpreter")
    for python in OLD_PYTHONS:
        done = _run(python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])")
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() in ("3.8", "3.9"), python
