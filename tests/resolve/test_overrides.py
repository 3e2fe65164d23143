"""``--runtime``: what it sets among the target overrides, and the flags it refuses beside it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from packaging.version import Version

from colabenv.catalog.load import shipped_tpu
from colabenv.catalog.runtimes import shipped_runtimes
from colabenv.errors import TargetError
from colabenv.models import TargetOverrides
from colabenv.resolve.overrides import TargetFlags, resolve_overrides


def overrides(environ: Mapping[str, str] | None = None, **flags: Any) -> TargetOverrides:
    return resolve_overrides(
        TargetFlags(**flags), environ or {}, tpu_facts=shipped_tpu, runtime_facts=shipped_runtimes
    )


def test_runtime_gives_its_full_python_and_names_itself_as_the_origin() -> None:
    got = overrides(runtime="colab-2025.07")
    assert got.runtime is not None and got.runtime.id == "colab-2025.07"
    assert got.python == Version("3.11.13")
    assert got.origin("python") == "--runtime"


def test_runtime_beats_the_python_variable_and_agrees_with_the_same_python_flag() -> None:
    variable = {"COLABENV_PYTHON_VERSION": "3.10"}
    assert overrides(variable, runtime="colab-2026.07").python == Version("3.12.13")
    assert overrides(runtime="colab-2026.07", python="3.12").python == Version("3.12.13")
    assert overrides(runtime="colab-2026.07", python="3.12.13").python == Version("3.12.13")


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        ({"python": "3.11"}, "--python 3.11 contradicts --runtime colab-2026.07, whose Python is 3.12.13"),
        ({"python": "3.12.4"}, "--python 3.12.4 contradicts --runtime colab-2026.07"),
        ({"installed_from": "freeze.txt"}, "--runtime cannot be combined with --installed-from"),
    ],
)
def test_runtime_refuses_flags_that_say_otherwise(flags: dict[str, str], words: str) -> None:
    with pytest.raises(TargetError) as caught:
        overrides(runtime="colab-2026.07", **flags)
    assert words in str(caught.value)
    assert caught.value.exit_code == 2


def test_an_unknown_runtime_lists_the_known_ones() -> None:
    with pytest.raises(TargetError) as caught:
        overrides(runtime="colab-2099.01")
    assert str(caught.value) == (
        "--runtime: 'colab-2099.01' is not a known Colab runtime version (known: colab-latest,"
        " colab-2026.07, colab-2026.04, colab-2026.01, colab-2025.10, colab-2025.07)"
    )


def test_colab_latest_is_the_head_image_on_python_3_13() -> None:
    found = overrides(runtime="colab-latest")
    assert found.runtime is not None and found.runtime.id == "colab-latest"
    assert str(found.python) == "3.13.15"
