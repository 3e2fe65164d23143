"""colabenv.seed_everything(): every installed framework seeded, nothing else imported."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import packaging
import pytest

from colabenv.errors import UsageError
from colabenv.models import Reproducibility
from colabenv.seeding import (
    XLA_DETERMINISM_FLAG,
    determinism_environment,
    environment_problems,
    hook_environment,
    seed_everything,
)
from tests.support.paths import REPO

RECORDER = """
import json, os
def record(*call):
    with open(os.environ["SEED_LOG"], "a") as log:
        log.write(json.dumps(list(call)) + "\\n")
"""

FAKES = {
    "numpy/__init__.py": """
from _seedlog import record
class random:
    @staticmethod
    def seed(value): record("numpy.random.seed", value)
""",
    "torch/__init__.py": """
from _seedlog import record
def manual_seed(value): record("torch.manual_seed", value)
def use_deterministic_algorithms(flag): record("torch.use_deterministic_algorithms", flag)
class cuda:
    @staticmethod
    def manual_seed_all(value): record("torch.cuda.manual_seed_all", value)
class _Cudnn:
    def __setattr__(self, name, value): record("torch.backends.cudnn." + name, value)
class backends:
    cudnn = _Cudnn()
""",
    "tensorflow/__init__.py": """
from _seedlog import record
class _Utils:
    @staticmethod
    def set_random_seed(value): record("tf.keras.utils.set_random_seed", value)
class keras:
    utils = _Utils
class _Experimental:
    @staticmethod
    def enable_op_determinism(): record("tf.config.experimental.enable_op_determinism")
class config:
    experimental = _Experimental
""",
    "jax/__init__.py": """
from _seedlog import record
class random:
    @staticmethod
    def PRNGKey(value):
        record("jax.random.PRNGKey", value)
        return ["key", value]
""",
}


def _fakes(root: Path, names: tuple[str, ...]) -> Path:
    root.mkdir()
    shutil.copytree(Path(packaging.__file__).parent, root / "packaging")
    (root / "_seedlog.py").write_text(RECORDER)
    for relative, text in FAKES.items():
        if relative.split("/")[0] in names:
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))
    return root


def _run(tmp_path: Path, names: tuple[str, ...], code: str, **env: str) -> tuple[Any, list[Any]]:
    fakes = _fakes(tmp_path / "fakes", names)
    log = tmp_path / "log.jsonl"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("COLABENV_")}
    # -S: no site-packages, so only the fakes are "installed" (and packaging, colabenv's one
    # dependency that seeding needs, through its models).
    environ.update(PYTHONPATH=os.pathsep.join([str(fakes), str(REPO)]), SEED_LOG=str(log), **env)
    done = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        env=environ,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return json.loads(done.stdout), calls


REPORT = """
import json, sys, colabenv
seeded = colabenv.seed_everything()
print(json.dumps({"seed": seeded.seed, "deterministic": seeded.deterministic,
                  "seeded": seeded.seeded, "key": seeded.jax_key, "notes": seeded.notes,
                  "hashseed": __import__("os").environ.get("PYTHONHASHSEED"),
                  "cublas": __import__("os").environ.get("CUBLAS_WORKSPACE_CONFIG"),
                  "imported": sorted(m for m in ("torch", "tensorflow", "jax", "numpy")
                                     if m in sys.modules)}))
"""


def test_profile_seed_and_determinism_reach_every_framework(tmp_path: Path) -> None:
    report, calls = _run(
        tmp_path,
        ("numpy", "torch", "tensorflow", "jax"),
        REPORT,
        COLABENV_SEED="1234",
        COLABENV_DETERMINISTIC="1",
    )
    assert report["seed"] == 1234 and report["deterministic"] is True
    assert report["seeded"] == ["random", "numpy", "torch", "tensorflow", "jax"]
    assert report["key"] == ["key", 1234]
    assert report["hashseed"] == "1234"
    assert report["cublas"] == ":4096:8"
    assert calls == [
        ["numpy.random.seed", 1234],
        ["torch.manual_seed", 1234],
        ["torch.cuda.manual_seed_all", 1234],
        ["torch.use_deterministic_algorithms", True],
        ["torch.backends.cudnn.deterministic", True],
        ["torch.backends.cudnn.benchmark", False],
        ["tf.keras.utils.set_random_seed", 1234],
        ["tf.config.experimental.enable_op_determinism"],
        ["jax.random.PRNGKey", 1234],
    ]


def test_only_what_is_installed_is_imported(tmp_path: Path) -> None:
    report, calls = _run(tmp_path, ("torch",), REPORT)
    assert report["seeded"] == ["random", "torch"]
    assert report["imported"] == ["torch"]
    assert report["seed"] == 0 and report["deterministic"] is False
    assert ["torch.use_deterministic_algorithms", True] not in calls
    assert report["key"] is None


def test_an_explicit_seed_beats_the_profile(tmp_path: Path) -> None:
    code = REPORT.replace("seed_everything()", "seed_everything(7, deterministic=False)")
    report, calls = _run(tmp_path, ("jax",), code, COLABENV_SEED="1234", COLABENV_DETERMINISTIC="1")
    assert report["seed"] == 7 and report["deterministic"] is False
    assert calls == [["jax.random.PRNGKey", 7]]


@pytest.mark.parametrize("bad", ["-1", "abc", "4294967296", "1e3", "١٢", "99999999999999999999"])
def test_a_bad_seed_is_refused(bad: str) -> None:
    with pytest.raises(UsageError, match="COLABENV_SEED"):
        seed_everything(environ={"COLABENV_SEED": bad}, is_installed=lambda _: False)


def test_a_bad_determinism_switch_is_refused() -> None:
    with pytest.raises(UsageError, match="COLABENV_DETERMINISTIC"):
        seed_everything(environ={"COLABENV_DETERMINISTIC": "maybe"}, is_installed=lambda _: False)


def test_xla_flags_are_extended_not_replaced() -> None:
    env = determinism_environment({"XLA_FLAGS": "--xla_gpu_autotune_level=1"})
    assert env["XLA_FLAGS"] == f"--xla_gpu_autotune_level=1 {XLA_DETERMINISM_FLAG}"
    again = determinism_environment({"XLA_FLAGS": env["XLA_FLAGS"]})
    assert again["XLA_FLAGS"] == env["XLA_FLAGS"]


def test_a_false_xla_determinism_flag_is_turned_true() -> None:
    env = determinism_environment({"XLA_FLAGS": "--xla_gpu_deterministic_ops=false --x=1"})
    assert env["XLA_FLAGS"] == f"--x=1 {XLA_DETERMINISM_FLAG}"


def test_a_smaller_cublas_workspace_chosen_in_env_is_kept(tmp_path: Path) -> None:
    report, _ = _run(
        tmp_path, ("torch",), REPORT, COLABENV_DETERMINISTIC="1", CUBLAS_WORKSPACE_CONFIG=":16:8"
    )
    assert report["cublas"] == ":16:8"


def test_the_hook_environment_of_a_reproducibility_table() -> None:
    assert hook_environment(Reproducibility()) == ()
    assert hook_environment(Reproducibility(seed=7)) == (("COLABENV_SEED", "7"), ("PYTHONHASHSEED", "7"))
    pairs = dict(hook_environment(Reproducibility(seed=1234, deterministic=True)))
    assert pairs == {
        "COLABENV_SEED": "1234",
        "PYTHONHASHSEED": "1234",
        "COLABENV_DETERMINISTIC": "1",
        "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
        "TF_DETERMINISTIC_OPS": "1",
        "TF_CUDNN_DETERMINISTIC": "1",
        "+XLA_FLAGS": XLA_DETERMINISM_FLAG,
    }


def test_environment_problems_name_each_missing_or_wrong_variable() -> None:
    wanted = Reproducibility(seed=1234, deterministic=True)
    good = {
        "COLABENV_SEED": "1234",
        "PYTHONHASHSEED": "1234",
        "COLABENV_DETERMINISTIC": "1",
        "CUBLAS_WORKSPACE_CONFIG": ":16:8",
        "TF_DETERMINISTIC_OPS": "true",
        "TF_CUDNN_DETERMINISTIC": "1",
        "XLA_FLAGS": f"--a=1 {XLA_DETERMINISM_FLAG}",
    }
    assert environment_problems(wanted, good) == []
    bad = {**good, "COLABENV_SEED": "99", "XLA_FLAGS": "--xla_gpu_deterministic_ops=false"}
    del bad["TF_DETERMINISTIC_OPS"]
    assert environment_problems(wanted, bad) == [
        "COLABENV_SEED='99', expected '1234'",
        "TF_DETERMINISTIC_OPS is not set (expected 1)",
        f"XLA_FLAGS has --xla_gpu_deterministic_ops=false, not {XLA_DETERMINISM_FLAG}",
    ]
    assert environment_problems(wanted, {**good, "XLA_FLAGS": ""}) == [
        f"XLA_FLAGS lacks {XLA_DETERMINISM_FLAG}"
    ]


def test_the_xla_flag_was_checked_for_every_jax_release_in_the_catalog() -> None:
    """``--xla_gpu_deterministic_ops`` is in XLA's flag list for JAX 0.4.26 through 0.12.0.1 (see
    colabenv.seeding.XLA_DETERMINISM_FLAG); an unknown XLA flag aborts JAX at start, so a JAX
    release outside that range in the catalog needs the flag checked again."""
    from packaging.version import Version

    from colabenv.catalog.load import shipped_catalog
    from colabenv.models import Framework

    versions = [release.version for release in shipped_catalog().releases_of(Framework.JAX)]
    assert versions and Version("0.4.26") <= min(versions) <= max(versions) <= Version("0.12.0.1"), (
        "a JAX release outside 0.4.26-0.12.0.1: check that its XLA still knows "
        f"{XLA_DETERMINISM_FLAG} (xla/debug_options_flags.cc at the commit jaxlib pins)"
    )
